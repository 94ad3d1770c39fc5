"""Exclusive locks under ``WAREHOUSE/_locks/`` (no Spark here): one writer per warehouse,
one drain or settle per queue.

**How.** An exclusive, non-blocking ``flock`` on a lock file. The kernel releases it when the
process ends, however it ends (``kill -9`` included), so a lock is never left stale and
nothing has to be cleaned up. The file holds who has it (pid, host, command, run id, since,
as JSON) for the error message of the one refused; the content is only informative, the
``flock`` is the lock. The lock directory must be on a file system whose ``flock`` is shared
by every host that may write (a local disk, or NFSv4); on Windows ``msvcrt.locking``.

**The warehouse lock** (`WarehouseLock`, ``_locks/warehouse.lock``): every command that
writes the warehouse (``ingest``, ``classify``, ``run``, ``replay``, ``drain``, ``settle``,
``demo``) holds it from before Spark starts until it ends, so two overlapping scheduled
runs cannot replay the same decisions twice or recover each other's checkpoints. It is
re-entrant within one process (`run_pipeline` takes it too, for jobs and notebooks that call
the library; inside a command that is a no-op). ``storage.lock = false`` turns it off.

**Which guard applies** (`writer_lock`, and `dlq_pipeline.warehouse.lease` for Delta):

- Parquet on a file system path: this lock (nothing else can exclude a second writer).
  Parquet elsewhere (``s3a://``...) cannot be guarded: `LockUnavailable` (exit 2) unless
  ``storage.lock = false`` says the scheduler serialises writers.
- Delta (by path on any file system, or by catalog name): the *writer lease*, a row in the
  Delta table ``leases`` next to the tables, which needs no POSIX file system. When
  ``storage.path`` is a file system path and ``storage.lock`` is true, this lock is taken
  too, first: a second writer on the same file system is refused before Spark starts, and a
  lease whose holder recorded this lock while this process holds it now (its holder is
  dead: the kernel released it) is taken at once instead of after it expires. Elsewhere
  (``hdfs://``, ``s3a://``, ``abfss://``) the lease alone guards the warehouse.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

from dlq_pipeline.errors import DlqPipelineError, UsageError
from dlq_pipeline.runtime.paths import PathError, local_dir
from dlq_pipeline.runtime.permissions import private_dirs

LOCKS_DIR = "_locks"
WAREHOUSE_LOCK = "warehouse.lock"


class LockHeld(DlqPipelineError, RuntimeError):
    """Another process holds the lock; the message names it."""


class FileLock:
    """``with FileLock(path, command=..., run_id=...):`` holds ``path`` or raises
    ``refused(holder, path)`` (a `LockHeld`). Not re-entrant."""

    def __init__(self, path: str | os.PathLike, *, command: str, run_id: str):
        self.path, self.command, self.run_id = Path(path), command, run_id
        self._fd: int | None = None

    def refused(self, holder: str) -> Exception:
        return LockHeld(f"{self.path} is held by {holder}")

    def __enter__(self):
        private_dirs(self.path.parent)  # may create the warehouse itself: owner-only
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by Spark's JVM (PEP 446)
        try:
            _lock(fd)
        except OSError:
            holder = _read_holder(fd)
            os.close(fd)
            raise self.refused(holder) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder_info(self.command, self.run_id)).encode() + b"\n", 0)
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.ftruncate(fd, 0)
            finally:
                _unlock(fd)
                os.close(fd)


def holder_info(command: str, run_id: str) -> dict:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": command,
        "run_id": run_id,
        "since": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def describe_holder(doc: dict) -> str:
    """``run (pid 4711 on host1, run 20260301T120000Z-1a2b3c, since 2026-03-01T12:00:03Z)``."""
    return f"{doc['command']} (pid {doc['pid']} on {doc['host']}, run {doc['run_id'] or '-'}, since {doc['since']})"


HOLDER_NAME_WAIT = 2.0  # seconds: the holder writes its name right after it takes the lock


def _read_holder(fd: int) -> str:
    """Who holds the lock, waiting up to ``HOLDER_NAME_WAIT`` for a holder that has just taken
    it and not yet written its name (two runs started at the same moment meet in that gap)."""
    deadline = time.monotonic() + HOLDER_NAME_WAIT
    while True:
        try:
            return describe_holder(json.loads(os.pread(fd, 4096, 0) or b"{}"))
        except (ValueError, KeyError, OSError):
            if time.monotonic() >= deadline:
                return "another process (it has not written its name yet)"
            time.sleep(0.02)


# --- one writer per warehouse --------------------------------------------------------------


class WarehouseLocked(LockHeld):
    """Another command is writing the warehouse."""


def warehouse_lock_path(warehouse: str | os.PathLike) -> Path:
    return Path(warehouse) / LOCKS_DIR / WAREHOUSE_LOCK


_held: dict[Path, int] = {}  # lock path -> depth, for this process
_held_guard = threading.Lock()


class WarehouseLock(FileLock):
    """The warehouse-wide writer lock; re-entrant within one process (a nested hold is a
    no-op), `WarehouseLocked` naming the holder when another process has it."""

    def __init__(self, warehouse: str | os.PathLike, *, command: str, run_id: str = ""):
        super().__init__(warehouse_lock_path(warehouse), command=command, run_id=run_id)
        self.warehouse = Path(warehouse)
        self._nested = False

    def refused(self, holder: str) -> Exception:
        return WarehouseLocked(
            f"warehouse {self.warehouse} is being written by {holder} (lock file {self.path}); nothing was "
            f"touched. Only one command writes a warehouse at a time: wait for it to end, or schedule runs so "
            f"they do not overlap"
        )

    def __enter__(self) -> WarehouseLock:
        key = self.path.absolute()
        with _held_guard:
            if key in _held:
                _held[key] += 1
                self._nested = True
                return self
            super().__enter__()
            _held[key] = 1
        return self

    def __exit__(self, *exc) -> None:
        key = self.path.absolute()
        with _held_guard:
            _held[key] -= 1
            if self._nested:
                self._nested = False
                return
            del _held[key]
            super().__exit__(*exc)


def held_warehouse_lock(warehouse: str | os.PathLike) -> Path | None:
    """The lock file of ``warehouse``'s `WarehouseLock` when this process holds it, else None."""
    key = warehouse_lock_path(warehouse).absolute()
    with _held_guard:
        return key if key in _held else None


