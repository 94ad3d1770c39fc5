"""`inspect`: the --json object of a message (whole-object goldens), the readable view, the
summary counts, and the command's streaming, error reporting and exit statuses."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest
from click.testing import CliRunner

from dlq_pipeline.cli import cli
from dlq_pipeline.dumps.describe import describe, format_message, format_summary, summarize
from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
from dlq_pipeline.dumps.generator import generate, write_generated
from dlq_pipeline.dumps.records import DumpedMessage, RecordError
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.mq.structures import (
    DeadLetterHeader,
    RulesFormattingHeader2,
    TransmissionQueueHeader,
    encode_dlh,
    encode_rfh2,
    encode_xqh,
)

REAL_DUMP = "mq10-dmpmqmsg-stdout.dmp"


def _invoke(*args):
    return CliRunner().invoke(cli, ["inspect", *map(str, args)])


def _json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


# --- the real MQ 10 dump ---------------------------------------------------------------------

REAL_OBJECT = {
    "index": 0,
    "line": 7,
    "format": "MQSTR",
    "encoding": 546,
    "ccsid": 1208,
    "msg_id": "414D5120514D31202020202020202020DAA1AD6A02AE0640",
    "correl_id": "000000000000000000000000000000000000000000000000",
    "msg_type": 8,
    "persistence": 1,
    "backout_count": 0,
    "put_appl_type": 6,
    "put_appl_name": "amqsput",
    "put_date": "20260922",
    "put_time": "02342828",
    "reply_to_q": "",
    "reply_to_qmgr": "QM1",
    "user_id": "mqm",
    "data_length": 238,
    "truncated": False,
    "has_dlh": False,
    "dlh_problem": "bad_strucid",
    "dlh": None,
    "flags": [],
    "notes": [],
    "preview": {
        "offset": 0,
        "hex": "7B226F726967696E616C223A7B226F726465724964223A223133222C22666F72",
        "text": '{"original":{"orderId":"13","for',
    },
}


def test_real_dump_json_is_exactly_the_expected_object(real_fixtures):
    path = real_fixtures / REAL_DUMP
    result = _invoke("--json", path)
    assert result.exit_code == 0, result.output
    assert _json_lines(result.stdout) == [{**REAL_OBJECT, "file": str(path)}]
    assert result.stderr == ""


def test_real_dump_readable_view_is_exactly_this(real_fixtures):
    path = real_fixtures / REAL_DUMP
    result = _invoke(path)
    assert result.exit_code == 0
    assert (
        result.stdout
        == f"""\
