"""The replay writer: one partition's work items -> MQ puts -> ledger rows. No Spark here.

`replay_partition` opens one connection (lazily, on the first message to put), puts in
syncpoint batches of ``batch_size`` (ended early once they hold ``SYNCPOINT_BATCH_BYTES`` of
message data: a batch is kept in memory until committed, to be put again after a connection
failure, and 200 messages of 100 MB would be 20 GB), commits each batch, and yields one
ledger row per work item (data/schemas/ledger.json). What it decides, in order, for each item:

- DISCARD -> ``discarded`` (``dry_run`` "would discard" for the dry-run target, which ends
  nothing), IGNORE -> ``ignored`` (no MQ call; removing a message from a live DLQ is
  settle's job);
- a truncated message -> ``ignored`` with a note: it is never put, and as no put was tried it
  does not count against the rule's RETRY;
- its Expiry run out since it was recorded (``replay.expiry = remaining``,
  `dlq_pipeline.replay.expiry`) -> ``expired`` (ends it, as MQ would have discarded it); one
  still alive is put with what is left of its Expiry;
- ``not_before`` later than the run's time (RETRYINT) -> ``deferred``;
- dry-run target -> ``dry_run`` (with "would fail: ..." when it would);
- no message data, a blank resolved target queue, or no MQDLH to strip -> ``failed``, no MQ call;
- no connection (reconnects used up), the queue's circuit breaker open, or the queue above
  its depth headroom -> ``deferred``;
- otherwise put: committed -> ``delivered`` (reason 0); refused by MQ -> ``failed`` with the
  reason code.

**Units** (groups and segmented messages, `dlq_pipeline.replay.units`): consecutive items of
one unit are one entry, put in one syncpoint (the open batch committed first when the unit
would take it past ``batch_size`` or ``SYNCPOINT_BATCH_BYTES``), all or none. A unit held (not
whole, or decided differently) gets ``held`` rows and no MQ call; a member not put (expired,
deferred, failed before a put) keeps its whole unit back with its outcome; a member MQ refuses
backs the unit out, every member ``failed``.

**A failed put backs out its own batch only.** The message whose put failed is recorded
``failed``; the other messages of the batch were never committed, so they are put again
at once in a fresh batch (nothing is lost, nothing committed twice). Failures at MQOPEN need
no backout (an open is not part of a unit of work). A commit refused without a connection
failure (e.g. 2003 backed out) records the batch ``failed``.

**Asynchronous puts** (``async_put``, on by default, where the connection can: IBM MQ's
``MQPMO_ASYNC_RESPONSE``): a batch's puts do not wait for the queue manager's answer, one
round trip each on a client connection, and MQSTAT is asked before the commit how many
failed. None: the batch commits, each message ``delivered``. Any: the batch is
backed out and put again synchronously, so each message gets the outcome, and each queue's
breaker the failures, that putting it synchronously gives; the next batch is asynchronous
again. A failed asynchronous put changes nothing until then: MQ does not put that message.

**Connection failures** (2009, 2059, 2161, 2162) back out the unit of work on the queue
manager's side; the writer reconnects with exponential backoff (``backoff_initial`` doubling
to ``backoff_max``), at most ``reconnect_attempts`` times in a row without a committed batch
in between, and puts the whole batch again. When it gives up, the rest is ``deferred``.

**Circuit breaker per queue**: ``breaker_threshold`` consecutive transient failures on a
queue (e.g. 2053 Q_FULL) open it for the rest of the run; its remaining messages are
``deferred``, so a full queue gets at most ``breaker_threshold`` failed puts per run, also
when it fills within a batch: only a committed put closes the count again (a storm of
retries into a full queue is what a DLQ handler must not make).
Permanent failures record ``failed`` and leave breakers and other queues alone.

**No double sends**: after each commit the partition's checkpoint
(`dlq_pipeline.replay.checkpoints`) appends the rows settled so far; a retried Spark task
re-emits those rows and skips their messages. One window remains, as in MQ itself: if the
connection breaks *during* MQCMIT (or the process dies between the commit and the checkpoint
write), the outcome is unknown and the batch is sent again:
at-least-once for that one batch.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import cast

from dlq_pipeline.config.settings import ReplaySettings
from dlq_pipeline.mq import reasons
from dlq_pipeline.mq.interface import AsyncPuts, Connection, MQError, PutHandle, puts_asynchronously
from dlq_pipeline.mq.mqmd import MQMD, stored_text
from dlq_pipeline.replay.checkpoints import CheckpointState, PartitionProgress
from dlq_pipeline.replay.expiry import remaining_expiry
from dlq_pipeline.replay.rebuild import RebuildError, rebuild
from dlq_pipeline.rules.model import PUT_ACTIONS
from dlq_pipeline.runtime.clock import as_utc, from_epoch, iso_z
from dlq_pipeline.runtime.testhooks import crash_point

log = logging.getLogger(__name__)

# A syncpoint batch ends when its messages' data reaches this (or at ``batch_size``
# messages): it holds at most one large message beyond it (docs/performance.md,
# "Large messages in fewer tasks and in pieces").
SYNCPOINT_BATCH_BYTES = 64 * 1024 * 1024
# Failing to connect for these reasons will not get better by trying again (and repeated bad
# passwords can lock an account): give up at once.
CONNECT_FATAL = frozenset({reasons.MQRC_NOT_AUTHORIZED, reasons.MQRC_SECURITY_ERROR})


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One message and what the rules decided for it (names as in the decisions table).
    ``md``/``data`` may be None for DISCARD/IGNORE, which need no message. ``md`` and the
    target names are exact (bytes that are not UTF-8 as surrogate escapes, `mq.mqmd`);
    ledger rows show them as the tables store text (`mq.mqmd.stored_text`)."""

    message_key: str
    action: str
    md: MQMD | None = None
    data: bytes | None = None
    truncated: bool = False
    rule_line: int | None = None
    attempt: int | None = None
    target_q: str | None = None
    target_qmgr: str | None = None
    header: bool | None = None
    putaut: str | None = None
    not_before: dt.datetime | None = None
    # the unit (group or segments, `dlq_pipeline.replay.units`) it is put with, and why that
    # unit is held instead (None: put whole); consecutive items of one unit are put together
    unit: str | None = None
    held: str | None = None
    # when its MQMD was recorded (a dump's Created stamp, a drain's browse): Expiry counts from it
    recorded_at: dt.datetime | None = None


