"""Replay as a Spark stage: one action, one ledger row per decision, no double sends even
when tasks are retried (``local[2,3]`` in a subprocess) or a run died after putting."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import ReplaySettings, StorageSettings
from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
from dlq_pipeline.mq.constants import MQ_MAX_MESSAGE_BYTES
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.replay.checkpoints import Checkpoint
from dlq_pipeline.replay.placement import place_queues, slot_values
from dlq_pipeline.replay.rebuild import rebuild
from dlq_pipeline.replay.spark import replay
from dlq_pipeline.replay.targets import TargetError, local_warehouse
from dlq_pipeline.replay.writer import WorkItem, replay_partition
from dlq_pipeline.rules.model import Decision
from dlq_pipeline.warehouse.storage import open_storage
from tests.conftest import storage_settings
from tests.spark.replay_retry_job import NOW, dead_letter, decision_row, frame, message_row
from tests.support import REPO, repo_env

pytestmark = pytest.mark.spark
JOB = Path(__file__).with_name("replay_retry_job.py")


def setup(spark, warehouse: Path, decisions: list[dict], *, truncated=(), kind="parquet", **replay_options):
    config = load_config(
        overrides={
            "storage": storage_settings(kind, warehouse),
            "replay": {"batch_size": 2, "max_connections": 2, **replay_options},
        }
    )
    storage = open_storage(spark, StorageSettings.from_config(config))
    keys = sorted({d["message_key"] for d in decisions})
    rows = [
        message_row(k, *dead_letter(int(k[3:]), "APP.IN"), index=int(k[3:]), truncated=k in truncated)
        for k in keys
        if not k.startswith("nomsg")
    ]
    storage.append("messages", frame(spark, "messages", rows))
    return ReplaySettings.from_config(config), storage


@pytest.mark.parametrize("counted", [False, True], ids=["joined", "broadcast"])
def test_every_decision_gets_one_ledger_row_and_the_qm_gets_each_message_once(spark, tmp_path, monkeypatch, counted):
    """Decisions counted (as `run` has them) and as many as `BROADCAST_DECISIONS` says are
    broadcast into the join: the same rows."""
    import dlq_pipeline.replay.spark as replay_module

    monkeypatch.setattr(replay_module, "BROADCAST_DECISIONS", (1, 10))
    run = "RUN-A"
    later = NOW + dt.timedelta(hours=1)
    decisions = [
        decision_row(
            "key000", "RETRY", run_id=run, index=0, target_q="APP.IN", target_qmgr="", putaut="DEF", attempt=1
        ),
        decision_row(
            "key001", "FWD", run_id=run, index=1, target_q="HOLD", target_qmgr="", header=True, putaut="DEF", attempt=1
        ),
        decision_row(
            "key002", "FWD", run_id=run, index=2, target_q="HOLD", target_qmgr="", header=False, putaut="DEF", attempt=2
        ),
        decision_row("key003", "DISCARD", run_id=run, index=3),
        decision_row("key004", "IGNORE", run_id=run, index=4, rule_line=None, ignore_reason="no_match"),
        decision_row(
            "key005",
            "RETRY",
            run_id=run,
            index=5,
            target_q="APP.IN",
            target_qmgr="",
            putaut="DEF",
            attempt=2,
            not_before=later,
        ),
        decision_row("key006", "IGNORE", run_id=run, index=6, rule_line=None, ignore_reason="truncated"),
        decision_row(
            "key007", "RETRY", run_id=run, index=7, target_q="APP.IN", target_qmgr="", putaut="DEF", attempt=1
        ),
        decision_row(
            "key008", "RETRY", run_id=run, index=8, target_q="APP.IN", target_qmgr="", putaut="DEF", attempt=1
        ),
        decision_row(
            "nomsg9", "RETRY", run_id=run, index=9, target_q="APP.IN", target_qmgr="", putaut="DEF", attempt=1
        ),
    ]
    settings, storage = setup(spark, tmp_path / "wh", decisions, truncated={"key007"})
    counts = replay(
        spark,
        storage,
        frame(spark, "decisions", decisions),
        target="sim:",
        settings=settings,
        run_id=run,
        now=NOW,
        decisions_total=len(decisions) if counted else None,
    )
    assert counts == {"delivered": 4, "discarded": 1, "ignored": 3, "deferred": 1, "failed": 1}

    ledger = {r["message_key"]: r for r in storage.read("ledger").collect()}
    assert {k: (r["outcome"], r["reason_code"]) for k, r in ledger.items()} == {
        "key000": ("delivered", 0),
        "key001": ("delivered", 0),
        "key002": ("delivered", 0),
        "key003": ("discarded", None),
        "key004": ("ignored", None),
        "key005": ("deferred", None),
        "key006": ("ignored", None),
        "key007": ("ignored", None),
        "key008": ("delivered", 0),
        "nomsg9": ("failed", None),
    }
    assert ledger["key002"]["attempt"] == 2 and ledger["key001"]["target_q"] == "HOLD"
    assert all(r["run_id"] == run and r["partition_id"] is not None for r in ledger.values())

    sim = SimQueueManager(tmp_path / "wh" / "_sim" / "SIM.sqlite", "SIM")
    received = {(r.queue, r.md.msg_id): (r.md, r.data) for r in sim.put_log()}
    expected = {
        ("APP.IN", dead_letter(0)[0].msg_id): rebuild(*dead_letter(0), Decision("RETRY")),
        ("HOLD", dead_letter(1)[0].msg_id): dead_letter(1),
        ("HOLD", dead_letter(2)[0].msg_id): rebuild(*dead_letter(2), Decision("FWD", header=False)),
        ("APP.IN", dead_letter(8)[0].msg_id): rebuild(*dead_letter(8), Decision("RETRY")),
    }
    assert received == expected and len(sim.put_log()) == 4
    assert not (tmp_path / "wh" / "_checkpoints" / run).exists()


@pytest.mark.parametrize("per_qmgr", [1, 2])
def test_broadcast_decisions_give_the_work_items_of_the_join(spark, tmp_path, monkeypatch, per_qmgr):
    """Decisions broadcast to the messages' scan (inner join + the decisions without a
    message) give the left join's work items: the same rows, in the same partitions, in the
    same order, with a checkpoint's keys left out."""
    import dlq_pipeline.replay.spark as replay_module

    run = "RUN-B"
    actions = ["RETRY", "FWD", "DISCARD", "IGNORE", "RETRY"]
    decisions = [
        decision_row(
            f"key{n:03d}",
            actions[n % 5],
            run_id=run,
            index=n,
            target_q=f"APP.Q{n % 4}",
            target_qmgr="QM2" if n % 3 == 0 else "",
            putaut="DEF",
            attempt=1,
            header=n % 2 == 0,
        )
        for n in range(30)
    ]
    decisions += [
        decision_row(
            f"nomsg{n}", "RETRY", run_id=run, index=90 + n, target_q="APP.Q0", target_qmgr="", putaut="DEF", attempt=1
        )
        for n in range(2)
    ]
    _, storage = setup(spark, tmp_path / "wh", decisions, truncated={"key004"})
    skip = {"key002", "key017", "nomsg1"}
    monkeypatch.setattr(replay_module, "BROADCAST_DECISIONS", (len(decisions), len(decisions)))

    def items(total):
        got = replay_module.work_items(
            storage, frame(spark, "decisions", decisions), 3, skip, per_qmgr, decisions_total=total
        )
        plan = got._jdf.queryExecution().executedPlan().toString()
        plan = plan.count("LeftOuter"), plan.count("Inner")
        # the path asked for: the inner join + anti join in BROADCAST_DECISIONS, else the left join
        assert plan == ((0, 1) if total == len(decisions) else (1, 0))
        return [(r["p"], r.asDict()) for r in got.withColumn("p", F.spark_partition_id()).collect()]

    joined, broadcast = items(None), items(len(decisions))
    assert broadcast == joined == items(len(decisions) + 1)
    assert len(joined) == len(decisions) - len(skip)
    assert sum(not r["has_message"] for _, r in joined) == 1 and any(r["truncated"] for _, r in joined)
    assert all(r["data"] is None for _, r in joined if r["action"] in ("DISCARD", "IGNORE"))


