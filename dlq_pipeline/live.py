"""Live DLQs (no Spark here): which queue a drain or settle works on, and the lock that
keeps two of them off the same queue at once.

**Source.** ``mq:QMGR`` (a real queue manager, client settings from ``[mq.qmgrs.QMGR]``) or
``sim:NAME`` (the simulated queue manager ``WAREHOUSE/_sim/NAME.sqlite``). The name may be
left out (``mq:``/``sim:``): the queue manager is then ``drain.qmgr`` (``--qmgr``), else the
rules table's ``INPUTQM``; a ``sim:`` with neither is ``SIM``.

**Queue.** ``--queue`` (``drain.queue``), else the rules table's ``INPUTQ``, else the queue
manager's own dead-letter queue (its DEADQ attribute, inquired when connected). The command
line wins over the rules table's control data, as with ``runmqdlq -q/-m``
(rules-table.md §4).

**Lock.** One drain or settle per queue manager and queue at a time: an exclusive
``flock`` on ``WAREHOUSE/_locks/<qmgr>@<queue>.lock``. The kernel releases it when the
process ends, however it ends (``kill -9`` included), so a lock is never left stale. The
file holds who has it (pid, host, command, run id, since) for the error message of the one
refused. The warehouse must be on a file system whose ``flock`` is shared by every host
that runs drains (a local disk, or NFSv4); on Windows ``msvcrt.locking`` is used.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from dlq_pipeline.replay.targets import DEFAULT_SIM_NAME, Target, TargetError, open_target, parse_target, \
    safe_file_name

LOCKS_DIR = "_locks"
SOURCE_KINDS = ("mq", "sim")


class LiveError(RuntimeError):
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


def live_queue(spec: str, *, warehouse: str | os.PathLike, config=None, queue: str = "", qmgr: str = "",
               control=None) -> LiveQueue:
    """The live queue for ``spec``. ``queue``/``qmgr`` come from the command line or the
    configuration (``drain.queue``/``drain.qmgr``); ``control`` is the rules table's
    `ControlData` (INPUTQ/INPUTQM), used when they are blank. A queue manager named in
    ``spec`` wins over ``qmgr`` and INPUTQM."""
    kind, named = parse_source(spec)
    inputq = ((control.inputq if control is not None else None) or "").strip(" ")
    inputqm = ((control.inputqm if control is not None else None) or "").strip(" ")
    qmgr = (qmgr or "").strip(" ")
    name = named or qmgr or inputqm or (DEFAULT_SIM_NAME if kind == "sim" else "")
    if not name:
        raise TargetError(f"source {spec} names no queue manager: write mq:QMGR, use --qmgr, or set INPUTQM in the "
                          "rules table")
    target = open_target(f"{kind}:{name}", warehouse=warehouse, config=config)
    return LiveQueue(f"{kind}:{name}", kind, name, (queue or "").strip(" ") or inputq, target)


def resolve_queue(live: LiveQueue, conn) -> LiveQueue:
    """``live`` with its queue named: the queue manager's DEADQ when no queue was given."""
    if live.queue:
        return live
    inquire = getattr(conn, "dead_letter_queue", None)
    deadq = inquire() if inquire is not None else ""
    if not deadq:
        raise LiveError(f"no queue to drain: queue manager {live.qmgr} has no dead-letter queue (DEADQ); "
                        "name one with --queue, drain.queue or INPUTQ in the rules table")
    return LiveQueue(live.spec, live.kind, live.qmgr, deadq, live.target)


# --- the lock ------------------------------------------------------------------------------


def lock_path(warehouse: str | os.PathLike, qmgr: str, queue: str) -> Path:
    return Path(warehouse) / LOCKS_DIR / f"{safe_file_name(qmgr)}@{safe_file_name(queue)}.lock"


class QueueLock:
    """``with QueueLock(path, command=..., run_id=...):`` holds the queue or raises
    `QueueLocked` naming the holder. Not re-entrant, also within one process."""

    def __init__(self, path: str | os.PathLike, *, what: str, command: str, run_id: str):
        self.path, self.what, self.command, self.run_id = Path(path), what, command, run_id
        self._fd: int | None = None

    def __enter__(self) -> "QueueLock":
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            _lock(fd)
        except OSError:
            holder = _read_holder(fd)
            os.close(fd)
            raise QueueLocked(f"{self.what} is already being worked on by {holder} (lock file {self.path}); "
                              "wait for it to finish, only one drain or settle per queue runs at a time") from None
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "command": self.command, "run_id": self.run_id,
                  "since": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode() + b"\n", 0)
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


def _read_holder(fd: int) -> str:
    try:
        doc = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return (f"{doc['command']} (pid {doc['pid']} on {doc['host']}, run {doc['run_id']}, since {doc['since']})")
    except (ValueError, KeyError, OSError):
        return "another process"


try:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
except ImportError:  # Windows
    import msvcrt

    def _lock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

    def _unlock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
