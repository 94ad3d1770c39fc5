"""Report stage: what is on the DLQ, since when, why, what was decided and what happened.

`build_report` does the Spark aggregation and returns a plain, JSON-ready dict; the
arrivals timeline (`dlq_pipeline.report.arrivals`) and the advice (`dlq_pipeline.report.advice`) are pure
functions of what it counted, and the renderers (`dlq_pipeline.report.render`) turn the
dict into console tables or a self-contained HTML page, without Spark.

Every section says its scope (`SCOPES`): ``run`` (the decisions and outcomes of one run),
``pending`` (messages whose processing has not ended, now) or ``all_time`` (every message
ever landed). Counts are of distinct messages: a message decided in five runs counts once
in an all-time figure, by its latest outcome.

``redact_frame(df)`` gives notebooks and jobs that show table rows ``df`` with every column
that holds message-body content made safe to show (`dlq_pipeline.report.redact`): ``data``
becomes null and ``snippet`` (quarantine) keeps only the kind of line. ``redact_frame(df,
enabled=not payloads_visible(PrivacySettings.from_config(config)))`` follows
``privacy.redact_payloads``.
"""

from __future__ import annotations

import datetime as dt
from typing import cast

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from dlq_pipeline.mq.constants import reason_name
from dlq_pipeline.mq.spark import decode_headers
from dlq_pipeline.report.advice import advise
from dlq_pipeline.report.arrivals import NO_DLH, UNKNOWN, bucket_width, timeline
from dlq_pipeline.report.redact import REDACTED
from dlq_pipeline.runtime.clock import as_utc, from_epoch, from_epoch_micros, iso_z
from dlq_pipeline.tables import ATTENTION_OUTCOMES
from dlq_pipeline.warehouse.ledger import not_ended
from dlq_pipeline.warehouse.storage import Storage

AGE_BUCKETS = (("< 1 hour", 3600), ("1-24 hours", 86400), ("1-7 days", 7 * 86400), ("> 7 days", None))
SCOPES = {
    "run": "this run: its decisions and the outcomes of its puts",
    "pending": "pending now: messages whose processing has not ended (not delivered, not discarded)",
    "all_time": "all time: every message ever landed in the warehouse, each counted once",
}
NOT_TRIED = "not replayed"  # the state of a message without ledger rows
BREAKER_TEXT = "circuit breaker open"  # how the writer's deferred rows say a queue's breaker opened


def _rows(df: DataFrame, keys: list[str], top: int | None = None, order: str = "count") -> list[dict]:
    grouped = df.groupBy(*keys).agg(F.count("*").alias("count"))
    ordered = grouped.orderBy(F.desc(order), *[F.asc_nulls_first(k) for k in keys])
    if top:
        ordered = ordered.limit(top)
    return [r.asDict() for r in ordered.collect()]


def _strip(col: str):
    return F.regexp_replace(F.col(col), r"[ \x00]+$", "")


def _stamp(date_col: str, time_col: str):
    """An MQ PutDate/PutTime pair as a timestamp. They are GMT: say so, whatever the
    session's time zone; a malformed pair is null."""
    return F.try_to_timestamp(
        F.concat(F.col(date_col), F.substring(F.col(time_col), 1, 6), F.lit("+0000")),
        F.lit("yyyyMMddHHmmssZ"),
    )


def dead_lettered_at(df: DataFrame):
    """When the message reached the DLQ: the MQDLH put time; without a header the MQMD put
    time (an application put it there itself); else when it was landed."""
    return F.coalesce(_stamp("dlh_put_date", "dlh_put_time"), _stamp("put_date", "put_time"), F.col("landed_at"))


def origin_qmgr():
    """The queue manager the message came from: the MQMD ReplyToQMgr, which a putting
    application's queue manager fills in (the hub that holds the DLQ is ``source_qmgr``)."""
    name = _strip("reply_to_qmgr")
    return F.when(F.length(name) > 0, name).otherwise(F.lit(UNKNOWN))


def _reason_names(rows: list[dict], key: str = "reason", to: str = "reason_name") -> list[dict]:
    return [{**r, to: reason_name(r[key]) if r.get(key) is not None else None} for r in rows]


