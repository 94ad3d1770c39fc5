"""MQ structures: layouts against the documented offsets, byte-exact round trips, the MQDLH
diagnosis, the header chain, the real samples, and batch == scalar.

Expected bytes are built here with `struct` and the standard library's codecs for invariant
characters, independently of the module under test.
"""

from __future__ import annotations

import struct
from dataclasses import fields

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq_pipeline.mq import codepages
from dlq_pipeline.mq.dlh_arrow_decoder import decode_arrow_schema, decode_dlh_arrow, decode_dlh_batch
from dlq_pipeline.mq.dlh_decoder import (
    CHAIN_SCAN_LIMIT,
    DECODE_COLUMNS,
    HeaderResult,
    chain_possible,
    decode_dlh,
    dlh_head,
    dlh_restore_fields,
    to_columns,
)
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.mq.structures import (
    DeadLetterHeader,
    MessageDescriptorExtension,
    RulesFormattingHeader2,
    StructureError,
    TransmissionQueueHeader,
    TriggerMessage,
    byte_order,
    decode_mde,
    decode_mqmd,
    decode_rfh2,
    decode_tm,
    decode_xqh,
    encode_dlh,
    encode_mde,
    encode_mqmd,
    encode_rfh2,
    encode_tm,
    encode_xqh,
)
from tests.profiles import examples
from tests.support import REPO

EBCDIC_CCSIDS = [37, 273, 500, 1047, 1141]
ASCII_CCSIDS = [819, 437, 850]
BIG = [273, 785, 1]  # Encodings whose integer part says big-endian
LITTLE = [546, 2]


def inv(text: str, ebcdic: bool) -> bytes:
    """Invariant characters, spelled independently of codepages."""
    return text.encode("cp500" if ebcdic else "ascii")


def dlh_raw(
    order: str,
    ebcdic: bool,
    *,
    version=1,
    reason=0,
    dest_q="",
    dest_qmgr="",
    encoding=0,
    ccsid=0,
    format="",
    put_appl_type=0,
    put_appl_name="",
    put_date="",
    put_time="",
    strucid="DLH ",
) -> bytes:
    """An MQDLH packed from docs/message-formats.md §2's offsets; str fields are blank-padded
    invariant text, bytes fields are used as they are."""

    def field(value, length):
        raw = value if isinstance(value, bytes) else inv(value.ljust(length), ebcdic)
        assert len(raw) == length
        return raw

    return struct.pack(
        order + "4sii48s48sii8si28s8s8s",
        field(strucid, 4),
        version,
        reason,
        field(dest_q, 48),
        field(dest_qmgr, 48),
        encoding,
        ccsid,
        field(format, 8),
        put_appl_type,
        field(put_appl_name, 28),
        field(put_date, 8),
        field(put_time, 8),
    )


# --------------------------------------------------------------------------------------
# Byte order


@pytest.mark.parametrize(
    "encoding, expected",
    [
        (273, ">"),
        (785, ">"),
        (1041, ">"),
        (17, ">"),
        (1, ">"),
        (546, "<"),
        (2, "<"),
        (0, None),
        (3, None),
        (15, None),
        (-1, None),
        (0x110, None),
    ],
)
def test_byte_order_reads_the_integer_part_of_the_encoding(encoding, expected):
    assert byte_order(encoding) == expected


# --------------------------------------------------------------------------------------
# Real samples (docs/message-formats.md §6)

ZOS_SAMPLE = (
    bytes.fromhex("C4D3C840 00000001 000007F3")
    + inv("AMQ.D6752F9683A49DE0".ljust(48), True)
    + inv("CSQ2".ljust(48), True)
    + bytes.fromhex("00000311 000001F4")
    + inv("MQSTR   ", True)
    + bytes.fromhex("00000007")
    + inv("CSQ2CHIN".ljust(28), True)
    + inv("20240315", True)
    + inv("10233145", True)
    + inv("HELLO", True)
)
LINUX_SAMPLE = (
    bytes.fromhex("444C4820 01000000 03080000 444C512E544152474554")
    + b" " * 38
    + b"QM2".ljust(48)
    + bytes.fromhex("22020000 B8040000")
    + b"MQSTR   "
    + bytes.fromhex("07000000")
    + b"QM1".ljust(28)
    + b"20260922"
    + b"02343012"
    + b"hello"
)


def test_zos_big_endian_ebcdic_sample():
    result = decode_dlh(ZOS_SAMPLE, 785, 500, "MQDEAD  ")
    assert result == HeaderResult(
        True,
        None,
        DeadLetterHeader(
            reason=2035,
            dest_q="AMQ.D6752F9683A49DE0".ljust(48),
            dest_qmgr="CSQ2".ljust(48),
            encoding=785,
            ccsid=500,
            format="MQSTR   ",
            put_appl_type=7,
            put_appl_name="CSQ2CHIN".ljust(28),
            put_date="20240315",
            put_time="10233145",
        ),
        ("MQSTR",),
        (),
    )


def test_zos_sample_read_in_host_byte_order_is_rejected_and_says_why():
    result = decode_dlh(ZOS_SAMPLE, 546, 500, "MQDEAD  ")
    assert result == HeaderResult(False, "bad_version", None, (), ("mqdead_without_dlh", "byte_order_mismatch"))


def test_linux_little_endian_sample():
    expected = DeadLetterHeader(
        reason=2051,
        dest_q="DLQ.TARGET".ljust(48),
        dest_qmgr="QM2".ljust(48),
        encoding=546,
        ccsid=1208,
        format="MQSTR   ",
        put_appl_type=7,
        put_appl_name="QM1".ljust(28),
        put_date="20260922",
        put_time="02343012",
    )
    assert decode_dlh(LINUX_SAMPLE, 546, 1208, "MQDEAD  ") == HeaderResult(True, None, expected, ("MQSTR",), ())
    assert decode_dlh(LINUX_SAMPLE, 546, 819) == HeaderResult(True, None, expected, ("MQSTR",), ())


def test_encoding_zero_is_decided_by_the_version():
    little = decode_dlh(LINUX_SAMPLE, 0, 819)
    assert (little.has_dlh, little.dlh.reason, little.flags) == (True, 2051, ("byte_order_sniffed",))
    big = decode_dlh(ZOS_SAMPLE, 0, 500)
    assert (big.has_dlh, big.dlh.reason, big.flags) == (True, 2035, ("byte_order_sniffed",))


