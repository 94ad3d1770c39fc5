"""Reading dmpmqmsg / qload dump files (docs/message-formats.md §4): a streaming reader
over the format `dumps.dmpmqmsg` states.

The reader is a line state machine over bytes. It never loads more than one message and
one line (bounded by ``max_line_length``) at a time, so a dump of any size streams.

**Records.** A message record starts at an ``N`` line, or at an ``A`` line whose previous
significant line (blank lines, ``*`` comments and the tool's statistics lines do not count)
is not an ``A`` or ``N`` line, and runs to the next record start. Lines before the first
record start that are not one (data lines, stray text) form one bad record. Because a
start is decided by the line itself and the one significant line before it, a reader
dropped anywhere in the file can find record boundaries by looking back a line: that is
what makes byte-range splits exact.

**Splits.** ``read_dump(path, start=s, end=e)`` yields exactly the records whose first line
starts at a byte offset in ``[s, e)``, reading past ``e`` to finish the last one. File-level
verdicts (``empty_file``, ``missing_header``, ``not_a_message_dump``) are reported once, by
the split that starts at 0. In a split with ``s > 0`` the ordinal ``index`` is unknown and
set to -1, and ``line`` counts from the line that holds byte ``s`` (line 1): a full read's
line is that plus the newlines before ``s``, which the Spark ingest adds from the other
splits' counts without reading their bytes twice. Everything else is identical to a full
read.

**Headers.** Each message carries the header line above it (`DumpHeader`: its offset and
``Created:`` stamp), the last one before its first line: files of several dmpmqmsg runs
concatenated hold one header per run, and each message was recorded when its own run took
it. A split knows the header lines of the prologue and those it reads; a record before the
split's first header line gets the prologue's last, and the ``headers`` list `read_dump` fills
tells a caller (ingest) which later header line an earlier split passed, the one such a record
is really under. `dmpmqmsg.created_time` reads a stamp, C's ``ctime()`` in a zone the caller names.

**Errors.** A bad record yields one ``RecordError`` located at the record's first line
(``line``/``offset``), whose ``message`` names the offending line by byte offset and whose
``snippet`` is the start of that line; reading resumes at the next record start.

Leniencies follow what ``dmpmqmsg -o`` itself loads, and are recorded in
``DumpedMessage.notes`` rather than hidden: a CHAR value longer than its field is cut to
the field (``char_field_truncated:<field>``), a byte field given in fewer bytes is completed
from the MQMD default (``byte_field_padded:<field>``) and one given in more is cut
(``byte_field_truncated:<field>``); ``T`` lines get a newline appended
(``text_lines_newline_appended``).
"""

from __future__ import annotations

import binascii
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import BinaryIO, cast

import numpy as np

from dlq_pipeline.dumps.dmpmqmsg import (
    ATTRIBUTES,
    BYTE,
    CHAR,
    DATA_KINDS,
    HEADER_SEARCH_LINES,
    HEADER_TOOLS,
    HEXTEXT,
    K_ATTR,
    K_HEX,
    K_IGNORED,
    K_NOMD,
    K_OTHER,
    K_STRING,
    K_TEXT,
    LONG,
    MAX_LINE_LENGTH,
    MD_BLOCK_ORDERS,
    MD_KINDS,
    MQLONG_MAX,
    MQLONG_MIN,
    WRITE_ORDER_HEX,
    Attribute,
    line_kind,
)
from dlq_pipeline.dumps.records import DumpedMessage, DumpHeader, DumpInfo, RecordError
from dlq_pipeline.fs import file_size, open_input
from dlq_pipeline.mq.mqmd import MQMD, bytes_to_text

__all__ = [
    "SNIPPET_LENGTH",
    "NOTE_TEXT_LINES",
    "NOTE_FILE_ENDS_MID_LINE",
    "mqlong",
    "shown_number",
    "LineReader",
    "newlines_between",
    "open_source",
    "read_dump",
    "read_dump_info",
    "plan_splits",
]

SNIPPET_LENGTH = 80
NOTE_TEXT_LINES = "text_lines_newline_appended"
# The file ends inside a data line (no final newline): cut off, e.g. by a full disk or an
# interrupted copy. dmpmqmsg ends every line, and a dump says nowhere how long a message
# is, so the message is kept but marked truncated: it lands, needs attention, is never replayed.
NOTE_FILE_ENDS_MID_LINE = "file_ends_mid_line"


def mqlong(digits: bytes) -> int | None:
    """The value of a decimal integer (optional sign) if it fits a 4-byte MQLONG, else None.

    Never converts more than a few digits: ``int()`` of thousands of digits raises (Python's
    int_max_str_digits), and a reader must report such a value, not crash on it."""
    magnitude = digits.lstrip(b"+-").lstrip(b"0")
    if len(magnitude) > 10:
        return None
    value = int(digits)
    return value if MQLONG_MIN <= value <= MQLONG_MAX else None


def shown_number(digits: bytes, limit: int = 24) -> str:
    """A number from a file for an error message, shortened when it is very long."""
    text = bytes_to_text(digits)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


# --- the usual MQMD block, read in one match -------------------------------------------------

