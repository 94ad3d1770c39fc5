"""The dmpmqmsg / qload dump format (docs/message-formats.md §4), as the reader
(`dumps.dmpmqmsg_reader`), the writer (`dumps.dmpmqmsg_writer`) and the JVM reader
(`ingest.jvm_reader.layout`) state it: the MQMD attribute lines (codes, fields, kinds,
lengths, the orders dmpmqmsg writes them in), the kinds of line, the header line and its
``Created:`` stamp, and the limits a reader keeps to.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

__all__ = [
    "MAX_LINE_LENGTH",
    "HEADER_SEARCH_LINES",
    "MQLONG_MIN",
    "MQLONG_MAX",
    "LONG",
    "CHAR",
    "BYTE",
    "HEXTEXT",
    "Attribute",
    "ATTRIBUTES",
    "WRITE_ORDER_HEX",
    "WRITE_ORDER_CHAR",
    "MD_BLOCK_ORDERS",
    "K_ATTR",
    "K_NOMD",
    "K_HEX",
    "K_STRING",
    "K_TEXT",
    "K_IGNORED",
    "K_OTHER",
    "DATA_KINDS",
    "MD_KINDS",
    "line_kind",
    "HEADER_TOOLS",
    "CTIME_WEEKDAYS",
    "CTIME_MONTHS",
    "CTIME_PATTERN",
    "DEFAULT_TIME_ZONE",
    "created_time",
]

MAX_LINE_LENGTH = 256 * 1024 * 1024
# The stdout banner before the header is two lines; anything much longer is not a dump.
HEADER_SEARCH_LINES = 64

# The values a LONG attribute (an MQLONG) can hold
MQLONG_MIN, MQLONG_MAX = -(2**31), 2**31 - 1


# --- the attribute table (docs/message-formats.md §4, qload's Flds[] order) ---------------------

LONG, CHAR, BYTE, HEXTEXT = "LONG", "CHAR", "BYTE", "HEXTEXT"


@dataclass(frozen=True)
class Attribute:
    """One ``A CCC value`` line: its code, the MQMD field it sets, its kind and length."""

    code: str
    field: str
    kind: str  # LONG, CHAR (raw text), BYTE (hex -> bytes), HEXTEXT (hex -> str field)
    length: int


_ATTRIBUTE_LIST = (
    Attribute("VER", "version", LONG, 4),
    Attribute("RPT", "report", LONG, 4),
    Attribute("MST", "msg_type", LONG, 4),
    Attribute("EXP", "expiry", LONG, 4),
    Attribute("FDB", "feedback", LONG, 4),
    Attribute("ENC", "encoding", LONG, 4),
    Attribute("CCS", "ccsid", LONG, 4),
    Attribute("FMT", "format", CHAR, 8),
    Attribute("PRI", "priority", LONG, 4),
    Attribute("PER", "persistence", LONG, 4),
    Attribute("MSI", "msg_id", BYTE, 24),
    Attribute("COI", "correl_id", BYTE, 24),
    Attribute("BOC", "backout_count", LONG, 4),
    Attribute("RTQ", "reply_to_q", CHAR, 48),
    Attribute("RTM", "reply_to_qmgr", CHAR, 48),
    Attribute("USR", "user_id", CHAR, 12),
    Attribute("ACC", "accounting_token", BYTE, 32),
    Attribute("AID", "appl_identity_data", CHAR, 32),
    Attribute("AIX", "appl_identity_data", HEXTEXT, 32),
    Attribute("PAT", "put_appl_type", LONG, 4),
    Attribute("PAN", "put_appl_name", CHAR, 28),
    Attribute("PTD", "put_date", CHAR, 8),
    Attribute("PTT", "put_time", CHAR, 8),
    Attribute("AOD", "appl_origin_data", CHAR, 4),
    Attribute("AOX", "appl_origin_data", HEXTEXT, 4),
    Attribute("GRP", "group_id", BYTE, 24),
    Attribute("MSQ", "msg_seq_number", LONG, 4),
    Attribute("OFF", "offset", LONG, 4),
    Attribute("MSF", "msg_flags", LONG, 4),
    Attribute("ORL", "original_length", LONG, 4),
)
ATTRIBUTES = {a.code.encode("ascii"): a for a in _ATTRIBUTE_LIST}
# dmpmqmsg writes one of AID/AIX and one of AOD/AOX: 28 lines, one per MQMD field.
WRITE_ORDER_HEX = tuple(a for a in _ATTRIBUTE_LIST if a.code not in ("AID", "AOD"))
WRITE_ORDER_CHAR = tuple(a for a in _ATTRIBUTE_LIST if a.code not in ("AIX", "AOX"))
# The usual MQMD blocks, in the order they are tried: hex context (default) and -dc.
MD_BLOCK_ORDERS = (WRITE_ORDER_HEX, WRITE_ORDER_CHAR)


# --- line kinds ----------------------------------------------------------------------------

K_ATTR, K_NOMD, K_HEX, K_STRING, K_TEXT = "A", "N", "X", "S", "T"
K_IGNORED, K_OTHER = "#", "?"
_LETTER_KINDS = {b"A": K_ATTR, b"N": K_NOMD, b"X": K_HEX, b"S": K_STRING, b"T": K_TEXT}
DATA_KINDS = (K_HEX, K_STRING, K_TEXT)
MD_KINDS = (K_ATTR, K_NOMD)

# dmpmqmsg's own statistics (printed to stderr; present when 2>&1 was captured), and the
# banner it prints before the header with -f stdout: files concatenated from several runs
# hold it between the last message of one run and the header of the next.
_STATS_LINE = re.compile(
    rb"(Read|Written) +- Files:|\d{4}-[0-9A-Z]{3} \(C\) Copyright IBM Corp\.|"
    rb"(IBM MQ|WebSphere MQ|MQSeries) Queue Load/Unload Utility\s*$"
)


def line_kind(line: bytes, too_long: bool = False) -> str:
    """The kind of a line from its first characters (a too-long line is never blank)."""
    first = line[:1]
    kind = _LETTER_KINDS.get(first)
    if kind is not None and (len(line) == 1 or line[1] == 0x20):
        return kind
    if first == b"*":
        return K_IGNORED
    if not too_long and not line.strip():
        return K_IGNORED
    if _STATS_LINE.match(line):
        return K_IGNORED
    return K_OTHER


# --- the header line and its Created stamp ---------------------------------------------------

HEADER_TOOLS = ("DMPMQMSG", "QLOAD")  # a header line starts "* TOOL Version:"
# The header's Created stamp is C's ctime() ("Tue Sep 22 02:34:33 2026", the day of the month
# padded with a space: "Sep  2"), in the local time of the host that ran dmpmqmsg, a zone it
# does not name. The JVM reader matches the same pattern (`ingest.jvm_reader.layout`).
CTIME_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
CTIME_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
CTIME_PATTERN = (
    f"(?:{'|'.join(CTIME_WEEKDAYS)}) +({'|'.join(CTIME_MONTHS)})"
    " +([0-9]{1,2}) +([0-9]{2}):([0-9]{2}):([0-9]{2}) +([0-9]{4})"
)
_CTIME = re.compile(CTIME_PATTERN)

# The zone a Created stamp is read in unless one is configured (ingest.dump_time_zone)
DEFAULT_TIME_ZONE = "UTC"


def created_time(created: str, zone: _dt.tzinfo) -> _dt.datetime | None:
    """The instant a header's ``Created:`` stamp names, as an aware UTC datetime: its
    wall-clock time (C's ``ctime()``) read in ``zone``; a time that falls in a daylight-saving
    gap or overlap is read with the offset in force before the change. None when the stamp is
    not a ``ctime()`` stamp of a real time (blank, another format, 31 Feb, 24:00:00); the
    weekday is not checked against the date."""
    found = _CTIME.fullmatch(created)
    if found is None:
        return None
    month, day, hour, minute, second, year = found.groups()
    try:
        local = _dt.datetime(
            int(year), CTIME_MONTHS.index(month) + 1, int(day), int(hour), int(minute), int(second), tzinfo=zone
        )
        return local.astimezone(_dt.UTC)
    except (ValueError, OverflowError):  # no such date or time; an instant outside datetime's years
        return None