def test_dir_target_through_spark(spark, tmp_path):
    run = "RUN-D"
    decisions = [
        decision_row(
            f"key{n:03d}",
            "RETRY",
            run_id=run,
            index=n,
            target_q="APP.IN",
            target_qmgr="QM2" if n % 2 else "",
            putaut="DEF",
            attempt=1,
        )
        for n in range(6)
    ]
    settings, storage = setup(spark, tmp_path / "wh", decisions)
    counts = replay(
        spark,
        storage,
        frame(spark, "decisions", decisions),
        target=f"dir:{tmp_path / 'out'}",
        settings=settings,
        run_id=run,
        now=NOW,
    )
    assert counts == {"delivered": 6}
    for qdir, numbers in (("@local", (0, 2, 4)), ("QM2", (1, 3, 5))):
        got = [(m.md, m.data) for m in read_dump(str(tmp_path / "out" / run / qdir / "APP.IN.dmp"))]
        assert got == [rebuild(*dead_letter(n), Decision("RETRY")) for n in numbers]  # in DLQ order


def test_largest_put_is_the_largest_message_a_put_decision_ships(spark, tmp_path, monkeypatch):
    """Only messages put by these decisions count: a larger one discarded, or stored but not
    decided on, does not cap replay's tasks; none large gives 0 (one job, no lookup)."""
    import dlq_pipeline.replay.spark as replay_module

    run = "RUN-L"
    actions = ["RETRY", "DISCARD", "FWD", "RETRY", "IGNORE"]
    decisions = [
        decision_row(f"key{n:03d}", a, run_id=run, index=n, target_q="APP.IN", target_qmgr="", putaut="DEF", attempt=1)
        for n, a in enumerate(actions)
    ]
    _, storage = setup(spark, tmp_path / "wh", decisions + [decision_row("key009", "RETRY", run_id=run, index=9)])
    sizes = {r["message_key"]: r["data_length"] for r in storage.read("messages").collect()}
    frame_ = frame(spark, "decisions", decisions)
    assert replay_module.largest_put(storage, frame_) == 0  # the real threshold: nothing is large
    monkeypatch.setattr(replay_module, "LARGE_MESSAGE_BYTES", 1)
    assert replay_module.largest_put(storage, frame_) == max(sizes[k] for k in ("key000", "key002", "key003"))
    monkeypatch.setattr(replay_module, "LARGE_PUTS_LISTED", 2)  # too many to look up: the largest stored
    assert replay_module.largest_put(storage, frame_) == max(sizes.values())


