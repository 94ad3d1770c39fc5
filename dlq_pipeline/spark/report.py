"""Report stage: what is on the DLQ, why, what was decided and what happened.

`build_report` does the Spark aggregation and returns a plain, JSON-ready dict; the
renderers (`dlq_pipeline.report_render`) turn that dict into console tables or a
self-contained HTML page, without Spark.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dlq_pipeline.clock import as_utc, from_epoch_micros, iso_z
from dlq_pipeline.formats.constants import reason_name
from dlq_pipeline.tables import ENDED_OUTCOMES
from dlq_pipeline.spark.decode import decode_headers
from dlq_pipeline.spark.storage import Storage

AGE_BUCKETS = (("< 1 hour", 3600), ("1-24 hours", 86400), ("1-7 days", 7 * 86400), ("> 7 days", None))


def _rows(df: DataFrame, keys: list[str], top: int | None = None, order: str = "count") -> list[dict]:
    grouped = df.groupBy(*keys).agg(F.count("*").alias("count"))
    ordered = grouped.orderBy(F.desc(order), *[F.asc_nulls_first(k) for k in keys])
    if top:
        ordered = ordered.limit(top)
    return [r.asDict() for r in ordered.collect()]


def _strip(col: str):
    return F.regexp_replace(F.col(col), r"[ \x00]+$", "")


def dead_lettered_at(df: DataFrame):
    """When the message reached the DLQ: the MQDLH put time, else when it was landed."""
    stamp = F.try_to_timestamp(  # PutDate/PutTime are GMT: say so, whatever the session's time zone
        F.concat(F.col("dlh_put_date"), F.substring(F.col("dlh_put_time"), 1, 6), F.lit("+0000")),
        F.lit("yyyyMMddHHmmssZ"),
    )
    return F.coalesce(stamp, F.col("landed_at"))


def _with_reason_names(rows: list[dict]) -> list[dict]:
    return [{**r, "reason_name": reason_name(r["reason"]) if r["reason"] is not None else None} for r in rows]


def _age_buckets(pending: DataFrame, now: dt.datetime) -> list[dict]:
    age = F.lit(as_utc(now)).cast("timestamp").cast("long") - dead_lettered_at(pending).cast("long")
    bucket = None
    for label, limit in AGE_BUCKETS:
        cond = age < limit if limit is not None else F.lit(True)
        bucket = F.when(cond, label) if bucket is None else bucket.when(cond, label)
    counts = {r["bucket"]: r["count"] for r in _rows(pending.withColumn("bucket", bucket), ["bucket"])}
    return [{"age": label, "count": counts.get(label, 0)} for label, _ in AGE_BUCKETS]


def _run_section(decisions: DataFrame, ledger: DataFrame, top: int) -> dict:
    failing = ledger.where(F.col("outcome").isin("failed", "deferred"))
    return {
        "decisions": decisions.count(),
        "by_action": _rows(decisions, ["action"]),
        "by_rule": _rows(decisions, ["rule_line", "action"], order="rule_line"),
        "ignored_by_reason": _rows(decisions.where(F.col("action") == "IGNORE"), ["ignore_reason"]),
        "by_outcome": _rows(ledger, ["outcome"]),
        "top_failing_targets": _rows(failing, ["target_qmgr", "target_q", "reason_code"], top),
    }


def build_report(storage: Storage, *, now: dt.datetime, run_id: str | None = None, top: int = 10) -> dict:
    """Per run (the given one, else the latest) and overall."""
    messages = decode_headers(storage.read("messages"))
    decisions = storage.read("decisions")
    ledger = storage.read("ledger")
    runs = [
        {"run_id": r["run_id"], "decided_at": iso_z(from_epoch_micros(r["decided_us"])), "decisions": r["decisions"]}
        for r in decisions.groupBy("run_id")
        .agg(F.min(F.unix_micros("decided_at")).alias("decided_us"), F.count("*").alias("decisions"))
        .orderBy("decided_us")
        .collect()
    ]
    run_id = run_id or (runs[-1]["run_id"] if runs else None)
    ended = ledger.where(F.col("outcome").isin(*ENDED_OUTCOMES)).select("message_key").distinct()
    pending = messages.join(ended, "message_key", "left_anti")
    with_dlh = messages.where(F.col("has_dlh"))
    report = {
        "generated_at": iso_z(now),
        "run_id": run_id,
        "runs": runs,
        "overall": {
            "messages": messages.count(),
            "pending": pending.count(),
            "without_dlh": _rows(messages.where(~F.col("has_dlh")), ["dlh_problem"]),
            "truncated": messages.where(F.col("truncated")).count(),
            "by_reason": _with_reason_names(
                _rows(with_dlh.withColumnRenamed("dlh_reason", "reason"), ["reason"], top)
            ),
            "by_destination": _rows(
                with_dlh.select(_strip("dlh_dest_qmgr").alias("dest_qmgr"), _strip("dlh_dest_q").alias("dest_q")),
                ["dest_qmgr", "dest_q"],
                top,
            ),
            "pending_age": _age_buckets(pending, now),
            **_run_section(decisions, ledger, top),
        },
        "trend": [
            {**r.asDict()}
            for r in ledger.groupBy("run_id", "outcome").agg(F.count("*").alias("count")).orderBy("run_id", "outcome").collect()
        ],
    }
    if run_id:
        report["run"] = _run_section(
            decisions.where(F.col("run_id") == run_id), ledger.where(F.col("run_id") == run_id), top
        )
    return report
