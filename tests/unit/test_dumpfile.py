"""dmpmqmsg/qload dumps (docs/message-formats.md §4): every line type and option, bad records,
byte-range splits, the writer, and the genuine MQ 10 dump in tests/fixtures/real."""

from __future__ import annotations

import datetime as dt
import io
import json
from dataclasses import replace
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq_pipeline.dumps.dmpmqmsg import MAX_LINE_LENGTH
from dlq_pipeline.dumps.dmpmqmsg_reader import LineReader, plan_splits, read_dump, read_dump_info
from dlq_pipeline.dumps.dmpmqmsg_writer import DATA_STYLES, DumpLayout, write_dump
from dlq_pipeline.dumps.records import DumpedMessage, DumpInfo, RecordError
from dlq_pipeline.mq.mqmd import MQMD, MQMD_BYTE_LENGTHS, MQMD_CHAR_LENGTHS, bytes_to_text, text_to_bytes
from tests.profiles import examples
from tests.support import REPO

FIXTURES = REPO / "tests" / "fixtures"
REAL_DUMP = "mq10-dmpmqmsg-stdout.dmp"
CREATED = "Tue Sep 22 02:34:33 2026"


def read_bytes(content: bytes, **kw) -> list:
    return list(read_dump(io.BytesIO(content), name="t.dmp", **kw))


def dump_bytes(messages, **kw) -> bytes:
    out = io.BytesIO()
    write_dump(messages, out, created=CREATED, **kw)
    return out.getvalue()


def only_errors(records) -> list[RecordError]:
    return [r for r in records if isinstance(r, RecordError)]


# --- the genuine MQ 10 dump -----------------------------------------------------------------

REAL_MD = MQMD(
    version=2,
    report=0,
    msg_type=8,
    expiry=-1,
    feedback=0,
    encoding=546,
    ccsid=1208,
    format="MQSTR   ",
    priority=0,
    persistence=1,
    msg_id=bytes.fromhex("414D5120514D31202020202020202020DAA1AD6A02AE0640"),
    correl_id=bytes(24),
    backout_count=0,
    reply_to_q=" " * 48,
    reply_to_qmgr="QM1" + " " * 45,
    user_id="mqm         ",
    accounting_token=bytes.fromhex("0431303031000000000000000000000000000000000000000000000000000006"),
    appl_identity_data=" " * 32,
    put_appl_type=6,
    put_appl_name="amqsput" + " " * 21,
    put_date="20260922",
    put_time="02342828",
    appl_origin_data="    ",
    group_id=bytes(24),
    msg_seq_number=1,
    offset=0,
    msg_flags=0,
    original_length=-1,
)
REAL_BODY = {
    "original": {"orderId": "13", "forcarErro": "true"},
    "erro": {
        "codigo": 2951,
        "mensagem": "User generated exception",
        "detalhe": "Falha proposital para testar backout",
        "tentativas": 3,
        "flow": "PassThrough",
        "falhouEm": "2026-09-22T02:34:30.309+00:00",
    },
}


def test_real_dump_decodes_exactly(real_fixtures):
    path = real_fixtures / REAL_DUMP
    content = path.read_bytes()
    records = list(read_dump(path))

    assert len(records) == 1
    message = records[0]
    assert isinstance(message, DumpedMessage)
    assert message.md == REAL_MD  # every one of the 28 A lines
    assert len(message.data) == 238
    assert json.loads(message.data) == REAL_BODY
    assert message.data == json.dumps(REAL_BODY, separators=(",", ":")).encode()
    # the two banner lines and the header are skipped; the message starts at "A VER"
    assert (message.index, message.line, message.offset) == (0, 7, content.index(b"A VER 2"))
    assert (message.truncated, message.total_length, message.notes) == (False, None, ())


def test_real_dump_header(real_fixtures):
    assert read_dump_info(real_fixtures / REAL_DUMP) == DumpInfo(
        tool="DMPMQMSG", version="10.0.0.0", created=CREATED, qmgr="QM1", queue="APP.DLQ"
    )


def test_real_dump_is_rewritten_byte_for_byte(real_fixtures):
    """Our writer reproduces what dmpmqmsg wrote, apart from the version in the header."""
    content = (real_fixtures / REAL_DUMP).read_bytes()
    written = dump_bytes(read_dump(real_fixtures / REAL_DUMP), qmgr="QM1", queue="APP.DLQ")
    expected = content[content.index(b"* DMPMQMSG") :].replace(b"10.0.0.0", b"9.4.0.0", 1)
    assert written == expected


@pytest.mark.parametrize("style", ["hex", "text"])
def test_real_dump_round_trips_through_every_lossless_style(real_fixtures, style):
    original = next(read_dump(real_fixtures / REAL_DUMP))
    again = read_bytes(dump_bytes([original], data_style=style, char_context=True, ascii_column=True, hex_width=16))
    assert len(again) == 1 and again[0].same_message(original)


def test_real_dump_split_anywhere_gives_the_one_message(real_fixtures):
    path = real_fixtures / REAL_DUMP
    size = path.stat().st_size
    for cut in range(0, size + 1):
        parts = list(read_dump(path, end=cut)) + list(read_dump(path, start=cut))
        assert len(parts) == 1 and parts[0].same_message(next(read_dump(path))), cut