def test_messages_replayed_in_pieces_give_the_same_files_and_ledger(spark, tmp_path, monkeypatch):
    """Where the bodies go through replay's join (a catalog's table) and the heap cannot hold
    the messages to put whole in every task slot, its join, shuffle and sorts carry them in
    pieces (here of 7 bytes), which each task joins again: what replay puts and records is
    what it does with whole rows, and with the bodies read where they lie."""
    import dlq_pipeline.replay.spark as replay_module
    from dlq_pipeline.warehouse.storage import Storage

    monkeypatch.setattr(replay_module, "PIECE_BYTES", 7)
    run = "RUN-C"
    actions = ["RETRY", "FWD", "DISCARD", "RETRY", "IGNORE", "RETRY"] * 2
    decisions = [
        decision_row(
            f"key{n:03d}",
            a,
            run_id=run,
            index=n,
            target_q=f"APP.Q{n % 3}",
            target_qmgr="QM2" if n % 2 else "",
            putaut="DEF",
            attempt=1,
            header=False,
        )
        for n, a in enumerate(actions)
    ]
    decisions.append(
        decision_row(
            "nomsg9", "RETRY", run_id=run, index=99, target_q="APP.Q0", target_qmgr="", putaut="DEF", attempt=1
        )
    )
    got = {}
    # (bodies read where they lie, how many tasks may hold a message to put: None for all)
    for in_place, large_tasks in ((True, None), (False, None), (False, 1)):
        settings, storage = setup(spark, tmp_path / f"wh{in_place}{large_tasks}", decisions, max_connections=2)
        with monkeypatch.context() as patch:
            if not in_place:
                patch.setattr(Storage, "plain_parquet_files", lambda self, table: False)
            asked = []
            patch.setattr(
                replay_module, "large_message_tasks", lambda spark_, largest: asked.append(largest) or large_tasks
            )
            out = tmp_path / f"out{in_place}{large_tasks}"
            counts = replay(
                spark,
                storage,
                frame(spark, "decisions", decisions),
                target=f"dir:{out}",
                settings=settings,
                run_id=run,
                now=NOW,
            )
        assert counts == {"delivered": 8, "discarded": 2, "ignored": 2, "failed": 1}
        # joined: asked for MQ's largest message first; only where that does not fit, the largest put
        assert asked == ([] if in_place else [MQ_MAX_MESSAGE_BYTES, 0] if large_tasks else [MQ_MAX_MESSAGE_BYTES])
        if not in_place:
            items = replay_module.work_items(
                storage, frame(spark, "decisions", decisions), 2, set(), large_tasks=large_tasks
            )
            assert (items.count() > len(decisions)) == (large_tasks is not None)
        ledger = sorted(
            tuple(r[c] for c in ("message_key", "outcome", "target_qmgr", "target_q", "partition_id", "reason_code"))
            for r in storage.read("ledger").collect()
        )
        files = {p.relative_to(out): [(m.md, m.data) for m in read_dump(str(p))] for p in sorted(out.rglob("*.dmp"))}
        got[in_place, large_tasks] = ledger, files
    whole = got[False, None]
    assert got[True, None] == whole == got[False, 1] and sum(len(v) for v in whole[1].values()) == 8


