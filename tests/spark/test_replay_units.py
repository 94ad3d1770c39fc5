"""Whole runs over dumps holding message groups: a group is put whole, in order, in one
syncpoint, or held with its reason, and a later landing that completes a held group puts it.
At the ``sim:`` and the ``dir:`` targets, no group is ever left in part."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import RunSettings
from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.mq.groups import MQMF_LAST_MSG_IN_GROUP, MQMF_MSG_IN_GROUP, Part, order_problem, unit_problem
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.mq.structures import DeadLetterHeader, encode_dlh
from dlq_pipeline.pipeline import run_pipeline
from dlq_pipeline.report.spark import build_report
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.warehouse.storage import open_storage

pytestmark = pytest.mark.spark

RULES = """
DESTQ(APP.A) ACTION(FWD) FWDQ(OUT.A) HEADER(NO)
DESTQ(APP.B) ACTION(FWD) FWDQ(OUT.B) HEADER(NO)
DESTQ(APP.C) ACTION(FWD) FWDQ(OUT.C) HEADER(NO) RETRY(3)
DESTQ(APP.S) ACTION(FWD) FWDQ(OUT.B) HEADER(NO)
ACTION(DISCARD)
"""


def gid(letter: str) -> bytes:
    return f"AMQ QM1 GROUP {letter}".encode().ljust(24, b"\x00")


def member(letter: str, seq: int, last: int, dest: str | None = None, twin: int = 0) -> tuple[MQMD, bytes]:
    flags = MQMF_MSG_IN_GROUP | (MQMF_LAST_MSG_IN_GROUP if seq == last else 0)
    n = ord(letter) * 100 + seq + 50 * twin
    md = MQMD(
        version=2,
        format="MQDEAD  ",
        encoding=546,
        ccsid=819,
        msg_id=b"M" + n.to_bytes(4, "big") + b"\x00" * 19,
        put_appl_name="orders".ljust(28),
        put_date="20261201",
        put_time="10000000",
        group_id=gid(letter),
        msg_seq_number=seq,
        msg_flags=flags,
    )
    dlh = DeadLetterHeader(reason=2053, dest_q=dest or f"APP.{letter}", dest_qmgr="QM1", format="MQSTR   ")
    return md, encode_dlh(dlh, 546, 819) + f"{letter}{seq}".encode() + b"'" * twin


def single(n: int) -> tuple[MQMD, bytes]:
    md = MQMD(version=2, format="MQDEAD  ", msg_id=b"S" + n.to_bytes(4, "big") + b"\x00" * 19, put_date="20261201")
    return md, encode_dlh(
        DeadLetterHeader(reason=2053, dest_q="APP.S", dest_qmgr="QM1", format="MQSTR   "), 546, 819
    ) + b"s%d" % n


def settings(warehouse: Path) -> RunSettings:
    config = load_config(
        overrides={
            "storage": {"format": "parquet", "path": str(warehouse)},
            # synchronous puts: the fault below meets exactly the third put to OUT.C
            "replay": {"async_put": False, "batch_size": 4},
            "classify": {"retry_interval": 0},  # group C is tried again by the next run at once
        }
    )
    return RunSettings.from_config(config)


def stored_units(messages: list[tuple[MQMD, bytes]]) -> list[str]:
    """What a getter would find wrong with the groups among ``messages`` (as put, in order)."""
    parts: dict[bytes, list[Part]] = {}
    for n, (md, data) in enumerate(messages):
        if md.msg_flags:
            parts.setdefault(md.group_id, []).append(
                Part(str(n), md.group_id, md.msg_seq_number, 0, md.msg_flags, len(data))
            )
    return [why for p in parts.values() for why in (order_problem(p), unit_problem(p)) if why]


@pytest.mark.parametrize("target", ["sim", "dir"])
def test_groups_are_put_whole_in_order_or_held_until_a_later_landing_completes_them(spark, tmp_path, target):
    warehouse, inbox = tmp_path / "wh", tmp_path / "in"
    inbox.mkdir()
    # group A: dumped out of order, its third message decided otherwise (DISCARD): held
    # group B: its last message not in the first dump: held, until the second dump lands it
    # group D: two different messages claim MsgSeqNumber 2: contradictory, held
    # group C (sim: only): the queue refuses its third put: backed out whole, put whole next run
    first = [member("A", 3, 4, dest="APP.OTHER"), member("A", 1, 4), single(1), member("B", 2, 3), member("A", 4, 4)]
    first += [member("A", 2, 4), member("B", 1, 3), single(2)]
    first += [member("D", 1, 3, dest="APP.B"), member("D", 2, 3, dest="APP.B"), member("D", 2, 3, dest="APP.B", twin=1)]
    first += [member("D", 3, 3, dest="APP.B")]
    if target == "sim":
        first += [member("C", s, 5) for s in (2, 1, 5, 3, 4)]
    write_dump(first, inbox / "first.dmp", qmgr="QM1", queue="DLQ", created="Tue Dec  1 11:00:00 2026")
    spec = "sim:QM1" if target == "sim" else f"dir:{tmp_path / 'out'}"
    qm = None
    if target == "sim":
        (warehouse / "_sim").mkdir(parents=True)
        qm = SimQueueManager(
            warehouse / "_sim" / "QM1.sqlite",
            "QM1",
            {"faults": [{"op": "put", "queue": "OUT.C", "reason": 2053, "after": 2, "times": 1}]},
        )
    table = parse_rules(RULES)
    run_pipeline(spark, settings(warehouse), table, inputs=[str(inbox)], target=spec, run_id="RUN1")

    storage = open_storage(spark, settings(warehouse).storage)
    # the footers' statistics say there are units, so replay looks for them (a warehouse
    # without any answers from the footers alone, with no job)
    assert storage.column_max("messages", storage.data_files("messages"), "msg_flags") == 24
    ledger = {
        r["message_key"]: (r["outcome"], r["error_text"])
        for r in storage.read("ledger").where(F.col("run_id") == "RUN1").collect()
    }
    by_outcome: dict[str, int] = {}
    for outcome, _ in ledger.values():
        by_outcome[outcome] = by_outcome.get(outcome, 0) + 1
    assert by_outcome == (
        {"held": 10, "delivered": 2, "failed": 5} if target == "sim" else {"held": 10, "delivered": 2}
    )
    held = {text for outcome, text in ledger.values() if outcome == "held"}
    twins = sorted(
        r["message_key"]
        for r in storage.read("messages").where(F.col("msg_seq_number") == 2).collect()
        if bytes(r["group_id"]) == gid("D")
    )
    assert held == {
        f"group {gid('A').hex().upper()} (4 messages here) decided differently: MsgSeqNumber 1, 2, 4 FWD to OUT.A "
        "by rule line 2; MsgSeqNumber 3 DISCARD by rule line 6; none of it is put",
        f"group {gid('B').hex().upper()} (2 messages here) incomplete: the last message of the group "
        "(MQMF_LAST_MSG_IN_GROUP) is not landed (have MsgSeqNumber 1-2); none of it is put",
        f"group {gid('D').hex().upper()} (4 messages here) contradictory: MsgSeqNumber 2 twice (messages "
        f"{twins[0]} and {twins[1]}); none of it is put",
    }

    # the report lists each held group once, with its reason and how many of its messages are here
    report = build_report(storage, now=dt.datetime.now(dt.UTC), run_id="RUN1")
    assert {(u["reason"], u["messages"]) for u in report["run"]["held_units"]} == {
        (text, sum(1 for o, t in ledger.values() if (o, t) == ("held", text))) for text in held
    }
    assert "units_held" in {a["code"] for a in report["advice"]}

    def delivered(queue: str) -> list[tuple[MQMD, bytes]]:
        if qm is not None:
            return [(r.md, r.data) for r in qm.put_log(queue)]
        return [(m.md, m.data) for f in sorted((tmp_path / "out").rglob(f"{queue}.dmp")) for m in read_dump(f)]

    assert [data for _, data in delivered("OUT.B")] == [b"s1", b"s2"]  # the single messages only
    assert delivered("OUT.A") == []
    if qm is not None:
        assert delivered("OUT.C") == []
        assert all(qm.group_report(q) == [] for q in ("OUT.A", "OUT.B", "OUT.C"))

    # the second dump completes group B: the next run puts it whole, in order, after nothing
    # else of it went out; group C's queue takes it now; group A stays held
    write_dump([member("B", 3, 3)], inbox / "second.dmp", qmgr="QM1", queue="DLQ", created="Tue Dec  1 11:30:00 2026")
    run_pipeline(spark, settings(warehouse), table, inputs=[str(inbox)], target=spec, run_id="RUN2")
    out_b = delivered("OUT.B")
    assert [data for _, data in out_b] == [b"s1", b"s2", b"B1", b"B2", b"B3"]
    assert [md.msg_seq_number for md, _ in out_b[2:]] == [1, 2, 3]
    assert {md.group_id for md, _ in out_b[2:]} == {gid("B")}
    assert stored_units(out_b) == []
    assert delivered("OUT.A") == []
    second = storage.read("ledger").where(F.col("run_id") == "RUN2").groupBy("outcome").count().collect()
    expected = {"held": 8, "delivered": 3 + (5 if target == "sim" else 0)}
    assert {r["outcome"]: r["count"] for r in second} == expected
    if qm is not None:
        assert [data for _, data in delivered("OUT.C")] == [b"C1", b"C2", b"C3", b"C4", b"C5"]
        assert all(qm.group_report(q) == [] for q in ("OUT.A", "OUT.B", "OUT.C"))
        qm.close()


def test_members_mode_puts_each_message_as_runmqdlq_does(spark, tmp_path):
    """``replay.units = members``: the group missing its last message goes out in part, as
    IBM's handler would put it."""
    warehouse, inbox = tmp_path / "wh", tmp_path / "in"
    inbox.mkdir()
    write_dump([member("B", 2, 3), member("B", 1, 3)], inbox / "first.dmp", qmgr="QM1", queue="DLQ")
    config = load_config(
        overrides={"storage": {"format": "parquet", "path": str(warehouse)}, "replay": {"units": "members"}}
    )
    run_pipeline(
        spark, RunSettings.from_config(config), parse_rules(RULES), inputs=[str(inbox)], target="sim:QM1", run_id="R"
    )
    qm = SimQueueManager(warehouse / "_sim" / "QM1.sqlite", "QM1")
    try:
        assert [r.data for r in qm.put_log("OUT.B")] == [b"B2", b"B1"]  # DLQ order, member by member
        assert qm.group_report("OUT.B") == [
            f"group {gid('B').hex().upper()} on OUT.B: MsgSeqNumber 1 put after 2",
            f"group {gid('B').hex().upper()} on OUT.B: incomplete: the last message of the group "
            "(MQMF_LAST_MSG_IN_GROUP) is not landed (have MsgSeqNumber 1-2)",
        ]
    finally:
        qm.close()