_DEFAULT_MD = MQMD()


def _md_block_regex(order: tuple[Attribute, ...]) -> re.Pattern:
    """The 28 A lines exactly as dmpmqmsg writes them, one group per value."""
    value = {
        LONG: rb"(-?[0-9]{1,10})",
        CHAR: rb"([^\r\n]{0,%d})",
        BYTE: rb"([0-9A-Fa-f]{%d})",
        HEXTEXT: rb"([0-9A-Fa-f]{0,%d})",
    }
    parts = []
    for attr in order:
        pattern = value[attr.kind]
        if attr.kind is CHAR:
            pattern %= attr.length
        elif attr.kind in (BYTE, HEXTEXT):
            pattern %= 2 * attr.length
        parts.append(b"A " + attr.code.encode("ascii") + b" " + pattern + rb"\r?\n")
    return re.compile(b"".join(parts))


_MD_BLOCKS = tuple((_md_block_regex(order), order) for order in MD_BLOCK_ORDERS)
_MD_BLOCK_LINES = len(WRITE_ORDER_HEX)
_MD_BLOCK_LONGEST_LINE = 6 + 2 * max(a.length for a in ATTRIBUTES.values())


def _md_block_fields(values, order: tuple[Attribute, ...]) -> dict | None:
    """MQMD fields from a matched block; None when a value needs the line-by-line path."""
    fields: dict[str, int | str | bytes] = {}
    for attr, value in zip(order, values):
        kind = attr.kind
        if kind is LONG:
            number = int(value)
            if not MQLONG_MIN <= number <= MQLONG_MAX:
                return None
            fields[attr.field] = number
        elif not value:
            continue  # "A CCC " is shorter than 7 characters: the default stays
        elif kind is CHAR:
            fields[attr.field] = bytes_to_text(value)
        elif kind is BYTE:
            fields[attr.field] = binascii.a2b_hex(value)
        elif len(value) & 1:
            return None
        else:
            fields[attr.field] = bytes_to_text(binascii.a2b_hex(value))
    return fields


# --- the lines a reader looks for --------------------------------------------------------------

_HEADER_LINE = re.compile(rb"\* (%s) Version:(\S*)(?: Created:(.*))?" % "|".join(HEADER_TOOLS).encode())
_QMGR_LINE = re.compile(rb"\* Qmgr +=(.*)")
_QUEUE_LINE = re.compile(rb"\* Queue +=(.*)")
# -dT writes "%5d. MsgId:<hex>" and an age line per message instead of the message.
_AGE_LINE = re.compile(rb"\s*\d+\. MsgId:[0-9A-Fa-f]*\s*$")
# -ds prints section titles and a statistics table instead of messages.
_SUMMARY_LINE = re.compile(
    rb"(Message (Ages|Sizes)|Queue Size Summary|(Youngest|Oldest|Smallest|Biggest|Average)"
    rb" +Message +:)"
)
_X_LINE = re.compile(rb"X *([0-9A-Fa-f]*)(.*)", re.DOTALL)
# what may follow an X line's digits: blanks, then the -da column "  <...>" (ignored)
_X_REST = re.compile(rb"(?:[ \t]+<.*>)?[ \t\r]*", re.DOTALL)
_HEX = re.compile(rb"[0-9A-Fa-f]*")
_LONG_VALUE = re.compile(rb"[ \t]*([+-]?[0-9]+)[ \t]*")
_QUOTED = re.compile(rb'((?:[^"~]|~["~])*)"')


def _snippet(line: bytes) -> str:
    return bytes_to_text(line[:SNIPPET_LENGTH])


def _header(match: re.Match[bytes], offset: int) -> DumpHeader:
    """The `DumpHeader` of a header line matched by ``_HEADER_LINE`` at ``offset``."""
    return DumpHeader(offset, bytes_to_text((match.group(3) or b"").strip()))


# --- reading lines -------------------------------------------------------------------------

# (offset, 1-based line number or -1, content without CR/LF (only the first bytes of a
#  too-long line), offset of the next line, too long?)
_Line = tuple[int, int, bytes, int, bool]