def _age_buckets(pending: DataFrame, now: dt.datetime) -> list[dict]:
    age = F.lit(as_utc(now)).cast("timestamp").cast("long") - dead_lettered_at(pending).cast("long")
    bucket = None
    for label, limit in AGE_BUCKETS:
        cond = age < limit if limit is not None else F.lit(True)
        bucket = F.when(cond, label) if bucket is None else bucket.when(cond, label)
    bucket = cast(Column, bucket)  # AGE_BUCKETS is not empty
    counts = {r["bucket"]: r["count"] for r in _rows(pending.withColumn("bucket", bucket), ["bucket"])}
    return [{"age": label, "count": counts.get(label, 0)} for label, _ in AGE_BUCKETS]


def arrivals(messages: DataFrame) -> dict:
    """The arrivals timeline (`dlq_pipeline.report.arrivals.timeline`) of decoded messages: buckets
    by when each reached the DLQ, counts by reason and originating queue manager."""
    at = F.unix_seconds(dead_lettered_at(messages))  # epoch seconds: a timestamp collected is local time
    framed = messages.select(
        at.alias("at"),
        F.when(F.col("has_dlh"), F.col("dlh_reason")).alias("reason"),
        origin_qmgr().alias("qmgr"),
        F.when(F.col("has_dlh"), F.concat_ws("/", _strip("dlh_dest_qmgr"), _strip("dlh_dest_q"))).alias("dest"),
    )
    span = framed.agg(F.min("at").alias("first"), F.max("at").alias("last")).collect()[0]
    if span["first"] is None:
        return timeline([])
    width = bucket_width(from_epoch(span["first"]), from_epoch(span["last"]))
    seconds = 3600 if width == "hour" else 86400
    grouped = (
        framed.withColumn("bucket", F.floor(F.col("at") / seconds) * seconds)
        .groupBy("bucket", "reason", "qmgr", "dest")
        .agg(F.count("*").alias("count"))
        .collect()
    )
    rows = [
        {
            "at": from_epoch(r["bucket"]),
            "reason": reason_name(r["reason"]) if r["reason"] is not None else NO_DLH,
            "qmgr": r["qmgr"],
            "dest": r["dest"],
            "count": r["count"],
        }
        for r in grouped
    ]
    return timeline(rows, width)


def originators(messages: DataFrame, top: int) -> list[dict]:
    """Who sends dead letters: originating queue manager and putting application, with the
    commonest reason and who dead-lettered them (the MQDLH PutApplName)."""
    m = messages.select(
        origin_qmgr().alias("qmgr"),
        _strip("put_appl_name").alias("application"),
        F.when(F.col("has_dlh"), F.col("dlh_reason")).alias("reason"),
        F.when(F.col("has_dlh"), _strip("dlh_put_appl_name")).alias("dead_lettered_by"),
    )
    keys = ["qmgr", "application"]
    main = (
        m.groupBy(*keys, "reason", "dead_lettered_by")
        .count()
        .withColumn(
            "_n",
            F.row_number().over(
                Window.partitionBy(*keys).orderBy(F.desc("count"), F.asc_nulls_last("reason"), "dead_lettered_by")
            ),
        )
        .where("_n = 1")
        .select(*keys, F.col("reason").alias("main_reason"), "dead_lettered_by")
    )
    rows = (
        m.groupBy(*keys)
        .agg(F.count("*").alias("count"))
        .join(main, keys)
        .orderBy(F.desc("count"), *keys)
        .limit(top)
        .collect()
    )
    return [
        {**r, "main_reason_name": r["main_reason_name"] or NO_DLH}
        for r in _reason_names([r.asDict() for r in rows], "main_reason", "main_reason_name")
    ]


def current_states(ledger: DataFrame, messages: DataFrame) -> list[dict]:
    """Every landed message once, by the outcome of its latest ledger row (`NOT_TRIED` without one)."""
    latest = (
        ledger.withColumn(
            "_n",
            F.row_number().over(
                Window.partitionBy("message_key").orderBy(F.desc("finished_at"), F.desc("run_id"), F.desc("attempt"))
            ),
        )
        .where("_n = 1")
        .select("message_key", "outcome")
    )
    states = (
        messages.select("message_key")
        .join(latest, "message_key", "left")
        .select(F.coalesce(F.col("outcome"), F.lit(NOT_TRIED)).alias("state"))
    )
    return _rows(states, ["state"])


