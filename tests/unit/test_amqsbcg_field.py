"""amqsbcg listings as they turn up in the field: other releases and platforms, copies made
by mail, blogs and forums, listings cut by hand.

Each fixture under tests/fixtures/amqsbcg-field-*.txt re-prints a published listing's
values (tests/fixtures/README.md names the source) with ``listing()`` (amqsbcg0.c
transcribed, see test_amqsbcg.py) in the layout the publisher's copy has: indentation,
blank lines, where it stops. ``test_field_fixtures_are_reproducible`` keeps the files and
the recipes below in step; the other tests read the files and check the fields the
publisher shows.
"""

from __future__ import annotations

import re
import struct

import pytest

from dlq_pipeline.dumps.records import DumpedMessage
from dlq_pipeline.dumps.sources import read_source, sniff
from dlq_pipeline.mq.dlh_decoder import decode_dlh
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.mq.structures import DeadLetterHeader
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.rules.whatif import decide_message
from tests.support import REPO
from tests.unit.test_amqsbcg import Browsed, listing, read_listing

FIXTURES = REPO / "tests" / "fixtures"


# --- how the copies differ from what amqsbcg wrote ------------------------------------------


def indent_all(text: bytes) -> bytes:
    """A mail or news copy: every line indented by one blank."""
    return b"\n".join(b" " + line if line else line for line in text.split(b"\n"))


def indent_hex(text: bytes) -> bytes:
    """Older AIX releases: the hex dump lines indented by one blank."""
    return re.sub(rb"\n([0-9A-F]{8}:)", rb"\n \1", text)


def without_blank_lines(text: bytes) -> bytes:
    """A blog copy: the blank (and blank-only) lines dropped."""
    return b"\n".join(line for line in text.split(b"\n") if line.strip()) + b"\n"


def cut_after(text: bytes, marker: bytes) -> bytes:
    """A listing pasted only up to (and including) ``marker``."""
    return text[: text.index(marker) + len(marker)]


def up_to(text: bytes, marker: bytes) -> bytes:
    """A listing pasted up to the line that starts with ``marker`` (not included)."""
    return text[: text.index(marker)] + b"\n"


def pad(value: bytes, length: int, fill: bytes = b" ") -> bytes:
    return value + fill * (length - len(value))


def dlh(
    order: str,
    reason: int,
    dest_q: bytes,
    dest_qmgr: bytes,
    encoding: int,
    ccsid: int,
    fmt: bytes,
    appl_type: int,
    appl_name: bytes,
    date: bytes,
    time: bytes,
) -> bytes:
    """An MQDLH, field by field from IBM's documented layout (not by the code under test)."""
    return (
        b"DLH "
        + struct.pack(order + "ii", 1, reason)
        + pad(dest_q, 48)
        + pad(dest_qmgr, 48)
        + struct.pack(order + "ii", encoding, ccsid)
        + pad(fmt, 8)
        + struct.pack(order + "i", appl_type)
        + pad(appl_name, 28)
        + date
        + time
    )


def mqtm(order: str, q_name: bytes, process: bytes, appl_type: int, appl_id: bytes) -> bytes:
    """An MQTM (trigger message, 684 bytes), field by field from IBM's documented layout."""
    return (
        b"TM  "
        + struct.pack(order + "i", 1)
        + pad(q_name, 48)
        + pad(process, 48)
        + pad(b"", 64)
        + struct.pack(order + "i", appl_type)
        + pad(appl_id, 256)
        + pad(b"", 128)
        + pad(b"", 128)
    )


# --- the published listings --------------------------------------------------------------------

# mail-archive.com, mqseries list msg06610 (2003): an AIX queue manager's DLQ browsed with
# MQSeries 5.x amqsbcg, quoted in a mail (every line indented by one blank). The queue manager
# name the poster starred out is MQADMIN4, as the MsgId spells it. The archive copy stops
# inside the hex line at 0x80, 133 of the 184 bytes.
MAIL_MD = MQMD(
    version=2,
    report=0,
    msg_type=8,
    expiry=-1,
    feedback=0,
    encoding=273,
    ccsid=819,
    format="MQDEAD  ",
    priority=0,
    persistence=0,
    msg_id=bytes.fromhex("414D51204D5141444D494E3420202020C713033E12F00000"),
    correl_id=bytes(24),
    backout_count=0,
    reply_to_q=" " * 48,
    reply_to_qmgr="********" + " " * 40,
    user_id="*******     ",
    accounting_token=bytes.fromhex("160105150000009F3C2D05AC5FFA16ED7C36243D3C000000000000000000000B"),
    appl_identity_data=" " * 32,
    put_appl_type=11,
    put_appl_name="MQSeries\\pgm\\bin\\amqsput.exe",
    put_date="20030109",
    put_time="08580248",
    appl_origin_data="    ",
    group_id=bytes(24),
    msg_seq_number=1,
    offset=0,
    msg_flags=0,
    original_length=-1,
)
MAIL_DLH = dlh(">", 2085, b"ASDF2", b"MQADMIN4", 546, 850, b"MQSTR   ", 6, b"amqcrsta", b"20030109", b"08580248")
MAIL_DATA = MAIL_DLH + b"hello world!"  # 184 bytes; the body is beyond the cut

