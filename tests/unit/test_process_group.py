"""A replay worker joins the run's process group, so killing that group stops its puts
(a worker left in PySpark's own process group would outlive a killed run)."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

from dlq_pipeline.runtime.process_group import RunGroup, join_run_group
from tests.support import repo_env

# A child like PySpark's daemon: its own process group (setpgid(0, 0)), the run's session;
# it joins the group it is given, reports its group, then waits to be killed.
CHILD = textwrap.dedent("""
    import os, pickle, sys, time
    from dlq_pipeline.runtime.process_group import join_run_group
    os.setpgid(0, 0)
    before = os.getpgid(0)
    joined = join_run_group(pickle.loads(bytes.fromhex(sys.argv[1])))
    print(before, joined, os.getpgid(0), flush=True)
    time.sleep(60)
""")


def start_child(run: RunGroup | None) -> tuple[subprocess.Popen, list[str]]:
    env = repo_env()
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, pickle.dumps(run).hex()], stdout=subprocess.PIPE, text=True, env=env
    )
    return proc, proc.stdout.readline().split()


def test_a_worker_in_a_group_of_its_own_joins_the_run_group_and_dies_with_it():
    """The run (here: a process leading a new session and group) kills its group; the worker
    that joined dies with it although it was started in a group of its own."""
    leader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import os, subprocess, sys
            from dlq_pipeline.runtime.process_group import RunGroup
            child = subprocess.Popen([sys.executable, "-c", {CHILD!r},
                                      __import__("pickle").dumps(RunGroup.of_this_process()).hex()])
            print(child.pid, os.getpgid(0), flush=True)
            child.wait()
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=repo_env(),
    )
    try:
        child_pid, group = map(int, leader.stdout.readline().split())
        before, joined, after = leader.stdout.readline().split()
        assert int(before) == child_pid != group  # it had a group of its own, as PySpark's workers do
        assert (joined, int(after)) == ("True", group)
        os.killpg(group, signal.SIGKILL)
        leader.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _alive(child_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child_pid)
    finally:
        if leader.poll() is None:
            leader.kill()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_process_of_another_session_or_without_a_run_stays_where_it_is():
    other_session = RunGroup(session=os.getsid(0) + 10**6, group=os.getpgid(0))
    for run in (other_session, None, RunGroup(session=os.getsid(0), group=2**30)):  # last: no such group
        proc, (before, joined, after) = start_child(run)
        try:
            assert (joined, after) == ("False", before)
        finally:
            proc.kill()
            proc.wait()


def test_the_run_group_is_the_calling_process_s():
    assert RunGroup.of_this_process() == RunGroup(os.getsid(0), os.getpgid(0))
    assert join_run_group(RunGroup.of_this_process())  # already in it: nothing to do