# --- every line type and option (hand-made fixture) -----------------------------------------


def test_options_fixture_every_line_type():
    path = FIXTURES / "dmpmqmsg-options.dmp"
    content = path.read_bytes()
    records = list(read_dump(path))
    assert only_errors(records) == []
    assert [r.index for r in records] == [0, 1, 2, 3, 4]
    first, nomd, text, empty, partial = records

    # -dc: AID/AOD as text; -da: the <...> column is ignored; -di: "* Index" comments skipped
    assert first.md.appl_identity_data == "order-batch-7" + " " * 19
    assert first.md.appl_origin_data == "EU1 "
    assert first.md.put_appl_name == "orders-service              "  # trailing blanks kept
    assert first.data == b"Hello, world!\n\x00\xff"
    assert first.line == 8 and first.offset == content.index(b"A VER 2")

    # N: the default MQMD; S quoted with ~ escapes, hex in between, unquoted with blanks stripped
    assert nomd.md == MQMD()
    assert nomd.data == b'He said "hi" ~ ok' + b"\r\n" + b"plain text with trailing blanks"
    assert nomd.offset == content.index(b"N\n")

    # T: the rest of the line after "T ", a newline appended to each, and a note saying so
    assert text.data == b"first line\n\n  indented\n"
    assert text.notes == ("text_lines_newline_appended",)
    assert text.md.put_appl_name == "short" and text.md.ccsid == 819

    # bare "X " is a zero-length message; a short MsgId is completed from the default
    assert empty.data == b""
    assert empty.md.msg_id == bytes.fromhex("414D5120514D32") + bytes(17)
    assert empty.md.user_id == "u"
    assert empty.notes == ("byte_field_padded:msg_id",)

    # A lines shorter than 7 characters leave the default
    assert partial.md == MQMD(ccsid=37) and partial.data == "ABC".encode("cp037")


def test_options_fixture_header():
    assert read_dump_info(FIXTURES / "dmpmqmsg-options.dmp") == DumpInfo(
        tool="QLOAD", version="8.0", created="Mon Mar  2 09:05:07 2026", qmgr="QM2", queue="SYSTEM.DEAD.LETTER.QUEUE"
    )


def test_crlf_reads_exactly_like_lf():
    content = (FIXTURES / "dmpmqmsg-options.dmp").read_bytes()
    lf = read_bytes(content)
    crlf = read_bytes(content.replace(b"\n", b"\r\n"))
    assert [(m.md, m.data, m.index, m.line, m.notes) for m in lf] == [
        (m.md, m.data, m.index, m.line, m.notes) for m in crlf
    ]


def test_blank_whitespace_lines_and_comments_are_ignored_anywhere():
    md, data = MQMD(priority=4), b"\x01\x02payload"
    clean = dump_bytes([(md, data)])
    noisy = clean.replace(b"\nA ", b"\n \t \n* a comment\n\nA ").replace(b"\nX ", b"\n   \nX ")
    assert [(m.md, m.data) for m in read_bytes(noisy)] == [(md, data)]


def test_header_without_banner_and_headerless_dump():
    body = b"A PRI 3\nX 4142\n"
    assert [m.md.priority for m in read_bytes(b"* QLOAD Version:8.0 Created:x\n\n" + body)] == [3]
    # -dH writes no header at all; the file starts with the first message
    [message] = read_bytes(body)
    assert (message.md.priority, message.data, message.line, message.offset) == (3, b"AB", 1, 0)
    assert read_dump_info(io.BytesIO(body)) == DumpInfo()


def test_header_only_dump_is_an_empty_queue():
    assert read_bytes(b"* DMPMQMSG Version:9.4.0.0 Created:x\n* Qmgr  = Q\n\n") == []


def test_s_line_without_closing_quote_or_with_bad_escape():
    head = b"* QLOAD Version:8.0\nA PRI 1\n"
    [unterminated] = read_bytes(head + b'S "abc\n')
    assert unterminated.code == "unterminated_string"
    [bad] = read_bytes(head + b'S "ab~x"\n')
    assert bad.code == "bad_escape"
    # text after the closing quote is ignored, as dmpmqmsg does
    [ok] = read_bytes(head + b'S "a~~b" trailing words\n')
    assert ok.data == b"a~b"


# --- bad records: located, explained, and the rest of the file still lands ------------------

BAD_FILE = b"""* DMPMQMSG Version:9.4.0.0 Created:x

A PRI 1
X 4142

A PRI 2
A ZZZ 7
X 4142

A PRI 3
X 414
X 42

A PRI 4

N
X 3F

A PRI 5
A CCS twelve
X 00

A PRI 6
A EXP 99999999999
X 00

A PRI 7
A MSI 41G2
X 00

A PRI 8
X 00
this line is not part of any dump
X 01

A PRI 9
X 4243
"""


def test_bad_records_yield_errors_in_place_and_reading_continues():
    records = read_bytes(BAD_FILE)
    summary = [(r.index, r.code if isinstance(r, RecordError) else r.md.priority) for r in records]
    assert summary == [
        (0, 1),
        (1, "unknown_attribute"),
        (2, "odd_length_hex"),
        (3, "missing_data"),
        (4, -1),
        (5, "bad_number"),
        (6, "number_out_of_range"),
        (7, "bad_hex"),
        (8, "unexpected_line"),
        (9, 9),
    ]
    assert records[-1].data == b"BC"