def land_in_files(storage, rows: list[dict], files: int) -> None:
    """``rows`` appended to `messages` in ``files`` appends (as many data files or more), the
    later appends holding the earlier rows of the DLQ: replay's order is not the files'."""
    from tests.spark.replay_retry_job import frame as frame_

    size = -(-len(rows) // files)
    for start in reversed(range(0, len(rows), size)):
        storage.append("messages", frame_(storage.spark, "messages", rows[start : start + size]))


def stored_ledger(storage) -> list[tuple]:
    columns = [c for c in storage.read("ledger").columns if c not in ("started_at", "finished_at")]
    return sorted(tuple(r[c] for c in columns) for r in storage.read("ledger").collect())


@pytest.mark.parametrize("storage_kind", ["parquet", "delta"], indirect=True)
def test_bodies_read_where_they_lie_give_the_puts_of_the_join_in_the_same_order(
    spark, tmp_path, monkeypatch, storage_kind
):
    """Replay reads each body from the data file its scan names (`replay.bodies`), in the
    writer's task: every queue gets the same messages, byte for byte, in the same order (DLQ
    order) as when the join carries the bodies, over data files written out of DLQ order,
    with two connections to one queue manager; the ledgers are the same."""
    from dlq_pipeline.warehouse.storage import Storage
    from tests.spark.replay_retry_job import message_row

    queues = [f"APP.Q{q}" for q in range(5)]
    actions = ["RETRY", "FWD", "RETRY", "DISCARD", "RETRY", "IGNORE", "RETRY"]
    results = {}
    for in_place in (True, False):
        run = "RUN-W"
        decisions, rows = [], []
        for n in range(120):
            queue = queues[(n * 3) % 5 if n % 4 else 0]
            md, data = dead_letter(n, queue)
            rows.append(message_row(f"key{n:03d}", md, data + bytes([n]) * (n * 997 % 70_000), index=n))
            action = actions[n % len(actions)]
            decisions.append(
                decision_row(
                    f"key{n:03d}",
                    action,
                    run_id=run,
                    index=n,
                    putaut="DEF",
                    attempt=1,
                    header=n % 2 == 0,
                    **({"target_q": queue, "target_qmgr": ""} if action in ("RETRY", "FWD") else {}),
                )
            )
        warehouse = tmp_path / f"wh-{in_place}"
        config = load_config(
            overrides={
                "storage": storage_settings(storage_kind, warehouse),
                "replay": {"batch_size": 7, "max_connections": 3, "connections_per_qmgr": 2},
            }
        )
        storage = open_storage(spark, StorageSettings.from_config(config))
        land_in_files(storage, rows, 4)
        assert storage.plain_parquet_files("messages")
        if not in_place:
            monkeypatch.setattr(Storage, "plain_parquet_files", lambda self, table: False)
        counts = replay(
            spark,
            storage,
            frame(spark, "decisions", decisions),
            target="sim:",
            settings=ReplaySettings.from_config(config),
            run_id=run,
            now=NOW,
        )
        monkeypatch.undo()
        sim = SimQueueManager(warehouse / "_sim" / "SIM.sqlite", "SIM")
        puts = {q: [(r.md, r.data) for r in sim.put_log(queue=q)] for q in queues}
        results[in_place] = counts, puts, stored_ledger(storage)
        dlq_order = [n for n in range(120) if decisions[n]["target_q"] == "APP.Q0"]
        assert [md.msg_id for md, _ in puts["APP.Q0"]] == [dead_letter(n)[0].msg_id for n in dlq_order]
    assert results[True] == results[False]
    assert results[True][0]["delivered"] == sum(len(p) for p in results[True][1].values()) > 60


def test_no_exchange_or_sort_of_replay_carries_the_bodies(spark, tmp_path):
    """With the bodies read where they lie, the plan of replay's work items moves no `data`
    through a shuffle (Exchange) or a sort; the join that carries them does (the check sees it)."""
    import dlq_pipeline.replay.spark as replay_module

    run = "RUN-X"
    decisions = [
        decision_row(
            f"key{n:03d}", "RETRY", run_id=run, index=n, target_q="APP.IN", target_qmgr="", putaut="DEF", attempt=1
        )
        for n in range(6)
    ]
    _, storage = setup(spark, tmp_path / "wh", decisions)

    def moving_bodies(in_place: bool) -> list[str]:
        items = replay_module.work_items(
            storage, frame(spark, "decisions", decisions), 2, set(), 2, bodies_in_place=in_place
        )
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            items.explain(mode="formatted")
        plan = printed.getvalue()
        nodes = plan.split("\n\n")
        moving = [n for n in nodes if re.match(r"\(\d+\) (\w*Exchange|Sort)\b", n.strip())]
        assert moving, plan  # the plan has its shuffle and sort
        return [n for n in moving if re.search(r"\bdata#\d+", n)]

    assert moving_bodies(in_place=True) == []
    assert moving_bodies(in_place=False) != []


def test_pieces_of_every_size_join_back_to_the_message(spark, monkeypatch):
    """`pieces` cuts each message's data (empty, null, shorter than a piece, an exact
    multiple, one byte over) into ordered rows; `whole_messages` makes the rows of before."""
    import dlq_pipeline.replay.spark as replay_module

    monkeypatch.setattr(replay_module, "PIECE_BYTES", 4)
    datas = [b"", None, b"abc", b"abcd", b"abcdefgh", b"abcdefghi", bytes(range(256)) * 3]
    rows = [(f"k{n}", d, n) for n, d in enumerate(datas)]
    frame_ = spark.createDataFrame(rows, "message_key string, data binary, n int")
    cut = replay_module.pieces(frame_).orderBy("n", replay_module.PIECE_COLUMN).collect()
    assert len(cut) == sum(max(1, -(-len(d or b"") // 4)) for d in datas)
    assert all(r["data"] is None or len(r["data"]) <= 4 for r in cut)
    joined = list(replay_module.whole_messages(r.asDict() for r in cut))
    assert [(r["message_key"], r["data"], r["n"]) for r in joined] == rows


def test_connections_per_qmgr_spreads_one_qmgr_by_queue_each_queue_in_dlq_order(spark, tmp_path):
    """replay.connections_per_qmgr: the local queue manager's queues go over several
    connections (partitions), placed by size (the largest first, each on the least loaded:
    `place_queues`), each target queue through one of them, in DLQ order; the files are
    those of the one-connection run."""
    queues = [f"APP.Q{q}" for q in range(8)]
    sizes = [9, 6, 4, 3, 2, 1, 1, 1]  # skewed, as a DLQ's traffic is
    order = [q for q, n in zip(queues, sizes) for _ in range(n)]
    order = [order[(n * 7) % len(order)] for n in range(len(order))]  # interleaved on the DLQ
    files = {}
    for per_qmgr in (1, 4):
        run = f"RUN-P{per_qmgr}"
        decisions = [
            decision_row(
                f"key{n:03d}", "RETRY", run_id=run, index=n, target_q=q, target_qmgr="", putaut="DEF", attempt=1
            )
            for n, q in enumerate(order)
        ]
        settings, storage = setup(
            spark, tmp_path / f"wh{per_qmgr}", decisions, max_connections=4, connections_per_qmgr=per_qmgr
        )
        counts = replay(
            spark,
            storage,
            frame(spark, "decisions", decisions),
            target=f"dir:{tmp_path / 'out'}",
            settings=settings,
            run_id=run,
            now=NOW,
        )
        assert counts == {"delivered": len(order)}
        ledger = storage.read("ledger").collect()
        partitions = {q: {r["partition_id"] for r in ledger if r["target_q"] == q} for q in queues}
        assert all(len(p) == 1 for p in partitions.values())  # a queue never spans connections
        if per_qmgr == 1:
            assert len(set().union(*partitions.values())) == 1
        else:  # where place_queues put each queue: Spark's hash partitioning sent its slot there
            placed = place_queues({("", q): n for q, n in zip(queues, sizes)}, 4, 4)
            assert {q: p.pop() for q, p in partitions.items()} == {q: placed[("", q)] for q in queues}
            assert sorted(placed[("", q)] for q in queues[:4]) == [0, 1, 2, 3]
        files[per_qmgr] = {
            q: [(m.md, m.data) for m in read_dump(str(tmp_path / "out" / run / "@local" / f"{q}.dmp"))] for q in queues
        }
    assert files[4] == files[1]
    first = [n for n, q in enumerate(order) if q == "APP.Q3"]
    assert files[1]["APP.Q3"] == [rebuild(*dead_letter(n), Decision("RETRY")) for n in first]  # DLQ order


def test_slot_values_land_in_their_partitions(spark):
    """The values `slot_values` names each partition by are sent there by `repartition` on
    the Spark installed (its hash partitioning is the Murmur3 `spark_int_hash` copies)."""
    for n in (2, 4, 7):
        slots = slot_values(n)
        df = spark.createDataFrame([(v,) for v in slots], "slot int").repartition(n, "slot")
        got = {r["slot"]: r["p"] for r in df.select("slot", F.spark_partition_id().alias("p")).collect()}
        assert got == {v: p for p, v in enumerate(slots)}


def test_a_rerun_after_a_run_died_never_puts_its_committed_messages_again(spark, tmp_path, storage_kind):
    warehouse = tmp_path / "wh"
    items = [
        WorkItem(f"key{n:03d}", "RETRY", *dead_letter(n), target_q="APP.IN", target_qmgr="", putaut="DEF", attempt=1)
        for n in range(5)
    ]
    sim = SimQueueManager(warehouse / "_sim" / "SIM.sqlite", "SIM")

    def killed(batches):
        raise SystemExit("kill -9")  # the whole run dies after its first committed batch

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
    assert len(sim.put_log()) == 2

    decisions = [
        decision_row(
            f"key{n:03d}", "RETRY", run_id="NEXT", index=n, target_q="APP.IN", target_qmgr="", putaut="DEF", attempt=1
        )
        for n in range(5)
    ]
    settings, storage = setup(spark, warehouse, decisions, kind=storage_kind)
    counts = replay(
        spark, storage, frame(spark, "decisions", decisions), target="sim:", settings=settings, run_id="NEXT", now=NOW
    )
    assert counts == {"delivered": 3}
    assert [r.md.msg_id for r in sim.put_log()] == [dead_letter(n)[0].msg_id for n in range(5)]
    rows = Counter((r["run_id"], r["outcome"]) for r in storage.read("ledger").collect())
    assert rows == Counter({("DEAD", "delivered"): 2, ("NEXT", "delivered"): 3})
    assert not (warehouse / "_checkpoints").exists() or not any((warehouse / "_checkpoints").iterdir())


def test_replay_refuses_what_it_cannot_do_safely(spark, tmp_path):
    settings, storage = setup(spark, tmp_path / "wh", [])
    empty = frame(spark, "decisions", [])
    with pytest.raises(TargetError, match="run id"):
        replay(spark, storage, empty, target="dry-run", settings=settings, run_id="../x", now=NOW)
    with pytest.raises(TargetError, match="mq.qmgrs.QM9"):
        replay(spark, storage, empty, target="mq:QM9", settings=settings, run_id="R", now=NOW)
    assert replay(spark, storage, empty, target="dry-run", settings=settings, run_id="R", now=NOW) == {}
    assert local_warehouse("dbfs:/mnt/wh") == Path("/dbfs/mnt/wh")
    with pytest.raises(TargetError, match="file system path"):
        local_warehouse("s3a://bucket/wh")


def test_task_retries_never_send_twice(tmp_path):
    """local[2,3]: every task fails once after committing a batch and is retried."""
    warehouse, result = tmp_path / "wh", tmp_path / "result.json"
    env = repo_env()
    proc = subprocess.run(
        [sys.executable, str(JOB), str(warehouse), str(result)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(result.read_text())
    assert out["injected"], "no task failure was injected: the test proves nothing"
    assert out["counts"] == {"delivered": 30}
    sent = Counter(msg_id for _qmgr, _queue, msg_id, _data in out["puts"])
    assert sorted(sent) == sorted(out["expected"].values()) and set(sent.values()) == {1}
    by_qmgr = {msg_id: qmgr for qmgr, _q, msg_id, _d in out["puts"]}
    for n in range(30):
        assert by_qmgr[out["expected"][f"key{n:03d}"]] == ("SIM" if n % 2 else "QM2")
    ledger_keys = Counter(k for k, outcome, _p, _b in out["ledger"] if outcome == "delivered")
    assert sorted(ledger_keys) == sorted(out["expected"]) and set(ledger_keys.values()) == {1}
    assert len(out["ledger"]) == 30 and not out["checkpoints_left"]
