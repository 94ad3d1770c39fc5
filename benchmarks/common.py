"""What every comparison shares: sizes, the machine, timing, targets, child processes, peak memory.

Every comparison is a ratio of medians measured in one run, with the variants interleaved
(variant A, B, C, then A, B, C again ...), so load from other processes on a shared machine
hits all of them alike.
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# --- sizes -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    """How big each comparison is. ``full`` is capped to finish in about 20 minutes on 2 cores."""

    name: str
    repeats: int  # timed runs per variant (the median is reported)
    decode_pool: int  # distinct generated messages, landed once ...
    decode_copies: int  # ... and copied this many times into the decode input
    max_size: int  # largest generated payload (bytes) for the decode/classify input
    classify_rows: int  # N: messages classified by both the compiled rules and the reference UDF ...
    classify_scale: int  # ... and N x this many, for the cost per message (the slope)
    rule_counts: tuple[int, ...]
    ingest_messages: int  # in the one large dump
    replay_messages: int
    replay_partitions: tuple[int, ...]
    e2e_counts: tuple[int, ...]  # N for `run` vs the sequential reference
    e2e_repeats: int
    memory_messages: int
    memory_large_bytes: int  # payload of each message in the large case
    memory_small_bytes: int
    # replay.connections_per_qmgr of the end-to-end `run`: 1, the default (one connection per
    # target queue manager); e.g. --size e2e_connections_per_qmgr=4 to try spreading the local one
    e2e_connections_per_qmgr: int = 1
    pipeline_memory_messages: int = 0  # run (ingest -> replay to dir:) over this many messages ...
    pipeline_memory_bytes: int = 0  # ... of this many bytes each (the target: 100 of 100 MB)
    # replay's read path (the tables to the writer) over this many messages (0: replay_messages)
    replay_read_messages: int = 0
    # the Q_FULL retry storm (benchmarks/storm.py): `run` over this many messages (0: not run) ...
    storm_messages: int = 0
    storm_payload_bytes: int = 2048  # ... of this many bytes on average (the target: 1,000,000 of 2 KB)
    storm_reference_messages: int = 5_000  # the sequential reference's evenly spread sample of them
    # incremental runs (benchmarks/incremental.py): a warehouse of this many landed dumps ...
    incremental_dumps: int = 1_000
    incremental_dump_messages: int = 1_000  # ... of this many messages each, then one new dump of as many

    @property
    def decode_messages(self) -> int:
        return self.decode_pool * self.decode_copies


SIZES = {
    "tiny": Sizes(
        "tiny",
        1,
        100,
        2,
        16 * 1024,
        100,
        2,
        (10,),
        100,
        100,
        (1,),
        (30,),
        1,
        2,
        64 * 1024,
        1024,
        pipeline_memory_messages=2,
        pipeline_memory_bytes=1024 * 1024,
        storm_messages=200,
        storm_reference_messages=100,
        incremental_dumps=4,
        incremental_dump_messages=50,
    ),
    "quick": Sizes(
        "quick",
        3,
        5_000,
        20,
        64 * 1024,
        5_000,
        3,
        (10, 100, 500),
        6_000,
        4_000,
        (1, 2, 4),
        (1_000, 3_000),
        1,
        20,
        4 * 1024 * 1024,
        1024,
        pipeline_memory_messages=3,
        pipeline_memory_bytes=100 * 1024 * 1024,
        storm_messages=20_000,
        storm_reference_messages=2_000,
        incremental_dumps=100,
        incremental_dump_messages=1_000,
    ),
    "full": Sizes(
        "full",
        3,
        20_000,
        50,
        64 * 1024,
        20_000,
        3,
        (10, 100, 500),
        20_000,
        20_000,
        (1, 2, 4),
        (1_000, 1_500, 5_000, 20_000, 100_000),
        1,
        100,
        20 * 1024 * 1024,
        1024,
        pipeline_memory_messages=100,
        pipeline_memory_bytes=100 * 1024 * 1024,
        replay_read_messages=100_000,
        storm_messages=1_000_000,
        storm_reference_messages=5_000,
    ),
}


def with_overrides(sizes: Sizes, overrides: list[str]) -> Sizes:
    """``sizes`` with ``FIELD=VALUE`` overrides (a tuple field takes ``1,2,4``); the work
    directory stays the mode's, and the cached inputs record the sizes they were made with."""
    changes = {}
    for item in overrides:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in Sizes.__dataclass_fields__ or name == "name":
            raise SystemExit(
                f"--size {item!r}: expected FIELD=VALUE with FIELD one of "
                f"{', '.join(f for f in Sizes.__dataclass_fields__ if f != 'name')}"
            )
        current = getattr(sizes, name)
        changes[name] = (
            tuple(int(v) for v in value.split(",") if v.strip()) if isinstance(current, tuple) else int(value)
        )
    return replace(sizes, **changes)


