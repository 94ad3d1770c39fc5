"""`make bench`: every stage against the obvious way and the limit, as ratios measured in one run.

    python -m benchmarks.run                 # full sizes (about 20 minutes on 2 cores)
    python -m benchmarks.run --quick         # a few minutes
    python -m benchmarks.run --only decode,classify --quick
    python -m benchmarks.run --latency put=0.2,commit=2,get=0.2,browse=0.2,stat=0.2   # ms per sim operation

Writes benchmarks/results.json (one key per comparison: decode, classify, ingest, replay,
end_to_end, memory, storm, incremental, first_run, plus the machine and the sizes; ``targets``
gathers every section's targets, each with its limit, its value and whether it holds) and
benchmarks/results.md, and prints the Markdown. Generated inputs are kept in --work and reused by the next run.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

from benchmarks.common import ROOT, SIZES, Context, machine, run_child, sizes_dict, with_overrides, write_result
from benchmarks.end_to_end import warm_large_target
from benchmarks.report import markdown, origin
from benchmarks.sections import BENCHES, CHILDREN

COMPARISONS = tuple(BENCHES)
DEFAULT_LATENCY = "put=0.2,commit=2,get=0.2,browse=0.2,stat=0.2"


def parse_latency(text: str) -> dict[str, float]:
    """``"put=0.2,commit=2"`` -> {"put": 0.2, "commit": 2.0} (milliseconds per operation)."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        op, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"latency {part!r}: expected OP=MILLISECONDS")
        out[op.strip()] = float(value)
    return out