# An AIX runmqtrm dead letter (MQFB_APPL_CANNOT_BE_STARTED, 265) as it was reported:
# listed by an older amqsbcg (hex lines indented by a blank, a blank line after
# 'length - 856 bytes') and pasted only up to byte 384. Built from IBM's MQDLH and MQTM
# layouts: no such listing is published.
AIX_MD = MAIL_MD.replace(
    msg_id=bytes.fromhex("414D5120514D4149583120202020202062A1B3C420001207"),
    reply_to_qmgr="QMAIX1" + " " * 42,
    user_id="mqm         ",
    accounting_token=bytes(32),
    put_appl_type=6,
    put_appl_name="runmqtrm" + " " * 20,
    put_date="20190304",
    put_time="11223344",
    persistence=1,
)
AIX_TM = mqtm(">", b"APP.REQUEST", b"APP.PROCESS", 6, b"/usr/local/bin/app_start")
AIX_DLH = dlh(">", 265, b"APP.INITQ", b"QMAIX1", 273, 819, b"MQTRIG  ", 6, b"runmqtrm", b"20190304", b"11223344")

# vdesabou/kafka-docker-playground, connect/connect-ibm-mq-sink/README.md (the 2019 version):
# amqsbcg of the ibmcom/mq 9.1 container (Linux x86-64, UTF-8 locale) showing a JMS message
# with an MQRFH2 put by Kafka Connect; 9.1 layout, no summary.
KAFKA_MD = MQMD(
    version=2,
    report=0,
    msg_type=8,
    expiry=-1,
    feedback=0,
    encoding=273,
    ccsid=1208,
    format="MQHRF2  ",
    priority=4,
    persistence=1,
    msg_id=bytes.fromhex("414D5120514D312020202020202020203F8EA85D1EA66A20"),
    correl_id=bytes(24),
    backout_count=0,
    reply_to_q=" " * 48,
    reply_to_qmgr="QM1" + " " * 45,
    user_id="app         ",
    accounting_token=bytes(32),
    appl_identity_data=" " * 32,
    put_appl_type=28,
    put_appl_name="cli.ConnectDistributed      ",
    put_date="20191017",
    put_time="16024736",
    appl_origin_data="    ",
    group_id=bytes(24),
    msg_seq_number=1,
    offset=0,
    msg_flags=0,
    original_length=-1,
)
KAFKA_FOLDER = (
    b"<mcd><Msd>jms_text</Msd></mcd>  ",
    b"<jms><Dst>queue:///DEV.QUEUE.1</Dst><Tms>1571328167362</Tms><Dlv>2</Dlv></jms>  ",
)
KAFKA_DATA = (
    b"RFH "
    + struct.pack(">iiii", 2, 156, 273, 1208)
    + b"MQSTR   "
    + struct.pack(">ii", 0, 1208)
    + struct.pack(">i", len(KAFKA_FOLDER[0]))
    + KAFKA_FOLDER[0]
    + struct.pack(">i", len(KAFKA_FOLDER[1]))
    + KAFKA_FOLDER[1]
    + b"This is my message"
)

# A blog post (GitHub-hosted blog, 'WebSphere MQ: ローカル・キュー操作', 2013-01-04): WebSphere MQ
# 7.0 amqsbcg on CentOS 6.3, pasted without its blank lines.
BLOG_MD = MQMD(
    version=2,
    report=0,
    msg_type=8,
    expiry=-1,
    feedback=0,
    encoding=546,
    ccsid=1208,
    format="MQSTR   ",
    priority=0,
    persistence=0,
    msg_id=bytes.fromhex("414D5120716D67723120202020202020ECD0E4500A1F0020"),
    correl_id=bytes(24),
    backout_count=0,
    reply_to_q=" " * 48,
    reply_to_qmgr="qmgr1" + " " * 43,
    user_id="mqm         ",
    accounting_token=bytes.fromhex("0334393600000000000000000000000000000000000000000000000000000006"),
    appl_identity_data=" " * 32,
    put_appl_type=6,
    put_appl_name="amqsput" + " " * 21,
    put_date="20130103",
    put_time="01235075",
    appl_origin_data="    ",
    group_id=bytes(24),
    msg_seq_number=1,
    offset=0,
    msg_flags=0,
    original_length=-1,
)


