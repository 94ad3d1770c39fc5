"""Hostile input: the dump and listing readers, the MQDLH/MQMD decoders and the rules parser
may reject input, never crash with an unexpected exception or hold more memory than their
limits allow. A corpus of malformed files (made here) gives each its expected, located
error; hypothesis mutates real files and throws bytes at the decoders. ``DLQ_SOAK=long``
runs 20x the examples.
"""

from __future__ import annotations

import io
import os
import random
import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq_pipeline.dumps.describe import describe, format_message
from dlq_pipeline.dumps.dmpmqmsg_reader import NOTE_FILE_ENDS_MID_LINE, read_dump
from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.dumps.generator import generate_messages
from dlq_pipeline.dumps.records import DumpedMessage, RecordError
from dlq_pipeline.dumps.sources import read_source
from dlq_pipeline.mq import dlh_arrow_decoder, dlh_decoder, structures
from dlq_pipeline.mq.mqmd import text_to_bytes
from dlq_pipeline.rules.parser import parse_rules, read_rules
from tests.profiles import examples
from tests.support import REPO

FIXTURES = REPO / "tests" / "fixtures"
LONG = os.environ.get("DLQ_SOAK") == "long"
EXAMPLES = 4000 if LONG else examples(200)
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


def messages(n=3, seed=1, size=2048):
    return [(m.md, m.data) for m in generate_messages(n, seed=seed, max_size=size)]


def dump_bytes(msgs) -> bytes:
    out = io.BytesIO()
    write_dump(msgs, out)
    return out.getvalue()


GOOD = messages()
CLEAN = dump_bytes(GOOD)
LINES = CLEAN.split(b"\n")
X_LINES = [i for i, line in enumerate(LINES) if line.startswith(b"X ")]
STARTS = [i for i, line in enumerate(LINES) if line.startswith(b"A VER")]


def offset_of(line_index: int) -> int:
    return sum(len(line) + 1 for line in LINES[:line_index])


def outcome(path, **limits) -> list[tuple]:
    """Every record as (kind-or-code, line, offset) plus data for messages."""
    out = []
    for record in read_source(str(path), **limits):
        if isinstance(record, RecordError):
            assert record.file == str(path) and record.message
            out.append((record.code, record.line, record.offset))
        else:
            assert isinstance(record, DumpedMessage)
            out.append(("message", record.line, record.offset, record.data, record.truncated, record.notes))
    return out


def msg(k, *, data=None, truncated=False, notes=(), shift=0):
    """The k-th good message as `outcome` shows it (``shift``: bytes inserted before it)."""
    return (
        "message",
        STARTS[k] + 1,
        offset_of(STARTS[k]) + shift,
        GOOD[k][1] if data is None else data,
        truncated,
        notes,
    )


def replace_line(index: int, new: bytes) -> bytes:
    return b"\n".join(LINES[:index] + [new] + LINES[index + 1 :])


