"""Section 5, end to end: `run` in a fresh process and in a warm session, against the
sequential reference (a runmqdlq-like loop, one message at a time) and Spark's own stages of a
run's shape; the crossover between them, and the simulated queue manager's own cost per put."""

from __future__ import annotations

import itertools
import shutil
import time
from pathlib import Path

from benchmarks import data
from benchmarks.common import Context, Sizes, StageJobs, holds, median, ratio, summary
from benchmarks.sim import SIM_CONFIG, fresh_sim, latency_faults

# Every target a ratio to, or a margin over, a limit this run measures on this machine:
FIXED_COST_MESSAGES, FIXED_COST_RATIO = 1_000, 1.6  # a cold `run`'s own time over Spark's cold stages
CROSSOVER_OVER_FLOOR = 500  # a fresh process crosses within the (start-up + cold stages) floor + 500 messages
LARGE_RUN, LARGE_RUN_RATIO = 100_000, 1.15  # warm: over the busiest connection's puts + the stages' limits
SIM_PUT_LIMIT_US = 50.0


def connection_spans(spark, warehouse: Path) -> list[tuple[int, float]]:
    """How evenly a run's puts spread over its replay connections, and how long each
    connection's task worked: (messages delivered, its ledger rows' first start to last
    finish in seconds) per connection, the busiest first; the busiest one bounds replay."""
    from pyspark.sql import functions as F

    from dlq_pipeline.config.settings import StorageSettings
    from dlq_pipeline.warehouse.storage import open_storage

    ledger = open_storage(spark, StorageSettings(path=str(warehouse))).read("ledger")
    # the span in Spark, from epoch microseconds: collected timestamps are naive local times
    connections = (
        ledger.groupBy("partition_id")
        .agg(
            F.sum(F.when(F.col("outcome") == "delivered", 1).otherwise(0)).alias("n"),
            (F.unix_micros(F.max("finished_at")) - F.unix_micros(F.min("started_at"))).alias("span_us"),
        )
        .collect()
    )
    return sorted(((int(r["n"]), round(r["span_us"] / 1e6, 2)) for r in connections if r["n"]), reverse=True)


def child_pipeline(params: dict) -> dict:
    """``run`` in a fresh process: Spark start-up and one trivial job (the start-up figure
    the fixed cost is measured against), then run_pipeline into the sim, counting the Spark
    jobs of each stage. With ``warm``, the session is started as a notebook's or a running
    cluster's is, knowing nothing of the work to come (`quick_jit` then never applies), and
    the same run follows the first one in it: the warm session's figure."""
    began = time.perf_counter()

    from dlq_pipeline.config.settings import IngestSettings, ReplaySettings, RunSettings, StorageSettings
    from dlq_pipeline.dumps.plan import input_bytes
    from dlq_pipeline.engine.session import get_spark, quick_jit
    from dlq_pipeline.pipeline import run_pipeline
    from dlq_pipeline.rules.parser import load_rules

    session = {"master": params["master"], "app_name": "bench-run"}
    if not params.get("warm"):
        # as `run` does: it names the bytes it will read (`dlq_pipeline.engine.session.quick_jit`)
        session["work_bytes"] = input_bytes(params["inputs"])
    spark = get_spark(session)
    started = time.perf_counter()
    spark.range(1).count()  # a trivial job: the JVM's first job pays its own warm-up
    trivial = time.perf_counter()
    rules = load_rules(params["rules"])
    replay = ReplaySettings(connections_per_qmgr=params.get("connections_per_qmgr", 1))
    ingest = IngestSettings(reader=params.get("reader", "auto"))  # "python": the reader before the JVM one

    def run_into(warehouse: Path, run_id: str, progress=None):
        """One run into a new sim under ``warehouse``; its summary and seconds (sim set-up included)."""
        began_run = time.perf_counter()
        fresh_sim(warehouse / "_sim" / "QMHUB01.sqlite", "QMHUB01", params.get("latency_ms"))
        got = run_pipeline(
            spark,
            RunSettings(storage=StorageSettings(path=str(warehouse)), ingest=ingest, replay=replay),
            rules,
            inputs=params["inputs"],
            target="sim:QMHUB01",
            run_id=run_id,
            progress=progress,
        )
        return got, time.perf_counter() - began_run

    wh = Path(params["warehouse"])
    jobs = StageJobs(spark)
    summary_, run_s = run_into(wh, "bench", jobs)
    cold_done = time.perf_counter()
    per_stage = jobs.per_stage()
    warm = None
    if params.get("warm"):
        # the same run again in this session, into a new warehouse and sim: what a notebook,
        # a job on a running cluster or a Spark Connect server sees (no start-up, a warm JVM)
        warm_wh = wh.with_name(wh.name + "-warm")
        shutil.rmtree(warm_wh, ignore_errors=True)
        warm_summary, warm_s = run_into(warm_wh, "bench-warm")
        warm = {"run_s": warm_s, "durations": warm_summary.durations, "outcomes": warm_summary.outcomes}
    per_connection = connection_spans(spark, wh)
    if warm is not None:
        warm["replay_s_per_connection"] = [span for _, span in connection_spans(spark, warm_wh)]
        if params.get("stage_limits"):  # Spark's own stages over the same dumps, in this warm JVM
            warm["spark_stage_s"] = plain_stages(spark, params["inputs"], wh.with_name(wh.name + "-plain"))
    return {
        "spark_start_s": started - began,
        "trivial_job_s": trivial - started,
        "run_s": run_s,
        # what this child did after its cold run (the warm run, the ledger's spread): the
        # parent takes it off the child's wall time, which is then a fresh process's `run`
        "after_cold_run_s": time.perf_counter() - cold_done,
        "puts_per_connection": [n for n, _ in per_connection],
        "replay_s_per_connection": [s for _, s in per_connection],
        "outcomes": summary_.outcomes,
        "durations": summary_.durations,
        "landed": summary_.messages_landed,
        "jobs_per_stage": per_stage,
        "jobs": sum(per_stage.values()) if per_stage else None,
        "quick_jit": quick_jit(session),
        "warm": warm,
        "class_archive": "-XX:SharedArchiveFile="
        in spark.sparkContext.getConf().get("spark.driver.extraJavaOptions", ""),
    }


