"""Live DLQs (no Spark here): which queue a drain or settle works on, the lock that keeps
two of them off the same queue at once, and their MQ loops. `dlq_pipeline.live.spark` gives
the loops a way to store rows and to ask which keys have ended, as `dlq_pipeline.replay.spark`
does for the replay writer's loop (`dlq_pipeline.replay.writer`).

**Source.** ``mq:QMGR`` (a real queue manager, client settings from ``[mq.qmgrs.QMGR]``) or
``sim:NAME`` (the simulated queue manager ``WAREHOUSE/_sim/NAME.sqlite``). The name may be
left out (``mq:``/``sim:``): the queue manager is then ``drain.qmgr`` (``--qmgr``), else the
rules table's ``INPUTQM``; a ``sim:`` with neither is ``SIM``.

**Queue.** ``--queue`` (``drain.queue``), else the rules table's ``INPUTQ``, else the queue
manager's own dead-letter queue (its DEADQ attribute, inquired when connected). The command
line wins over the rules table's control data, as with ``runmqdlq -q/-m``
(docs/rules-reference.md, "5. Control data").

**Lock.** One drain or settle per queue manager and queue at a time: an exclusive
``flock`` on ``WAREHOUSE/_locks/<qmgr>@<queue>.lock`` (`dlq_pipeline.warehouse.locks`: released by the
kernel however the process ends, ``kill -9`` included; the file names the holder). The
commands also hold the warehouse-wide writer lock, which subsumes this one within a
warehouse; `drain`/`settle` keep taking it themselves so that direct library callers are
kept off the queue too.

Both loops run on the driver over one connection (a queue is read in order by one reader)
and never lose a message:

**drain, browse mode** (default): browse first/next with a version-2 MQMD, the buffer grown
on 2080 and never truncated; messages are stored in chunks (``store`` keeps only new keys,
e.g. `Storage.merge_new`), so a second browse lands nothing new. Nothing on the queue changes.

**drain, move mode**: destructive gets under syncpoint, ``drain.batch_size`` per unit of
work; the batch is stored (``store`` has returned: the rows are durable) *before* MQCMIT. A
failure before the commit backs the unit of work out, so the messages stay on the queue
(BackoutCount + 1); if they had been stored already, the next drain gets them again, lands
nothing new (the key ignores BackoutCount) and commits.

Rows are the ones ingest writes (`dlq_pipeline.tables.message_row`: same columns,
``data_digest``, ``message_key``), with ``source_kind`` ``drain``, ``source_qmgr``/
``source_queue`` the live queue, ``source_index`` the position in this drain and no file,
and ``recorded_at`` the moment of the browse or get that read it: its Expiry is what was left
then. A message repeated on the queue (same key) lands once.

**settle**: browse the queue, compute each message's key, ask which keys' processing has
ended (ledger ``delivered``/``discarded``/``expired``), and get exactly those by MsgId+CorrelId under
syncpoint, in batches. Each got message's key (MsgId, CorrelId, put date/time, application
and data digest) must equal the one browsed; a message that does not (MsgIds are not unique)
makes the batch back out and is left on the queue and reported. Messages that are no longer
there (someone else got them) are counted, not errors.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dlq_pipeline.config.options import DRAIN_MODES
from dlq_pipeline.dumps.records import DumpedMessage
from dlq_pipeline.errors import DlqPipelineError
from dlq_pipeline.mq import reasons
from dlq_pipeline.mq.interface import DEFAULT_BUFFER, Message, MQError
from dlq_pipeline.replay.targets import DEFAULT_SIM_NAME, Target, TargetError, open_target, parse_target, safe_file_name
from dlq_pipeline.runtime.clock import as_utc, utc_now
from dlq_pipeline.runtime.progress import Progress, Report, as_progress
from dlq_pipeline.tables import message_row, table_columns
from dlq_pipeline.tables.identity import data_digest, message_key
from dlq_pipeline.warehouse.locks import LOCKS_DIR, FileLock

log = logging.getLogger(__name__)

SOURCE_KINDS = ("mq", "sim")
BROWSE_CHUNK_MESSAGES = 10_000
CHUNK_BYTES = 64 * 1024 * 1024
MESSAGE_COLUMNS = table_columns("messages")
_KEY = MESSAGE_COLUMNS.index("message_key")

# Stores `messages` rows (tuples in schema order) keeping only new keys; returns how many it added.
StoreRows = Callable[[list[tuple]], int]
# Which of these message keys have ended (a delivered, discarded or expired ledger row).
EndedKeys = Callable[[set[str]], set[str]]
# A message read from the queue: its position in the drain, the message, when it was read.
Read = tuple[int, Message, dt.datetime]


class LiveError(DlqPipelineError, RuntimeError):
    """A drain or settle cannot go on; the message says what happened to the messages."""


class QueueLocked(LiveError):
    """Another drain or settle holds the queue."""


@dataclass(frozen=True)
class LiveQueue:
    """A resolved live queue: where it is and how to connect to it. ``queue`` is "" until the
    queue manager's DEADQ has been inquired (see `resolve_queue`)."""

    spec: str
    kind: str
    qmgr: str
    queue: str
    target: Target

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.qmgr}/{self.queue or '(DEADQ)'}"


