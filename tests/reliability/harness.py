"""Running a pipeline in a subprocess and killing it at an exact point (crash tests).

The run is started in a new session, so every process it starts (the Spark JVM, Python
workers) shares its session id. A crash point (`dlq_pipeline.runtime.testhooks`) stops the process
that reaches it and leaves a marker; `kill_run` then freezes (SIGSTOP) and SIGKILLs each
process of that session, by pid: what a machine or container crash does to a run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dlq_pipeline.runtime.testhooks import CRASH_AT_ENV, MARKER_ENV
from tests.support import repo_env

POLL = 0.05


def session_pids(sid: int) -> list[int]:
    """The processes whose session id is ``sid`` (all started by the run)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[3]) == sid:  # fields after the name: state ppid pgrp session ...
            pids.append(int(entry))
    return pids


def kill_run(proc: subprocess.Popen) -> None:
    """SIGSTOP then SIGKILL every process of the run's session; reap the leader."""
    for _ in range(3):  # a process may fork while we look
        pids = session_pids(proc.pid)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
    for pid in session_pids(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=60)
    deadline = time.monotonic() + 60
    while session_pids(proc.pid) and time.monotonic() < deadline:
        time.sleep(POLL)  # orphans are reaped by init
    assert not session_pids(proc.pid), "processes of the killed run survived"


LOCAL_DIRS = "spark-local"  # under the run's cwd: Spark's (and a dir: task's) scratch


def start_run(
    args: list[str],
    *,
    crash_at: str | None,
    marker_dir: Path,
    cwd: Path,
    extra_env: dict | None = None,
    module: str | None = None,
) -> subprocess.Popen:
    """``dlq-pipeline ARGS`` (or ``python -m MODULE ARGS``) in a new session, stopping at
    ``crash_at``. Its Spark local directories are ``cwd/LOCAL_DIRS``: a killed JVM removes
    nothing, so what it leaves stays in the test's own directory, not in /tmp."""
    (cwd / LOCAL_DIRS).mkdir(exist_ok=True)
    env = repo_env(SPARK_LOCAL_DIRS=str(cwd / LOCAL_DIRS), PYSPARK_PYTHON=sys.executable)
    env.pop(CRASH_AT_ENV, None)
    if crash_at:
        env[CRASH_AT_ENV] = crash_at
        env[MARKER_ENV] = str(marker_dir)
    env.update(extra_env or {})
    marker_dir.mkdir(parents=True, exist_ok=True)
    out = open(cwd / "run.log", "wb")
    command = ["-m", module] if module else ["-c", "from dlq_pipeline.cli import main; main()"]
    return subprocess.Popen(
        [sys.executable, *command, *args],
        cwd=cwd,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_for(proc: subprocess.Popen, condition, what: str, cwd: Path, timeout: float = 600) -> None:
    """Poll ``condition()`` until true; fail (with the run's log) if the run ends first."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(
                f"the run ended ({proc.returncode}) before {what}:\n"
                + (cwd / "run.log").read_text(errors="replace")[-4000:]
            )
        if time.monotonic() > deadline:
            kill_run(proc)
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(POLL)


def markers(marker_dir: Path) -> list[str]:
    return sorted(p.read_text() for p in marker_dir.iterdir() if not p.name.endswith(".tmp"))
