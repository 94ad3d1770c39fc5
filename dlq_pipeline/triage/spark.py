"""What is on the DLQ and why, for the triage notebook: small pandas frames from the tables,
and the what-if (a draft rules table against the landed messages, compared with the current
decisions). Reads only; writes nothing.

    tables = load(dlq_pipeline.open_warehouse(spark, "/path/to/warehouse"))
    by_reason(tables)               # pandas: reason, reason_name, count
    advice(storage, now=utc_now())  # the report's advice items, with their evidence
    what_if(tables, dlq_pipeline.load_rules("draft.rules")).transitions
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import cast

import pandas as pd
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from dlq_pipeline.mq.constants import reason_name
from dlq_pipeline.mq.spark import decode_headers
from dlq_pipeline.mq.spark import reason_name as reason_column
from dlq_pipeline.report.spark import AGE_BUCKETS, build_report, dead_lettered_at, origin_qmgr
from dlq_pipeline.report.spark import arrivals as _arrivals
from dlq_pipeline.rules.model import COMPARED, DECISION_COLUMNS, Decision, RulesTable
from dlq_pipeline.rules.spark import decide
from dlq_pipeline.rules.suggest import Draft, Effect, Seen, SuggestOptions, order, suggest
from dlq_pipeline.rules.whatif import display_path
from dlq_pipeline.runtime.clock import as_utc, from_epoch
from dlq_pipeline.triage.charts import body_preview
from dlq_pipeline.warehouse.ledger import not_ended, pending_with_attempts
from dlq_pipeline.warehouse.storage import Storage


@dataclass
class Tables:
    messages: DataFrame  # with the decoded MQDLH columns
    decisions: DataFrame
    ledger: DataFrame
    quarantine: DataFrame
    raw_messages: DataFrame  # as stored (for the what-if)


def load(storage: Storage) -> Tables:
    raw = storage.read("messages")
    return Tables(
        decode_headers(raw).cache(), storage.read("decisions"), storage.read("ledger"), storage.read("quarantine"), raw
    )


def _strip(col: str):
    return F.regexp_replace(F.col(col), r"[ \x00]+$", "")


def _pandas(df: DataFrame) -> pd.DataFrame:
    """The rows as pandas, integer columns as nullable integers (2051, not 2051.0 or NaN)."""
    frame = pd.DataFrame([r.asDict() for r in df.collect()], columns=df.columns)
    for field in df.schema.fields:
        if field.dataType.typeName() in ("integer", "long", "short", "byte"):
            frame[field.name] = frame[field.name].astype("Int64")
    return frame


def latest_decisions(decisions: DataFrame) -> DataFrame:
    """Each message's most recent decision."""
    w = Window.partitionBy("message_key").orderBy(F.desc("decided_at"), F.desc("run_id"))
    return decisions.withColumn("_n", F.row_number().over(w)).where("_n = 1").drop("_n")


def pending(tables: Tables) -> DataFrame:
    return not_ended(tables.messages, tables.ledger)


def overview(tables: Tables) -> dict:
    return {
        "messages": tables.messages.count(),
        "pending": pending(tables).count(),
        "without_dlh": tables.messages.where(~F.col("has_dlh")).count(),
        "truncated": tables.messages.where(F.col("truncated")).count(),
        "quarantined": tables.quarantine.count(),
        "runs": tables.decisions.select("run_id").distinct().count(),
    }


def by_reason(tables: Tables, top: int = 10) -> pd.DataFrame:
    rows = (
        tables.messages.where(F.col("has_dlh"))
        .groupBy(F.col("dlh_reason").alias("reason"))
        .count()
        .orderBy(F.desc("count"), "reason")
        .limit(top)
    )
    frame = _pandas(rows)
    frame.insert(1, "reason_name", [reason_name(int(r)) for r in frame["reason"]])
    return frame


def by_destination(tables: Tables, top: int = 10) -> pd.DataFrame:
    rows = (
        tables.messages.where(F.col("has_dlh"))
        .groupBy(_strip("dlh_dest_qmgr").alias("dest_qmgr"), _strip("dlh_dest_q").alias("dest_q"))
        .count()
        .orderBy(F.desc("count"), "dest_qmgr", "dest_q")
        .limit(top)
    )
    return _pandas(rows)


