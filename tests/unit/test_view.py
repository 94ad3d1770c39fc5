"""The match view: MQMD columns as landed, the MQDLH decoded with the MQMD's Encoding/CCSID."""

from __future__ import annotations

from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.mq.structures import DeadLetterHeader, encode_dlh
from dlq_pipeline.rules.matcher import decide
from dlq_pipeline.rules.model import Decision, Rule, RulesTable
from dlq_pipeline.rules.view import match_view

DLH = DeadLetterHeader(
    reason=2053,
    dest_q="APP.IN".ljust(48),
    dest_qmgr="QM1".ljust(48),
    encoding=546,
    ccsid=1208,
    format="MQSTR   ",
    put_appl_type=7,
    put_appl_name="QM1".ljust(28),
    put_date="20260921",
    put_time="02343300",
)
MD = MQMD(
    format="MQDEAD  ",
    encoding=546,
    ccsid=819,
    msg_type=1,
    persistence=1,
    reply_to_q="APP.REPLY".ljust(48),
    reply_to_qmgr="QM2".ljust(48),
    user_id="app".ljust(12),
    put_appl_name="amqsput".ljust(28),
    put_appl_type=6,
)


def mqmd_columns(md: MQMD) -> dict:
    row = md.as_dict()
    row["md_version"] = row.pop("version")
    return row


def dlh_columns(dlh: DeadLetterHeader, chain: str = "MQSTR", flags: tuple = ()) -> dict:
    return {
        "has_dlh": True,
        "dlh_problem": None,
        "dlh_reason": dlh.reason,
        "dlh_dest_q": dlh.dest_q,
        "dlh_dest_qmgr": dlh.dest_qmgr,
        "dlh_encoding": dlh.encoding,
        "dlh_ccsid": dlh.ccsid,
        "dlh_format": dlh.format,
        "dlh_put_appl_type": dlh.put_appl_type,
        "dlh_put_appl_name": dlh.put_appl_name,
        "dlh_put_date": dlh.put_date,
        "dlh_put_time": dlh.put_time,
        "dlh_chain": chain,
        "decode_flags": list(flags),
    }


NO_DLH = {
    "dlh_reason": None,
    "dlh_dest_q": None,
    "dlh_dest_qmgr": None,
    "dlh_encoding": None,
    "dlh_ccsid": None,
    "dlh_format": None,
    "dlh_put_appl_type": None,
    "dlh_put_appl_name": None,
    "dlh_put_date": None,
    "dlh_put_time": None,
    "dlh_chain": None,
}


def test_little_endian_ascii_header():
    data = encode_dlh(DLH, 546, 819) + b"hello"
    assert match_view(MD, data) == {**mqmd_columns(MD), **dlh_columns(DLH), "truncated": False}


def test_zos_big_endian_ebcdic_header_reads_the_same_names():
    md = MD.replace(encoding=785, ccsid=500)
    data = encode_dlh(DLH, 785, 500) + "hello".encode("cp500")
    assert match_view(md, data, truncated=True) == {**mqmd_columns(md), **dlh_columns(DLH), "truncated": True}


def test_nul_padded_fields_are_kept_as_they_are():
    dlh = DeadLetterHeader(dest_q="MY.Q" + "\x00" * 44, format="MQSTR   ")
    view = match_view(MD, encode_dlh(dlh, 546, 819))
    assert view == {**mqmd_columns(MD), **dlh_columns(dlh, flags=("nul_padded:dest_q",)), "truncated": False}


def test_message_without_a_dlh():
    md = MD.replace(format="MQSTR   ")
    view = match_view(md, b'{"order": 1}')
    expected = {**mqmd_columns(md), "has_dlh": False, "dlh_problem": "bad_strucid", **NO_DLH}
    assert view == {**expected, "decode_flags": [], "truncated": False}


def test_short_header_is_too_short_with_the_fields_that_are_there():
    """100 of 172 bytes: Reason, DestQName and DestQMgrName (bytes 8-108) are shown, the rest
    is null; the header is not usable, so no rule matches, not even a catch-all."""
    view = match_view(MD, encode_dlh(DLH, 546, 819)[:100], truncated=True)
    expected = {
        **mqmd_columns(MD),
        "has_dlh": False,
        "dlh_problem": "too_short",
        **NO_DLH,
        "dlh_reason": 2053,
        "dlh_dest_q": "APP.IN".ljust(48),
    }
    assert view == {**expected, "decode_flags": ["mqdead_without_dlh"], "truncated": True}
    everything = RulesTable(
        path="t",
        rules=(
            Rule(line=1, index=0, patterns={"REASON": 2053}, action="DISCARD"),
            Rule(line=2, index=1, patterns={}, action="DISCARD"),
        ),
    )
    assert decide(everything, view) == Decision("IGNORE", ignore_reason="no_dlh")


def test_ascii_and_ebcdic_headers_get_the_same_decision():
    table = RulesTable(
        path="t",
        rules=(Rule(line=1, index=0, patterns={"DESTQ": "APP.*", "FORMAT": "MQSTR", "REASON": 2053}, action="RETRY"),),
    )
    ascii_view = match_view(MD, encode_dlh(DLH, 546, 819))
    ebcdic_view = match_view(MD.replace(encoding=785, ccsid=37), encode_dlh(DLH, 785, 37))
    expected = Decision("RETRY", 1, 0, "APP.IN", "QM1", None, "DEF")
    assert decide(table, ascii_view) == decide(table, ebcdic_view) == expected
