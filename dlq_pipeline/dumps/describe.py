"""What `dlq-pipeline inspect` shows of a message, as pure functions (no I/O, no Spark).

`describe` makes the ``inspect --json`` object of one message; `format_message` renders that
object for people; `summarize` and `format_summary` count a set of them. Character fields
are shown with trailing blanks *and* NULs removed: NUL padding is not lost but reported in
``flags`` (``nul_padded:<dlh field>`` from the MQDLH decoder, ``md_nul_padded:<field>`` for
the MQMD), because it changes how rules match (APAR IT31856).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import cast

from dlq_pipeline.dumps.records import DumpedMessage
from dlq_pipeline.mq import codepages, constants
from dlq_pipeline.mq.dlh_decoder import decode_dlh
from dlq_pipeline.mq.mqmd import MQMD_CHAR_LENGTHS
from dlq_pipeline.mq.structures import DLH_LENGTH, MQCCSI_INHERIT, DeadLetterHeader
from dlq_pipeline.report.redact import REDACTED, redact_preview

__all__ = ["PREVIEW_BYTES", "describe", "format_message", "summarize", "format_summary", "printable"]

PREVIEW_BYTES = 32
_PAD = " \x00"


def _chars(value: str | None) -> str | None:
    return value.rstrip(_PAD) if value is not None else None  # None: a cut MQDLH lacks the field


def printable(text: str) -> str:
    """One visible character per character: controls, surrogates and U+FFFD become '.'.

    Every text a command prints that may hold message fields or file names goes through
    this (``inspect``, ``rules test``): a field holding ESC ]0;...BEL must not retitle or
    reprogram the terminal."""
    return "".join(c if c.isprintable() and c != "\ufffd" else "." for c in text)


def _preview(data: bytes, offset: int, ccsid: int) -> dict:
    chunk = data[offset : offset + PREVIEW_BYTES]
    text, _exact = codepages.decode(chunk, ccsid)
    return {"offset": offset, "hex": chunk.hex().upper(), "text": printable(text)}


def describe(msg: DumpedMessage, file: str, *, redact: bool = False) -> dict:
    """The ``inspect --json`` object of one message read from ``file``.

    The MQDLH is decoded with the MQMD's Encoding and CCSID, as IBM's handler does; the
    preview is the data after the MQDLH (all of it without one), decoded in the CCSID the
    MQDLH names for it (the MQMD's without an MQDLH). ``redact``: the preview shows no
    data (`dlq_pipeline.report.redact.redact_preview`).
    """
    md = msg.md
    header = decode_dlh(msg.data, md.encoding, md.ccsid, md.format)
    dlh = header.dlh  # also a cut MQDLH's fields (has_dlh false), for people to see
    flags = list(header.flags) + [
        f"md_nul_padded:{field}" for field in MQMD_CHAR_LENGTHS if "\x00" in getattr(md, field)
    ]
    if header.has_dlh:
        usable = cast(DeadLetterHeader, dlh)  # has_dlh: there is an MQDLH
        body_ccsid = md.ccsid if usable.ccsid in (MQCCSI_INHERIT, 0) else usable.ccsid
        preview = _preview(msg.data, DLH_LENGTH, body_ccsid)
    else:
        preview = _preview(msg.data, 0, md.ccsid)
    dlh_view = None
    if dlh is not None:
        dlh_view = {
            "reason": dlh.reason,
            "reason_name": constants.reason_name(dlh.reason) if dlh.reason is not None else None,
            "dest_q": _chars(dlh.dest_q),
            "dest_qmgr": _chars(dlh.dest_qmgr),
            "encoding": dlh.encoding,
            "ccsid": dlh.ccsid,
            "format": _chars(dlh.format),
            "put_appl_type": dlh.put_appl_type,
            "put_appl_name": _chars(dlh.put_appl_name),
            "put_date": _chars(dlh.put_date),
            "put_time": _chars(dlh.put_time),
            "chain": ">".join(header.chain) if header.has_dlh else None,
        }
    return {
        "index": msg.index,
        "file": file,
        "line": msg.line,
        "format": _chars(md.format),
        "encoding": md.encoding,
        "ccsid": md.ccsid,
        "msg_id": md.msg_id.hex().upper(),
        "correl_id": md.correl_id.hex().upper(),
        "msg_type": md.msg_type,
        "persistence": md.persistence,
        "backout_count": md.backout_count,
        "put_appl_type": md.put_appl_type,
        "put_appl_name": _chars(md.put_appl_name),
        "put_date": _chars(md.put_date),
        "put_time": _chars(md.put_time),
        "reply_to_q": _chars(md.reply_to_q),
        "reply_to_qmgr": _chars(md.reply_to_qmgr),
        "user_id": _chars(md.user_id),
        "data_length": msg.total_length if msg.total_length is not None else len(msg.data),
        "truncated": msg.truncated,
        "has_dlh": header.has_dlh,
        "dlh_problem": header.problem,
        "dlh": dlh_view,
        "flags": flags,
        "notes": list(msg.notes),
        "preview": redact_preview(preview) if redact else preview,
    }


# --- the readable view ----------------------------------------------------------------------


def _named(family: str, value: int) -> str:
    """``8 DATAGRAM``: the number, then its constant name without the family prefix."""
    name = constants.name_of(family, value)
    return f"{value} {name[len(family) + 1 :]}" if name else str(value)


def _quoted(text: str | None) -> str:
    return "'" + printable(text) + "'" if text is not None else "?"


def _shown(value) -> str:
    """A field's value, ``?`` for one a cut MQDLH does not hold."""
    return "?" if value is None else str(value)


def _hex_groups(hex_text: str) -> str:
    return " ".join(hex_text[i : i + 8] for i in range(0, len(hex_text), 8))


def format_message(desc: dict) -> str:
    """A few lines per message: where it is, its MQMD and MQDLH with names, a data preview."""
    lines = [f"#{desc['index']}  {printable(desc['file'])}  line {desc['line']}"]
    lines.append(
        f"  MQMD   Format {_quoted(desc['format'])}  Encoding {desc['encoding']}  "
        f"CCSID {desc['ccsid']}  MsgType {_named('MQMT', desc['msg_type'])}  "
        f"Persistence {_named('MQPER', desc['persistence'])}  BackoutCount {desc['backout_count']}"
    )
    lines.append(f"         MsgId    {desc['msg_id']}")
    lines.append(f"         CorrelId {desc['correl_id']}")
    lines.append(
        f"         Put      {desc['put_date']} {desc['put_time']} by "
        f"{_named('MQAT', desc['put_appl_type'])} {_quoted(desc['put_appl_name'])}  "
        f"UserId {_quoted(desc['user_id'])}"
    )
    lines.append(f"         ReplyTo  {_quoted(desc['reply_to_q'])} at {_quoted(desc['reply_to_qmgr'])}")
    dlh = desc["dlh"]
    if dlh is None:
        lines.append(f"  MQDLH  none ({desc['dlh_problem']})")
    else:
        cut = "" if desc["has_dlh"] else f"  (cut: {desc['dlh_problem']}; ? = not in the data)"
        reason_name = f" {dlh['reason_name']}" if dlh["reason_name"] else " (unknown reason)"
        lines.append(f"  MQDLH  Reason {_shown(dlh['reason'])}{reason_name if dlh['reason'] is not None else ''}{cut}")
        lines.append(f"         Dest     {_quoted(dlh['dest_q'])} at {_quoted(dlh['dest_qmgr'])}")
        chain = f"  Chain {printable(dlh['chain'])}" if dlh["chain"] is not None else ""
        lines.append(
            f"         Next     Encoding {_shown(dlh['encoding'])}  CCSID {_shown(dlh['ccsid'])}  "
            f"Format {_quoted(dlh['format'])}{chain}"
        )
        appl_type = _named("MQAT", dlh["put_appl_type"]) if dlh["put_appl_type"] is not None else "?"
        lines.append(
            f"         Put      {_shown(dlh['put_date'])} {_shown(dlh['put_time'])} by "
            f"{appl_type} {_quoted(dlh['put_appl_name'])}"
        )
    if desc["flags"] or desc["notes"]:
        lines.append("  Flags  " + " ".join(desc["flags"] + desc["notes"]))
    preview = desc["preview"]
    size = f"{desc['data_length']} bytes" + (" (truncated in the source)" if desc["truncated"] else "")
    where = f", body from byte {preview['offset']}" if preview["offset"] else ""
    lines.append(f"  Data   {size}{where}")
    if preview["hex"]:
        lines.append(f"         {_hex_groups(preview['hex'])}")
        lines.append(f"         {preview['text']}")
    elif preview["text"] == REDACTED:
        lines.append(f"         {REDACTED}")
    return "\n".join(lines)


# --- counts ---------------------------------------------------------------------------------


def _ranked(counter: Counter) -> list:
    """Most frequent first; ties in key order (None sorts as empty)."""
    return sorted(counter.items(), key=lambda item: (-item[1], tuple("" if k is None else k for k in item[0])))


def summarize(descs: Iterable[dict], bad_records: int = 0) -> dict:
    """Counts over `describe` objects: by reason (with names), by destination, messages
    without an MQDLH by problem, truncated; ``bad_records`` is passed through."""
    messages = with_dlh = truncated = 0
    reasons: Counter = Counter()
    destinations: Counter = Counter()
    problems: Counter = Counter()
    for desc in descs:
        messages += 1
        truncated += bool(desc["truncated"])
        dlh = desc["dlh"]
        if not desc["has_dlh"]:
            problems[(desc["dlh_problem"],)] += 1
            continue
        with_dlh += 1
        reasons[(dlh["reason"],)] += 1
        destinations[(dlh["dest_qmgr"], dlh["dest_q"])] += 1
    return {
        "messages": messages,
        "with_dlh": with_dlh,
        "without_dlh": messages - with_dlh,
        "truncated": truncated,
        "bad_records": bad_records,
        "by_reason": [
            {"reason": reason, "reason_name": constants.reason_name(reason), "count": n}
            for (reason,), n in _ranked(reasons)
        ],
        "by_destination": [
            {"dest_qmgr": qmgr, "dest_q": queue, "count": n} for (qmgr, queue), n in _ranked(destinations)
        ],
        "by_problem": [{"problem": problem, "count": n} for (problem,), n in _ranked(problems)],
    }


def _table(title: str, header: tuple[str, ...], rows: list[tuple]) -> list[str]:
    """A titled table; columns of numbers are right-aligned."""
    numeric = [all(isinstance(row[i], int) for row in rows) for i in range(len(header))]
    cells = [header] + [tuple(printable("" if v is None else str(v)) for v in row) for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    out = [title]
    for row in cells:
        padded = [
            value.rjust(width) if right else value.ljust(width) for value, width, right in zip(row, widths, numeric)
        ]
        out.append(("  " + "  ".join(padded)).rstrip())
    return out


def format_summary(summary: dict) -> str:
    """The ``inspect --summary`` tables."""
    lines = [
        f"messages {summary['messages']}: with an MQDLH {summary['with_dlh']}, without "
        f"{summary['without_dlh']}, truncated {summary['truncated']}; "
        f"bad records {summary['bad_records']}"
    ]
    if summary["by_reason"]:
        lines.append("")
        lines += _table(
            "by reason",
            ("count", "reason", "name"),
            [(r["count"], r["reason"], r["reason_name"] or "(unknown)") for r in summary["by_reason"]],
        )
    if summary["by_destination"]:
        lines.append("")
        lines += _table(
            "by destination",
            ("count", "queue manager", "queue"),
            [(d["count"], d["dest_qmgr"], d["dest_q"]) for d in summary["by_destination"]],
        )
    if summary["by_problem"]:
        lines.append("")
        lines += _table(
            "without an MQDLH, by problem",
            ("count", "problem"),
            [(p["count"], p["problem"]) for p in summary["by_problem"]],
        )
    return "\n".join(lines)
