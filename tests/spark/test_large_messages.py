"""Issue 16 part 6 in CI: messages of MQ's maximum size (100 MB) land with a 2 GB Spark heap.

A fresh process (its own JVM with ``spark.driver.memory=2g``, local[2]) ingests a generated
dump of two 100 MB messages, through the benchmark's own child (``benchmarks/stages.py``
``child_memory_pipeline``), so CI and ``make bench`` measure the same code. The whole
pipeline over 100 such messages (ingest -> decode -> classify -> replay to ``dir:``) is the
benchmark's (``make bench``, section 6)."""

from __future__ import annotations

import pytest

from benchmarks.common import run_child
from benchmarks.data import large_messages_dump

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MB100 = 100 * 1024 * 1024


def test_two_messages_of_100_mb_land_with_a_2_gb_heap(tmp_path):
    dump = large_messages_dump(tmp_path / "large.dmp", 2, MB100)
    got = run_child("memory_pipeline", {"master": "local[2]", "dump": dump, "work": str(tmp_path),
                                        "ingest_only": True}, tmp_path / "children", timeout=900)
    assert (got["heap"], got["landed"]) == ("2g", 2)
