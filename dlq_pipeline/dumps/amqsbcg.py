"""amqsbcg listings (docs/message-formats.md §5): MQMD and message bytes from the browse sample.

Both layouts are read: older releases (`` MQGET of message number N`` and `` length - N
bytes``) and 9.x (``, CompCode:c Reason:r`` and `` length - N of M bytes``; 9.4 also prints
a ``****Dead Letter Header****`` block and leaves the MQDLH out of the hex).

Only the descriptor fields, the offsets and the hex groups are read; the character column
is lossy and locale dependent and is never looked at. Offsets must run on without gaps
(multi-byte characters may push a line past 16 bytes; the next offset says so).

**Layouts seen in the field.** Releases and platforms differ in white space: AIX and older
releases indent the hex lines by a blank (`` 00000000:  444C 4820 ...``), mail and forum
copies indent every line, blog copies drop the blank lines. Lines are therefore matched
with any leading blanks, and blank lines are ignored everywhere.

**Truncation.** amqsbcg prints at most 64 KB. When `` length - N of M bytes`` has N < M
the message lands with ``truncated=True``, ``total_length`` the real length and the N
bytes printed (note ``listing_partial:N/M``): it must never be replayed. A listing that
holds fewer hex bytes than its length line says was cut (by hand, or the file ends early):
what is there lands the same way, ``truncated`` with the note ``listing_cut:HAVE/PRINTED``,
and its MQDLH is decoded as usual when the header bytes are present. A last hex group cut
in the middle (an odd number of digits) keeps its whole bytes, but only on the last hex
line: anywhere else it is an error. More hex than the length line says is an error
(``length_mismatch``).

**Numbers.** Every printed integer is an MQLONG; a value outside -2**31..2**31-1 cannot
come from amqsbcg and is a ``number_out_of_range`` error for that message, never a crash.

**The 9.4 Dead Letter Header block.** amqsbcg prints the block only for an MQMD Format of
``MQDEAD`` and a StrucId of ASCII ``DLH ``, reading the header's integers in the byte order
of the machine that ran it, and printing its character fields raw with ``%.*s`` (so they
stop at the first NUL). The MQDLH is rebuilt with ``structures.encode_dlh`` in the MQMD's
Encoding and CodedCharSetId (the header starts the data, so the MQMD describes it). The
printed Version tells the byte order apart: 1 means the listing host read the integers
the right way round, 16777216 (1 byte-swapped) means it read them the other way, and the
printed integers are swapped back. A character field printed shorter than its length was
cut at a NUL and is completed with NULs. The rebuilt character bytes are checked against
the printed ones; a CCSID that cannot reproduce them yields a ``dlh_rebuild_failed``
error, never a guess. Rebuilt messages carry the note ``dlh_rebuilt_from_listing``, and the
9.4 length line counts the data after the MQDLH, so 172 bytes are added back.
"""

from __future__ import annotations

import binascii
import re
import struct
from collections.abc import Iterator
from typing import Any, cast

from dlq_pipeline.dumps.dmpmqmsg import MAX_LINE_LENGTH
from dlq_pipeline.dumps.dmpmqmsg_reader import SNIPPET_LENGTH, LineReader, mqlong, open_source, shown_number
from dlq_pipeline.dumps.records import DumpedMessage, RecordError
from dlq_pipeline.mq import codepages
from dlq_pipeline.mq.mqmd import MQMD, MQMD_BYTE_LENGTHS, MQMD_CHAR_LENGTHS, bytes_to_text
from dlq_pipeline.mq.structures import DLH_LENGTH

__all__ = ["read_amqsbcg", "NOTE_DLH_REBUILT", "NOTE_LISTING_CUT", "NOTE_LISTING_PARTIAL"]

