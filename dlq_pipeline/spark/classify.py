"""Classify stage: pending messages + their durable attempt history + the rules -> decisions.

A message's state is derived from its ledger rows only. An *attempt* is a put that was
actually tried (outcome ``delivered`` or ``failed``); ``deferred`` and ``dry_run`` rows do
not consume a rule's RETRY count. A message whose processing has *ended* (``delivered`` or
``discarded``) is no longer pending.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dlq_pipeline.clock import as_utc
from dlq_pipeline.spark.compiler import DECISION_COLUMNS, classify_columns
from dlq_pipeline.rules.model import RulesTable
from dlq_pipeline.spark.schemas import conform
from dlq_pipeline.tables import ATTEMPT_OUTCOMES, ENDED_OUTCOMES, PUT_ACTIONS



def message_states(ledger: DataFrame) -> DataFrame:
    """One row per message in the ledger: prior_attempts, last attempt (time, rule), ended."""
    tried = F.col("outcome").isin(*ATTEMPT_OUTCOMES) & F.col("action").isin(*PUT_ACTIONS)
    return ledger.groupBy("message_key").agg(
        F.sum(F.when(tried, 1).otherwise(0)).cast("int").alias("prior_attempts"),
        F.max(F.when(tried, F.struct(F.col("finished_at").alias("at"), F.col("rule_line").alias("rule_line")))).alias(
            "last_attempt"
        ),
        F.max(F.col("outcome").isin(*ENDED_OUTCOMES)).alias("ended"),
    )


def pending_with_attempts(messages: DataFrame, ledger: DataFrame) -> DataFrame:
    """Messages whose processing has not ended, each with its prior attempt count."""
    states = message_states(ledger)
    joined = messages.join(states, "message_key", "left")
    return joined.where(~F.coalesce(F.col("ended"), F.lit(False))).select(
        *messages.columns,
        F.coalesce(F.col("prior_attempts"), F.lit(0)).alias("prior_attempts"),
        F.col("last_attempt"),
    )


def classify(
    pending: DataFrame,
    table: RulesTable,
    *,
    run_id: str,
    now: dt.datetime,
    retry_interval: int | None = None,
) -> DataFrame:
    """Decisions for decoded pending messages (``pending_with_attempts`` + decode columns).

    RETRYINT: when the chosen rule is the rule of the message's last attempt and that
    attempt is younger than the interval, the decision keeps its action but gets a
    ``not_before`` in the future; replay records it as ``deferred`` without trying.
    """
    interval = table.control.retryint if retry_interval is None or retry_interval < 0 else retry_interval
    now_lit = F.lit(as_utc(now)).cast("timestamp")  # aware: converted without the local zone
    decided = classify_columns(table, pending, "prior_attempts")
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