# --- the machine -------------------------------------------------------------------------------


def _meminfo_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def java_version() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    first = (out.stderr or out.stdout).splitlines()
    return first[0].strip() if first else "unknown"


def machine() -> dict:
    import numpy
    import pandas
    import pyarrow
    import pyspark

    return {
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu": _cpu_model(),
        "memory_gb": _meminfo_gb(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "java": java_version(),
        "spark": pyspark.__version__,
        "pyarrow": pyarrow.__version__,
        "pandas": pandas.__version__,
        "numpy": numpy.__version__,
    }


# --- timing ------------------------------------------------------------------------------------


def median(values) -> float:
    return float(statistics.median(values))


def interleaved(
    variants: Mapping[str, Callable[[], object]],
    repeats: int,
    *,
    warmup: bool | None = None,
    cpu: dict[str, list[float]] | None = None,
) -> dict[str, list[float]]:
    """Seconds per run of each variant: one untimed warm-up each (JIT, Python workers,
    page cache; by default only when ``repeats`` > 1), then ``repeats`` rounds running every
    variant once per round. ``cpu``, when given, gets the CPU seconds of each run
    (`tree_cpu_seconds`): on a shared machine wall time measures the other processes too."""
    if warmup if warmup is not None else repeats > 1:
        for run in variants.values():
            run()
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, run in variants.items():
            used = tree_cpu_seconds() if cpu is not None else 0.0
            began = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - began)
            if cpu is not None:
                cpu.setdefault(name, []).append(tree_cpu_seconds() - used)
    return times


def tree_cpu_seconds(root: int | None = None) -> float:
    """CPU seconds (user + system) used so far by this process and its descendants (the
    JVM, Spark's Python daemon and workers), including their exited children. Linux only
    (0 elsewhere)."""
    if not sys.platform.startswith("linux"):
        return 0.0
    tick = os.sysconf("SC_CLK_TCK")
    tree, todo, total = _children(), [root or os.getpid()], 0
    while todo:
        pid = todo.pop()
        todo.extend(tree.get(pid, ()))
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    return total / tick


