"""rebuild(): what a RETRY or FWD puts, byte for byte (docs/replay.md, "What is put")."""

from __future__ import annotations

import struct
from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.mq.structures import DeadLetterHeader, encode_dlh
from dlq_pipeline.replay.rebuild import RebuildError, rebuild
from dlq_pipeline.replay.writer import WorkItem
from dlq_pipeline.rules.model import Decision
from tests.profiles import examples

PAYLOAD = b"<order id='42'>\x00\x01\xff</order>"


def dlh_bytes(order: str, text_codec: str, *, reason: int, dest_q: str, encoding: int, ccsid: int, fmt: str) -> bytes:
    """An MQDLH built by hand from docs/message-formats.md §2 (not by the code under test)."""

    def chars(value: str, length: int) -> bytes:
        return value.ljust(length).encode(text_codec)

    return b"".join(
        [
            chars("DLH ", 4),
            struct.pack(order + "ii", 1, reason),
            chars(dest_q, 48),
            chars("QM1", 48),
            struct.pack(order + "ii", encoding, ccsid),
            chars(fmt, 8),
            struct.pack(order + "i", 7),
            chars("QM1", 28),
            chars("20260301", 8),
            chars("11223344", 8),
        ]
    )


def dead_md(encoding: int, ccsid: int) -> MQMD:
    """A dead letter's MQMD: every field distinctive, Format/Encoding/CCSID describing the MQDLH."""
    return MQMD(
        version=2,
        report=0x0E000000,
        msg_type=1,
        expiry=36000,
        feedback=0,
        encoding=encoding,
        ccsid=ccsid,
        format="MQDEAD  ",
        priority=7,
        persistence=1,
        msg_id=bytes(range(24)),
        correl_id=bytes(range(24, 48)),
        backout_count=3,
        reply_to_q="REPLY.Q".ljust(48),
        reply_to_qmgr="QMR".ljust(48),
        user_id="alice".ljust(12),
        accounting_token=bytes(range(100, 132)),
        appl_identity_data="ident-42".ljust(32),
        put_appl_type=11,
        put_appl_name="orders.exe".ljust(28),
        put_date="20260228",
        put_time="23595999",
        appl_origin_data="ORIG",
        group_id=b"G" * 24,
        msg_seq_number=2,
        offset=0,
        msg_flags=0x08,
        original_length=-1,
    )


CASES = [  # (name, byte order, character set of the MQDLH, MQMD encoding/ccsid, restored encoding/ccsid/format)
    ("linux-little-endian-ascii", "<", "latin-1", 546, 819, (546, 1208, "MQSTR   ")),
    ("aix-big-endian-ascii", ">", "latin-1", 273, 819, (273, 819, "MQHRF2  ")),
    ("zos-big-endian-ebcdic", ">", "cp500", 785, 500, (785, 500, "MQSTR   ")),
    ("zos-ebcdic-37-no-format", ">", "cp037", 785, 37, (785, 37, "        ")),
]


@pytest.mark.parametrize("name,order,codec,encoding,ccsid,restored", CASES, ids=[c[0] for c in CASES])
def test_every_action_and_header_flag(name, order, codec, encoding, ccsid, restored):
    dlh = dlh_bytes(
        order, codec, reason=2053, dest_q="APP.IN", encoding=restored[0], ccsid=restored[1], fmt=restored[2]
    )
    assert len(dlh) == 172
    md = dead_md(encoding, ccsid)
    data = dlh + PAYLOAD
    stripped = md.replace(encoding=restored[0], ccsid=restored[1], format=restored[2])

    for decision in (
        Decision("RETRY", target_q="APP.IN", putaut="DEF"),
        Decision("FWD", target_q="X", header=False, putaut="CTX"),
        WorkItem("k", "FWD", header=False),
    ):
        out_md, out_data = rebuild(md, data, decision)
        assert out_data == PAYLOAD
        assert out_md == stripped
        assert len(out_md.format) == 8

    for decision in (Decision("FWD", target_q="X", header=True), WorkItem("k", "FWD", header=None)):
        out_md, out_data = rebuild(md, data, decision)
        assert out_md == md and out_data == data  # HEADER(YES): the message as it is, MQDEAD


