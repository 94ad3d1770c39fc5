"""Replay's two guarantees under real processes, wherever the warehouse is (HDFS on the test
bed, a bucket on an S3 server): a run killed with -9 mid-replay and then run again, and two
runs started at once. Each tier gives its way to start a run and to read what was delivered.

``start(name, *, wait=0, crash_at=None, extra_env=None)`` starts ``run`` with run id ``name``
(``wait``: its ``storage.lease_wait``; ``crash_at``: the crash point it stops at) and returns
(the process, its working directory, where ``run.log`` is); ``delivered()`` returns (the
message keys in the ``dir:`` files, those the ledger says were delivered), as Counters;
``checkpoints(name)`` the partitions whose checkpoint run ``name`` recorded.

The kill lands at ``crash_at``: by default once a ``dir:`` partition has recorded the publish
of its files and renamed none of them (the rerun then finds everything to publish in the
checkpoint, and puts nothing itself); ``replay-batch:N`` stops a put target's partition once
its N-th batch is committed and checkpointed (the rerun puts the rest).
"""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from tests.reliability.harness import kill_run, markers, wait_for

CRASH_POINT = "dir-publish-recorded"  # a partition recorded the publish of its files, renamed none yet


def finish(proc, cwd: Path) -> int:
    """The run's exit status, 3 (attention: messages without an MQDLH are ignored) as 0."""
    try:
        proc.wait(timeout=900)
    except Exception:
        kill_run(proc)
        raise
    return 0 if proc.returncode == 3 else proc.returncode


def killed_mid_replay_then_rerun(
    start: Callable,
    delivered: Callable[[], tuple[Counter, Counter]],
    checkpoints: Callable[[str], list[str]],
    expected: Counter,
    lease_seconds: int,
    tmp_path: Path,
    crash_at: str = CRASH_POINT,
) -> dict:
    """The rerun's summary (``run --json``)."""
    proc, cwd = start("killed", crash_at=crash_at)
    try:
        wait_for(proc, lambda: markers(cwd / "markers"), f"the replay task at {crash_at}", cwd)
    finally:
        stopped = [int(p.name) for p in (cwd / "markers").iterdir() if p.name.isdigit()]
        kill_run(proc)  # the driver and what it started
        for pid in stopped:  # the Python worker, stopped at the crash point
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert markers(cwd / "markers") == [crash_at.replace(":", " ")]  # the point's name and its count
    assert checkpoints("killed") == ["partition-00000"]  # the checkpoint is where the warehouse is

    from dlq_pipeline.runtime.testhooks import CLOCK_SHIFT_ENV

    shift = tmp_path / "clock-shift"
    rerun, cwd2 = start("rerun", wait=900, extra_env={CLOCK_SHIFT_ENV: str(shift)})
    waiting = "for the writer lease held by run (pid"
    wait_for(rerun, lambda: waiting in (cwd2 / "run.log").read_text(errors="replace"), "the rerun waiting", cwd2)
    shift.write_text(f"{lease_seconds + 1}")  # the dead run's lease has expired for the rerun
    assert finish(rerun, cwd2) == 0, (cwd2 / "run.log").read_text()[-4000:]
    in_files, in_ledger = delivered()
    assert in_files == expected and in_ledger == expected  # every message once, none twice
    summary = json.loads([line for line in (cwd2 / "run.log").read_text().splitlines() if line.startswith("{")][-1])
    if crash_at == CRASH_POINT:
        assert summary["outcomes"].get("delivered", 0) == 0  # the dead run's publish, recovered, was everything
    return summary


def two_runs_at_once(start: Callable, delivered: Callable[[], tuple[Counter, Counter]], expected: Counter) -> None:
    first = start("first")
    second = start("second")
    codes = [finish(*first), finish(*second)]
    logs = [(cwd / "run.log").read_text() for _, cwd in (first, second)]
    assert sorted(codes) in ([0, 0], [0, 1]), logs
    if 1 in codes:
        assert "lease" in logs[codes.index(1)], logs  # refused by the writer lease, naming it
    in_files, in_ledger = delivered()
    assert in_files == expected and in_ledger == expected