def bytes_under(path: Path) -> int:
    """The bytes of the files under ``path`` (0 when there is nothing)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def summary(times: list[float], count: int | None = None, megabytes: float | None = None) -> dict:
    """Median seconds, every run, and per-item rates when ``count`` / ``megabytes`` are given."""
    m = median(times)
    out = {"seconds": round(m, 4), "runs": [round(t, 4) for t in times]}
    if count:
        out["per_s"] = round(count / m, 1)
        out["us_per_message"] = round(m / count * 1e6, 3)
    if megabytes:
        out["mb_per_s"] = round(megabytes / m, 2)
    return out


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def holds(value, limit, below=True):
    """Whether ``value`` keeps to ``limit`` (None when either was not measured)."""
    if value is None or limit is None:
        return None
    return value <= limit if below else value >= limit


# --- Spark jobs ----------------------------------------------------------------------------------


def noop(df) -> None:
    """Run ``df``'s whole plan for every row and write nothing (Spark's ``noop`` sink): every
    Spark variant ends here, so its time is the work itself."""
    df.write.format("noop").mode("overwrite").save()


def jobs_submitted(spark) -> int | None:
    """How many Spark jobs this SparkContext has submitted so far (job ids are consecutive
    from 0: the DAG scheduler's next id). None where there is no SparkContext (Connect).
    With adaptive execution each shuffle stage runs as a job of its own, so this counts
    what Spark schedules, not the actions the code calls."""
    try:
        return int(spark.sparkContext._jsc.sc().dagScheduler().nextJobId())  # an AtomicInteger, read by py4j as an int
    except Exception:  # noqa: BLE001 - no SparkContext, or a Spark without that field
        return None


class StageJobs:
    """A ``progress`` callback for `run_pipeline` that counts the Spark jobs of each stage:
    the stage lines (``[i/n] name``) mark where one stage ends and the next begins."""

    def __init__(self, spark):
        self.spark, self.marks = spark, []

    def __call__(self, line: str) -> None:
        if line.startswith("[") and "] " in line:
            self.marks.append((line.split("] ", 1)[1], jobs_submitted(self.spark)))

    def per_stage(self) -> dict[str, int] | None:
        ends = [*self.marks[1:], (None, jobs_submitted(self.spark))]
        if any(n is None for _, n in self.marks + ends):
            return None
        return {name: end - start for (name, start), (_, end) in zip(self.marks, ends)}


# --- child processes ---------------------------------------------------------------------------


@dataclass
class Context:
    """How a comparison runs children: in fresh processes (normal) or in this process (the
    ``--in-process`` smoke test, which checks the code paths and the keys, not the figures)."""

    child: Callable[[str, dict], dict]
    in_process: bool = False
    latency_ms: dict | None = None


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    return env


class ChildFailed(RuntimeError):
    """A benchmark child that failed: the message holds the end of its stderr, ``stderr`` all
    of it (a JVM's first error comes long before the Python traceback's end), and ``log``
    the file that keeps it."""

    def __init__(self, message: str, stderr: str, log: Path):
        super().__init__(message)
        self.stderr, self.log = stderr, log


def run_child(task: str, params: dict, workdir: Path, *, timeout: float = 3600) -> dict:
    """Run ``benchmarks.run --child task`` in a fresh Python process (its own SparkContext)
    and return the JSON it wrote. Raises `ChildFailed` when it fails, its whole stderr kept
    beside where the result would have been."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / f"child-{task}-{time.monotonic_ns()}.json"
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.run",
        "--child",
        task,
        "--params",
        json.dumps(params),
        "--result",
        str(out),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or not out.exists():
        log = out.with_suffix(".stderr")
        log.write_text(proc.stderr)
        raise ChildFailed(
            f"benchmark child {task} failed ({proc.returncode}; its stderr: {log}):\n{proc.stderr[-4000:]}",
            proc.stderr,
            log,
        )
    return json.loads(out.read_text())


def write_result(path: str | os.PathLike, doc: dict) -> None:
    Path(path).write_text(json.dumps(doc, indent=1, default=str))


# --- peak memory -------------------------------------------------------------------------------


def _status(pid: int) -> dict[str, int]:
    values = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return values


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def _kind(pid: int, root: int) -> str:
    if pid == root:
        return "driver_python"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "other"
    if re.search(r"(^|/)java ", cmd):
        return "jvm"
    if "python" in cmd:
        return "python_workers"
    return "other"


class PeakMemory:
    """Samples this process and its descendants every ``interval`` s: the peak RSS of each kind
    (``jvm``, ``python_workers`` (Spark's Python daemon and workers, summed), ``driver_python``)
    and the largest single-process high-water mark (VmHWM) of each kind. Linux only."""

    def __init__(self, interval: float = 0.05):
        self.interval, self.root = interval, os.getpid()
        self.peak_sum: dict[str, int] = {}
        self.peak_one: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        tree, todo, sums = _children(), [self.root], {}
        while todo:
            pid = todo.pop()
            todo.extend(tree.get(pid, ()))
            status = _status(pid)
            if not status:
                continue
            kind = _kind(pid, self.root)
            sums[kind] = sums.get(kind, 0) + status.get("VmRSS", 0)
            self.peak_one[kind] = max(self.peak_one.get(kind, 0), status.get("VmHWM", 0))
        for kind, total in sums.items():
            self.peak_sum[kind] = max(self.peak_sum.get(kind, 0), total)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakMemory:
        if sys.platform.startswith("linux"):
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
            self.sample()

    def as_dict(self) -> dict:
        mb = 1024 * 1024
        return {
            "peak_rss_mb": {k: round(v / mb, 1) for k, v in sorted(self.peak_sum.items())},
            "peak_hwm_one_process_mb": {k: round(v / mb, 1) for k, v in sorted(self.peak_one.items())},
        }


def sizes_dict(sizes: Sizes) -> dict:
    doc = asdict(sizes)
    doc["decode_messages"] = sizes.decode_messages
    return doc
