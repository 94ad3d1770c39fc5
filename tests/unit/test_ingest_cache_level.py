"""How ingest caches its one read of the dumps (`ingest.spark.read_cache_level`)."""

from __future__ import annotations

from pyspark import StorageLevel

from dlq_pipeline.ingest.spark import MEMORY_CACHE_SHARE, read_cache_level

MB = 2**20


def test_dumps_up_to_half_the_storage_memory_are_cached_in_memory_as_built():
    # deserialized: PySpark's MEMORY_AND_DISK is the serialized level (a copy in and out)
    storage = 1049 * MB  # a 2 GB heap's storage memory
    assert read_cache_level(int(storage * MEMORY_CACHE_SHARE), storage) == StorageLevel.MEMORY_AND_DISK_DESER
    assert read_cache_level(300 * MB, storage) == StorageLevel.MEMORY_AND_DISK_DESER
    # 100 messages of 100 MB (a 21 GB dump) filled it and left no heap to build a cached batch
    assert read_cache_level(21_000 * MB, storage) == StorageLevel.DISK_ONLY
    assert read_cache_level(int(storage * MEMORY_CACHE_SHARE) + 1, storage) == StorageLevel.DISK_ONLY


def test_unknown_storage_memory_keeps_the_memory_cache():
    assert read_cache_level(21_000 * MB, None) == StorageLevel.MEMORY_AND_DISK_DESER


def test_large_messages_run_in_as_many_tasks_as_the_managed_memory_holds():
    """`fitting_tasks`: 100 MB messages (6 copies a task) in a 2 GB heap's 1,049 MB run one
    task at a time in local[2]; a 4 GB heap holds three of its four; every slot fits: no cap."""
    from dlq_pipeline.engine.large_messages import LARGE_MESSAGE_TASK_COPIES
    from dlq_pipeline.engine.session import fitting_tasks

    task = LARGE_MESSAGE_TASK_COPIES * 100 * MB
    assert fitting_tasks(1, 1049 * MB, 2, task) == 1
    assert fitting_tasks(1, 2278 * MB, 4, task) == 3
    assert fitting_tasks(1, 2278 * MB, 2, task) is None
    assert fitting_tasks(4, 1049 * MB, 16, task) == 4  # one per executor, never none
    assert fitting_tasks(4, 10_000 * MB, 16, task) is None
    assert fitting_tasks(3, 2278 * MB, 8, 0) is None
    for executors in range(1, 5):
        for slots in range(executors, 20):
            for managed in (0, 50 * MB, 700 * MB, 5000 * MB):
                got = fitting_tasks(executors, managed, slots, task)
                assert got is None or executors <= got < slots