NOTE_DLH_REBUILT = "dlh_rebuilt_from_listing"
# notes on a truncated message: "<note>:<bytes in the listing>/<bytes it should hold>"
NOTE_LISTING_CUT = "listing_cut"  # fewer hex bytes than the length line says
NOTE_LISTING_PARTIAL = "listing_partial"  # amqsbcg printed only the first N of M bytes

INT, TEXT, HEX = "int", "text", "hex"

# amqsbcg's printed names -> (MQMD field, kind)
_MD_NAMES: dict[bytes, tuple[str, str]] = {
    b"Version": ("version", INT),
    b"Report": ("report", INT),
    b"MsgType": ("msg_type", INT),
    b"Expiry": ("expiry", INT),
    b"Feedback": ("feedback", INT),
    b"Encoding": ("encoding", INT),
    b"CodedCharSetId": ("ccsid", INT),
    b"Format": ("format", TEXT),
    b"Priority": ("priority", INT),
    b"Persistence": ("persistence", INT),
    b"MsgId": ("msg_id", HEX),
    b"CorrelId": ("correl_id", HEX),
    b"BackoutCount": ("backout_count", INT),
    b"ReplyToQ": ("reply_to_q", TEXT),
    b"ReplyToQMgr": ("reply_to_qmgr", TEXT),
    b"UserIdentifier": ("user_id", TEXT),
    b"AccountingToken": ("accounting_token", HEX),
    b"ApplIdentityData": ("appl_identity_data", TEXT),
    b"PutApplType": ("put_appl_type", INT),
    b"PutApplName": ("put_appl_name", TEXT),
    b"PutDate": ("put_date", TEXT),
    b"PutTime": ("put_time", TEXT),
    b"ApplOriginData": ("appl_origin_data", TEXT),
    b"GroupId": ("group_id", HEX),
    b"MsgSeqNumber": ("msg_seq_number", INT),
    b"Offset": ("offset", INT),
    b"MsgFlags": ("msg_flags", INT),
    b"OriginalLength": ("original_length", INT),
    b"StrucId": ("strucid", TEXT),
}
# the printed Dead Letter Header block -> (DeadLetterHeader field, kind, length)
_DLH_NAMES: dict[bytes, tuple[str, str, int]] = {
    b"StrucId": ("strucid", TEXT, 4),
    b"Version": ("version", INT, 4),
    b"Reason": ("reason", INT, 4),
    b"DestQName": ("dest_q", TEXT, 48),
    b"DestQMgrName": ("dest_qmgr", TEXT, 48),
    b"Encoding": ("encoding", INT, 4),
    b"CodedCharSetId": ("ccsid", INT, 4),
    b"Format": ("format", TEXT, 8),
    b"PutApplType": ("put_appl_type", INT, 4),
    b"PutApplName": ("put_appl_name", TEXT, 28),
    b"PutDate": ("put_date", TEXT, 8),
    b"PutTime": ("put_time", TEXT, 8),
}
# where each DLH character field sits in the 172 bytes (docs/message-formats.md §2)
_DLH_CHAR_OFFSETS = {
    "dest_q": 12,
    "dest_qmgr": 60,
    "format": 116,
    "put_appl_name": 128,
    "put_date": 156,
    "put_time": 164,
}
_TEXT_LENGTHS = {
    **{name: MQMD_CHAR_LENGTHS[f] for name, (f, k) in _MD_NAMES.items() if k == TEXT and f in MQMD_CHAR_LENGTHS},
    b"StrucId": 4,
    b"DestQName": 48,
    b"DestQMgrName": 48,
}

