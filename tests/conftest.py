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