def parse_source(spec: str) -> tuple[str, str]:
    """(kind, queue manager or "") of ``mq:[QMGR]`` or ``sim:[NAME]``; TargetError otherwise."""
    kind, sep, name = (spec or "").partition(":")
    if not sep or kind not in SOURCE_KINDS:
        raise TargetError(f"a live source is mq:QMGR or sim:NAME, not {spec!r}")
    if name:
        parse_target(spec)  # validates the name
    return kind, name


def live_queue(
    spec: str,
    *,
    warehouse: str | os.PathLike,
    qmgrs: Mapping[str, Mapping] | None = None,
    queue: str = "",
    qmgr: str = "",
    control=None,
) -> LiveQueue:
    """The live queue for ``spec``. ``queue``/``qmgr`` come from the command line or the
    configuration (``drain.queue``/``drain.qmgr``); ``qmgrs`` are the client settings per
    queue manager (``[mq.qmgrs]``, for ``mq:``); ``control`` is the rules table's
    `ControlData` (INPUTQ/INPUTQM), used when they are blank. A queue manager named in
    ``spec`` wins over ``qmgr`` and INPUTQM."""
    kind, named = parse_source(spec)
    inputq = ((control.inputq if control is not None else None) or "").strip(" ")
    inputqm = ((control.inputqm if control is not None else None) or "").strip(" ")
    qmgr = (qmgr or "").strip(" ")
    name = named or qmgr or inputqm or (DEFAULT_SIM_NAME if kind == "sim" else "")
    if not name:
        raise TargetError(
            f"source {spec} names no queue manager: write mq:QMGR, use --qmgr, or set INPUTQM in the rules table"
        )
    target = open_target(f"{kind}:{name}", warehouse=warehouse, qmgrs=qmgrs)
    return LiveQueue(f"{kind}:{name}", kind, name, (queue or "").strip(" ") or inputq, target)


def resolve_queue(live: LiveQueue, conn) -> LiveQueue:
    """``live`` with its queue named: the queue manager's DEADQ when no queue was given."""
    if live.queue:
        return live
    inquire = getattr(conn, "dead_letter_queue", None)
    deadq = inquire() if inquire is not None else ""
    if not deadq:
        raise LiveError(
            f"no queue to drain: queue manager {live.qmgr} has no dead-letter queue (DEADQ); "
            "name one with --queue, drain.queue or INPUTQ in the rules table"
        )
    return LiveQueue(live.spec, live.kind, live.qmgr, deadq, live.target)


# --- the lock ------------------------------------------------------------------------------


def lock_path(warehouse: str | os.PathLike, qmgr: str, queue: str) -> Path:
    return Path(warehouse) / LOCKS_DIR / f"{safe_file_name(qmgr)}@{safe_file_name(queue)}.lock"


class QueueLock(FileLock):
    """``with QueueLock(path, what=..., command=..., run_id=...):`` holds the queue or raises
    `QueueLocked` naming the holder. Not re-entrant, also within one process."""

    def __init__(self, path: str | os.PathLike, *, what: str, command: str, run_id: str):
        super().__init__(path, command=command, run_id=run_id)
        self.what = what

    def refused(self, holder: str) -> Exception:
        return QueueLocked(
            f"{self.what} is already being worked on by {holder} (lock file {self.path}); "
            "wait for it to finish, only one drain or settle per queue runs at a time"
        )


# --- drain ---------------------------------------------------------------------------------


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


def message_rows(messages: list[Read], live: LiveQueue, *, run_id: str, landed_at: dt.datetime) -> list[tuple]:
    """`messages` table rows (tuples in schema order) for ``(position, message, read at)``
    triples, built by the same function ingest uses."""
    out = []
    for index, m, read_at in messages:
        row = message_row(DumpedMessage(m.md, m.data, index))  # no size limit: MQ gave it
        row.update(
            source_kind="drain",
            source_qmgr=live.qmgr,
            source_queue=live.queue,
            source_file=None,
            source_index=index,
            source_line=None,
            source_offset=None,
            recorded_at=read_at,
            landed_at=landed_at,
            run_id=run_id,
        )
        out.append(tuple(row.get(c) for c in MESSAGE_COLUMNS))
    return out


