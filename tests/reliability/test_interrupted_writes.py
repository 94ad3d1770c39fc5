"""What a killed run leaves behind must not leak into the next one (no subprocess needed:
the leftovers are made by hand, exactly as a killed run leaves them)."""

from __future__ import annotations

import datetime as dt
import shutil
from collections import Counter

import pytest

from dlq_pipeline.classify.spark import decide_pending as decide
from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import ReplaySettings
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.replay.checkpoints import Checkpoint
from dlq_pipeline.replay.spark import replay
from dlq_pipeline.replay.writer import WorkItem, replay_partition
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.warehouse.storage import Storage
from tests.spark.replay_retry_job import NOW, dead_letter, frame, message_row

pytestmark = pytest.mark.spark


def test_a_killed_parquet_write_leaves_nothing_the_next_write_picks_up(spark, tmp_path):
    """A killed job leaves its committed task output in TABLE/_temporary; the next append's
    job commit would merge it into the table (Hadoop's FileOutputCommitter)."""
    storage = Storage(spark, path=str(tmp_path / "wh"))
    rows = [message_row(f"key{n:03d}", *dead_letter(n), index=n) for n in range(3)]
    storage.append("messages", frame(spark, "messages", rows[:1]))
    # what a job killed between task commit and job commit leaves behind
    scratch = tmp_path / "scratch"
    frame(spark, "messages", rows[1:2]).coalesce(1).write.parquet(str(scratch))
    stale = tmp_path / "wh" / "messages" / "_temporary" / "0" / "task_202603011200_0007_m_000000"
    stale.mkdir(parents=True)
    for part in scratch.glob("part-*.parquet"):
        shutil.copy(part, stale / part.name)
    storage.merge_new("messages", frame(spark, "messages", rows[2:]))
    keys = Counter(r["message_key"] for r in storage.read("messages").collect())
    assert keys == Counter({"key000": 1, "key002": 1})  # the dead job's row did not appear
    assert not (tmp_path / "wh" / "messages" / "_temporary").exists()


def test_classify_after_a_dead_replay_does_not_decide_what_it_delivered(spark, tmp_path):
    """A replay killed after committing batches: its checkpoint rows reach the ledger before
    the next classify, so every decision of the next run gets exactly one ledger row."""
    warehouse = tmp_path / "wh"
    config = load_config(overrides={"storage": {"path": str(warehouse)}, "replay": {"batch_size": 2}})
    storage = Storage(spark, path=str(warehouse))
    storage.append(
        "messages", frame(spark, "messages", [message_row(f"key{n:03d}", *dead_letter(n), index=n) for n in range(5)])
    )
    sim = SimQueueManager(warehouse / "_sim" / "SIM.sqlite", "SIM")
    items = [
        WorkItem(
            f"key{n:03d}", "FWD", *dead_letter(n), target_q="HOLD", target_qmgr="", header=True, putaut="DEF", attempt=1
        )
        for n in range(5)
    ]

    def killed(batches):
        raise SystemExit("kill -9")

    with pytest.raises(SystemExit):
        for _ in replay_partition(
            items,
            sim.connect,
            ReplaySettings(batch_size=2),
            run_id="DEAD",
            partition_id=0,
            checkpoint=Checkpoint.for_partition(warehouse / "_checkpoints", "DEAD", 0),
            now=NOW,
            on_commit=killed,
        ):
            pass

    table = parse_rules("ACTION(FWD) FWDQ(HOLD) HEADER(YES)\n", "t.rules")
    decisions, _ = decide(spark, storage, table, run_id="NEXT", now=NOW + dt.timedelta(minutes=1))
    assert sorted(r["message_key"] for r in decisions.collect()) == ["key002", "key003", "key004"]
    counts = replay(
        spark, storage, decisions, target="sim:", settings=ReplaySettings.from_config(config), run_id="NEXT", now=NOW
    )
    assert counts == {"delivered": 3}
    assert sorted(r.md.msg_id for r in sim.put_log()) == sorted(dead_letter(n)[0].msg_id for n in range(5))
    ledger = Counter((r["run_id"], r["message_key"], r["outcome"]) for r in storage.read("ledger").collect())
    assert ledger == Counter(
        {
            ("DEAD", "key000", "delivered"): 1,
            ("DEAD", "key001", "delivered"): 1,
            ("NEXT", "key002", "delivered"): 1,
            ("NEXT", "key003", "delivered"): 1,
            ("NEXT", "key004", "delivered"): 1,
        }
    )