E2E_MAX_MESSAGE = 64 * 1024  # the largest generated message of the end-to-end runs


def sim_put_cost(work: Path, puts: int, depths: tuple[int, ...], rounds: int = 3) -> dict:
    """The simulated queue manager's own cost per put, no latency configured: ``rounds`` rounds
    of ``puts`` syncpoint puts in units of work of 200 (as the writer commits), after each of
    ``depths`` messages (and each round's puts) already put. Wall and CPU µs per put (commits
    included), the median of the rounds: one round of a few seconds on a shared 2-core machine
    moved by ±15 % between runs of the same code. The puts are those of the end-to-end runs:
    messages generated as theirs are (up to ``E2E_MAX_MESSAGE``; the simulator's cost grows
    with the bytes it stores), every MsgId its own, each put to the
    queue its MQDLH names, as a RETRY puts it (a unit then touches many queues, each a lookup
    and an index page of its own: one queue and repeated MsgIds measure about half the cost)."""
    from statistics import median

    from dlq_pipeline.dumps.generator import generate

    made = [g for g in generate(min(puts, 2_000), seed=606, max_size=E2E_MAX_MESSAGE) if g.dlh is not None]
    pool = [(g.dlh.dest_q.strip(" \x00") or "TARGET.Q", g.message) for g in made]
    out = {
        "puts": puts,
        "unit_of_work": 200,
        "rounds": rounds,
        "depths": {},
        "mean_bytes": round(sum(len(m.data) for _, m in pool) / len(pool)),
        "queues": len({q for q, _ in pool}),
    }
    serial = itertools.count()
    for depth in depths:
        qm = fresh_sim(work / "sim-cost.sqlite", "QMHUB01", None)
        conn = qm.connect()
        handles = {q: conn.open_for_put(q) for q in sorted({q for q, _ in pool})}

        def planned(n: int) -> list:
            """The puts of one round, made beforehand: each MsgId unique, as a DLQ's are."""
            return [
                (handles[q], m.md.replace(msg_id=next(serial).to_bytes(8, "big") + m.md.msg_id[8:]), m.data)
                for q, m in (pool[i % len(pool)] for i in range(n))
            ]

        def put_many(plan: list) -> None:
            for i, (handle, md, body) in enumerate(plan):
                conn.put(handle, md, body, syncpoint=True)
                if i % 200 == 199:
                    conn.commit()
            conn.commit()

        put_many(planned(depth))
        walls, cpus = [], []
        for _ in range(rounds):
            plan = planned(puts)
            wall, cpu = time.perf_counter(), time.process_time()
            put_many(plan)
            walls.append(round((time.perf_counter() - wall) / puts * 1e6, 1))
            cpus.append(round((time.process_time() - cpu) / puts * 1e6, 1))
        conn.disconnect()
        out["depths"][str(depth)] = {
            "wall_us_per_put": median(walls),
            "cpu_us_per_put": median(cpus),
            "rounds_cpu_us_per_put": cpus,
        }
    out["worst_wall_us_per_put"] = max(d["wall_us_per_put"] for d in out["depths"].values())
    # the target is the simulator's own CPU: wall time on a shared machine adds everyone else's
    out["worst_cpu_us_per_put"] = max(d["cpu_us_per_put"] for d in out["depths"].values())
    return out


