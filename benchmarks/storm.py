"""The Q_FULL retry storm: a DLQ most of which one full queue filled, retried through `run`
in a 2 GB heap, against the sequential reference.

The scenario. Applications on several queue managers put to one queue that a cluster shares
(``ORDERS.IN`` on ``ORDQM01``). Its consumer stops, the queue reaches MAXDEPTH, and the
receiving end of every sender's channel dead-letters what arrives with MQRC_Q_FULL (2053):
the DLQ fills with one queue's messages. An administrator then retries them to the queue
they were meant for, once it has room for some of them again (its MAXDEPTH raised, its
consumer still slow). Retried one at a time, every message left over meets the full queue
again: each one is another failed put against a queue that cannot take it, the same storm
that overloaded the channels, now from the DLQ handler. `run` puts them through the replay
writer (dlq_pipeline/replay/writer.py, docs/replay.md): the queue takes what it has room
for, then the writer meets 2053, records those puts ``failed`` (they count against the
rule's RETRY), opens the queue's circuit breaker after ``replay.breaker_threshold``
consecutive failures and ``deferred`` the rest to the next run; everything else is
delivered. The section reports what the writer did at the storm's queue (its ledger rows:
delivered, failed with 2053, deferred by the breaker), so a breaker that does not hold shows.

What the section measures (``python -m benchmarks.run --only storm``):

- the input: a generated dmpmqmsg dump of ``Sizes.storm_messages`` messages averaging
  ``Sizes.storm_payload_bytes`` (`storm_dump`: streamed to disk, cached in ``--work``), of
  which `STORM_SHARE` are the storm's;
- `run` over it in a fresh process, local[2] with a 2 GB heap (the memory section's
  `child_memory_pipeline`), into the simulated queue manager with the end-to-end section's
  latency, the storm's queue defined with room for `STORM_ROOM` of the storm: its time, each
  stage's, the outcomes, the peak RSS of the JVM and of the Python workers;
- the sequential reference (the end-to-end section's `child_reference`) over an evenly
  spread sample of the same dump (``Sizes.storm_reference_messages``), against the same set-up
  scaled to the sample (the queue again has room for `STORM_ROOM` of the sample's storm), its
  time per message extrapolated linearly to the whole dump, and the ratio of that to the run.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import random
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.common import Context, Sizes, bytes_under, ratio
from benchmarks.data import CATCH_ALL
from benchmarks.memory import PIPELINE_HEAP, child_memory_pipeline, failure_summary
from benchmarks.sim import SIM_CONFIG, fresh_sim, latency_faults
from dlq_pipeline.dumps.generator import DEFAULT_END, HUB_QMGR, HUB_QUEUE, MIN_MAX_SIZE, STORMS, generate
from dlq_pipeline.mq.structures import DLH_LENGTH

# --- the storm ---------------------------------------------------------------------------------

STORM_SHARE = 0.85  # of the DLQ's messages: the storm's; the rest is the generator's usual trickle
STORM = dataclasses.replace(next(s for s in STORMS if s.name == "q_full"), share=STORM_SHARE)
STORM_ROOM = 0.5  # the storm's queue has room for this share of the storm's messages
STORM_SEED = 707
STORM_TARGET_MESSAGES = 1_000_000  # the target: the whole storm through one run in 2 GB heaps
SIM_QMGR = "QMHUB01"  # the sim: the hub whose DLQ it is; the storm's queue is in its view of ORDQM01

# What the administrator runs: retry what a full queue refused, to the queue it was meant for
# (RETRY puts to the MQDLH's DestQName on DestQMgrName); leave for a person what was meant for
# a queue manager that no longer exists; forward the rest, dead-letter header kept.
STORM_RULES = f"""\
* The Q_FULL retry storm: the consumer of the full queue is slow again,
* and the queue has room for part of what was dead-lettered.
INPUTQM(' ') INPUTQ(' ') RETRYINT(300) WAIT(NO)
REASON(MQRC_Q_FULL) ACTION(RETRY) RETRY(12)
REASON(MQRC_UNKNOWN_REMOTE_Q_MGR) ACTION(IGNORE)
{CATCH_ALL}
"""


def storm_queues(storm_messages: int, room: float = STORM_ROOM) -> dict:
    """The sim's ``queues`` setting for an input holding ``storm_messages`` of the storm: its
    queue with a MAXDEPTH of ``room`` of them (at least 1), so that it fills part way through."""
    return {f"{STORM.home}:{STORM.dest_q}": {"maxdepth": max(1, round(room * storm_messages))}}


# --- the input ---------------------------------------------------------------------------------


def sized(data: bytes, length: int, *, head: int = 0, cut: bool = True) -> bytes:
    """``data`` made ``length`` bytes long: cut (when ``cut``; never into its first ``head``
    bytes, its headers), or grown by repeating what follows the headers, so that a text body
    stays text (pure)."""
    if len(data) >= length:
        return data[: max(length, head)] if cut else data
    body = data[head:] or data or b" "
    need = length - len(data)
    return data + (body * (need // len(body) + 1))[:need]


def sample_positions(messages: int, sample: int) -> list[int]:
    """The indexes of an evenly spread sample of ``sample`` of ``messages`` messages (all of
    them when ``sample`` >= ``messages``): the storm is a burst in the middle of the DLQ, so a
    prefix would hold none of it (pure)."""
    sample = min(sample, messages)
    return [i * messages // sample for i in range(sample)]


def _dump_params(messages: int, payload: int, sample: int, seed: int) -> dict:
    params = {
        "messages": messages,
        "payload": payload,
        "sample": min(sample, messages),
        "seed": seed,
        "storm": dataclasses.asdict(STORM),
    }
    return json.loads(json.dumps(params))  # as the manifest keeps them (tuples become lists)


def cached_storm_dump(out: Path, messages: int, payload: int, sample: int, seed: int = STORM_SEED) -> dict | None:
    """The manifest of the storm dump in ``out`` when it was made with these sizes and is still
    there (a run short of disk deletes it once landed), else None."""
    manifest = out / "storm.json"
    if not manifest.exists():
        return None
    made = json.loads(manifest.read_text())
    if made.get("params") != _dump_params(messages, payload, sample, seed):
        return None
    return made if Path(made["dump"]).exists() and Path(made["sample"]).exists() else None


def storm_dump(out: Path, messages: int, payload: int, sample: int, seed: int = STORM_SEED) -> dict:
    """Write (or reuse) ``out/storm.dmp``: ``messages`` generated messages, `STORM_SHARE` of
    them the storm's, each resized to a length drawn evenly between half and one and a half
    ``payload`` (so ``payload`` on average; a message with more headers after its MQDLH, or
    with no usable MQDLH, is only ever grown, and one cut short or empty stays so, so the
    mean falls a little short); and ``out/sample.dmp``, the
    messages at `sample_positions`. Streamed: one message in memory at a time (and the
    sample). Returns the manifest: paths, counts, mean size, bytes and generation time."""
    made = cached_storm_dump(out, messages, payload, sample, seed)
    if made is not None:
        return {**made, "cached": True}
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    rng = random.Random(seed)
    picks = iter(sample_positions(messages, sample))
    pick = next(picks, -1)
    chosen: list = []
    counts = {"storm": 0, "sample_storm": 0, "bytes": 0}

    def stream() -> Iterator:
        nonlocal pick
        # bodies are grown by repeating them: generating the smallest ones is the fastest
        for g in generate(messages, seed, max_size=MIN_MAX_SIZE, storms=(STORM,)):
            md, data = g.message.md, g.message.data
            if g.problem != "too_short":  # an empty message or a cut-off MQDLH stays what it is
                length = rng.randint(payload // 2, payload + payload // 2)
                has_dlh = g.dlh is not None
                # headers chained after the MQDLH (MQXQH, MQRFH2, MQTM) are only ever grown
                data = sized(data, length, head=DLH_LENGTH if has_dlh else 0, cut=g.payload in ("text", "binary"))
            storm = g.storm == STORM.name
            counts["storm"] += storm
            counts["bytes"] += len(data)
            if g.message.index == pick:
                chosen.append((md, data))
                counts["sample_storm"] += storm
                pick = next(picks, -1)
            yield md, data

    from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump

    created = DEFAULT_END + dt.timedelta(minutes=5)
    began = time.perf_counter()
    dump, partial = out / "storm.dmp", out / ".storm.dmp.partial"
    write_dump(stream(), partial, qmgr=HUB_QMGR, queue=HUB_QUEUE, created=created)
    partial.rename(dump)
    seconds = time.perf_counter() - began
    write_dump(chosen, out / "sample.dmp", qmgr=HUB_QMGR, queue=HUB_QUEUE, created=created)
    made = {
        "params": _dump_params(messages, payload, sample, seed),
        "dump": str(dump),
        "sample": str(out / "sample.dmp"),
        "messages": messages,
        "storm_messages": counts["storm"],
        "sample_messages": len(chosen),
        "sample_storm_messages": counts["sample_storm"],
        "mean_payload_bytes": round(counts["bytes"] / messages) if messages else 0,
        "dump_bytes": os.path.getsize(dump),
        "generation_s": round(seconds, 1),
        "generated_per_s": round(messages / seconds) if seconds else None,
    }
    (out / "storm.json").write_text(json.dumps(made, indent=1))
    return {**made, "cached": False}


# --- disk --------------------------------------------------------------------------------------

# The dump's bytes per message: hex data lines (25 bytes a line: 2.12 bytes a byte) and the
# MQMD lines. Measured: 5,004 B a message at 2,048 B on average (20,000 messages).
DUMP_HEX_FACTOR, DUMP_MESSAGE_BYTES = 2.12, 700
# What `run` writes besides the dump, in payload bytes, at most: while ingest lands it, the
# disk-only cache and the `messages` table (2x); while replay runs, the table, its shuffles
# (up to 2.7x, the memory section's measure) and the sim's put log (the delivered bodies,
# each with its descriptor: 2.9 KB a delivered message). Measured at 20,000 messages: the
# disk's use rose by 2.1x the payload on top of the dump.
INGEST_DISK_FACTOR, REPLAY_DISK_FACTOR = 2.0, 4.5


def disk_plan(free: int, messages: int, payload: int, *, dump_present: bool) -> dict:
    """Whether the storm fits the ``free`` bytes, and how (pure): ``run`` keeping the dump
    (the next run reuses it) when dump and run fit together; else deleting the dump once
    ingest has landed it, when the larger of ingest's peak (dump + what it writes) and
    replay's fits; else not at all. ``dump_present``: a cached dump already takes its room."""
    total = messages * payload
    dump = round(messages * (DUMP_HEX_FACTOR * payload + DUMP_MESSAGE_BYTES))
    to_write = 0 if dump_present else dump
    free_after = free + (dump if dump_present else 0)  # as if the dump were not there yet
    keep = dump + round(REPLAY_DISK_FACTOR * total)
    least = max(dump + round(INGEST_DISK_FACTOR * total), round(REPLAY_DISK_FACTOR * total))
    return {
        "free_bytes": free,
        "dump_bytes": dump,
        "dump_to_write_bytes": to_write,
        "need_bytes": keep if free_after >= keep else least,
        "run": free_after >= least,
        "delete_dump_when_landed": free_after < keep,
    }


