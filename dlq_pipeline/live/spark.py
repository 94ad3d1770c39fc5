"""Live DLQs as tables: drain lands a queue's messages in ``messages``, settle removes from
the queue what the ledger says has ended.

The MQ loops (browse, get, batches, matching by MsgId/CorrelId, confirming each message's key)
are Spark-free in `dlq_pipeline.live.loops`; this module gives them what needs Spark: storing a
chunk of rows (`Storage.merge_new`, so a message already landed is not landed twice) and
asking which message keys have ended (`dlq_pipeline.warehouse.ledger.ended_keys`). Both run on
the driver over one connection and hold the queue's lock; see `dlq_pipeline.live.loops` for what
each mode does and why no message is lost.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from dlq_pipeline.config.settings import RunSettings
from dlq_pipeline.live.loops import DrainResult, LiveQueue, SettleResult, drain_queue, live_queue, settle_queue
from dlq_pipeline.replay.targets import local_warehouse
from dlq_pipeline.warehouse import ledger
from dlq_pipeline.warehouse.landings import record_landing, recording_files, stored_message_keys
from dlq_pipeline.warehouse.schemas import local_rows
from dlq_pipeline.warehouse.storage import Storage


def drain(spark: SparkSession, storage: Storage, live: LiveQueue, **options) -> DrainResult:
    """Land the messages of ``live`` in ``storage``'s ``messages``: `dlq_pipeline.live.loops.drain_queue`
    with its options (``warehouse``, ``run_id``, ``mode``, ``batch_size``, ``limit``,
    ``landed_at``, ``buffer_size``, ``on_batch``, ``progress``, ``clock``), storing each chunk with
    `Storage.merge_new`."""

    def store(rows: list[tuple]) -> int:
        if rows and not recorded:
            record_landing(storage, options["run_id"])
            recorded.append(True)
        stored = stored_message_keys(storage)
        return recording_files(
            storage,
            options["run_id"],
            lambda: storage.merge_new("messages", local_rows(spark, rows, "messages"), stored=stored),
        )

    recorded: list[bool] = []

    return drain_queue(live, store, **options)


def ended_among(storage: Storage, keys: set[str]) -> set[str]:
    """Which of ``keys`` have a ``delivered`` or ``discarded`` ledger row."""
    if not keys:
        return set()
    wanted = storage.spark.createDataFrame([(k,) for k in sorted(keys)], "message_key string")
    ended = ledger.ended_keys(storage.read("ledger"))
    return {r["message_key"] for r in ended.join(wanted, "message_key").collect()}


def settle(spark: SparkSession, storage: Storage, live: LiveQueue, **options) -> SettleResult:
    """Remove from ``live`` the messages whose processing has ended according to
    ``storage``'s ledger: `dlq_pipeline.live.loops.settle_queue` with its options (``warehouse``,
    ``run_id``, ``batch_size``, ``buffer_size``, ``on_batch``, ``progress``)."""
    return settle_queue(live, lambda keys: ended_among(storage, keys), **options)


# --- as stages of a run --------------------------------------------------------------------


def drain_stage(
    spark, storage: Storage, settings: RunSettings, table, *, source: str, run_id: str, progress=None
) -> tuple[LiveQueue, dict]:
    """`run`'s drain: the queue from ``drain.queue``/``drain.qmgr``, else the rules table's
    INPUTQ/INPUTQM, else the queue manager's DEADQ; ``drain.mode``."""
    warehouse = local_warehouse(settings.storage.path)
    live = live_queue(
        source,
        warehouse=warehouse,
        qmgrs=settings.qmgrs,
        queue=settings.drain.queue,
        qmgr=settings.drain.qmgr,
        control=table.control if table is not None else None,
    )
    result = drain(
        spark,
        storage,
        live,
        warehouse=warehouse,
        run_id=run_id,
        mode=settings.drain.mode,
        batch_size=settings.drain.batch_size,
        progress=progress,
    )
    return LiveQueue(live.spec, live.kind, result.qmgr, result.queue, live.target), result.as_dict()


def settle_stage(
    spark, storage: Storage, settings: RunSettings, live: LiveQueue, *, target: str, run_id: str, progress=None
) -> dict:
    """`run`'s settle; skipped for a dry run (it removes nothing) and in move mode (the
    drained messages left the queue when they were landed)."""
    if target == "dry-run":
        return {"skipped": "dry run: nothing is removed from the live queue"}
    if settings.drain.mode == "move":
        return {"skipped": "move mode: the drained messages left the queue when they were landed"}
    return settle(
        spark,
        storage,
        live,
        warehouse=local_warehouse(settings.storage.path),
        run_id=run_id,
        batch_size=settings.drain.batch_size,
        progress=progress,
    ).as_dict()