def test_aix_header_is_big_endian_ascii():
    raw = dlh_raw(
        ">",
        False,
        reason=2053,
        dest_q="APP.IN",
        dest_qmgr="AIXQM",
        encoding=273,
        ccsid=819,
        format="MQSTR",
        put_appl_type=7,
        put_appl_name="AIXQM",
        put_date="20250101",
        put_time="12000000",
    )
    assert raw[:12] == bytes.fromhex("444C4820 00000001 00000805")
    result = decode_dlh(raw, 273, 819, "MQDEAD  ")
    assert result == HeaderResult(
        True,
        None,
        DeadLetterHeader(
            2053,
            "APP.IN".ljust(48),
            "AIXQM".ljust(48),
            273,
            819,
            "MQSTR   ",
            7,
            "AIXQM".ljust(28),
            "20250101",
            "12000000",
        ),
        ("MQSTR",),
        (),
    )


def test_ebcdic_header_whose_mqmd_ccsid_claims_ascii_is_read_by_its_strucid():
    result = decode_dlh(ZOS_SAMPLE, 785, 819, "MQDEAD  ")
    assert result.has_dlh and result.problem is None
    assert result.dlh.dest_q == "AMQ.D6752F9683A49DE0".ljust(48)
    assert result.dlh.dest_qmgr == "CSQ2".ljust(48)
    assert result.dlh.put_appl_name == "CSQ2CHIN".ljust(28)
    assert result.flags == ("ccsid_mismatch",)


def test_ascii_header_whose_mqmd_ccsid_claims_ebcdic_is_read_by_its_strucid():
    result = decode_dlh(LINUX_SAMPLE, 546, 500)
    assert (result.dlh.dest_q, result.flags) == ("DLQ.TARGET".ljust(48), ("ccsid_mismatch",))


def test_unknown_ccsid_decodes_invariant_characters_and_flags_the_row():
    assert not codepages.is_known(9999)
    result = decode_dlh(ZOS_SAMPLE, 785, 9999)
    assert (result.dlh.dest_q, result.dlh.format, result.flags) == (
        "AMQ.D6752F9683A49DE0".ljust(48),
        "MQSTR   ",
        ("unknown_ccsid",),
    )
    result = decode_dlh(LINUX_SAMPLE, 546, 9999)
    assert (result.dlh.dest_q, result.flags) == ("DLQ.TARGET".ljust(48), ("unknown_ccsid",))


@pytest.mark.parametrize(
    "ccsid, raw, text",
    [
        (1047, b"\xad\x5f\xbd", "[^]"),  # differ from cp037, where these bytes are Ý ¬ ¨
        (37, b"\xba\xb0\xbb", "[^]"),
        (1141, b"\x9f", "€"),  # the euro variant of 273
        (273, b"\x9f", "¤"),
        (850, b"\x9a", "Ü"),
    ],
)
def test_free_text_fields_decode_in_the_exact_ccsid(ccsid, raw, text):
    ebcdic = ccsid not in (850,)
    name = raw + inv(" " * (28 - len(raw)), ebcdic)
    header = dlh_raw(">", ebcdic, put_appl_name=name)
    assert decode_dlh(header, 785, ccsid).dlh.put_appl_name == text + " " * (28 - len(raw))
    assert decode_dlh_batch([header], [785], [ccsid])["dlh_put_appl_name"] == [text + " " * (28 - len(raw))]


def test_real_dmpmqmsg_message_without_dlh(real_fixtures):
    lines = (real_fixtures / "mq10-dmpmqmsg-stdout.dmp").read_text().splitlines()
    data = bytes.fromhex("".join(line[2:] for line in lines if line.startswith("X ")))
    assert len(data) == 238
    assert decode_dlh(data, 546, 1208, "MQSTR   ") == HeaderResult(False, "bad_strucid", None, (), ())


# --------------------------------------------------------------------------------------
# Problems and flags


@pytest.mark.parametrize(
    "data, encoding, problem",
    [
        (b"", 546, "too_short"),
        (b"DLH", 546, "too_short"),
        (b"DLH \x01\x00\x00", 546, "too_short"),
        (b"hello, world", 546, "bad_strucid"),
        (b"dlh " + LINUX_SAMPLE[4:], 546, "bad_strucid"),
        (LINUX_SAMPLE[:4] + struct.pack("<i", 2) + LINUX_SAMPLE[8:], 546, "bad_version"),
        (LINUX_SAMPLE[:4] + struct.pack("<i", 2) + LINUX_SAMPLE[8:], 0, "unknown_encoding"),
        (LINUX_SAMPLE[:4] + struct.pack("<i", 2) + LINUX_SAMPLE[8:100], 546, "bad_version"),
    ],
)
def test_problem_codes(data, encoding, problem):
    assert decode_dlh(data, encoding, 819) == HeaderResult(False, problem, None, (), ())


def test_a_cut_header_without_its_version_has_no_fields():
    for data in (b"DLH ", b"DLH \x00\x00\x00"):
        assert decode_dlh(data, 546, 819) == HeaderResult(False, "too_short", None, (), ())


def test_mqdead_without_a_usable_header_keeps_its_problem():
    result = decode_dlh(b"short", 546, 819, "MQDEAD  ")
    assert result == HeaderResult(False, "bad_strucid", None, (), ("mqdead_without_dlh",))


def test_header_found_although_the_mqmd_format_is_not_mqdead():
    result = decode_dlh(LINUX_SAMPLE, 546, 819, "MQSTR   ")
    assert result.has_dlh and result.flags == ("dlh_without_mqdead",)


def test_nul_padded_fields_are_kept_and_flagged():
    """APAR IT31856: queue managers wrote MQDLH names padded with NULs, not blanks; the NULs
    are kept (they change how rules match) and flagged per field."""
    raw = dlh_raw(
        "<",
        False,
        reason=2085,
        dest_q=b"DLQ.TARGET".ljust(48, b"\x00"),
        dest_qmgr=b"\x00" * 48,
        format=b"MQSTR\x00\x00\x00",
        put_appl_name="app",
        put_date=b"\x00" * 8,
        put_time="",
    )
    result = decode_dlh(raw, 546, 819)
    assert result.dlh.dest_q == "DLQ.TARGET" + "\x00" * 38
    assert result.dlh.format == "MQSTR\x00\x00\x00"
    assert result.chain == ("MQSTR",)
    assert result.flags == ("nul_padded:dest_q", "nul_padded:dest_qmgr", "nul_padded:format", "nul_padded:put_date")


def test_decode_looks_at_no_more_than_the_scan_limit():
    long_message = LINUX_SAMPLE + b"x" * 10 * CHAIN_SCAN_LIMIT
    assert decode_dlh(long_message, 546, 819) == decode_dlh(long_message[:CHAIN_SCAN_LIMIT], 546, 819)