def _rule_rows(decisions: DataFrame, rules: list[dict]) -> list[dict]:
    """Decisions per rule line with the rule's text and target; decisions no rule made
    (no MQDLH, no match, ...) per reason."""
    by_line = {r["line"]: r for r in rules}
    keyed = decisions.select(
        "rule_line", "action", F.when(F.col("rule_line").isNull(), F.col("ignore_reason")).alias("why")
    )
    rows = _rows(keyed, ["rule_line", "action", "why"])
    rows.sort(key=lambda r: (r["rule_line"] is None, r["rule_line"] or 0, r["action"], r["why"] or ""))
    out = []
    for r in rows:
        why = r.pop("why")
        rule = by_line.get(r["rule_line"], {})
        out.append(
            {
                **r,
                "rule": rule.get("text", f"(no rule: {why})" if r["rule_line"] is None else ""),
                "target": rule.get("target", ""),
            }
        )
    return out


def _retry_rules(ledger: DataFrame) -> list[dict]:
    """Per RETRY rule line: attempts, deliveries, failures and the commonest reason code."""
    tried = ledger.where((F.col("action") == "RETRY") & F.col("outcome").isin("delivered", "failed"))
    top_reason = (
        tried.where(F.col("outcome") == "failed")
        .groupBy("rule_line", "reason_code")
        .count()
        .withColumn("_n", F.row_number().over(Window.partitionBy("rule_line").orderBy(F.desc("count"), "reason_code")))
        .where("_n = 1")
        .select("rule_line", F.col("reason_code").alias("main_reason"))
    )
    rows = (
        tried.groupBy("rule_line")
        .agg(
            F.count("*").alias("attempts"),
            F.sum(F.when(F.col("outcome") == "delivered", 1).otherwise(0)).alias("delivered"),
            F.sum(F.when(F.col("outcome") == "failed", 1).otherwise(0)).alias("failed"),
        )
        .join(top_reason, "rule_line", "left")
        .orderBy("rule_line")
        .collect()
    )
    return _reason_names([r.asDict() for r in rows], "main_reason", "main_reason_name")


def _run_section(run_id: str, decisions: DataFrame, ledger: DataFrame, rules: list[dict], top: int) -> dict:
    failing = ledger.where(F.col("outcome").isin(*ATTENTION_OUTCOMES))
    breakers = (
        ledger.where((F.col("outcome") == "deferred") & F.col("error_text").startswith(BREAKER_TEXT))
        .groupBy("target_qmgr", "target_q")
        .agg(F.count("*").alias("deferred"), F.min("error_text").alias("error_text"))
        .orderBy(F.desc("deferred"), "target_qmgr", "target_q")
        .collect()
    )
    return {
        "scope": SCOPES["run"],
        "run_id": run_id,
        "decisions": decisions.count(),
        "messages": decisions.select("message_key").distinct().count(),
        "by_action": _rows(decisions, ["action"]),
        "by_rule": _rule_rows(decisions, rules),
        "ignored_by_reason": _rows(decisions.where(F.col("action") == "IGNORE"), ["ignore_reason"]),
        "by_outcome": _rows(ledger, ["outcome"]),
        "failures_by_target": _reason_names(
            _rows(failing, ["target_qmgr", "target_q", "outcome", "reason_code"], top), "reason_code"
        ),
        "retry_rules": _retry_rules(ledger),
        "breakers": [r.asDict() for r in breakers],
        # a held unit's rows share one reason, which names the unit and what is missing or
        # which rules disagree (`dlq_pipeline.replay.units`)
        "held_units": [
            {"reason": r["error_text"], "messages": r["messages"]}
            for r in ledger.where(F.col("outcome") == "held")
            .groupBy("error_text")
            .agg(F.count("*").alias("messages"))
            .orderBy("error_text")
            .limit(top)
            .collect()
        ],
    }


def _run_info(storage: Storage, run_id: str | None, rules_file: str | None) -> dict:
    """What the run summary (``_runs/<run_id>.json``) says about the run: target, rules file,
    inputs, start, duration and exit status; only the run id when there is no summary."""
    summary = storage.read_summary(run_id) if run_id else None
    info: dict = {"run_id": run_id, "summary": summary is not None}
    if summary:
        info.update(
            {k: summary.get(k) for k in ("target", "started_at", "finished_at", "exit_status", "inputs", "source")}
        )
        info["rules_file"] = summary.get("rules_file") or None
        info["input_files"] = summary.get("input_files") or None
        info["duration_s"] = round(sum((summary.get("durations") or {}).values()), 3)
    if rules_file:
        info["rules_file"] = rules_file
    return info


