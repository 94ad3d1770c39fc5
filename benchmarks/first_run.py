"""The first run on a machine, as a user meets it: `dlq-pipeline run` in fresh processes.

What the section measures (``python -m benchmarks.run --only first_run``), each in a process
of its own, as a shell starts it, over the end-to-end section's 1,000 messages into a ``dir:``
target:

- ``plain``: Python starting a local Spark and running one trivial job, nothing else: what no
  command that starts Spark can go below;
- ``spark_stages``: Python starting a local Spark as `run` starts it and running Spark's own
  three plain stages of a run's shape over the same dumps (`benchmarks.end_to_end.plain_stages`):
  the least a fresh process doing a run's kind of work takes;
- ``with_archive``: `run` where `dlq-pipeline setup` (or `make demo`) built the class archive,
  against ``plain`` (target ``FIRST_RUN_OVER_PLAIN_S``);
- ``no_archive``: `run` with no archive and nothing built for the next (a cache of its own,
  ``DLQ_PIPELINE_CLASS_ARCHIVE=off``): what the archive saves;
- ``building_for_next``: `run` with no archive that builds it for the next as it exits,
  against ``no_archive`` (target ``BUILDING_SLOWDOWN_S``: building must not slow the run);
  then the build it left behind is waited for, and ``next`` is the run that follows it.

Pairs of fresh processes alternate (plain, then `run`) ``Sizes.repeats`` times; the medians
are compared. With ``--in-process`` (the test suite's smoke run) only ``plain`` and
``with_archive`` run once: the archive build alone is 40 s of CPU.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import data
from benchmarks.common import Context, Sizes, median

FIRST_RUN_OVER_PLAIN_S = 2.0  # a cold 1,000-message `run` within 2 s of a plain start and trivial job
BUILDING_SLOWDOWN_S = 1.0  # building the archive for the next run costs that run at most 1 s
MESSAGES = 1_000
BUILD_WAIT_S = 900
PLAIN = (
    "from dlq_pipeline.engine.session import get_spark\n"
    "get_spark({'master': 'local[2]', 'app_name': 'bench-plain'}).range(1).count()\n"
)
SPARK_STAGES = (
    "import sys\n"
    "from pathlib import Path\n"
    "from benchmarks.end_to_end import plain_stages\n"
    "from dlq_pipeline.dumps.plan import input_bytes\n"
    "from dlq_pipeline.engine.session import get_spark\n"
    "inputs, work = sys.argv[2:], Path(sys.argv[1])\n"
    "spark = get_spark({'master': 'local[2]', 'app_name': 'bench-stages', 'work_bytes': input_bytes(inputs)})\n"
    "plain_stages(spark, inputs, work)\n"
)


def _wall(command: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - began
    if done.returncode not in (0, 3):  # 3: done, some messages need attention (the ignored ones)
        raise RuntimeError(f"{command[:2]} exit {done.returncode}: {done.stderr[-2000:]}")
    return round(wall, 2)


def bench_first_run(spark, sizes: Sizes, work: Path, ctx: Context) -> dict:
    """The module's docstring."""
    from dlq_pipeline.engine import class_archive
    from dlq_pipeline.engine.jars import JARS_ENV, cache_root

    count = min(MESSAGES, max(sizes.e2e_counts))
    dumps = data.dumps(work / f"e2e-dumps-{count}", count, seed=404, max_size=64 * 1024)
    scratch = work / "first-run"
    shutil.rmtree(scratch, ignore_errors=True)
    cli = str(Path(sys.executable).with_name("dlq-pipeline"))
    runs = itertools.count()

    def run(env: dict[str, str]) -> float:
        n = next(runs)
        return _wall(
            [
                cli,
                "run",
                *[arg for dump in dumps for arg in ("--input", dump)],
                "--rules",
                data.STARTER_RULES,
                "--warehouse",
                str(scratch / f"wh-{n}"),
            ]
            + ["--target", f"dir:{scratch / f'out-{n}'}"],
            env,
        )

    def empty_cache(name: str) -> dict[str, str]:
        """An environment whose class archives live in a cache of their own (the same jars)."""
        cache = scratch / name
        cache.mkdir(parents=True)
        (cache / "jars").symlink_to(cache_root(), target_is_directory=True)
        return {**os.environ, JARS_ENV: str(cache / "jars")}

    usual = {**os.environ, class_archive.FOR_NEXT_ENV: "off"}
    walls: dict[str, list[float]] = {"plain": [], "spark_stages": [], "with_archive": []}
    root = {**usual, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out: dict = {"messages": count, "master": "local[2]"}
    try:
        for _ in range(1 if ctx.in_process else sizes.repeats):
            walls["plain"].append(_wall([sys.executable, "-c", PLAIN], usual))
            walls["spark_stages"].append(
                _wall([sys.executable, "-c", SPARK_STAGES, str(scratch / "stages"), *dumps], root)
            )
            walls["with_archive"].append(run(usual))
        if not ctx.in_process:
            walls["no_archive"] = [run({**empty_cache("none-1"), class_archive.FOR_NEXT_ENV: "off"})]
            building = {**empty_cache("for-next"), class_archive.FOR_NEXT_ENV: "auto"}
            walls["building_for_next"] = [run(building)]
            cds = Path(building[JARS_ENV]).parent / "cds"
            began = time.perf_counter()
            while list(cds.glob("*.claim")) and time.perf_counter() - began < BUILD_WAIT_S:
                time.sleep(1)
            out["archive_built_after_s"] = round(time.perf_counter() - began, 1)
            out["archive_built"] = bool(list(cds.glob("*.jsa"))) and not list(cds.glob("*.claim"))
            walls["next"] = [run(building)]
            walls["no_archive"].append(run({**empty_cache("none-2"), class_archive.FOR_NEXT_ENV: "off"}))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    seconds = {name: median(values) for name, values in walls.items()}
    out["wall_s"] = {name: {"median": seconds[name], "runs": values} for name, values in walls.items()}
    over_plain = round(seconds["with_archive"] - seconds["plain"], 2)
    targets = {
        "first_run_over_plain_start_s": {
            "value": over_plain,
            "limit": FIRST_RUN_OVER_PLAIN_S,
            "limit_is": "a fresh Python starting local Spark and running one trivial job",
            "holds": over_plain <= FIRST_RUN_OVER_PLAIN_S,
            # Spark's own stages of a run's shape, in a fresh process, over the same plain start
            "spark_stages_over_plain_start_s": round(seconds["spark_stages"] - seconds["plain"], 2),
        }
    }
    if "no_archive" in seconds:
        slowdown = round(seconds["building_for_next"] - seconds["no_archive"], 2)
        out["archive_saves_s"] = round(seconds["no_archive"] - seconds["next"], 2)
        targets["building_for_next_slowdown_s"] = {
            "value": slowdown,
            "limit": BUILDING_SLOWDOWN_S,
            "holds": slowdown <= BUILDING_SLOWDOWN_S and out["archive_built"],
        }
    out["targets"] = targets
    return out