def test_to_columns_with_and_without_a_header():
    assert to_columns(decode_dlh(LINUX_SAMPLE, 546, 819, "MQSTR   ")) == {
        "has_dlh": True,
        "dlh_problem": None,
        "dlh_reason": 2051,
        "dlh_dest_q": "DLQ.TARGET".ljust(48),
        "dlh_dest_qmgr": "QM2".ljust(48),
        "dlh_encoding": 546,
        "dlh_ccsid": 1208,
        "dlh_format": "MQSTR   ",
        "dlh_put_appl_type": 7,
        "dlh_put_appl_name": "QM1".ljust(28),
        "dlh_put_date": "20260922",
        "dlh_put_time": "02343012",
        "dlh_chain": "MQSTR",
        "decode_flags": ["dlh_without_mqdead"],
    }
    columns = to_columns(decode_dlh(b"{}", 546, 1208, "MQSTR   "))
    assert list(columns) == list(DECODE_COLUMNS)
    assert columns == {
        **dict.fromkeys(DECODE_COLUMNS),
        "has_dlh": False,
        "dlh_problem": "bad_strucid",
        "decode_flags": [],
    }


def test_decode_columns_are_those_of_the_schema():
    import json

    schema = json.loads((REPO / "dlq_pipeline" / "data" / "schemas" / "decoded.json").read_text())
    assert tuple(f["name"] for f in schema["schema"]["fields"] if f["name"] != "message_key") == DECODE_COLUMNS


# --------------------------------------------------------------------------------------
# Header chain


def md_raw(order: str, ebcdic: bool, *, encoding: int, ccsid: int, format: str, version=1) -> bytes:
    """A version-1 MQMD laid out by docs/message-formats.md §1, blank/zero elsewhere."""
    raw = bytearray(inv(" " * 324, ebcdic))
    raw[0:4] = inv("MD  ", ebcdic)
    struct.pack_into(order + "i", raw, 4, version)
    for offset in range(8, 32, 4):
        struct.pack_into(order + "i", raw, offset, 0)
    struct.pack_into(order + "ii", raw, 24, encoding, ccsid)
    raw[32:40] = inv(format.ljust(8), ebcdic)
    struct.pack_into(order + "ii", raw, 40, 0, 1)
    raw[48:96] = bytes(48)
    struct.pack_into(order + "i", raw, 96, 0)
    raw[208:240] = bytes(32)
    struct.pack_into(order + "i", raw, 272, 0)
    return bytes(raw)


def xqh_raw(order, ebcdic, md: bytes) -> bytes:
    return (
        inv("XQH ", ebcdic)
        + struct.pack(order + "i", 1)
        + inv("REMOTE.Q".ljust(48), ebcdic)
        + inv("REMOTEQM".ljust(48), ebcdic)
        + md
    )


def rfh2_raw(order, ebcdic, *, struc_length, encoding, ccsid, format, folder=b"") -> bytes:
    return (
        inv("RFH ", ebcdic)
        + struct.pack(order + "iiii", 2, struc_length, encoding, ccsid)
        + inv(format.ljust(8), ebcdic)
        + struct.pack(order + "ii", 0, 1208)
        + folder
    )


def mde_raw(order, ebcdic, *, encoding, ccsid, format, struc_length=72) -> bytes:
    return (
        inv("MDE ", ebcdic)
        + struct.pack(order + "iiii", 2, struc_length, encoding, ccsid)
        + inv(format.ljust(8), ebcdic)
        + struct.pack(order + "i", 0)
        + bytes(24)
        + struct.pack(order + "iiii", 1, 0, 0, -1)
    )


def tm_raw(order, ebcdic) -> bytes:
    return (
        inv("TM  ", ebcdic)
        + struct.pack(order + "i", 1)
        + inv(" " * 160, ebcdic)
        + struct.pack(order + "i", 6)
        + inv(" " * 512, ebcdic)
    )


def linux_dlh(format: str, encoding=546, ccsid=819) -> bytes:
    return dlh_raw("<", False, reason=2053, dest_q="Q", encoding=encoding, ccsid=ccsid, format=format)


def chain_of(data: bytes, encoding=546, ccsid=819):
    result = decode_dlh(data, encoding, ccsid)
    return result.chain, result.flags


def test_chain_through_a_transmission_header():
    data = (
        linux_dlh("MQXMIT")
        + xqh_raw("<", False, md_raw("<", False, encoding=546, ccsid=1208, format="MQSTR"))
        + b"payload"
    )
    assert chain_of(data) == (("MQXMIT", "MQSTR"), ())


def test_chain_switches_byte_order_and_character_set_per_header():
    zos = dlh_raw(">", True, reason=2053, dest_q="Q", encoding=546, ccsid=819, format="MQXMIT")
    xqh = xqh_raw("<", False, md_raw("<", False, encoding=785, ccsid=500, format="MQHRF2"))
    rfh2 = rfh2_raw(
        ">",
        True,
        struc_length=44,
        encoding=273,
        ccsid=-2,
        format="MQHMDE",
        folder=struct.pack(">i", 4) + inv("<a/>", True),
    )
    mde = mde_raw(">", True, encoding=546, ccsid=819, format="MQSTR")
    assert chain_of(zos + xqh + rfh2 + mde + b"x", 785, 500) == (("MQXMIT", "MQHRF2", "MQHMDE", "MQSTR"), ())


def test_chain_ends_at_a_trigger_message_and_at_mqfmt_none():
    assert chain_of(linux_dlh("MQTRIG") + tm_raw("<", False)) == (("MQTRIG",), ())
    assert chain_of(linux_dlh("")) == (("",), ())
    assert chain_of(
        linux_dlh("MQHRF2") + rfh2_raw("<", False, struc_length=36, encoding=546, ccsid=1208, format="")
    ) == (("MQHRF2", ""), ())


def test_chain_with_a_header_in_unknown_byte_order_uses_its_version():
    data = linux_dlh("MQHRF2", encoding=0) + rfh2_raw(
        ">", False, struc_length=36, encoding=546, ccsid=1208, format="MQSTR"
    )
    assert chain_of(data) == (("MQHRF2", "MQSTR"), ())


@pytest.mark.parametrize(
    "tail, chain",
    [
        (b"", ("MQHRF2",)),
        (rfh2_raw("<", False, struc_length=20, encoding=546, ccsid=1208, format="MQSTR"), ("MQHRF2",)),
        (rfh2_raw("<", False, struc_length=36, encoding=546, ccsid=1208, format="MQSTR")[:30], ("MQHRF2",)),
        (b"RFX " + rfh2_raw("<", False, struc_length=36, encoding=546, ccsid=1208, format="MQSTR")[4:], ("MQHRF2",)),
        (rfh2_raw(">", False, struc_length=36, encoding=546, ccsid=1208, format="MQSTR"), ("MQHRF2",)),
    ],
)
def test_an_odd_later_header_stops_the_chain_with_a_flag(tail, chain):
    assert chain_of(linux_dlh("MQHRF2") + tail) == (chain, ("chain_stopped:MQHRF2",))


