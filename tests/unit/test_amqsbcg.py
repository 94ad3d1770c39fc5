"""amqsbcg listings (docs/message-formats.md §5): old and 9.4 layouts, truncation, the 9.4 Dead
Letter Header block, multi-byte overruns, bad records.

`listing()` below prints messages the way amqsbcg0.c does (its printf calls, transcribed),
so property tests can check the reader against any MQMD and data; the fixtures in
tests/fixtures/amqsbcg-*.txt were made with it and their expected contents are written out
literally here.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq_pipeline.dumps.amqsbcg import read_amqsbcg
from dlq_pipeline.dumps.records import DumpedMessage, RecordError
from dlq_pipeline.mq.mqmd import MQMD, MQMD_BYTE_LENGTHS, MQMD_CHAR_LENGTHS, bytes_to_text, text_to_bytes
from tests.profiles import examples
from tests.support import REPO

FIXTURES = REPO / "tests" / "fixtures"
BUFFER = 65536  # amqsbcg's BUFFERLENGTH on 9.x
REASON_NAMES = {2051: "MQRC_PUT_INHIBITED", 2053: "MQRC_Q_FULL", 2035: "MQRC_NOT_AUTHORIZED"}


# --- amqsbcg0.c, transcribed ----------------------------------------------------------------


@dataclass
class Browsed:
    md: MQMD
    data: bytes  # the whole message; amqsbcg prints at most BUFFER bytes of it
    properties: list[tuple[str, str]] | None = None  # printed when PropOption is 1
    failed_reason: int | None = None  # an MQGET that failed instead


def _cut(value: str, length: int) -> bytes:
    """printf("%.*s"): at most ``length`` bytes, stopping at a NUL."""
    return text_to_bytes(value)[:length].split(b"\x00")[0]


def _print_md(md: MQMD) -> bytes:
    c = _cut
    return b"".join(
        [
            b"\n****Message descriptor****\n",
            b"\n  StrucId  : 'MD  '  Version : %d" % md.version,
            b"\n  Report   : %d  MsgType : %d" % (md.report, md.msg_type),
            b"\n  Expiry   : %d  Feedback : %d" % (md.expiry, md.feedback),
            b"\n  Encoding : %d  CodedCharSetId : %d" % (md.encoding, md.ccsid),
            b"\n  Format : '%s'" % c(md.format, 8),
            b"\n  Priority : %d  Persistence : %d" % (md.priority, md.persistence),
            b"\n  MsgId : X'%s'" % md.msg_id.hex().upper().encode(),
            b"\n  CorrelId : X'%s'" % md.correl_id.hex().upper().encode(),
            b"\n  BackoutCount : %d" % md.backout_count,
            b"\n  ReplyToQ       : '%s'" % c(md.reply_to_q, 48),
            b"\n  ReplyToQMgr    : '%s'" % c(md.reply_to_qmgr, 48),
            b"\n  ** Identity Context",
            b"\n  UserIdentifier : '%s'" % c(md.user_id, 12),
            b"\n  AccountingToken : \n   X'%s'" % md.accounting_token.hex().upper().encode(),
            b"\n  ApplIdentityData : '%s'" % c(md.appl_identity_data, 32),
            b"\n  ** Origin Context",
            b"\n  PutApplType    : '%d'" % md.put_appl_type,
            b"\n  PutApplName    : '%s'" % c(md.put_appl_name, 28),
            b"\n  PutDate  : '%s'    PutTime  : '%s'" % (c(md.put_date, 8), c(md.put_time, 8)),
            b"\n  ApplOriginData : '%s'\n" % c(md.appl_origin_data, 4),
            b"\n  GroupId : X'%s'" % md.group_id.hex().upper().encode(),
            b"\n  MsgSeqNumber   : '%d'" % md.msg_seq_number,
            b"\n  Offset         : '%d'" % md.offset,
            b"\n  MsgFlags       : '%d'" % md.msg_flags,
            b"\n  OriginalLength : '%d'" % md.original_length,
        ]
    )


def _print_dlh(data: bytes, host: str) -> tuple[bytes, int]:
    """printDLH: the header's integers read in the *host's* byte order, characters raw."""
    if len(data) < 172 or data[:4] != b"DLH ":
        return b"", 0
    version, reason = struct.unpack(host + "ii", data[4:12])
    encoding, ccsid = struct.unpack(host + "ii", data[108:116])
    (appl_type,) = struct.unpack(host + "i", data[124:128])

    def raw(at: int, n: int) -> bytes:
        return data[at : at + n].split(b"\x00")[0]

    return b"".join(
        [
            b"\n",
            b"\n****Dead Letter Header****\n",
            b"\n  StrucId  : '%s'  Version : %d" % (raw(0, 4), version),
            b"\n  Reason   : %d [%s]" % (reason, REASON_NAMES.get(reason, "UNKNOWN RC").encode()),
            b"\n  DestQName      : '%s'" % raw(12, 48),
            b"\n  DestQMgrName   : '%s'" % raw(60, 48),
            b"\n  Encoding : %d  CodedCharSetId : %d" % (encoding, ccsid),
            b"\n  Format : '%s'" % raw(116, 8),
            b"\n  PutApplType    : '%d'" % appl_type,
            b"\n  PutApplName    : '%s'" % raw(128, 28),
            b"\n  PutDate  : '%s'    PutTime  : '%s'" % (raw(156, 8), raw(164, 8)),
        ]
    ), 172


def _mblen(buf: bytes, i: int, mbcs_max: int) -> int:
    """mblen() in a UTF-8 locale (mbcs_max 6) or the C locale (1); <1 means 'treat as 1'."""
    if mbcs_max == 1 or buf[i] < 0x80:
        return 1
    lead = buf[i]
    need = 2 if 0xC2 <= lead <= 0xDF else 3 if 0xE0 <= lead <= 0xEF else 4 if 0xF0 <= lead <= 0xF4 else 0
    if not need or i + need > len(buf) or any(not 0x80 <= b <= 0xBF for b in buf[i + 1 : i + need]):
        return -1
    return need


def _print_hex(buf: bytes, mbcs_max: int, lines_printed: int) -> bytes:
    out = []
    ch = overrun = 0
    while True:
        chars = 0
        text = []
        out.append(b"\n%08X: " % ch)
        while overrun > 0:
            out.append(b"  ")
            text.append(b" ")
            chars += 1
            if overrun % 2:
                out.append(b" ")
            overrun -= 1
        while chars < 16 and ch < len(buf):
            n = _mblen(buf, ch, mbcs_max)
            if n > 1:
                for _ in range(n):
                    if chars % 2 == 0 and chars < 16:
                        out.append(b" ")
                    out.append(b"%02X" % buf[ch])
                    text.append(buf[ch : ch + 1])
                    chars += 1
                    ch += 1
            else:
                if chars % 2 == 0:
                    out.append(b" ")
                out.append(b"%02X" % buf[ch])
                text.append(buf[ch : ch + 1] if 0x20 <= buf[ch] <= 0x7E else b".")
                chars += 1
                ch += 1
        if chars > 16:
            overrun = chars - 16
        while chars < 16:
            if chars % 2 == 0:
                out.append(b" ")
            out.append(b"  ")
            text.append(b" ")
            chars += 1
        out.append(b" " * ((mbcs_max - overrun - 1) * 2))
        out.append(b" '" + b"".join(text) + b"'")
        lines_printed += 1
        if lines_printed >= 60:
            lines_printed = 0
            out.append(b"\n ")
        if ch >= len(buf):
            return b"".join(out)


def listing(
    messages: list[Browsed], *, layout: str = "9.4", queue: str = "Q1", mbcs_max: int = 1, host: str = "<"
) -> bytes:
    """What ``amqsbcg queue`` prints for these messages: layout "old" (before 9.0), "9.1"
    (``, CompCode:c Reason:r``, `` length - N of M bytes``) or "9.4" (also the Dead Letter
    Header block and the summary, since 9.3.4)."""
    new = layout in ("9.1", "9.4")
    latest = layout == "9.4"
    out = [b"\nAMQSBCG0 - starts here\n", b"**********************\n ", b"\n MQOPEN - '%s'" % queue.encode()]
    with_props = any(m.properties is not None for m in messages)
    if new and with_props:
        out.append(b"\n MQCRTMH")
    out.append(b"\n ")
    sizes = []
    for j, message in enumerate(messages, 1):
        lines_printed = 29 if j == 1 else 22
        if j > 1:
            out.append(b"\n ")
        if message.failed_reason is not None:
            out.append(b"\n MQGET %d, failed with CompCode:2 Reason:%d" % (j, message.failed_reason))
            break
        data = message.data
        truncated = len(data) > BUFFER
        if new:
            out.append(b"\n ")
            out.append(
                b"\n MQGET of message number %d, CompCode:%d Reason:%d"
                % (j, 1 if truncated else 0, 2079 if truncated else 0)
            )
        else:
            out.append(b"\n ")
            out.append(b"\n MQGET of message number %d " % j)
        sizes.append(len(data))
        out.append(_print_md(message.md))
        if message.properties is not None:
            out.append(b"\n \n****Message properties****\n")
            if not message.properties:
                out.append(b"\n  None\n")
            for name, value in message.properties:
                out.append(b"\n  %s : %s" % (name.encode(), value.encode()))
        header = 0
        if latest and message.md.format == "MQDEAD  ":
            block, header = _print_dlh(data[:BUFFER], host)
            out.append(block)
        out.append(b"\n ")
        out.append(b"\n****   Message      ****\n ")
        length = len(data) - header
        if new:
            shown = min(length, BUFFER - header)
            out.append(b"\n length - %d of %d bytes\n " % (shown, length))
        else:
            shown = length
            out.append(b"\n length - %d bytes\n " % length)
        out.append(_print_hex(data[header : header + shown], mbcs_max, lines_printed))
    else:
        if messages:
            out.append(b"\n ")  # the page spacing of the MQGET that finds no message
        out.append(b"\n \n \n No more messages ")
    if latest and sizes:
        out.append(
            b"\n\n****   Summary      ****\n %d messages browsed.\n Smallest message %d bytes."
            b"\n Largest message %d bytes.\n Average message %d bytes.\n"
            % (len(sizes), min(sizes), max(sizes), sum(sizes) // len(sizes))
        )
    if new and with_props:
        out.append(b"\n MQDLTMH")
    out.append(b"\n MQCLOSE\n MQDISC\n")
    return b"".join(out)


def read_listing(content: bytes) -> list:
    return list(read_amqsbcg(io.BytesIO(content), name="l.txt"))


# --- realistic messages ---------------------------------------------------------------------


def dlh_bytes(
    order: str,
    reason: int,
    dest_q: bytes,
    dest_qmgr: bytes,
    *,
    ccsid: int = 1208,
    fmt: bytes = b"MQSTR   ",
    appl_type: int = 7,
    appl_name: bytes = b"QM1",
    date: bytes = b"20260922",
    time: bytes = b"02342828",
    pad: bytes = b" ",
) -> bytes:
    """An MQDLH built field by field from docs/message-formats.md §2 (not by the code under test)."""

    def fix(value: bytes, n: int) -> bytes:
        return value + pad * (n - len(value))

    return (
        b"DLH "
        + struct.pack(order + "ii", 1, reason)
        + fix(dest_q, 48)
        + fix(dest_qmgr, 48)
        + struct.pack(order + "ii", 546 if order == "<" else 273, ccsid)
        + fix(fmt, 8)
        + struct.pack(order + "i", appl_type)
        + fix(appl_name, 28)
        + fix(date, 8)
        + fix(time, 8)
    )


MSG_ID = bytes.fromhex("414D5120514D31202020202020202020DAA1AD6A02AE0640")
LINUX_DLH = dlh_bytes("<", 2051, b"DLQ.TARGET", b"QM1")
DEAD_MD = MQMD(
    version=2,
    report=0,
    msg_type=8,
    expiry=-1,
    feedback=0,
    encoding=546,
    ccsid=1208,
    format="MQDEAD  ",
    priority=0,
    persistence=1,
    msg_id=MSG_ID,
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
PLAIN_MD = DEAD_MD.replace(format="MQSTR   ", ccsid=819, msg_id=MSG_ID[:-1] + b"\x41", user_id="it's me     ")
ORDER = b"Order 42 for ACME: 'rush' delivery"
UTF8_BODY = "Lieferung an Köln — Straße Nr. 5, Zürich ✓ «fin»".encode()
# z/OS-style: MQMD encoding 273 (big-endian), header bytes big-endian, listed on x86
BIG_MD = DEAD_MD.replace(encoding=273, ccsid=819, msg_id=MSG_ID[:-1] + b"\x42")
BIG_DLH = dlh_bytes(">", 2053, b"APP.REPLY", b"QMZ", ccsid=819, appl_name=b"CHANNEL.IN")
NUL_DLH = dlh_bytes("<", 2035, b"SECURE.Q", b"QM1", pad=b"\x00")
NUL_MD = DEAD_MD.replace(msg_id=MSG_ID[:-1] + b"\x43")


def fixture_messages() -> dict[str, tuple[list[Browsed], dict]]:
    return {
        "amqsbcg-old.txt": (
            [Browsed(DEAD_MD, LINUX_DLH + ORDER), Browsed(PLAIN_MD, ORDER * 3)],
            {"layout": "old", "queue": "SYSTEM.DEAD.LETTER.QUEUE"},
        ),
        "amqsbcg-94.txt": (
            [
                Browsed(DEAD_MD, LINUX_DLH + UTF8_BODY, properties=[]),
                Browsed(BIG_MD, BIG_DLH + b"\x00\x01binary", properties=[("usr.color", "'red'"), ("usr.count", "7")]),
                Browsed(NUL_MD, NUL_DLH, properties=[]),
                Browsed(PLAIN_MD, b"", properties=[]),
                Browsed(PLAIN_MD, b"", failed_reason=2009),
            ],
            {"layout": "9.4", "queue": "SYSTEM.DEAD.LETTER.QUEUE", "mbcs_max": 6},
        ),
    }


def test_fixtures_are_what_amqsbcg_prints():
    """The checked-in fixtures are exactly the transcribed amqsbcg output for the messages."""
    for name, (messages, options) in fixture_messages().items():
        assert (FIXTURES / name).read_bytes() == listing(messages, **options), name


# --- the fixtures -----------------------------------------------------------------------------


def test_old_layout_fixture():
    path = FIXTURES / "amqsbcg-old.txt"
    content = path.read_bytes()
    records = list(read_amqsbcg(path))
    assert [type(r) for r in records] == [DumpedMessage, DumpedMessage]
    dead, plain = records
    assert dead.md == DEAD_MD
    assert dead.data == LINUX_DLH + ORDER  # the MQDLH is in the hex, as printed
    assert dead.data[:12].hex().upper() == "444C48200100000003080000"
    assert (dead.index, dead.offset) == (0, content.index(b" MQGET of message number 1"))
    assert dead.line == content[: dead.offset].count(b"\n") + 1
    assert (dead.truncated, dead.total_length, dead.notes) == (False, None, ())
    assert plain.md == PLAIN_MD and plain.md.user_id == "it's me     "
    assert plain.data == ORDER * 3 and plain.index == 1


def test_94_layout_fixture_rebuilds_the_dead_letter_header():
    path = FIXTURES / "amqsbcg-94.txt"
    content = path.read_bytes()
    records = list(read_amqsbcg(path))
    assert [type(r).__name__ for r in records] == [
        "DumpedMessage",
        "DumpedMessage",
        "DumpedMessage",
        "DumpedMessage",
        "RecordError",
    ]
    dead, big, nul_padded, empty, failed = records

    assert b"444C 4820" not in content  # 9.4 leaves the MQDLH out of the hex ...
    assert dead.md == DEAD_MD
    assert dead.data == LINUX_DLH + UTF8_BODY  # ... and it is rebuilt byte for byte
    # in a UTF-8 locale "✓" runs past the 16th byte and the next line starts at 0x31
    assert b"5AC3 BC72 6963 6820 E29C93" in content and b"\n00000031:    20 C2AB" in content
    assert dead.notes == ("dlh_rebuilt_from_listing",)
    assert (dead.truncated, dead.total_length) == (False, None)

    # listed on a little-endian host: Version printed as 16777216, integers swapped back
    assert b"Version : 16777216" in content
    assert big.md == BIG_MD and big.data == BIG_DLH + b"\x00\x01binary"

    # NUL-padded character fields are printed short and completed with NULs
    assert b"DestQName      : 'SECURE.Q'" in content
    assert nul_padded.data == NUL_DLH

    assert empty.data == b"" and empty.md == PLAIN_MD
    assert failed.code == "listing_get_failed" and "2009" in failed.message
    assert (failed.index, failed.offset) == (4, content.index(b" MQGET 5, failed"))


# --- truncation -------------------------------------------------------------------------------


def test_truncated_plain_message():
    data = bytes(range(256)) * 300  # 76800 bytes; amqsbcg prints 65536
    [message] = read_listing(listing([Browsed(PLAIN_MD, data)]))
    assert message.truncated and message.total_length == 76800
    assert message.data == data[:BUFFER]


def test_truncated_dead_letter_counts_the_rebuilt_header():
    data = LINUX_DLH + b"x" * 70000
    content = listing([Browsed(DEAD_MD, data)])
    assert b"length - 65364 of 70000 bytes" in content
    [message] = read_listing(content)
    assert message.truncated and message.total_length == len(data)
    assert message.data == data[:BUFFER]


def test_full_length_message_is_not_truncated():
    data = b"y" * BUFFER
    [message] = read_listing(listing([Browsed(PLAIN_MD, data)]))
    assert (message.truncated, message.total_length, message.data) == (False, None, data)


# --- property: any descriptor and data, either layout --------------------------------------


def printable_field(length: int):
    """Text amqsbcg prints back unchanged: no NUL, no newline (it would split the line)."""
    return (
        st.binary(min_size=0, max_size=length)
        .map(lambda b: b.replace(b"\x00", b" ").replace(b"\n", b" ").replace(b"\r", b" "))
        .map(bytes_to_text)
    )


mqmds = st.builds(
    MQMD,
    **{name: printable_field(n) for name, n in MQMD_CHAR_LENGTHS.items()},
    **{name: st.binary(min_size=n, max_size=n) for name, n in MQMD_BYTE_LENGTHS.items()},
    **{
        name: st.integers(-(2**31), 2**31 - 1)
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
    },
)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(mqmds, st.binary(max_size=400)), min_size=1, max_size=4),
    st.sampled_from(["old", "9.4"]),
    st.sampled_from([1, 6]),
)
def test_any_listing_reads_back(messages, layout, mbcs_max):
    messages = [(md.replace(format="MQSTR   ") if md.format == "MQDEAD  " else md, data) for md, data in messages]
    records = read_listing(listing([Browsed(md, data) for md, data in messages], layout=layout, mbcs_max=mbcs_max))
    assert [(r.md, r.data, r.index) for r in records] == [(md, data, i) for i, (md, data) in enumerate(messages)]


@settings(max_examples=examples(100), deadline=None)
@given(st.text(st.characters(codec="utf-8", exclude_characters="\n\r\x00"), max_size=120))
def test_multibyte_overruns_keep_offsets(text):
    data = text.encode()
    [message] = read_listing(listing([Browsed(PLAIN_MD, data)], mbcs_max=6))
    assert message.data == data


# --- bad records ------------------------------------------------------------------------------


def good_and_bad(bad: bytes) -> list:
    content = listing([Browsed(PLAIN_MD, b"first"), Browsed(PLAIN_MD, b"second"), Browsed(PLAIN_MD, b"third")])
    second = content.index(b" MQGET of message number 2")
    third = content.index(b" MQGET of message number 3")
    return read_listing(content[:second] + bad + content[third:])


def bad_second(transform) -> bytes:
    content = listing([Browsed(PLAIN_MD, b"first"), Browsed(PLAIN_MD, b"second"), Browsed(PLAIN_MD, b"third")])
    second = content.index(b" MQGET of message number 2")
    third = content.index(b" MQGET of message number 3")
    return transform(content[second:third])


@pytest.mark.parametrize(
    ("transform", "code"),
    [
        (lambda s: s.replace(b"00000000:  7365", b"00000010:  7365"), "bad_offset"),
        (lambda s: s.replace(b"length - 6 of 6", b"length - 4 of 4"), "length_mismatch"),
        (lambda s: s.replace(b"CodedCharSetId : 819", b"CodedCharSetId : 2147483648"), "number_out_of_range"),
        (lambda s: s.replace(b"Version : 2", b"Version : " + b"9" * 5000), "number_out_of_range"),
        (lambda s: s.replace(b"7365 636F", b"7365 ****"), "bad_hex"),
        (lambda s: s.replace(b" length - 6 of 6 bytes", b" size 6"), "bad_length_line"),
        (lambda s: s.replace(b"  BackoutCount : 0\n", b""), "incomplete_descriptor"),
        (lambda s: s.replace(b"BackoutCount", b"Backouts"), "unknown_field"),
        (lambda s: s.replace(b"MsgId : X'414D", b"MsgId : X'4D"), "bad_field"),
        (lambda s: s.replace(b"7365 636F", b"7365 6Z6F"), "bad_hex"),
        (lambda s: s[: s.index(b"****   Message")], "incomplete_message"),
    ],
)
def test_bad_record_is_reported_and_the_next_one_lands(transform, code):
    records = good_and_bad(bad_second(transform))
    assert [r.code if isinstance(r, RecordError) else r.data for r in records] == [b"first", code, b"third"]
    error = records[1]
    assert (error.index, error.file) == (1, "l.txt")
    assert error.snippet  # the offending line (or the record's first line)


def test_error_locates_the_record_and_names_the_line():
    records = good_and_bad(bad_second(lambda s: s.replace(b"7365 636F", b"7365 6Z6F")))
    error = records[1]
    assert error.message == "'6Z6F' is not a hex group"
    assert error.snippet.startswith("00000000:  7365 6Z6F")
    assert error.line > records[0].line


def test_rebuild_refuses_an_unknown_ccsid():
    content = listing([Browsed(DEAD_MD.replace(ccsid=4321), LINUX_DLH + b"x")])
    [error] = read_listing(content)
    assert error.code == "dlh_rebuild_failed" and "4321" in error.message


def test_listing_without_messages_and_descriptor_without_mqget_line():
    assert read_listing(listing([])) == []
    content = listing([Browsed(PLAIN_MD, b"abc")]).replace(b" MQGET of message number 1,", b"")
    [message] = read_listing(content)
    assert message.data == b"abc" and message.offset == content.index(b"****Message descriptor")


@settings(max_examples=examples(250), deadline=None)
@given(st.data())
def test_damaged_listings_never_raise(data):
    base = (FIXTURES / data.draw(st.sampled_from(["amqsbcg-old.txt", "amqsbcg-94.txt"]))).read_bytes()
    content = bytearray(base)
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(content) - 1))
        content[at : at + data.draw(st.integers(0, 40))] = data.draw(
            st.binary(max_size=6) | st.sampled_from([b"\n", b"'", b" : ", b"X'", b"****"])
        )
    records = read_listing(bytes(content))
    assert all(isinstance(r, (DumpedMessage, RecordError)) for r in records)
    assert [r.index for r in records] == list(range(len(records)))
