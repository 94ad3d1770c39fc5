"""Writing dmpmqmsg / qload dumps (docs/message-formats.md §4): `write_dump` makes a file
that ``dmpmqmsg -o`` loads, and `DumpLayout` writes one a message at a time.
"""

from __future__ import annotations

import binascii
import datetime as _dt
import os
import re
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import cast

from dlq_pipeline.dumps.dmpmqmsg import (
    BYTE,
    CHAR,
    LONG,
    MQLONG_MAX,
    MQLONG_MIN,
    WRITE_ORDER_CHAR,
    WRITE_ORDER_HEX,
    Attribute,
)
from dlq_pipeline.dumps.records import DumpedMessage
from dlq_pipeline.mq.mqmd import MQMD, text_to_bytes

__all__ = [
    "WRITER_VERSION",
    "DATA_STYLES",
    "DumpLayout",
    "write_dump",
]

WRITER_VERSION = "9.4.0.0"

DATA_STYLES = ("hex", "text", "lines")
# both match anywhere (maybe empty): their .match() is never None
_PRINTABLE_RUN = re.compile(rb"[\x20-\x7e]*")
_UNPRINTABLE_RUN = re.compile(rb"[^\x20-\x7e]*")
_DOTS = bytes(c if 0x20 <= c <= 0x7E else 0x2E for c in range(256))


HEX_LINES_PER_WRITE = 32768  # a large body is formatted and written this many X lines at a time


@dataclass(frozen=True)
class DumpLayout:
    """How `write_dump` lays out records (see its options), usable a message at a time:
    a sink that appends to several dumps as messages arrive writes `header` once per file,
    then `write_message` for each message."""

    hex_width: int = 25
    ascii_column: bool = False
    char_context: bool = False
    data_style: str = "hex"
    index_comments: bool = False

    def __post_init__(self):
        if self.data_style not in DATA_STYLES:
            raise ValueError(f"data_style must be one of {DATA_STYLES}, not {self.data_style!r}")
        if isinstance(self.hex_width, bool) or not isinstance(self.hex_width, int) or self.hex_width < 1:
            raise ValueError(f"hex_width must be a positive integer, not {self.hex_width!r}")

    @staticmethod
    def header(qmgr: str | None = None, queue: str | None = None, created=None) -> bytes:
        lines = [f"* DMPMQMSG Version:{WRITER_VERSION} Created:{_created_text(created)}\n"]
        if qmgr is not None:
            lines.append(f"* Qmgr  = {qmgr}\n")
        if queue is not None:
            lines.append(f"* Queue = {queue}\n")
        lines.append("\n")
        return text_to_bytes("".join(lines))

    def write_message(self, out, md: MQMD, data: bytes, index: int) -> None:
        """Write the ``index``-th message (from 0) to ``out``. A large body is written in
        slices of whole X lines, so formatting it never holds more than a slice's text;
        ValueError, naming the message, if the MQMD cannot be written."""
        try:
            md_lines = _format_md(md, self.char_context)
        except ValueError as exc:
            raise ValueError(f"message {index}: {exc}") from None
        if self.index_comments:
            out.write(b"* Index %d\n" % (index + 1))
        out.write(b"".join(md_lines))
        view = memoryview(data)
        step = self.hex_width * HEX_LINES_PER_WRITE
        if self.data_style == "hex" and len(view) > step:
            for start in range(0, len(view), step):
                out.write(b"".join(_hex_lines(bytes(view[start : start + step]), self.hex_width, self.ascii_column)))
        else:
            out.write(b"".join(_DATA_WRITERS[self.data_style](bytes(view), self)))
        out.write(b"\n")


def _format_md(md: MQMD, char_context: bool) -> list[bytes]:
    """The 28 ``A`` lines of one MQMD, in dmpmqmsg's order; ValueError if one cannot be written."""
    out = []
    for attr in WRITE_ORDER_CHAR if char_context else WRITE_ORDER_HEX:
        value = getattr(md, attr.field)
        code = attr.code.encode("ascii")
        if attr.kind is LONG:
            if isinstance(value, bool) or not isinstance(value, int) or not (MQLONG_MIN <= value <= MQLONG_MAX):
                raise ValueError(f"{attr.field} must be a 4-byte signed integer, not {value!r}")
            out.append(b"A %s %d\n" % (code, value))
            continue
        if attr.kind is BYTE:
            raw = value
            if not isinstance(raw, bytes) or len(raw) != attr.length:
                raise ValueError(f"{attr.field} must be {attr.length} bytes, not {raw!r}")
        else:
            raw = _field_bytes(attr, value)
        if attr.kind is CHAR:
            if b"\x00" in raw or b"\n" in raw or raw.endswith(b"\r"):
                raise ValueError(
                    f"{attr.field} {value!r} cannot be written as a dmpmqmsg text attribute "
                    "(NUL, newline or a trailing CR)"
                    + ("; write it as hex (char_context=False)" if attr.code in ("AID", "AOD") else "")
                )
            out.append(b"A %s %s\n" % (code, raw))
        else:
            out.append(b"A %s %s\n" % (code, binascii.b2a_hex(raw).upper()))
    return out


def _field_bytes(attr: Attribute, value) -> bytes:
    if not isinstance(value, str):
        raise ValueError(f"{attr.field} must be a str, not {value!r}")
    try:
        raw = text_to_bytes(value)
    except UnicodeEncodeError as exc:
        raise ValueError(f"{attr.field} {value!r} is not representable: {exc}") from None
    if len(raw) > attr.length:
        raise ValueError(f"{attr.field} {value!r} is longer than its {attr.length} bytes")
    return raw


