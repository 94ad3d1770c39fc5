"""What a dump reader yields: a message with where it came from, or a record it could not read."""

from __future__ import annotations

from dataclasses import dataclass, field

from dlq_pipeline.mq.mqmd import MQMD


@dataclass(frozen=True, slots=True)
class DumpHeader:
    """A dmpmqmsg header line (``* DMPMQMSG Version:... Created:...``): the byte offset of
    the line and its ``Created:`` stamp as written, "" when the line has none. The stamp is
    when that dump was taken, in the local time of the host that took it."""

    offset: int
    created: str = ""


@dataclass(frozen=True, slots=True)
class DumpedMessage:
    """One message read from a dump or listing, with where it came from.

    ``md`` and ``data`` are the message; the rest locates it (``index`` is the 0-based
    position in its file, ``line`` the 1-based line of its first record, ``offset`` the
    byte offset of that line). ``truncated`` is set when the source held only part of the
    data (amqsbcg); ``total_length`` is then the real length. ``notes`` records lossy
    representations, e.g. ``"text_lines_newline_appended"`` for ``T`` lines. ``header`` is
    the dump header above the message (the last one before its first line: a file of several
    dumps concatenated has several), None where there is none (a ``-dH`` dump, a listing).
    """

    md: MQMD
    data: bytes
    index: int = 0
    line: int = 0
    offset: int = 0
    truncated: bool = False
    total_length: int | None = None
    notes: tuple[str, ...] = ()
    header: DumpHeader | None = None

    def same_message(self, other: DumpedMessage) -> bool:
        """Equal as MQ messages (descriptor and data), wherever they were read from."""
        return self.md == other.md and self.data == other.data


@dataclass(frozen=True, slots=True)
class RecordError:
    """A record that could not be read. Readers yield these in place and carry on.

    ``code`` is a stable identifier (e.g. ``odd_length_hex``); ``message`` is for people.
    """

    file: str
    line: int
    offset: int
    code: str
    message: str
    snippet: str = ""
    index: int | None = None  # position the message would have had, when known

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.code}: {self.message}"


@dataclass(frozen=True, slots=True)
class DumpInfo:
    """What a dump's header says about where it came from."""

    tool: str = ""  # "DMPMQMSG" or "QLOAD" or "AMQSBCG"
    version: str = ""
    created: str = ""
    qmgr: str = ""
    queue: str = ""
    extra: dict[str, str] = field(default_factory=dict)
