"""`start_python_workers`: a local session's Python workers are started in the background,
once, with what classify's and replay's tasks import, and the next Python task runs in one
of them; elsewhere it does nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from dlq_pipeline.engine import workers
from tests.support import REPO, repo_env

pytestmark = pytest.mark.spark


def test_the_next_python_task_runs_in_a_started_worker_with_its_modules_imported(tmp_path):
    result = tmp_path / "result.json"
    env = repo_env()
    done = subprocess.run(
        [sys.executable, str(REPO / "tests" / "spark" / "workers_job.py"), str(result)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(result.read_text())
    assert 1 <= len(got["pids"]) <= 2  # local[2]: two tasks, in one worker or two
    assert got["again"] is False  # once per SparkContext
    assert got["task_pid"] in got["pids"]
    assert got["modules_found"] == got["modules"]


class _Context:
    def __init__(self, master: str):
        self.master, self.defaultParallelism = master, 2

    def setLocalProperty(self, key: str, value: str) -> None:
        pass


def test_nothing_is_started_for_a_cluster_master_or_without_a_spark_context():
    assert workers.start_python_workers(SimpleNamespace(sparkContext=_Context("spark://host:7077"))) is None

    class Connect:
        @property
        def sparkContext(self):
            raise RuntimeError("[JVM_ATTRIBUTE_NOT_SUPPORTED] sparkContext is not supported in Spark Connect")

    assert workers.start_python_workers(Connect()) is None


def test_a_failed_start_leaves_no_workers_and_raises_nothing():
    class Broken:
        sparkContext = _Context("local[2]")

        def range(self, *args, **kwargs):
            raise RuntimeError("the session was stopped")

    started = workers.start_python_workers(Broken())
    assert started.result(timeout=30) == []
    assert workers.start_python_workers(Broken()) is None  # tried once: not again