def child_cold_stages(params: dict) -> dict:
    """Spark's own limit for a cold run's stages: in a fresh process started as `run` starts
    it (the same JIT and class archive), after start-up and a trivial job, three plain stages
    of a run's shape over the same dumps, each one cold job (`plain_stages`). A run in a cold
    JVM, which needs more of Spark than this, cannot take less."""
    from dlq_pipeline.dumps.plan import input_bytes
    from dlq_pipeline.engine.session import get_spark

    spark = get_spark(
        {"master": params["master"], "app_name": "bench-cold-stages", "work_bytes": input_bytes(params["inputs"])}
    )
    spark.range(1).count()
    seconds = plain_stages(spark, params["inputs"], Path(params["work"]))
    return {"stage_s": seconds, "stages_s": round(sum(seconds.values()), 3)}


def plain_stages(spark, inputs: list[str], work: Path) -> dict[str, float]:
    """Seconds of three plain Spark stages of a run's shape over ``inputs``, one job each:
    the dumps' text lines written as Parquet (ingest), those rows through a scalar Arrow UDF
    into Parquet (classify), and through a Python function per partition into Parquet
    (replay)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    shutil.rmtree(work, ignore_errors=True)

    def width(values):  # no hints: they would ask for another kind of Arrow UDF
        return pc.utf8_length(values).cast(pa.int32())

    def per_row(batches):
        for batch in batches:
            widths = [len(v) for v in batch.column("value").to_pylist()]
            yield pa.RecordBatch.from_pydict({"n": pa.array(widths, pa.int32())})

    stages = {
        "ingest": lambda: spark.read.text(inputs).write.parquet(str(work / "lines")),
        "classify": lambda: (
            spark.read.parquet(str(work / "lines"))
            .select("value", F.arrow_udf(width, returnType="int")(F.col("value")).alias("n"))  # type: ignore[call-overload]
            .write.parquet(str(work / "decided"))
        ),
        "replay": lambda: (
            spark.read.parquet(str(work / "decided")).mapInArrow(per_row, "n int").write.parquet(str(work / "ledger"))
        ),
    }
    seconds = {}
    for name, stage in stages.items():
        began = time.perf_counter()
        stage()
        seconds[name] = round(time.perf_counter() - began, 3)
    shutil.rmtree(work, ignore_errors=True)
    return seconds


def child_reference(params: dict) -> dict:
    """What runmqdlq does, one message at a time: browse the DLQ, decode and match, put the
    rebuilt message, get the original off the DLQ and commit, all under one unit of work."""
    began = time.perf_counter()
    from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
    from dlq_pipeline.mq.interface import MQError
    from dlq_pipeline.replay.rebuild import RebuildError, rebuild
    from dlq_pipeline.rules.matcher import decide
    from dlq_pipeline.rules.parser import load_rules
    from dlq_pipeline.rules.view import match_view

    path = Path(params["sim"])
    qm = fresh_sim(path, "QMHUB01", None)
    dlq = "SYSTEM.DEAD.LETTER.QUEUE"
    loader = qm.connect()
    handle = loader.open_for_put(dlq)
    for source in params["inputs"]:
        for msg in read_dump(source):
            loader.put(handle, msg.md, msg.data, syncpoint=True)
    loader.commit()
    loader.disconnect()
    # ``queues``: target queue definitions (e.g. the storm's full queue, benchmarks/storm.py)
    qm.configure({**SIM_CONFIG, "queues": params.get("queues", {}), "faults": latency_faults(params.get("latency_ms"))})
    table = load_rules(params["rules"])
    ready = time.perf_counter()

    conn = qm.connect()
    handles, counts = {}, {}
    for message in conn.browse(dlq):
        decision = decide(table, match_view(message.md, message.data))
        outcome = decision.action
        try:
            if decision.action in ("RETRY", "FWD"):
                md, body = rebuild(message.md, message.data, decision)
                key = (decision.target_q, decision.target_qmgr)
                if key not in handles:
                    handles[key] = conn.open_for_put(decision.target_q, decision.target_qmgr or "")
                conn.put(handles[key], md, body, syncpoint=True)
            if decision.action != "IGNORE":
                conn.get(dlq, msg_id=message.md.msg_id, syncpoint=True)
                conn.commit()
        except (MQError, RebuildError, ValueError):
            outcome = "failed"
            try:
                conn.backout()
            except MQError:
                pass
        counts[outcome] = counts.get(outcome, 0) + 1
    conn.disconnect()
    done = time.perf_counter()
    return {"setup_s": ready - began, "run_s": done - ready, "outcomes": counts}


def measured_crossing(points: list[tuple[int, float, float]]) -> dict:
    """The N above which the pipeline finished first at every measured size: interpolated
    between the last size the reference won and the next one (each pair of measurements as a
    straight line), or the smallest size when the pipeline won them all; None when the
    reference won the largest."""
    points = sorted(points)
    lead = [(n, pipeline - reference) for n, pipeline, reference in points]
    slower = [i for i, (_, d) in enumerate(lead) if d > 0]
    if not slower:
        return {
            "crossover_messages": points[0][0],
            "between": None,
            "note": f"the pipeline finished first at every measured size, {points[0][0]:,} messages the smallest",
        }
    last = slower[-1]
    if last == len(lead) - 1:
        return {
            "crossover_messages": None,
            "between": None,
            "note": "the sequential reference finished first at the largest measured size: no crossover",
        }
    (n0, d0), (n1, d1) = lead[last], lead[last + 1]
    return {
        "crossover_messages": round(n0 + (n1 - n0) * d0 / (d0 - d1)),
        "between": [n0, n1],
        "note": f"the reference finished first at {n0:,} messages, the pipeline at {n1:,} and every larger size",
    }


def crossover(points: list[tuple[int, float, float]]) -> dict:
    """Where the pipeline starts finishing first: ``crossover_messages`` from the measurements
    themselves (`measured_crossing`), which the targets use; and least-squares lines through
    (N, pipeline seconds) and (N, reference seconds) with the N where they meet
    (``fitted_crossover_messages``). One line from 1,000 to 100,000 messages mixes regimes (a
    small run pays its fixed jobs, a large one its one busiest replay connection), so the
    fitted meeting point can lie far from the measured one."""

    def fit(xs, ys):
        if len(xs) == 1:
            return 0.0, ys[0] / xs[0]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        return my - slope * mx, slope

    xs = [p[0] for p in points]
    a, b = fit(xs, [p[1] for p in points])
    c, d = fit(xs, [p[2] for p in points])
    meet = (a - c) / (d - b) if d > b else None
    return {
        **measured_crossing(points),
        "pipeline_fixed_s": round(a, 2),
        "pipeline_ms_per_message": round(b * 1e3, 4),
        "reference_fixed_s": round(c, 2),
        "reference_ms_per_message": round(d * 1e3, 4),
        "fitted_crossover_messages": round(meet) if meet is not None and meet > 0 else meet,
    }


def bench_end_to_end(spark, sizes: Sizes, work: Path, ctx: Context) -> dict:
    out = {
        "latency_ms": ctx.latency_ms or {},
        "master": "local[2]",
        "sizes": {},
        "replay": {"max_connections": 4, "connections_per_qmgr": sizes.e2e_connections_per_qmgr},
    }
    points, warm_points = [], []
    # Spark's own cold stages run beside the fixed cost's run, or the smallest where a run
    # (a tiny one) does not measure that size
    beside = FIXED_COST_MESSAGES if FIXED_COST_MESSAGES in sizes.e2e_counts else min(sizes.e2e_counts)
    for count in sizes.e2e_counts:
        dumps = data.dumps(work / f"e2e-dumps-{count}", count, seed=404, max_size=E2E_MAX_MESSAGE)
        runs: dict[str, list[float]] = {"pipeline": [], "reference": [], "cold_stages": []}
        detail = {}
        pipeline = {
            "master": "local[2]",
            "inputs": dumps,
            "rules": data.STARTER_RULES,
            "latency_ms": ctx.latency_ms,
            "connections_per_qmgr": sizes.e2e_connections_per_qmgr,
        }
        for _ in range(sizes.e2e_repeats):
            wh = work / f"e2e-wh-{count}"
            shutil.rmtree(wh, ignore_errors=True)
            began = time.perf_counter()
            detail["pipeline"] = ctx.child("pipeline", {**pipeline, "warehouse": str(wh)})
            runs["pipeline"].append(time.perf_counter() - began - detail["pipeline"]["after_cold_run_s"])
            began = time.perf_counter()
            detail["reference"] = ctx.child(
                "reference",
                {
                    "sim": str(work / f"e2e-ref-{count}.sqlite"),
                    "inputs": dumps,
                    "rules": data.STARTER_RULES,
                    "latency_ms": ctx.latency_ms,
                },
            )
            # the reference's loading of its DLQ is set-up, not work: leave it out
            runs["reference"].append(time.perf_counter() - began - detail["reference"]["setup_s"])
            if count == beside:  # the fixed cost's own limit, from the same dumps
                params = {"master": "local[2]", "inputs": dumps, "work": str(work / "e2e-cold-stages")}
                detail["cold_stages"] = ctx.child("cold_stages", params)
                runs["cold_stages"].append(detail["cold_stages"]["stages_s"])
        p, q = median(runs["pipeline"]), median(runs["reference"])
        # the warm session in a child of its own: the cold child's JVM compiles with C1 only
        # where `run` knows its input is small, which a notebook's session never does
        wh = work / f"e2e-wh-{count}-session"
        shutil.rmtree(wh, ignore_errors=True)
        # the largest run's warm limit: Spark's own stages in the same warm JVM
        limits = count == max(sizes.e2e_counts)
        detail["warm_session"] = ctx.child(
            "pipeline", {**pipeline, "warehouse": str(wh), "warm": True, "stage_limits": limits}
        )
        warm = detail["warm_session"]["warm"]
        out["sizes"][str(count)] = {
            "pipeline_wall_s": summary(runs["pipeline"], count),
            "reference_wall_s": summary(runs["reference"], count),
            "pipeline_spark_start_s": round(detail["pipeline"]["spark_start_s"], 2),
            "pipeline_trivial_job_s": round(detail["pipeline"]["trivial_job_s"], 2),
            # the pipeline's own time: after Spark's start-up and a trivial job
            "pipeline_run_s": round(detail["pipeline"]["run_s"], 2),
            # Spark's own three cold stages of a run's shape after the same start-up (`child_cold_stages`)
            "spark_cold_stages_s": round(median(runs["cold_stages"]), 2) if runs["cold_stages"] else None,
            "spark_cold_stage_s": detail["cold_stages"]["stage_s"] if "cold_stages" in detail else None,
            "pipeline_jobs": detail["pipeline"]["jobs"],
            "pipeline_jobs_per_stage": detail["pipeline"]["jobs_per_stage"],
            "pipeline_puts_per_connection": detail["pipeline"].get("puts_per_connection"),
            "pipeline_replay_s_per_connection": detail["pipeline"].get("replay_s_per_connection"),
            "pipeline_quick_jit": detail["pipeline"]["quick_jit"],
            "pipeline_class_archive": detail["pipeline"].get("class_archive"),
            "warm_run_s": round(warm["run_s"], 2) if warm else None,
            # the warm session's first run (the same inputs), which the warm run follows
            "warm_session_first_run_s": round(detail["warm_session"]["run_s"], 2),
            "warm_session_quick_jit": detail["warm_session"]["quick_jit"],
            # left out of pipeline_wall_s (which is a fresh process's `run`, start-up included)
            "pipeline_after_cold_run_s": round(detail["pipeline"]["after_cold_run_s"], 2),
            "warm_stage_s": warm.get("durations"),
            "warm_replay_s_per_connection": warm.get("replay_s_per_connection") if warm else None,
            # Spark's own stages of a run's shape over the same dumps in the warm JVM (`plain_stages`)
            "warm_spark_stage_s": warm.get("spark_stage_s") if warm else None,
            "reference_over_warm_run": ratio(q, warm["run_s"]) if warm else None,
            "warm_outcomes_match": warm["outcomes"] == detail["pipeline"]["outcomes"] if warm else None,
            "pipeline_stage_s": detail["pipeline"]["durations"],
            "pipeline_outcomes": detail["pipeline"]["outcomes"],
            "reference_outcomes": detail["reference"]["outcomes"],
            "reference_over_pipeline": ratio(q, p),
        }
        points.append((count, p, q))
        if warm:
            warm_points.append((count, warm["run_s"], q))
    out["crossover"] = crossover(points)
    out["crossover_warm_session"] = crossover(warm_points) if warm_points else None
    out["sim_put_cost"] = sim_put_cost(work, 5_000 if sizes.name != "tiny" else 200, (0, max(sizes.e2e_counts)))
    out["targets"] = e2e_targets(out)
    return out


def start_up_s(size: dict) -> float:
    """A fresh process's Spark start-up and first (trivial) job, as one end-to-end size measured it."""
    return size["pipeline_spark_start_s"] + size["pipeline_trivial_job_s"]