def _arguments(argv):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="small sizes: a few minutes on 2 cores")
    mode.add_argument("--tiny", action="store_true", help="smallest sizes: only checks that everything runs")
    parser.add_argument(
        "--size",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override one size of the mode (repeatable), e.g. --size decode_copies=10 "
        "--size e2e_counts=500,5000; fields: benchmarks/common.py Sizes",
    )
    parser.add_argument("--only", default="", help=f"comma-separated subset of {','.join(COMPARISONS)}")
    parser.add_argument(
        "--work",
        default=str(Path(tempfile.gettempdir()) / "dlq-pipeline-bench"),
        help="where generated inputs are kept (and reused)",
    )
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results.json"))
    parser.add_argument("--markdown", default=None, help="default: --out with .md")
    parser.add_argument(
        "--latency",
        default=DEFAULT_LATENCY,
        help=f"simulated queue manager latency, ms per operation (default {DEFAULT_LATENCY})",
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="keep the other comparisons already in --out: replace only those run now "
        "(each marked with its own command, time and machine load); a comparison measured "
        "on another Spark version or kind of machine is run again too",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the child measurements in this process (smoke test; figures not meaningful)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--params", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def run(argv=None, *, spark=None) -> dict:
    """Run the comparisons and write the results; returns the results document."""
    args = _arguments(argv)
    sizes = with_overrides(SIZES["tiny" if args.tiny else "quick" if args.quick else "full"], args.size)
    only = [c.strip() for c in args.only.split(",") if c.strip()] or list(COMPARISONS)
    unknown = set(only) - set(COMPARISONS)
    if unknown:
        raise SystemExit(f"unknown comparisons: {', '.join(sorted(unknown))}")
    work = Path(args.work) / sizes.name
    work.mkdir(parents=True, exist_ok=True)
    latency = parse_latency(args.latency)

    if args.in_process:
        ctx = Context(child=lambda task, params: CHILDREN[task](params), in_process=True, latency_ms=latency)
    else:
        ctx = Context(child=lambda task, params: run_child(task, params, work / "children"), latency_ms=latency)
    if spark is None:
        from dlq_pipeline.engine.session import get_spark

        spark = get_spark({"master": "local[2]", "app_name": "dlq-pipeline-bench"})

    doc = {
        "command": "python -m benchmarks.run " + " ".join(argv if argv is not None else sys.argv[1:]),
        "mode": sizes.name,
        "in_process": args.in_process,
        "machine": machine(),
        "sizes": sizes_dict(sizes),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "elapsed_s": {},
    }
    if args.merge and Path(args.out).exists():
        before = json.loads(Path(args.out).read_text())
        for name in stale_sections(before, doc["machine"], only):
            print(f"[bench] {name} again: {provenance(before, name)}, not here", file=sys.stderr, flush=True)
            only.append(name)
        doc = _merged(before, doc, only)
    began = time.perf_counter()
    for name in only:
        print(f"[bench] {name} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        try:
            doc[name] = BENCHES[name](spark, sizes, work, ctx)
        except Exception as exc:  # noqa: BLE001 - one failed comparison must not lose the others
            traceback.print_exc()
            doc[name] = {"error": f"{type(exc).__name__}: {exc}"}
        doc["elapsed_s"][name] = round(time.perf_counter() - start, 1)
        doc["targets"] = targets(doc)
        print(f"[bench] {name}: {doc['elapsed_s'][name]} s", file=sys.stderr, flush=True)
        write_result(args.out, doc)  # partial results survive an interrupted run
    doc["elapsed_s"]["total"] = round(time.perf_counter() - began, 1)
    write_result(args.out, doc)
    text = markdown(doc)
    Path(args.markdown or str(Path(args.out).with_suffix(".md"))).write_text(text)
    print(text)
    return doc


def targets(doc: dict) -> dict:
    """Every section's targets in one place, ``section.target``, and the one that takes its
    limits from several sections (`benchmarks.end_to_end.warm_large_target`) (pure)."""
    found = {
        f"{name}.{key}": target
        for name in COMPARISONS
        if isinstance(doc.get(name), dict)
        for key, target in (doc[name].get("targets") or {}).items()
    }
    warm = warm_large_target(doc)
    if warm is not None:
        found["end_to_end.warm_run_over_its_bound_at_100000"] = warm
    return found


def machine_kind(machine: dict) -> tuple[str, int]:
    """What makes two machines' figures comparable: the CPU model and the cores."""
    return machine.get("cpu", ""), machine.get("cores", 0)


def provenance(doc: dict, name: str) -> str:
    """Where a section was measured, for people: "Spark 4.2.0 on 2 cores (Intel Xeon)"."""
    machine = origin(doc, name)["machine"]
    return f"Spark {machine['spark']} on {machine['cores']} cores ({machine['cpu']})"


def stale_sections(doc: dict, here: dict, only: list[str]) -> list[str]:
    """The sections of ``doc`` not in ``only`` that were measured on another Spark version or
    another kind of machine than ``here``: a merge measures them again, so that every figure
    in one file compares with the others (pure)."""
    stale = []
    for name in COMPARISONS:
        if name not in doc or name in only:
            continue
        machine = origin(doc, name)["machine"]
        if machine["spark"] != here["spark"] or machine_kind(machine) != machine_kind(here):
            stale.append(name)
    return stale


def _merged(before: dict, now: dict, only: list[str]) -> dict:
    """``before`` (an earlier results document) with the comparisons in ``only`` to be
    measured again: those are dropped from it and recorded as measured apart, by ``now``'s
    command, time and machine (the rest keep the earlier run's)."""
    doc = {k: v for k, v in before.items() if k not in only}
    apart = dict(doc.get("measured_apart") or {})
    for name in only:
        apart[name] = {k: now[k] for k in ("command", "started_at", "machine", "sizes")}
    doc["measured_apart"] = apart
    doc["elapsed_s"] = {k: v for k, v in (before.get("elapsed_s") or {}).items() if k not in only}
    return doc


def child(args) -> None:
    result = CHILDREN[args.child](json.loads(args.params))
    write_result(args.result, result)
    if "pyspark" in sys.modules:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()


def main(argv=None) -> None:
    args = _arguments(argv)
    if args.child:
        child(args)
    else:
        run(argv)


if __name__ == "__main__":
    main()