class LineReader:
    """Lines of ``f`` from its current position (which is ``offset``), read in big blocks.

    A line longer than ``max_len`` is skipped, never held whole. ``data_run`` is the fast
    path for message data: it takes a run of plain ``X`` lines (or of quoted ``S`` lines)
    in one regex match and one decode; ``md_run`` takes the usual 28-line MQMD block in one
    match. Both give exactly what the line-by-line path would (a property test checks it)
    and leave anything unusual to it.
    """

    BLOCK = 1 << 20

    def __init__(self, f: BinaryIO, offset: int, lineno: int, max_len: int):
        self.f, self.max_len = f, max_len
        self.buf = bytearray()
        self.pos = 0  # next unread byte of buf
        self.scanned = 0  # no newline in buf[pos:scanned]
        self.base = offset  # file offset of buf[0]
        self.lineno, self.step = lineno, (1 if lineno >= 0 else 0)
        self.eof = False
        self.unterminated = False  # the last line of the file had no newline
        self.pending: _Line | None = None
        self.x_run = re.compile(rb"(?:X [0-9A-Fa-f]*\r?\n)+")
        self.x_end = re.compile(rb"\n(?!X )")
        self.s_run = re.compile(rb'(?:S "(?:[^"~\r\n]|~["~])*"\r?\n)+')

    def push_back(self, item: _Line) -> None:
        """Make the line just read the next one again."""
        start = item[0] - self.base
        if item[4] or start < 0:  # a skipped long line is no longer in the buffer
            self.pending = item
            return
        self.pos = start
        self.lineno = item[1]

    def _more(self) -> bool:
        if self.pos >= self.BLOCK:  # forget what has been read
            del self.buf[: self.pos]
            self.base += self.pos
            self.scanned = max(self.scanned - self.pos, 0)
            self.pos = 0
        chunk = self.f.read(self.BLOCK)
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def __iter__(self) -> LineReader:
        return self

    def __next__(self) -> _Line:
        if self.pending is not None:
            item, self.pending = self.pending, None
            return item
        buf = self.buf
        while True:
            newline = buf.find(b"\n", max(self.pos, self.scanned))
            if newline >= 0:
                end = newline + 1
                break
            self.scanned = len(buf)
            if len(buf) - self.pos > self.max_len + 2:
                return self._skip_long_line()
            if not self._more():
                if self.pos >= len(buf):
                    raise StopIteration
                newline = end = len(buf)  # the last line has no newline
                self.unterminated = True
                break
        start = self.pos
        line = bytes(memoryview(buf)[start:newline])
        if line[-1:] == b"\r":
            line = line[:-1]
        too_long = len(line) > self.max_len
        if too_long:
            line = line[:SNIPPET_LENGTH]
        self.pos = end
        item = (self.base + start, self.lineno, line, self.base + end, too_long)
        self.lineno += self.step
        return item

    def _skip_long_line(self) -> _Line:
        offset = self.base + self.pos
        head = bytes(self.buf[self.pos : self.pos + SNIPPET_LENGTH])
        while True:
            newline = self.buf.find(b"\n", max(self.pos, self.scanned))
            if newline >= 0:
                self.pos = self.scanned = newline + 1
                break
            self.base += len(self.buf)
            self.buf.clear()
            self.pos = self.scanned = 0
            if not self._more():
                break
        item = (offset, self.lineno, head, self.base + self.pos, True)
        self.lineno += self.step
        return item

    def md_run(self) -> tuple[int, int, bytes, dict] | None:
        """The usual 28-line MQMD block, if it comes next: (offset, line, first line, fields).
        The blank line dmpmqmsg writes before it is skipped, as the line-by-line path does.

        Used only where an A line starts a message; anything unusual is left to the
        line-by-line path.
        """
        if self.pending is not None or self.max_len < _MD_BLOCK_LONGEST_LINE:
            return None
        if len(self.buf) - self.pos < 4096 and not self.eof:
            self._more()
        start = self.pos + 1 if self.buf[self.pos : self.pos + 1] == b"\n" else self.pos
        if self.buf[start : start + 6] != b"A VER ":
            return None
        found = next(((b, order) for regex, order in _MD_BLOCKS if (b := regex.match(self.buf, start))), None)
        if found is None:
            return None
        block, order = found
        fields = _md_block_fields(block.groups(), order)
        if fields is None:
            return None
        first = bytes(self.buf[start : block.end(1)])
        lineno = self.lineno + (self.step if start > self.pos else 0)
        item = (self.base + start, lineno, first, fields)
        self.pos = block.end()
        self.lineno = lineno + self.step * _MD_BLOCK_LINES
        return item

    def data_run(self, budget: int | None = None) -> bytes | None:
        """The data of the plain ``X`` lines, or the quoted ``S`` lines, that come next,
        consumed; None if there are none.

        Lines the per-line path would reject (odd digit count, too long) end the run, so
        that path sees them and reports them. So does the first line that would take the
        data past ``budget`` bytes: the size limit's error then names that line.
        """
        if self.pending is not None:
            return None
        if len(self.buf) - self.pos < 65536 and not self.eof:
            self._more()
        first = self.buf[self.pos : self.pos + 1]
        if first == b"X":
            data = self._even_x_run(budget)
            if data is None:
                data = self._plain_x_run(budget)
            if data is not None:
                return data
        regex = self.x_run if first == b"X" else self.s_run if first == b"S" else None
        run = regex.match(self.buf, self.pos) if regex is not None else None
        if run is None:
            return None
        kept = self._good_lines(run.group(), hexed=regex is self.x_run)
        if kept is None:
            return None
        raw, lines = kept
        if regex is self.x_run:
            data = binascii.a2b_hex(b"".join(lines).replace(b"X ", b""))
        else:
            text = b"".join([line[3:-1] for line in lines])  # inside the quotes
            data = _unescape(text) if b"~" in text else text
        return self._take(raw, lines, data, budget, hexed=regex is self.x_run)

    def _take(
        self, raw: list[bytes], lines: list[bytes], data: bytes, budget: int | None, *, hexed: bool
    ) -> bytes | None:
        """Consume the lines of a run and return their data, or only the lines whose data
        fits ``budget`` (None when not even the first one does)."""
        if budget is not None and len(data) > budget:
            size = keep = 0
            for line in lines:
                grows = (len(line) - 2) // 2 if hexed else len(_unescape(line[3:-1]))
                if size + grows > budget:
                    break
                size += grows
                keep += 1
            if keep == 0:
                return None
            raw, data = raw[:keep], data[:size]
        self._consume(raw)
        return data

    def _even_x_run(self, budget: int | None = None) -> bytes | None:
        """``data_run`` for the X lines of one width that come next (what dmpmqmsg writes:
        every line of a message but its last has the same length), without splitting them
        into lines: with width ``w``, the line starts, the spaces after ``X`` and the
        newlines sit every ``w + 1`` bytes, so three strided slices (a byte per line) show
        how many lines are regular, one strided copy takes what lies between the ``X `` and
        the newline (`_line_digits`), and ``a2b_hex`` checks that it is all hex digits.
        Anything else (a CR, an odd or too-long width, a stray character) returns None, and
        `_plain_x_run` or the regular expression reads those lines: only lines of one width
        without a CR put every line start at a fixed stride."""
        buf, pos = self.buf, self.pos
        newline = buf.find(b"\n", pos, pos + min(self.max_len, 1 << 16) + 1)
        width = newline - pos  # of the first line, without its newline
        if newline < 0 or width < 4 or width & 1 or width > self.max_len or buf[newline - 1] == 0x0D:
            return None
        stride, grows = width + 1, (width - 2) >> 1
        count = (len(buf) - pos) // stride
        if budget is not None:
            count = min(count, budget // grows)
        if count == 0:
            return None
        lines, window = 0, 16  # a message's lines, then its short last line: look a few ahead first
        while True:
            window = min(count, window)
            lines += self._regular_lines(pos + lines * stride, width, window - lines)
            if lines < window or window == count:
                break
            window *= 8
        if lines == 0:
            return None
        size = lines * stride
        digits = _line_digits(buf, pos, width, lines)
        last = self._short_last_line(pos + size, width, None if budget is None else budget - lines * grows)
        if last:  # the message's shorter last line, taken in the same run (one call less a message)
            digits += buf[pos + size + 2 : pos + size + last]
            size += last + 1
            lines += 1
        try:
            data = binascii.a2b_hex(digits)
        except binascii.Error:  # not a hex digit somewhere (an X, space or newline inside a line too)
            return None
        self.pos += size
        self.lineno += self.step * lines
        return data

    def _short_last_line(self, pos: int, width: int, budget: int | None) -> int:
        """The length of the ``X`` line at ``pos`` if it is shorter than ``width``, has an even
        length, ends in a newline without a CR and its data fits ``budget``; else 0."""
        buf = self.buf
        if buf[pos : pos + 2] != b"X ":
            return 0
        newline = buf.find(b"\n", pos + 2, pos + width)
        length = newline - pos
        if newline < 0 or length & 1 or buf[newline - 1] == 0x0D or (budget is not None and (length - 2) >> 1 > budget):
            return 0
        return length

    def _regular_lines(self, pos: int, width: int, count: int) -> int:
        """How many of the ``count`` lines of ``width`` from ``pos`` are ``X `` ... newline."""
        buf, stride = self.buf, width + 1
        end = pos + count * stride
        heads, spaces, ends = buf[pos:end:stride], buf[pos + 1 : end : stride], buf[pos + width : end : stride]
        return min(
            len(heads) - len(heads.lstrip(b"X")),
            len(spaces) - len(spaces.lstrip(b" ")),
            len(ends) - len(ends.lstrip(b"\n")),
        )

    def _plain_x_run(self, budget: int | None = None) -> bytes | None:
        """``data_run`` for X lines without the regular expression, which matched at about
        160 MB/s: find where lines stop starting with ``X``, then let the hex decoder check
        the digits. Anything it cannot vouch for returns None, and the regular expression
        decides."""
        stop = self.x_end.search(self.buf, self.pos)
        if stop is None:
            return None
        block = bytes(self.buf[self.pos : stop.start() + 1])
        if not block.startswith(b"X "):
            return None
        kept = self._good_lines(block, hexed=True)
        if kept is None:
            return None
        raw, lines = kept
        joined = b"".join(lines)
        digits = joined.translate(None, b"X ")
        if len(digits) != len(joined) - 2 * len(lines):  # a space or X inside a line
            return None
        try:
            data = binascii.a2b_hex(digits)
        except binascii.Error:  # not a hex digit somewhere
            return None
        return self._take(raw, lines, data, budget, hexed=True)

    def _good_lines(self, block: bytes, *, hexed: bool) -> tuple[list[bytes], list[bytes]] | None:
        """The lines of ``block`` up to the first one the per-line path would reject (odd
        digit count, too long): (as read, without line ends); None if that is the first."""
        raw = block.split(b"\n")
        raw.pop()
        lines = [r[:-1] if r[-1:] == b"\r" else r for r in raw] if b"\r" in block else raw
        lengths = list(map(len, lines))
        bad = [n for n in set(lengths) if (hexed and n & 1) or n > self.max_len]
        if bad:
            keep = min(map(lengths.index, bad))
            if keep == 0:
                return None
            raw, lines = raw[:keep], lines[:keep]
        return raw, lines

    def _consume(self, raw: list[bytes]) -> None:
        self.pos += sum(map(len, raw)) + len(raw)
        self.lineno += self.step * len(raw)


def _line_digits(buf: bytearray, pos: int, width: int, lines: int) -> bytes:
    """What lies between ``X `` and the newline of ``lines`` lines of ``width`` from ``pos``:
    one strided copy (numpy), where deleting the ``X``, spaces and newlines byte by byte took
    four times as long. Returns a copy, so no view keeps ``buf`` from growing."""
    rows = np.frombuffer(buf, np.uint8, lines * (width + 1), pos).reshape(lines, width + 1)
    return rows[:, 2:width].tobytes()


def newlines_between(f: BinaryIO, start: int, stop: int | None) -> int:
    """The ``\\n`` bytes in ``[start, stop)`` of ``f`` (``stop`` None: to its end), read in
    blocks (moves ``f``)."""
    f.seek(start)
    count, left = 0, None if stop is None else max(stop - start, 0)
    while left is None or left > 0:
        block = f.read(1 << 20 if left is None else min(left, 1 << 20))
        if not block:
            break
        count += block.count(b"\n")
        if left is not None:
            left -= len(block)
    return count


def _align(f: BinaryIO, start: int) -> int:
    """The first line start at or after ``start``."""
    if start <= 0:
        return 0
    f.seek(start - 1)
    if f.read(1) == b"\n":
        return start
    pos = start
    while True:
        part = f.readline(1 << 20)
        if not part:
            return pos
        pos += len(part)
        if part[-1] == 0x0A:
            return pos


def _line_start(f: BinaryIO, end: int, floor: int) -> int:
    """Offset where the line that ends just before ``end`` (a line start) begins."""
    pos = end - 1  # skip that line's own newline
    while pos > floor:
        low = max(floor, pos - 65536)
        f.seek(low)
        newline = f.read(pos - low).rfind(b"\n")
        if newline >= 0:
            return low + newline + 1
        pos = low
    return floor


def _previous_kind(f: BinaryIO, pos: int, floor: int, max_len: int) -> str | None:
    """Kind of the last significant line before ``pos``, looking no further back than ``floor``."""
    end = pos
    while end > floor:
        begin = _line_start(f, end, floor)
        f.seek(begin)
        size = end - begin
        if size > max_len + 2:
            kind = line_kind(f.read(SNIPPET_LENGTH), True)
        else:
            line = f.read(size)
            if line[-1:] == b"\n":
                line = line[:-1]
            if line[-1:] == b"\r":
                line = line[:-1]
            too_long = len(line) > max_len
            kind = line_kind(line[:SNIPPET_LENGTH] if too_long else line, too_long)
        if kind != K_IGNORED:
            return kind
        end = begin
    return None


# --- the prologue: banner, header, first significant body line ------------------------------


@dataclass
class _Prologue:
    info: DumpInfo
    body_start: int  # offset of the first line after the header (0 when headerless)
    first: _Line | None  # the first significant body line
    verdict: RecordError | None = None  # file-level: nothing in this file is a message
    header: DumpHeader | None = None  # the last header line before the first body line


def _scan_prologue(
    lines: Iterator[_Line], name: str, *, header_only: bool = False, headers: list[DumpHeader] | None = None
) -> _Prologue:
    """Skip the banner, read the header, and find the first significant line after it; each
    header line passed is appended to ``headers``."""
    info = DumpInfo()
    last: DumpHeader | None = None
    body_start: int | None = None
    first_nonblank: _Line | None = None
    nonblank = 0
    for item in lines:
        offset, lineno, line, next_offset, too_long = item
        if body_start is None:  # still looking for the header
            if not too_long and not line.strip():
                continue
            if first_nonblank is None:
                first_nonblank = item
                if line_kind(line, too_long) in MD_KINDS:  # -dH: written without a header
                    return _Prologue(info, offset, None if header_only else item)
            header = None if too_long else _HEADER_LINE.match(line)
            if header:
                last = _header(header, offset)
                if headers is not None:
                    headers.append(last)
                info = DumpInfo(
                    tool=header.group(1).decode("ascii"),
                    version=bytes_to_text(header.group(2)),
                    created=last.created,
                )
                body_start = next_offset
                continue
            nonblank += 1
            if nonblank >= HEADER_SEARCH_LINES:
                break
            continue
        kind = line_kind(line, too_long)
        if kind == K_IGNORED:
            if line[:1] != b"*":
                if header_only:
                    break
                continue
            again = None if too_long else _HEADER_LINE.match(line)
            if again:  # another run's header before any message: the messages are under it
                last = _header(again, offset)
                if headers is not None:
                    headers.append(last)
                continue
            qmgr, queue = _QMGR_LINE.match(line), _QUEUE_LINE.match(line)
            if qmgr and not info.qmgr:
                info = replace(info, qmgr=bytes_to_text(qmgr.group(1).strip()))
            elif queue and not info.queue:
                info = replace(info, queue=bytes_to_text(queue.group(1).strip()))
            continue
        if header_only:
            break
        prologue = _Prologue(info, body_start, item, header=last)
        listing = _non_dump_kind(line) if kind == K_OTHER and not too_long else None
        if listing:
            prologue.verdict = RecordError(
                name,
                lineno,
                offset,
                "not_a_message_dump",
                f"this is dmpmqmsg {listing} output, not a message dump: it holds no "
                "messages (dump the queue without -dT/-ds to get one)",
                _snippet(line),
            )
        return prologue

    if body_start is not None or header_only:
        return _Prologue(info, body_start or 0, None, header=last)  # header and no messages: an empty queue
    if first_nonblank is None:
        return _Prologue(
            info,
            0,
            None,
            RecordError(name, 1, 0, "empty_file", "the file is empty: no dmpmqmsg header and no messages"),
        )
    offset, lineno, line, _, _ = first_nonblank
    hint = " (it looks like an amqsbcg listing)" if line.startswith(b"AMQSBCG0") else ""
    return _Prologue(
        info,
        0,
        None,
        RecordError(
            name,
            lineno,
            offset,
            "missing_header",
            f"no '* DMPMQMSG' or '* QLOAD' header line in the first {HEADER_SEARCH_LINES} "
            f"non-blank lines{hint}: not a dmpmqmsg dump",
            _snippet(line),
        ),
    )


def _non_dump_kind(line: bytes) -> str | None:
    if _AGE_LINE.match(line):
        return "-dT (time on queue)"
    if _SUMMARY_LINE.match(line):
        return "-ds (queue summary)"
    return None


# --- one record ----------------------------------------------------------------------------


class _Record:
    """A message being read: attributes and data so far, or the first thing wrong with it."""

    __slots__ = (
        "offset",
        "lineno",
        "head",
        "fields",
        "chunks",
        "notes",
        "error",
        "has_data",
        "size",
        "limit",
        "header",
    )

    def __init__(
        self, offset: int, lineno: int, head: bytes, limit: int | None = None, header: DumpHeader | None = None
    ):
        self.offset = offset
        self.header = header
        self.size = 0
        self.limit = limit
        self.lineno = lineno
        self.head = head[:SNIPPET_LENGTH]
        self.fields: dict = {}
        self.chunks: list[bytes] = []
        self.notes: list[str] = []
        self.error: tuple[str, str, bytes] | None = None
        self.has_data = False

    def fail(self, code: str, offset: int, what: str, line: bytes) -> None:
        self.error = (code, f"line at byte {offset}: {what}", line)

    def room(self) -> int | None:
        """How many more data bytes fit under the size limit (None: no limit)."""
        return None if self.limit is None else max(self.limit - self.size, 0)

    def take(self, data: bytes, offset: int, line: bytes) -> None:
        """Add message data; past the size limit, drop it all and fail (memory stays bounded)."""
        self.size += len(data)
        if self.limit is not None and self.size > self.limit:
            self.chunks = []
            self.error = (
                "message_too_large",
                f"the message data reaches byte {self.size} at the line at byte {offset}, more than "
                f"the {self.limit}-byte limit (ingest.max_message_bytes); the message was skipped",
                line or self.head,
            )
            return
        self.chunks.append(data)
        self.has_data = True

    def add(self, kind: str, line: bytes, offset: int, too_long: bool, limit: int) -> None:
        if too_long:
            self.fail(
                "line_too_long", offset, f"line is longer than the {limit}-byte limit; the message was skipped", line
            )
        elif kind == K_HEX:
            digits, rest = cast(re.Match[bytes], _X_LINE.match(line)).groups()  # an X line always matches
            if not _X_REST.fullmatch(rest):
                column = len(line) - len(rest.lstrip(b" \t")) + 1
                self.fail(
                    "bad_hex",
                    offset,
                    f"X line has a character that is not a hex digit at column {column} "
                    "(after the digits only blanks and the -da column '  <...>' may follow)",
                    line,
                )
                return
            if len(digits) & 1:
                self.fail("odd_length_hex", offset, f"X line has an odd number of hex digits ({len(digits)})", line)
                return
            self.take(binascii.a2b_hex(digits), offset, line)
        elif kind == K_ATTR:
            problem = _apply_attribute(line, self.fields, self.notes)
            if problem:
                self.fail(problem[0], offset, problem[1], line)
        elif kind == K_STRING:
            data = _string_line(line)
            if isinstance(data, tuple):
                self.fail(data[0], offset, data[1], line)
                return
            self.take(data, offset, line)
        elif kind == K_TEXT:
            self.take(line[2:] + b"\n", offset, line)
            self.notes.append(NOTE_TEXT_LINES)
        else:
            self.fail(
                "unexpected_line", offset, "unexpected line inside a message: expected an A, X, S or T line", line
            )

    def finish(self, name: str, index: int) -> DumpedMessage | RecordError:
        if self.error is not None:
            code, message, line = self.error
            return RecordError(name, self.lineno, self.offset, code, message, _snippet(line), index)
        if not self.has_data:
            return RecordError(
                name,
                self.lineno,
                self.offset,
                "missing_data",
                "message attributes without any data line (X, S or T); a zero-length "
                "message is written as a bare 'X ' line",
                _snippet(self.head),
                index,
            )
        md = MQMD(**self.fields) if self.fields else _DEFAULT_MD
        return DumpedMessage(
            md,
            b"".join(self.chunks),
            index,
            self.lineno,
            self.offset,
            notes=tuple(dict.fromkeys(self.notes)),
            header=self.header,
        )


def _apply_attribute(line: bytes, fields: dict, notes: list[str]) -> tuple[str, str] | None:
    """Set one MQMD field from an ``A CCC value`` line; (code, reason) when it is bad."""
    if len(line) < 5:
        return "bad_attribute_line", "attribute line too short: expected 'A CCC value'"
    attr = ATTRIBUTES.get(line[2:5])
    if attr is None:
        return "unknown_attribute", f"unknown attribute code {bytes_to_text(line[2:5])!r}"
    if len(line) < 7:
        return None  # no value: the field keeps its default
    value = line[6:]
    if attr.kind is LONG:
        number = _LONG_VALUE.fullmatch(value)
        if number is None:
            return "bad_number", f"{attr.code} value {bytes_to_text(value)!r} is not a decimal integer"
        n = mqlong(number.group(1))
        if n is None:
            return "number_out_of_range", (
                f"{attr.code} value {shown_number(number.group(1))} does not fit a 4-byte MQLONG"
            )
        fields[attr.field] = n
    elif attr.kind is CHAR:
        if len(value) > attr.length:
            value = value[: attr.length]
            notes.append(f"char_field_truncated:{attr.field}")
        fields[attr.field] = bytes_to_text(value)
    else:
        digits = value.rstrip(b" \t")
        if not _HEX.fullmatch(digits) or len(digits) & 1:
            return "bad_hex", (f"{attr.code} value {bytes_to_text(digits[:80])!r} is not hex digit pairs")
        raw = binascii.a2b_hex(digits)
        if len(raw) > attr.length:
            raw = raw[: attr.length]
            notes.append(f"byte_field_truncated:{attr.field}")
        if attr.kind is BYTE:
            if len(raw) < attr.length:
                raw += getattr(_DEFAULT_MD, attr.field)[len(raw) :]
                notes.append(f"byte_field_padded:{attr.field}")
            fields[attr.field] = raw
        else:
            fields[attr.field] = bytes_to_text(raw)
    return None


_QUOTED_PREFIX = re.compile(rb'(?:[^"~]|~["~])*')  # matches anywhere (maybe empty): .match() is never None


def _string_line(line: bytes) -> bytes | tuple[str, str]:
    """The bytes of an ``S`` line, or (code, reason)."""
    rest = line[1:].lstrip(b" ")
    if rest[:1] != b'"':
        return rest.rstrip(b" ")
    body = rest[1:]
    if b"~" not in body:
        close = body.find(b'"')
        if close >= 0:
            return body[:close]
        return "unterminated_string", 'S line has no closing "'
    quoted = _QUOTED.match(body)
    if quoted is None:
        stop = cast(re.Match[bytes], _QUOTED_PREFIX.match(body)).end()
        if body[stop : stop + 1] == b"~":
            return "bad_escape", (f'S line has an escape other than ~" or ~~ (at character {stop + 3})')
        return "unterminated_string", 'S line has no closing "'
    return _unescape(quoted.group(1))


def _unescape(text: bytes) -> bytes:
    """Undo ``~"`` and ``~~``: ``text`` is plain bytes and those pairs, so replacing left
    to right cannot split a pair."""
    return text.replace(b"~~", b"~").replace(b'~"', b'"')


def _orphan_error(kind: str) -> tuple[str, str]:
    if kind in DATA_KINDS:
        return (
            "data_without_attributes",
            "data line before any message attributes: a message starts with an A or N line",
        )
    return "unexpected_line", "unexpected line: a message starts with an A or N line"


# --- the reader ----------------------------------------------------------------------------


def _records(
    lines: LineReader,
    name: str,
    first: _Line | None,
    end: int | None,
    numbered: bool,
    prev_kind: str | None,
    limit: int,
    max_message: int | None = None,
    header: DumpHeader | None = None,
    headers: list[DumpHeader] | None = None,
) -> Iterator[DumpedMessage | RecordError]:
    """Group lines into records and yield each as it completes. ``header`` is the header line
    above the first record; each header line read after it is appended to ``headers`` and is
    the header of the records after it."""
    record: _Record | None = None
    index = 0 if numbered else -1
    first_offset = first[0] if first is not None else -1
    while True:
        if record is not None and record.error is None:
            at = lines.base + lines.pos
            data = lines.data_run(record.room())
            if data is not None:
                record.take(data, at, b"")
                prev_kind = K_HEX  # (or K_STRING: both are data lines, all that matters)
                continue
        if prev_kind not in MD_KINDS:
            block = lines.md_run()
            if block is not None:  # a message start, its whole MQMD read at once
                offset, lineno, first_line, fields = block
                if record is not None:
                    yield record.finish(name, index)
                    if numbered:
                        index += 1
                if end is not None and offset >= end:
                    return
                record = _Record(offset, lineno, first_line, max_message, header)
                record.fields = fields
                prev_kind = K_ATTR
                continue
        item = next(lines, None)
        if item is None:
            break
        offset, lineno, line, _, too_long = item
        kind = line_kind(line, too_long)
        if kind == K_IGNORED:
            found = _HEADER_LINE.match(line) if line[:1] == b"*" and not too_long else None
            if found:  # the next run's header, in a file of several concatenated
                header = _header(found, offset)
                if headers is not None:
                    headers.append(header)
            continue
        starts = kind == K_NOMD or (kind == K_ATTR and prev_kind not in MD_KINDS)
        prev_kind = kind
        if not starts and offset != first_offset:
            if record is not None and record.error is None:
                record.add(kind, line, offset, too_long, limit)
            continue
        if record is not None:
            yield record.finish(name, index)
            if numbered:
                index += 1
        if end is not None and offset >= end:
            return
        record = _Record(offset, lineno, line, max_message, header)
        if kind == K_ATTR:
            record.add(kind, line, offset, too_long, limit)
        elif kind != K_NOMD:  # the first body line is not a message start
            code, what = _orphan_error(kind)
            record.fail(code, offset, what, line)
        elif too_long:
            record.add(kind, line, offset, too_long, limit)
    if record is not None:
        final = record.finish(name, index)
        if lines.unterminated and prev_kind in DATA_KINDS and isinstance(final, DumpedMessage):
            final = replace(final, truncated=True, notes=final.notes + (NOTE_FILE_ENDS_MID_LINE,))
        yield final


@contextmanager
def open_source(source, name: str | None):
    """``source`` (a path or URI, opened through `fs`, or an open binary file) with
    the name errors report."""
    if isinstance(source, (str, os.PathLike)):
        with open_input(source) as f:
            yield f, name if name is not None else os.fspath(source)
    else:
        yield source, name if name is not None else str(getattr(source, "name", "<stream>"))


def read_dump(
    source,
    *,
    name: str | None = None,
    start: int = 0,
    end: int | None = None,
    max_line_length: int = MAX_LINE_LENGTH,
    max_message_bytes: int | None = None,
    headers: list[DumpHeader] | None = None,
) -> Iterator[DumpedMessage | RecordError]:
    """Messages (and bad records) of a dmpmqmsg/qload dump, streamed in file order.

    ``source`` is a path or a binary file object (seekable when ``start > 0``); ``name`` is
    the file name errors report. ``start``/``end`` select the records whose first line
    starts in ``[start, end)`` (see the module docstring for what a split reports). A
    message whose data grows past ``max_message_bytes`` is a ``message_too_large`` record
    (its data is dropped as soon as it passes the limit, so memory stays bounded); a file
    that ends inside a data line gives its last message ``truncated`` (note
    ``file_ends_mid_line``). Each header line the read passes (the prologue's, then those
    among its records, reading past ``end`` included) is appended to ``headers``, in file
    order, as it is read; each message's own is its ``header``.
    """
    if max_line_length < 1:
        raise ValueError("max_line_length must be positive")
    with open_source(source, name) as (f, label):
        if start <= 0:
            lines = LineReader(f, 0, 1, max_line_length)
            prologue = _scan_prologue(lines, label, headers=headers)
            if prologue.verdict is not None:
                yield prologue.verdict
                return
            if prologue.first is None:
                return
            lines.push_back(prologue.first)
            yield from _records(
                lines,
                label,
                prologue.first,
                end,
                True,
                None,
                max_line_length,
                max_message_bytes,
                prologue.header,
                headers,
            )
            return

        f.seek(0)
        prologue = _scan_prologue(LineReader(f, 0, -1, max_line_length), label, headers=headers)
        if prologue.verdict is not None or prologue.first is None:
            return  # reported by the split that starts at 0
        first_offset = prologue.first[0]
        pos = max(_align(f, start), prologue.body_start)
        if end is not None and pos >= end:
            return
        if pos <= first_offset:
            pos, prev_kind = first_offset, None
        else:
            prev_kind = _previous_kind(f, pos, prologue.body_start, max_line_length)
        lineno = 1 + newlines_between(f, start, pos)
        f.seek(pos)
        yield from _records(
            LineReader(f, pos, lineno, max_line_length),
            label,
            prologue.first,
            end,
            False,
            prev_kind,
            max_line_length,
            max_message_bytes,
            prologue.header,
            headers,
        )


def read_dump_info(source) -> DumpInfo:
    """What the dump header says (tool, version, created, qmgr, queue); empty if none."""
    with open_source(source, None) as (f, label):
        return _scan_prologue(LineReader(f, 0, 1, MAX_LINE_LENGTH), label, header_only=True).info


def plan_splits(path, target_bytes: int) -> list[tuple[int, int]]:
    """Byte ranges of about ``target_bytes`` covering the file; ``read_dump`` aligns them."""
    if target_bytes < 1:
        raise ValueError("target_bytes must be positive")
    size = file_size(path)
    if size <= target_bytes:
        return [(0, size)]
    return [(s, min(s + target_bytes, size)) for s in range(0, size, target_bytes)]