def test_chain_never_looks_past_the_scan_limit():
    folders = 4000
    rfh2 = rfh2_raw("<", False, struc_length=36 + folders, encoding=546, ccsid=819, format="MQXMIT")
    xqh = xqh_raw("<", False, md_raw("<", False, encoding=546, ccsid=819, format="MQSTR"))
    data = linux_dlh("MQHRF2") + rfh2 + b" " * folders + xqh
    assert chain_of(data) == (("MQHRF2", "MQXMIT"), ("chain_stopped:MQXMIT",))
    assert decode_dlh(data, 546, 819).has_dlh


def test_nested_dead_letter_header_and_xqh_with_bad_embedded_md():
    inner = linux_dlh("MQSTR")
    assert chain_of(linux_dlh("MQDEAD") + inner) == (("MQDEAD", "MQSTR"), ())
    bad_md = b"XX  " + md_raw("<", False, encoding=546, ccsid=819, format="MQSTR")[4:]
    assert chain_of(linux_dlh("MQXMIT") + xqh_raw("<", False, bad_md)) == (("MQXMIT",), ("chain_stopped:MQXMIT",))


def test_dead_letter_headers_after_transmission_and_rfh2_headers():
    """A dead letter that crossed a channel and was dead-lettered again (MQDLH, MQXQH whose MD
    says MQDEAD, the first MQDLH, data), and one a JMS application forwarded with its MQRFH2
    kept in front of the original MQDLH: the chain names every header, each read in the
    Encoding/CCSID the header before it gives (IBM docs: "MQDLH - Dead-letter header",
    "MQXQH - Transmission-queue header", "MQRFH2 - Rules and formatting header 2")."""
    xmit = (
        linux_dlh("MQXMIT", encoding=273, ccsid=500)
        + xqh_raw(">", True, md_raw(">", True, encoding=273, ccsid=500, format="MQDEAD"))
        + dlh_raw(">", True, reason=2085, dest_q="APP.Q", encoding=546, ccsid=819, format="MQSTR")
    )
    assert chain_of(xmit) == (("MQXMIT", "MQDEAD", "MQSTR"), ())
    rfh2 = (
        linux_dlh("MQHRF2", ccsid=1208)
        + rfh2_raw("<", False, struc_length=36, encoding=546, ccsid=819, format="MQDEAD")
        + linux_dlh("MQSTR")
    )
    assert chain_of(rfh2) == (("MQHRF2", "MQDEAD", "MQSTR"), ())


def test_report_message_dead_lettered_without_format_mqdead_is_read_by_its_bytes():
    """APAR IT24145: report messages reached the DLQ with an MQMD Format
    other than MQDEAD in front of their MQDLH. The header is judged by its bytes, as IBM's
    handler does, and flagged; MQMD.Format saying MQDEAD without an MQDLH is flagged too."""
    report = dlh_raw("<", False, reason=2087, dest_q="REPLY.Q", encoding=546, ccsid=819, format="        ")
    for md_format in ("        ", "MQSTR   "):
        result = decode_dlh(report, 546, 819, md_format)
        assert (result.has_dlh, result.dlh.reason, result.dlh.dest_q.rstrip(), result.flags) == (
            True,
            2087,
            "REPLY.Q",
            ("dlh_without_mqdead",),
        )
        assert result.chain == ("",)  # MQFMT_NONE after the header: a report has no data of its own
    assert decode_dlh(b"", 546, 819, "MQDEAD  ").flags == ("mqdead_without_dlh",)


# --------------------------------------------------------------------------------------
# Layouts: encoders put fields at the documented offsets


def test_encode_dlh_matches_the_documented_layout():
    dlh = DeadLetterHeader(
        2035, "AMQ.D6752F9683A49DE0", "CSQ2", 785, 500, "MQSTR", 7, "CSQ2CHIN", "20240315", "10233145"
    )
    assert encode_dlh(dlh, 785, 500) == ZOS_SAMPLE[:172]
    little = DeadLetterHeader(2051, "DLQ.TARGET", "QM2", 546, 1208, "MQSTR", 7, "QM1", "20260922", "02343012")
    assert encode_dlh(little, 546, 819) == LINUX_SAMPLE[:172]


def test_encode_pads_short_fields_so_decode_gives_them_at_full_length():
    dlh = DeadLetterHeader(reason=265, dest_q="Q1", format="MQSTR")
    decoded = decode_dlh(encode_dlh(dlh, 273, 37), 273, 37).dlh
    assert decoded == DeadLetterHeader(reason=265, dest_q="Q1".ljust(48), format="MQSTR   ")


def test_encode_mqmd_matches_the_documented_layout():
    md = MQMD(version=1, encoding=546, ccsid=1208, format="MQSTR")
    assert encode_mqmd(md, 546, 819) == struct.pack(
        "<4s7i8s2i24s24si48s48s12s32s32si28s8s8s4s",
        b"MD  ",
        1,
        0,
        8,
        -1,
        0,
        546,
        1208,
        b"MQSTR   ",
        -1,
        2,
        bytes(24),
        bytes(24),
        0,
        b" " * 48,
        b" " * 48,
        b" " * 12,
        bytes(32),
        b" " * 32,
        0,
        b" " * 28,
        b" " * 8,
        b" " * 8,
        b" " * 4,
    )
    raw = encode_mqmd(
        MQMD(
            version=2,
            report=1,
            msg_type=2,
            expiry=3,
            feedback=4,
            encoding=5,
            ccsid=6,
            format="F",
            priority=7,
            persistence=8,
            msg_id=b"\x01" * 24,
            correl_id=b"\x02" * 24,
            backout_count=9,
            reply_to_q="RQ",
            reply_to_qmgr="RQM",
            user_id="U",
            accounting_token=b"\x03" * 32,
            appl_identity_data="AID",
            put_appl_type=10,
            put_appl_name="PAN",
            put_date="20260101",
            put_time="01020304",
            appl_origin_data="AOD",
            group_id=b"\x04" * 24,
            msg_seq_number=11,
            offset=12,
            msg_flags=13,
            original_length=14,
        ),
        273,
        500,
    )
    assert raw[:4] == inv("MD  ", True)
    assert struct.unpack_from(">7i", raw, 4) == (2, 1, 2, 3, 4, 5, 6)
    assert len(raw) == 364
    assert raw[32:40] == inv("F       ", True)
    assert struct.unpack_from(">2i", raw, 40) == (7, 8)
    assert (raw[48:72], raw[72:96]) == (b"\x01" * 24, b"\x02" * 24)
    assert struct.unpack_from(">i", raw, 96) == (9,)
    assert raw[100:148] == inv("RQ".ljust(48), True) and raw[148:196] == inv("RQM".ljust(48), True)
    assert raw[196:208] == inv("U".ljust(12), True) and raw[208:240] == b"\x03" * 32
    assert raw[240:272] == inv("AID".ljust(32), True) and struct.unpack_from(">i", raw, 272) == (10,)
    assert raw[276:304] == inv("PAN".ljust(28), True)
    assert raw[304:324] == inv("2026010101020304AOD ", True)
    assert raw[324:348] == b"\x04" * 24 and struct.unpack_from(">4i", raw, 348) == (11, 12, 13, 14)


