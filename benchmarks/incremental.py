"""Incremental runs: a scheduled `run` over a directory where dumps pile up costs what is new.

The scenario. Dumps arrive in one directory, and the schedule runs over it: a warehouse holds
``Sizes.incremental_dumps`` landed dumps of ``Sizes.incremental_dump_messages`` messages each
(every message forwarded, so every landing is settled), then one new dump arrives in the same
directory. What the section measures (``python -m benchmarks.run --only incremental``), each
`run` in a fresh process as a scheduler starts it, into a ``dir:`` target:

- ``unchanged``: the run over the directory before the new dump arrives, against ``floor``, a
  process of its own that starts Spark, runs a trivial first job and lists the directory
  (`dlq_pipeline.ingest.inputs.list_inputs`): a run that reads no dump costs no more;
- ``incremental``: the run after the new dump arrived, against ``empty``, the same run over a
  directory holding only the new dump into an empty warehouse: the ratio of the two is what
  history costs a run (target ``INCREMENTAL_RATIO``).

The history is landed by one untimed `run` over every dump (its time is reported too); the
dumps are generated without messages lacking a dead-letter header (those stay pending, which
keeps their landings open by design: docs/architecture.md, "What a run reads").
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from benchmarks.common import Context, Sizes, ratio

INCREMENTAL_RATIO = 1.3  # the run after one new dump over the same run into an empty warehouse
RULES = "ACTION(FWD) FWDQ(DLQ.HOLD) HEADER(YES)\n"
MIX = {"no_dlh": 0, "empty": 0}  # every message has a dead-letter header: every landing settles
SEED = 71


def child_incremental_run(params: dict) -> dict:
    """A fresh process as a scheduler starts one: Spark start-up, then either the floor of a
    run that reads nothing (``floor``: one trivial job and the listing of the inputs) or
    run_pipeline over ``inputs`` into ``warehouse`` and the ``dir:`` target ``out``."""
    began = time.perf_counter()
    from dlq_pipeline.config.settings import RunSettings, StorageSettings
    from dlq_pipeline.engine.session import get_spark
    from dlq_pipeline.ingest.inputs import bytes_to_land, list_inputs
    from dlq_pipeline.ingest.spark import landed_files_at
    from dlq_pipeline.pipeline import run_pipeline
    from dlq_pipeline.rules.parser import load_rules

    work = bytes_to_land(params["inputs"], landed_files_at(params["warehouse"]))  # as `dlq-pipeline run` sizes it
    spark = get_spark({"master": params["master"], "app_name": "bench-incremental", "work_bytes": work})
    started = time.perf_counter()
    if params.get("floor"):
        spark.range(1).count()
        trivial = time.perf_counter()
        listed = list_inputs(params["inputs"])
        return {
            "spark_start_s": round(started - began, 3),
            "trivial_job_s": round(trivial - started, 3),
            "listing_s": round(time.perf_counter() - trivial, 3),
            "files_listed": len(listed),
        }
    summary = run_pipeline(
        spark,
        RunSettings(storage=StorageSettings(path=params["warehouse"])),
        load_rules(params["rules"]),
        inputs=params["inputs"],
        target=f"dir:{params['out']}",
        run_id=params["run_id"],
    )
    return {
        "spark_start_s": round(started - began, 3),
        "run_s": round(time.perf_counter() - started, 3),
        "durations": summary.durations,
        "input_files": {k: v for k, v in summary.input_files.items() if not isinstance(v, dict)},
        "landed": summary.messages_landed,
        "pending": summary.pending,
        "outcomes": summary.outcomes,
    }


def _history(work: Path, dumps: int, per_dump: int) -> tuple[Path, Path]:
    """The history's dumps and the new dump (cached in ``work`` by their sizes)."""
    from dlq_pipeline.dumps.generator import write_generated

    made = work / "incremental-inputs"
    stamp = made / "made.json"
    params = {"dumps": dumps, "per_dump": per_dump, "seed": SEED, "mix": MIX}
    if not stamp.exists() or json.loads(stamp.read_text()) != params:
        shutil.rmtree(made, ignore_errors=True)
        write_generated(made / "history", dumps * per_dump, SEED, dumps, MIX, max_size=2048)
        write_generated(made / "new", per_dump, SEED + 1, 1, MIX, max_size=2048)
        stamp.write_text(json.dumps(params))
    return made / "history", made / "new" / "dlq-0000.dmp"


def bench_incremental(spark, sizes: Sizes, work: Path, ctx: Context) -> dict:
    """The module's docstring: the unchanged rerun and the run after one new dump, against
    their limits, in one run."""
    dumps, per_dump = sizes.incremental_dumps, sizes.incremental_dump_messages
    work.mkdir(parents=True, exist_ok=True)
    history, new_dump = _history(work, dumps, per_dump)
    scratch = work / "incremental-runs"
    shutil.rmtree(scratch, ignore_errors=True)
    inbox, alone = scratch / "inbox", scratch / "alone"
    shutil.copytree(history, inbox)
    alone.mkdir(parents=True)
    shutil.copy2(new_dump, alone / "zz-new.dmp")
    rules = scratch / "fwd.rules"
    rules.write_text(RULES)

    def run(name: str, inputs: Path, warehouse: Path, *, floor: bool = False) -> dict:
        return ctx.child(
            "incremental_run",
            {
                "floor": floor,
                "master": "local[2]",
                "inputs": [str(inputs)],
                "warehouse": str(warehouse),
                "out": str(scratch / f"out-{name}"),
                "rules": str(rules),
                "run_id": f"bench-{name}",
            },
        )

    try:
        landed = run("history", inbox, scratch / "wh")
        unchanged = run("unchanged", inbox, scratch / "wh")
        floor = run("floor", inbox, scratch / "wh", floor=True)
        shutil.copy2(new_dump, inbox / "zz-new.dmp")
        incremental = run("incremental", inbox, scratch / "wh")
        empty = run("empty", alone, scratch / "wh-empty")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    floor_s = floor["spark_start_s"] + floor["trivial_job_s"] + floor["listing_s"]
    unchanged_s = unchanged["spark_start_s"] + unchanged["run_s"]
    history_ratio = ratio(incremental["run_s"], empty["run_s"])
    return {
        "dumps": dumps,
        "messages_per_dump": per_dump,
        "history_messages": landed["landed"],
        "runs": {"history": landed, "unchanged": unchanged, "floor": floor, "incremental": incremental, "empty": empty},
        "ratios": {"incremental_over_empty": history_ratio},
        "targets": {
            "incremental_over_empty": {
                "limit": INCREMENTAL_RATIO,
                "value": history_ratio,
                "holds": history_ratio <= INCREMENTAL_RATIO,
            },
            "unchanged_rerun_s": {
                "limit": round(floor_s, 3),
                "limit_is": "Spark start-up, a first trivial job and the listing, in a process of its own",
                "value": round(unchanged_s, 3),
                "holds": unchanged_s <= floor_s,
            },
        },
        "passed": incremental["input_files"].get("read") == 1
        and unchanged["input_files"].get("read") == 0
        and incremental["landed"] == empty["landed"] == per_dump,
    }
