"""Section 6, memory: the peak RSS of decode over large messages (ours: the header slice)
against the UDF fed the whole payload and decode over small messages; and `run` over 100
messages of 100 MB in a 2 GB heap."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks import data
from benchmarks.common import Context, PeakMemory, Sizes, bytes_under, noop, ratio


def memory_input(out: Path, messages: int, payload: int, seed: int = 505) -> str:
    """``messages`` generated messages with an MQDLH, each padded to ``payload`` bytes with
    random bytes, as Parquet row groups of about 128 MB (what Spark writes)."""
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq

    from dlq_pipeline.dumps.generator import generate_messages

    params = {"messages": messages, "payload": payload, "seed": seed}
    stamp = out.with_suffix(".json")
    if out.exists() and stamp.exists() and json.loads(stamp.read_text()) == params:
        return str(out)
    rng = random.Random(seed)
    schema = pa.schema(
        [
            ("message_key", pa.string()),
            ("data", pa.binary()),
            ("encoding", pa.int32()),
            ("ccsid", pa.int32()),
            ("format", pa.string()),
        ]
    )
    per_group = max(1, (128 << 20) // max(payload, 1))
    gen = generate_messages(messages, seed, {"no_dlh": 0, "empty": 0, "trigger": 0}, max_size=4096)
    with pq.ParquetWriter(out, schema) as writer:
        rows = []
        for i, msg in enumerate(gen):
            body = msg.data[:payload] + rng.randbytes(max(0, payload - len(msg.data)))
            rows.append(
                {
                    "message_key": f"m{i}",
                    "data": body,
                    "encoding": msg.md.encoding,
                    "ccsid": msg.md.ccsid,
                    "format": msg.md.format,
                }
            )
            if len(rows) == per_group:
                writer.write_table(pa.Table.from_pylist(rows, schema))
                rows = []
        if rows:
            writer.write_table(pa.Table.from_pylist(rows, schema))
    stamp.write_text(json.dumps(params))
    return str(out)


def child_memory(params: dict) -> dict:
    """Decode one Parquet input in a fresh process and sample the peak RSS of the JVM and of
    Spark's Python workers. ``whole_data`` feeds the UDF the whole payload instead of the
    header slice: what decode must not do."""
    from pyspark.sql import functions as F

    from dlq_pipeline.engine.session import get_spark
    from dlq_pipeline.mq.spark import decode_headers, decoded_struct, decoder

    spark = get_spark({"master": params["master"], "app_name": "bench-memory"})
    df = spark.read.parquet(params["path"])
    names = [f.name for f in decoded_struct().fields]
    if params.get("whole_data"):
        decoded = df.select(
            decoder()(
                F.col("data"),
                F.col("data"),
                F.lit(None).cast("binary"),
                F.length("data"),
                F.col("encoding"),
                F.col("ccsid"),
                F.col("format"),
            ).alias("d")
        )
        plan = decoded.select("d.*")
    else:
        plan = decode_headers(df).select("message_key", *names)
    with PeakMemory() as peak:
        began = time.perf_counter()
        noop(plan)
        seconds = time.perf_counter() - began
    return {"seconds": seconds, **peak.as_dict()}


PIPELINE_HEAP = "2g"  # the Spark heap 100 messages of 100 MB must go through


# Disk a `child_memory_pipeline` run needs, in payload bytes: while ingest writes, the dump
# (hex: 2.1x), the disk-only cache (1x) and the `messages` table (1x); the dump is deleted
# once landed; while replay runs, the table (1x), its two shuffles of the data in pieces
# (2.2-2.7x) and the `dir:` file (hex: 2.1x, written once: linked into place, not copied).
# Measured at replay's peak: 5.3x at 20 x 100 MB, 5.4x at 100 x 100 MB.
PIPELINE_DISK_FACTOR = 6.0


def failure_summary(text: str, limit: int = 2000) -> str:
    """What a failed child's stderr says that matters: its first distinct error lines (a
    JVM's OutOfMemoryError comes long before the Python traceback's end), then its end."""
    errors = []
    for line in text.splitlines():
        if ("Error" in line or "Exception" in line) and not line.lstrip().startswith("at ") and line not in errors:
            errors.append(line.strip()[:300])
    head = "\n".join(errors[:6])
    return (head + "\n...\n" + text[-(limit - len(head)) :] if head else text[-limit:])[: limit + 10]


def child_memory_pipeline(params: dict) -> dict:
    """``run`` (ingest -> decode -> classify -> replay to ``dir:``) over one dump of large
    messages, in a fresh local session with ``PIPELINE_HEAP`` of heap (``heap``: another, for
    tests/spark/test_large_messages.py); the peak RSS of the JVM and of the Python workers
    while it runs, and each stage's time. ``rules`` (a rules file) and ``target`` replace the
    catch-all FWD and the ``dir:`` target (benchmarks/storm.py: its rules, into a sim)."""
    from dlq_pipeline.config.settings import RunSettings, StorageSettings
    from dlq_pipeline.engine.session import get_spark
    from dlq_pipeline.pipeline import run_pipeline
    from dlq_pipeline.rules.parser import load_rules

    heap = params.get("heap", PIPELINE_HEAP)
    spark = get_spark(
        {"master": params["master"], "app_name": "bench-memory-run", "spark_conf": {"spark.driver.memory": heap}}
    )
    work = Path(params["work"])
    rules = params.get("rules")
    if not rules:
        rules = work / "catch-all.rules"
        rules.write_text(data.CATCH_ALL + "\n")
    settings = RunSettings(storage=StorageSettings(path=str(work / "warehouse")))

    def landed(line: str) -> None:
        """Once ingest has landed the dump it is not read again: deleted, the run fits the
        disk (`PIPELINE_DISK_FACTOR`)."""
        if params.get("delete_dump_when_landed") and line.endswith("] classify"):
            Path(params["dump"]).unlink(missing_ok=True)

    with PeakMemory() as peak:
        began = time.perf_counter()
        result = run_pipeline(
            spark,
            settings,
            load_rules(str(rules)),
            inputs=[params["dump"]],
            target=params.get("target") or f"dir:{work / 'out'}",
            run_id="bench-memory",
            progress=landed,
        )
        seconds = time.perf_counter() - began
    written = bytes_under(work / "out")
    return {
        "seconds": seconds,
        "heap": heap,
        "landed": result.messages_landed,
        "outcomes": result.outcomes,
        "durations": result.durations,
        "replayed_bytes": written,
        "dump_deleted_when_landed": not Path(params["dump"]).exists(),
        **peak.as_dict(),
    }


def bench_pipeline_memory(sizes: Sizes, work: Path, ctx: Context) -> dict:
    """100 messages of MQ's largest size through the whole pipeline in a 2 GB heap. The dump
    is generated in a temporary directory under ``work`` and deleted afterwards (100 messages
    of 100 MB are a 21 GB dump)."""
    n, size = sizes.pipeline_memory_messages, sizes.pipeline_memory_bytes
    work.mkdir(parents=True, exist_ok=True)
    need, free = PIPELINE_DISK_FACTOR * n * size, shutil.disk_usage(work).free
    if free < need:
        return {
            "messages": n,
            "payload_bytes": size,
            "passed": False,
            "error": f"not run: needs about {need / 1e9:.0f} GB free under {work}, {free / 1e9:.0f} GB are",
        }
    temp = Path(tempfile.mkdtemp(prefix="pipeline-memory-", dir=work))
    try:
        dump = data.large_messages_dump(temp / "large.dmp", n, size)
        got = ctx.child(
            "memory_pipeline", {"master": "local[2]", "dump": dump, "work": str(temp), "delete_dump_when_landed": True}
        )
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    got.update(messages=n, payload_bytes=size, passed=got["landed"] == n and got["outcomes"].get("delivered") == n)
    return got


def bench_memory(spark, sizes: Sizes, work: Path, ctx: Context) -> dict:
    n = sizes.memory_messages
    small = memory_input(work / f"memory-{n}x{sizes.memory_small_bytes}.parquet", n, sizes.memory_small_bytes)
    large = memory_input(work / f"memory-{n}x{sizes.memory_large_bytes}.parquet", n, sizes.memory_large_bytes)
    cases = {
        "small_payload": (small, False),
        "large_payload": (large, False),
        "large_payload_whole_data_udf": (large, True),
    }
    out = {
        "messages": n,
        "small_payload_bytes": sizes.memory_small_bytes,
        "large_payload_bytes": sizes.memory_large_bytes,
        "cases": {},
    }
    for name, (path, whole) in cases.items():
        out["cases"][name] = ctx.child("memory", {"master": "local[2]", "path": path, "whole_data": whole})
    if ctx.in_process:
        out["note"] = "in-process smoke run: peaks include the test session and are not comparable"

    def peak(case, kind):
        return out["cases"][case]["peak_rss_mb"].get(kind, 0.0)

    if sizes.pipeline_memory_messages:
        try:
            out["pipeline"] = bench_pipeline_memory(sizes, work, ctx)
        except Exception as exc:  # noqa: BLE001 - e.g. the child ran out of memory: report it, keep the rest
            out["pipeline"] = {
                "messages": sizes.pipeline_memory_messages,
                "payload_bytes": sizes.pipeline_memory_bytes,
                "passed": False,
                "error": failure_summary(getattr(exc, "stderr", str(exc))),
                "stderr_log": str(getattr(exc, "log", "")),
            }
    out["ratios"] = {
        "python_workers_large_over_small": ratio(
            peak("large_payload", "python_workers"), peak("small_payload", "python_workers")
        ),
        "jvm_large_over_small": ratio(peak("large_payload", "jvm"), peak("small_payload", "jvm")),
        "python_workers_whole_data_over_slice": ratio(
            peak("large_payload_whole_data_udf", "python_workers"), peak("large_payload", "python_workers")
        ),
    }
    return out