def queue_key(qmgr: str | None, queue: str | None) -> tuple[str, str]:
    """The queue a put goes to, as (queue manager, queue) without trailing blanks: breakers
    and depths are kept per queue, and the ``dir:`` target writes one file per queue."""
    return (qmgr or "").rstrip(" "), (queue or "").rstrip(" ")


def utc_from_epoch(seconds: float) -> dt.datetime:
    """Aware UTC, the convention of every timestamp the pipeline writes (`dlq_pipeline.runtime.clock`)."""
    return from_epoch(seconds)


class TokenBucket:
    """``rate`` operations per second, at most ``burst`` at once; 0 = unlimited. The clock and
    sleep are injectable so tests run on a fake clock."""

    def __init__(self, rate: float, clock: Callable[[], float], sleep: Callable[[float], None], burst: float = 1.0):
        self.rate, self.clock, self.sleep = float(rate), clock, sleep
        self.capacity = max(float(burst), 1.0)
        self.tokens = self.capacity
        self.stamp = clock()

    def take(self) -> None:
        if self.rate <= 0:
            return
        while True:
            now = self.clock()
            self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            wait = (1.0 - self.tokens) / self.rate
            if wait <= 1e-6:  # epoch-second float clocks round: never wait for a rounding error
                self.tokens = max(self.tokens - 1.0, 0.0)
                return
            self.sleep(wait)


# --- the writer ----------------------------------------------------------------------------


@dataclass
class _Pending:
    item: WorkItem
    md: MQMD
    data: bytes
    started_at: dt.datetime | None = None
    # put synchronously before, then backed out because another put of its batch failed:
    # the queue took it, so an open breaker does not hold it back
    accepted: bool = False


class _AtOpen(Exception):
    def __init__(self, error: MQError):
        self.error = error


@dataclass
class _Breaker:
    failures: int = 0
    open: bool = False
    reason: int | None = None