def e2e_targets(d: dict) -> dict:
    """Each end-to-end target as measured here, with its limit and whether it holds (None
    when this run did not measure it)."""
    at = d["sizes"].get(str(FIXED_COST_MESSAGES))
    cold_stages = at.get("spark_cold_stages_s") if at else None
    fixed = ratio(at["pipeline_run_s"], cold_stages) if at and cold_stages else None
    crossing = d["crossover"].get("crossover_messages")

    # The crossover's floor: how many messages the reference handles in the time Spark's
    # start-up, a trivial job and its own cold stages of a run's shape take (the median
    # start-up over the fresh processes of this run, on the reference's fitted line). No run
    # in a fresh process can cross below it here.
    start_ups = [start_up_s(s) for s in d["sizes"].values()]
    # Spark's cold stages ran beside the 1,000-message run (or the smallest, in a run without it)
    beside = next((s["spark_cold_stages_s"] for s in d["sizes"].values() if s.get("spark_cold_stages_s")), None)
    line = d["crossover"]
    floor = (
        round((median(start_ups) + beside - line["reference_fixed_s"]) / line["reference_ms_per_message"] * 1e3)
        if start_ups and beside and line.get("reference_ms_per_message")
        else None
    )
    cold_limit = floor + CROSSOVER_OVER_FLOOR if floor is not None else None

    return {
        "cold_run_over_spark_cold_stages_at_1000": {
            "value": fixed,
            "limit": FIXED_COST_RATIO,
            "holds": holds(fixed, FIXED_COST_RATIO),
            "run_s": at["pipeline_run_s"] if at else None,
            "spark_cold_stages_s": cold_stages,
            "jobs": at["pipeline_jobs"] if at else None,
        },
        "crossover_messages": {
            "value": crossing,
            "limit": cold_limit,
            "holds": holds(crossing, cold_limit) if isinstance(crossing, (int, float)) else None,
            "start_up_and_cold_stages_floor": floor,
        },
        "sim_cpu_us_per_put": {
            "value": d["sim_put_cost"]["worst_cpu_us_per_put"],
            "limit": SIM_PUT_LIMIT_US,
            "holds": holds(d["sim_put_cost"]["worst_cpu_us_per_put"], SIM_PUT_LIMIT_US),
        },
    }


