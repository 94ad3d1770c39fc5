"""The MQMD is put back byte for byte: character fields holding bytes that are not
UTF-8 (Latin-1 UserIdentifier, PutApplName, ReplyToQ from a Windows or AIX queue manager) are
stored readable (U+FFFD) for display and matching, and exactly in ``md_char_bytes``, from which
replay rebuilds the descriptor and the names FWDQ(&REPLYQ)/FWDQM(&REPLYQM) open."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
from dlq_pipeline.dumps.records import DumpedMessage
from dlq_pipeline.mq.client import md_fields
from dlq_pipeline.mq.mqmd import MQMD, MQMD_CHAR_LENGTHS, bytes_to_text
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.replay.checkpoints import Checkpoint
from dlq_pipeline.replay.rebuild import exact_target
from dlq_pipeline.replay.targets import LOCAL_QMGR_DIR, open_target
from dlq_pipeline.replay.writer import ReplaySettings, WorkItem, replay_partition
from dlq_pipeline.tables import MD_COLUMNS, char_bytes, exact_md, message_row, stored_md
from tests.profiles import examples

NOW = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)

# Latin-1 bytes as a Windows (CCSID 1252) or AIX (819) queue manager writes them.
USER = b"J\xfcrgen".ljust(12)  # Jürgen
APPL = b"Caf\xe9Kasse.exe".ljust(28)
REPLY_Q = b"R\xc9PONSE.Q".ljust(48)  # RÉPONSE.Q
REPLY_QM = b"QM_\xc9T\xc9".ljust(48)


def latin1_md(**changes) -> MQMD:
    md = MQMD(
        version=2,
        format="MQSTR   ",
        ccsid=819,
        user_id=bytes_to_text(USER),
        put_appl_name=bytes_to_text(APPL),
        reply_to_q=bytes_to_text(REPLY_Q),
        reply_to_qmgr=bytes_to_text(REPLY_QM),
        msg_id=b"M" * 24,
        put_date="20260301",
        put_time="10000000",
    )
    return md.replace(**changes)


def stored_columns(row: dict) -> MQMD:
    """The MQMD the text columns of a `messages` row show (what Spark stores)."""
    return MQMD(**{name: row[column] for name, column in MD_COLUMNS.items()})


def test_a_latin1_descriptor_is_stored_readable_and_exactly():
    md = latin1_md()
    row = message_row(DumpedMessage(md, b"hello"))
    assert row["user_id"] == "J\ufffdrgen".ljust(12)
    assert row["reply_to_q"] == "R\ufffdPONSE.Q".ljust(48)
    for name in MD_COLUMNS.values():  # every text column is a valid Spark (UTF-8) string
        if isinstance(row[name], str):
            row[name].encode("utf-8")
    assert row["md_char_bytes"] == {
        "reply_to_q": REPLY_Q,
        "reply_to_qmgr": REPLY_QM,
        "user_id": USER,
        "put_appl_name": APPL,
    }
    assert row["notes"] == [
        "char_field_not_utf8:reply_to_q",
        "char_field_not_utf8:reply_to_qmgr",
        "char_field_not_utf8:user_id",
        "char_field_not_utf8:put_appl_name",
    ]
    rebuilt = exact_md(stored_columns(row), row["md_char_bytes"])
    assert rebuilt == md
    assert md_fields(rebuilt) == md_fields(md)  # what the MQ client sends: 12 bytes, not 14
    assert md_fields(rebuilt)["UserIdentifier"] == USER


def test_a_utf8_descriptor_needs_no_exact_bytes():
    md = latin1_md(user_id="jürgen".ljust(10), put_appl_name="app", reply_to_q="Q", reply_to_qmgr="")
    row = message_row(DumpedMessage(md, b""))
    assert row["md_char_bytes"] is None and row["notes"] == []
    assert exact_md(stored_columns(row), None) == md == stored_md(md)


def test_exact_bytes_for_a_field_that_is_not_a_character_field_are_refused():
    with pytest.raises(ValueError, match="md_char_bytes names no MQMD character field: msg_id"):
        exact_md(MQMD(), {"msg_id": b"x"})


field_bytes = {name: st.binary(max_size=length) for name, length in MQMD_CHAR_LENGTHS.items()}


@settings(max_examples=examples(200), deadline=None)
@given(st.fixed_dictionaries(field_bytes))
def test_any_character_field_bytes_round_trip_through_the_stored_row(raw):
    md = MQMD(**{name: bytes_to_text(value) for name, value in raw.items()})
    row = message_row(DumpedMessage(md, b"x"))
    shown = stored_columns(row)
    assert exact_md(shown, row["md_char_bytes"]) == md
    assert shown == stored_md(md)  # what rules match, in `rules test` and in Spark alike
    not_utf8 = set()
    for name, value in raw.items():
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            not_utf8.add(name)
    assert set(row["md_char_bytes"] or ()) == not_utf8 == set(char_bytes(md) or ())


def test_a_target_taken_from_a_field_that_is_not_utf8_is_its_exact_name():
    shown, exact = "R\ufffdPONSE.Q".ljust(48), bytes_to_text(REPLY_Q)
    assert exact_target("R\ufffdPONSE.Q", shown, exact) == bytes_to_text(b"R\xc9PONSE.Q")
    assert exact_target("HOLD.Q", shown, exact) == "HOLD.Q"  # FWDQ(HOLD.Q): the name written
    assert exact_target("REPLY", "REPLY".ljust(48), "REPLY".ljust(48)) == "REPLY"  # UTF-8 field: as decided
    assert exact_target(None, shown, exact) is None
    nul = bytes_to_text(b"R\xc9PLY\x00junk")  # MQ's name ends at the first NUL
    assert exact_target("R\ufffdPLY", "R\ufffdPLY\x00junk", nul) == bytes_to_text(b"R\xc9PLY")


def replay(connect, items, checkpoint=None):
    return list(
        replay_partition(
            items, connect, ReplaySettings(batch_size=1), run_id="R1", partition_id=0, checkpoint=checkpoint, now=NOW
        )
    )


def fwd(key: str, md: MQMD, target_q: str, target_qmgr: str = "") -> WorkItem:
    return WorkItem(
        message_key=key,
        action="FWD",
        md=md,
        data=b"body",
        rule_line=1,
        attempt=1,
        target_q=target_q,
        target_qmgr=target_qmgr,
        header=True,
        putaut="DEF",
    )


def test_the_writer_puts_the_exact_descriptor_and_records_readable_names():
    md = latin1_md()
    sim = SimQueueManager(":memory:", "QM1")
    latin1_q = bytes_to_text(b"R\xc9PONSE.Q")
    rows = replay(sim.connect, [fwd("k1", md, "HOLD.Q"), fwd("k2", md, latin1_q)])
    assert [(r["outcome"], r["target_q"], r["reason_code"]) for r in rows] == [
        ("delivered", "HOLD.Q", 0),
        ("failed", "R\ufffdPONSE.Q", 2085),
    ]
    assert "R\\udcc9PONSE.Q" in rows[1]["error_text"]  # the exact name MQ was asked for, readable
    for row in rows:
        row["error_text"] and row["error_text"].encode("utf-8")  # a valid Spark string
    [put] = sim.put_log()
    assert (put.queue, md_fields(put.md)) == ("HOLD.Q", md_fields(md))


def test_the_dir_target_writes_the_exact_descriptor_to_the_exact_queue_file(tmp_path):
    md = latin1_md()
    target = open_target(f"dir:{tmp_path / 'out'}", warehouse=tmp_path)
    checkpoint = Checkpoint.for_partition(tmp_path / "_checkpoints", "R1", 0)
    latin1_q = bytes_to_text(b"R\xc9PONSE.Q")
    with target.partition("R1", 0, checkpoint) as part:
        rows = replay(part.connect, [fwd("k1", md, latin1_q)], part.checkpoint)
    assert [(r["outcome"], r["target_q"]) for r in rows] == [("delivered", "R\ufffdPONSE.Q")]
    written = tmp_path / "out" / "R1" / LOCAL_QMGR_DIR / "R-C9PONSE.Q.dmp"  # not R-EF-BF-BDPONSE.Q
    [got] = list(read_dump(str(written)))
    assert md_fields(got.md) == md_fields(md) and got.data == b"body"
    [entry] = checkpoint.load().published
    assert entry["keys"] == ["k1"]  # the publish record names what the file holds