def test_an_x_line_with_a_character_that_is_not_hex_is_bad_hex_and_the_next_message_is_read():
    """Only blanks and the -da column may follow the digits: a stray character is never
    dropped silently (the message goes to quarantine, the next one is read)."""
    dump = (
        b"A PRI 1\nX 41zz\n\n"  # a digit pair, then junk
        b"A PRI 2\nX zz-not-hex\n\n"  # no digits at all
        b"A PRI 3\nX 4142 43\n\n"  # digits after a blank
        b"A PRI 4\nX   4142    <AB>\nX 43 \t\nX 44\r\n\n"  # blanks, the -da column, CRLF: data
        b"A PRI 5\nX 45\n"
    )
    records = read_bytes(dump)
    assert [r.code if isinstance(r, RecordError) else r.data for r in records] == [
        "bad_hex",
        "bad_hex",
        "bad_hex",
        b"ABCD",
        b"E",
    ]
    first, _, third = records[:3]
    assert first.snippet == "X 41zz" and "not a hex digit at column 5" in first.message
    assert "at column 8" in third.message and first.line == 1


def test_attributes_without_data_run_into_the_next_attribute_lines():
    """Blank lines do not end a message: like dmpmqmsg, the A lines read as one message."""
    [merged] = read_bytes(b"A PRI 4\n\nA CCS 5\nX 00\n")
    assert (merged.md.priority, merged.md.ccsid, merged.offset) == (4, 5, 0)


def test_record_error_names_file_record_line_and_offending_line():
    records = read_bytes(BAD_FILE)
    odd = records[2]
    record_offset = BAD_FILE.index(b"A PRI 3")
    bad_line_offset = BAD_FILE.index(b"X 414\n")
    assert odd == RecordError(
        file="t.dmp",
        line=BAD_FILE[:record_offset].count(b"\n") + 1,
        offset=record_offset,
        code="odd_length_hex",
        message=f"line at byte {bad_line_offset}: X line has an odd number of hex digits (3)",
        snippet="X 414",
        index=2,
    )
    unknown = records[1]
    assert unknown.message.endswith("unknown attribute code 'ZZZ'")
    assert unknown.snippet == "A ZZZ 7"
    missing = records[3]
    assert missing.snippet == "A PRI 4" and "without any data line" in missing.message


def test_file_name_defaults_to_the_path(tmp_path):
    path = tmp_path / "dlq.dmp"
    path.write_bytes(b"A PRI 1\n")
    [error] = read_dump(path)
    assert error.file == str(path) and error.code == "missing_data"
    [named] = read_dump(path, name="s3://bucket/dlq.dmp")
    assert named.file == "s3://bucket/dlq.dmp"


def test_data_before_any_attributes_is_one_bad_record():
    records = read_bytes(b"* QLOAD Version:8.0\n\nX 4142\nX 4344\nA PRI 1\nX 45\n")
    assert [(type(r).__name__, r.index) for r in records] == [("RecordError", 0), ("DumpedMessage", 1)]
    assert records[0].code == "data_without_attributes"
    assert records[1].data == b"E"


def test_too_long_line_is_skipped_not_loaded():
    huge = b"X " + b"41" * 5000
    content = b"A PRI 1\nX 00\n\nA PRI 2\n" + huge + b"\nX 00\n\nA PRI 3\nX 4243\n"
    records = read_bytes(content, max_line_length=1000)
    assert [r.code if isinstance(r, RecordError) else r.data for r in records] == [b"\x00", "line_too_long", b"BC"]
    assert records[1].offset == content.index(b"A PRI 2")
    assert records[1].snippet == bytes_to_text(huge[:80])
    # with room for it, the same line reads fine
    assert read_bytes(content)[1].data == b"A" * 5000 + b"\x00"


def test_reader_streams(tmp_path):
    """The first message is available before the rest of a large file has been read."""
    path = tmp_path / "big.dmp"
    write_dump(((MQMD(), bytes(1000)) for _ in range(8000)), path, created=CREATED)
    with open(path, "rb") as f:
        first = next(read_dump(f))
        assert first.data == bytes(1000)
        assert f.tell() <= 2 * LineReader.BLOCK < path.stat().st_size // 8


# --- not message dumps -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "listing"),
    [("dmpmqmsg-age-listing.txt", "-dT"), ("dmpmqmsg-summary.txt", "-ds")],
)
def test_age_and_summary_listings_are_rejected_once(fixture, listing):
    path = FIXTURES / fixture
    [error] = read_dump(path)
    assert error.code == "not_a_message_dump"
    assert listing in error.message
    content = path.read_bytes()
    assert error.line == content[: error.offset].count(b"\n") + 1
    assert error.index is None
    for start, end in plan_splits(path, 40):
        assert list(read_dump(path, start=start, end=end)) == ([error] if start == 0 else [])