def field_fixtures() -> dict[str, bytes]:
    """The fixture files, as the recipes above make them."""
    return {
        "amqsbcg-field-mqseries5-mail.txt": cut_after(
            indent_all(listing([Browsed(MAIL_MD, MAIL_DATA)], layout="old", queue="SYSTEM.DEAD.LETTER.QUEUE")),
            b"616D 7163 727",
        ),
        "amqsbcg-field-aix-trigger-cut.txt": up_to(
            indent_hex(listing([Browsed(AIX_MD, AIX_DLH + AIX_TM)], layout="old", queue="SYSTEM.DEAD.LETTER.QUEUE")),
            b"\n 00000180:",
        ),
        "amqsbcg-field-mq91-rfh2.txt": listing(
            [Browsed(KAFKA_MD, KAFKA_DATA)], layout="9.1", queue="DEV.QUEUE.1", mbcs_max=6
        ),
        "amqsbcg-field-mq7-blog.txt": without_blank_lines(
            listing([Browsed(BLOG_MD, b"Hello MQ world!")], layout="old", queue="QL.A")
        ),
    }


def test_field_fixtures_are_reproducible():
    for name, content in field_fixtures().items():
        assert (FIXTURES / name).read_bytes() == content, name


def read(name: str) -> list:
    path = FIXTURES / name
    assert sniff(path) == "amqsbcg"
    return list(read_source(path, name=name))


# --- each published listing, its fields checked -------------------------------------------------


def test_mail_copy_of_an_mqseries5_listing_cut_inside_the_hex():
    """Every line indented, the hex too, a blank line after the length line, the copy ending
    inside a hex group: the 133 bytes there land, truncated, never a 'hex holds 0' error."""
    [msg] = read("amqsbcg-field-mqseries5-mail.txt")
    assert isinstance(msg, DumpedMessage)
    assert msg.md == MAIL_MD
    assert msg.md.put_appl_name == "MQSeries\\pgm\\bin\\amqsput.exe"
    assert msg.data == MAIL_DATA[:133]
    assert (msg.truncated, msg.total_length, msg.notes) == (True, 184, ("listing_cut:133/184",))
    # a big-endian MQDLH from AIX: Reason 2085, DestQName ASDF2; 133 bytes cannot hold all 172
    assert msg.data[:12] == b"DLH \x00\x00\x00\x01\x00\x00\x08\x25"
    assert msg.data[12:17] == b"ASDF2"
    header = decode_dlh(msg.data, 273, 819, "MQDEAD  ")
    assert (header.has_dlh, header.problem) == (False, "too_short")  # never usable, so never matched
    # ...but the fields whose bytes are all there are shown, as the listing prints them
    assert header.dlh == DeadLetterHeader(
        reason=2085,
        dest_q="ASDF2".ljust(48),
        dest_qmgr="MQADMIN4".ljust(48),
        encoding=546,
        ccsid=850,
        format="MQSTR   ",
        put_appl_type=6,
        put_appl_name=None,
        put_date=None,
        put_time=None,
    )


def test_aix_listing_pasted_in_part_keeps_its_dead_letter_header():
    """384 of 856 bytes: the MQDLH (reason 265, big-endian) decodes; the message is
    truncated with a note saying what is missing, and no rule can replay it."""
    content = (FIXTURES / "amqsbcg-field-aix-trigger-cut.txt").read_bytes()
    assert b"\n length - 856 bytes\n \n 00000000:  444C 4820 0000 0001 0000 0109" in content
    [msg] = read("amqsbcg-field-aix-trigger-cut.txt")
    assert msg.md == AIX_MD
    assert msg.data == (AIX_DLH + AIX_TM)[:384]
    assert (msg.truncated, msg.total_length, msg.notes) == (True, 856, ("listing_cut:384/856",))
    header = decode_dlh(msg.data, msg.md.encoding, msg.md.ccsid, msg.md.format)
    assert header.has_dlh and header.problem is None
    d = header.dlh
    assert (d.reason, d.dest_q.rstrip(), d.dest_qmgr.rstrip(), d.format, d.encoding, d.ccsid) == (
        265,
        "APP.INITQ",
        "QMAIX1",
        "MQTRIG  ",
        273,
        819,
    )
    assert d.put_appl_name.rstrip() == "runmqtrm"
    table = parse_rules("REASON(MQFB_APPL_CANNOT_BE_STARTED) ACTION(RETRY)\n", "t.rules")
    assert table.ok
    outcome = decide_message(table, msg, "f")
    assert (outcome.decision.action, outcome.decision.ignore_reason) == ("IGNORE", "truncated")


