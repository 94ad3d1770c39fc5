"""The retry ledger as a concept: what the `ledger` table says about each message.

A message's state is derived from its ledger rows only. An *attempt* is a put that was
actually tried (outcome ``delivered`` or ``failed``); ``deferred`` and ``dry_run`` rows do
not consume a rule's RETRY count. A message whose processing has *ended* (``delivered`` or
``discarded``) is no longer pending and is never decided again.

A replay that dies after putting (``kill -9``) leaves its ledger rows in per-partition
checkpoints under ``WAREHOUSE/_checkpoints/<run_id>/`` (on the warehouse's filesystem);
`recover_interrupted` appends them before anything is decided or replayed, so what a dead run
delivered is never sent again.
Classify, replay, drain/settle and the report all read message states from here.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from dlq_pipeline import fs as files
from dlq_pipeline.replay.checkpoints import Checkpoint
from dlq_pipeline.replay.targets import complete_partition
from dlq_pipeline.rules.model import PUT_ACTIONS
from dlq_pipeline.tables import ATTEMPT_OUTCOMES, ENDED_OUTCOMES, LEDGER_COLUMNS
from dlq_pipeline.warehouse.lease import check_lease
from dlq_pipeline.warehouse.schemas import table_schema
from dlq_pipeline.warehouse.storage import Storage

log = logging.getLogger(__name__)

CHECKPOINTS_DIR = "_checkpoints"


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
    """Messages whose processing has not ended, each with its prior attempt count. Only the
    ledger rows of ``messages`` are grouped (a semi-join first: a few pending messages do not
    cost a grouping of the whole ledger)."""
    states = message_states(ledger.join(messages.select("message_key"), "message_key", "left_semi"))
    joined = messages.join(states, "message_key", "left")
    return joined.where(~F.coalesce(F.col("ended"), F.lit(False))).select(
        *messages.columns,
        F.coalesce(F.col("prior_attempts"), F.lit(0)).alias("prior_attempts"),
        F.col("last_attempt"),
    )


def ended_keys(ledger: DataFrame) -> DataFrame:
    """The keys (one column, ``message_key``, distinct) of messages whose processing has ended."""
    return ledger.where(F.col("outcome").isin(*ENDED_OUTCOMES)).select("message_key").distinct()


def not_ended(messages: DataFrame, ledger: DataFrame) -> DataFrame:
    """The rows of ``messages`` whose processing has not ended: what is pending now."""
    return messages.join(ended_keys(ledger), "message_key", "left_anti")


def checkpointed_rows(run_dirs: Sequence[str | os.PathLike[str]], appended: set[str]) -> list[dict]:
    """The checkpointed ledger rows of the dead runs in ``run_dirs`` (URIs or paths of
    `dlq_pipeline.fs`) that are not in ``appended`` (runs whose ledger append
    succeeded). First finishes what each partition of every run left behind
    (`complete_partition`: ``dir:`` files a publish record names are renamed into place,
    staging directories removed), so the rows say exactly what is in the output. File work
    only, no Spark."""
    rows: list[dict] = []
    for path in run_dirs:
        run_dir = os.fspath(path)
        run_id = run_dir.rstrip("/").rpartition("/")[2]
        for name in files.list_names(run_dir):
            if not name.startswith("partition-"):
                continue
            state = Checkpoint(files.join(run_dir, name)).load()
            complete_partition(state)
            if run_id not in appended:
                rows.extend(row for key_rows in state.rows.values() for row in key_rows)
    return rows


def recover_checkpoints(spark: SparkSession, storage: Storage, root: str) -> set[str]:
    """Append to the ledger the checkpointed rows of runs that died before their ledger
    append, delete those checkpoints, and return the keys whose processing those rows ended.
    ``root``: the warehouse's ``_checkpoints`` directory, as `dlq_pipeline.fs` reaches it."""
    names = [n for n in files.list_names(root) if not n.startswith(".")]
    if not names:
        return set()
    runs = [files.join(root, n) for n in names]
    appended = {
        r["run_id"]
        for r in storage.read("ledger").where(F.col("run_id").isin(names)).select("run_id").distinct().collect()
    }
    rows = checkpointed_rows(runs, appended)
    if rows:
        log.warning(
            "recovering %d ledger rows from the checkpoints of runs that did not finish: %s",
            len(rows),
            ", ".join(sorted(set(names) - appended)),
        )
        frame = spark.createDataFrame([tuple(r[c] for c in LEDGER_COLUMNS) for r in rows], table_schema("ledger"))
        check_lease(storage)
        storage.append("ledger", frame)
    for run_dir in runs:
        files.delete(run_dir)
    return {r["message_key"] for r in rows if r["outcome"] in ENDED_OUTCOMES}


def recover_interrupted(spark: SparkSession, storage: Storage) -> set[str]:
    """`recover_checkpoints` for the warehouse of ``storage`` (wherever it is: local, HDFS,
    object storage). Classify calls this before deciding, so what a dead run delivered is
    not decided again."""
    return recover_checkpoints(spark, storage, files.join(storage.files_root, CHECKPOINTS_DIR))