def test_encode_xqh_mde_rfh2_tm_match_the_documented_layouts():
    md = MQMD(encoding=546, ccsid=1208, format="MQSTR", persistence=1, priority=0)
    xqh = encode_xqh(TransmissionQueueHeader("REMOTE.Q", "REMOTEQM", md), 546, 819)
    assert xqh == xqh_raw("<", False, encode_mqmd(md, 546, 819)) and len(xqh) == 428
    mde = MessageDescriptorExtension(encoding=546, ccsid=819, format="MQSTR")
    assert encode_mde(mde, 785, 500) == mde_raw(">", True, encoding=546, ccsid=819, format="MQSTR")
    rfh2 = RulesFormattingHeader2(struc_length=44, encoding=273, ccsid=-2, format="MQHMDE")
    assert encode_rfh2(rfh2, 273, 37) == rfh2_raw(">", True, struc_length=44, encoding=273, ccsid=-2, format="MQHMDE")
    assert encode_tm(TriggerMessage(appl_type=6), 546, 819) == tm_raw("<", False)


def test_decoders_of_documented_bytes():
    raw = xqh_raw(">", True, md_raw(">", True, encoding=546, ccsid=819, format="MQSTR", version=2))
    xqh = decode_xqh(raw, 785, 500)
    assert (xqh.remote_q, xqh.remote_qmgr) == ("REMOTE.Q".ljust(48), "REMOTEQM".ljust(48))
    assert (xqh.md.version, xqh.md.encoding, xqh.md.ccsid, xqh.md.format) == (2, 546, 819, "MQSTR   ")
    assert decode_mde(
        mde_raw("<", False, encoding=273, ccsid=37, format="MQSTR"), 546, 819
    ) == MessageDescriptorExtension(72, 273, 37, "MQSTR   ", 0, bytes(24), 1, 0, 0, -1)
    assert decode_rfh2(
        rfh2_raw(">", True, struc_length=40, encoding=1, ccsid=-2, format=""), 785, 1047
    ) == RulesFormattingHeader2(40, 1, -2, " " * 8, 0, 1208)
    assert decode_tm(tm_raw("<", False), 0, 819) == TriggerMessage(appl_type=6)


# --------------------------------------------------------------------------------------
# Errors say which structure, where and what


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: decode_xqh(b"XQH", 546, 819), "MQXQH at byte 0: needs 428 bytes, got 3"),
        (
            lambda: decode_xqh(b"XQZ " + bytes(424), 546, 819),
            "MQXQH at byte 0: StrucId is 58515A20, not 'XQH ' in ASCII or EBCDIC",
        ),
        (
            lambda: decode_mde(mde_raw("<", False, encoding=0, ccsid=0, format="")[:50], 546, 819),
            "MQMDE at byte 50: needs 72 bytes, got 50",
        ),
        (
            lambda: decode_mde(mde_raw("<", False, encoding=0, ccsid=0, format=""), 273, 819),
            "MQMDE at byte 4: Version reads 33554432 in byte order of Encoding 273; expected 2",
        ),
        (
            lambda: decode_rfh2(rfh2_raw("<", False, struc_length=8, encoding=0, ccsid=0, format=""), 546, 819),
            "MQRFH2 at byte 8: StrucLength 8 is less than 36",
        ),
        (
            lambda: decode_tm(b"TM  " + bytes(680), 0, 819),
            "MQTM at byte 4: Encoding 0 names no byte order and Version reads 1 neither way",
        ),
        (lambda: decode_tm(tm_raw("<", False), 546, 500), "MQTM at byte 0: StrucId is ASCII but CCSID 500 is not"),
        (
            lambda: decode_mqmd(md_raw("<", False, encoding=0, ccsid=0, format="", version=2), 546, 819),
            "MQMD at byte 324: version 2 needs 364 bytes, got 324",
        ),
    ],
)
def test_structure_errors_name_structure_offset_and_problem(call, message):
    with pytest.raises(StructureError) as caught:
        call()
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: encode_dlh(DeadLetterHeader(dest_q="Q" * 49), 546, 819),
            f"MQDLH.dest_q: '{'Q' * 49}' is 49 bytes in CCSID 819; the field holds 48",
        ),
        (
            lambda: encode_dlh(DeadLetterHeader(), 0, 819),
            "Encoding 0 does not name a byte order (integer part must be 1 or 2)",
        ),
        (
            lambda: encode_dlh(DeadLetterHeader(reason=2**31), 546, 819),
            "MQDLH.reason: 2147483648 does not fit an MQLONG",
        ),
        (lambda: encode_mqmd(MQMD(msg_id=bytes(25)), 546, 819), "MQMD.msg_id: 25 bytes; the field holds 24"),
        (lambda: encode_mqmd(MQMD(version=3), 546, 819), "MQMD.version 3: only 1 and 2 exist"),
    ],
)
def test_encode_errors_name_the_field(call, message):
    with pytest.raises(ValueError) as caught:
        call()
    assert str(caught.value) == message


# --------------------------------------------------------------------------------------
# Byte-exact round trips (hypothesis)

orders = st.sampled_from([(">", e) for e in BIG] + [("<", e) for e in LITTLE])
charsets = st.sampled_from([(True, c) for c in EBCDIC_CCSIDS] + [(False, c) for c in ASCII_CCSIDS])


def packed(order, value):
    return struct.pack(order + "i", value)


