"""One writer per warehouse: while another process holds the warehouse lock, every writing
command is refused (exit 1, naming the holder) before Spark or the warehouse is touched;
once the holder is killed with SIGKILL, the next run goes ahead."""

from __future__ import annotations

import hashlib
import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from dlq_pipeline.cli import cli
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.warehouse.storage import Storage
from tests.spark.replay_retry_job import dead_letter
from tests.support import REPO
from tests.unit.test_locks import hold, kill

pytestmark = pytest.mark.spark
STARTER = str(REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules")


def snapshot(root: Path) -> dict:
    """Every file and directory under ``root``: its content digest and mtime."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        out[str(path.relative_to(root))] = (digest, st.st_mtime_ns)
    return out


def test_writing_commands_are_refused_while_another_run_holds_the_warehouse(spark, tmp_path):
    from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump

    wh = tmp_path / "wh"
    dump = tmp_path / "dlq.dmp"
    write_dump([dead_letter(n) for n in range(4)], dump)
    qm = SimQueueManager(wh / "_sim" / "QM1.sqlite", "QM1", {"remote_qmgrs": ["*"]})
    c = qm.connect()
    h = c.open_for_put("DLQ")
    c.put(h, *dead_letter(9))
    c.commit()
    c.disconnect()
    common = ["--warehouse", str(wh)]
    commands = {
        "run": ["run", "--input", str(dump), "--rules", STARTER, "--target", "sim:QM1", *common],
        "ingest": ["ingest", str(dump), *common],
        "classify": ["classify", "--rules", STARTER, *common],
        "replay": ["replay", "--target", "sim:QM1", *common],
        "drain": ["drain", "--source", "sim:QM1", "--queue", "DLQ", "--mode", "move", *common],
        "settle": ["settle", "--source", "sim:QM1", "--queue", "DLQ", *common],
    }
    holder = hold(wh, "run", "20260301T120000Z-1a2b3c")
    try:
        before = snapshot(wh)
        outcomes = {}
        for name, args in commands.items():
            result = CliRunner().invoke(cli, args)
            said = result.stderr.strip()
            outcomes[name] = (
                result.exit_code,
                said.startswith(
                    f"error: warehouse {wh} is being written by run "
                    f"(pid {holder.pid} on {socket.gethostname()}, "
                    "run 20260301T120000Z-1a2b3c, since "
                ),
            )
        assert outcomes == {name: (1, True) for name in commands}
        assert snapshot(wh) == before  # nothing touched: no table, no summary, the queue as it was
        assert len(qm.messages("DLQ")) == 1 and len(qm.put_log()) == 1  # only the seeding put
    finally:
        kill(holder)

    result = CliRunner().invoke(cli, [*commands["run"], "--json"], catch_exceptions=False)
    assert result.exit_code in (0, 3), result.stderr
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["messages_landed"] == 4
    assert Storage(spark, path=str(wh)).read("messages").count() == 4
    assert (wh / "_locks" / "warehouse.lock").read_text() == ""  # released by the run that ended