def test_mq91_listing_of_a_jms_message():
    """9.1: ', CompCode:0 Reason:0', 'length - 174 of 174 bytes', the wide hex lines of a
    UTF-8 locale, 'No more messages' and no summary."""
    content = (FIXTURES / "amqsbcg-field-mq91-rfh2.txt").read_bytes()
    assert b" length - 174 of 174 bytes" in content and b"Summary" not in content
    [msg] = read("amqsbcg-field-mq91-rfh2.txt")
    assert msg.md == KAFKA_MD and msg.md.format == "MQHRF2  " and msg.md.put_appl_type == 28
    assert len(msg.data) == 174 and msg.data == KAFKA_DATA
    assert msg.data[:4] == b"RFH " and msg.data.endswith(b"This is my message")
    assert (msg.truncated, msg.total_length, msg.notes) == (False, None, ())
    assert decode_dlh(msg.data, 273, 1208, "MQHRF2  ").has_dlh is False


def test_blog_copy_without_blank_lines():
    content = (FIXTURES / "amqsbcg-field-mq7-blog.txt").read_bytes()
    assert b"\n\n" not in content
    [msg] = read("amqsbcg-field-mq7-blog.txt")
    assert msg.md == BLOG_MD and msg.data == b"Hello MQ world!"
    assert (msg.truncated, msg.notes) == (False, ())


# --- cut listings, built at test time --------------------------------------------------------


PLAIN = MAIL_MD.replace(format="MQSTR   ", encoding=546)


def test_listing_cut_before_the_hex():
    """After the length line the MQMD lands (no data, truncated); before it, nothing can."""
    content = listing([Browsed(PLAIN, b"abc")], layout="old")
    [cut] = read_listing(cut_after(content, b"length - 3 bytes"))
    assert (cut.md, cut.data, cut.truncated, cut.total_length, cut.notes) == (PLAIN, b"", True, 3, ("listing_cut:0/3",))
    [error] = read_listing(cut_after(content, b"****   Message      ****"))
    assert error.code == "incomplete_message"


@pytest.mark.parametrize("layout", ["old", "9.1", "9.4"])
def test_cut_listing_then_the_next_message(layout):
    """A message cut by hand in the middle of a listing lands truncated and the next one
    is read whole."""
    data = bytes(range(256)) * 2
    content = listing([Browsed(PLAIN, data), Browsed(PLAIN, b"next")], layout=layout)
    start = content.index(b"\n00000100:")
    second = content.index(b"\n \n MQGET of message number 2")
    cut, nxt = read_listing(content[:start] + content[second:])
    assert (cut.data, cut.truncated, cut.total_length, cut.notes) == (data[:256], True, 512, ("listing_cut:256/512",))
    assert (nxt.data, nxt.truncated) == (b"next", False)


def test_odd_hex_group_only_on_the_last_line():
    content = listing([Browsed(PLAIN, b"0123456789abcdefXYZ")], layout="old")
    [cut] = read_listing(cut_after(content, b"00000000:  3031 3233 343"))
    assert (cut.data, cut.truncated, cut.notes) == (b"01234", True, ("listing_cut:5/19",))
    [error] = read_listing(content.replace(b"3031 3233 3435", b"3031 3233 343", 1))
    assert (error.code, error.message) == ("bad_hex", "'343' is not a hex group")
    [error] = read_listing(content.replace(b"6364 6566 '0123456789abcdef'", b"6364 656", 1))
    assert (error.code, error.message) == (
        "bad_hex",
        "a hex group with an odd number of digits before the last hex line",
    )
    assert error.snippet.startswith("00000000:  3031") and error.snippet.endswith("6364 656")


def test_a_hex_group_starred_out_by_hand_is_named():
    content = listing([Browsed(PLAIN, b"0123456789abcdef")], layout="old")
    [error] = read_listing(content.replace(b"3031 3233", b"**** 3233", 1))
    assert error.code == "bad_hex"
    assert error.message == "'****' is not a hex group (was the listing edited by hand?)"