@settings(max_examples=examples(300), deadline=None)
@given(orders, charsets, st.sampled_from([1, 2]), st.binary(min_size=356, max_size=356), st.booleans())
def test_mqmd_round_trip(order_enc, charset, version, body, sniff):
    (order, encoding), (ebcdic, ccsid) = order_enc, charset
    raw = inv("MD  ", ebcdic) + packed(order, version) + body[: 316 if version == 1 else 356]
    md = decode_mqmd(raw, None if sniff else encoding, ccsid)
    assert md.version == version
    assert encode_mqmd(md, encoding, ccsid) == raw
    assert decode_mqmd(encode_mqmd(md, encoding, ccsid), encoding, ccsid) == md


def test_mqmd_without_encoding_or_ccsid_uses_version_and_the_strucid_family():
    md = MQMD(version=2, reply_to_q="REPLY.Q".ljust(48), user_id="mqm".ljust(12), put_appl_name="amqsput".ljust(28))
    assert decode_mqmd(encode_mqmd(md, 785, 500)) == md
    assert decode_mqmd(encode_mqmd(md, 546, 819) + b"data") == md


@settings(max_examples=examples(300), deadline=None)
@given(orders, charsets, st.binary(min_size=164, max_size=164))
def test_dlh_round_trip(order_enc, charset, body):
    (order, encoding), (ebcdic, ccsid) = order_enc, charset
    raw = inv("DLH ", ebcdic) + packed(order, 1) + body
    result = decode_dlh(raw, encoding, ccsid)
    assert result.has_dlh
    assert encode_dlh(result.dlh, encoding, ccsid) == raw
    assert decode_dlh(encode_dlh(result.dlh, encoding, ccsid), encoding, ccsid).dlh == result.dlh


# MQDLH fields: (offset, length), from IBM's MQDLH layout (docs/message-formats.md §2).
DLH_FIELD_OFFSETS = {
    "reason": (8, 4),
    "dest_q": (12, 48),
    "dest_qmgr": (60, 48),
    "encoding": (108, 4),
    "ccsid": (112, 4),
    "format": (116, 8),
    "put_appl_type": (124, 4),
    "put_appl_name": (128, 28),
    "put_date": (156, 8),
    "put_time": (164, 8),
}


@settings(max_examples=examples(300), deadline=None)
@given(orders, charsets, st.binary(min_size=164, max_size=164), st.integers(8, 171))
def test_a_cut_header_keeps_each_field_that_is_all_there(order_enc, charset, body, cut):
    """A listing cut inside the MQDLH (a paste of part of it): StrucId and Version read,
    fewer than 172 bytes. It is ``too_short`` and unusable, and ``dlh`` holds exactly the
    fields whose bytes are all there, equal to the whole header's, None for the rest."""
    (order, encoding), (ebcdic, ccsid) = order_enc, charset
    whole = inv("DLH ", ebcdic) + packed(order, 1) + body
    full = decode_dlh(whole, encoding, ccsid, "MQDEAD  ")
    result = decode_dlh(whole[:cut], encoding, ccsid, "MQDEAD  ")
    assert (result.has_dlh, result.problem, result.chain) == (False, "too_short", ())
    offsets = DLH_FIELD_OFFSETS
    expected = {
        name: getattr(full.dlh, name) if offset + size <= cut else None for name, (offset, size) in offsets.items()
    }
    assert {name: getattr(result.dlh, name) for name in offsets} == expected
    nul_flags = tuple(f for f in full.flags if f.startswith("nul_padded:") and expected[f.split(":")[1]] is not None)
    charset_flags = tuple(f for f in full.flags if f in ("unknown_ccsid", "ccsid_mismatch", "byte_order_sniffed"))
    assert result.flags == charset_flags + nul_flags + ("mqdead_without_dlh",)
    columns = to_columns(result)
    assert {k: columns[f"dlh_{k}"] for k in offsets} == expected and columns["dlh_chain"] is None


@settings(max_examples=examples(200), deadline=None)
@given(
    orders,
    charsets,
    st.binary(min_size=96, max_size=96),
    st.sampled_from([1, 2]),
    st.binary(min_size=316, max_size=316),
)
def test_xqh_round_trip(order_enc, charset, names, md_version, md_body):
    (order, encoding), (ebcdic, ccsid) = order_enc, charset
    raw = inv("XQH ", ebcdic) + packed(order, 1) + names + inv("MD  ", ebcdic) + packed(order, md_version) + md_body
    xqh = decode_xqh(raw, encoding, ccsid)
    assert encode_xqh(xqh, encoding, ccsid) == raw
    assert decode_xqh(raw, 0, ccsid) == xqh


@settings(max_examples=examples(200), deadline=None)
@given(orders, charsets, st.integers(72, 2**31 - 1), st.binary(min_size=60, max_size=60))
def test_mde_round_trip(order_enc, charset, struc_length, body):
    (order, encoding), (ebcdic, ccsid) = order_enc, charset
    raw = inv("MDE ", ebcdic) + packed(order, 2) + packed(order, struc_length) + body
    assert encode_mde(decode_mde(raw, encoding, ccsid), encoding, ccsid) == raw


@settings(max_examples=examples(200), deadline=None)
@given(orders, charsets, st.integers(36, 2**31 - 1), st.binary(min_size=24, max_size=24))
def test_rfh2_round_trip(order_enc, charset, struc_length, body):
    (order, encoding), (ebcdic, ccsid) = order_enc, charset
    raw = inv("RFH ", ebcdic) + packed(order, 2) + packed(order, struc_length) + body
    assert encode_rfh2(decode_rfh2(raw, encoding, ccsid), encoding, ccsid) == raw


@settings(max_examples=examples(200), deadline=None)
@given(orders, charsets, st.binary(min_size=676, max_size=676))
def test_tm_round_trip(order_enc, charset, body):
    (order, encoding), (ebcdic, ccsid) = order_enc, charset
    raw = inv("TM  ", ebcdic) + packed(order, 1) + body
    assert encode_tm(decode_tm(raw, encoding, ccsid), encoding, ccsid) == raw


# --------------------------------------------------------------------------------------
# Batch == scalar

ALL_CCSIDS = EBCDIC_CCSIDS + ASCII_CCSIDS + [1208, 1252, 0, 9999]
FORMATS = ["MQSTR", "", "MQXMIT", "MQHRF2", "MQHMDE", "MQTRIG", "MQDEAD", "MQPCF", "MQSTR\x00\x00\x00"]


def char_field(draw, length, ebcdic):
    kind = draw(st.sampled_from(["name", "nul", "any"]))
    if kind == "any":
        return draw(st.binary(min_size=length, max_size=length))
    name = draw(st.text("ABCXYZ.0129_/%", max_size=length))
    pad = b"\x00" if kind == "nul" else inv(" ", ebcdic)
    return inv(name, ebcdic).ljust(length, pad)