# --- the reference -----------------------------------------------------------------------------


def extrapolated(reference_s: float, sample: int, messages: int) -> dict:
    """The sequential reference's ``reference_s`` over ``sample`` messages as a time per
    message, and linearly extrapolated to ``messages`` (pure)."""
    per = reference_s / sample if sample else None
    return {
        "s_per_message": round(per, 6) if per is not None else None,
        "extrapolated_s": round(per * messages, 1) if per is not None else None,
        "extrapolated_from": sample,
        "extrapolated_to": messages,
    }


# --- the children ------------------------------------------------------------------------------


def child_storm(params: dict) -> dict:
    """The memory section's ``run`` in a fresh process (`child_memory_pipeline`: a 2 GB heap,
    peak RSS, the dump deleted once landed when asked), with ``rules`` into ``sim:QMHUB01``,
    whose queues ``queues`` defines and whose latency is ``latency_ms``. Then, untimed, what
    became of the storm's queue (its ledger rows by outcome and reason, its depth) and the
    bytes the warehouse and the sim hold."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from dlq_pipeline.config.settings import StorageSettings
    from dlq_pipeline.warehouse.storage import open_storage

    warehouse = Path(params["work"]) / "warehouse"
    sim = warehouse / "_sim" / f"{SIM_QMGR}.sqlite"
    sim.parent.mkdir(parents=True, exist_ok=True)
    latency = params.get("latency_ms")
    qm = fresh_sim(sim, SIM_QMGR, latency)
    qm.configure({**SIM_CONFIG, "queues": params["queues"], "faults": latency_faults(latency)})
    qm.close()
    got = child_memory_pipeline({**params, "target": f"sim:{SIM_QMGR}"})
    got.pop("replayed_bytes")  # what a `dir:` target holds: nothing here

    began = time.perf_counter()
    spark = SparkSession.getActiveSession()
    assert spark is not None, "child_memory_pipeline leaves its session running"
    ledger = open_storage(spark, StorageSettings(path=str(warehouse))).read("ledger")
    rows = (
        ledger.where((F.rtrim("target_q") == STORM.dest_q) & (F.rtrim("target_qmgr") == STORM.home))
        .groupBy("outcome", "reason_code", F.col("error_text").startswith("circuit breaker open").alias("breaker"))
        .count()
        .collect()
    )
    queue: dict = {"outcomes": {}, "failed_q_full": 0, "deferred_by_breaker": 0}
    for r in rows:
        queue["outcomes"][r["outcome"]] = queue["outcomes"].get(r["outcome"], 0) + r["count"]
        queue["failed_q_full"] += r["count"] if r["outcome"] == "failed" and r["reason_code"] == 2053 else 0
        queue["deferred_by_breaker"] += r["count"] if r["outcome"] == "deferred" and r["breaker"] else 0
    from dlq_pipeline.mq.sim import SimQueueManager

    qm = SimQueueManager(sim, SIM_QMGR)
    conn = qm.connect()
    queue["depth"], queue["maxdepth"] = conn.inquire_depth(STORM.dest_q, STORM.home)
    conn.disconnect()
    qm.close()
    got["storm_queue"] = queue
    got["disk_bytes"] = {
        "sim": bytes_under(sim.parent),
        "warehouse": bytes_under(warehouse) - bytes_under(sim.parent),
    }
    got["after_run_s"] = time.perf_counter() - began
    return got


# --- the section -------------------------------------------------------------------------------


def bench_storm(spark, sizes: Sizes, work: Path, ctx: Context) -> dict:
    """The Q_FULL retry storm end to end (the module's docstring): `run` against the
    sequential reference's time extrapolated from a sample, with its peak memory."""
    from dlq_pipeline.config.settings import ReplaySettings

    n, payload = sizes.storm_messages, sizes.storm_payload_bytes
    sample = min(sizes.storm_reference_messages, n)
    out: dict = {
        "messages": n,
        "payload_bytes": payload,
        "master": "local[2]",
        "heap": PIPELINE_HEAP,
        "latency_ms": ctx.latency_ms or {},
        "passed": False,
    }
    if not n or not sample:
        return {**out, "error": "not run: storm_messages and storm_reference_messages must be above 0"}
    work.mkdir(parents=True, exist_ok=True)
    inputs = work / "storm-dumps"
    present = cached_storm_dump(inputs, n, payload, sample) is not None
    disk = disk_plan(shutil.disk_usage(work).free, n, payload, dump_present=present)
    out["disk"] = disk
    if not disk["run"]:
        return {
            **out,
            "error": f"not run: needs about {disk['need_bytes'] / 1e9:.1f} GB free under {work} "
            f"(the dump about {disk['dump_bytes'] / 1e9:.1f} GB of it), {disk['free_bytes'] / 1e9:.1f} GB are",
        }
    made = storm_dump(inputs, n, payload, sample)
    out["input"] = {k: v for k, v in made.items() if k not in ("params", "dump", "sample")}
    out["storm"] = {
        "reason": STORM.reason,
        "queue": STORM.dest_q,
        "qmgr": STORM.home,
        "share": STORM.share,
        "room": STORM_ROOM,
        "maxdepth": storm_queues(made["storm_messages"])[f"{STORM.home}:{STORM.dest_q}"]["maxdepth"],
        # `run`'s: consecutive transient failures (2053 among them) that open a queue's breaker
        "breaker_threshold": ReplaySettings().breaker_threshold,
    }
    temp = Path(tempfile.mkdtemp(prefix="storm-run-", dir=work))
    try:
        rules = temp / "storm.rules"
        rules.write_text(STORM_RULES)
        began = time.perf_counter()
        try:
            got = ctx.child(
                "storm",
                {
                    "master": "local[2]",
                    "dump": made["dump"],
                    "work": str(temp / "run"),
                    "rules": str(rules),
                    "queues": storm_queues(made["storm_messages"]),
                    "latency_ms": ctx.latency_ms,
                    "delete_dump_when_landed": disk["delete_dump_when_landed"],
                },
            )
        except Exception as exc:  # noqa: BLE001 - e.g. the child ran out of memory: report it, keep the reference
            out["run"] = {
                "error": failure_summary(getattr(exc, "stderr", str(exc))),
                "stderr_log": str(getattr(exc, "log", "")),
            }
        else:
            # a fresh process's `run`: Spark's start-up included, the untimed look at the ledger not
            got["wall_s"] = round(time.perf_counter() - began - got["after_run_s"], 2)
            out["run"] = got
        reference = ctx.child(
            "reference",
            {
                "sim": str(temp / "reference.sqlite"),
                "inputs": [made["sample"]],
                "rules": str(rules),
                "latency_ms": ctx.latency_ms,
                "queues": storm_queues(made["sample_storm_messages"]),
            },
        )
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    out["reference"] = {
        "messages": made["sample_messages"],
        "storm_messages": made["sample_storm_messages"],
        "maxdepth": storm_queues(made["sample_storm_messages"])[f"{STORM.home}:{STORM.dest_q}"]["maxdepth"],
        "run_s": round(reference["run_s"], 3),
        "outcomes": reference["outcomes"],
        **extrapolated(reference["run_s"], made["sample_messages"], n),
    }
    run = out["run"]
    if "error" not in run:
        outcomes = run["outcomes"]
        out["reference_over_run"] = ratio(out["reference"]["extrapolated_s"], run["wall_s"])
        out["passed"] = run["landed"] == n and sum(outcomes.values()) == n
    if ctx.in_process:
        out["note"] = "in-process smoke run: peaks include the test session and are not comparable"
    out["targets"] = {
        # the whole storm through one run whose JVM and Python workers each have a 2 GB heap
        "storm_million_messages_in_2g_heaps": {
            "value": out["run"].get("landed") if isinstance(out.get("run"), dict) else None,
            "limit": STORM_TARGET_MESSAGES,
            "holds": None if n < STORM_TARGET_MESSAGES else bool(out["passed"] and PIPELINE_HEAP == "2g"),
            "heap": PIPELINE_HEAP,
        }
    }
    return out
