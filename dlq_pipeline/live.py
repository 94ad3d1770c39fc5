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
``flock`` on ``WAREHOUSE/_locks/<qmgr>@<queue>.lock`` (`dlq_pipeline.locks`: released by the
kernel however the process ends, ``kill -9`` included; the file names the holder). The
commands also hold the warehouse-wide writer lock, which subsumes this one within a
warehouse; `drain`/`settle` keep taking it themselves so that direct library callers are
kept off the queue too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dlq_pipeline.locks import LOCKS_DIR, FileLock
from dlq_pipeline.replay.targets import DEFAULT_SIM_NAME, Target, TargetError, open_target, parse_target, \
    safe_file_name

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


class QueueLock(FileLock):
    """``with QueueLock(path, what=..., command=..., run_id=...):`` holds the queue or raises
    `QueueLocked` naming the holder. Not re-entrant, also within one process."""

    def __init__(self, path: str | os.PathLike, *, what: str, command: str, run_id: str):
        super().__init__(path, command=command, run_id=run_id)
        self.what = what

    def refused(self, holder: str) -> Exception:
        return QueueLocked(f"{self.what} is already being worked on by {holder} (lock file {self.path}); "
                           "wait for it to finish, only one drain or settle per queue runs at a time")