@st.composite
def messages(draw):
    """(header slice, MQMD encoding, MQMD ccsid, MQMD format) of every kind the decoders meet."""
    ccsid = draw(st.sampled_from(ALL_CCSIDS))
    ebcdic = (
        draw(st.booleans())
        if ccsid in (0, 9999, 1252, 1208) or draw(st.integers(0, 9)) == 0
        else ccsid in EBCDIC_CCSIDS
    )
    order = draw(st.sampled_from(["<", ">"]))
    encoding = draw(
        st.sampled_from([0, 3, -1] + (BIG if order == ">" else LITTLE) * 4 + (LITTLE if order == ">" else BIG))
    )
    version = draw(st.sampled_from([1] * 8 + [0, 2, 0x01000000, 0x00000100]))
    fmt = draw(st.sampled_from(FORMATS))
    raw = dlh_raw(
        order,
        ebcdic,
        version=version,
        reason=draw(st.integers(-(2**31), 2**31 - 1)),
        dest_q=char_field(draw, 48, ebcdic),
        dest_qmgr=char_field(draw, 48, ebcdic),
        encoding=draw(st.sampled_from([546, 785, 273, 0])),
        ccsid=draw(st.sampled_from([819, 500, -2, 0])),
        format=inv(fmt.ljust(8), ebcdic) if draw(st.integers(0, 5)) else draw(st.binary(min_size=8, max_size=8)),
        put_appl_type=draw(st.integers(-1, 40)),
        put_appl_name=char_field(draw, 28, ebcdic),
        put_date=char_field(draw, 8, ebcdic),
        put_time=char_field(draw, 8, ebcdic),
        strucid=draw(st.sampled_from(["DLH "] * 9 + ["DLX "])),
    )
    tail = draw(
        st.sampled_from(
            [
                b"",
                b"payload",
                rfh2_raw("<", False, struc_length=36, encoding=546, ccsid=1208, format="MQSTR"),
                xqh_raw(">", True, md_raw(">", True, encoding=546, ccsid=819, format="MQSTR")),
                mde_raw("<", False, encoding=546, ccsid=819, format="MQSTR"),
                tm_raw("<", False),
            ]
        )
    )
    data = raw + tail
    shape = draw(st.sampled_from(["whole"] * 6 + ["cut", "garbage"]))
    if shape == "cut":
        data = data[: draw(st.integers(0, 180))]
    elif shape == "garbage":
        data = draw(st.binary(max_size=300))
    md_format = draw(st.sampled_from([None, "MQDEAD  ", "MQSTR   ", "MQDEAD\x00\x00"]))
    return data, encoding, ccsid, md_format


def assert_batch_equals_scalar(rows):
    headers, encodings, ccsids, md_formats = (list(column) for column in zip(*rows)) if rows else ([], [], [], [])
    batch = decode_dlh_batch(headers, encodings, ccsids, md_formats)
    scalar = [to_columns(decode_dlh(*row)) for row in rows]
    assert list(batch) == list(DECODE_COLUMNS)
    for name in DECODE_COLUMNS:
        assert batch[name] == [row[name] for row in scalar], name
        assert [type(v) for v in batch[name]] == [type(row[name]) for row in scalar], name


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages(), max_size=25))
def test_batch_equals_scalar(rows):
    assert_batch_equals_scalar(rows)


def test_batch_judges_data_without_strucid_and_version_too_short_as_the_scalar_decoder_does():
    """Fewer than 8 bytes (empty data, mostly) are judged with array operations, not by
    `decode_dlh` row by row: the same problem and flags, no fields."""
    rows = [
        (b"", 546, 819, None),
        (b"", 546, 819, "MQDEAD  "),
        (b"DLH", 546, 819, "MQDEAD  "),
        (b"\xc4\xd3\xc8@\x00\x00\x00", 785, 500, None),
        (b"DLH \x01\x00\x00\x00", 546, 819, None),
        (LINUX_SAMPLE, 546, 819, "MQDEAD  "),
        (b"XLH", 546, 819, None),
    ]
    assert_batch_equals_scalar(rows)
    columns = decode_dlh_batch(*zip(*rows))
    assert columns["dlh_problem"] == ["too_short"] * 5 + [None, "bad_strucid"]
    assert columns["decode_flags"][:3] == [[], ["mqdead_without_dlh"], ["mqdead_without_dlh"]]


def test_batch_on_the_named_cases():
    rows = [
        (ZOS_SAMPLE, 785, 500, "MQDEAD  "),
        (ZOS_SAMPLE, 546, 500, "MQDEAD  "),
        (ZOS_SAMPLE, 785, 819, None),
        (ZOS_SAMPLE, 0, 500, None),
        (ZOS_SAMPLE, 785, 9999, None),
        (LINUX_SAMPLE, 546, 1208, "MQSTR   "),
        (LINUX_SAMPLE[:100], 546, 819, "MQDEAD  "),
        (b"", 546, 819, None),
        (b"{}" * 100, 546, 1208, None),
        (
            linux_dlh("MQXMIT") + xqh_raw("<", False, md_raw("<", False, encoding=1, ccsid=2, format="MQSTR")),
            546,
            819,
            None,
        ),
        (dlh_raw("<", False, dest_q=b"\xc3\xa9t\xc3\xa9".ljust(48)), 546, 1208, None),
        (dlh_raw("<", False, dest_q=b"caf\xe9".ljust(48)), 546, 1208, None),
    ]
    assert_batch_equals_scalar(rows)
    columns = decode_dlh_batch(*zip(*rows))
    assert columns["dlh_reason"][:6] == [2035, None, 2035, 2035, 2035, 2051]
    assert columns["dlh_chain"][9] == "MQXMIT>MQSTR"
    assert columns["dlh_dest_q"][10] == "été".ljust(46)


def test_batch_without_formats_and_empty_batch():
    assert decode_dlh_batch([], [], [], None) == {name: [] for name in DECODE_COLUMNS}
    assert decode_dlh_batch([LINUX_SAMPLE], [546], [819]) == {
        name: [value] for name, value in to_columns(decode_dlh(LINUX_SAMPLE, 546, 819)).items()
    }


def test_batch_rejects_columns_of_different_lengths():
    with pytest.raises(ValueError, match="2 headers but 1 encodings"):
        decode_dlh_batch([b"", b""], [546], [819, 819])


def test_dead_letter_header_fields_are_the_documented_ones():
    assert [f.name for f in fields(DeadLetterHeader)] == [
        "reason",
        "dest_q",
        "dest_qmgr",
        "encoding",
        "ccsid",
        "format",
        "put_appl_type",
        "put_appl_name",
        "put_date",
        "put_time",
    ]