#0  {path}  line 7
  MQMD   Format 'MQSTR'  Encoding 546  CCSID 1208  MsgType 8 DATAGRAM  Persistence 1 PERSISTENT  BackoutCount 0
         MsgId    414D5120514D31202020202020202020DAA1AD6A02AE0640
         CorrelId 000000000000000000000000000000000000000000000000
         Put      20260922 02342828 by 6 UNIX 'amqsput'  UserId 'mqm'
         ReplyTo  '' at 'QM1'
  MQDLH  none (bad_strucid)
  Data   238 bytes
         7B226F72 6967696E 616C223A 7B226F72 64657249 64223A22 3133222C 22666F72
         {{"original":{{"orderId":"13","for

"""
    )


def test_inspect_never_imports_pyspark(real_fixtures):
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom dlq_pipeline.cli import cli\n"
        f"r = CliRunner().invoke(cli, ['inspect', '--json', {str(real_fixtures / REAL_DUMP)!r}])\n"
        "print(r.exit_code, 'pyspark' in sys.modules, 'py4j' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "False", "False"]


# --- hand-built messages of each platform ------------------------------------------------------

_BLANK_ID = "00" * 24


def _zos_message() -> DumpedMessage:
    """z/OS: MQDLH raw EBCDIC (CCSID 500) big-endian, NUL-padded DestQName (IT31856)."""
    md = MQMD(
        version=2,
        encoding=785,
        ccsid=500,
        format="MQDEAD  ",
        persistence=1,
        msg_id=bytes.fromhex("C3E2D840C3E2D8F14040404040404040DA1B2C3D4E5F0001"),
        reply_to_qmgr="CSQ1".ljust(48),
        user_id="BATCHPRD".ljust(12),
        put_appl_type=2,
        put_appl_name="ORDB0012".ljust(28),
        put_date="20261030",
        put_time="10111213",
    )
    dlh = DeadLetterHeader(
        2035,
        "PAYROLL.SECURE.IN".ljust(48, "\x00"),
        "CSQ1".ljust(48),
        785,
        500,
        "MQSTR   ",
        7,
        "CSQ1".ljust(28),
        "20261030",
        "10111500",
    )
    return DumpedMessage(md, encode_dlh(dlh, 785, 500) + "Grüße, Zoë".encode("cp500"), index=3, line=120)


ZOS_OBJECT = {
    "index": 3,
    "file": "zos.dmp",
    "line": 120,
    "format": "MQDEAD",
    "encoding": 785,
    "ccsid": 500,
    "msg_id": "C3E2D840C3E2D8F14040404040404040DA1B2C3D4E5F0001",
    "correl_id": _BLANK_ID,
    "msg_type": 8,
    "persistence": 1,
    "backout_count": 0,
    "put_appl_type": 2,
    "put_appl_name": "ORDB0012",
    "put_date": "20261030",
    "put_time": "10111213",
    "reply_to_q": "",
    "reply_to_qmgr": "CSQ1",
    "user_id": "BATCHPRD",
    "data_length": 182,
    "truncated": False,
    "has_dlh": True,
    "dlh_problem": None,
    "dlh": {
        "reason": 2035,
        "reason_name": "MQRC_NOT_AUTHORIZED",
        "dest_q": "PAYROLL.SECURE.IN",
        "dest_qmgr": "CSQ1",
        "encoding": 785,
        "ccsid": 500,
        "format": "MQSTR",
        "put_appl_type": 7,
        "put_appl_name": "CSQ1",
        "put_date": "20261030",
        "put_time": "10111500",
        "chain": "MQSTR",
    },
    "flags": ["nul_padded:dest_q"],
    "notes": [],
    "preview": {"offset": 172, "hex": "C799DC59856B40E99653", "text": "Grüße, Zoë"},
}


def _aix_message() -> DumpedMessage:
    """AIX: big-endian ASCII; a transmission-queue message dead-lettered by a channel."""
    md = MQMD(
        version=2,
        msg_type=1,
        encoding=273,
        ccsid=819,
        format="MQDEAD  ",
        persistence=0,
        msg_id=bytes.fromhex("414D5120514D41495830312020202020C4B00B4000000001"),
        reply_to_q="ORDERS.REPLY".ljust(48),
        reply_to_qmgr="AAAA.GW01".ljust(48),
        user_id="payapp".ljust(12),
        put_appl_type=6,
        put_appl_name="payengine".ljust(28),
        put_date="20261029",
        put_time="23595999",
        backout_count=2,
    )
    dlh = DeadLetterHeader(
        2087,
        "ORDERS.IN".ljust(48),
        "QMDR01".ljust(48),
        273,
        819,
        "MQXMIT  ",
        7,
        "amqrmppa".ljust(28),
        "20261030",
        "00000107",
    )
    inner = md.replace(version=1, format="MQSTR   ")
    xqh = TransmissionQueueHeader("ORDERS.IN".ljust(48), "QMDR01".ljust(48), inner)
    data = encode_dlh(dlh, 273, 819) + encode_xqh(xqh, 273, 819) + b"hello"
    return DumpedMessage(md, data, index=0, line=5)


AIX_OBJECT = {
    "index": 0,
    "file": "aix.dmp",
    "line": 5,
    "format": "MQDEAD",
    "encoding": 273,
    "ccsid": 819,
    "msg_id": "414D5120514D41495830312020202020C4B00B4000000001",
    "correl_id": _BLANK_ID,
    "msg_type": 1,
    "persistence": 0,
    "backout_count": 2,
    "put_appl_type": 6,
    "put_appl_name": "payengine",
    "put_date": "20261029",
    "put_time": "23595999",
    "reply_to_q": "ORDERS.REPLY",
    "reply_to_qmgr": "AAAA.GW01",
    "user_id": "payapp",
    "data_length": 172 + 428 + 5,
    "truncated": False,
    "has_dlh": True,
    "dlh_problem": None,
    "dlh": {
        "reason": 2087,
        "reason_name": "MQRC_UNKNOWN_REMOTE_Q_MGR",
        "dest_q": "ORDERS.IN",
        "dest_qmgr": "QMDR01",
        "encoding": 273,
        "ccsid": 819,
        "format": "MQXMIT",
        "put_appl_type": 7,
        "put_appl_name": "amqrmppa",
        "put_date": "20261030",
        "put_time": "00000107",
        "chain": "MQXMIT>MQSTR",
    },
    "flags": [],
    "notes": [],
    "preview": {
        "offset": 172,
        "hex": "58514820000000014F52444552532E494E202020202020202020202020202020",
        "text": "XQH ....ORDERS.IN" + " " * 15,
    },
}


def _linux_message() -> DumpedMessage:
    """Linux: little-endian MQDLH before a JMS message (MQRFH2 in Java's encoding 273)."""
    md = MQMD(
        version=2,
        encoding=546,
        ccsid=1208,
        format="MQDEAD  ",
        persistence=1,
        msg_id=bytes.fromhex("414D5120514D312020202020202020208636ACE703000000"),
        correl_id=b"ORD0604195".ljust(24, b"\x00"),
        reply_to_qmgr="QM1".ljust(48),
        user_id="app01".ljust(12),
        appl_identity_data="\x00" * 32,
        put_appl_type=28,
        put_appl_name="com.acme.orders.OrderService",
        put_date="20261031",
        put_time="07405613",
        backout_count=5,
    )
    dlh = DeadLetterHeader(
        2362,
        "ORDERS.IN".ljust(48),
        "QM1".ljust(48),
        273,
        1208,
        "MQHRF2  ",
        28,
        "com.acme.orders.OrderService",
        "20261031",
        "07525805",
    )
    rfh2 = encode_rfh2(RulesFormattingHeader2(36, 273, 1208, "MQSTR   ", 0, 1208), 273, 1208)
    return DumpedMessage(md, encode_dlh(dlh, 546, 1208) + rfh2 + b"{}", index=7, line=400)


LINUX_OBJECT = {
    "index": 7,
    "file": "linux.dmp",
    "line": 400,
    "format": "MQDEAD",
    "encoding": 546,
    "ccsid": 1208,
    "msg_id": "414D5120514D312020202020202020208636ACE703000000",
    "correl_id": "4F5244303630343139350000000000000000000000000000",
    "msg_type": 8,
    "persistence": 1,
    "backout_count": 5,
    "put_appl_type": 28,
    "put_appl_name": "com.acme.orders.OrderService",
    "put_date": "20261031",
    "put_time": "07405613",
    "reply_to_q": "",
    "reply_to_qmgr": "QM1",
    "user_id": "app01",
    "data_length": 172 + 36 + 2,
    "truncated": False,
    "has_dlh": True,
    "dlh_problem": None,
    "dlh": {
        "reason": 2362,
        "reason_name": "MQRC_BACKOUT_THRESHOLD_REACHED",
        "dest_q": "ORDERS.IN",
        "dest_qmgr": "QM1",
        "encoding": 273,
        "ccsid": 1208,
        "format": "MQHRF2",
        "put_appl_type": 28,
        "put_appl_name": "com.acme.orders.OrderService",
        "put_date": "20261031",
        "put_time": "07525805",
        "chain": "MQHRF2>MQSTR",
    },
    "flags": ["md_nul_padded:appl_identity_data"],
    "notes": [],
    "preview": {
        "offset": 172,
        "hex": "52464820000000020000002400000111000004B84D5153545220202000000000",
        "text": "RFH .......$........MQSTR   ....",
    },
}


@pytest.mark.parametrize(
    "message, file, expected",
    [
        (_zos_message, "zos.dmp", ZOS_OBJECT),
        (_aix_message, "aix.dmp", AIX_OBJECT),
        (_linux_message, "linux.dmp", LINUX_OBJECT),
    ],
)
def test_describe_hand_built_messages_of_each_platform(message, file, expected):
    assert describe(message(), file) == expected


def test_readable_view_of_a_zos_dead_letter_is_exactly_this():
    assert (
        format_message(ZOS_OBJECT)
        == """\
#3  zos.dmp  line 120
  MQMD   Format 'MQDEAD'  Encoding 785  CCSID 500  MsgType 8 DATAGRAM  Persistence 1 PERSISTENT  BackoutCount 0
         MsgId    C3E2D840C3E2D8F14040404040404040DA1B2C3D4E5F0001
         CorrelId 000000000000000000000000000000000000000000000000
         Put      20261030 10111213 by 2 ZOS 'ORDB0012'  UserId 'BATCHPRD'
         ReplyTo  '' at 'CSQ1'
  MQDLH  Reason 2035 MQRC_NOT_AUTHORIZED
         Dest     'PAYROLL.SECURE.IN' at 'CSQ1'
         Next     Encoding 785  CCSID 500  Format 'MQSTR'  Chain MQSTR
         Put      20261030 10111500 by 7 QMGR 'CSQ1'
  Flags  nul_padded:dest_q
  Data   182 bytes, body from byte 172
         C799DC59 856B40E9 9653
         Grüße, Zoë"""
    )


def test_truncated_message_reports_its_full_length():
    message = DumpedMessage(MQMD(), b"DLH ", truncated=True, total_length=70000)
    desc = describe(message, "listing.txt")
    assert (desc["data_length"], desc["truncated"], desc["dlh_problem"]) == (70000, True, "too_short")
    assert "70000 bytes (truncated in the source)" in format_message(desc)


# --- generated messages: goldens and intent ---------------------------------------------------

# Whole-object goldens for generated messages: they pin the generator's bytes for a seed as
# well as what inspect makes of them. Checked by eye against the byte layouts: EBCDIC 'CSQ '
# MsgIds and 'XQH ' (E7D8C840) on z/OS, big-endian Version 00000001 on z/OS and AIX,
# little-endian 01000000 on Linux/Windows, MQRFH2 in Java's encoding 273.
GOLDEN_SEED = 20261121

GENERATED_GOLDENS = {
    0: {
        "index": 0,
        "file": "gen.dmp",
        "line": 0,
        "format": "MQDEAD",
        "encoding": 546,
        "ccsid": 1252,
        "msg_id": "414D512057494E514D3031202020202031E1F55601000000",
        "correl_id": "000000000000000000000000000000000000000000000000",
        "msg_type": 8,
        "persistence": 1,
        "backout_count": 0,
        "put_appl_type": 11,
        "put_appl_name": "OrderGateway.exe",
        "put_date": "20261018",
        "put_time": "03114291",
        "reply_to_q": "",
        "reply_to_qmgr": "WINQM01",
        "user_id": "svcgateway",
        "data_length": 367,
        "truncated": False,
        "has_dlh": True,
        "dlh_problem": None,
        "dlh": {
            "reason": 2053,
            "reason_name": "MQRC_Q_FULL",
            "dest_q": "ORDERS.IN",
            "dest_qmgr": "WINQM01",
            "encoding": 546,
            "ccsid": 1252,
            "format": "MQSTR",
            "put_appl_type": 7,
            "put_appl_name": "amqrmppa.exe",
            "put_date": "20261018",
            "put_time": "03114329",
            "chain": "MQSTR",
        },
        "flags": [],
        "notes": [],
        "preview": {
            "offset": 172,
            "hex": "4F5244383734303238375A6FEB204C746420202020202020202020202020424F",
            "text": "ORD8740287Zoë Ltd             BO",
        },
    },  # windows: text
    7: {
        "index": 7,
        "file": "gen.dmp",
        "line": 0,
        "format": "MQDEAD",
        "encoding": 785,
        "ccsid": 37,
        "msg_id": "C3E2D840C3E2D8F24040404040404040E373C7A1C2720001",
        "correl_id": "000000000000000000000000000000000000000000000000",
        "msg_type": 8,
        "persistence": 1,
        "backout_count": 0,
        "put_appl_type": 28,
        "put_appl_name": "com.acme.pay.PaymentMDB",
        "put_date": "20261019",
        "put_time": "07092018",
        "reply_to_q": "",
        "reply_to_qmgr": "CSQ2",
        "user_id": "wasadmin",
        "data_length": 4096,
        "truncated": False,
        "has_dlh": True,
        "dlh_problem": None,
        "dlh": {
            "reason": 2218,
            "reason_name": "MQRC_MSG_TOO_BIG_FOR_CHANNEL",
            "dest_q": "PAYMENTS.REQUEST",
            "dest_qmgr": "WINQM01",
            "encoding": 785,
            "ccsid": 37,
            "format": "MQXMIT",
            "put_appl_type": 7,
            "put_appl_name": "CSQ2",
            "put_date": "20261019",
            "put_time": "07241589",
            "chain": "MQXMIT>MQHRF2>MQSTR",
        },
        "flags": [],
        "notes": [],
        "preview": {
            "offset": 172,
            "hex": "E7D8C84000000001D7C1E8D4C5D5E3E24BD9C5D8E4C5E2E34040404040404040",
            "text": "XQH ....PAYMENTS.REQUEST        ",
        },
    },  # zos: xmit
    20: {
        "index": 20,
        "file": "gen.dmp",
        "line": 0,
        "format": "MQDEAD",
        "encoding": 273,
        "ccsid": 819,
        "msg_id": "414D5120514D41495830312020202020C4B00B4000000003",
        "correl_id": "000000000000000000000000000000000000000000000000",
        "msg_type": 8,
        "persistence": 1,
        "backout_count": 0,
        "put_appl_type": 28,
        "put_appl_name": "com.acme.orders.OrderService",
        "put_date": "20261021",
        "put_time": "12443415",
        "reply_to_q": "",
        "reply_to_qmgr": "QMAIX01",
        "user_id": "app01",
        "data_length": 554,
        "truncated": False,
        "has_dlh": True,
        "dlh_problem": None,
        "dlh": {
            "reason": 2053,
            "reason_name": "MQRC_Q_FULL",
            "dest_q": "BILLING.BATCH.IN",
            "dest_qmgr": "QMAIX01",
            "encoding": 273,
            "ccsid": 1208,
            "format": "MQHRF2",
            "put_appl_type": 7,
            "put_appl_name": "QMAIX01",
            "put_date": "20261021",
            "put_time": "12443425",
            "chain": "MQHRF2>MQSTR",
        },
        "flags": [],
        "notes": [],
        "preview": {
            "offset": 172,
            "hex": "5246482000000002000000E400000111000004B84D5153545220202000000000",
            "text": "RFH ................MQSTR   ....",
        },
    },  # aix: jms
    6: {
        "index": 6,
        "file": "gen.dmp",
        "line": 0,
        "format": "MQDEAD",
        "encoding": 546,
        "ccsid": 819,
        "msg_id": "414D51204C4E58514D30312020202020A69D6FF801000000",
        "correl_id": "000000000000000000000000000000000000000000000000",
        "msg_type": 8,
        "persistence": 1,
        "backout_count": 7,
        "put_appl_type": 28,
        "put_appl_name": "com.acme.pay.PaymentMDB",
        "put_date": "20261019",
        "put_time": "01473837",
        "reply_to_q": "",
        "reply_to_qmgr": "LNXQM01",
        "user_id": "wasadmin",
        "data_length": 1006,
        "truncated": False,
        "has_dlh": True,
        "dlh_problem": None,
        "dlh": {
            "reason": 2362,
            "reason_name": "MQRC_BACKOUT_THRESHOLD_REACHED",
            "dest_q": "ORDERS.IN",
            "dest_qmgr": "LNXQM01",
            "encoding": 273,
            "ccsid": 1208,
            "format": "MQHRF2",
            "put_appl_type": 28,
            "put_appl_name": "com.acme.pay.PaymentMDB",
            "put_date": "20261019",
            "put_time": "01573736",
            "chain": "MQHRF2>MQSTR",
        },
        "flags": [],
        "notes": [],
        "preview": {
            "offset": 172,
            "hex": "5246482000000002000000DC00000111000004B84D5153545220202000000000",
            "text": "RFH ................MQSTR   ....",
        },
    },  # linux: jms
    3: {
        "index": 3,
        "file": "gen.dmp",
        "line": 0,
        "format": "MQDEAD",
        "encoding": 785,
        "ccsid": 500,
        "msg_id": "C3E2D840C3E2D8F14040404040404040E372E61331470001",
        "correl_id": "C3E2D840C3E2D8F14040404040404040E372E60E6C930CE2",
        "msg_type": 2,
        "persistence": 1,
        "backout_count": 0,
        "put_appl_type": 2,
        "put_appl_name": "ORDB0012",
        "put_date": "20261018",
        "put_time": "14201271",
        "reply_to_q": "",
        "reply_to_qmgr": "CSQ1",
        "user_id": "BATCHPRD",
        "data_length": 1132,
        "truncated": False,
        "has_dlh": True,
        "dlh_problem": None,
        "dlh": {
            "reason": 2085,
            "reason_name": "MQRC_UNKNOWN_OBJECT_NAME",
            "dest_q": "AMQ.FB51BF6CD02A5FBE",
            "dest_qmgr": "CSQ1",
            "encoding": 785,
            "ccsid": 500,
            "format": "MQSTR",
            "put_appl_type": 7,
            "put_appl_name": "CSQ1",
            "put_date": "20261018",
            "put_time": "14201339",
            "chain": "MQSTR",
        },
        "flags": [],
        "notes": [],
        "preview": {
            "offset": 172,
            "hex": "4C9699848599A26E4C96998485994089847E7FD6D9C4F1F7F4F4F2F1F97F6E4C",
            "text": '<orders><order id="ORD1744219"><',
        },
    },  # zos: text
}


@pytest.fixture(scope="module")
def golden_sample():
    return list(generate(100, GOLDEN_SEED, max_size=4096))


@pytest.mark.parametrize("index", sorted(GENERATED_GOLDENS))
def test_describe_generated_messages_golden(golden_sample, index):
    assert describe(golden_sample[index].message, "gen.dmp") == GENERATED_GOLDENS[index]


def test_goldens_cover_every_platform(golden_sample):
    assert {golden_sample[i].platform for i in GENERATED_GOLDENS} == {"zos", "aix", "linux", "windows"}


def test_describe_agrees_with_what_the_generator_made():
    for g in generate(400, 5, max_size=8192, nul_padded_rate=0.1):
        desc = describe(g.message, "g.dmp")
        md = g.message.md
        assert (desc["has_dlh"], desc["dlh_problem"]) == (g.dlh is not None, g.problem)
        assert desc["msg_id"] == md.msg_id.hex().upper() and desc["data_length"] == len(g.message.data)
        if g.dlh is None:
            assert desc["preview"]["offset"] == 0
            cut = g.problem == "too_short" and len(g.message.data) >= 8  # StrucId and Version there
            assert (desc["dlh"] is not None) == cut
            if cut:  # the fields that are all there, the rest null; no chain
                data = g.message.data
                assert desc["dlh"]["chain"] is None and (desc["dlh"]["reason"] is None) == (len(data) < 12)
                assert (desc["dlh"]["put_time"] is None) and (desc["dlh"]["dest_q"] is None) == (len(data) < 60)
            continue
        strip = {
            name: getattr(g.dlh, name).rstrip(" \x00")
            for name in ("dest_q", "dest_qmgr", "format", "put_appl_name", "put_date", "put_time")
        }
        assert desc["dlh"] == {
            "reason": g.dlh.reason,
            "reason_name": desc["dlh"]["reason_name"],
            **strip,
            "encoding": g.dlh.encoding,
            "ccsid": g.dlh.ccsid,
            "put_appl_type": g.dlh.put_appl_type,
            "chain": ">".join(g.chain),
        }
        assert desc["dlh"]["reason_name"] is not None
        assert ("nul_padded:dest_q" in desc["flags"]) == g.nul_padded


# --- summaries --------------------------------------------------------------------------------


def test_summary_equals_a_straightforward_recount():
    descs = [describe(g.message, "s.dmp") for g in generate(300, 9, max_size=4096)]
    summary = summarize(descs, bad_records=2)

    reasons, destinations, problems = Counter(), Counter(), Counter()
    for d in descs:
        if d["has_dlh"]:
            reasons[d["dlh"]["reason"]] += 1
            destinations[(d["dlh"]["dest_qmgr"], d["dlh"]["dest_q"])] += 1
        else:
            problems[d["dlh_problem"]] += 1
    from dlq_pipeline.mq.constants import reason_name

    assert summary == {
        "messages": 300,
        "with_dlh": sum(reasons.values()),
        "without_dlh": sum(problems.values()),
        "truncated": 0,
        "bad_records": 2,
        "by_reason": [
            {"reason": r, "reason_name": reason_name(r), "count": n}
            for r, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        "by_destination": [
            {"dest_qmgr": qm, "dest_q": q, "count": n}
            for (qm, q), n in sorted(destinations.items(), key=lambda kv: (-kv[1], kv[0]))
        ],
        "by_problem": [{"problem": p, "count": n} for p, n in sorted(problems.items(), key=lambda kv: (-kv[1], kv[0]))],
    }
    assert sum(r["count"] for r in summary["by_reason"]) + sum(p["count"] for p in summary["by_problem"]) == 300


def test_summary_text_is_exactly_this():
    descs = [
        describe(_zos_message(), "a"),
        describe(_aix_message(), "a"),
        describe(_zos_message(), "a"),
        describe(DumpedMessage(MQMD(), b"DLH ", truncated=True, total_length=9), "a"),
    ]
    assert (
        format_summary(summarize(descs))
        == """\
messages 4: with an MQDLH 3, without 1, truncated 1; bad records 0

by reason
  count  reason  name
      2    2035  MQRC_NOT_AUTHORIZED
      1    2087  MQRC_UNKNOWN_REMOTE_Q_MGR

by destination
  count  queue manager  queue
      2  CSQ1           PAYROLL.SECURE.IN
      1  QMDR01         ORDERS.IN

without an MQDLH, by problem
  count  problem
      1  too_short"""
    )


def test_summary_command_prints_counts_and_json(tmp_path):
    (path,) = write_generated(tmp_path, 40, 2, max_size=4096)
    descs = [describe(m, str(path)) for m in read_dump(path)]
    text = _invoke("--summary", path)
    as_json = _invoke("--summary", "--json", path)
    assert (text.exit_code, as_json.exit_code) == (0, 0)
    assert text.stdout == format_summary(summarize(descs)) + "\n"
    assert _json_lines(as_json.stdout) == [summarize(descs)]


# --- the command: streaming, bad records, exit statuses --------------------------------------


def _corrupt_middle(tmp_path):
    """A generated dump whose fifth message has a bad LONG attribute."""
    (path,) = write_generated(tmp_path, 10, 3, max_size=4096)
    clean = list(read_dump(path))
    lines = path.read_bytes().split(b"\n")
    per_line = [i for i, line in enumerate(lines) if line.startswith(b"A PER ")]
    lines[per_line[4]] = b"A PER x"
    path.write_bytes(b"\n".join(lines))
    return path, clean


def test_a_bad_record_in_the_middle_is_reported_and_the_rest_still_printed(tmp_path):
    path, clean = _corrupt_middle(tmp_path)
    records = list(read_dump(path))
    errors = [r for r in records if isinstance(r, RecordError)]
    assert len(errors) == 1 and errors[0].line == clean[4].line

    result = _invoke("--json", path)
    assert result.exit_code == 3
    error = errors[0]
    expected = [describe(m, str(path)) for m in clean[:4]]
    expected.append(
        {
            "error": {
                "file": str(path),
                "line": error.line,
                "offset": error.offset,
                "code": error.code,
                "message": error.message,
                "index": error.index,
            }
        }
    )
    expected += [describe(m, str(path)) for m in records[5:]]
    assert _json_lines(result.stdout) == expected
    assert [d["msg_id"] for d in expected[5:]] == [m.md.msg_id.hex().upper() for m in clean[5:]]
    assert result.stderr == f"{path}:{error.line}: {error.code}: {error.message}\n"

    readable = _invoke(path)
    assert readable.exit_code == 3
    assert readable.stdout.count("\n#") + readable.stdout.startswith("#") == 9
    assert readable.stderr == result.stderr


def test_unreadable_files_exit_2_and_the_other_files_are_still_read(tmp_path, real_fixtures):
    not_a_dump = tmp_path / "notes.txt"
    not_a_dump.write_text("hello\nworld\n")
    missing = tmp_path / "missing.dmp"
    result = _invoke("--json", missing, real_fixtures / REAL_DUMP, not_a_dump)
    assert result.exit_code == 2
    assert [d["msg_id"] for d in _json_lines(result.stdout) if "msg_id" in d] == [REAL_OBJECT["msg_id"]]
    errors = result.stderr.splitlines()
    assert errors[0].startswith(f"{missing}: cannot read: ")
    assert errors[1].startswith(f"{not_a_dump}:1: unknown_format: ")


def test_bad_records_and_unreadable_files_together_exit_2(tmp_path):
    path, _ = _corrupt_middle(tmp_path)
    assert _invoke(path, tmp_path / "missing.dmp").exit_code == 2


def test_limit_stops_after_n_messages_over_all_files(tmp_path):
    first = write_generated(tmp_path / "a", 3, 1, max_size=4096)
    second = write_generated(tmp_path / "b", 5, 2, max_size=4096)
    result = _invoke("--json", "--limit", "4", *first, *second)
    assert result.exit_code == 0
    objects = _json_lines(result.stdout)
    assert [(d["file"], d["index"]) for d in objects] == [
        (str(first[0]), 0),
        (str(first[0]), 1),
        (str(first[0]), 2),
        (str(second[0]), 0),
    ]


def test_usage_errors_exit_2():
    assert _invoke().exit_code == 2
    assert _invoke("--limit", "0", "x.dmp").exit_code == 2
