"""A replay to the ``dir:`` target without Spark, for the fast crash tests (test_dir_crash.py).

`work(count, seed)` builds the same partitions in the test and in the killed subprocess, and
`replay_partitions` runs each through replay's own task function
(`dlq_pipeline.replay.spark.partition_function`: checkpoint, target partition, writer), one
after the other, as the Spark tasks of one run would. What Spark adds (the ledger append) is
left out: a killed run never gets that far, and the test plays the next run's recovery.

    python -m tests.reliability.dir_replay_job OUT WAREHOUSE RUN_ID COUNT SEED
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

from dlq_pipeline.config.settings import ReplaySettings
from dlq_pipeline.dumps.generator import generate_messages
from dlq_pipeline.replay.spark import partition_function, row_to_item
from dlq_pipeline.replay.targets import open_target
from dlq_pipeline.tables import MD_COLUMNS
from dlq_pipeline.tables.identity import data_digest, message_key
from dlq_pipeline.warehouse.ledger import CHECKPOINTS_DIR

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
BATCH = 5
# partition 0: two queues on the local queue manager (two files); partition 1, larger: a remote one
QUEUES = [
    ("", "REPLAYED.A"),
    ("", "REPLAYED.B"),
    ("QMB", "SECURITY.HOLD"),
    ("QMB", "SECURITY.HOLD"),
    ("QMB", "SECURITY.HOLD"),
]


def work(count: int, seed: int) -> list[list[dict]]:
    """Two partitions of decision + message rows (as replay's join makes them): every fourth
    message DISCARDed, the rest FWD with HEADER(YES) to one of `QUEUES`."""
    partitions: list[list[dict]] = [[], []]
    for n, msg in enumerate(generate_messages(count, seed=seed, max_size=2048)):
        key = message_key(msg.md, data_digest(msg.data))
        qmgr, queue = QUEUES[n % len(QUEUES)]
        forward = n % 4 != 3
        row = {column: getattr(msg.md, name) for name, column in MD_COLUMNS.items()}
        row.update(
            message_key=key,
            action="FWD" if forward else "DISCARD",
            rule_line=1,
            attempt=1,
            target_q=queue if forward else None,
            target_qmgr=qmgr if forward else None,
            header=True if forward else None,
            putaut="DEF" if forward else None,
            not_before_us=None,
            data=msg.data,
            truncated=False,
            has_message=True,
            md_char_bytes=None,
            unit=None,
            unit_hold=None,
            recorded_at_us=None,
        )
        partitions[1 if qmgr else 0].append(row)
    return partitions


def replay_partitions(out: Path, warehouse: Path, run_id: str, partitions: list[list[dict]]) -> list[dict]:
    """Each partition through replay's task function; the ledger rows it yields."""
    from dlq_pipeline.tables import LEDGER_COLUMNS

    target = open_target(f"dir:{out}", warehouse=warehouse)
    task = partition_function(
        target, ReplaySettings(batch_size=BATCH), run_id, NOW, str(warehouse / CHECKPOINTS_DIR), None
    )
    return [
        dict(zip(LEDGER_COLUMNS, row))
        for index, rows in enumerate(partitions)
        for row in task(index, map(row_to_item, rows))
    ]


def main(out: str, warehouse: str, run_id: str, count: str, seed: str) -> None:
    replay_partitions(Path(out), Path(warehouse), run_id, work(int(count), int(seed)))


if __name__ == "__main__":
    main(*sys.argv[1:])