# (name, content, reader limits, expected records)
def corpus():
    second_x = [i for i in X_LINES if i > STARTS[1]][0]
    cut_even = LINES[X_LINES[1]][: 2 + 40]  # 'X ' and 20 bytes of the second data line
    cut_odd = LINES[X_LINES[1]][: 2 + 41]
    per_line = len(bytes.fromhex(LINES[X_LINES[0]][2:].decode()))
    yield (
        "truncated-hex-even",
        b"\n".join(LINES[: X_LINES[1]] + [cut_even]),
        {},
        [msg(0, data=GOOD[0][1][: per_line + 20], truncated=True, notes=(NOTE_FILE_ENDS_MID_LINE,))],
    )
    yield (
        "truncated-hex-odd",
        b"\n".join(LINES[: X_LINES[1]] + [cut_odd]),
        {},
        [("odd_length_hex", STARTS[0] + 1, offset_of(STARTS[0]))],
    )
    yield (
        "truncated-in-descriptor",
        b"\n".join(LINES[: STARTS[1] + 5]),
        {},
        [msg(0), ("missing_data", STARTS[1] + 1, offset_of(STARTS[1]))],
    )
    yield (
        "odd-length-hex",
        replace_line(second_x, LINES[second_x] + b"F"),
        {},
        [msg(0), ("odd_length_hex", STARTS[1] + 1, offset_of(STARTS[1])), msg(2, shift=1)],
    )
    yield (
        "unknown-attribute-code",
        replace_line(STARTS[1] + 3, b"A ZZZ 1"),
        {},
        [
            msg(0),
            ("unknown_attribute", STARTS[1] + 1, offset_of(STARTS[1])),
            msg(2, shift=len(b"A ZZZ 1") - len(LINES[STARTS[1] + 3])),
        ],
    )
    yield (
        "bad-number",
        replace_line(STARTS[2] + 1, b"A RPT twelve"),
        {},
        [msg(0), msg(1), ("bad_number", STARTS[2] + 1, offset_of(STARTS[2]))],
    )
    yield (
        "huge-line",
        replace_line(second_x, b"X " + b"AB" * 40_000),
        {"max_line_length": 4096},
        [msg(0), ("line_too_long", STARTS[1] + 1, offset_of(STARTS[1])), msg(2, shift=80_002 - len(LINES[second_x]))],
    )
    yield (
        "message-over-the-size-limit",
        CLEAN,
        {"max_message_bytes": len(GOOD[1][1]) - 1},
        [
            ("message_too_large", STARTS[k] + 1, offset_of(STARTS[k]))
            if len(GOOD[k][1]) > len(GOOD[1][1]) - 1
            else msg(k)
            for k in range(3)
        ],
    )
    yield ("binary-garbage", random.Random(5).randbytes(5000), {}, [("unknown_format", 1, 0)])
    yield ("nul-bytes", b"\x00" * 4096, {}, [("unknown_format", 1, 0)])
    yield ("utf-16-dump", CLEAN.decode("latin-1").encode("utf-16"), {}, [("unknown_format", 1, 0)])
    yield ("ebcdic-dump", CLEAN.decode("latin-1").encode("cp500"), {}, [("unknown_format", 1, 0)])
    yield ("empty", b"", {}, [("empty_file", 1, 0)])
    yield (
        "data-before-attributes",
        b"\n".join(LINES[: STARTS[0]] + [b"X 00FF"] + LINES[STARTS[0] :]),
        {},
        [
            ("data_without_attributes", STARTS[0] + 1, offset_of(STARTS[0])),
            *[("message", r[1] + 1, *r[2:]) for r in (msg(0, shift=7), msg(1, shift=7), msg(2, shift=7))],
        ],
    )


CORPUS = list(corpus())


@pytest.mark.parametrize("name,content,limits,expected", CORPUS, ids=[c[0] for c in CORPUS])
def test_malformed_files_give_their_located_error_and_lose_no_good_message(tmp_path, name, content, limits, expected):
    path = tmp_path / f"{name}.dmp"
    path.write_bytes(content)
    assert outcome(path, **limits) == expected


def test_latin1_and_odd_bytes_in_character_fields_read_back_exactly(tmp_path):
    md = GOOD[0][0].replace(user_id="m\u00fcller", appl_identity_data="\udcff\udcfe raw bytes")
    path = tmp_path / "latin1.dmp"
    write_dump([(md, b"caf\xe9")], path)
    (got,) = list(read_source(str(path)))
    assert got.md == md and got.data == b"caf\xe9"
    assert text_to_bytes(got.md.appl_identity_data)[:2] == b"\xff\xfe"


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_huge_line_is_never_held_in_memory(tmp_path):
    """A 24 MB line read with a 64 KiB limit: the reader's peak stays a few of its 1 MiB
    blocks, far below the line (the same bound holds for the 256 MiB default and a 2 GB line)."""
    path = tmp_path / "huge-line.dmp"
    with open(path, "wb") as f:
        f.write(b"\n".join(LINES[: X_LINES[0]]) + b"\nX ")
        for _ in range(24):
            f.write(b"AB" * (512 * 1024))
        f.write(b"\n" + b"\n".join(LINES[STARTS[1] :]))
    records = []
    peak = _peak(lambda: records.extend(read_source(str(path), max_line_length=64 * 1024)))
    assert [r.code if isinstance(r, RecordError) else "message" for r in records] == [
        "line_too_long",
        "message",
        "message",
    ]
    assert peak < 8 * 1024 * 1024