class _Lander:
    """Stores chunks of messages as `messages` rows, each key once per drain."""

    def __init__(self, store: StoreRows, live: LiveQueue, result: DrainResult, run_id: str, landed_at: dt.datetime):
        self.store, self.live, self.result = store, live, result
        self.run_id, self.landed_at = run_id, landed_at
        self.seen: set[str] = set()

    def land(self, messages: list[Read]) -> None:
        rows = []
        for row in message_rows(messages, self.live, run_id=self.run_id, landed_at=self.landed_at):
            key = row[_KEY]
            if key in self.seen:
                self.result.already_landed += 1
                continue
            self.seen.add(key)
            rows.append(row)
        if not rows:
            return
        landed = self.store(rows)
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


def drain_queue(
    live: LiveQueue,
    store: StoreRows,
    *,
    warehouse,
    run_id: str,
    mode: str = "browse",
    batch_size: int = 200,
    limit: int | None = None,
    landed_at: dt.datetime | None = None,
    buffer_size: int = DEFAULT_BUFFER,
    on_batch: Callable[[str, int], None] | None = None,
    progress: Progress | Report | None = None,
    clock: Callable[[], dt.datetime] = utc_now,
) -> DrainResult:
    """Land the messages of ``live`` through ``store`` (see the module doc). ``limit``: at
    most this many messages (a queue that keeps filling would otherwise never end).
    ``landed_at`` (default now; naive means UTC) stamps the rows; ``clock`` gives the moment
    each message is read (its ``recorded_at``; naive means UTC). ``on_batch(stage, batch)``
    is called in move mode with ``"landed"`` after a batch is durable and before MQCMIT, and
    ``"committed"`` after it (tests inject failures there). ``progress`` gets the count of
    messages read (browse) or moved and committed (`dlq_pipeline.runtime.progress`)."""
    if mode not in DRAIN_MODES:
        raise ValueError(f"drain mode must be browse or move, not {mode!r}")
    live.target.preflight()
    landed_at = as_utc(landed_at) or utc_now()  # aware UTC, as ingest stamps it
    with live.target.partition(run_id, 0) as part:
        conn = part.connect()
        ok = False
        try:
            live = resolve_queue(live, conn)
            result = DrainResult(live.spec, live.qmgr, live.queue, mode)
            with QueueLock(
                lock_path(warehouse, live.qmgr, live.queue),
                what=f"queue {live.queue} on {live.qmgr}",
                command=f"drain ({mode})",
                run_id=run_id,
            ):
                lander = _Lander(store, live, result, run_id, landed_at)
                tell = _counter(progress, "drain", limit, "messages")
                if mode == "browse":
                    _browse(conn, live, lander, result, limit, buffer_size, tell, clock)
                else:
                    _move(conn, live, lander, result, batch_size, limit, buffer_size, on_batch, tell, clock)
                tell(result.read if mode == "browse" else result.removed, final=True)
            ok = True
        finally:
            _close(conn, ok=ok)
    log.info("drained %s: %s", live.label, result)
    return result


def _counter(progress: Progress | Report | None, label: str, total: int | None, unit: str) -> Callable[..., None]:
    """``tell(done, total=..., final=False)``: a count for ``progress`` (a no-op without one)."""
    progress = as_progress(progress)

    def tell(done: int, *, of: int | None = total, final: bool = False) -> None:
        if progress is not None:
            progress.count(label, done, of, unit, final=final)

    return tell


def _browse(conn, live, lander: _Lander, result: DrainResult, limit, buffer_size, tell, clock) -> None:
    chunk: list[Read] = []
    size = 0
    for message in conn.browse(live.queue, buffer_size=buffer_size):
        chunk.append((result.read, message, as_utc(clock())))
        result.read += 1
        tell(result.read)
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


def _move(
    conn, live, lander: _Lander, result: DrainResult, batch_size, limit, buffer_size, on_batch, tell, clock
) -> None:
    while limit is None or result.read < limit:
        batch: list[Read] = []
        want = batch_size if limit is None else min(batch_size, limit - result.read)
        while len(batch) < want:
            try:
                message = conn.get(live.queue, syncpoint=True, buffer_size=buffer_size)
            except MQError as exc:
                if exc.reason == reasons.MQRC_NO_MSG_AVAILABLE:
                    break
                raise LiveError(
                    f"getting from {live.label} failed: {exc}; the unit of work is backed out, "
                    f"{len(batch)} got messages stay on the queue"
                ) from exc
            batch.append((result.read + len(batch), message, as_utc(clock())))
        if not batch:
            return
        try:
            lander.land(batch)
        except Exception as exc:
            raise LiveError(
                f"landing {len(batch)} messages from {live.label} failed; the unit of work is backed "
                f"out and they stay on the queue: {exc}"
            ) from exc
        if on_batch is not None:
            on_batch("landed", result.batches)
        try:
            conn.commit()
        except MQError as exc:
            raise LiveError(
                f"committing the removal of {len(batch)} landed messages from {live.label} failed: "
                f"{exc}; they are landed and, if the queue manager backed the gets out, still on the "
                "queue: the next drain removes them without landing them twice"
            ) from exc
        result.read += len(batch)
        result.removed += len(batch)
        result.batches += 1
        tell(result.removed)
        if on_batch is not None:
            on_batch("committed", result.batches)
        if len(batch) < want:
            return


