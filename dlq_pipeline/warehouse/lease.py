"""The writer lease of a Delta warehouse: one writer at a time without a POSIX file lock, so
on HDFS, object storage and catalog tables as well as on a local disk.

**Where.** One row, ``name = 'warehouse'``, in the Delta table ``leases``, stored with the
other tables (``PATH/leases``, or ``catalog.schema.leases`` for tables by name): every
writer of those tables sees it, whatever its ``storage.path`` or host.

**Claim.** Read the row; it may be taken when absent, expired, already this holder's, or
when its holder recorded the warehouse's ``flock`` that this process now holds (the kernel
released it: the holder is dead). Then one conditional ``MERGE`` (`Storage.upsert`), a
compare-and-swap on the observed (token, expires_at): a holder that renewed in between, or
another claimer that committed first, makes it change nothing; a MERGE that loses Delta's
optimistic-concurrency race (ConcurrentAppend, ConcurrentDeleteRead/Delete, ...) is redone
on the new snapshot, where the condition is evaluated again. Reading the row back decides:
held when it carries this claim's token and expiry. ``lease_wait`` seconds of retries, then
`LeaseHeld` (a `dlq_pipeline.warehouse.locks.WarehouseLocked`: exit 1 naming the holder).

**Heartbeat.** A daemon thread renews the lease every third of ``lease_seconds`` (MERGE
where the token is still ours). A holder killed with -9 stops renewing and the lease
expires ``lease_seconds`` after its last renewal. The release at the end sets the expiry
to the release time.

**Fencing by token, not by time.** A holder is stopped when another writer has *taken* its
lease, never merely because its own renewal was late: a renewal is a Delta MERGE, a Spark job
that can wait minutes for a free task slot on a busy machine, and a run alone on its
warehouse must not fail for that. An expired lease that nobody took is still its holder's
(its next renewal succeeds). A claimer that takes a lease from another live token *revokes*
it: it rewrites the old holder's *fence file* (``WAREHOUSE/_locks/lease-<token>.json``,
written at the claim) as revoked, then waits `REVOKE_GRACE` seconds before touching
anything, so that a commit the old holder's task had already started has ended. Replay's
tasks read their fence file before each MQ commit and before a ``dir:`` partition
publishes, and stop (`LeaseLost`, the batch backed out) once it is revoked or gone; the
driver checks the row (`Lease.check`: still our token) before every ledger append. What
remains: a task paused between its check and MQCMIT for longer than the grace (one batch),
and a ledger append that read the row just before a takeover (rows recorded twice, nothing
sent twice). Clocks of the hosts must agree within a small part of ``lease_seconds`` (a
claimer judges expiry by its own clock).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import cast

from pyspark.sql import functions as F

from dlq_pipeline import fs as files
from dlq_pipeline.config.settings import StorageSettings
from dlq_pipeline.errors import DlqPipelineError
from dlq_pipeline.runtime.clock import epoch_micros, from_epoch_micros, iso_z, utc_now
from dlq_pipeline.runtime.paths import PathError, local_dir
from dlq_pipeline.runtime.testhooks import lease_clock
from dlq_pipeline.tables import LEASES_TABLE, WAREHOUSE_LEASE
from dlq_pipeline.warehouse.locks import LOCKS_DIR, WarehouseLocked, held_warehouse_lock
from dlq_pipeline.warehouse.schemas import table_schema
from dlq_pipeline.warehouse.storage import Storage, open_storage

log = logging.getLogger(__name__)

_LOST = re.compile(r"LeaseLost: ([^\r\n]*)")


class LeaseHeld(WarehouseLocked):
    """Another writer holds the warehouse's lease; the message names it."""


class LeaseLost(DlqPipelineError, RuntimeError):
    """This writer's lease was taken by another (or released): it must not commit anything more."""


REVOKE_GRACE = 5.0  # seconds a taker waits after revoking, so the old holder's commit in flight ends


