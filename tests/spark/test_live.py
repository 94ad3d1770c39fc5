"""Live drain (browse and move) and settle against the simulated queue manager: rows exactly
as ingest lands them, nothing lost under injected failures, one drain per queue at a time,
settle confirmed by the message key (data digest included)."""

from __future__ import annotations

import datetime as dt
import itertools
import json

import pytest
from pyspark.sql import functions as F

from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.dumps.generator import generate_messages
from dlq_pipeline.ingest.spark import ingest
from dlq_pipeline.live.loops import LiveError, QueueLock, QueueLocked, live_queue, lock_path
from dlq_pipeline.live.spark import drain, settle
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.tables.identity import data_digest, message_key
from dlq_pipeline.warehouse.storage import Storage
from tests.spark.replay_retry_job import NOW, dead_letter, frame
from tests.support import repo_env

pytestmark = pytest.mark.spark
DLQ = "SYSTEM.DEAD.LETTER.QUEUE"
# columns that say where and when a row was landed, or that MQ itself changes on a get
WHERE_AND_WHEN = {
    "source_kind",
    "source_qmgr",
    "source_queue",
    "source_file",
    "source_index",
    "source_line",
    "source_offset",
    "recorded_at",
    "landed_at",
    "run_id",
    "md_version",
    "backout_count",
}


def seed_queue(qm: SimQueueManager, messages, queue: str = DLQ) -> None:
    """Put ``(md, data)`` pairs with all context set, as the queue manager would have them."""
    c = qm.connect()
    handle = c.open_for_put(queue)
    for md, data in messages:
        c.put(handle, md, data)
    c.commit()
    c.disconnect()


def sim(warehouse, name="QM1", **config):
    return SimQueueManager(warehouse / "_sim" / f"{name}.sqlite", name, config)


def rows_by_key(df, drop=()):
    return {r["message_key"]: {k: v for k, v in r.asDict().items() if k not in drop} for r in df.collect()}


def test_browse_drain_lands_exactly_what_ingest_lands_and_twice_lands_nothing(spark, tmp_path):
    messages = [m for m in generate_messages(40, seed=9, max_size=4096) if any(m.md.msg_id)]
    wh = tmp_path / "wh"
    qm = sim(wh)
    seed_queue(qm, [(m.md, m.data) for m in messages])
    before = qm.messages(DLQ)
    storage = Storage(spark, path=str(wh))
    live = live_queue("sim:QM1", warehouse=wh)  # no queue named: the queue manager's DEADQ

    first = drain(spark, storage, live, warehouse=wh, run_id="D1", buffer_size=16)  # every message needs 2080 growth
    assert (first.queue, first.read, first.landed, first.removed) == (DLQ, len(messages), len(messages), 0)
    assert qm.messages(DLQ) == before  # browse changes nothing
    again = drain(spark, storage, live, warehouse=wh, run_id="D2")
    assert (again.read, again.landed, again.already_landed) == (len(messages), 0, len(messages))

    drained = rows_by_key(storage.read("messages"))
    assert {r["source_kind"] for r in drained.values()} == {"drain"}
    assert sorted(r["source_index"] for r in drained.values()) == list(range(len(messages)))
    assert {(r["source_qmgr"], r["source_queue"], r["run_id"]) for r in drained.values()} == {("QM1", DLQ, "D1")}

    dump = tmp_path / "same.dmp"
    write_dump(messages, dump)
    other = Storage(spark, path=str(tmp_path / "wh2"))
    ingest(spark, other, [str(dump)], run_id="I1")
    assert rows_by_key(storage.read("messages"), WHERE_AND_WHEN) == rows_by_key(other.read("messages"), WHERE_AND_WHEN)
    assert {k: r["data"] for k, r in drained.items()} == {
        message_key(m.md, data_digest(m.data)): m.data for m in messages
    }