# --- settle --------------------------------------------------------------------------------


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


def key_of(message: Message) -> str:
    """The message's `message_key`, as ingest and drain computed it when they landed it."""
    return message_key(message.md, data_digest(message.data))


def settle_queue(
    live: LiveQueue,
    ended: EndedKeys,
    *,
    warehouse,
    run_id: str,
    batch_size: int = 200,
    buffer_size: int = DEFAULT_BUFFER,
    on_batch: Callable[[str, int], None] | None = None,
    progress: Progress | Report | None = None,
) -> SettleResult:
    """Remove from ``live`` the messages whose processing has ended, as ``ended`` tells
    (see the module doc). ``progress`` gets the count of messages browsed, then of the ended
    ones settled (removed, gone or left) out of all of them."""
    live.target.preflight()
    with live.target.partition(run_id, 0) as part:
        conn = part.connect()
        ok = False
        try:
            live = resolve_queue(live, conn)
            result = SettleResult(live.spec, live.qmgr, live.queue)
            with QueueLock(
                lock_path(warehouse, live.qmgr, live.queue),
                what=f"queue {live.queue} on {live.qmgr}",
                command="settle",
                run_id=run_id,
            ):
                present: list[tuple[str, bytes, bytes]] = []
                browsed = _counter(progress, "settle", None, "messages browsed")
                for message in conn.browse(live.queue, buffer_size=buffer_size):
                    present.append((key_of(message), message.md.msg_id, message.md.correl_id))
                    browsed(len(present))
                result.browsed = len(present)
                browsed(result.browsed, final=True)
                done = ended({k for k, _, _ in present})
                candidates = [p for p in present if p[0] in done]
                result.ended = len(candidates)
                settled = _counter(progress, "settle", result.ended, "ended messages")
                for start in range(0, len(candidates), batch_size):
                    _settle_batch(conn, live, candidates[start : start + batch_size], result, buffer_size)
                    settled(result.removed + result.gone + len(result.mismatched))
                    if on_batch is not None:
                        on_batch("committed", start // batch_size + 1)
                if candidates:
                    settled(result.removed + result.gone + len(result.mismatched), final=True)
            ok = True
        finally:
            _close(conn, ok=ok)
    log.info("settled %s: %s", live.label, result)
    return result


def _settle_batch(
    conn, live: LiveQueue, batch: list[tuple[str, bytes, bytes]], result: SettleResult, buffer_size: int
) -> None:
    """Get the batch's messages under syncpoint and commit; a message whose key is not the
    expected one backs the batch out, is reported and left alone, and the rest is got again."""
    todo = list(batch)
    while todo:
        removed = gone = 0
        wrong = None
        for key, msg_id, correl_id in todo:
            try:
                got = conn.get(live.queue, msg_id=msg_id, correl_id=correl_id, syncpoint=True, buffer_size=buffer_size)
            except MQError as exc:
                if exc.reason == reasons.MQRC_NO_MSG_AVAILABLE:
                    gone += 1
                    continue
                raise LiveError(
                    f"settle: getting a message from {live.label} failed: {exc}; the unit of work is "
                    "backed out, nothing of this batch was removed"
                ) from exc
            if key_of(got) != key:
                wrong = (key, msg_id, correl_id)
                break
            removed += 1
        if wrong is None:
            try:
                conn.commit()
            except MQError as exc:
                raise LiveError(
                    f"settle: committing the removal of {removed} messages from {live.label} failed: "
                    f"{exc}; a rerun of settle finishes the job"
                ) from exc
            result.removed += removed
            result.gone += gone
            return
        conn.backout()
        log.warning(
            "settle: the message got for MsgId %s on %s is not the one browsed (key %s); left on the queue",
            wrong[1].hex(),
            live.label,
            wrong[0],
        )
        result.mismatched.append(
            {
                "message_key": wrong[0],
                "msg_id": wrong[1].hex(),
                "correl_id": wrong[2].hex(),
                "reason": "the first message with this MsgId and CorrelId has another data digest "
                "or put time: left on the queue",
            }
        )
        todo.remove(wrong)
