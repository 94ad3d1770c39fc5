"""A normal run's stderr is our own progress only; the JVM's start-up and WARN lines come
through the logger ``dlq_pipeline.jvm`` and show with -v (spark/session.py). `run` is the
command tested: every stage (ingest, decode, classify, replay, summary) starts Spark work."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.engine.session import jvm_line_level
from tests.support import REPO

pytestmark = pytest.mark.spark

CLI = Path(sys.executable).with_name("dlq-pipeline")
# What `run` itself prints on stderr: the stage headers, ingest's plan and per-file lines,
# each stage's task ticks.
OUR_LINES = re.compile(r"(\[\d+/\d+\] \w+|ingest: .*|(classify|replay): \d+/\d+ \w+ done)$")
RULES = REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules"
JVM_NOISE = ("WARN", "WARNING", "log4j", "Using Spark", "setLogLevel", "NativeCodeLoader", "incubator")


@pytest.mark.parametrize(
    "line, level",
    [
        ("26/11/23 18:33:32 WARN Utils: Your hostname, vm, resolves to a loopback address", logging.INFO),
        ("26/11/23 18:33:37 WARN NativeCodeLoader: Unable to load native-hadoop library", logging.INFO),
        ("26/11/23 18:36:01 INFO SparkContext: Running Spark version 4.2.0", logging.INFO),
        ("26/11/23 18:36:01 ERROR Executor: Exception in task 0.0 in stage 1.0 (TID 1)", logging.ERROR),
        ("WARNING: Using incubator modules: jdk.incubator.vector", logging.INFO),
        ("Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties", logging.INFO),
        ("Traceback (most recent call last):", logging.WARNING),  # a Python worker's: shown
        ("java.lang.OutOfMemoryError: Java heap space", logging.WARNING),
    ],
)
def test_each_jvm_line_gets_the_level_that_decides_whether_it_shows(line, level):
    assert jvm_line_level(line) == level


def _run(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess:
    dumps = tmp_path / "dumps"
    if not dumps.exists():
        write_generated(dumps, 20, seed=5)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DLQ_PIPELINE_LOG", "PYSPARK_SUBMIT"))}
    warehouse = tmp_path / f"wh{len(list(tmp_path.glob('wh*')))}"
    return subprocess.run(
        [
            str(CLI),
            *flags,
            "run",
            "--input",
            str(dumps),
            "--rules",
            str(RULES),
            "--target",
            "dry-run",
            "--warehouse",
            str(warehouse),
            "--set",
            "spark.master=local[1]",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def test_a_normal_command_prints_only_our_progress_and_minus_v_shows_the_jvm(tmp_path):
    quiet = _run(tmp_path)
    assert quiet.returncode in (0, 3), quiet.stderr  # 3: generated DLQs hold messages without a header
    lines = [line for line in quiet.stderr.splitlines() if line.strip()]
    assert lines and all(OUR_LINES.match(line) for line in lines), quiet.stderr
    assert not any(noise in quiet.stderr for noise in JVM_NOISE)

    verbose = _run(tmp_path, "-v", "--log-format", "json")
    assert verbose.returncode in (0, 3), verbose.stderr
    records = [json.loads(line) for line in verbose.stderr.splitlines() if line.startswith("{")]
    jvm = [r["message"] for r in records if r["logger"] == "dlq_pipeline.jvm"]
    assert any("incubator modules" in m or "log4j" in m for m in jvm), verbose.stderr[-2000:]
    assert any(" WARN " in m for m in jvm), verbose.stderr[-2000:]  # Spark's own warnings, at -v
    # under --log-format json nothing the JVM printed reaches stderr outside a JSON record
    assert not any(
        noise in line for line in verbose.stderr.splitlines() if not line.startswith("{") for noise in JVM_NOISE
    )
