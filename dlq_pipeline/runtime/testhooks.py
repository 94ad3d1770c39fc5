"""Crash points and a movable lease clock for the crash tests (TEST-ONLY; inert unless an
environment variable is set).

The crash tests (tests/reliability/test_crash.py) must kill a run at an exact place: at a
stage boundary, between two replay batches, in the middle of reading a dump. Production code
calls `crash_point(name, count)` at those places. When ``DLQ_PIPELINE_CRASH_AT`` is
``NAME`` or ``NAME:COUNT`` and the call matches, the process writes a marker file named by
its pid into the directory ``DLQ_PIPELINE_CRASH_MARKER`` (if set) and stops itself with
SIGSTOP; the test, polling for markers, then SIGKILLs every process of the run. Nothing
else happens, ever: with the variable unset (always, outside those tests) a crash point is
one environment lookup. docs/reliability.md describes the tests.

Points: ``after-ingest``, ``ingest-messages-stored`` (messages written, quarantine not yet),
``ingest-files-recorded`` (the ``files`` rows written, landed files not yet cleaned),
``ingest-record:N`` (a reader task after its N-th record), ``after-classify``,
``replay-batch:N`` (a replay task right after its N-th committed batch and checkpoint line),
the ``dir:`` target's publish (`dlq_pipeline.replay.targets.DumpSink.finish`):
``dir-files-written`` (files written in the staging directory, not recorded),
``dir-publish-recorded`` (publish line on disk, nothing renamed), ``dir-file-renamed:N``
(after the N-th rename), ``dir-published`` (all renamed, staging removed, ledger not yet
appended); ``replay-ledger-appended`` (ledger appended, checkpoints not yet deleted),
``after-replay`` (checkpoints deleted, run summary not yet written).

The lease clock: when ``DLQ_PIPELINE_CLOCK_SHIFT`` names a file, the writer lease's clock is
now plus the seconds that file holds (none while it is absent), read at every look. A test
lets a dead holder's lease expire by writing a number there, once the process it tests is
waiting for the lease, instead of waiting out the lease's real length.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
from collections.abc import Callable

from dlq_pipeline.runtime.clock import utc_now

CRASH_AT_ENV = "DLQ_PIPELINE_CRASH_AT"
MARKER_ENV = "DLQ_PIPELINE_CRASH_MARKER"
CLOCK_SHIFT_ENV = "DLQ_PIPELINE_CLOCK_SHIFT"
POINTS = (
    "after-ingest",
    "ingest-messages-stored",
    "ingest-record",
    "after-classify",
    "replay-batch",
    "dir-files-written",
    "dir-publish-recorded",
    "dir-file-renamed",
    "dir-published",
    "replay-ledger-appended",
    "after-replay",
)


def crash_point(name: str, count: int | None = None) -> None:
    """Stop here if ``DLQ_PIPELINE_CRASH_AT`` asks for this point (see the module doc)."""
    wanted = os.environ.get(CRASH_AT_ENV)
    if not wanted:
        return
    point, _, number = wanted.partition(":")
    if point != name or (number and count != int(number)):
        return
    marker_dir = os.environ.get(MARKER_ENV)
    if marker_dir:
        marker = os.path.join(marker_dir, str(os.getpid()))
        with open(marker + ".tmp", "w") as f:
            f.write(f"{name} {count if count is not None else ''}".strip())
        os.replace(marker + ".tmp", marker)
    os.kill(os.getpid(), signal.SIGSTOP)


def lease_clock() -> Callable[[], dt.datetime]:
    """The writer lease's clock: `utc_now`, shifted when ``DLQ_PIPELINE_CLOCK_SHIFT`` asks
    (see the module doc)."""
    path = os.environ.get(CLOCK_SHIFT_ENV)
    if not path:
        return utc_now

    def shifted() -> dt.datetime:
        try:
            with open(path, encoding="ascii") as f:
                seconds = float(f.read().strip() or 0)
        except FileNotFoundError:
            seconds = 0.0
        return utc_now() + dt.timedelta(seconds=seconds)

    return shifted