def _hex_lines(data: bytes, width: int, ascii_column: bool) -> list[bytes]:
    """``X`` lines as dmpmqmsg writes them (``-da`` adds the ``<...>`` column)."""
    if not data:
        return [b"X \n"]
    out = []
    for i in range(0, len(data), width):
        chunk = data[i : i + width]
        line = b"X " + binascii.b2a_hex(chunk).upper()
        if ascii_column:
            line += b"  " * (width + 1 - len(chunk)) + b"<" + chunk.translate(_DOTS) + b">"
        out.append(line + b"\n")
    return out


def _string_lines(text: bytes, width: int) -> list[bytes]:
    """``S`` lines of up to 2*width-2 characters, ``"`` and ``~`` escaped with ``~``."""
    if not text:
        return [b"S \n"]
    per_line = max(2 * width - 2, 1)
    out = []
    for i in range(0, len(text), per_line):
        chunk = text[i : i + per_line].replace(b"~", b"~~").replace(b'"', b'~"')
        out.append(b'S "' + chunk + b'"\n')
    return out


def _printable_mix(data: bytes, opts: DumpLayout) -> list[bytes]:
    """``-dp``: runs of printable characters as ``S`` lines, everything else as ``X`` lines."""
    out: list[bytes] = []
    pos, size, first = 0, len(data), True
    while True:
        stop = cast(re.Match[bytes], _PRINTABLE_RUN.match(data, pos)).end()
        if stop > pos or first:
            out += _string_lines(data[pos:stop], opts.hex_width)
        pos = stop
        if pos >= size:
            return out
        stop = cast(re.Match[bytes], _UNPRINTABLE_RUN.match(data, pos)).end()
        out += _hex_lines(data[pos:stop], opts.hex_width, opts.ascii_column)
        pos = stop
        if pos >= size:
            return out
        first = False


def _text_line_mix(data: bytes, opts: DumpLayout) -> list[bytes]:
    """``-dt``: printable lines as ``T`` lines (their terminator dropped), the rest as hex.

    Lossy on reading back: every ``T`` line gains ``\\n``, so CR LF, LF CR and CR become
    LF, a last line without a terminator gains one, an empty body becomes ``\\n``, and text
    directly followed by an unprintable byte gains a ``\\n`` before it.
    """
    out: list[bytes] = []
    pos, size, first = 0, len(data), True
    while True:
        stop = cast(re.Match[bytes], _PRINTABLE_RUN.match(data, pos)).end()
        at_newline = stop < size and data[stop] in (0x0A, 0x0D)
        if stop > pos or first or at_newline:
            out.append(b"T " + data[pos:stop] + b"\n")
        first = False
        pos = stop
        if pos >= size:
            return out
        if at_newline:
            pair = 0x0D if data[pos] == 0x0A else 0x0A
            pos += 1
            if pos < size and data[pos] == pair:
                pos += 1
            if pos >= size:
                return out
            continue
        stop = cast(re.Match[bytes], _UNPRINTABLE_RUN.match(data, pos)).end()
        out += _hex_lines(data[pos:stop], opts.hex_width, opts.ascii_column)
        pos = stop
        if pos >= size:
            return out


_DATA_WRITERS = {
    "hex": lambda data, o: _hex_lines(data, o.hex_width, o.ascii_column),
    "text": _printable_mix,
    "lines": _text_line_mix,
}


def _created_text(created) -> str:
    if created is None:
        created = _dt.datetime.now()
    return created.ctime() if isinstance(created, (_dt.datetime, _dt.date)) else str(created)


@contextmanager
def _open_target(target):
    if isinstance(target, (str, os.PathLike)):
        from dlq_pipeline.runtime.permissions import open_private

        with open_private(target, "wb") as f:  # dumps hold message bodies: owner-only
            yield f
    else:
        yield target


def write_dump(
    messages: Iterable[DumpedMessage | tuple[MQMD, bytes]],
    target,
    *,
    qmgr: str | None = None,
    queue: str | None = None,
    hex_width: int = 25,
    ascii_column: bool = False,
    char_context: bool = False,
    index_comments: bool = False,
    data_style: str = "hex",
    created=None,
) -> int:
    """Write a dump that ``dmpmqmsg -o QUEUE -f FILE`` loads (default context mode -CA).

    ``target`` is a path or a binary file object. The layout is dmpmqmsg's: header, the 28
    ``A`` lines per message (``AIX``/``AOX`` hex, or ``AID``/``AOD`` text with
    ``char_context`` like ``-dc``), data lines, a blank line. ``data_style`` "hex" writes
    ``X`` lines (``-dw`` width ``hex_width``, ``-da`` column with ``ascii_column``), "text"
    mixes ``S`` and ``X`` lines like ``-dp``, "lines" writes ``T`` lines like ``-dt`` (lossy,
    see ``_text_line_mix``). ``created`` (datetime or text) fixes the header time for
    reproducible output. An empty character field is written as an empty value, which
    reads (and loads) back as the field's default. Returns the number of messages written;
    a field that cannot be written raises ValueError naming the message.
    """
    layout = DumpLayout(hex_width, ascii_column, char_context, data_style, index_comments)
    count = 0
    with _open_target(target) as out:
        out.write(layout.header(qmgr, queue, created))
        for item in messages:
            md, data = (item.md, item.data) if isinstance(item, DumpedMessage) else item
            layout.write_message(out, md, data, count)
            count += 1
    return count
