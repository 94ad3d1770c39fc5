"""Section 4, replay: the writer into the simulated queue manager over 1 to 4 partitions,
against its dry run and the partitions iterated without putting; and replay's read path from
the tables to the writer, each body read where it lies, against the bodies carried through the
join and the limit (the work items without bodies, plus one scan of the bodies)."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from benchmarks import data
from benchmarks.common import Context, Sizes, interleaved, median, noop, ratio, summary
from benchmarks.sim import fresh_sim

REPLAY_NOW = dt.datetime(2026, 11, 2)


def decided_warehouse(spark, work: Path, name: str, messages: int, seed: int):
    """(storage, decisions): a fresh warehouse ``work/name-wh`` holding ``messages`` generated
    messages (up to 64 KB each, their dumps kept in ``work/name-dumps``), decided by the
    starter rules at `REPLAY_NOW` (the decisions persisted: unpersist them when done)."""
    from dlq_pipeline.classify.spark import decide_pending
    from dlq_pipeline.ingest.spark import ingest
    from dlq_pipeline.rules.parser import load_rules
    from dlq_pipeline.warehouse.storage import Storage

    wh = work / f"{name}-wh"
    shutil.rmtree(wh, ignore_errors=True)
    dumps = data.dumps(work / f"{name}-dumps", messages, seed=seed, max_size=64 * 1024)
    storage = Storage(spark, path=str(wh))
    ingest(spark, storage, dumps, run_id="bench-ingest")
    decisions, _ = decide_pending(spark, storage, load_rules(data.STARTER_RULES), run_id="bench-decide", now=REPLAY_NOW)
    return storage, decisions


def bench_replay(spark, sizes: Sizes, work: Path, ctx: Context) -> dict:
    from pyspark.sql import functions as F

    from dlq_pipeline.config.settings import ReplaySettings
    from dlq_pipeline.replay.spark import partition_function, partition_rows, work_items
    from dlq_pipeline.replay.targets import open_target
    from dlq_pipeline.tables import LEDGER_COLUMNS

    storage, decisions = decided_warehouse(spark, work, "replay", sizes.replay_messages, seed=303)
    wh, now = Path(storage.path), REPLAY_NOW
    n = decisions.count()
    puts = decisions.where(F.col("action").isin("RETRY", "FWD")).count()
    settings = ReplaySettings()
    out = {"messages": n, "puts": puts, "latency_ms": ctx.latency_ms or {}, "partitions": {}}
    runs = {"n": 0}
    for parts in sizes.replay_partitions:
        items = work_items(storage, decisions, parts, set()).cache()
        items.count()

        def through_writer():
            runs["n"] += 1
            target = open_target("sim:QMHUB01", warehouse=wh)
            fresh_sim(Path(target.location), "QMHUB01", ctx.latency_ms)
            run = partition_function(target, settings, f"bench-{runs['n']}", now, str(wh / "_checkpoints"), None)
            noop(partition_rows(items, run))

        def writer_dry_run():
            runs["n"] += 1
            target = open_target("dry-run", warehouse=wh)
            run = partition_function(target, settings, f"bench-{runs['n']}", now, str(wh / "_checkpoints"), None)
            noop(partition_rows(items, run))

        def iterate_only():
            def run(index, items):
                for item in items:
                    yield (
                        "bench",
                        item.message_key,
                        item.action,
                        item.rule_line,
                        item.attempt,
                        item.target_q,
                        item.target_qmgr,
                        "ignored",
                        None,
                        None,
                        now,
                        now,
                        index,
                        None,
                    )

            assert len(LEDGER_COLUMNS) == 14
            noop(partition_rows(items, run))

        times = interleaved(
            {"writer_to_sim": through_writer, "writer_dry_run": writer_dry_run, "iterate_only": iterate_only},
            sizes.repeats,
        )
        t = {k: median(v) for k, v in times.items()}
        out["partitions"][str(parts)] = {
            "variants": {k: summary(v, n) for k, v in times.items()},
            "puts_per_s": round(puts / t["writer_to_sim"], 1),
            "overhead_us_per_put": round((t["writer_to_sim"] - t["iterate_only"]) / max(puts, 1) * 1e6, 1),
            # the writer's own work (rebuild each message, its ledger row) without MQ calls ...
            "writer_own_us_per_message": round((t["writer_dry_run"] - t["iterate_only"]) / max(n, 1) * 1e6, 1),
            # ... and what the puts, commits and checkpoints into the simulated queue manager add
            "sim_and_checkpoints_us_per_put": round((t["writer_to_sim"] - t["writer_dry_run"]) / max(puts, 1) * 1e6, 1),
            "writer_over_iterate": ratio(t["writer_to_sim"], t["iterate_only"]),
        }
        items.unpersist()
    decisions.unpersist()
    out["read_path"] = replay_read_path(spark, sizes, work, max(sizes.replay_partitions))
    first, last = (str(p) for p in (sizes.replay_partitions[0], sizes.replay_partitions[-1]))
    read = {k: v["seconds"] for k, v in out["read_path"]["variants"].items()}
    out["ratios"] = {
        f"speedup_{first}_to_{last}_partitions": ratio(
            out["partitions"][first]["variants"]["writer_to_sim"]["seconds"],
            out["partitions"][last]["variants"]["writer_to_sim"]["seconds"],
        ),
        "bodies_joined_over_in_place": ratio(read["bodies_joined"], read["bodies_in_place"]),
        "in_place_over_scan_and_iterate": ratio(read["bodies_in_place"], read["scan_and_iterate"]),
    }
    return out


def replay_read_path(spark, sizes: Sizes, work: Path, partitions: int) -> dict:
    """Replay's whole read path over ``replay_read_messages`` decisions, from the tables to the
    writer's work items (a dry run, whose writer makes no MQ calls), with the bodies read where
    they lie (ours) and carried through the join, shuffle and sort (the obvious way), against
    the limit: the work items' own columns through the same writer with no body, and the
    bodies' scan on its own."""
    from pyspark.sql import functions as F

    from dlq_pipeline.config.settings import ReplaySettings
    from dlq_pipeline.replay.bodies import BODY_FILE
    from dlq_pipeline.replay.spark import partition_function, partition_rows, work_items
    from dlq_pipeline.replay.targets import open_target

    messages = sizes.replay_read_messages or sizes.replay_messages
    storage, decisions = decided_warehouse(spark, work, "replay-read", messages, seed=304)

    def through(in_place: bool, bodies: bool = True):
        def go():
            items = work_items(storage, decisions, partitions, set(), bodies_in_place=in_place)
            if not bodies:
                items = items.withColumn(BODY_FILE, F.lit(None).cast("string"))
            target = open_target("dry-run", warehouse=storage.path)
            run = partition_function(target, ReplaySettings(), "bench-read", REPLAY_NOW, None, None)
            noop(partition_rows(items, run, storage.webhdfs))
            if not bodies:
                noop(storage.read("messages").select("data"))

        return go

    times = interleaved(
        {
            "bodies_in_place": through(True),
            "bodies_joined": through(False),
            "scan_and_iterate": through(True, bodies=False),
        },
        sizes.repeats,
    )
    n = decisions.count()
    decisions.unpersist()
    return {"messages": n, "partitions": partitions, "variants": {k: summary(v, n) for k, v in times.items()}}
