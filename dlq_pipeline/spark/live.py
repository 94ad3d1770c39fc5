"""Live DLQs: drain (land a queue's messages) and settle (remove what has been dealt with).

Both run on the driver over one connection (a queue is read in order by one reader; Spark
only writes the tables), hold the queue's lock (`dlq_pipeline.live.QueueLock`) and never
lose a message:

**drain, browse mode** (default): browse first/next with a version-2 MQMD, the buffer grown
on 2080 and never truncated; messages are landed in chunks with `Storage.merge_new`, so a
second browse lands nothing new. Nothing on the queue changes.

**drain, move mode**: destructive gets under syncpoint, ``drain.batch_size`` per unit of
work; the batch is landed (``merge_new`` has completed: the rows are durable) *before*
MQCMIT. A failure before the commit backs the unit of work out, so the messages stay on the
queue (BackoutCount + 1); if they had been landed already, the next drain gets them again,
lands nothing new (the key ignores BackoutCount) and commits.

Rows are the ones ingest writes (`dlq_pipeline.tables.message_row`: same columns,
``data_digest``, ``message_key``), with ``source_kind`` ``drain``, ``source_qmgr``/
``source_queue`` the live queue, ``source_index`` the position in this drain and no file.
A message repeated on the queue (same key) lands once.

**settle**: browse the queue, compute each message's key, look up which keys' processing has
ended (ledger ``delivered``/``discarded``), and get exactly those by MsgId+CorrelId under
syncpoint, in batches. Each got message's key (MsgId, CorrelId, put date/time, application
and data digest) must equal the one browsed; a message that does not (MsgIds are not unique)
makes the batch back out and is left on the queue and reported. Messages that are no longer
there (someone else got them) are counted, not errors.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import asdict, dataclass, field
from typing import Callable

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from dlq_pipeline.identity import data_digest, message_key
from dlq_pipeline.live import LiveError, LiveQueue, QueueLock, live_queue, lock_path, resolve_queue
from dlq_pipeline.dumps.records import DumpedMessage
from dlq_pipeline.mq import reasons
from dlq_pipeline.mq.interface import DEFAULT_BUFFER, Message, MQError
from dlq_pipeline.spark.ingest import _timestamp
from dlq_pipeline.tables import ENDED_OUTCOMES, message_row
from dlq_pipeline.spark.schemas import table_schema
from dlq_pipeline.spark.storage import Storage

log = logging.getLogger(__name__)

BROWSE_CHUNK_MESSAGES = 10_000
CHUNK_BYTES = 64 * 1024 * 1024
_MESSAGES = table_schema("messages")


@dataclass
class DrainResult:
    source: str
    qmgr: str
    queue: str
    mode: str
    read: int = 0  # messages browsed or got
    landed: int = 0  # new rows in `messages`
    already_landed: int = 0
    removed: int = 0  # move mode: messages whose get was committed
    batches: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class SettleResult:
    source: str
    qmgr: str
    queue: str
    browsed: int = 0
    ended: int = 0  # messages on the queue whose processing has ended
    removed: int = 0
    gone: int = 0  # no longer on the queue when settle came to get them
    mismatched: list[dict] = field(default_factory=list)  # left alone: MsgId/CorrelId matched another message

    def as_dict(self) -> dict:
        return asdict(self)


def message_rows(messages: list[tuple[int, Message]], live: LiveQueue, *, run_id: str,
                 landed_at: dt.datetime) -> list[tuple]:
    """`messages` table rows (tuples in schema order) for ``(position, message)`` pairs, built
    by the same function ingest uses."""
    out = []
    for index, m in messages:
        row = message_row(DumpedMessage(m.md, m.data, index))  # no size limit: MQ gave it
        row.update(source_kind="drain", source_qmgr=live.qmgr, source_queue=live.queue, source_file=None,
                   source_index=index, source_line=None, source_offset=None, landed_at=landed_at, run_id=run_id)
        out.append(tuple(row.get(f.name) for f in _MESSAGES.fields))
    return out


class _Lander:
    """Lands chunks of messages into `messages`, each key once per drain."""

    def __init__(self, spark, storage: Storage, live: LiveQueue, result: DrainResult, run_id: str,
                 landed_at: dt.datetime):
        self.spark, self.storage, self.live, self.result = spark, storage, live, result
        self.run_id, self.landed_at = run_id, landed_at
        self.seen: set[str] = set()

    def land(self, messages: list[tuple[int, Message]]) -> None:
        rows = []
        for row in message_rows(messages, self.live, run_id=self.run_id, landed_at=self.landed_at):
            key = row[0]
            if key in self.seen:
                self.result.already_landed += 1
                continue
            self.seen.add(key)
            rows.append(row)
        if not rows:
            return
        landed = self.storage.merge_new("messages", self.spark.createDataFrame(rows, _MESSAGES))
        self.result.landed += landed
        self.result.already_landed += len(rows) - landed


def _close(conn, *, ok: bool) -> None:
    """Back out an open unit of work unless ``ok`` (MQDISC would commit it), then disconnect."""
    if not ok:
        try:
            conn.backout()
        except MQError:
            pass  # a broken connection's unit of work is backed out by the queue manager
    try:
        conn.disconnect()
    except MQError:
        pass


def drain(
    spark: SparkSession,
    storage: Storage,
    live: LiveQueue,
    *,
    warehouse,
    run_id: str,
    mode: str = "browse",
    batch_size: int = 200,
    limit: int | None = None,
    landed_at: dt.datetime | None = None,
    buffer_size: int = DEFAULT_BUFFER,
    on_batch: Callable[[str, int], None] | None = None,
) -> DrainResult:
    """Land the messages of ``live`` (see the module doc). ``limit``: at most this many
    messages (a queue that keeps filling would otherwise never end). ``on_batch(stage,
    batch)`` is called in move mode with ``"landed"`` after a batch is durable and before
    MQCMIT, and ``"committed"`` after it (tests inject failures there)."""
    if mode not in ("browse", "move"):
        raise ValueError(f"drain mode must be browse or move, not {mode!r}")
    live.target.preflight()
    landed_at = _timestamp(landed_at)  # aware UTC, as ingest stamps it
    with live.target.partition(run_id, 0) as part:
        conn = part.connect()
        ok = False
        try:
            live = resolve_queue(live, conn)
            result = DrainResult(live.spec, live.qmgr, live.queue, mode)
            with QueueLock(lock_path(warehouse, live.qmgr, live.queue), what=f"queue {live.queue} on {live.qmgr}",
                           command=f"drain ({mode})", run_id=run_id):
                lander = _Lander(spark, storage, live, result, run_id, landed_at)
                if mode == "browse":
                    _browse(conn, live, lander, result, limit, buffer_size)
                else:
                    _move(conn, live, lander, result, batch_size, limit, buffer_size, on_batch)
            ok = True
        finally:
            _close(conn, ok=ok)
    log.info("drained %s: %s", live.label, result)
    return result


def _browse(conn, live, lander: _Lander, result: DrainResult, limit, buffer_size) -> None:
    chunk: list[tuple[int, Message]] = []
    size = 0
    for message in conn.browse(live.queue, buffer_size=buffer_size):
        chunk.append((result.read, message))
        result.read += 1
        size += len(message.data)
        if len(chunk) >= BROWSE_CHUNK_MESSAGES or size >= CHUNK_BYTES:
            lander.land(chunk)
            result.batches += 1
            chunk, size = [], 0
        if limit is not None and result.read >= limit:
            break
    if chunk:
        lander.land(chunk)
        result.batches += 1


def _move(conn, live, lander: _Lander, result: DrainResult, batch_size, limit, buffer_size, on_batch) -> None:
    while limit is None or result.read < limit:
        batch: list[tuple[int, Message]] = []
        want = batch_size if limit is None else min(batch_size, limit - result.read)
        while len(batch) < want:
            try:
                message = conn.get(live.queue, syncpoint=True, buffer_size=buffer_size)
            except MQError as exc:
                if exc.reason == reasons.MQRC_NO_MSG_AVAILABLE:
                    break
                raise LiveError(f"getting from {live.label} failed: {exc}; the unit of work is backed out, "
                                f"{len(batch)} got messages stay on the queue") from exc
            batch.append((result.read + len(batch), message))
        if not batch:
            return
        try:
            lander.land(batch)
        except Exception as exc:
            raise LiveError(f"landing {len(batch)} messages from {live.label} failed; the unit of work is backed "
                            f"out and they stay on the queue: {exc}") from exc
        if on_batch is not None:
            on_batch("landed", result.batches)
        try:
            conn.commit()
        except MQError as exc:
            raise LiveError(f"committing the removal of {len(batch)} landed messages from {live.label} failed: "
                            f"{exc}; they are landed and, if the queue manager backed the gets out, still on the "
                            "queue: the next drain removes them without landing them twice") from exc
        result.read += len(batch)
        result.removed += len(batch)
        result.batches += 1
        if on_batch is not None:
            on_batch("committed", result.batches)
        if len(batch) < want:
            return


# --- settle --------------------------------------------------------------------------------


def ended_keys(storage: Storage, keys: set[str]) -> set[str]:
    """Which of ``keys`` have a ``delivered`` or ``discarded`` ledger row."""
    if not keys:
        return set()
    wanted = storage.spark.createDataFrame([(k,) for k in sorted(keys)], "message_key string")
    ended = storage.read("ledger").where(F.col("outcome").isin(*ENDED_OUTCOMES)).select("message_key").distinct()
    return {r["message_key"] for r in ended.join(wanted, "message_key").collect()}


def _key(message: Message) -> str:
    return message_key(message.md, data_digest(message.data))


def settle(
    spark: SparkSession,
    storage: Storage,
    live: LiveQueue,
    *,
    warehouse,
    run_id: str,
    batch_size: int = 200,
    buffer_size: int = DEFAULT_BUFFER,
    on_batch: Callable[[str, int], None] | None = None,
) -> SettleResult:
    """Remove from ``live`` the messages whose processing has ended (see the module doc)."""
    live.target.preflight()
    with live.target.partition(run_id, 0) as part:
        conn = part.connect()
        ok = False
        try:
            live = resolve_queue(live, conn)
            result = SettleResult(live.spec, live.qmgr, live.queue)
            with QueueLock(lock_path(warehouse, live.qmgr, live.queue), what=f"queue {live.queue} on {live.qmgr}",
                           command="settle", run_id=run_id):
                present: list[tuple[str, bytes, bytes]] = []
                for message in conn.browse(live.queue, buffer_size=buffer_size):
                    present.append((_key(message), message.md.msg_id, message.md.correl_id))
                result.browsed = len(present)
                ended = ended_keys(storage, {k for k, _, _ in present})
                candidates = [p for p in present if p[0] in ended]
                result.ended = len(candidates)
                for start in range(0, len(candidates), batch_size):
                    _settle_batch(conn, live, candidates[start:start + batch_size], result, buffer_size)
                    if on_batch is not None:
                        on_batch("committed", start // batch_size + 1)
            ok = True
        finally:
            _close(conn, ok=ok)
    log.info("settled %s: %s", live.label, result)
    return result


def _settle_batch(conn, live: LiveQueue, batch: list[tuple[str, bytes, bytes]], result: SettleResult,
                  buffer_size: int) -> None:
    """Get the batch's messages under syncpoint and commit; a message whose key is not the
    expected one backs the batch out, is reported and left alone, and the rest is got again."""
    todo = list(batch)
    while todo:
        removed = gone = 0
        wrong = None
        for key, msg_id, correl_id in todo:
            try:
                got = conn.get(live.queue, msg_id=msg_id, correl_id=correl_id, syncpoint=True,
                               buffer_size=buffer_size)
            except MQError as exc:
                if exc.reason == reasons.MQRC_NO_MSG_AVAILABLE:
                    gone += 1
                    continue
                raise LiveError(f"settle: getting a message from {live.label} failed: {exc}; the unit of work is "
                                "backed out, nothing of this batch was removed") from exc
            if _key(got) != key:
                wrong = (key, msg_id, correl_id)
                break
            removed += 1
        if wrong is None:
            try:
                conn.commit()
            except MQError as exc:
                raise LiveError(f"settle: committing the removal of {removed} messages from {live.label} failed: "
                                f"{exc}; a rerun of settle finishes the job") from exc
            result.removed += removed
            result.gone += gone
            return
        conn.backout()
        log.warning("settle: the message got for MsgId %s on %s is not the one browsed (key %s); left on the queue",
                    wrong[1].hex(), live.label, wrong[0])
        result.mismatched.append({"message_key": wrong[0], "msg_id": wrong[1].hex(), "correl_id": wrong[2].hex(),
                                  "reason": "the first message with this MsgId and CorrelId has another data digest "
                                            "or put time: left on the queue"})
        todo.remove(wrong)


# --- from the configuration ----------------------------------------------------------------


def live_from_config(config, source: str, *, warehouse, table=None, queue: str = "", qmgr: str = "") -> LiveQueue:
    """The live queue: command-line ``queue``/``qmgr`` > ``drain.queue``/``drain.qmgr`` >
    the rules table's INPUTQ/INPUTQM > the queue manager's DEADQ."""
    return live_queue(source, warehouse=warehouse, config=config,
                      queue=queue or config.get("drain", "queue"), qmgr=qmgr or config.get("drain", "qmgr"),
                      control=table.control if table is not None else None)


def _warehouse(config):
    from dlq_pipeline.spark.replay import local_warehouse

    return local_warehouse(config.get("storage", "path"))


def drain_stage(spark, storage: Storage, config, table, *, source: str, run_id: str) -> tuple[LiveQueue, dict]:
    """`run`'s drain: the queue from the configuration and rules table, ``drain.mode``."""
    warehouse = _warehouse(config)
    live = live_from_config(config, source, warehouse=warehouse, table=table)
    result = drain(spark, storage, live, warehouse=warehouse, run_id=run_id, mode=config.get("drain", "mode"),
                   batch_size=config.get("drain", "batch_size"))
    return LiveQueue(live.spec, live.kind, result.qmgr, result.queue, live.target), result.as_dict()


def settle_stage(spark, storage: Storage, config, live: LiveQueue, *, target: str, run_id: str) -> dict:
    """`run`'s settle; skipped for a dry run (it removes nothing) and in move mode (the
    drained messages left the queue when they were landed)."""
    if target == "dry-run":
        return {"skipped": "dry run: nothing is removed from the live queue"}
    if config.get("drain", "mode") == "move":
        return {"skipped": "move mode: the drained messages left the queue when they were landed"}
    return settle(spark, storage, live, warehouse=_warehouse(config), run_id=run_id,
                  batch_size=config.get("drain", "batch_size")).as_dict()