# --- what Spark ships to the batch decoder -------------------------------------------


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages())
def test_without_a_chain_format_the_first_172_bytes_decode_alike(row):
    """Spark ships only the first 172 bytes of a message whose MQDLH Format cannot name a
    followed header (`chain_possible` false): the decode must not depend on the rest."""
    data, encoding, ccsid, md_format = row
    if not chain_possible(data):
        assert decode_dlh(data[:172], encoding, ccsid, md_format) == decode_dlh(data, encoding, ccsid, md_format)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages())
def test_the_stored_head_decodes_as_the_whole_data(row):
    """`dlh_head` (ingest stores it as ``messages.data_head``; classify never reads ``data``)
    decodes as the whole data, with its own length standing for the data's."""
    import pyarrow as pa

    data, encoding, ccsid, md_format = row
    head = dlh_head(data)
    assert head == data[: CHAIN_SCAN_LIMIT if chain_possible(data) else 172]
    assert decode_dlh(head, encoding, ccsid, md_format) == decode_dlh(data, encoding, ccsid, md_format)
    got = decode_dlh_arrow(
        pa.array([head[:172].ljust(172, b"\0")], pa.binary()),
        pa.array([head[172:] or None], pa.binary()),
        [len(head)],
        [encoding],
        [ccsid],
        pa.array([md_format], pa.string()),
    )
    assert got.to_pylist() == [to_columns(decode_dlh(data, encoding, ccsid, md_format))]


@pytest.mark.parametrize("ccsid", [c for c in codepages.KNOWN_CCSIDS] + [0, 930, 1390, 9999])
def test_chain_formats_are_recognised_in_every_character_set(ccsid):
    """Each followed header's name, written in any CCSID (or family, for unknown ones),
    makes the row ship its tail; MQSTR does not."""
    for name in ("MQXMIT", "MQHRF2", "MQHMDE", "MQDEAD", "MQTRIG"):
        for ebcdic in (False, True):
            own = codepages.is_known(ccsid) and codepages.is_ebcdic(ccsid) == ebcdic
            raw = codepages.encode(name.ljust(8), ccsid) if own else inv(name.ljust(8), ebcdic)
            if len(raw) != 8:  # UTF-16
                continue
            header = dlh_raw("<", ebcdic, format=raw)
            assert decode_dlh(header + b"x" * 400, 546, ccsid).chain[:1] == (name,), (ccsid, name, ebcdic)
            assert chain_possible(header), (ccsid, name, ebcdic)
    assert not chain_possible(dlh_raw("<", False, format=inv("MQSTR   ", False)))
    assert not chain_possible(dlh_raw(">", True, format=inv("MQSTR   ", True)))


def test_batch_takes_padded_heads_and_tails_only_where_given():
    """The Spark form: heads padded to 172 bytes, the true lengths, a tail only for the rows
    that may have a chain; the same columns as the scalar decoder."""
    import pyarrow as pa

    rows = [
        (ZOS_SAMPLE, 785, 500, "MQDEAD  "),
        (LINUX_SAMPLE[:100], 546, 819, None),
        (b"", 546, 819, None),
        (b"DL", 546, 819, "MQDEAD  "),
        (b"{}" * 100, 546, 1208, "MQSTR   "),
        (
            linux_dlh("MQXMIT") + xqh_raw("<", False, md_raw("<", False, encoding=1, ccsid=2, format="MQSTR")),
            546,
            819,
            None,
        ),
        (linux_dlh("MQSTR") + b"payload" * 1000, 546, 819, None),
    ]
    heads = pa.array([d[:172].ljust(172, b"\0") for d, *_ in rows], pa.binary())
    tails = pa.array([d[172:CHAIN_SCAN_LIMIT] if chain_possible(d) else None for d, *_ in rows], pa.binary())
    result = decode_dlh_arrow(
        heads,
        tails,
        [len(d) for d, *_ in rows],
        [r[1] for r in rows],
        [r[2] for r in rows],
        pa.array([r[3] for r in rows], pa.string()),
    )
    assert result.type == decode_arrow_schema()
    assert result.to_pylist() == [to_columns(decode_dlh(*row)) for row in rows]
    assert result.field("dlh_chain").to_pylist()[5] == "MQXMIT>MQSTR"


def _restore_fields_by_decoding(data: bytes, encoding: int, ccsid: int):
    """What `dlh_restore_fields` must give: `decode_dlh`'s problem and its MQDLH's fields."""
    result = decode_dlh(data, encoding, ccsid, "MQDEAD  ")
    if not result.has_dlh:
        return result.problem, None
    return None, (result.dlh.format, result.dlh.encoding, result.dlh.ccsid)


@given(
    orders,
    charsets,
    st.binary(min_size=164, max_size=164),
    st.binary(max_size=64),
    st.integers(-3, 2**16),
    st.integers(0, 12),
)
def test_restore_fields_are_decode_dlhs_for_any_header(order_enc, charset, body, rest, md_encoding, cut):
    """rebuild reads only Format, Encoding and CCSID of the MQDLH it removes: exactly what the
    full decode reads, for headers of either byte order and family, any MQMD Encoding (the
    byte order declared, undeclared or contradicted), unknown CCSIDs and cut headers."""
    (order, _encoding), (ebcdic, ccsid) = order_enc, charset
    full = inv("DLH ", ebcdic) + packed(order, 1) + body + rest
    raw = full if cut == 0 else full[: 172 - cut * 14]
    for enc, cs in (
        (_encoding, ccsid),
        (md_encoding, ccsid),
        (_encoding, 37 if not ebcdic else 819),
        (_encoding, 9999),
    ):
        assert dlh_restore_fields(raw, enc, cs) == _restore_fields_by_decoding(raw, enc, cs)


@given(st.binary(max_size=200), st.integers(-3, 2**16), st.sampled_from([500, 37, 819, 1208, 1200, 9999, 0, -2]))
def test_restore_fields_are_decode_dlhs_for_any_bytes(data, encoding, ccsid):
    assert dlh_restore_fields(data, encoding, ccsid) == _restore_fields_by_decoding(data, encoding, ccsid)


def test_restore_fields_are_decode_dlhs_for_the_generators_messages():
    from dlq_pipeline.dumps.generator import generate_messages

    messages = list(generate_messages(400, seed=29))
    assert sum(dlh_restore_fields(m.data, m.md.encoding, m.md.ccsid)[0] is None for m in messages) > 300
    for m in messages:
        assert dlh_restore_fields(m.data, m.md.encoding, m.md.ccsid) == _restore_fields_by_decoding(
            m.data, m.md.encoding, m.md.ccsid
        )