_GET_LINE = re.compile(rb"\s*MQGET of message number (\d+)")
_GET_FAILED = re.compile(rb"\s*MQGET (\d+), failed with CompCode:(-?\d+) Reason:(-?\d+)")
_MD_START = b"****Message descriptor****"
_PROPS_START = b"****Message properties****"
_DLH_START = b"****Dead Letter Header****"
_MESSAGE_START = re.compile(rb"\*{4}\s+Message\s+\*{4}\s*$")
_SUMMARY_START = re.compile(rb"\*{4}\s+Summary\s+\*{4}")
_LENGTH_LINE = re.compile(rb"\s*length - (\d+)(?: of (\d+))? bytes\s*$")
_HEX_LINE = re.compile(rb"[ \t]*([0-9A-Fa-f]{8}):(.*)")
_HEX_GROUP = re.compile(rb"(?:[0-9A-Fa-f]{2})+")
_HEX_DIGITS = re.compile(rb"[0-9A-Fa-f]+")
_NAME = re.compile(rb"\s*([A-Za-z]+)\s*:\s*")
_NUMBER = re.compile(rb"[+-]?\d+")
_REASON_NAME = re.compile(rb"\s*\[[^\]]*\]")
_CONTEXT_LINE = re.compile(rb"\s*\*\* (Identity|Origin) Context\s*$")


class _Bad(Exception):
    """What is wrong with the record being read: (code, reason, offending line)."""

    def __init__(self, code: str, reason: str, line: bytes = b""):
        super().__init__(reason)
        self.code, self.reason, self.line = code, reason, line


# --- "Name : value" pairs ------------------------------------------------------------------


def _pairs(line: bytes) -> list[tuple[bytes, tuple[str, bytes] | None]]:
    """The ``Name : value`` pairs of one line; a value of None continues on the next line."""
    pairs: list[tuple[bytes, tuple[str, bytes] | None]] = []
    pos, size = 0, len(line)
    close: int | None  # where a value's closing quote is
    while line[pos:].strip():
        name_match = _NAME.match(line, pos)
        if name_match is None:
            raise _Bad("bad_field", f"cannot read {bytes_to_text(line[pos:].strip())!r} as 'Name : value'", line)
        name, pos = name_match.group(1), name_match.end()
        if pos >= size:
            pairs.append((name, None))
            break
        if line.startswith(b"X'", pos):
            close = line.find(b"'", pos + 2)
            if close < 0:
                raise _Bad("bad_field", f"{name.decode()} hex value has no closing quote", line)
            pairs.append((name, (HEX, line[pos + 2 : close])))
            pos = close + 1
        elif line[pos : pos + 1] == b"'":
            close = _closing_quote(line, pos, _TEXT_LENGTHS.get(name, size))
            if close is None:
                raise _Bad("bad_field", f"{name.decode()} value has no closing quote", line)
            pairs.append((name, (TEXT, line[pos + 1 : close])))
            pos = close + 1
        else:
            number = _NUMBER.match(line, pos)
            if number is None:
                raise _Bad("bad_field", f"{name.decode()} value is not a number, 'text' or X'hex'", line)
            pairs.append((name, (INT, number.group())))  # digits: _set checks the range
            pos = number.end()
            reason_name = _REASON_NAME.match(line, pos)  # "Reason : 2053 [MQRC_Q_FULL]"
            if reason_name:
                pos = reason_name.end()
    return pairs


def _closing_quote(line: bytes, opening: int, length: int) -> int | None:
    """The quote ending a printed field of at most ``length`` bytes that began at ``opening``.

    The field itself may hold quotes, so take the last candidate after which the line is
    blank or goes on with another ``Name :``.
    """
    best = None
    close = line.find(b"'", opening + 1)
    while 0 <= close <= opening + 1 + length:
        if not line[close + 1 :].strip() or _NAME.match(line, close + 1):
            best = close
        close = line.find(b"'", close + 1)
    return best


