"""Fixtures of the ``cluster`` tier: one HDFS and one Spark standalone cluster for this folder's
tests (tests/cluster/bed.py), stopped when they are done (not kept for the rest of the
session) even when a test or the start fails. Every test in
this folder carries the ``cluster`` marker (tests/conftest.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dlq_pipeline.dumps.generator import write_generated
from tests.cluster import bed as testbed
from tests.support import REPO


@pytest.fixture(scope="package")
def bed(tmp_path_factory):
    started = testbed.start(tmp_path_factory.mktemp("cluster-bed"))
    try:
        yield started
    finally:
        testbed.stop(started)


FIXTURES = REPO / "tests" / "fixtures"


@pytest.fixture(scope="session")
def dumps(tmp_path_factory) -> Path:
    """Three generated dumps (two folders), a real amqsbcg listing, a stray text file and a
    file the listing skips."""
    root = tmp_path_factory.mktemp("inputs") / "dumps"
    write_generated(root, 150, seed=23, files=2, max_size=4096)
    write_generated(root / "more", 60, seed=24, files=1, qmgr="QM2", max_size=4096)
    shutil.copy(FIXTURES / "amqsbcg-field-mq91-rfh2.txt", root / "more" / "listing.txt")
    (root / "more" / "notes.txt").write_text("not a dump\n")  # one quarantine record
    (root / "_ignored.dmp").write_text("skipped: starts with _\n")
    # whole seconds, which HDFS keeps too (`Hdfs.upload`): a file without a Created stamp is
    # recorded at its modification time, the same here and there
    for f in root.rglob("*"):
        if f.is_file():
            os.utime(f, (int(f.stat().st_mtime),) * 2)
    return root


@pytest.fixture(scope="package")
def hdfs_dumps(bed, dumps) -> str:
    """`dumps` copied to the bed's HDFS; its hdfs:// URI."""
    uploaded = bed.hdfs.upload(dumps, "/dlq/dumps")
    assert len(uploaded) == 6
    return f"{bed.hdfs.uri}/dlq/dumps"


@pytest.fixture(scope="session")
def packed_env() -> Path:
    """The packed environment spark-submit ships with --archives (tests/packed.py)."""
    from tests.packed import packed_env as build

    return build()