def test_a_drained_message_is_recorded_when_it_was_browsed_or_got(spark, tmp_path):
    """Its Expiry is what was left at the browse or get that read it: the drain's clock then."""
    wh = tmp_path / "wh"
    qm = sim(wh)
    seed_queue(qm, [dead_letter(n) for n in range(5)])
    live = live_queue("sim:QM1", warehouse=wh, queue=DLQ)
    start = dt.datetime(2026, 9, 22, 3, 0, tzinfo=dt.UTC)
    ticks = itertools.count()

    def clock() -> dt.datetime:  # one tick per message read
        return start + dt.timedelta(seconds=next(ticks))

    def stamps(storage: Storage) -> list[int]:
        rows = storage.read("messages").orderBy("source_index").select(F.unix_micros("recorded_at").alias("at"))
        return [r.at for r in rows.collect()]

    def micros(seconds: int) -> int:
        return round(start.timestamp() + seconds) * 1_000_000

    browsed, moved = Storage(spark, path=str(wh)), Storage(spark, path=str(tmp_path / "moved"))
    drain(spark, browsed, live, warehouse=wh, run_id="B1", clock=clock)
    assert stamps(browsed) == [micros(s) for s in range(5)]
    drain(spark, moved, live, warehouse=wh, run_id="M1", mode="move", batch_size=2, clock=clock)
    assert stamps(moved) == [micros(s) for s in range(5, 10)]
    assert qm.messages(DLQ) == []


class FailingStorage(Storage):
    """The durable write fails (a full disk, a lost cluster)."""

    def merge_new(self, table, df, key=None):
        raise OSError("No space left on device")


def test_move_drain_loses_nothing_when_the_write_or_the_commit_fails(spark, tmp_path):
    wh = tmp_path / "wh"
    qm = sim(wh)
    originals = [dead_letter(n) for n in range(7)]
    seed_queue(qm, originals)
    storage = Storage(spark, path=str(wh))
    live = live_queue("sim:QM1", warehouse=wh, queue=DLQ)

    # 1. the durable write fails: the gets are backed out, every message stays on the queue
    with pytest.raises(LiveError, match="stay on the queue"):
        drain(spark, FailingStorage(spark, path=str(wh)), live, warehouse=wh, run_id="M1", mode="move", batch_size=3)
    assert [m.data for m in qm.messages(DLQ)] == [d for _, d in originals]
    assert [m.md.backout_count for m in qm.messages(DLQ)] == [1, 1, 1, 0, 0, 0, 0]
    assert storage.read("messages").count() == 0

    # 2. the process fails between the durable write and MQCMIT of the second batch
    def crash(stage, batch):
        if stage == "landed" and batch == 1:
            raise KeyboardInterrupt("killed between the write and the commit")

    with pytest.raises(KeyboardInterrupt):
        drain(spark, storage, live, warehouse=wh, run_id="M2", mode="move", batch_size=3, on_batch=crash)
    assert [m.data for m in qm.messages(DLQ)] == [d for _, d in originals[3:]]  # first batch committed only
    assert storage.read("messages").count() == 6

    # 3. the connection breaks during the commit of the next drain's first batch
    qm.configure({"faults": [{"op": "commit", "reason": 2009, "times": 1}]})
    with pytest.raises(LiveError, match="MQRC_CONNECTION_BROKEN"):
        drain(spark, storage, live, warehouse=wh, run_id="M3", mode="move", batch_size=3)
    assert len(qm.messages(DLQ)) == 4 and storage.read("messages").count() == 6  # its batch was landed already

    # 4. a clean rerun removes the rest and lands nothing twice
    result = drain(spark, storage, live, warehouse=wh, run_id="M4", mode="move", batch_size=3)
    assert (result.read, result.removed, result.landed, result.already_landed) == (4, 4, 1, 3)
    assert qm.messages(DLQ) == []
    landed = storage.read("messages").collect()
    assert sorted(bytes(r["data"]) for r in landed) == sorted(d for _, d in originals)
    assert len({r["message_key"] for r in landed}) == 7
    got = sorted(m.data for m in qm.get_log(DLQ))
    assert got == sorted(d for _, d in originals)  # each message left the queue exactly once