def _set(target: dict, names: dict, name: bytes, value: tuple[str, bytes], line: bytes):
    spec = names.get(name)
    if spec is None:
        raise _Bad("unknown_field", f"unknown field {bytes_to_text(name)!r}", line)
    field_name, kind = spec[0], spec[1]
    raw: bytes | int | None  # the printed bytes, then the value to store
    value_kind, raw = value
    if kind == INT and value_kind == TEXT and _NUMBER.fullmatch(raw):
        value_kind = INT  # PutApplType : '6'
    if value_kind != kind:
        raise _Bad("bad_field", f"{bytes_to_text(name)} should be {kind}, not {value_kind}", line)
    if kind == INT:
        digits, raw = raw, mqlong(raw)
        if raw is None:
            raise _Bad(
                "number_out_of_range",
                f"{bytes_to_text(name)} value {shown_number(digits)} does "
                "not fit a 4-byte MQLONG (amqsbcg never prints one)",
                line,
            )
    elif kind == HEX:
        if not _HEX_GROUP.fullmatch(raw) or len(raw) != 2 * MQMD_BYTE_LENGTHS[field_name]:
            raise _Bad(
                "bad_field", f"{bytes_to_text(name)} should be {MQMD_BYTE_LENGTHS[field_name]} bytes of hex", line
            )
        raw = binascii.a2b_hex(raw)
    target[field_name] = raw


# --- one message ---------------------------------------------------------------------------


class _Listing:
    """One message of the listing as it is read, section by section."""

    def __init__(self, offset: int, lineno: int, head: bytes):
        self.offset, self.lineno, self.head = offset, lineno, head
        self.section = "start"
        self.md: dict = {}
        self.dlh: dict = {}
        self.pending: bytes | None = None  # a name whose value is on the next line
        self.length: tuple[int, int | None] | None = None
        self.hex: list[bytes] = []
        self.size = 0
        self.cut_line: bytes | None = None  # the hex line whose last group was cut short
        self.error: _Bad | None = None

    def take(self, line: bytes) -> bool:
        """Read one line of this message; False when the line is not part of it."""
        stripped = line.strip()
        if _ends_message(line, stripped):
            return False
        if stripped == _MD_START:
            if self.section != "start":
                return False
            self.section = "md"
        elif stripped == _PROPS_START:
            self.section = "props"
        elif stripped == _DLH_START:
            self.section = "dlh"
        elif _MESSAGE_START.match(stripped):
            if self.section not in ("md", "props", "dlh"):
                raise _Bad("unexpected_line", "message data before the message descriptor", line)
            self.section = "length"
        elif not stripped or self.section == "props":
            pass
        elif self.section in ("md", "dlh"):
            self._fields(line)
        elif self.section == "length":
            length = _LENGTH_LINE.match(line)
            if length is None:
                raise _Bad("bad_length_line", "expected ' length - N of M bytes' or ' length - N bytes'", line)
            total = length.group(2)
            self.length = (int(length.group(1)), int(total) if total is not None else None)
            self.section = "hex"
        elif self.section == "hex":
            hex_line = _HEX_LINE.match(line)
            if hex_line is None:
                return False
            self._hex(int(hex_line.group(1), 16), hex_line.group(2), line)
        else:
            return False
        return True

    def _fields(self, line: bytes) -> None:
        target, names = (self.md, _MD_NAMES) if self.section == "md" else (self.dlh, _DLH_NAMES)
        if self.pending is not None:
            pairs = _pairs(b"%s : %s" % (self.pending, line.strip()))
            self.pending = None
        elif _CONTEXT_LINE.match(line):
            return
        else:
            pairs = _pairs(line)
        for name, value in pairs:
            if value is None:
                self.pending = name
            else:
                _set(target, names, name, value, line)

    def _hex(self, offset: int, rest: bytes, line: bytes) -> None:
        if self.cut_line is not None:
            raise _Bad("bad_hex", "a hex group with an odd number of digits before the last hex line", self.cut_line)
        if offset != self.size:
            raise _Bad("bad_offset", f"hex line offset {offset:08X} where {self.size:08X} was expected", line)
        groups = rest.split()
        for at, group in enumerate(groups):
            if group[:1] == b"'":
                break  # the character column
            if not _HEX_GROUP.fullmatch(group):
                if at == len(groups) - 1 and _HEX_DIGITS.fullmatch(group):  # odd count
                    group = group[:-1]  # the line was cut inside its last group
                    self.cut_line = line
                else:
                    hint = " (was the listing edited by hand?)" if group.strip(b"*") == b"" else ""
                    raise _Bad("bad_hex", f"{bytes_to_text(group)!r} is not a hex group{hint}", line)
            self.hex.append(group)
            self.size += len(group) // 2

    def finish(self, name: str, index: int) -> DumpedMessage | RecordError:
        try:
            if self.error is not None:
                raise self.error
            return self._message(index)
        except _Bad as bad:
            return RecordError(
                name,
                self.lineno,
                self.offset,
                bad.code,
                bad.reason,
                bytes_to_text((bad.line or self.head)[:SNIPPET_LENGTH]),
                index,
            )

    def _message(self, index: int) -> DumpedMessage:
        if self.section in ("start", "md", "props", "dlh", "length"):
            raise _Bad("incomplete_message", "the listing ends before the message data", self.head)
        md = _mqmd(self.md, self.head)
        data = binascii.a2b_hex(b"".join(self.hex))
        printed, total = cast("tuple[int, int | None]", self.length)  # set before the "hex" section
        if len(data) > printed:
            raise _Bad(
                "length_mismatch", f"the length line says {printed} bytes but the hex holds {len(data)}", self.head
            )
        notes: list[str] = []
        if len(data) < printed:
            notes.append(f"{NOTE_LISTING_CUT}:{len(data)}/{printed}")
        elif total is not None and printed < total:
            notes.append(f"{NOTE_LISTING_PARTIAL}:{printed}/{total}")
        if total is None:
            total = printed  # the old layout prints the whole length
        if self.dlh:
            data = _rebuild_dlh(self.dlh, md) + data
            notes.insert(0, NOTE_DLH_REBUILT)
            total += DLH_LENGTH
        truncated = len(data) < total
        return DumpedMessage(
            md, data, index, self.lineno, self.offset, truncated, total if truncated else None, tuple(notes)
        )