@dataclass(frozen=True)
class Holder:
    """A row of ``leases``: who holds the lease and until when."""

    token: str
    run_id: str
    command: str
    host: str
    pid: int
    flock: str | None
    acquired_at: dt.datetime
    renewed_at: dt.datetime
    expires_at: dt.datetime

    def describe(self) -> str:
        """``run (pid 4711 on host1, run R, since T, lease expires T2)``: as the file lock says it, plus the expiry."""
        return (
            f"{self.command} (pid {self.pid} on {self.host}, run {self.run_id or '-'}, "
            f"since {iso_z(self.acquired_at)}, lease expires {iso_z(self.expires_at)})"
        )


def may_take(current: Holder | None, *, token: str, now: dt.datetime, flock: str | None) -> bool:
    """Whether a claimer (``token``, holding the file lock ``flock`` or None) may take the
    lease from ``current`` at ``now`` (pure)."""
    return (
        current is None
        or current.token == token
        or current.expires_at <= now
        or (flock is not None and current.flock == flock)
    )


def lost_message(exc: BaseException | None) -> str | None:
    """The `LeaseLost` message inside ``exc`` or what it came from (a task's error reaches
    the driver as text inside Spark's exception), or None (pure)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, LeaseLost):
            return str(exc)
        found = _LOST.search(str(exc))
        if found:
            return found.group(1).strip()
        exc = exc.__cause__ or exc.__context__
    return None


# --- what replay's tasks check ---------------------------------------------------------------


@dataclass(frozen=True)
class LeaseFence:
    """The holder's lease as its tasks see it (picklable): the fence file written at the claim,
    rewritten as revoked by a writer that takes the lease over. `check` raises `LeaseLost`
    once it is revoked or gone."""

    path: str
    token: str

    def check(self) -> None:
        try:
            doc = json.loads(files.read_bytes(self.path) or b"")  # on the warehouse's filesystem, from any executor
        except (OSError, ValueError):
            raise LeaseLost(
                f"the writer lease {self.token} is no longer held (no fence file {self.path}); "
                "stopped before committing"
            ) from None
        if doc.get("token") != self.token or doc.get("state") != "held":
            raise LeaseLost(
                f"the writer lease {self.token} was taken over by {doc.get('taken_by', 'another writer')} "
                f"at {doc.get('taken_at', '?')}; stopped before committing"
            )


class _FencedConnection:
    """A target connection whose ``commit`` first checks the fence."""

    def __init__(self, conn, fence: LeaseFence):
        self._conn, self._fence = conn, fence

    def commit(self) -> None:
        self._fence.check()
        self._conn.commit()

    def __getattr__(self, name):
        return getattr(self._conn, name)


def fenced(connect: Callable, fence: LeaseFence | None) -> Callable:
    """``connect`` whose connections check ``fence`` before every commit (None: as it is)."""
    if fence is None:
        return connect
    return lambda: _FencedConnection(connect(), fence)


# --- the lease -------------------------------------------------------------------------------


class Lease:
    """The writer lease of ``storage``'s tables for one command (see the module docstring):
    `claim`, `renew`, `check`, `release`; `start_heartbeat` / `stop_heartbeat`."""

    def __init__(
        self,
        storage: Storage,
        *,
        command: str,
        run_id: str = "",
        seconds: float = 120.0,
        flock: str | None = None,
        fence_dir: str | None = None,
        clock: Callable[[], dt.datetime] = utc_now,
    ):
        self.storage, self.spark = storage, storage.spark
        self.command, self.run_id, self.seconds, self.flock, self.clock = command, run_id, float(seconds), flock, clock
        self.token = secrets.token_hex(8)
        self.acquired_at: dt.datetime | None = None
        self.fence_dir = fence_dir
        self.lost: LeaseLost | None = None
        self.beat = self.seconds / 3  # seconds between the starts of two renewals
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()  # one MERGE of ours at a time (heartbeat vs. check/release)

    def __repr__(self) -> str:
        return f"Lease({self.where}, {self.token})"

    @property
    def where(self) -> str:
        return self.storage.location(LEASES_TABLE)

    # reading

    def current(self) -> Holder | None:
        """The row as stored now (None: never claimed)."""
        if not self.storage.exists(LEASES_TABLE):
            return None
        rows = (
            self.storage.read(LEASES_TABLE)
            .where(F.col("name") == WAREHOUSE_LEASE)
            .select(
                "token",
                "run_id",
                "command",
                "host",
                "pid",
                "flock",
                *[F.unix_micros(c).alias(c) for c in ("acquired_at", "renewed_at", "expires_at")],
            )
            .collect()
        )
        if not rows:
            return None
        row = min(rows, key=lambda r: (r["acquired_at"], r["token"]))  # one row; any reader picks the same
        return Holder(
            token=row["token"],
            run_id=row["run_id"] or "",
            command=row["command"],
            host=row["host"],
            pid=row["pid"],
            flock=row["flock"],
            # NOT NULL in the table's schema
            acquired_at=cast(dt.datetime, from_epoch_micros(row["acquired_at"])),
            renewed_at=cast(dt.datetime, from_epoch_micros(row["renewed_at"])),
            expires_at=cast(dt.datetime, from_epoch_micros(row["expires_at"])),
        )

    # writing

    def _write(self, now: dt.datetime, expires: dt.datetime, replace_when: str, acquired: dt.datetime) -> Holder | None:
        """MERGE this holder's row where ``replace_when`` holds (or no row is there); the row
        read back. Ours when it carries our token: a MERGE slower than the lease still holds
        it until someone takes it (the module docstring)."""
        row = (
            WAREHOUSE_LEASE,
            self.token,
            self.run_id or None,
            self.command,
            socket.gethostname(),
            os.getpid(),
            self.flock,
            acquired,
            now,
            expires,
        )
        self.storage.upsert(LEASES_TABLE, self.spark.createDataFrame([row], table_schema(LEASES_TABLE)), replace_when)
        return self.current()

    @property
    def fence_path(self) -> str | None:
        """This holder's fence file (its token's; None without a fence directory)."""
        return self._fence_of(self.token)

    def _fence_of(self, token: str) -> str | None:
        """Where the fence file of ``token`` is, on the warehouse's filesystem (`dlq_pipeline.fs`)."""
        return files.join(os.fspath(self.fence_dir), f"lease-{token}.json") if self.fence_dir is not None else None

    def _write_fence(self, token: str, doc: dict) -> None:
        """Replace the fence file of ``token`` with ``doc`` atomically (no fence directory: nothing)."""
        path = self._fence_of(token)
        if path is None:
            return
        files.write_file(path, json.dumps({"token": token, **doc}).encode(), replace=True)

    def _arm_fence(self) -> None:
        """Before a claim: this token's fence file, "held", written before the row can name the
        token, so a taker's revocation always comes after it. A token revoked by an earlier
        attempt is not reused."""
        if self.fence_path is None:
            return
        found = files.read_bytes(self.fence_path)
        if found is not None and json.loads(found).get("state") == "held":
            return  # armed by an earlier attempt
        if found is not None:  # revoked: taken over after an earlier attempt of ours landed
            self.token = secrets.token_hex(8)
        self._write_fence(self.token, {"state": "held"})

    def _revoke(self, previous: Holder, now: dt.datetime) -> None:
        """Fence the holder this claim took the lease from, then give its commit in flight time to end."""
        self._write_fence(
            previous.token,
            {
                "state": "revoked",
                "taken_by": f"{self.command} (pid {os.getpid()} on {socket.gethostname()}, run {self.run_id or '-'})",
                "taken_at": iso_z(now),
            },
        )
        log.warning(
            "took over the writer lease of %s; waiting %.0f s for a commit it may have in flight",
            previous.describe(),
            REVOKE_GRACE,
        )
        time.sleep(REVOKE_GRACE)

    def try_claim(self) -> Holder | None:
        """Claim: None when this holder has the lease now, else who has it."""
        with self._guard:
            now = cast(dt.datetime, from_epoch_micros(epoch_micros(self.clock())))  # of an int: a datetime
            current = self.current()
            if not may_take(current, token=self.token, now=now, flock=self.flock):
                return current
            if current is None:
                replace_when = "false"  # only an insert: someone else's row, committed meanwhile, stays
            else:
                replace_when = (
                    f"t.token = '{current.token}' AND unix_micros(t.expires_at) = {epoch_micros(current.expires_at)}"
                )
            acquired = current.acquired_at if current is not None and current.token == self.token else now
            self._arm_fence()
            got = self._write(now, now + dt.timedelta(seconds=self.seconds), replace_when, acquired)
            if got is None or got.token != self.token:
                return got
            self.acquired_at = acquired
            self.lost = None
            if current is not None and current.token != self.token:  # taken from another holder
                if current.expires_at > now:
                    log.warning(
                        "took the writer lease of %s: its holder held %s, which this process holds now, "
                        "so it has ended",
                        current.describe(),
                        current.flock,
                    )
                if current.expires_at > current.renewed_at:  # not released: it may still be running
                    self._revoke(current, now)
            return None

    def claim(self, wait: float = 0.0, *, poll: float | None = None) -> None:
        """Claim the lease, retrying for up to ``wait`` seconds while another holder has it;
        `LeaseHeld` naming the holder when it still has it then."""
        deadline = time.monotonic() + max(0.0, wait)
        poll = poll if poll is not None else min(5.0, max(1.0, self.seconds / 10))
        told = False
        while True:
            holder = self.try_claim()
            if holder is None:
                log.info("writer lease %s claimed for %s s (%s)", self.token, self.seconds, self.where)
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._drop_fence()
                raise LeaseHeld(self.refusal(holder))
            if not told:
                log.warning("waiting up to %.0f s for the writer lease held by %s", remaining, holder.describe())
                told = True
            time.sleep(min(poll, remaining))

    def refusal(self, holder: Holder) -> str:
        s = self.storage
        where = f"{s.catalog}.{s.schema}" if s.by_name else s.path
        return (
            f"warehouse {where} is being written by {holder.describe()} (lease {self.where}); nothing was "
            f"touched. Only one command writes a warehouse at a time: wait for it to end, or schedule runs so "
            f"they do not overlap (a holder that died frees the lease when it expires)"
        )

    def renew(self) -> None:
        """Extend the lease by ``lease_seconds`` from now; `LeaseLost` when it is no longer ours."""
        with self._guard:
            now = cast(dt.datetime, from_epoch_micros(epoch_micros(self.clock())))  # of an int: a datetime
            holder = self._write(
                now, now + dt.timedelta(seconds=self.seconds), f"t.token = '{self.token}'", self.acquired_at or now
            )
            if holder is not None and holder.token == self.token:
                return
            self.lost = LeaseLost(
                f"the writer lease of {self.where} was taken by "
                f"{holder.describe() if holder else 'nobody'}; stopped before committing"
            )
            self._drop_fence()
            raise self.lost

    def check(self) -> None:
        """`LeaseLost` unless this holder still has the lease: the row carries its token (late
        renewals do not count against it; a takeover does)."""
        if self.lost is not None:
            raise self.lost
        holder = self.current()
        if holder is None or holder.token != self.token:
            self.lost = LeaseLost(
                f"the writer lease of {self.where} is held by "
                f"{holder.describe() if holder else 'nobody'} now; stopped before committing"
            )
            raise self.lost

    def release(self) -> None:
        """End the lease now (its row expires at once), if it is still ours."""
        self.stop_heartbeat()
        self._drop_fence()
        with self._guard:
            if self.lost is not None or self.acquired_at is None:
                return
            now = cast(dt.datetime, from_epoch_micros(epoch_micros(self.clock())))  # of an int: a datetime
            try:
                self._write(now, now, f"t.token = '{self.token}'", self.acquired_at)
            except Exception:  # noqa: BLE001 - it expires by itself; the command's own outcome matters more
                log.warning("could not release the writer lease %s; it expires by itself", self.token, exc_info=True)

    def fence(self) -> LeaseFence | None:
        """What replay's tasks check (None when the warehouse has no local directory for the file)."""
        return LeaseFence(str(self.fence_path), self.token) if self.fence_path is not None else None

    def _drop_fence(self) -> None:
        if self.fence_path is not None:
            files.delete(self.fence_path)

    # heartbeat

    def start_heartbeat(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat, name=f"dlq-lease-{self.token}", daemon=True)
        self._thread.start()

    def stop_heartbeat(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=self.seconds)

    def _beat(self) -> None:
        started = time.monotonic()
        while not self._stop.wait(max(0.0, started + self.beat - time.monotonic())):
            started = time.monotonic()  # a slow MERGE does not stretch the period
            try:
                self.renew()
            except LeaseLost as exc:
                log.error("%s", exc)
                return
            except Exception:  # noqa: BLE001 - try again next beat; a competitor takes it once it has expired
                log.warning("renewing the writer lease %s failed; trying again", self.token, exc_info=True)