def test_empty_and_foreign_files():
    [empty] = read_bytes(b"")
    assert (empty.code, empty.line, empty.offset) == ("empty_file", 1, 0)
    [blank] = read_bytes(b"\n  \n\n")
    assert blank.code == "empty_file"
    [foreign] = read_bytes(b"\nAMQSBCG0 - starts here\n****\n")
    assert foreign.code == "missing_header" and "amqsbcg" in foreign.message
    assert (foreign.line, foreign.offset) == (2, 1)
    many = b"".join(b"line %d\n" % i for i in range(200)) + b"* DMPMQMSG Version:1\nA PRI 1\nX 00\n"
    assert [r.code for r in read_bytes(many)] == ["missing_header"]


# --- the writer ------------------------------------------------------------------------------


def test_writer_layout_whole_output():
    md = MQMD(format="MQSTR   ", put_appl_name="app", appl_identity_data="id")
    out = dump_bytes(
        [DumpedMessage(md, b'Hi "x"~\x00\x01ok'), (MQMD(), b"")],
        qmgr="QM1",
        queue="DLQ",
        data_style="text",
        hex_width=10,
        ascii_column=True,
        index_comments=True,
    )
    md_lines = (
        b"A VER 1\nA RPT 0\nA MST 8\nA EXP -1\nA FDB 0\nA ENC 546\nA CCS 0\nA FMT %s\n"
        b"A PRI -1\nA PER 2\nA MSI " + b"0" * 48 + b"\nA COI " + b"0" * 48 + b"\nA BOC 0\n"
        b"A RTQ " + b" " * 48 + b"\nA RTM " + b" " * 48 + b"\nA USR " + b" " * 12 + b"\n"
        b"A ACC "
        + b"0" * 64
        + b"\nA AIX %s\nA PAT 0\nA PAN %s\nA PTD "
        + b" " * 8
        + b"\nA PTT "
        + b" " * 8
        + b"\nA AOX 20202020\nA GRP "
        + b"0" * 48
        + b"\nA MSQ 1\nA OFF 0\nA MSF 0\nA ORL -1\n"
    )
    assert (
        out
        == (
            b"* DMPMQMSG Version:9.4.0.0 Created:" + CREATED.encode() + b"\n"
            b"* Qmgr  = QM1\n* Queue = DLQ\n\n"
            b"* Index 1\n" + md_lines % (b"MQSTR   ", b"6964", b"app") + b'S "Hi ~"x~"~~"\n'
            b"X 0001" + b" " * 18 + b"<..>\n"  # -da pads to width + 1 byte columns
            b'S "ok"\n\n'
            b"* Index 2\n" + md_lines % (b" " * 8, b"20" * 32, b" " * 28) + b"S \n\n"
        )
    )


def test_writer_text_style_splits_long_strings_and_leading_binary():
    out = dump_bytes([(MQMD(), b"\x00" + b"a" * 20)], data_style="text", hex_width=5)
    assert out.split(b"A ORL -1\n")[1] == b'S \nX 00\nS "aaaaaaaa"\nS "aaaaaaaa"\nS "aaaa"\n\n'


def test_writer_hex_width_and_returns_count(tmp_path):
    path = tmp_path / "out.dmp"
    count = write_dump(
        iter([(MQMD(), bytes(range(7)))] * 3), path, hex_width=3, created=dt.datetime(2026, 3, 2, 9, 5, 7)
    )
    content = path.read_bytes()
    assert count == 3
    assert content.startswith(b"* DMPMQMSG Version:9.4.0.0 Created:Mon Mar  2 09:05:07 2026\n\n")
    assert content.count(b"X 000102\nX 030405\nX 06\n\n") == 3


@pytest.mark.parametrize(
    ("changes", "complaint"),
    [
        ({"reply_to_q": "A\nB"}, "reply_to_q"),
        ({"user_id": "x\x00"}, "user_id"),
        ({"put_appl_name": "app\r"}, "put_appl_name"),
        ({"put_appl_name": "x" * 29}, "longer than its 28 bytes"),
        ({"msg_id": b"short"}, "msg_id must be 24 bytes"),
        ({"priority": 2**31}, "priority"),
        ({"appl_identity_data": "a\nb"}, "write it as hex"),
    ],
)
def test_writer_refuses_what_dmpmqmsg_could_not_load(changes, complaint):
    messages = [(MQMD(), b""), (MQMD(**changes), b"")]
    with pytest.raises(ValueError, match=rf"message 1: .*{complaint}"):
        dump_bytes(messages, char_context=True)


def test_writer_hex_context_takes_any_appl_identity_bytes():
    md = MQMD(appl_identity_data=bytes_to_text(b"a\nb\x00\xff\r"))
    [again] = read_bytes(dump_bytes([(md, b"x")]))
    assert again.md == md


def test_writer_rejects_bad_options():
    with pytest.raises(ValueError, match="data_style"):
        dump_bytes([], data_style="binary")
    with pytest.raises(ValueError, match="hex_width"):
        dump_bytes([], hex_width=0)


def test_empty_character_field_reads_back_as_the_default():
    [again] = read_bytes(dump_bytes([(MQMD(reply_to_q="", appl_origin_data=""), b"")]))
    assert again.md == MQMD()