def test_a_message_over_the_size_limit_is_dropped_as_it_is_read(tmp_path):
    """A 12 MiB message with a 1 MiB limit: its data is dropped when it passes the limit, so
    the reader's peak (its read blocks and their decoded copies, ~7 MiB here) does not grow
    with the message (without the limit it is about twice the message)."""
    big = (GOOD[0][0], bytes(range(256)) * (12 * 4096))
    path = tmp_path / "big.dmp"
    write_dump([GOOD[1], big, GOOD[2]], path)
    records = []
    peak = _peak(lambda: records.extend(read_dump(str(path), max_message_bytes=1024 * 1024)))
    assert [r.code if isinstance(r, RecordError) else r.data for r in records] == [
        GOOD[1][1],
        "message_too_large",
        GOOD[2][1],
    ]
    assert peak < 10 * 1024 * 1024 < len(big[1])


# --- fuzzing ---------------------------------------------------------------------------------

REAL_INPUTS = [
    CLEAN,
    (FIXTURES / "dmpmqmsg-options.dmp").read_bytes(),
    (FIXTURES / "amqsbcg-94.txt").read_bytes(),
    (FIXTURES / "amqsbcg-old.txt").read_bytes(),
]


@st.composite
def mutated(draw):
    """A real dump or listing with a few random edits: byte flips, cuts, spliced garbage,
    duplicated or dropped lines."""
    data = bytearray(draw(st.sampled_from(REAL_INPUTS)))
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "cut", "splice", "dup", "drop"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[at:]
        elif kind == "splice":
            data[at:at] = draw(st.binary(max_size=64))
        else:
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines[i : i + 1] = [lines[i]] * 2 if kind == "dup" else []
            data = bytearray(b"\n".join(lines))
    return bytes(data)


@FUZZ
@given(
    content=mutated(),
    max_line=st.sampled_from([80, 200, 4096]),
    max_message=st.sampled_from([None, 0, 100]),
    split=st.integers(1, 4000),
)
def test_readers_never_raise_on_damaged_files(tmp_path_factory, content, max_line, max_message, split):
    path = tmp_path_factory.mktemp("fuzz") / "input"
    path.write_bytes(content)
    whole = list(read_source(str(path), max_line_length=max_line, max_message_bytes=max_message))
    for record in whole:
        if isinstance(record, RecordError):
            assert record.file == str(path) and record.code and record.offset >= 0 and record.line >= 1
        else:
            assert isinstance(record, DumpedMessage)
            assert max_message is None or len(record.data) <= max_message
            describe(record, str(path))  # what inspect shows never fails either
            format_message(describe(record, str(path)))
    parts = list(read_source(str(path), end=split, max_line_length=max_line, max_message_bytes=max_message)) + list(
        read_source(str(path), start=split, max_line_length=max_line, max_message_bytes=max_message)
    )
    assert [(type(r), r.offset) for r in parts] == [(type(r), r.offset) for r in whole]


ENCODINGS = st.sampled_from([0, 1, 2, 273, 546, 785, 0x222, 0x111, -1, 2**31 - 1]) | st.integers(-(2**31), 2**31 - 1)
CCSIDS = st.sampled_from([0, 37, 500, 819, 1208, 1200, 65535, -2, 1047, 850]) | st.integers(-(2**31), 2**31 - 1)


