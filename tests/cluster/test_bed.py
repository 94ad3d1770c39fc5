"""The test bed itself: a file written to the mini HDFS through WebHDFS is read back by a job
on the standalone cluster, in Python workers that are not the driver's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = str(Path(__file__).with_name("probe_job.py"))


def test_standalone_cluster_reads_what_was_written_to_hdfs(bed):
    text = "".join(f"line {i}\n" for i in range(500)).encode()
    bed.hdfs.put("/bed/probe.txt", text)
    assert bed.hdfs.read("/bed/probe.txt") == text
    done = subprocess.run(
        [sys.executable, PROBE, bed.master, bed.hdfs.uri + "/bed/probe.txt", json.dumps(bed.spark_conf())],
        env=bed.spark_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["master"] == bed.master
    assert result["lines"] == [f"line {i}" for i in range(500)]
    # the Python workers were forked by an executor JVM, not by the driver's
    assert result["driver_pid"] not in result["worker_pids"] + result["worker_parents"]
    executors = list((bed.root / "work").glob("app-*/*/stderr"))
    assert executors, "no executor ran in the worker's work dir"