# --- T lines: the documented loss -----------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "reads_back"),
    [
        (b"one\ntwo\n", b"one\ntwo\n"),  # LF-terminated printable lines: exact
        (b"no final newline", b"no final newline\n"),
        (b"crlf\r\nlines\r\n", b"crlf\nlines\n"),
        (b"lf-cr\n\rcr only\r", b"lf-cr\ncr only\n"),
        (b"", b"\n"),
        (b"tab\there", b"tab\n\there\n"),
        (b"\n\nblank lines\n\n", b"\n\nblank lines\n\n"),
        (b"bin\x00\x01\n", b"bin\n\x00\x01\n"),
    ],
)
def test_lines_style_loss(data, reads_back):
    [again] = read_bytes(dump_bytes([(MQMD(), data)], data_style="lines"))
    assert again.data == reads_back
    assert "text_lines_newline_appended" in again.notes


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40), max_size=8))
def test_lines_style_is_exact_for_lf_terminated_printable_lines(lines):
    data = "".join(line + "\n" for line in lines).encode()
    [again] = read_bytes(dump_bytes([(MQMD(), data)], data_style="lines"))
    assert again.data == (data or b"\n")


# --- round trip property ----------------------------------------------------------------------


def char_value(length: int, *, allow_any: bool = False):
    """Non-empty field text; unless ``allow_any``, what a text A line can carry."""
    raw = st.binary(min_size=1, max_size=length)
    if not allow_any:
        raw = raw.map(lambda b: b.replace(b"\x00", b" ").replace(b"\n", b" ")).map(
            lambda b: b[:-1] + b" " if b.endswith(b"\r") else b
        )
    return raw.map(bytes_to_text)


def mqmds(char_context: bool):
    ints = st.integers(-(2**31), 2**31 - 1)
    text_fields = {
        name: char_value(length, allow_any=not char_context and name in ("appl_identity_data", "appl_origin_data"))
        for name, length in MQMD_CHAR_LENGTHS.items()
    }
    byte_fields = {name: st.binary(min_size=n, max_size=n) for name, n in MQMD_BYTE_LENGTHS.items()}
    int_fields = {
        name: ints
        for name in (
            "version",
            "report",
            "msg_type",
            "expiry",
            "feedback",
            "encoding",
            "ccsid",
            "priority",
            "persistence",
            "backout_count",
            "put_appl_type",
            "msg_seq_number",
            "offset",
            "msg_flags",
            "original_length",
        )
    }
    return st.builds(MQMD, **text_fields, **byte_fields, **int_fields)


write_options = st.fixed_dictionaries(
    {
        "data_style": st.sampled_from(["hex", "text"]),
        "hex_width": st.integers(1, 40),
        "ascii_column": st.booleans(),
        "char_context": st.booleans(),
        "index_comments": st.booleans(),
    }
)


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), write_options)
def test_read_write_round_trip_is_byte_exact(data, options):
    messages = data.draw(st.lists(st.tuples(mqmds(options["char_context"]), st.binary(max_size=200)), max_size=5))
    content = dump_bytes(messages, qmgr="QM1", queue="DLQ", **options)
    records = read_bytes(content)
    assert [(r.md, r.data) for r in records] == messages
    assert [r.index for r in records] == list(range(len(messages)))
    assert all(r.notes == () for r in records)
    for r in records:  # line and offset point at each message's first A line
        assert content[r.offset :].startswith(b"A VER ")
        assert content[: r.offset].count(b"\n") + 1 == r.line


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), write_options, st.integers(1, 4))
def test_a_dump_written_a_message_at_a_time_in_slices_is_the_same_bytes(data, options, lines_per_write):
    """What the dir: target writes (a header, then each message as it is committed, a large
    body in slices of whole X lines) is byte for byte what `write_dump` writes at once."""
    messages = data.draw(st.lists(st.tuples(mqmds(options["char_context"]), st.binary(max_size=300)), max_size=4))
    whole = dump_bytes(messages, qmgr="QM1", queue="DLQ", **options)
    layout = DumpLayout(**options)
    out = io.BytesIO()
    out.write(layout.header("QM1", "DLQ", CREATED))
    with patch("dlq_pipeline.dumps.dmpmqmsg_writer.HEX_LINES_PER_WRITE", lines_per_write):
        for n, (md, body) in enumerate(messages):
            layout.write_message(out, md, body, n)
    assert out.getvalue() == whole


def test_all_data_styles_are_covered():
    assert set(DATA_STYLES) == {"hex", "text", "lines"}


# --- byte-range splits -----------------------------------------------------------------------

NOISE = [b"", b"   ", b"* Index 9", b"* just a comment", b"Read    - Files:   1  Messages:"]
BAD_RECORDS = [
    b"A PRI 1\nX 123\n",  # odd hex
    b"A QQQ 1\nX 00\n",  # unknown attribute
    b"A PRI 1\n",  # attributes without data
    b"A PRI 1\nX 00\nstray text\n",  # unexpected line
    b'N\nS "open\n',  # unterminated string
    b"N\nX " + b"AB" * 80 + b"\n",  # too long for the 120-byte limit used below
]


