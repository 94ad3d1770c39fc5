"""Fixtures of the ``cluster`` tier: one HDFS and one Spark standalone cluster for the session
(tests/cluster/bed.py), stopped at the end even when a test or the start fails. Every test in
this folder carries the ``cluster`` marker."""

from __future__ import annotations

import pytest

from tests.cluster import bed as testbed


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/cluster/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def bed(tmp_path_factory):
    started = testbed.start(tmp_path_factory.mktemp("cluster-bed"))
    try:
        yield started
    finally:
        testbed.stop(started)
