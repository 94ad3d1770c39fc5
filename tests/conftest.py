"""Shared fixtures. The SparkSession is started once for the whole suite (it takes ~5 s)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REAL_FIXTURES = REPO / "tests" / "fixtures" / "real"


@pytest.fixture(scope="session")
def real_fixtures() -> Path:
    """The files from real MQ installations, kept in the repository (tests/fixtures/real,
    with where each came from in its README.md): a clone needs nothing beside it."""
    return REAL_FIXTURES


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole suite, built by the project's session factory."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from dlq_pipeline.spark.session import get_spark

    session = get_spark({"master": "local[2]", "app_name": "dlq-pipeline-tests"})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory) -> Path:
    """The wheel `make package` builds, built once per session (tools/package.py --wheel-only)."""
    import subprocess

    dist = tmp_path_factory.mktemp("dist")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run([sys.executable, str(REPO / "tools" / "package.py"), "--dist", str(dist), "--wheel-only"],
                   env=env, check=True, capture_output=True, timeout=600)
    [wheel] = dist.glob("*.whl")
    return wheel