@st.composite
def dump_files(draw):
    """A random dump: banner, header, messages in any style, bad records, noise, CRLF."""
    parts = []
    if draw(st.booleans()):
        parts.append(b"5724-H72 (C) Copyright IBM Corp.\nIBM MQ Queue Load/Unload Utility\n")
    if draw(st.booleans()):
        parts.append(b"* DMPMQMSG Version:9.4.0.0 Created:x\n* Qmgr  = QM1\n\n")
    if draw(st.booleans()):
        parts.append(draw(st.sampled_from([b"X 41\n", b"garbage\n"])))
    for _ in range(draw(st.integers(0, 8))):
        choice = draw(st.integers(0, 3))
        if choice == 0:
            parts.append(draw(st.sampled_from(BAD_RECORDS)))
        else:
            md = MQMD(
                priority=draw(st.integers(0, 9)),
                put_appl_name=draw(st.just("") | char_value(28)),
                appl_origin_data=draw(st.just("") | char_value(4, allow_any=True)),
            )
            text = dump_bytes(
                [(md, draw(st.binary(max_size=40)))],
                data_style=draw(st.sampled_from(["hex", "text", "lines"])),
                hex_width=draw(st.integers(2, 12)),
            )
            parts.append(text.split(b"\n\n", 1)[1])  # drop the header
        for _ in range(draw(st.integers(0, 2))):
            parts.append(draw(st.sampled_from(NOISE)) + b"\n")
    content = b"".join(parts)
    if draw(st.booleans()):
        content = content.replace(b"\n", b"\r\n")
    if content and draw(st.booleans()):
        content = content.rstrip(b"\r\n")  # last line without a newline
    return content


FILE_VERDICTS = ("empty_file", "missing_header", "not_a_message_dump")


def comparable(record):
    if isinstance(record, RecordError):
        return ("error", record.offset, record.code, record.message, record.snippet)
    return ("message", record.offset, record.md, record.data, record.notes)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), dump_files())
def test_splits_concatenate_to_the_full_read(tmp_path_factory, data, content):
    path = tmp_path_factory.mktemp("split") / "d.dmp"
    path.write_bytes(content)
    full = list(read_dump(path, max_line_length=120))
    cuts = data.draw(st.lists(st.integers(1, max(len(content) - 1, 1)), max_size=6))
    bounds = [0, *sorted(c for c in set(cuts) if c < len(content)), len(content)]
    pieces = []
    for start, end in zip(bounds, bounds[1:]):
        piece = list(read_dump(path, start=start, end=end, max_line_length=120))
        assert all(start <= r.offset < end for r in piece if getattr(r, "code", None) not in FILE_VERDICTS)
        if start > 0:  # lines count from the one holding byte `start`: add the newlines before it
            assert all(r.index == -1 for r in piece)
            before = content[:start].count(b"\n")
            piece = [replace(r, line=r.line + before) for r in piece]
        pieces += piece
    assert [comparable(r) + (r.line,) for r in pieces] == [comparable(r) + (r.line,) for r in full]
    assert [r.index for r in full if isinstance(r, DumpedMessage)] == sorted(
        r.index for r in full if isinstance(r, DumpedMessage)
    )


def test_split_with_start_inside_a_line_and_past_the_end(tmp_path):
    path = tmp_path / "d.dmp"
    path.write_bytes(dump_bytes([(MQMD(priority=p), b"xy") for p in range(4)]))
    full = list(read_dump(path))
    second = full[1].offset
    assert [r.md.priority for r in read_dump(path, start=second - 3, end=second + 1)] == [1]
    assert [r.md.priority for r in read_dump(path, start=second + 1, end=second + 2)] == []
    assert [r.md.priority for r in read_dump(path, start=second)] == [1, 2, 3]
    assert list(read_dump(path, start=path.stat().st_size + 10)) == []


def test_split_start_at_an_attribute_line_inside_a_message(tmp_path):
    """An A line after another A line is not a message start, even when a split begins there."""
    path = tmp_path / "d.dmp"
    path.write_bytes(dump_bytes([(MQMD(priority=p), b"z") for p in range(3)]))
    content = path.read_bytes()
    inside = content.index(b"A MSI", content.index(b"A PRI 1"))  # 2nd message, mid-MQMD
    assert [r.md.priority for r in read_dump(path, start=inside)] == [2]
    assert [r.md.priority for r in read_dump(path, end=inside)] == [0, 1]


def test_plan_splits_cover_the_file(tmp_path):
    path = tmp_path / "d.dmp"
    path.write_bytes(b"x" * 1000)
    assert plan_splits(path, 300) == [(0, 300), (300, 600), (600, 900), (900, 1000)]
    assert plan_splits(path, 5000) == [(0, 1000)]
    empty = tmp_path / "e.dmp"
    empty.write_bytes(b"")
    assert plan_splits(empty, 10) == [(0, 0)]
    [error] = [r for s, e in plan_splits(empty, 10) for r in read_dump(empty, start=s, end=e)]
    assert error.code == "empty_file"
    with pytest.raises(ValueError):
        plan_splits(path, 0)


def test_split_reads_agree_with_full_read_on_the_options_fixture():
    path = FIXTURES / "dmpmqmsg-options.dmp"
    full = list(read_dump(path))
    for target in (1, 13, 64, 500):
        pieces = [r for s, e in plan_splits(path, target) for r in read_dump(path, start=s, end=e)]
        assert [comparable(r) for r in pieces] == [comparable(r) for r in full], target


