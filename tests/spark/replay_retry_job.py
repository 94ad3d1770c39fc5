"""Builders for replay's Spark tests, and the ``local[2,3]`` job they run in a subprocess.

One SparkContext per process: the suite's session is ``local[2]`` without task retries, so
the retry proof runs here, in its own process, as

    python tests/spark/replay_retry_job.py WAREHOUSE RESULT.json

It lands messages for two target queue managers, replays them to ``sim:`` with
``local[2,3]`` (task retries on), makes every task's first attempt fail right after its
first committed batch, and writes what the simulated queue manager and the ledger hold.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import os
import sys

NOW = dt.datetime(2026, 3, 1, 12, 0, 0)


def message_row(
    key: str, md, data: bytes, *, index: int, truncated: bool = False, recorded_at: dt.datetime | None = None
) -> dict:
    """A `messages` table row for (md, data); ``recorded_at`` None, as a row landed before the
    column existed has it, unless given."""
    from dlq_pipeline.mq.dlh_decoder import dlh_head
    from dlq_pipeline.tables.identity import data_digest

    row = {
        "message_key": key,
        "source_kind": "dmpmqmsg",
        "source_qmgr": "QM1",
        "source_queue": "DLQ",
        "source_file": "dlq.dmp",
        "source_index": index,
        "source_line": 1 + index * 30,
        "source_offset": index * 900,
        "recorded_at": recorded_at,
        "landed_at": NOW,
        "run_id": "land",
        "data": data,
        "data_head": dlh_head(data),
        "data_length": len(data),
        "data_digest": data_digest(data),
        "truncated": truncated,
        "notes": [],
        "md_char_bytes": None,
    }
    for name, value in md.as_dict().items():
        row["md_version" if name == "version" else name] = value
    return row


def decision_row(
    key: str,
    action: str,
    *,
    run_id: str,
    index: int,
    target_q=None,
    target_qmgr=None,
    header=None,
    putaut=None,
    attempt=None,
    not_before=None,
    rule_line=5,
    ignore_reason=None,
) -> dict:
    return {
        "run_id": run_id,
        "message_key": key,
        "source_file": "dlq.dmp",
        "source_index": index,
        "action": action,
        "rule_line": rule_line,
        "rule_index": 0,
        "target_q": target_q,
        "target_qmgr": target_qmgr,
        "header": header,
        "putaut": putaut,
        "ignore_reason": ignore_reason,
        "attempt": attempt,
        "not_before": not_before,
        "decided_at": NOW,
    }


def frame(spark, table: str, rows: list[dict]):
    from dlq_pipeline.warehouse.schemas import table_schema

    schema = table_schema(table)
    return spark.createDataFrame([tuple(r[f.name] for f in schema.fields) for r in rows], schema)


def dead_letter(n: int, dest_q: str = "APP.IN"):
    from dlq_pipeline.mq.mqmd import MQMD
    from dlq_pipeline.mq.structures import DeadLetterHeader, encode_dlh

    md = MQMD(
        version=2,
        encoding=546,
        ccsid=819,
        format="MQDEAD  ",
        persistence=1,
        priority=4,
        msg_id=b"M" + n.to_bytes(4, "big") + b"\x11" * 19,
        correl_id=b"C" + n.to_bytes(4, "big") + b"\x22" * 19,
        user_id="ALICE       ",
        put_appl_name="orders".ljust(28),
        put_date="20260301",
        put_time="10000000",
        reply_to_q="REPLY.Q".ljust(48),
        reply_to_qmgr="QM1".ljust(48),
        backout_count=2,
    )
    dlh = DeadLetterHeader(
        reason=2053,
        dest_q=dest_q.ljust(48),
        dest_qmgr="QM1".ljust(48),
        encoding=546,
        ccsid=1208,
        format="MQSTR   ",
        put_appl_type=7,
        put_appl_name="QM1".ljust(28),
    )
    return md, encode_dlh(dlh, 546, 819) + b"payload %d \x00\xff" % n


def task_hook(marker_dir: str, partition_id: int, batches: int) -> None:
    """Fail every task's first attempt right after it committed its first batch (and leave
    a marker file, so the test knows the failure really happened)."""
    from pyspark import TaskContext

    if batches == 1 and TaskContext.get().attemptNumber() == 0:
        open(os.path.join(marker_dir, f"injected-failure-p{partition_id}"), "w").close()
        raise RuntimeError(f"injected task failure in partition {partition_id} after one committed batch")


def main(warehouse: str, result_path: str) -> None:
    from dlq_pipeline.config import load_config
    from dlq_pipeline.config.settings import ReplaySettings
    from dlq_pipeline.engine.session import get_spark
    from dlq_pipeline.mq.sim import SimQueueManager
    from dlq_pipeline.replay.spark import replay
    from dlq_pipeline.warehouse.storage import Storage

    spark = get_spark(
        {"master": "local[2,3]", "app_name": "replay-retry-test", "spark_conf": {"spark.sql.shuffle.partitions": "2"}}
    )
    try:
        config = load_config(
            overrides={"storage": {"path": warehouse}, "replay": {"batch_size": 4, "max_connections": 2}}
        )
        storage = Storage(spark, format="parquet", path=warehouse)
        sim = SimQueueManager(os.path.join(warehouse, "_sim", "SIM.sqlite"), "SIM", {"remote_qmgrs": ["QM2"]})
        messages, decisions = [], []
        for n in range(30):
            key = f"key{n:03d}"
            messages.append(message_row(key, *dead_letter(n), index=n))
            qmgr = "" if n % 2 else "QM2"
            decisions.append(
                decision_row(
                    key, "RETRY", run_id="RUN1", index=n, target_q="APP.IN", target_qmgr=qmgr, putaut="DEF", attempt=1
                )
            )
        storage.append("messages", frame(spark, "messages", messages))
        counts = replay(
            spark,
            storage,
            frame(spark, "decisions", decisions),
            target="sim:",
            settings=ReplaySettings.from_config(config),
            run_id="RUN1",
            now=NOW,
            task_hook=functools.partial(task_hook, warehouse),
        )
        ledger = storage.read("ledger").collect()
        result = {
            "counts": counts,
            "ledger": sorted((r["message_key"], r["outcome"], r["partition_id"], r["batch_id"]) for r in ledger),
            "puts": [[r.qmgr, r.queue, r.md.msg_id.hex(), r.data.hex()] for r in sim.put_log()],
            "expected": {f"key{n:03d}": dead_letter(n)[0].msg_id.hex() for n in range(30)},
            "injected": sorted(n for n in os.listdir(warehouse) if n.startswith("injected-failure")),
            "checkpoints_left": os.path.exists(os.path.join(warehouse, "_checkpoints", "RUN1")),
        }
        with open(result_path, "w") as f:
            json.dump(result, f)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
