"""Killing a run's process group stops its puts.

PySpark's Python workers live in a process group of their own, so ``kill -9 -PGID`` of a run
would kill the driver, the JVM and the warehouse lock, and leave the worker putting until PySpark's
daemon noticed and hung it up. A replay worker now joins the run's group before it puts: the
worker that holds the queue manager open is in that group, and nothing is put after the kill.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.mq.sim import SimQueueManager
from tests.spark.replay_retry_job import dead_letter

from .harness import kill_run, session_pids, start_run, wait_for

pytestmark = pytest.mark.spark

RULES = "REASON(MQRC_Q_FULL) ACTION(RETRY) RETRY(1)\n"


def process_group(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[2])  # state ppid pgrp


def holders(pids: list[int], path: Path) -> list[int]:
    """The processes among ``pids`` that have ``path`` open: the ones putting to the sim."""
    found = []
    for pid in pids:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        if str(path) in links:
            found.append(pid)
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_killing_the_run_group_during_a_slow_replay_stops_every_put(tmp_path):
    wh = tmp_path / "wh"
    database = wh / "_sim" / "QM1.sqlite"
    # a slow queue manager (a counted delay: slept at each put, asynchronous or not)
    qm = SimQueueManager(database, "QM1", {"faults": [{"op": "put", "queue": "APP.IN", "delay": 0.3, "times": 1000}]})
    dump = tmp_path / "dlq.dmp"
    write_dump([dead_letter(n) for n in range(40)], dump)
    rules = tmp_path / "retry.rules"
    rules.write_text(RULES)
    conf = tmp_path / "c.toml"
    conf.write_text(
        f'[storage]\npath = "{wh}"\n[replay]\nbatch_size = 1\nmax_connections = 1\n[spark]\nmaster = "local[1]"\n'
    )
    proc = start_run(
        ["run", "--config", str(conf), "--rules", str(rules), "--input", str(dump), "--target", "sim:QM1"],
        crash_at=None,
        marker_dir=tmp_path / "markers",
        cwd=tmp_path,
    )
    try:
        wait_for(proc, lambda: len(qm.put_log("APP.IN")) >= 2, "two puts", tmp_path)
        putting = holders(session_pids(proc.pid), database)
        assert putting, "no process of the run has the queue manager open"
        assert {process_group(pid) for pid in putting} == {proc.pid}  # the run's group: killed with it
        os.killpg(proc.pid, signal.SIGKILL)  # the run's process group only, as `kill -9 -PGID` does
        sent = len(qm.put_log("APP.IN"))
        time.sleep(2)  # before: the worker kept putting (0.3 s a put) until the daemon hung it up
        assert len(qm.put_log("APP.IN")) == sent < 40
        assert not [pid for pid in putting if alive(pid)]
    finally:
        kill_run(proc)  # whatever is left of the session (PySpark's daemon ends on its own)