@st.composite
def header_like(draw):
    """Bytes that start like an MQ structure often enough to get past the first checks."""
    strucid = draw(st.sampled_from([b"DLH ", b"\xc4\xd3\xc8@", b"XQH ", b"MDE ", b"RFH ", b"TM  ", b"MD  ", b""]))
    version = struct.pack(draw(st.sampled_from([">i", "<i"])), draw(st.sampled_from([1, 2, 3, 0, -1])))
    return strucid + version + draw(st.binary(max_size=700))


@FUZZ
@given(
    data=header_like() | st.binary(max_size=1200),
    encoding=ENCODINGS,
    ccsid=CCSIDS,
    fmt=st.sampled_from([None, "MQDEAD  ", "MQSTR   ", "", "MQXMIT  ", "\x00" * 8]),
)
def test_header_decoders_never_raise_anything_but_structure_errors(data, encoding, ccsid, fmt):
    result = dlh_decoder.decode_dlh(data, encoding, ccsid, fmt)
    columns = dlh_decoder.to_columns(result)
    assert dlh_arrow_decoder.decode_dlh_batch([data], [encoding], [ccsid], [fmt]) == {
        k: [v] for k, v in columns.items()
    }
    for decoder in (
        structures.decode_mqmd,
        structures.decode_xqh,
        structures.decode_mde,
        structures.decode_rfh2,
        structures.decode_tm,
    ):
        for enc, cc in ((encoding, ccsid), (None, None)):
            try:
                decoder(data, enc, cc)
            except structures.StructureError as exc:
                assert str(exc)


@FUZZ
@given(
    raw=st.binary(max_size=2000)
    | st.text(max_size=1500).map(lambda t: t.encode("utf-16"))
    | st.text(max_size=1500).map(lambda t: t.encode("utf-8", "surrogatepass"))
)
def test_rules_loader_never_raises_on_any_bytes(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("rules") / "fuzz.rules"
    path.write_bytes(raw)
    table = read_rules(path)
    for d in table.diagnostics:
        assert d.line >= 1 and d.code and d.message


def test_a_rules_table_of_100k_lines_parses_whole(tmp_path):
    """33,334 rules over 100,000 lines: all read, and the shadowed-rule check still reaches
    the end (the last rule is shadowed by a DISCARD near the top)."""
    lines = ["* generated: every rule takes a comment and two lines"]
    lines.append("DESTQ(APP.Q00007) ACTION(DISCARD)")
    lines.append("* ----")
    for n in range(33_331):
        lines += [f"DESTQ(APP.Q{n:05d}.IN) REASON(MQRC_Q_FULL) +", "  ACTION(RETRY) RETRY(3)", "* ----"]
    lines += ["DESTQ(APP.Q00007) ACTION(RETRY) RETRY(5)", "ACTION(FWD) FWDQ(DEADQ.MANUAL) HEADER(YES)"]
    assert len(lines) == 99_998
    path = tmp_path / "big.rules"
    path.write_text("\n".join(lines) + "\n\n")
    table = read_rules(path)
    assert table.ok and len(table.rules) == 33_334
    assert table.rules[-2].line == 99_997 and table.rules[-1].action == "FWD"
    assert [(d.line, d.code) for d in table.diagnostics] == [(99_997, "shadowed_rule")]


def test_a_rules_table_that_is_not_text_names_the_byte(tmp_path):
    path = tmp_path / "latin1.rules"
    path.write_bytes(b"* caf\xe9\nACTION(IGNORE)\n")
    table = read_rules(path)
    assert [(d.line, d.code) for d in table.diagnostics] == [(1, "not_text")]
    assert "byte 5" in table.diagnostics[0].message or "offset 5" in table.diagnostics[0].message


def test_parse_rules_on_a_huge_single_line():
    table = parse_rules("DESTQ(" + "A" * 200_000 + ") ACTION(IGNORE)\n", "huge.rules")
    assert not table.ok and {d.code for d in table.diagnostics} >= {"line_too_long"}
