"""Section 3, ingest: the JVM reader's parse and `ingest` (parse, number, deduplicate, store),
on 1 and 2 cores, against the Python reader and the limits: the dump's text lines, and the
parse's rows written in one pass (the store's limit)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from benchmarks import data
from benchmarks.common import Context, Sizes, holds, interleaved, median, noop, ratio, summary

INGEST_SPEEDUP_SHARE = 0.95  # the target: ingest's 1 -> 2 core speed-up over the store limit's own


def python_parse(path: str, repeats: int) -> dict:
    """One core, no Spark: ``read_dump`` against reading the lines (bench_dump_parse.py)."""
    from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump

    size = os.path.getsize(path)
    count = {}

    def lines():
        n = 0
        with open(path, "rb", buffering=1 << 20) as f:
            for _ in f:
                n += 1
        count["lines"] = n

    def parse():
        count["messages"] = sum(1 for _ in read_dump(path))

    times = interleaved({"text_lines": lines, "read_dump": parse}, repeats, warmup=False)
    t = {k: median(v) for k, v in times.items()}
    return {
        "variants": {k: summary(v, count["messages"], size / 1e6) for k, v in times.items()},
        "read_dump_over_text_lines": ratio(t["read_dump"], t["text_lines"]),
    }


def as_read(raw):
    """``raw`` (`scan`'s rows) with the positions its reader gives them as the stored ones
    (``source_index``, ``source_line``): no split bases added, as for files read whole."""
    from pyspark.sql import functions as F

    return raw.withColumn("source_index", F.col("reader_index")).withColumn("source_line", F.col("reader_line"))


def child_ingest(params: dict) -> dict:
    """In a fresh process with ``params['master']``: text lines vs parse (the dump's records
    as rows, ``scan``: the JVM reader, ours, and the Python reader through the ``mqdump`` data
    source; the same reader by `mapInArrow`; the data source as a user reads it, a whole file
    per task) vs ingest (parse, number, deduplicate and store) of one dump."""
    from dlq_pipeline.config.settings import IngestSettings
    from dlq_pipeline.dumps.dmpmqmsg import MAX_LINE_LENGTH
    from dlq_pipeline.dumps.plan import plan_work
    from dlq_pipeline.dumps.spark import DEFAULT_MAX_MESSAGE_BYTES, register
    from dlq_pipeline.engine.session import get_spark
    from dlq_pipeline.ingest.spark import arrow_scan, ingest, jvm_items, messages_rows, scan
    from dlq_pipeline.warehouse.storage import Storage

    spark = get_spark({"master": params["master"], "app_name": "bench-ingest"})
    path, split, work = params["path"], params["split_bytes"], Path(params["work"])
    runs = {"n": 0}

    def stored():
        runs["n"] += 1
        wh = work / f"wh-{runs['n']}"
        ingest(
            spark,
            Storage(spark, path=str(wh)),
            [path],
            run_id=f"bench-{runs['n']}",
            settings=IngestSettings(split_bytes=split),
        )
        shutil.rmtree(wh, ignore_errors=True)

    def parsed_and_stored():
        """The limit of any store: the parse's message rows written to the table in one
        pass, as `ingest` writes them, with nothing before (no per-item counts, cache or
        deduplication; positions as the reader gives them)."""
        runs["n"] += 1
        wh = work / f"wh-{runs['n']}"
        rows = messages_rows(
            as_read(scan(spark, plan_work([path], split), jvm=jvm)),
            run_id=f"bench-{runs['n']}",
            landed_at=None,
            unique=True,
        )
        Storage(spark, path=str(wh)).append("messages", rows)
        shutil.rmtree(wh, ignore_errors=True)

    items = plan_work([path], split)
    jvm = jvm_items(spark, items)
    if not jvm:
        raise RuntimeError("the JVM reader is not available: run `make jvm-reader`")
    register(spark)
    limits = (MAX_LINE_LENGTH, DEFAULT_MAX_MESSAGE_BYTES)
    variants = {
        "text_lines": lambda: noop(spark.read.text(path)),
        "parse": lambda: noop(scan(spark, plan_work([path], split), jvm=jvm)),
        "parse_python_reader": lambda: noop(scan(spark, plan_work([path], split))),
        "parse_python_map_in_arrow": lambda: noop(
            arrow_scan(spark, list(enumerate(plan_work([path], split))), *limits)
        ),
        "data_source": lambda: noop(spark.read.format("mqdump").load(path)),
        "parse_and_store": parsed_and_stored,
        "ingest_store": stored,
    }
    if params.get("only"):
        variants = {k: v for k, v in variants.items() if k in params["only"]}
    times = interleaved(variants, params["repeats"])
    return {"times": times, "cores": spark.sparkContext.defaultParallelism}


def bench_ingest(spark, sizes: Sizes, work: Path, ctx: Context) -> dict:
    dump = data.dumps(work / "ingest-dump", sizes.ingest_messages, seed=202, files=1, max_size=256 * 1024)[0]
    size = os.path.getsize(dump)
    split = max(size // 8, 1024)
    from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump

    messages = sum(1 for _ in read_dump(dump))
    out = {
        "dump_mb": round(size / 1e6, 1),
        "messages": messages,
        "split_bytes": split,
        "python_one_core": python_parse(dump, sizes.repeats),
        "spark": {},
    }
    for cores in (1, 2):
        got = ctx.child(
            "ingest",
            {
                "master": f"local[{cores}]",
                "path": dump,
                "split_bytes": split,
                "work": str(work / f"ingest-{cores}"),
                "repeats": sizes.repeats,
            },
        )
        out["spark"][f"local[{cores}]"] = {k: summary(v, messages, size / 1e6) for k, v in got["times"].items()}
    one, two = out["spark"]["local[1]"], out["spark"]["local[2]"]
    out["ratios"] = {
        "parse_over_text_lines_1_core": ratio(one["parse"]["seconds"], one["text_lines"]["seconds"]),
        "parse_over_text_lines_2_cores": ratio(two["parse"]["seconds"], two["text_lines"]["seconds"]),
        "python_reader_over_parse_1_core": ratio(one["parse_python_reader"]["seconds"], one["parse"]["seconds"]),
        # the mqdump source against the same reader by mapInArrow (what it replaced), and the
        # source as a user reads a dump (one task for the file) against ingest's split read
        "python_reader_over_map_in_arrow_1_core": ratio(
            one["parse_python_reader"]["seconds"], one["parse_python_map_in_arrow"]["seconds"]
        ),
        "data_source_over_python_reader_1_core": ratio(
            one["data_source"]["seconds"], one["parse_python_reader"]["seconds"]
        ),
        "data_source_over_python_reader_2_cores": ratio(
            two["data_source"]["seconds"], two["parse_python_reader"]["seconds"]
        ),
        "data_source_over_parse_2_cores": ratio(two["data_source"]["seconds"], two["parse"]["seconds"]),
        "ingest_over_parse_1_core": ratio(one["ingest_store"]["seconds"], one["parse"]["seconds"]),
        # the store's limit: no ingest can beat the parse written in one pass
        "parse_and_store_over_parse_1_core": ratio(one["parse_and_store"]["seconds"], one["parse"]["seconds"]),
        "ingest_over_parse_and_store_1_core": ratio(one["ingest_store"]["seconds"], one["parse_and_store"]["seconds"]),
        "parse_speedup_1_to_2_cores": ratio(one["parse"]["seconds"], two["parse"]["seconds"]),
        "ingest_speedup_1_to_2_cores": ratio(one["ingest_store"]["seconds"], two["ingest_store"]["seconds"]),
        "text_lines_speedup_1_to_2_cores": ratio(one["text_lines"]["seconds"], two["text_lines"]["seconds"]),
    }
    # The JVM reader parses the dump above in about a second on one core, so a job's fixed
    # cost (scheduling, commit: about 0.15 s) is a large share of the two-core time; the
    # same comparison on a dump four times as large shows the scaling once that is amortized.
    large = data.dumps(work / "ingest-dump-large", 4 * sizes.ingest_messages, seed=202, files=1, max_size=256 * 1024)[0]
    large_size = os.path.getsize(large)
    out["large"] = {"dump_mb": round(large_size / 1e6, 1), "messages": 4 * sizes.ingest_messages, "spark": {}}
    for cores in (1, 2):
        got = ctx.child(
            "ingest",
            {
                "master": f"local[{cores}]",
                "path": large,
                "split_bytes": max(large_size // 8, 1024),
                "work": str(work / f"ingest-large-{cores}"),
                "repeats": sizes.repeats,
                "only": ["text_lines", "parse", "parse_and_store", "ingest_store"],
            },
        )
        out["large"]["spark"][f"local[{cores}]"] = {
            k: summary(v, 4 * sizes.ingest_messages, large_size / 1e6) for k, v in got["times"].items()
        }
    one, two = out["large"]["spark"]["local[1]"], out["large"]["spark"]["local[2]"]
    out["ratios"]["parse_speedup_1_to_2_cores_large_dump"] = ratio(one["parse"]["seconds"], two["parse"]["seconds"])
    # the target's own figure: ingest (parse, number, deduplicate, store) of the one large dump
    out["ratios"]["ingest_speedup_1_to_2_cores_large_dump"] = ratio(
        one["ingest_store"]["seconds"], two["ingest_store"]["seconds"]
    )
    out["ratios"]["text_lines_speedup_1_to_2_cores_large_dump"] = ratio(
        one["text_lines"]["seconds"], two["text_lines"]["seconds"]
    )
    # the store's own limit on two cores: the parse written in one pass, with nothing else
    out["ratios"]["parse_and_store_speedup_1_to_2_cores_large_dump"] = ratio(
        one["parse_and_store"]["seconds"], two["parse_and_store"]["seconds"]
    )
    speedups = out["ratios"]
    out["ratios"]["ingest_speedup_over_text_lines_large_dump"] = ratio(
        speedups["ingest_speedup_1_to_2_cores_large_dump"], speedups["text_lines_speedup_1_to_2_cores_large_dump"]
    )
    out["ratios"]["ingest_speedup_over_parse_and_store_large_dump"] = ratio(
        speedups["ingest_speedup_1_to_2_cores_large_dump"], speedups["parse_and_store_speedup_1_to_2_cores_large_dump"]
    )
    value = out["ratios"]["ingest_speedup_over_parse_and_store_large_dump"]
    out["targets"] = {
        # ingest's 1 -> 2 core speed-up against the store limit's own (the parse written in one pass)
        "ingest_speedup_over_store_limit_speedup": {
            "value": value,
            "limit": INGEST_SPEEDUP_SHARE,
            "holds": holds(value, INGEST_SPEEDUP_SHARE, below=False),
            "ingest_speedup": speedups["ingest_speedup_1_to_2_cores_large_dump"],
            "store_limit_speedup": speedups["parse_and_store_speedup_1_to_2_cores_large_dump"],
        }
    }
    return out