def test_lookback_over_a_long_comment_run(tmp_path):
    """Looking back for the previous significant line crosses many ignorable lines."""
    path = tmp_path / "d.dmp"
    filler = b"* filler comment line\n" * 5000
    path.write_bytes(b"A PRI 1\nA CCS 5\n" + filler + b"A PER 1\nX 00\n\nA PRI 2\nX 01\n")
    start = len(b"A PRI 1\nA CCS 5\n") + len(filler)
    pieces = list(read_dump(path, start=start))
    assert [(r.md.priority, r.data) for r in pieces] == [(2, b"\x01")]
    [first] = list(read_dump(path, end=start))
    assert (first.md.priority, first.md.ccsid, first.md.persistence) == (1, 5, 1)


def corrupted(base: bytes):
    """``base`` with a few bytes replaced, inserted or deleted (newlines included)."""
    edit = st.tuples(
        st.integers(0, max(len(base) - 1, 0)),
        st.integers(0, 3),
        st.binary(max_size=4) | st.sampled_from([b"\n", b"\r\n", b"A ", b"N\n", b"X 4"]),
    )

    def apply(edits):
        data = bytearray(base)
        for at, cut, new in edits:
            data[at : at + cut] = new
        return bytes(data)

    return st.lists(edit, min_size=1, max_size=5).map(apply)


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.binary(max_size=300) | corrupted((FIXTURES / "dmpmqmsg-options.dmp").read_bytes()))
def test_damaged_files_never_raise_and_still_split_exactly(tmp_path_factory, data, content):
    path = tmp_path_factory.mktemp("fuzz") / "d.dmp"
    path.write_bytes(content)
    full = list(read_dump(path, max_line_length=200))
    assert all(isinstance(r, (DumpedMessage, RecordError)) for r in full)
    cut = data.draw(st.integers(1, max(len(content), 1)))
    before = content[:cut].count(b"\n")
    pieces = list(read_dump(path, end=cut, max_line_length=200)) + [
        replace(r, line=r.line + before) for r in read_dump(path, start=cut, max_line_length=200)
    ]
    assert [comparable(r) + (r.line,) for r in pieces] == [comparable(r) + (r.line,) for r in full]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    dump_files()
    | corrupted((FIXTURES / "dmpmqmsg-options.dmp").read_bytes())
    | corrupted(dump_bytes([(MQMD(priority=p), bytes(range(p * 20))) for p in range(5)])),
    st.sampled_from([40, 120, MAX_LINE_LENGTH]),
    st.sampled_from([None, None, 0, 7, 64, 100]),
)
def test_fast_paths_read_exactly_like_the_line_by_line_path(content, limit, max_message):
    """Runs of X lines, of quoted S lines and the usual 28-line MQMD block have fast paths; with them switched
    off the reader must give identical records, positions and errors (a size limit's error included: it names
    the line that crosses the limit either way)."""
    fast = read_bytes(content, max_line_length=limit, max_message_bytes=max_message)
    with (
        patch.object(LineReader, "data_run", lambda self, budget=None: None),
        patch.object(LineReader, "md_run", lambda self: None),
    ):
        slow = read_bytes(content, max_line_length=limit, max_message_bytes=max_message)
    assert fast == slow


x_line = st.builds(
    lambda data, junk, at, end: (
        b"X " + data.hex().upper().encode()[:at] + junk + data.hex().upper().encode()[at:] + end
    ),
    st.binary(max_size=30),
    st.sampled_from([b"", b"", b"", b" ", b"X", b"G", b"\r", b"x ", b"  ", b"X ", b"\r\r", b"\nA PRI 1", b"\xff"]),
    st.integers(0, 60),
    st.sampled_from([b"\n", b"\n", b"\r\n"]),
)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(x_line, min_size=1, max_size=12),
    st.sampled_from([b"", b"A PRI 2\nX 01\n", b"X 0"]),
    st.sampled_from([40, MAX_LINE_LENGTH]),
    st.sampled_from([None, 0, 5, 30]),
)
def test_x_runs_without_the_regular_expression_read_like_with_it(lines, tail, limit, max_message):
    """The X-run fast path finds the run's end and lets the hex decoder check the digits;
    a damaged line anywhere in the run must give exactly what the regular expression gives."""
    content = b"A PRI 1\n" + b"".join(lines) + tail
    fast = read_bytes(content, max_line_length=limit, max_message_bytes=max_message)
    with patch.object(LineReader, "_plain_x_run", lambda self, budget=None: None):
        slow = read_bytes(content, max_line_length=limit, max_message_bytes=max_message)
    assert fast == slow


