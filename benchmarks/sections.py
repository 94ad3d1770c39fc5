"""The sections of `make bench`, by the name each has in results.json and ``--only``, and the
child tasks they run in fresh processes (``--child``).

Each ``bench_<name>(spark, sizes, work, ctx)`` returns the figures and ratios that go under its
key in results.json. Work that needs its own SparkContext (another master, a cold start, a clean
memory peak) runs through ``ctx.child`` in a fresh process, by its name here.
"""

from __future__ import annotations

from benchmarks import classify, decode, end_to_end, first_run, incremental, ingest, memory, replay, storm

BENCHES = {
    "decode": decode.bench_decode,
    "classify": classify.bench_classify,
    "ingest": ingest.bench_ingest,
    "replay": replay.bench_replay,
    "end_to_end": end_to_end.bench_end_to_end,
    "memory": memory.bench_memory,
    "storm": storm.bench_storm,
    "incremental": incremental.bench_incremental,
    "first_run": first_run.bench_first_run,
}
CHILDREN = {
    "ingest": ingest.child_ingest,
    "pipeline": end_to_end.child_pipeline,
    "reference": end_to_end.child_reference,
    "cold_stages": end_to_end.child_cold_stages,
    "memory": memory.child_memory,
    "memory_pipeline": memory.child_memory_pipeline,
    "storm": storm.child_storm,
    "incremental_run": incremental.child_incremental_run,
}
