"""The MQ message descriptor (MQMD) as the pipeline holds it, and the one text codec for its
character fields.

Character fields are kept exactly as read (trailing blanks included). `MQMD_TEXT` maps the
bytes of a character field (or of a dump file) to ``str`` and back without loss, so a
descriptor round-trips byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, overload

# Dump files and MQMD character fields are text in the writing host's code page (almost always
# ASCII/UTF-8).
# UTF-8 with surrogateescape shows UTF-8 correctly and keeps any other byte intact.
MQMD_TEXT = ("utf-8", "surrogateescape")


def text_to_bytes(text: str) -> bytes:
    return text.encode(*MQMD_TEXT)


def bytes_to_text(raw: bytes) -> str:
    return raw.decode(*MQMD_TEXT)


@overload
def stored_text(text: str) -> str: ...
@overload
def stored_text(text: None) -> None: ...
def stored_text(text: str | None) -> str | None:
    """``text`` as the tables store it (valid UTF-8, as Spark strings must be): each byte that
    was not UTF-8 in the dump (kept by ``MQMD_TEXT`` as a surrogate escape) becomes U+FFFD."""
    if text is None:
        return None
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# Field lengths of the MQMD character and byte fields (docs/message-formats.md §1).
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

    # Any: each keyword has its own field's type, which dataclasses.replace checks (mypy's plugin)
    def replace(self, **changes: Any) -> MQMD:
        return replace(self, **changes)

    def as_dict(self) -> dict[str, int | str | bytes]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


MQMD_FIELDS = tuple(f.name for f in fields(MQMD))