def build_report(
    storage: Storage,
    *,
    now: dt.datetime,
    run_id: str | None = None,
    top: int = 10,
    rules: list[dict] | None = None,
    rules_file: str | None = None,
) -> dict:
    """The report on run ``run_id`` (default: the latest), what is pending now and all time.

    ``rules``: the rules table the run used, as `dlq_pipeline.rules.printer.rules_listing`
    gives it (e.g. from ``report --rules FILE``); default: the one in the run's summary.
    """
    messages = decode_headers(storage.read("messages")).cache()
    decisions = storage.read("decisions")
    ledger = storage.read("ledger")
    try:
        runs = [
            {
                "run_id": r["run_id"],
                "decided_at": iso_z(cast(dt.datetime, from_epoch_micros(r["decided_us"]))),  # decided_at: NOT NULL
                "decisions": r["decisions"],
            }
            for r in decisions.groupBy("run_id")
            .agg(F.min(F.unix_micros("decided_at")).alias("decided_us"), F.count("*").alias("decisions"))
            .orderBy("decided_us")
            .collect()
        ]
        run_id = run_id or (runs[-1]["run_id"] if runs else None)
        info = _run_info(storage, run_id, rules_file)
        if rules is None:
            summary = storage.read_summary(run_id) if run_id else None
            rules = (summary or {}).get("rules") or []
        pending = not_ended(messages, ledger).cache()
        with_dlh = messages.where(F.col("has_dlh"))
        report = {
            "generated_at": iso_z(now),
            "as_of": iso_z(storage.as_of_time) if storage.as_of_time else None,
            "run_id": run_id,
            "scopes": SCOPES,
            "run_info": info,
            "rules": rules,
            "runs": runs,
            "overall": {
                "scope": SCOPES["all_time"],
                "messages": messages.count(),
                "without_dlh": _rows(messages.where(~F.col("has_dlh")), ["dlh_problem"]),
                "truncated": messages.where(F.col("truncated")).count(),
                "by_reason": _reason_names(_rows(with_dlh.withColumnRenamed("dlh_reason", "reason"), ["reason"], top)),
                "by_destination": _rows(
                    with_dlh.select(_strip("dlh_dest_qmgr").alias("dest_qmgr"), _strip("dlh_dest_q").alias("dest_q")),
                    ["dest_qmgr", "dest_q"],
                    top,
                ),
                "originators": originators(messages, top),
                "states": current_states(ledger, messages),
            },
            "pending": {
                "scope": SCOPES["pending"],
                "messages": pending.count(),
                "by_reason": _reason_names(
                    _rows(pending.where(F.col("has_dlh")).withColumnRenamed("dlh_reason", "reason"), ["reason"], top)
                ),
                "without_dlh": _rows(pending.where(~F.col("has_dlh")), ["dlh_problem"]),
                "age": _age_buckets(pending, now),
                # landed without the moment their MQMD was recorded: replayed with the Expiry as landed
                "expiry_unknown": pending.where((F.col("expiry") > 0) & F.col("recorded_at").isNull()).count(),
            },
            "arrivals": {"scope": SCOPES["all_time"], **arrivals(messages)},
            "trend": [
                {**r.asDict()}
                for r in ledger.groupBy("run_id", "outcome")
                .agg(F.count("*").alias("count"))
                .orderBy("run_id", "outcome")
                .collect()
            ],
        }
        if run_id:
            report["run"] = _run_section(
                run_id, decisions.where(F.col("run_id") == run_id), ledger.where(F.col("run_id") == run_id), rules, top
            )
        pending.unpersist()
    finally:
        messages.unpersist()
    report["advice"] = advise(report)
    return report


BODY_COLUMNS = ("data",)


def redact_frame(df: DataFrame, *, enabled: bool = True) -> DataFrame:
    if not enabled:
        return df
    for column in BODY_COLUMNS:
        if column in df.columns:
            df = df.withColumn(column, F.lit(None).cast(df.schema[column].dataType))
    if "snippet" in df.columns:
        kind = F.regexp_extract(F.col("snippet"), r"^(A [A-Z]{3}|[A-Z](?= |$))", 1)
        df = df.withColumn(
            "snippet",
            F.when(F.col("snippet").isNull(), None)
            .when(kind != "", F.concat(kind, F.lit(" " + REDACTED)))
            .otherwise(F.lit(REDACTED)),
        )
    return df