def by_age(tables: Tables, now: dt.datetime) -> pd.DataFrame:
    """Pending messages by how long ago they were dead-lettered (every bucket, zeros too)."""
    age = F.lit(now).cast("timestamp").cast("long") - dead_lettered_at(pending(tables)).cast("long")
    bucket = None
    for label, limit in AGE_BUCKETS:
        cond = age < limit if limit is not None else F.lit(True)
        bucket = F.when(cond, label) if bucket is None else bucket.when(cond, label)
    bucket = cast(Column, bucket)  # AGE_BUCKETS is not empty
    counts = {
        r["age"]: r["count"] for r in pending(tables).select(bucket.alias("age")).groupBy("age").count().collect()
    }
    return pd.DataFrame({"age": [a for a, _ in AGE_BUCKETS], "count": [counts.get(a, 0) for a, _ in AGE_BUCKETS]})


def arrivals(tables: Tables) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """When messages reached the DLQ (the report's timeline, `dlq_pipeline.report.arrivals`):
    (counts per bucket and reason, wide; the same per originating queue manager; the
    timeline itself with its bursts and the rule that flagged them)."""
    found = _arrivals(tables.messages)

    def wide(by: str) -> pd.DataFrame:
        frame = pd.DataFrame([{"start": s["start"], **s[by]} for s in found["series"]])
        if frame.empty:
            return frame
        frame["start"] = pd.to_datetime(frame["start"])
        return frame.set_index("start").fillna(0).astype("int64")

    return wide("by_reason"), wide("by_qmgr"), found


def advice(storage: Storage, *, now: dt.datetime, run_id: str | None = None, top: int = 10) -> list[dict]:
    """What to do, with its evidence: the report's own advice items (`dlq_pipeline.report.advice`
    over `dlq_pipeline.report.spark.build_report`, run ``run_id`` or the latest), so the
    notebook and ``dlq-pipeline report`` never disagree. Most urgent first."""
    return build_report(storage, now=as_utc(now), run_id=run_id, top=top)["advice"]