class _Writer:
    def __init__(
        self,
        connect,
        settings: ReplaySettings,
        run_id,
        partition_id,
        checkpoint,
        clock,
        sleep,
        now: dt.datetime,
        on_commit,
    ):
        self.connect_fn, self.settings = connect, settings
        self.run_id, self.partition_id = run_id, partition_id
        self.checkpoint, self.clock, self.sleep, self.on_commit = checkpoint, clock, sleep, on_commit
        self.now = as_utc(now)
        self.conn: Connection | None = None
        self.handles: dict[tuple, PutHandle] = {}
        self.breakers: dict[tuple[str, str], _Breaker] = {}
        self.depths: dict[tuple[str, str], list[int] | None] = {}
        # the open batch's entries: a message, or the members of a unit, which commit together
        self.batch: list[list[_Pending]] = []
        self.batch_count = 0  # messages in the open batch
        self.batch_bytes = 0  # the open batch's message data, kept with it by `take_batch`
        self.batch_async = False  # the open batch was put asynchronously (`async_put`)
        self.resending = False  # an asynchronous batch failed: it is being put again synchronously
        self.batch_id = 0
        self.losses = 0  # connection losses in a row without a committed batch
        self.gave_up: MQError | None = None
        self.unrecorded: list[dict] = []
        self.bucket = TokenBucket(settings.rate_limit, clock, sleep)
        self.dry_run = bool(getattr(connect, "dry_run", False))  # the dry-run target's connector is its class

    # rows

    def row(
        self,
        item: WorkItem,
        outcome: str,
        *,
        reason: int | None = None,
        text: str | None = None,
        started: dt.datetime | None = None,
        batch_id: int | None = None,
    ) -> dict:
        finished = utc_from_epoch(self.clock())
        puts = item.action in PUT_ACTIONS
        row = {
            "run_id": self.run_id,
            "message_key": item.message_key,
            "action": item.action,
            "rule_line": item.rule_line,
            "attempt": item.attempt,
            "target_q": stored_text(item.target_q) if puts else None,
            "target_qmgr": stored_text(item.target_qmgr) if puts else None,
            "outcome": outcome,
            "reason_code": reason,
            "error_text": stored_text(text),  # may name a target
            "started_at": started or finished,
            "finished_at": finished,
            "partition_id": self.partition_id,
            "batch_id": batch_id,
        }
        self.unrecorded.append(row)
        return row

    def failed(self, p: _Pending, exc: MQError) -> dict:
        return self.row(
            p.item, "failed", reason=exc.reason, text=str(exc), started=p.started_at, batch_id=self.batch_id
        )

    # connection

    def ensure_connected(self) -> Connection | None:
        if self.conn is None and self.gave_up is None:
            try:
                self.conn = self.connect_fn()
            except MQError as exc:
                self.recover(exc, first=True)
        return self.conn

    def drop(self) -> None:
        conn, self.conn = self.conn, None
        self.handles.clear()
        self.depths.clear()
        if conn is not None:
            try:
                conn.disconnect()
            except MQError:
                pass

    def recover(self, exc: MQError, *, first: bool = False) -> None:
        """Reconnect with exponential backoff; set ``gave_up`` when that is not possible."""
        if not first:
            self.drop()
        last = exc
        while True:
            if last.reason in CONNECT_FATAL or self.losses >= self.settings.reconnect_attempts:
                self.gave_up = last
                log.warning("partition %s: giving up on the queue manager: %s", self.partition_id, last)
                return
            self.losses += 1
            delay = min(self.settings.backoff_max, self.settings.backoff_initial * 2 ** (self.losses - 1))
            log.warning(
                "partition %s: %s; reconnecting in %.1fs (%d/%d)",
                self.partition_id,
                last,
                delay,
                self.losses,
                self.settings.reconnect_attempts,
            )
            self.sleep(delay)
            try:
                self.conn = self.connect_fn()
                return
            except MQError as again:
                last = again

    # breakers and depth

    @staticmethod
    def queue_key(item: WorkItem) -> tuple[str, str]:
        return queue_key(item.target_qmgr, item.target_q)

    def hold(self, p: _Pending, count: int = 1) -> str | None:
        """Why ``p`` (and the ``count`` - 1 messages of its unit after it, to the same queue)
        must not be sent now, or None."""
        if self.gave_up is not None:
            return f"no connection to the queue manager ({self.gave_up}); not attempted"
        key = self.queue_key(p.item)
        breaker = self.breakers.get(key)
        if breaker is not None and breaker.open and not p.accepted:
            return (
                f"circuit breaker open for {key[1]} after {breaker.failures} consecutive transient failures "
                # an open breaker's reason is the one that opened it (`note`)
                f"(last {reasons.describe(cast(int, breaker.reason))}); not attempted"
            )
        if self.settings.depth_check:
            if key not in self.depths:
                try:
                    # not given up (above): connected
                    self.depths[key] = list(cast(Connection, self.conn).inquire_depth(key[1], key[0]))
                except MQError as exc:
                    if exc.connection_failure:
                        raise
                    self.depths[key] = None  # cannot inquire (remote queue, no inq authority): unknown
            depth = self.depths[key]
            if depth is not None and depth[1] > 0 and depth[0] + count > self.settings.depth_headroom * depth[1]:
                return (
                    f"{key[1]} holds {depth[0]} of MAXDEPTH {depth[1]}, above the "
                    f"{self.settings.depth_headroom:.0%} headroom; not attempted"
                )
        return None

    def note(self, p: _Pending, exc: MQError | None) -> None:
        key = self.queue_key(p.item)
        breaker = self.breakers.setdefault(key, _Breaker())
        if exc is None:
            if not breaker.open:  # an open breaker keeps the failures that opened it: `hold` names them
                breaker.failures, breaker.reason = 0, None
            self.count_put(p)
        elif exc.transient:
            breaker.failures += 1
            breaker.reason = exc.reason
            if breaker.failures >= self.settings.breaker_threshold:
                breaker.open = True
                log.warning("circuit breaker opened for %s (%s)", key[1], reasons.describe(exc.reason))

    def count_put(self, p: _Pending) -> None:
        """The depth a put adds to its queue (for `hold`)."""
        depth = self.depths.get(self.queue_key(p.item))
        if depth is not None:
            depth[0] += 1

    def breaker_state(self) -> list:
        return [[q, n, b.failures, b.open, b.reason] for (q, n), b in sorted(self.breakers.items())]

    def restore(self, state) -> None:
        self.batch_id = state.next_batch
        for qmgr, queue, failures, opened, reason in state.breakers:
            self.breakers[(qmgr, queue)] = _Breaker(failures, opened, reason)

    # putting

    def handle_for(self, p: _Pending) -> PutHandle:
        """The handle ``p`` is put with, opened once per queue and user; MQOPEN failures come
        out wrapped in `_AtOpen` because they need no backout."""
        item = p.item
        alternate = p.md.user_id.rstrip(" ") if (item.putaut or "DEF").upper() == "CTX" else None
        key = (item.target_q, item.target_qmgr or "", alternate)
        handle = self.handles.get(key)
        if handle is None:
            try:
                qmgr, queue = queue_key(item.target_qmgr, item.target_q)
                conn = cast(Connection, self.conn)  # `hold` let ``p`` through: connected
                handle = conn.open_for_put(queue, qmgr, set_all_context=True, alternate_user=alternate)
            except MQError as exc:
                raise _AtOpen(exc) from None
            self.handles[key] = handle
        return handle

    def put_one(self, p: _Pending) -> None:
        """Put under syncpoint (the handle is open: `handle_for`)."""
        conn = cast(Connection, self.conn)
        handle = self.handle_for(p)
        self.bucket.take()
        p.started_at = utc_from_epoch(self.clock())
        if self.settings.async_put and not self.resending and puts_asynchronously(conn):
            conn.put(handle, p.md, p.data, syncpoint=True, asynchronous=True)
            self.batch_async = True
        else:
            conn.put(handle, p.md, p.data, syncpoint=True)

    def send(self, entries: Iterable[list[_Pending]]) -> list[dict]:
        """Put ``entries`` (a message, or the members of a unit in put order) and whatever a
        backout sends back, committing full batches. A unit is put in one syncpoint: the open
        batch is committed first when the unit would take it past ``batch_size`` or
        ``SYNCPOINT_BATCH_BYTES`` (a unit larger than that is a batch of its own), and a member
        that fails backs the whole unit out, every member recorded ``failed``."""
        rows: list[dict] = []
        todo: deque[list[_Pending]] = deque(entries)
        while todo:
            entry = todo.popleft()
            if len(entry) > 1 and self.batch and not self.fits(entry):
                todo.appendleft(entry)
                rows += self.commit(todo)  # empties the batch, or hands it back to ``todo`` before the unit
                continue
            at_open = False
            putting = entry[0]
            try:
                self.ensure_connected()
                why = self.hold(entry[0], len(entry))
                if why is not None:
                    rows += [self.row(p.item, "deferred", text=why) for p in entry]
                    continue
                try:
                    for p in entry:  # every open before any put: a unit fails at MQOPEN whole, nothing of it put
                        self.handle_for(p)
                except _AtOpen as wrapped:
                    at_open = True
                    raise wrapped.error from None
                for p in entry:
                    putting = p
                    self.put_one(p)
            except MQError as exc:
                if exc.connection_failure:  # the queue manager backed the batch out
                    todo.extendleft(reversed(self.take_batch() + [entry]))
                    self.recover(exc)
                    continue
                rows += self.failed_entry(entry, putting, exc)
                self.note(putting, exc)
                if not at_open:
                    self.backout_batch(todo, accepted=not self.batch_async)
                continue
            # its breaker is reset when its batch commits: a put backed out with its batch (after
            # another put failed, or asynchronously) has not succeeded, and a queue that fills
            # within a batch would otherwise take every put again and never open its breaker
            for p in entry:
                self.count_put(p)
            self.batch.append(entry)
            self.batch_count += len(entry)
            self.batch_bytes += sum(len(p.data) for p in entry)
            if self.batch_count >= self.settings.batch_size or self.batch_bytes >= SYNCPOINT_BATCH_BYTES:
                rows += self.commit(todo)
        return rows

    def fits(self, entry: list[_Pending]) -> bool:
        """Whether the open batch can take the unit ``entry`` whole."""
        return (
            self.batch_count + len(entry) <= self.settings.batch_size
            and self.batch_bytes + sum(len(p.data) for p in entry) <= SYNCPOINT_BATCH_BYTES
        )

    def failed_entry(self, entry: list[_Pending], putting: _Pending, exc: MQError) -> list[dict]:
        """The rows of an entry whose member ``putting`` MQ refused: that member's failure, and
        for the other members of a unit, that they were backed out with it."""
        rows = []
        for p in entry:
            if p is putting:
                rows.append(self.failed(p, exc))
                continue
            text = f"backed out with its group {p.item.unit}: message {putting.item.message_key} failed: {exc}"
            rows.append(
                self.row(p.item, "failed", reason=exc.reason, text=text, started=p.started_at, batch_id=self.batch_id)
            )
        return rows

    def take_batch(self) -> list[list[_Pending]]:
        """The open batch's entries, which is emptied (the only way it is: its counts go with it)."""
        batch, self.batch, self.batch_count, self.batch_bytes, self.batch_async = self.batch, [], 0, 0, False
        return batch

    def backout_batch(self, todo: deque, accepted: bool = False) -> None:
        """Back out the open batch after a failed put; its other entries go back to the front
        of ``todo`` to be put again in a fresh batch (``accepted``: each was put synchronously,
        and its queue took it)."""
        others = self.take_batch()
        for entry in others:
            for p in entry:
                p.accepted = p.accepted or accepted
        todo.extendleft(reversed(others))
        self.depths.clear()  # the backed-out puts no longer count: inquire again
        try:
            cast(Connection, self.conn).backout()  # after a put that did not lose the connection
        except MQError as exc:
            if not exc.connection_failure:
                raise
            self.recover(exc)

    def commit(self, todo: deque) -> list[dict]:
        if not self.batch:
            return []
        try:
            if self.batch_async and self.asynchronous_puts_failed():
                self.resending = True
                self.backout_batch(todo)
                return []
            cast(Connection, self.conn).commit()  # a batch is open: its puts were made on this connection
        except MQError as exc:
            if exc.connection_failure:  # in doubt: send again (the documented at-least-once window)
                todo.extendleft(reversed(self.take_batch()))
                self.recover(exc)
                return []
            self.resending = False
            batch = self.take_batch()
            rows = [self.failed(p, exc) for entry in batch for p in entry]
            self.batch_id += 1
            return rows
        for entry in self.batch:
            for p in entry:
                self.note(p, None)
        self.resending = False
        batch = self.take_batch()
        rows = [
            self.row(p.item, "delivered", reason=0, started=p.started_at, batch_id=self.batch_id)
            for entry in batch
            for p in entry
        ]
        self.batch_id += 1
        self.losses = 0
        self.depths.clear()
        self.save()
        crash_point("replay-batch", self.batch_id)
        if self.on_commit is not None:
            self.on_commit(self.batch_id)
        return rows

    def asynchronous_puts_failed(self) -> bool:
        """Whether the open batch must be put again synchronously: MQSTAT reports a failed
        asynchronous put, or cannot be asked (a broken connection raises: the queue manager
        backs the batch out, and it is sent again as after any connection failure)."""
        try:
            status = cast(AsyncPuts, self.conn).async_status()  # the open batch was put asynchronously on it
        except MQError as exc:
            if exc.connection_failure:
                raise
            log.info("partition %s: MQSTAT failed (%s); putting the batch again synchronously", self.partition_id, exc)
            return True
        if not status.failed:
            return False
        log.info(
            "partition %s: %d of the batch's asynchronous puts failed (first: %s); putting it again synchronously",
            self.partition_id,
            status.failed,
            reasons.describe(status.reason),
        )
        return True

    def save(self) -> None:
        if self.checkpoint is not None:
            self.checkpoint.record(self.unrecorded, next_batch=self.batch_id, breakers=self.breaker_state())
        self.unrecorded = []

    # one item

    def prepare(self, item: WorkItem) -> dict | _Pending:
        """The row an item gets without being put, or what to put."""
        verdict = self.verdict(item)
        return verdict if isinstance(verdict, _Pending) else self.row(item, verdict[0], text=verdict[1])

    def verdict(self, item: WorkItem) -> _Pending | tuple[str, str | None]:
        """What to put for ``item``, or the (outcome, error text) it gets without a put."""
        if item.action == "DISCARD":  # a dry run ends nothing: settle must not remove the message
            return ("dry_run", "would discard") if self.dry_run else ("discarded", None)
        if item.action == "IGNORE":
            return "ignored", None
        if item.action not in PUT_ACTIONS:
            return "failed", f"unknown action {item.action!r}"
        if item.truncated:
            return "ignored", "truncated message: never replayed"
        expiry = self.expiry_left(item)
        if expiry is None:
            md = cast(MQMD, item.md)  # only a message's lifetime runs out
            expired = (
                f"its Expiry of {md.expiry / 10:g}s when recorded at {iso_z(cast(dt.datetime, item.recorded_at))} "
                "has run out; MQ would have discarded it"
            )
            return ("dry_run", f"would expire: {expired}") if self.dry_run else ("expired", expired)
        if item.not_before is not None and as_utc(item.not_before) > self.now:
            return "deferred", f"RETRYINT: not before {iso_z(item.not_before)}"
        problem, built = None, None
        if item.md is None or item.data is None:
            problem = "the message is not in the messages table"
        elif not (item.target_q or "").strip(" "):
            problem = "the resolved target queue is blank (e.g. &REPLYQ of a message without ReplyToQ)"
        else:
            try:
                built = rebuild(item.md, item.data, item)
            except RebuildError as exc:
                problem = str(exc)
        conn = self.ensure_connected()
        if conn is not None and conn.dry_run:
            return "dry_run", f"would fail: {problem}" if problem else None
        if problem:
            return "failed", problem
        md, data = cast(tuple[MQMD, bytes], built)  # no problem: rebuilt
        return _Pending(item, md if expiry == md.expiry else md.replace(expiry=expiry), data)

    def expiry_left(self, item: WorkItem) -> int | None:
        """The Expiry to put ``item``'s message with: with ``replay.expiry = remaining``, what
        is left of it now (`dlq_pipeline.replay.expiry`), None when it has run out; else, or
        when it is not known when the message was recorded, its Expiry as landed. An item
        without a message has nothing to run out (MQMD_DEFAULT's unlimited)."""
        if item.md is None:
            return MQMD().expiry
        if self.settings.expiry != "remaining" or item.recorded_at is None:
            return item.md.expiry
        return remaining_expiry(item.md.expiry, item.recorded_at, utc_from_epoch(self.clock()))

    def unit(self, members: list[WorkItem]) -> list[_Pending] | list[dict]:
        """The members of one unit (in put order) as one entry to put, or each one's row: a
        held unit's reason; and when a member is not put (expired, deferred, failed before a
        put), none is, each member given that member's outcome."""
        if members[0].held is not None:
            return [self.row(m, "held", text=members[0].held) for m in members]
        verdicts = [self.verdict(m) for m in members]
        entry = [v for v in verdicts if isinstance(v, _Pending)]
        if len(entry) == len(members):
            return entry
        index, (outcome, text) = next((i, v) for i, v in enumerate(verdicts) if not isinstance(v, _Pending))
        rows: list[dict] = []
        for m, v in zip(members, verdicts):
            if isinstance(v, tuple) and v[0] == outcome:
                rows.append(self.row(m, outcome, text=v[1]))
            else:
                why = f"not put without its group {m.unit}: message {members[index].message_key} is {outcome}"
                rows.append(self.row(m, outcome, text=f"{why} ({text})" if text else why))
        return rows

    def flush(self) -> list[dict]:
        """Commit the last, partial batch; one lost at its commit is sent again."""
        rows: list[dict] = []
        while self.batch:
            todo: deque = deque()
            rows += self.commit(todo)
            if todo:
                rows += self.send(todo)
        return rows

    def close(self, ok: bool) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        try:
            if not ok:
                conn.backout()
        except MQError:
            pass
        try:
            conn.disconnect()
        except MQError:
            pass


