"""The classify stage (`decide_pending`): pending messages and their durable attempt history
(`warehouse.ledger`) decided with the rules (`rules.spark`) -> the ``decisions`` table, and
the decisions' counts; `classify_pending` is its pure part.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from dlq_pipeline.engine.tasks import TaskTicker
from dlq_pipeline.engine.workers import start_python_workers
from dlq_pipeline.mq.spark import without_data
from dlq_pipeline.rules.model import ACTIONS, DECISION_COLUMNS, PUT_ACTIONS, RulesTable
from dlq_pipeline.rules.spark import decode_and_classify_columns
from dlq_pipeline.runtime.clock import as_utc
from dlq_pipeline.runtime.progress import Progress, Report
from dlq_pipeline.tables import IGNORE_REASONS
from dlq_pipeline.warehouse.landings import landing_state, open_ledger, open_messages
from dlq_pipeline.warehouse.ledger import pending_with_attempts, recover_interrupted
from dlq_pipeline.warehouse.schemas import conform
from dlq_pipeline.warehouse.storage import Storage


def classify_pending(
    pending: DataFrame,
    table: RulesTable,
    *,
    run_id: str,
    now: dt.datetime,
    retry_interval: int | None = None,
) -> DataFrame:
    """The ``decisions`` rows of pending messages (`warehouse.ledger.pending_with_attempts`),
    as stored or already decoded (`mq.spark.decode_headers`): stored, they are decoded and
    decided in one Python UDF (`rules.spark.decode_and_classify_columns`), one Python worker
    per task instead of two.

    RETRYINT: when the chosen rule is the rule of the message's last attempt and that
    attempt is younger than the interval, the decision keeps its action but gets a
    ``not_before`` in the future; replay records it as ``deferred`` without trying.
    """
    decided = decode_and_classify_columns(table, pending, "prior_attempts")
    interval = table.control.retryint if retry_interval is None else retry_interval
    now_lit = F.lit(as_utc(now)).cast("timestamp")  # aware: converted without the local zone
    puts = F.col("action").isin(*PUT_ACTIONS)
    earliest = F.col("last_attempt.at") + F.make_interval(secs=F.lit(interval))
    same_rule_too_soon = (
        puts
        & F.col("last_attempt").isNotNull()
        & (F.col("last_attempt.rule_line") == F.col("rule_line"))
        & (earliest > now_lit)
    )
    decisions = decided.select(
        F.lit(run_id).alias("run_id"),
        "message_key",
        "source_file",
        "source_index",
        *DECISION_COLUMNS,
        F.when(puts, F.col("prior_attempts") + 1).alias("attempt"),
        F.when(same_rule_too_soon, earliest).alias("not_before"),
        now_lit.alias("decided_at"),
    )
    return conform(decisions, "decisions")


class Decided(NamedTuple):
    """What `decide_pending` made: the decisions (persisted) and their counts."""

    decisions: DataFrame
    counts: DecisionCounts


def decide_pending(
    spark: SparkSession,
    storage: Storage,
    table: RulesTable,
    *,
    run_id: str,
    now: dt.datetime,
    retry_interval: int | None = None,
    progress: Progress | Report | None = None,
) -> Decided:
    """Classify every pending message in the warehouse, append the decisions and return
    them, persisted, with their counts: the rows the append wrote, which the append's own
    job put in Spark's cache (no second job reads the table back), counted by that job too
    (an observation: `observed_counts`). The caller unpersists them when done.
    ``progress`` gets the task counts of the write, which decodes and decides (`TaskTicker`).

    First, the ledger rows of a replay that died (``kill -9``) after putting are recovered
    from its checkpoints, so messages it delivered are not pending any more: a decision is
    never made for a message whose delivery is only recorded in a checkpoint."""
    recover_interrupted(spark, storage)
    landings = landing_state(storage)
    if not landings.open:  # every landing settled: nothing is pending, and no job needs to say so
        return Decided(storage.read("decisions").where(F.lit(False)).persist(), DecisionCounts(0, {}, {}, {}))
    start_python_workers(spark)  # while the driver plans below, the task slots are idle
    # never `data`: a 100 MB message would be read whole for its 172-byte header; only the
    # landings not settled, where every pending message is (`warehouse.landings`)
    messages = without_data(open_messages(storage, landings))
    pending = pending_with_attempts(messages, open_ledger(storage, landings))
    decisions = classify_pending(pending, table, run_id=run_id, now=now, retry_interval=retry_interval)
    decisions = decisions.persist(StorageLevel.MEMORY_AND_DISK_DESER)  # as built: no serialized copy
    observation = Observation(f"decisions_{run_id}_{secrets.token_hex(4)}")
    try:
        with TaskTicker(spark, progress, "classify", "tasks", stage="last"):  # silent for a minute otherwise
            storage.append("decisions", decisions.observe(observation, *counted()))
        counts = observed_counts(observation.get) or decision_counts(decisions)
    except BaseException:
        decisions.unpersist()
        raise
    return Decided(decisions, counts)


def target_key() -> tuple[Column, Column]:
    """(target queue manager, target queue) of a decision, blank for none: what replay places."""
    return F.coalesce(F.col("target_qmgr"), F.lit("")), F.coalesce(F.col("target_q"), F.lit(""))


@dataclass(frozen=True)
class DecisionCounts:
    total: int
    actions: dict[str, int]
    ignore_reasons: dict[str, int]
    # (target queue manager, queue): what replay places; None when counted by `observed_counts`
    puts_per_queue: dict[tuple[str, str], int] | None = None


def counted() -> list[Column]:
    """The decisions' counts as aggregates of the write that stores them (`decide_pending`):
    the actions and ignore reasons are closed sets, so no group-by job is needed."""
    return [
        F.count(F.lit(1)).alias("total"),
        *[F.sum(F.when(F.col("action") == a, 1).otherwise(0)).alias(f"action_{a}") for a in ACTIONS],
        F.count("ignore_reason").alias("ignored_with_reason"),
        *[F.sum(F.when(F.col("ignore_reason") == r, 1).otherwise(0)).alias(f"reason_{r}") for r in IGNORE_REASONS],
    ]


def observed_counts(metrics: dict) -> DecisionCounts | None:
    """`DecisionCounts` (without the puts per queue) from the write's observed ``metrics``
    (pure), or None when they do not add up (an action or reason outside the known sets):
    then the caller counts with `decision_counts`, so the counts are exact either way."""
    total = int(metrics.get("total") or 0)
    actions = {a: int(metrics.get(f"action_{a}") or 0) for a in ACTIONS}
    reasons = {r: int(metrics.get(f"reason_{r}") or 0) for r in IGNORE_REASONS}
    if sum(actions.values()) != total or sum(reasons.values()) != int(metrics.get("ignored_with_reason") or 0):
        return None
    return DecisionCounts(
        total, {a: n for a, n in sorted(actions.items()) if n}, {r: n for r, n in sorted(reasons.items()) if n}
    )


def decision_counts(decisions: DataFrame) -> DecisionCounts:
    """The decisions per action, per ignore reason and the puts per target queue in one
    aggregation (one job over the cached decisions, where a count and three group-bys ran
    four)."""
    qmgr, queue = target_key()
    total = 0
    actions: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    puts: Counter[tuple[str, str]] = Counter()
    grouped = decisions.groupBy("action", "ignore_reason", qmgr.alias("qmgr"), queue.alias("queue"))
    for r in grouped.agg(F.count("*").alias("n")).collect():
        n = int(r["n"])
        total += n
        actions[str(r["action"])] += n
        if r["ignore_reason"] is not None:
            reasons[str(r["ignore_reason"])] += n
        puts[(r["qmgr"], r["queue"])] += n if r["action"] in PUT_ACTIONS else 0
    return DecisionCounts(total, dict(sorted(actions.items())), dict(sorted(reasons.items())), dict(puts))