def warm_large_target(doc: dict) -> dict | None:
    """The largest warm run against what bounds it, from the sections of one results document:
    its busiest replay connection's puts (replay's limit: the connections run side by side),
    Spark's own ingest-shaped stage over the same dumps in the same warm JVM (the text lines
    read and stored: `plain_stages`), and decode's limit (section 1: the MQDLH decoded by JVM
    expressions) for each of its messages. None without the end-to-end section."""
    e2e, decode = doc.get("end_to_end"), doc.get("decode")
    if not isinstance(e2e, dict) or "sizes" not in e2e:
        return None
    large = e2e["sizes"].get(str(LARGE_RUN)) or {}
    spans, plain = large.get("warm_replay_s_per_connection"), large.get("warm_spark_stage_s")
    per_message_us = ((decode or {}).get("variants") or {}).get("jvm_expressions", {}).get("us_per_message")
    parts = {
        "busiest_connection_s": max(spans) if spans else None,
        "spark_ingest_s": plain["ingest"] if plain else None,
        "decode_limit_s": round(per_message_us * LARGE_RUN / 1e6, 3) if per_message_us else None,
    }
    bound = round(sum(parts.values()), 2) if None not in parts.values() else None
    value = ratio(large.get("warm_run_s"), bound) if large.get("warm_run_s") and bound else None
    return {
        "value": value,
        "limit": LARGE_RUN_RATIO,
        "holds": holds(value, LARGE_RUN_RATIO),
        "run_s": large.get("warm_run_s"),
        "bound_s": bound,
        **parts,
        "stage_s": large.get("warm_stage_s"),
    }