def trend(tables: Tables) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per run: decisions by action, and ledger outcomes by outcome (long format, run order)."""
    runs = tables.decisions.groupBy("run_id").agg(F.min("decided_at").alias("decided_at"))
    decisions = (
        tables.decisions.groupBy("run_id", "action")
        .count()
        .join(runs, "run_id")
        .orderBy("decided_at", "action")
        .select("run_id", "decided_at", "action", "count")
    )
    outcomes = (
        tables.ledger.groupBy("run_id", "outcome")
        .count()
        .join(runs, "run_id", "left")
        .orderBy("decided_at", "outcome")
        .select("run_id", "decided_at", "outcome", "count")
    )
    return _pandas(decisions), _pandas(outcomes)


def top_offenders(tables: Tables, top: int = 10) -> pd.DataFrame:
    """Which application on which originating queue manager (not the hub that holds the DLQ)
    sent what ended up on the DLQ, and its commonest reason."""
    m = tables.messages.where(F.col("has_dlh")).select(
        origin_qmgr().alias("qmgr"), _strip("put_appl_name").alias("put_appl_name"), F.col("dlh_reason").alias("reason")
    )
    per_reason = m.groupBy("qmgr", "put_appl_name", "reason").count()
    w = Window.partitionBy("qmgr", "put_appl_name").orderBy(F.desc("count"), "reason")
    main_reason = (
        per_reason.withColumn("_n", F.row_number().over(w))
        .where("_n = 1")
        .select("qmgr", "put_appl_name", F.col("reason").alias("main_reason"))
    )
    rows = (
        m.groupBy("qmgr", "put_appl_name")
        .agg(F.count("*").alias("count"), F.countDistinct("reason").alias("reasons"))
        .join(main_reason, ["qmgr", "put_appl_name"])
        .orderBy(F.desc("count"), "qmgr", "put_appl_name")
        .limit(top)
    )
    frame = _pandas(rows)
    frame["main_reason_name"] = [reason_name(int(r)) for r in frame["main_reason"]]
    return frame


def sample(
    tables: Tables, n: int = 10, *, redact: bool = False, preview_chars: int = 80, reason: int | None = None
) -> pd.DataFrame:
    """``n`` pending messages (oldest landed first) with decoded headers, the latest decision
    and a body preview (``redact``: sizes only; follow ``privacy.redact_payloads``)."""
    rows = pending(tables)
    if reason is not None:
        rows = rows.where(F.col("dlh_reason") == reason)
    latest = latest_decisions(tables.decisions).select("message_key", "action", "rule_line", "ignore_reason")
    picked = (
        rows.join(latest, "message_key", "left")
        .orderBy("landed_at", "source_file", "source_index")
        .limit(n)
        .select(
            "message_key",
            "source_qmgr",
            _strip("put_appl_name").alias("put_appl_name"),
            F.col("dlh_reason").alias("reason"),
            _strip("dlh_dest_qmgr").alias("dest_qmgr"),
            _strip("dlh_dest_q").alias("dest_q"),
            "dlh_put_date",
            "dlh_put_time",
            _strip("dlh_format").alias("format"),
            "dlh_chain",
            "decode_flags",
            "has_dlh",
            "dlh_problem",
            "action",
            "rule_line",
            "ignore_reason",
            "data_length",
            F.substring("data", 1, 172 + preview_chars * 4).alias("_head"),
            F.coalesce("dlh_ccsid", "ccsid").alias("_ccsid"),
        )
    )
    frame = _pandas(picked)
    frame.insert(4, "reason_name", [reason_name(int(r)) if pd.notna(r) else None for r in frame["reason"]])
    frame["preview"] = [
        body_preview(
            bytes(h) if h is not None else b"",
            c,
            has_dlh=bool(d),
            limit=preview_chars,
            redact=redact,
            data_length=n_bytes,
        )
        for h, c, d, n_bytes in zip(frame["_head"], frame["_ccsid"], frame["has_dlh"], frame["data_length"])
    ]
    return frame.drop(columns=["_head", "_ccsid"])


@dataclass
class WhatIf:
    evaluated: int
    changed: int
    transitions: pd.DataFrame  # current_action, draft_action, count (changed or not)
    changes: pd.DataFrame  # up to `limit` changed messages, side by side
    comparison: DataFrame  # every evaluated message (Spark), for further digging


def what_if(tables: Tables, draft: RulesTable, *, current: RulesTable | None = None, limit: int = 20) -> WhatIf:
    """Decide every pending message with ``draft`` (`rules.spark.decide`, attempts from the
    ledger, as a run would) and compare with ``current`` decided the same way, or, without it,
    with each message's latest stored decision. Nothing is written; RETRYINT's ``not_before``
    is not compared (it changes no action or target)."""
    if not draft.ok or (current is not None and not current.ok):
        raise ValueError("what_if needs valid rules tables (check them with `dlq-pipeline rules check`)")
    candidates = decode_headers(pending_with_attempts(tables.raw_messages, tables.ledger)).cache()
    draft_df = candidates.transform(decide(draft, attempts="prior_attempts"))
    if current is not None:
        current_df = candidates.transform(decide(current, attempts="prior_attempts"))
    else:
        current_df = latest_decisions(tables.decisions).join(candidates.select("message_key"), "message_key")
    cols = ("action", "rule_line", *COMPARED[1:])
    d = draft_df.select("message_key", *[F.col(c).alias(f"draft_{c}") for c in cols])
    c = current_df.select("message_key", *[F.col(c).alias(f"current_{c}") for c in cols])
    info = candidates.select(
        "message_key",
        F.col("dlh_reason").alias("reason"),
        reason_column("dlh_reason").alias("reason_name"),
        _strip("dlh_dest_q").alias("dest_q"),
        "source_file",
        "source_index",
    )
    changed = ~F.expr(" AND ".join(f"(current_{k} <=> draft_{k})" for k in COMPARED))
    comparison = info.join(d, "message_key").join(c, "message_key", "left").withColumn("changed", changed).cache()

    def where_to(side: str):  # "FWD HOLD.QFULL": a change of target queue shows, not just "FWD -> FWD"
        return F.concat_ws(" ", F.col(f"{side}_action"), _strip(f"{side}_target_q"))

    transitions = _pandas(
        comparison.groupBy(
            "current_action", "draft_action", where_to("current").alias("current"), where_to("draft").alias("draft")
        )
        .agg(F.count("*").alias("count"), F.sum(F.col("changed").cast("int")).alias("changed"))
        .orderBy(F.desc("count"), F.asc_nulls_first("current_action"), "draft_action", "current", "draft")
    )
    changes = _pandas(comparison.where("changed").orderBy("source_file", "source_index").limit(limit).drop("changed"))
    return WhatIf(
        evaluated=comparison.count(),
        changed=comparison.where("changed").count(),
        transitions=transitions,
        changes=changes,
        comparison=comparison,
    )


def _rtrim_blanks(col: str) -> Column:
    return F.regexp_replace(F.col(col), " +$", "")


def seen(tables: Tables) -> list[Seen]:
    """The landed messages as `rules.suggest.Seen` groups, as `rules.suggest.seen_groups`
    makes them from dumps (collected: one row per group, not per message)."""
    at = F.unix_seconds(dead_lettered_at(tables.messages))  # epoch seconds: a timestamp collected is local time
    dlh = F.col("has_dlh")
    grouped = (
        tables.messages.groupBy(
            dlh.alias("has_dlh"),
            F.col("truncated"),
            F.when(dlh, F.col("dlh_reason")).alias("reason"),
            F.when(dlh, _rtrim_blanks("dlh_dest_q")).otherwise("").alias("dest_q"),
            F.when(dlh, _rtrim_blanks("dlh_dest_qmgr")).otherwise("").alias("dest_qmgr"),
            origin_qmgr().alias("origin"),
            F.coalesce(_strip("put_appl_name"), F.lit("")).alias("appl"),
            (F.floor(at / 3600) * 3600).alias("hour"),
        )
        .agg(F.count("*").alias("count"), F.min(at).alias("first"), F.max(at).alias("last"))
        .collect()
    )

    def when(seconds: int | None) -> dt.datetime | None:
        return from_epoch(seconds) if seconds is not None else None

    rows = [
        Seen(
            r["has_dlh"],
            r["truncated"],
            r["reason"],
            r["dest_q"] or "",
            r["dest_qmgr"] or "",
            r["origin"],
            r["appl"],
            when(r["hour"]),
            r["count"],
            when(r["first"]),
            when(r["last"]),
        )
        for r in grouped
    ]
    return sorted(rows, key=order)


def _source(tables: Tables) -> tuple[str | None, str | None]:
    """The queue and queue manager the messages came from, each when there is one."""
    found = tables.messages.agg(F.collect_set("source_queue"), F.collect_set("source_qmgr")).collect()[0]
    queues, qmgrs = found[0], found[1]
    return (queues[0] if len(queues) == 1 else None), (qmgrs[0] if len(qmgrs) == 1 else None)


def suggest_rules(tables: Tables, options: SuggestOptions | None = None, *, source: str = "") -> Draft:
    """A rules table drafted from the landed messages (`rules.suggest.suggest`): its
    ``text`` to read and save, its ``table`` to try with `what_if` or `decide`. INPUTQ and
    INPUTQM are the queue and queue manager the messages came from, when there is one of each."""
    inputq, inputqm = _source(tables)
    return suggest(seen(tables), options, inputq=inputq, inputqm=inputqm, source=source)


def draft_effect(tables: Tables, draft: RulesTable, against: RulesTable | None = None) -> Effect:
    """What ``draft`` decides for every landed message (no prior attempts, as `rules test`
    takes them), and what changes against ``against`` decided the same way."""
    frame = tables.messages.transform(decide(draft)).withColumnsRenamed({c: f"draft_{c}" for c in DECISION_COLUMNS})
    compared = [f"draft_{c}" for c in DECISION_COLUMNS]
    if against is not None:
        frame = frame.transform(decide(against))
        compared += list(DECISION_COLUMNS)
    example = F.min(F.struct("source_file", "source_index")).alias("example")
    effect = Effect(draft, against)
    for r in frame.groupBy(*compared).agg(F.count("*").alias("count"), example).collect():
        mine = Decision(**{c: r[f"draft_{c}"] for c in DECISION_COLUMNS})
        theirs = Decision(**{c: r[c] for c in DECISION_COLUMNS}) if against is not None else None
        file, index = r["example"]
        effect.add(mine, theirs, r["count"], f"{display_path(file or 'drained')} message {index}")
    return effect