def _mqmd(fields: dict, head: bytes) -> MQMD:
    fields = dict(fields)
    strucid = fields.pop("strucid", None)
    if strucid is not None and strucid != b"MD  ":
        raise _Bad("bad_field", f"message descriptor StrucId {bytes_to_text(strucid)!r} is not 'MD  '", head)
    missing = [name.decode() for name, (f, _) in _MD_NAMES.items() if f != "strucid" and f not in fields]
    if missing:
        raise _Bad("incomplete_descriptor", "message descriptor lacks " + ", ".join(missing), head)
    # ints, bytes and text, each of its field's type (Any: mypy checks ** values against every field)
    values: dict[str, Any] = {
        f: bytes_to_text(v) if isinstance(v, bytes) and f in MQMD_CHAR_LENGTHS else v for f, v in fields.items()
    }
    return MQMD(**values)


def _swap(value: int) -> int:
    return struct.unpack("<i", struct.pack(">i", value))[0]


def _rebuild_dlh(printed: dict, md: MQMD) -> bytes:
    """The 172 MQDLH bytes amqsbcg 9.4 printed as a block (see the module docstring)."""
    from dlq_pipeline.mq.structures import DeadLetterHeader, encode_dlh

    missing = [bytes_to_text(n) for n, spec in _DLH_NAMES.items() if spec[0] not in printed]
    if missing:
        raise _Bad("incomplete_dlh", "Dead Letter Header block lacks " + ", ".join(missing))
    if printed["strucid"] != b"DLH ":
        raise _Bad("bad_dlh_block", f"Dead Letter Header StrucId {printed['strucid']!r}")
    ints = {f: printed[f] for f in ("reason", "encoding", "ccsid", "put_appl_type")}
    if printed["version"] == _swap(1):
        ints = {f: _swap(v) for f, v in ints.items()}
    elif printed["version"] != 1:
        raise _Bad(
            "bad_dlh_block",
            f"Dead Letter Header Version {printed['version']} is neither 1 nor 1 with its bytes swapped",
        )
    raw_text = {}
    for name, kind, length in _DLH_NAMES.values():
        if kind == TEXT and name != "strucid":
            value = printed[name]
            if len(value) > length:
                raise _Bad("bad_dlh_block", f"Dead Letter Header {name} longer than {length} bytes")
            raw_text[name] = value + b"\x00" * (length - len(value))  # %.*s stopped at a NUL
    # str for DeadLetterHeader's character fields (Any: mypy checks ** values against every field)
    text: dict[str, Any] = {name: codepages.decode(raw, md.ccsid)[0] for name, raw in raw_text.items()}
    try:
        rebuilt = encode_dlh(DeadLetterHeader(**ints, **text), md.encoding, md.ccsid)
    except ValueError as exc:
        raise _Bad(
            "dlh_rebuild_failed", f"cannot rebuild the MQDLH in Encoding {md.encoding} CCSID {md.ccsid}: {exc}"
        ) from None
    for name, raw in raw_text.items():
        at = _DLH_CHAR_OFFSETS[name]
        if rebuilt[at : at + len(raw)] != raw:
            raise _Bad(
                "dlh_rebuild_failed", f"CCSID {md.ccsid} does not reproduce the printed Dead Letter Header {name} bytes"
            )
    return rebuilt


