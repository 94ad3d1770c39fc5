"""The records every stage passes around: an MQMD, a landed message, a bad-record report.

Character fields of an MQMD read from a dump are kept exactly as the dump holds them
(trailing blanks included); `DUMP_TEXT` is the one codec that maps dump-file bytes to
``str`` and back without loss, so a dump round-trips byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

# Dump files are text in the dumping host's code page (almost always ASCII/UTF-8).
# UTF-8 with surrogateescape shows UTF-8 correctly and keeps any other byte intact.
DUMP_TEXT = ("utf-8", "surrogateescape")


def text_to_bytes(text: str) -> bytes:
    return text.encode(*DUMP_TEXT)


def bytes_to_text(raw: bytes) -> str:
    return raw.decode(*DUMP_TEXT)


def stored_text(text: str | None) -> str | None:
    """``text`` as the tables store it (valid UTF-8, as Spark strings must be): each byte that
    was not UTF-8 in the dump (kept by ``DUMP_TEXT`` as a surrogate escape) becomes U+FFFD."""
    if text is None:
        return None
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# Field lengths of the MQMD character and byte fields (message-formats.md §1).
MQMD_CHAR_LENGTHS = {
    "format": 8,
    "reply_to_q": 48,
    "reply_to_qmgr": 48,
    "user_id": 12,
    "appl_identity_data": 32,
    "put_appl_name": 28,
    "put_date": 8,
    "put_time": 8,
    "appl_origin_data": 4,
}
MQMD_BYTE_LENGTHS = {
    "msg_id": 24,
    "correl_id": 24,
    "accounting_token": 32,
    "group_id": 24,
}


@dataclass(frozen=True, slots=True)
class MQMD:
    """The message descriptor, field by field, with MQMD_DEFAULT's values.

    Integers are plain ints; byte fields are ``bytes``; character fields are ``str``
    exactly as read (not padded, not stripped).
    """

    version: int = 1
    report: int = 0
    msg_type: int = 8  # MQMT_DATAGRAM
    expiry: int = -1  # MQEI_UNLIMITED
    feedback: int = 0
    encoding: int = 546  # MQENC_NATIVE on x86-64
    ccsid: int = 0  # MQCCSI_Q_MGR
    format: str = "        "  # MQFMT_NONE
    priority: int = -1  # MQPRI_PRIORITY_AS_Q_DEF
    persistence: int = 2  # MQPER_PERSISTENCE_AS_Q_DEF
    msg_id: bytes = b"\x00" * 24
    correl_id: bytes = b"\x00" * 24
    backout_count: int = 0
    reply_to_q: str = " " * 48
    reply_to_qmgr: str = " " * 48
    user_id: str = " " * 12
    accounting_token: bytes = b"\x00" * 32
    appl_identity_data: str = " " * 32
    put_appl_type: int = 0  # MQAT_NO_CONTEXT
    put_appl_name: str = " " * 28
    put_date: str = " " * 8
    put_time: str = " " * 8
    appl_origin_data: str = " " * 4
    group_id: bytes = b"\x00" * 24
    msg_seq_number: int = 1
    offset: int = 0
    msg_flags: int = 0
    original_length: int = -1  # MQOL_UNDEFINED

    def replace(self, **changes) -> "MQMD":
        return replace(self, **changes)

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


MQMD_FIELDS = tuple(f.name for f in fields(MQMD))


@dataclass(frozen=True, slots=True)
class DumpedMessage:
    """One message read from a dump or listing, with where it came from.

    ``md`` and ``data`` are the message; the rest locates it (``index`` is the 0-based
    position in its file, ``line`` the 1-based line of its first record, ``offset`` the
    byte offset of that line). ``truncated`` is set when the source held only part of the
    data (amqsbcg); ``total_length`` is then the real length. ``notes`` records lossy
    representations, e.g. ``"text_lines_newline_appended"`` for ``T`` lines.
    """

    md: MQMD
    data: bytes
    index: int = 0
    line: int = 0
    offset: int = 0
    truncated: bool = False
    total_length: int | None = None
    notes: tuple[str, ...] = ()

    def same_message(self, other: "DumpedMessage") -> bool:
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
    extra: dict = field(default_factory=dict)