# --- one lease per warehouse and process ------------------------------------------------------

_held: dict[str, list] = {}  # lease table -> [Lease, depth], for this process
_held_guard = threading.Lock()


def held_lease(storage: Storage) -> Lease | None:
    """The lease this process holds on ``storage``'s tables, or None (Parquet, or not taken)."""
    if storage.format != "delta":
        return None
    entry = _held.get(storage.location(LEASES_TABLE))
    return entry[0] if entry else None


def check_lease(storage: Storage) -> None:
    """`LeaseLost` when this process took the lease of ``storage``'s tables and no longer has
    it; nothing otherwise. Called before every ledger append."""
    lease = held_lease(storage)
    if lease is not None:
        lease.check()


def _flock_id(warehouse: str) -> str | None:
    """``HOST:LOCKFILE`` of the warehouse lock this process holds, or None."""
    try:
        directory = local_dir(warehouse)
    except PathError:
        return None
    held = held_warehouse_lock(directory)
    return f"{socket.gethostname()}:{held}" if held is not None else None


@contextlib.contextmanager
def writer_lease(spark, settings: StorageSettings, *, command: str, run_id: str = "") -> Iterator[Lease | None]:
    """Hold the writer lease of a Delta warehouse (``settings``) for the block; nothing for
    Parquet (the file lock, `dlq_pipeline.warehouse.locks`, guards it). Re-entrant within a process.
    `LeaseHeld` when another writer keeps it for ``lease_wait`` seconds."""
    if settings.format != "delta":
        yield None
        return
    storage = open_storage(spark, settings)
    key = storage.location(LEASES_TABLE)
    with _held_guard:
        if key in _held:
            _held[key][1] += 1
            nested = _held[key][0]
        else:
            nested = None
    if nested is not None:
        try:
            yield nested
        finally:
            with _held_guard:
                _held[key][1] -= 1
        return
    lease = Lease(
        storage,
        command=command,
        run_id=run_id,
        seconds=settings.lease_seconds,
        flock=_flock_id(settings.path),
        fence_dir=files.join(storage.files_root, LOCKS_DIR),
        clock=lease_clock(),
    )
    lease.claim(settings.lease_wait)
    with _held_guard:
        _held[key] = [lease, 1]
    lease.start_heartbeat()
    try:
        yield lease
    finally:
        with _held_guard:
            del _held[key]
        lease.release()