# --- the reader ----------------------------------------------------------------------------


def read_amqsbcg(
    source, *, name: str | None = None, max_line_length: int = MAX_LINE_LENGTH
) -> Iterator[DumpedMessage | RecordError]:
    """Messages (and bad records) of an amqsbcg listing, in order.

    ``source`` is a path or a binary file object; ``name`` is what errors report as the
    file. ``index`` is the 0-based ordinal of the record; ``line``/``offset`` locate its
    `` MQGET of message number`` line (or its descriptor line when that is missing). A
    failed MQGET printed in the listing yields a ``listing_get_failed`` error; a line longer
    than ``max_line_length`` makes its message a ``line_too_long`` error.
    """
    with open_source(source, name) as (f, label):
        index = 0
        current: _Listing | None = None
        for offset, lineno, line, _, too_long in LineReader(f, 0, 1, max_line_length):
            if current is not None:
                if _continues(current, line, too_long):
                    continue
                yield current.finish(label, index)
                index += 1
                current = None
            failed = _GET_FAILED.match(line)
            if failed:
                yield RecordError(
                    label,
                    lineno,
                    offset,
                    "listing_get_failed",
                    f"amqsbcg could not get message {int(failed.group(1))} (CompCode "
                    f"{failed.group(2).decode()}, Reason {failed.group(3).decode()}): it is not "
                    "in the listing",
                    bytes_to_text(line[:SNIPPET_LENGTH]),
                    index,
                )
                index += 1
            elif _GET_LINE.match(line) or line.strip() == _MD_START:
                current = _Listing(offset, lineno, line[:SNIPPET_LENGTH])
                if line.strip() == _MD_START:
                    current.take(line)
        if current is not None:
            yield current.finish(label, index)


def _ends_message(line: bytes, stripped: bytes) -> bool:
    """The next message's MQGET line, a failed MQGET, or the closing summary."""
    return bool(_GET_LINE.match(line) or _GET_FAILED.match(line) or _SUMMARY_START.match(stripped))


def _continues(current: _Listing, line: bytes, too_long: bool) -> bool:
    """Whether ``line`` belongs to the message being read; after an error, every line up to
    the next message (or the end of the listing) does."""
    if current.error is not None:
        stripped = line.strip()
        return not (_ends_message(line, stripped) or stripped == _MD_START)
    try:
        if too_long:
            raise _Bad("line_too_long", "line is too long for an amqsbcg listing", line)
        return current.take(line)
    except _Bad as bad:
        current.error = bad
        return True