def test_one_drain_or_settle_per_queue_at_a_time(spark, tmp_path):
    wh = tmp_path / "wh"
    qm = sim(wh)
    seed_queue(qm, [dead_letter(0)])
    live = live_queue("sim:QM1", warehouse=wh, queue=DLQ)
    storage = Storage(spark, path=str(wh))
    with QueueLock(lock_path(wh, "QM1", DLQ), what="the DLQ", command="drain (move)", run_id="OTHER"):
        with pytest.raises(QueueLocked) as refused:
            drain(spark, storage, live, warehouse=wh, run_id="SECOND", mode="move")
        assert "drain (move) (pid" in str(refused.value) and "run OTHER" in str(refused.value)
        with pytest.raises(QueueLocked):
            settle(spark, storage, live, warehouse=wh, run_id="SECOND")
    assert len(qm.messages(DLQ)) == 1 and storage.read("messages").count() == 0
    assert drain(spark, storage, live, warehouse=wh, run_id="AFTER", mode="move").removed == 1  # released


def test_settle_removes_ended_messages_and_leaves_look_alikes(spark, tmp_path):
    wh = tmp_path / "wh"
    qm = sim(wh)
    originals = [dead_letter(n) for n in range(6)]
    twin_md, _ = originals[4]
    twin = (twin_md, b"same MsgId and CorrelId, other data")  # ahead of message 4 on the queue
    seed_queue(qm, originals[:4] + [twin] + originals[4:])
    storage = Storage(spark, path=str(wh))
    live = live_queue("sim:QM1", warehouse=wh, queue=DLQ)
    drain(spark, storage, live, warehouse=wh, run_id="L1")
    keys = [message_key(md, data_digest(data)) for md, data in originals]
    outcome = {0: "delivered", 1: "discarded", 2: "failed", 3: "deferred", 4: "delivered", 5: "dry_run"}
    storage.append(
        "ledger",
        frame(
            spark,
            "ledger",
            [
                {
                    "run_id": "R1",
                    "message_key": keys[n],
                    "action": "RETRY",
                    "rule_line": 3,
                    "attempt": 1,
                    "target_q": "Q",
                    "target_qmgr": "",
                    "outcome": o,
                    "reason_code": None,
                    "error_text": None,
                    "started_at": NOW,
                    "finished_at": NOW,
                    "partition_id": 0,
                    "batch_id": 0,
                }
                for n, o in outcome.items()
            ],
        ),
    )

    result = settle(spark, storage, live, warehouse=wh, run_id="S1", batch_size=2)
    assert (result.browsed, result.ended, result.removed, result.gone) == (7, 3, 2, 0)
    assert [m["message_key"] for m in result.mismatched] == [keys[4]]
    assert [m.data for m in qm.messages(DLQ)] == [
        originals[2][1],
        originals[3][1],
        twin[1],
        originals[4][1],
        originals[5][1],
    ]
    again = settle(spark, storage, live, warehouse=wh, run_id="S2")
    assert (again.removed, len(again.mismatched)) == (0, 1) and len(qm.messages(DLQ)) == 5


def test_a_drain_that_lands_new_messages_next_to_old_ones_prints_no_traceback(spark, tmp_path):
    """The rows a drain lands reach Spark without Python workers: `merge_new` stops reading
    them early when it checks for anything new, and a worker still writing used to print a
    BrokenPipeError traceback on the command's stderr (the JVM's, so only a separate process
    shows it)."""
    import subprocess
    import sys
    from pathlib import Path

    wh = tmp_path / "wh"
    qm = sim(wh)
    seed_queue(qm, [(m.md, m.data) for m in generate_messages(100, seed=21, max_size=4096)])
    drain(spark, Storage(spark, path=str(wh)), live_queue("sim:QM1", warehouse=wh), warehouse=wh, run_id="OLD")
    seed_queue(qm, [(m.md, m.data) for m in generate_messages(300, seed=22, max_size=4096)])

    env = repo_env()
    command = Path(sys.executable).with_name("dlq-pipeline")
    done = subprocess.run(
        [
            str(command),
            "drain",
            "--source",
            "sim:QM1",
            "--warehouse",
            str(wh),
            "--json",
            "--set",
            "spark.master=local[4]",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["read"], result["landed"], result["already_landed"]) == (400, 300, 100)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr[-3000:]