class NoLock:
    """What `writer_lock` gives when ``storage.lock`` is false."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


class LockUnavailable(UsageError, ValueError):
    """The warehouse cannot be locked as configured (a configuration problem, exit 2)."""


def writer_lock(storage, *, command: str, run_id: str = ""):
    """The warehouse lock for the ``[storage]`` settings ``storage``
    (`dlq_pipeline.config.settings.StorageSettings`): its ``path``, with Delta tables by name too,
    since that directory holds the checkpoints, summaries and simulated queue managers every
    writer of those tables shares; `NoLock` when ``storage.lock`` is false, or for Delta when
    ``storage.path`` is not a file system path (its lease guards it). `LockUnavailable` for
    Parquet when ``storage.path`` is not a file system path."""
    if not storage.lock:
        return NoLock()
    path = storage.path
    try:
        warehouse = local_dir(path)
    except PathError:
        if storage.format == "delta":
            return NoLock()  # the writer lease (dlq_pipeline.warehouse.lease) guards a Delta warehouse anywhere
        raise LockUnavailable(
            f"storage.path {path!r} is not a file system path, so the Parquet warehouse cannot be locked against a "
            'second writer: use storage.format = "delta" (its lease works there), put storage.path on a local, NFS '
            "or /dbfs path, or set storage.lock = false and make sure "
            "your scheduler never starts two writing commands for these tables at once"
        ) from None
    return WarehouseLock(warehouse, command=command, run_id=run_id)


try:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
except ImportError:  # Windows
    import msvcrt

    if sys.platform == "win32":  # always, where msvcrt imports: the check tells mypy which stubs apply

        def _lock(fd: int) -> None:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

        def _unlock(fd: int) -> None:
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