def even_x_lines(data: bytes, width: int) -> bytes:
    """``data`` as dmpmqmsg writes it: X lines of ``width`` bytes, the last one shorter."""
    return b"".join(
        b"X " + data[at : at + width].hex().upper().encode() + b"\n" for at in range(0, max(len(data), 1), width)
    )


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.binary(max_size=400), st.integers(1, 40)), min_size=1, max_size=4),
    st.data(),
    st.sampled_from([b"", b"A PRI 2\nX 01\n", b"X 0"]),
    st.sampled_from([40, MAX_LINE_LENGTH]),
    st.sampled_from([None, 0, 5, 30, 1000]),
)
def test_even_x_runs_read_like_the_line_by_line_path(messages, data, tail, limit, max_message):
    """The fast path for X lines of one width checks the line starts, spaces and newlines by
    stride: on such runs, damaged or not, it must give exactly what the other paths give."""
    clean = b"".join(b"A PRI 1\n" + even_x_lines(body, width) + b"\n" for body, width in messages) + tail
    content = data.draw(st.just(clean) | corrupted(clean))
    fast = read_bytes(content, max_line_length=limit, max_message_bytes=max_message)
    with patch.object(LineReader, "_even_x_run", lambda self, budget=None: None):
        without = read_bytes(content, max_line_length=limit, max_message_bytes=max_message)
    with (
        patch.object(LineReader, "data_run", lambda self, budget=None: None),
        patch.object(LineReader, "md_run", lambda self: None),
    ):
        slow = read_bytes(content, max_line_length=limit, max_message_bytes=max_message)
    assert fast == without == slow


def test_a_message_s_data_is_one_run_and_the_next_mqmd_block_skips_the_blank_line_before_it():
    """What dmpmqmsg writes per message, X lines of one width, a shorter last one and a blank
    line, takes one data run and one MQMD block (the per-message cost of ingest)."""
    body = bytes(range(256)) * 3 + b"last"  # 24 lines of 32 bytes and one of 4
    whole = dump_bytes([(MQMD(priority=7), b"next")])
    second = whole[whole.index(b"A VER ") :]
    content = b"A PRI 1\n" + even_x_lines(body, 32) + b"\n" + second
    reader = LineReader(io.BytesIO(content), 0, 1, MAX_LINE_LENGTH)
    next(reader)  # the A line
    assert reader.data_run() == body
    assert reader.lineno == 2 + len(even_x_lines(body, 32).splitlines())
    blank = reader.lineno
    offset, line, first, fields = reader.md_run()
    assert (offset, line, first, fields["priority"]) == (content.index(b"A VER "), blank + 1, second.split(b"\n")[0], 7)
    assert reader.lineno == blank + 1 + 28
    assert reader.data_run() == b"next"


def test_even_x_runs_cross_the_read_buffer(tmp_path):
    """A message larger than the reader's 1 MB block is taken in several runs; the data is whole."""
    body = bytes(range(256)) * 9000  # 2.3 MB of data, 4.6 MB of hex
    path = tmp_path / "big.dmp"
    path.write_bytes(b"A PRI 1\n" + even_x_lines(body, 25) + b"\nA PRI 2\n" + even_x_lines(b"ok", 25))
    first, second = read_dump(path)
    assert (first.data, second.data, second.line) == (body, b"ok", 1 + len(body) // 25 + 1 + 1)


def _taken_blocks(content: bytes) -> list:
    """What the MQMD block fast path gave for each message start it was asked about."""
    taken, md_run = [], LineReader.md_run

    def spy(self):
        got = md_run(self)
        taken.append(got)
        return got

    with patch.object(LineReader, "md_run", spy):
        read_bytes(content)
    return [got for got in taken if got is not None]


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.booleans())
def test_the_mqmd_block_fast_path_reads_exactly_like_line_by_line(data, char_context):
    """The 28-line MQMD block matched at once (`LineReader.md_run`) gives the same MQMD as
    one line at a time, for any field values, in both contexts."""
    messages = data.draw(st.lists(st.tuples(mqmds(char_context), st.binary(max_size=20)), min_size=1, max_size=4))
    content = dump_bytes(messages, char_context=char_context)
    fast = read_bytes(content)
    with patch.object(LineReader, "md_run", lambda self: None):
        slow = read_bytes(content)
    assert fast == slow
    assert [(r.md, r.data) for r in fast] == messages


@pytest.mark.parametrize("char_context", [False, True])
def test_the_mqmd_block_keeps_bad_utf8_of_adjacent_fields_apart(char_context):
    """A character field that ends inside a UTF-8 sequence, and the next one that goes on
    with continuation bytes, are decoded each on its own; MQLONG's extremes and empty values
    stay on the block fast path, an out-of-range MQLONG leaves it."""
    md = MQMD(
        reply_to_q=bytes_to_text(b"Q\xc3"),
        reply_to_qmgr=bytes_to_text(b"\xa9M"),
        put_appl_name=bytes_to_text(b"APP\xe2\x82"),
        put_date=bytes_to_text(b"\xac2026"),
        expiry=-(2**31),
        ccsid=2**31 - 1,
        msg_id=bytes(range(24)),
    )
    content = dump_bytes([(md, b"x")], char_context=char_context)
    assert len(_taken_blocks(content)) == 1
    [got] = read_bytes(content)
    assert got.md == md
    assert text_to_bytes(got.md.reply_to_q) == b"Q\xc3" and got.md.reply_to_qmgr == "\udca9M"
    empty = content.replace(b"A USR " + text_to_bytes(md.user_id) + b"\n", b"A USR \n")
    assert empty != content and len(_taken_blocks(empty)) == 1
    [got] = read_bytes(empty)
    assert got.md.user_id == MQMD().user_id
    out_of_range = content.replace(b"A EXP -2147483648\n", b"A EXP -2147483649\n")
    assert out_of_range != content and _taken_blocks(out_of_range) == []