def _entries(items: Iterable[WorkItem]) -> Iterator[list[WorkItem]]:
    """``items`` as entries: each message on its own, consecutive members of one unit together
    (replay sorts a unit's members next to each other, in put order)."""
    entry: list[WorkItem] = []
    for item in items:
        if entry and (item.unit is None or item.unit != entry[0].unit):
            yield entry
            entry = []
        entry.append(item)
    if entry:
        yield entry


def replay_partition(
    items: Iterable[WorkItem],
    connect: Callable[[], Connection],
    settings: ReplaySettings,
    *,
    run_id: str,
    partition_id: int,
    checkpoint: PartitionProgress | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    now: dt.datetime | None = None,
    on_commit: Callable[[int], None] | None = None,
) -> Iterator[dict]:
    """Replay one partition; yield one ledger row per item (see the module doc).

    ``now`` (aware; naive is taken as UTC) is the run's time for ``not_before``; default: the clock. ``on_commit``
    is called with the number of batches committed so far, after each checkpoint write (tests
    and rehearsals use it to inject crashes).
    """
    writer = _Writer(
        connect, settings, run_id, partition_id, checkpoint, clock, sleep, now or utc_from_epoch(clock()), on_commit
    )
    done = checkpoint.load() if checkpoint is not None else CheckpointState()
    writer.restore(done)
    seen: set[str] = set()
    ok = False
    try:
        for entry in _entries(items):
            fresh = []
            for item in entry:
                if item.message_key in seen:
                    log.warning(
                        "partition %s: message %s appears twice; the second is skipped", partition_id, item.message_key
                    )
                    continue
                seen.add(item.message_key)
                if item.message_key in done.rows:  # a unit commits whole: all of it, or none, is done
                    yield from done.rows[item.message_key]
                    continue
                fresh.append(item)
            if not fresh:
                continue
            if fresh[0].unit is None:
                prepared = writer.prepare(fresh[0])
                if isinstance(prepared, dict):
                    yield prepared
                else:
                    yield from writer.send([[prepared]])
                continue
            unit = writer.unit(fresh)
            if unit and isinstance(unit[0], _Pending):
                yield from writer.send([unit])
            else:
                yield from cast(list[dict], unit)
        yield from writer.flush()
        writer.save()
        ok = True
    finally:
        writer.close(ok)
