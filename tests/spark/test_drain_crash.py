"""`dlq-pipeline drain --mode move` killed with SIGKILL in the middle, then run again: every
message that was on the queue is landed in `messages` exactly once and removed from the
queue exactly once (the simulated queue manager's get log is the truth), nothing is left.

The kill is placed deterministically at the worst moment: the second unit of work's messages
are landed (durable in `messages`) but its MQCMIT has not happened. A fault makes that
second commit sleep *before* committing; the fault's own counter (in the simulated queue
manager's side database) says when the drain has reached it. While it sleeps, the drain
holds the warehouse: a second drain is refused.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from dlq_pipeline.cli import cli
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.tables.identity import data_digest, message_key
from dlq_pipeline.warehouse.storage import Storage
from tests.spark.replay_retry_job import dead_letter
from tests.spark.test_live import seed_queue
from tests.support import REPO, repo_env

pytestmark = pytest.mark.spark
DLQ = "DLQ"
COUNT, BATCH = 12, 3
# the second commit (the first is let through) sleeps before committing, once
STUCK_COMMIT = {"op": "commit", "after": 1, "times": 1, "delay": 3600}


def get_log(qm: SimQueueManager) -> list[bytes]:
    """Data of every committed get from the DLQ."""
    return [m.data for m in qm.get_log(DLQ)]


def stuck_commits(qm: SimQueueManager) -> int:
    with closing(sqlite3.connect(qm.faults_path)) as db:
        row = db.execute("SELECT fired FROM counts WHERE fault=0").fetchone()
    return row[0] if row else 0


def test_move_drain_killed_between_landing_and_commit_then_rerun_lands_and_removes_each_message_once(spark, tmp_path):
    wh = tmp_path / "wh"
    qm = SimQueueManager(wh / "_sim" / "QM1.sqlite", "QM1")
    originals = [dead_letter(n) for n in range(COUNT)]
    seed_queue(qm, originals, queue=DLQ)
    qm.configure({"faults": [STUCK_COMMIT]})

    conf = tmp_path / "c.toml"
    conf.write_text(f'[storage]\npath = "{wh}"\n[drain]\nbatch_size = {BATCH}\n[spark]\nmaster = "local[1]"\n')
    args = ["drain", "--config", str(conf), "--source", "sim:QM1", "--queue", DLQ, "--mode", "move", "--json"]
    env = repo_env()
    command = Path(sys.executable).with_name("dlq-pipeline")
    proc = subprocess.Popen(
        [str(command), *args, "--run-id", "KILLED"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 600
        while stuck_commits(qm) == 0:  # batch 2 landed, its MQCMIT asleep
            assert proc.poll() is None, f"the drain ended before it could be killed: {proc.stderr.read()[-3000:]!r}"
            assert time.monotonic() < deadline, "the drain never reached its second commit"
            time.sleep(0.05)
        storage = Storage(spark, path=str(wh))
        assert storage.read("messages").count() == 2 * BATCH  # two batches landed ...
        assert get_log(qm) == [d for _, d in originals[:BATCH]]  # ... one removed
        refused = CliRunner().invoke(cli, [*args, "--run-id", "SECOND"])
        assert refused.exit_code == 1 and "is being written by drain (move)" in refused.stderr
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the whole drain: driver, JVM, Python workers
        proc.wait()

    assert [m.data for m in qm.messages(DLQ)] == [d for _, d in originals[BATCH:]]  # batch 2 backed out by the kill
    qm.configure({"faults": []})
    result = CliRunner().invoke(cli, [*args, "--run-id", "RERUN"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout.strip().splitlines()[-1])
    assert {k: doc[k] for k in ("read", "removed", "landed", "already_landed")} == {
        "read": COUNT - BATCH,
        "removed": COUNT - BATCH,
        "landed": COUNT - 2 * BATCH,
        "already_landed": BATCH,
    }

    assert qm.messages(DLQ) == []  # nothing left behind
    got = Counter(get_log(qm))
    assert sorted(got) == sorted(d for _, d in originals) and set(got.values()) == {1}  # each removed once
    landed = Storage(spark, path=str(wh)).read("messages").collect()
    assert sorted((r["message_key"], bytes(r["data"])) for r in landed) == sorted(
        (message_key(md, data_digest(data)), data) for md, data in originals
    )  # each landed once
    assert Counter(r["run_id"] for r in landed) == {"KILLED": 2 * BATCH, "RERUN": COUNT - 2 * BATCH}