def test_only_format_encoding_and_ccsid_change():
    md = dead_md(546, 819)
    out_md, _ = rebuild(
        md,
        dlh_bytes("<", "latin-1", reason=2051, dest_q="Q", encoding=273, ccsid=37, fmt="MQSTR   ") + b"x",
        Decision("RETRY"),
    )
    changed = {f.name for f in fields(MQMD) if getattr(out_md, f.name) != getattr(md, f.name)}
    assert changed == {"format", "encoding", "ccsid"}
    assert (out_md.format, out_md.encoding, out_md.ccsid) == ("MQSTR   ", 273, 37)


def test_inherit_ccsid_becomes_the_headers_own():
    md = dead_md(546, 1208)
    dlh = dlh_bytes("<", "latin-1", reason=2053, dest_q="Q", encoding=546, ccsid=-2, fmt="MQSTR   ")
    out_md, out_data = rebuild(md, dlh + b"abc", Decision("RETRY"))
    assert out_md.ccsid == 1208 and out_data == b"abc"


def test_header_only_message_and_encode_dlh_agree():
    md = dead_md(273, 500)
    header = DeadLetterHeader(
        reason=2035,
        dest_q="AMQ.D6752F9683A49DE0".ljust(48),
        dest_qmgr="CSQ2".ljust(48),
        encoding=785,
        ccsid=500,
        format="MQSTR   ",
        put_appl_type=7,
    )
    raw = encode_dlh(header, 273, 500)
    assert raw[:12] == bytes.fromhex("C4D3C840 00000001 000007F3")  # docs/message-formats.md §6
    out_md, out_data = rebuild(md, raw, Decision("RETRY"))
    assert out_data == b"" and (out_md.encoding, out_md.ccsid, out_md.format) == (785, 500, "MQSTR   ")


@pytest.mark.parametrize(
    "data,problem",
    [
        (b"plain text that is long enough" * 10, "bad_strucid"),
        (b"DLH \x01\x00\x00\x00" + b" " * 20, "too_short"),
    ],
)
def test_no_header_to_strip_is_an_error(data, problem):
    with pytest.raises(RebuildError, match=problem):
        rebuild(MQMD(format="MQSTR   ", encoding=546, ccsid=819), data, Decision("RETRY"))
    md = MQMD(format="MQSTR   ")
    assert rebuild(md, data, Decision("FWD", header=True)) == (md, data)  # HEADER(YES) needs no MQDLH


@pytest.mark.parametrize("action", ["DISCARD", "IGNORE"])
def test_non_put_actions_put_nothing(action):
    with pytest.raises(ValueError):
        rebuild(MQMD(), b"", Decision(action))


@settings(max_examples=examples(60), deadline=None)
@given(
    payload=st.binary(max_size=600),
    big=st.booleans(),
    ebcdic=st.booleans(),
    enc=st.sampled_from([273, 546, 785, 17, 1041]),
    ccsid=st.sampled_from([0, 37, 437, 500, 819, 1047, 1208]),
    fmt=st.sampled_from(["MQSTR   ", "MQHRF2  ", "        ", "MQXMIT  ", "ABC\x00\x00\x00\x00\x00"]),
)
def test_property_payload_untouched_and_descriptor_restored(payload, big, ebcdic, enc, ccsid, fmt):
    order, codec = (">" if big else "<"), ("cp500" if ebcdic else "latin-1")
    md = dead_md(273 if big else 546, 500 if ebcdic else 819)
    dlh = dlh_bytes(order, codec, reason=2053, dest_q="Q", encoding=enc, ccsid=ccsid, fmt=fmt.replace("\x00", " "))
    if "\x00" in fmt:  # NUL padding is kept as it is
        dlh = dlh[:116] + fmt.encode(codec) + dlh[124:]
    out_md, out_data = rebuild(md, dlh + payload, Decision("RETRY"))
    assert out_data == payload
    assert out_md == md.replace(encoding=enc, ccsid=ccsid, format=fmt)
