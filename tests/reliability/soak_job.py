"""The fault soak, in its own process (task retries need ``local[2,4]``):

    python tests/reliability/soak_job.py WAREHOUSE RESULT.json COUNT SEED

Replays COUNT generated messages to the simulated queue manager while it injects faults
(2009 on puts and on commits, one in-doubt commit, 2053 on a full queue, 2035 on a secured
queue, 2085 on a deleted one, slow puts) and every replay task fails once after a few
committed batches; then the faults are cleared and a second run replays what is left. The
test (test_soak.py) checks what this writes: the ledgers, the sim's put log and fault counts.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import random
import sys

NOW = dt.datetime(2026, 3, 1, 12, 0, 0)
BATCH = 50
THRESHOLD = 5
PARTITIONS = 2
MAX_TASK_ATTEMPTS = 4
QUEUES = (("OK.A", 0.45), ("OK.B", 0.45), ("SLOW.Q", 0.03), ("FULL.Q", 0.04), ("SECURE.Q", 0.02), ("GONE.Q", 0.01))
FULL_AFTER = 10
FAULTS = [
    {"op": "put", "reason": 2009, "probability": 0.001},  # connection broken
    {"op": "put", "queue": "FULL.Q", "reason": 2053, "after": FULL_AFTER},  # the queue fills up
    {"op": "put", "queue": "SLOW.Q", "delay": 0.002},  # slow puts
    {"op": "commit", "reason": 2009, "probability": 0.03},  # lost before the commit: backed out
    {"op": "commit", "reason": 2009, "committed": True, "after": 20, "times": 1},  # in doubt: committed
    {"op": "open", "reason": 2009, "probability": 0.01},  # broken at MQOPEN
]
FULL_FAULT, IN_DOUBT_FAULT = 1, 4


def sim_config(seed: int, faults: bool) -> dict:
    queues = {}
    if faults:
        for qmgr in ("", "QMB:"):
            queues[qmgr + "SECURE.Q"] = {"authority": {"someone.else": ["put", "setall"]}}
            queues[qmgr + "GONE.Q"] = {"exists": False}
    else:
        for qmgr in ("", "QMB:"):
            queues[qmgr + "SECURE.Q"] = {}
    return {
        "remote_qmgrs": ["QMB"],
        "seed": seed,
        "maxdepth": 10_000_000,
        "queues": queues,
        "faults": FAULTS if faults else [],
    }


def fail_once(marker_dir: str, seed: int, partition_id: int, batches: int) -> None:
    """Every task's first attempt fails after a few committed batches (Spark retries it)."""
    from pyspark import TaskContext

    if batches == 2 + (seed + partition_id) % 5 and TaskContext.get().attemptNumber() == 0:
        open(os.path.join(marker_dir, f"task-failure-p{partition_id}"), "w").close()
        raise RuntimeError(f"injected task failure in partition {partition_id}")


def main(warehouse: str, result_path: str, count: int, seed: int) -> None:
    from dlq_pipeline.config import load_config
    from dlq_pipeline.config.settings import ReplaySettings
    from dlq_pipeline.dumps.generator import generate_messages
    from dlq_pipeline.engine.session import get_spark
    from dlq_pipeline.mq.sim import SimQueueManager
    from dlq_pipeline.replay.spark import replay
    from dlq_pipeline.tables.identity import data_digest, message_key
    from dlq_pipeline.warehouse.storage import Storage
    from tests.spark.replay_retry_job import decision_row, frame, message_row

    spark = get_spark(
        {
            "master": f"local[{PARTITIONS},{MAX_TASK_ATTEMPTS}]",
            "app_name": "dlq-soak",
            "spark_conf": {"spark.sql.shuffle.partitions": str(PARTITIONS)},
        }
    )
    try:
        config = load_config(
            overrides={
                "storage": {"path": warehouse},
                "replay": {
                    "batch_size": BATCH,
                    "max_connections": PARTITIONS,
                    "breaker_threshold": THRESHOLD,
                    "reconnect_backoff": 0.001,
                },
            }
        )
        storage = Storage(spark, path=warehouse)
        sim_path = os.path.join(warehouse, "_sim", "SIM.sqlite")
        sim = SimQueueManager(sim_path, "SIM", sim_config(seed, faults=True))
        rng = random.Random(seed)
        names, weights = zip(*QUEUES)
        expected, messages, decisions = {}, [], []
        chunk = 20_000
        for n, msg in enumerate(generate_messages(count, seed, max_size=2048)):
            key = message_key(msg.md, data_digest(msg.data))
            queue = rng.choices(names, weights)[0]
            qmgr = rng.choice(("", "QMB"))
            expected[key] = [msg.md.msg_id.hex(), queue, qmgr or "SIM"]
            messages.append(message_row(key, msg.md, msg.data, index=n))
            decisions.append(
                decision_row(
                    key,
                    "FWD",
                    run_id="SOAK1",
                    index=n,
                    target_q=queue,
                    target_qmgr=qmgr,
                    header=True,
                    putaut="DEF",
                    attempt=1,
                )
            )
            if len(messages) >= chunk:
                storage.append("messages", frame(spark, "messages", messages))
                messages = []
        if messages:
            storage.append("messages", frame(spark, "messages", messages))
        decided = frame(spark, "decisions", decisions)
        hook = functools.partial(fail_once, warehouse, seed)
        settings = ReplaySettings.from_config(config)
        first = replay(
            spark, storage, decided, target="sim:", settings=settings, run_id="SOAK1", now=NOW, task_hook=hook
        )
        counts = {str(k): list(v) for k, v in _fault_counts(sim.faults_path).items()}
        puts_first = len(sim.put_log())

        # The operators fix things; the next scheduled run replays what is left.
        sim.configure(sim_config(seed, faults=False))
        ended = {r["message_key"] for r in storage.read("ledger").collect() if r["outcome"] in ("delivered",)}
        again = [dict(d, run_id="SOAK2", attempt=2) for d in decisions if d["message_key"] not in ended]
        second = replay(
            spark, storage, frame(spark, "decisions", again), target="sim:", settings=settings, run_id="SOAK2", now=NOW
        )
        ledger = [
            [r["run_id"], r["message_key"], r["outcome"], r["reason_code"], r["error_text"], r["partition_id"]]
            for r in storage.read("ledger").collect()
        ]
        result = {
            "expected": expected,
            "first": first,
            "second": second,
            "ledger": ledger,
            "puts": [[r.qmgr, r.queue, r.md.msg_id.hex()] for r in sim.put_log()],
            "puts_first": puts_first,
            "fault_counts": counts,
            "task_failures": sorted(n for n in os.listdir(warehouse) if n.startswith("task-failure")),
            "checkpoints_left": sorted(os.listdir(os.path.join(warehouse, "_checkpoints")))
            if os.path.isdir(os.path.join(warehouse, "_checkpoints"))
            else [],
        }
        with open(result_path, "w") as f:
            json.dump(result, f)
    finally:
        spark.stop()


def _fault_counts(path) -> dict[int, tuple[int, int]]:
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(path)) as db:
        return {fault: (seen, fired) for fault, seen, fired in db.execute("SELECT fault, seen, fired FROM counts")}


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
