"""Large messages in CI: the whole `run` over large messages with a heap scaled down.

The target (``make bench``, section 6, ``memory.pipeline``) is 100 messages of 100 MB, MQ's
maximum, through ingest -> decode -> classify -> replay to ``dir:`` with a 2 GB heap; two
such messages take about four minutes here. CI scales both down: a fresh process (its own
JVM, ``spark.driver.memory=512m``, local[2]) runs the benchmark's own child
(``benchmarks/memory.py`` ``child_memory_pipeline``) over two messages of 16 MiB, the
smallest that takes ingest's large-message path (``LARGE_MESSAGE_BYTES``), one per task.
Spark's own objects take a larger share of 512 MB than of 2 GB (24 MiB messages would run
replay's shuffle out of heap), so this is 1/32 of the heap where the target
is 1/20: what it catches is a stage that holds a message more than a few times, or all of
them at once (caching the landing in memory did). A heap this small takes the paths 100 MB
messages take in 2 GB: ingest writes them with one task, replay carries them in pieces
(`ingest.large_message_tasks`, `replay.pieces`). The files replay wrote must hold each
message's exact bytes (docs/performance.md, "Large messages in fewer tasks and in pieces")."""

from __future__ import annotations

import hashlib

import pytest

from benchmarks.common import run_child
from benchmarks.data import large_messages_dump
from dlq_pipeline.dumps.records import DumpedMessage
from dlq_pipeline.dumps.sources import read_source
from dlq_pipeline.engine.large_messages import LARGE_MESSAGE_BYTES

pytestmark = [pytest.mark.spark, pytest.mark.slow]

HEAP = "512m"
SIZE = 16 * 1024 * 1024
COUNT = 2


def _digests(path) -> list[str]:
    records = list(read_source(str(path)))
    assert all(isinstance(r, DumpedMessage) for r in records), records
    return sorted(hashlib.sha256(r.data).hexdigest() for r in records)


def test_run_replays_large_messages_exactly_with_a_512_mb_heap(tmp_path):
    assert SIZE >= LARGE_MESSAGE_BYTES
    dump = large_messages_dump(tmp_path / "large.dmp", COUNT, SIZE)
    got = run_child(
        "memory_pipeline",
        {"master": "local[2]", "dump": dump, "work": str(tmp_path), "heap": HEAP},
        tmp_path / "children",
        timeout=900,
    )
    assert (got["heap"], got["landed"], got["outcomes"]) == (HEAP, COUNT, {"delivered": COUNT})
    written = sorted((tmp_path / "out").rglob("*.dmp"))
    assert len(written) == 1  # the catch-all rule forwards every message to one queue: one file
    assert _digests(written[0]) == _digests(dump)  # FWD HEADER(YES): the message as it was, MQDLH and all
