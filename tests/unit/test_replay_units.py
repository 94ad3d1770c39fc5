"""Groups and segments as units: the judgement (`mq.groups`, `replay.units.plan_units`), the
writer putting a unit whole or not at all, and the simulated queue manager's report of what
a getter would find partial or out of order."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlq_pipeline.mq.groups import (
    MQMF_LAST_MSG_IN_GROUP,
    MQMF_LAST_SEGMENT,
    MQMF_MSG_IN_GROUP,
    MQMF_SEGMENT,
    MQMF_SEGMENTATION_ALLOWED,
    Part,
    numbers,
    order_problem,
    unit_problem,
)
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.replay.units import Member, plan_units
from dlq_pipeline.replay.writer import WorkItem
from tests.profiles import examples
from tests.unit.test_writer import NOW, FakeClock, dead_letter, run, sent

GID = b"AMQ QM1         " + b"\x01" * 8
OTHER = b"AMQ QM1         " + b"\x02" * 8


def group_part(seq: int, last: int, group_id: bytes = GID, length: int = 10) -> Part:
    flags = MQMF_MSG_IN_GROUP | (MQMF_LAST_MSG_IN_GROUP if seq == last else 0)
    return Part(f"g{seq}", group_id, seq, 0, flags, length)


def segment_parts(sizes: list[int], seq: int = 1, flags: int = 0) -> list[Part]:
    parts, offset = [], 0
    for n, size in enumerate(sizes):
        last = MQMF_LAST_SEGMENT if n == len(sizes) - 1 else MQMF_SEGMENT
        parts.append(Part(f"s{seq}.{n}", GID, seq, offset, flags | last, size))
        offset += size
    return parts


def member(part: Part, action: str = "FWD", target_q: str = "APP.OUT", line: int = 10, index: int = 0) -> Member:
    return Member(part, action, target_q, "", line, "a.dmp", index)


# --- the judgement ----------------------------------------------------------------------------


def test_numbers_are_written_as_spans():
    assert numbers([5, 1, 2, 3, 7, 8]) == "1-3, 5, 7-8"
    assert numbers([]) == ""


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(1, 8), st.randoms(use_true_random=False), st.data())
def test_a_whole_group_in_any_order_is_one_unit_and_any_member_missing_holds_it(size, rnd, data):
    parts = [group_part(s, size) for s in range(1, size + 1)]
    shuffled = parts[:]
    rnd.shuffle(shuffled)
    assert unit_problem(shuffled) is None
    placed = plan_units(member(p, index=i) for i, p in enumerate(shuffled))
    assert [k for k, _ in sorted(placed.items(), key=lambda kv: kv[1].position)] == [p.key for p in parts]
    # every member sorts where the unit's first member in the dump is, and none is held
    assert {(p.first_index, p.hold) for p in placed.values()} == {(0, None)}

    gone = data.draw(st.sampled_from(parts))
    rest = [p for p in shuffled if p is not gone]
    if rest:
        why = unit_problem(rest)
        assert why is not None and why.startswith("incomplete: "), why
        held = plan_units(member(p) for p in rest)
        count = f"{len(rest)} message{'' if len(rest) == 1 else 's'} here"
        assert {p.hold for p in held.values()} == {f"group {GID.hex().upper()} ({count}) {why}; none of it is put"}


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=6), st.data())
def test_segments_whole_in_any_order_and_a_gap_or_overlap_named(sizes, data):
    parts = segment_parts(sizes)
    order = data.draw(st.permutations(parts))
    assert unit_problem(order) is None
    if len(parts) > 1:
        cut = data.draw(st.integers(0, len(parts) - 2))  # not the last: a gap before another segment
        why = unit_problem([p for p in parts if p is not parts[cut]])
        assert why is not None and f"bytes {parts[cut].offset}-{parts[cut + 1].offset - 1}" in why
        assert why.startswith("incomplete: ")
        grown = [Part(p.key, p.group_id, p.seq, p.offset, p.flags, p.length + 1) if p is parts[0] else p for p in parts]
        assert unit_problem(grown).startswith("contradictory: the segment of MsgSeqNumber 1 at Offset")
    missing_last = unit_problem(parts[:-1]) if len(parts) > 1 else None
    if missing_last is not None:
        assert missing_last.startswith("incomplete: the last segment of MsgSeqNumber 1")


def test_a_group_of_segmented_messages_is_one_unit():
    second = segment_parts([4, 4], seq=2, flags=MQMF_MSG_IN_GROUP | MQMF_LAST_MSG_IN_GROUP)
    first = segment_parts([3, 5, 1], seq=1, flags=MQMF_MSG_IN_GROUP)
    parts = second + first
    assert unit_problem(parts) is None
    placed = plan_units(member(p) for p in parts)
    assert sorted(placed, key=lambda k: placed[k].position) == ["s1.0", "s1.1", "s1.2", "s2.0", "s2.1"]


@pytest.mark.parametrize(
    "parts, why",
    [
        (
            [group_part(1, 3), group_part(2, 3), group_part(3, 3), Part("twin", GID, 2, 0, MQMF_MSG_IN_GROUP, 1)],
            "contradictory: MsgSeqNumber 2 twice (messages g2 and twin)",
        ),
        (
            [group_part(1, 2), group_part(2, 2), group_part(3, 3)],
            "contradictory: MsgSeqNumber 2-3 are each flagged the last in the group",
        ),
        (
            [group_part(1, 2), group_part(2, 2), Part("g4", GID, 4, 0, MQMF_MSG_IN_GROUP, 1)],
            "contradictory: MsgSeqNumber 4 after the last (2)",
        ),
        ([group_part(1, 3), group_part(3, 3)], "incomplete: MsgSeqNumber 2 of 1-3 not landed"),
        (
            [group_part(1, 9), group_part(2, 9)],
            "incomplete: the last message of the group (MQMF_LAST_MSG_IN_GROUP) is not landed (have MsgSeqNumber 1-2)",
        ),
        ([group_part(1, 1, group_id=GID[:20])], "contradictory: GroupId of 20 bytes, not 24 (message g1)"),
        (
            [Part("s", GID, 2, 0, MQMF_LAST_SEGMENT, 5)],
            "contradictory: a message in segments, not in a group, with MsgSeqNumber 2",
        ),
    ],
)
def test_contradictions_and_gaps_are_named(parts, why):
    assert unit_problem(parts) == why


def test_members_decided_differently_hold_the_unit_naming_the_rules():
    parts = [group_part(s, 4) for s in (3, 1, 4, 2)]
    members = [member(p) for p in parts]
    members[0] = member(parts[0], "DISCARD", None, line=12)
    placed = plan_units(members)
    assert {p.hold for p in placed.values()} == {
        f"group {GID.hex().upper()} (4 messages here) decided differently: MsgSeqNumber 1, 2, 4 FWD to APP.OUT "
        "by rule line 10; MsgSeqNumber 3 DISCARD by rule line 12; none of it is put"
    }


def test_units_without_a_put_and_messages_not_in_units_are_left_alone():
    alone = Part("one", GID, 1, 0, MQMF_SEGMENTATION_ALLOWED, 5)  # segmentation allowed: still one message
    discarded = [member(group_part(s, 3, OTHER), "DISCARD", None) for s in (1, 2)]
    assert plan_units([member(alone), *discarded]) == {}


# --- the writer -------------------------------------------------------------------------------


@pytest.fixture
def qm():
    q = SimQueueManager(":memory:", "QM1")
    yield q
    q.close()


def group_item(seq: int, last: int, n: int | None = None, unit: str | None = GID.hex().upper(), **kw) -> WorkItem:
    n = seq if n is None else n
    flags = MQMF_MSG_IN_GROUP | (MQMF_LAST_MSG_IN_GROUP if seq == last else 0)
    md, data = dead_letter(n, group_id=GID, msg_seq_number=seq, msg_flags=flags)
    return WorkItem(
        message_key=f"k{n:03d}",
        action="FWD",
        md=md,
        data=data,
        rule_line=10,
        attempt=1,
        target_q=kw.pop("target_q", "APP.OUT"),
        target_qmgr="",
        header=True,
        putaut="DEF",
        unit=unit,
        **kw,
    )


def single(n: int) -> WorkItem:
    md, data = dead_letter(100 + n)
    return WorkItem(f"single{n}", "FWD", md=md, data=data, rule_line=10, attempt=1, target_q="APP.OUT", header=True)


@pytest.mark.parametrize("async_put", [True, False])
def test_a_unit_is_put_in_one_syncpoint_in_order_with_its_fields_kept(qm, async_put):
    items = [single(1), *[group_item(s, 3) for s in (1, 2, 3)], single(2)]
    rows = run(items, qm.connect, batch_size=2, async_put=async_put)
    assert {r["message_key"]: (r["outcome"], r["batch_id"]) for r in rows} == {
        "single1": ("delivered", 0),  # committed before the unit: the unit would take the batch past 2
        "k001": ("delivered", 1),
        "k002": ("delivered", 1),
        "k003": ("delivered", 1),
        "single2": ("delivered", 2),
    }
    assert [md.msg_seq_number for _, md, _ in sent(qm) if md.group_id == GID] == [1, 2, 3]
    assert [md for _, md, _ in sent(qm) if md.group_id == GID] == [i.md for i in items[1:4]]
    assert qm.group_report("APP.OUT") == []


def test_a_member_refused_backs_the_whole_unit_out_and_the_batch_goes_on(qm):
    # synchronous puts: the fault meets the fourth put, the group's third member
    qm.configure({"faults": [{"op": "put", "queue": "APP.OUT", "reason": 2053, "after": 3, "times": 1}]})
    items = [single(1), *[group_item(s, 5) for s in range(1, 6)], single(2)]
    rows = run(items, qm.connect, batch_size=50, async_put=False)
    by_key = {r["message_key"]: r for r in rows}
    assert by_key["single1"]["outcome"] == by_key["single2"]["outcome"] == "delivered"
    assert {k: (r["outcome"], r["reason_code"]) for k, r in by_key.items() if k.startswith("k")} == {
        f"k{n:03d}": ("failed", 2053) for n in range(1, 6)
    }
    assert by_key["k003"]["error_text"] == "MQRC_Q_FULL (2053): injected fault on put for APP.OUT"
    for n in (1, 2, 4, 5):
        assert by_key[f"k{n:03d}"]["error_text"] == (
            f"backed out with its group {GID.hex().upper()}: message k003 failed: "
            "MQRC_Q_FULL (2053): injected fault on put for APP.OUT"
        )
    assert [r.md.msg_id for r in qm.put_log()] == [items[0].md.msg_id, items[-1].md.msg_id]
    assert qm.group_report("APP.OUT") == []


def test_a_member_refused_asynchronously_is_put_again_with_its_unit(qm):
    """An asynchronous refusal backs the batch out and puts it again synchronously, the unit
    whole: here the queue takes it the second time."""
    qm.configure({"faults": [{"op": "put", "queue": "APP.OUT", "reason": 2053, "after": 3, "times": 1}]})
    items = [single(1), *[group_item(s, 5) for s in range(1, 6)], single(2)]
    rows = run(items, qm.connect, batch_size=50, async_put=True)
    assert {r["outcome"] for r in rows} == {"delivered"}
    assert [r.md.msg_id for r in qm.put_log()] == [i.md.msg_id for i in items]
    assert qm.group_report("APP.OUT") == []


def test_a_held_unit_gets_its_reason_and_no_mq_call(qm):
    why = "group X (2 messages here) incomplete: ...; none of it is put"
    items = [group_item(1, 3, held=why), group_item(2, 3, held=why)]
    rows = run(items, qm.connect)
    assert [(r["outcome"], r["error_text"]) for r in rows] == [("held", why), ("held", why)]
    assert qm.put_log() == []


def test_a_member_not_due_defers_the_whole_unit(qm):
    later = NOW + dt.timedelta(minutes=5)
    items = [group_item(1, 2), group_item(2, 2, not_before=later)]
    rows = run(items, qm.connect)
    assert [r["outcome"] for r in rows] == ["deferred", "deferred"]
    assert "not put without its group" in rows[0]["error_text"] and "k002 is deferred" in rows[0]["error_text"]
    assert qm.put_log() == []


def test_members_put_one_by_one_without_units_leave_a_partial_group(qm):
    """What the units prevent: the same refusal with each member on its own (``replay.units =
    members``, as runmqdlq puts them) leaves part of the group on the queue."""
    qm.configure({"faults": [{"op": "put", "queue": "APP.OUT", "reason": 2053, "after": 2, "times": 1}]})
    items = [group_item(s, 4, unit=None) for s in range(1, 5)]
    rows = run(items, qm.connect, async_put=False)
    assert [r["outcome"] for r in rows if r["outcome"] == "failed"] == ["failed"]
    assert qm.group_report("APP.OUT") == [
        f"group {GID.hex().upper()} on APP.OUT: incomplete: MsgSeqNumber 3 of 1-4 not landed"
    ]


def test_the_simulator_reports_a_unit_put_out_of_order(qm):
    conn = qm.connect()
    handle = conn.open_for_put("APP.OUT")
    for s in (2, 1):
        md, data = dead_letter(
            s, group_id=GID, msg_seq_number=s, msg_flags=MQMF_MSG_IN_GROUP | (MQMF_LAST_MSG_IN_GROUP if s == 2 else 0)
        )
        conn.put(handle, md, data)
    conn.commit()
    conn.disconnect()
    assert qm.group_report("APP.OUT") == [f"group {GID.hex().upper()} on APP.OUT: MsgSeqNumber 1 put after 2"]
    assert order_problem([group_part(1, 2), group_part(2, 2)]) is None


# --- expiry -----------------------------------------------------------------------------------


def timed(n: int, expiry: int, recorded_ago: float | None, **kw) -> WorkItem:
    md, data = dead_letter(n, expiry=expiry)
    recorded = None if recorded_ago is None else NOW - dt.timedelta(seconds=recorded_ago)
    return WorkItem(
        f"t{n}",
        "FWD",
        md=md,
        data=data,
        rule_line=10,
        attempt=1,
        target_q="APP.OUT",
        header=True,
        recorded_at=recorded,
        **kw,
    )


def test_a_message_is_put_with_the_lifetime_it_has_left_and_an_expired_one_not_at_all(qm):
    items = [
        timed(1, 300, 10.05),  # 30 s, recorded 10.05 s ago: 199 tenths left
        timed(2, 300, 30.0),  # ran out
        timed(3, -1, 86_400 * 30),  # unlimited
        timed(4, 300, None),  # not known when recorded: as landed
        timed(5, 300, 29.95),  # half a tenth left: put with the least MQ takes, one tenth
    ]
    clock = FakeClock()
    rows = run(items, qm.connect, clock=clock)
    assert {r["message_key"]: r["outcome"] for r in rows} == {
        "t1": "delivered",
        "t2": "expired",
        "t3": "delivered",
        "t4": "delivered",
        "t5": "delivered",
    }
    assert [md.expiry for _, md, _ in sent(qm)] == [199, -1, 300, 1]
    expired = next(r for r in rows if r["outcome"] == "expired")
    assert expired["error_text"].startswith("its Expiry of 30s when recorded at ")

    unaltered = SimQueueManager(":memory:", "QM2")
    try:
        run(items, unaltered.connect, expiry="unaltered")
        assert [md.expiry for _, md, _ in sent(unaltered)] == [300, 300, -1, 300, 300]
    finally:
        unaltered.close()


def test_an_expired_member_expires_its_unit(qm):
    old = NOW - dt.timedelta(hours=1)
    first, second = group_item(1, 2, recorded_at=old), group_item(2, 2, recorded_at=old)
    second = dataclasses.replace(second, md=second.md.replace(expiry=600))  # 60 s: ran out; the first never expires
    rows = run([first, second], qm.connect)
    assert [r["outcome"] for r in rows] == ["expired", "expired"]
    assert rows[0]["error_text"].startswith("not put without its group") and "k002 is expired" in rows[0]["error_text"]
    assert qm.put_log() == []
