"""How ingest caches its one read of the dumps (`spark.ingest.read_cache_level`)."""

from __future__ import annotations

from pyspark import StorageLevel

from dlq_pipeline.spark.ingest import MEMORY_CACHE_SHARE, read_cache_level

MB = 2**20


def test_dumps_up_to_half_the_storage_memory_are_cached_in_memory():
    storage = 1049 * MB  # a 2 GB heap's storage memory
    assert read_cache_level(int(storage * MEMORY_CACHE_SHARE), storage) == StorageLevel.MEMORY_AND_DISK
    assert read_cache_level(300 * MB, storage) == StorageLevel.MEMORY_AND_DISK
    # 100 messages of 100 MB (a 21 GB dump) filled it and left no heap to build a cached batch
    assert read_cache_level(21_000 * MB, storage) == StorageLevel.DISK_ONLY
    assert read_cache_level(int(storage * MEMORY_CACHE_SHARE) + 1, storage) == StorageLevel.DISK_ONLY


def test_unknown_storage_memory_keeps_the_memory_cache():
    assert read_cache_level(21_000 * MB, None) == StorageLevel.MEMORY_AND_DISK
