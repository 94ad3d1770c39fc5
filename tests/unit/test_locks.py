"""The warehouse writer lock without Spark: refused naming the holder, free after kill -9,
re-entrant in one process, and what happens when the warehouse cannot be locked."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from dlq_pipeline.cli import cli
from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import StorageSettings
from dlq_pipeline.warehouse.locks import (
    LockUnavailable,
    NoLock,
    WarehouseLock,
    WarehouseLocked,
    held_warehouse_lock,
    writer_lock,
)
from tests.support import REPO, repo_env


def hold(warehouse: Path, command: str = "run", run_id: str = "HOLDER") -> subprocess.Popen:
    """A process holding the warehouse lock (returns once it holds it)."""
    env = repo_env()
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "lock_holder.py"), str(warehouse), command, run_id],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline() == "held\n"
    return proc


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_a_second_holder_is_refused_naming_the_first_and_kill_9_frees_the_lock(tmp_path):
    holder = hold(tmp_path, "run", "20260301T120000Z-1a2b3c")
    try:
        with pytest.raises(WarehouseLocked) as refused:
            with WarehouseLock(tmp_path, command="replay", run_id="SECOND"):
                pass
        text = str(refused.value)
        assert (
            f"is being written by run (pid {holder.pid} on {socket.gethostname()}, run 20260301T120000Z-1a2b3c, "
            "since 20" in text
        )
        assert str(tmp_path / "_locks" / "warehouse.lock") in text and "nothing was touched" in text
    finally:
        kill(holder)
    with WarehouseLock(tmp_path, command="replay", run_id="AFTER"):  # the kernel released it
        assert '"run_id": "AFTER"' in (tmp_path / "_locks" / "warehouse.lock").read_text()


def test_a_run_refused_in_the_moment_before_the_holder_writes_its_name_still_names_it(tmp_path):
    # two runs started at the same moment: the winner has the flock but has not yet written its name
    import fcntl
    import json
    import threading

    from dlq_pipeline.warehouse.locks import describe_holder, holder_info

    path = tmp_path / "_locks" / "warehouse.lock"
    path.parent.mkdir()
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another open file: it conflicts even in this process
        doc = holder_info("run", "WINNER")
        late = threading.Timer(0.3, lambda: os.pwrite(fd, json.dumps(doc).encode() + b"\n", 0))
        late.start()
        with pytest.raises(WarehouseLocked) as refused:
            with WarehouseLock(tmp_path, command="run", run_id="LOSER"):
                pass
        late.join()
        assert f"is being written by {describe_holder(doc)} (lock file {path})" in str(refused.value)

        os.ftruncate(fd, 0)  # a holder that never writes its name: refused all the same, after a bounded wait
        with pytest.raises(WarehouseLocked, match=r"by another process \(it has not written its name yet\)"):
            with WarehouseLock(tmp_path, command="run", run_id="LOSER"):
                pass
    finally:
        os.close(fd)


def test_the_lock_is_reentrant_in_one_process_and_released_by_the_outermost(tmp_path):
    with WarehouseLock(tmp_path, command="run", run_id="OUTER"):
        with WarehouseLock(tmp_path, command="run", run_id="INNER"):  # run_pipeline under the run command
            pass
        holder = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from dlq_pipeline.warehouse.locks import WarehouseLock\n"
                "try:\n    WarehouseLock(sys.argv[1], command='x').__enter__()\n"
                "except Exception as e:\n    print(type(e).__name__)",
                str(tmp_path),
            ],
            capture_output=True,
            text=True,
            env=repo_env(),
        )
        assert holder.stdout == "WarehouseLocked\n"  # still held after the inner one ended
    with WarehouseLock(tmp_path, command="run", run_id="AGAIN"):
        pass


def test_a_warehouse_that_is_not_a_file_system_path_needs_storage_lock_false(tmp_path):
    def storage(**values):
        return StorageSettings.from_config(load_config(overrides={"storage": values}))

    s3 = storage(path="s3a://bucket/dlq")
    with pytest.raises(LockUnavailable, match="storage.lock = false"):
        writer_lock(s3, command="ingest")
    off = storage(path="s3a://bucket/dlq", lock=False)
    assert isinstance(writer_lock(off, command="ingest"), NoLock)
    dbfs = storage(path="dbfs:/dlq/wh")
    assert writer_lock(dbfs, command="ingest").path == Path("/dbfs/dlq/wh/_locks/warehouse.lock")
    # Delta needs no file lock there: its writer lease (dlq_pipeline.warehouse.lease) guards it
    for uri in ("s3a://bucket/dlq", "hdfs:///dlq/wh", "abfss://c@acct.dfs.core.windows.net/dlq"):
        assert isinstance(writer_lock(storage(path=uri, format="delta"), command="run"), NoLock)
    local_delta = writer_lock(storage(path=str(tmp_path / "wh"), format="delta"), command="run")
    assert isinstance(local_delta, WarehouseLock)  # a local Delta warehouse takes both
    assert held_warehouse_lock(tmp_path / "wh") is None
    with local_delta:
        assert held_warehouse_lock(tmp_path / "wh") == (tmp_path / "wh" / "_locks" / "warehouse.lock").absolute()
    assert held_warehouse_lock(tmp_path / "wh") is None

    dump = tmp_path / "x.dmp"
    dump.write_text("")
    result = CliRunner().invoke(cli, ["ingest", str(dump), "--warehouse", "s3a://bucket/dlq"])
    assert result.exit_code == 2 and "cannot be locked" in result.stderr


def test_bad_lease_settings_exit_2_before_anything_is_touched(tmp_path):
    dump = tmp_path / "x.dmp"
    dump.write_text("")
    result = CliRunner().invoke(
        cli,
        [
            "ingest",
            str(dump),
            "--warehouse",
            str(tmp_path / "wh"),
            "--format",
            "delta",
            "--set",
            "storage.lease_seconds=1",
            "--set",
            "storage.lease_wait=-3",
        ],
    )
    assert result.exit_code == 2
    assert result.stderr == (
        "error: <defaults>: 'storage.lease_seconds' must be at least 5 (a heartbeat renews it "
        "every third)\nerror: <defaults>: 'storage.lease_wait' must be at least 0\n"
    )
    assert not (tmp_path / "wh").exists()
