"""MQ header structures byte for byte: MQMD, MQDLH, MQXQH, MQMDE, MQRFH2 (fixed part), MQTM.

A dead letter's headers are in the byte order and character set of whoever wrote them
(z/OS: big-endian EBCDIC), not the reader's. So every integer is read in the byte order
named by the Encoding of the *preceding* structure and every character field in its CCSID
(docs/message-formats.md §2-3); nothing here assumes the host's byte order.

Two MQDLH decoders agree exactly, column for column: `decode_dlh` (one message, follows the
header chain) and `decode_dlh_batch` (numpy, for the Spark pandas UDF), which decodes the
common rows with array operations and hands the rest to `decode_dlh`.

Characters go only through `codepages`; format names only through `constants`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, cast

import numpy as np

from dlq_pipeline.errors import DlqPipelineError
from dlq_pipeline.mq import codepages, constants
from dlq_pipeline.mq.mqmd import MQMD, MQMD_BYTE_LENGTHS, MQMD_CHAR_LENGTHS

if TYPE_CHECKING:
    import pyarrow as pa  # imported where used: a message's decode needs no Arrow

__all__ = [
    "CHAIN_SCAN_LIMIT",
    "DECODE_COLUMNS",
    "DLH_LENGTH",
    "dlh_head",
    "MQMD_V1_LENGTH",
    "MQMD_V2_LENGTH",
    "XQH_LENGTH",
    "MDE_LENGTH",
    "RFH2_FIXED_LENGTH",
    "TM_LENGTH",
    "StructureError",
    "DeadLetterHeader",
    "TransmissionQueueHeader",
    "MessageDescriptorExtension",
    "RulesFormattingHeader2",
    "TriggerMessage",
    "HeaderResult",
    "byte_order",
    "decode_mqmd",
    "encode_mqmd",
    "decode_dlh",
    "encode_dlh",
    "decode_xqh",
    "encode_xqh",
    "decode_mde",
    "encode_mde",
    "decode_rfh2",
    "encode_rfh2",
    "decode_tm",
    "encode_tm",
    "to_columns",
    "decode_dlh_batch",
    "decode_dlh_arrow",
    "decode_arrow_schema",
    "chain_format_prefixes",
    "chain_possible",
    "chain_format_offset",
]

# The decoder never looks further into a message than this: the Spark stage ships only this
# slice into Python, so the scalar decoder must not see more than the batch decoder does.
CHAIN_SCAN_LIMIT = 4096

DLH_LENGTH = 172
MQMD_V1_LENGTH = 324
MQMD_V2_LENGTH = 364
XQH_LENGTH = 428
MDE_LENGTH = 72
RFH2_FIXED_LENGTH = 36
TM_LENGTH = 684

# MQCCSI_INHERIT in a header's CodedCharSetId: what follows is in this header's own CCSID.
MQCCSI_INHERIT = -2
# Not a code page (MQCCSI_Q_MGR), so codepages decodes only invariant characters with it:
# what we use when the StrucId proves the CCSID we were given wrong.
_NO_CCSID = 0

# The decode columns of data/schemas/decoded.json, in schema order.
DECODE_COLUMNS = (
    "has_dlh",
    "dlh_problem",
    "dlh_reason",
    "dlh_dest_q",
    "dlh_dest_qmgr",
    "dlh_encoding",
    "dlh_ccsid",
    "dlh_format",
    "dlh_put_appl_type",
    "dlh_put_appl_name",
    "dlh_put_date",
    "dlh_put_time",
    "dlh_chain",
    "decode_flags",
)


def _format_name(constant: str) -> str:
    return constants.MQFMT[constant].rstrip(" ")


_FMT_DEAD = _format_name("MQFMT_DEAD_LETTER_HEADER")
_FMT_XMIT = _format_name("MQFMT_XMIT_Q_HEADER")
_FMT_RFH2 = _format_name("MQFMT_RF_HEADER_2")
_FMT_MDE = _format_name("MQFMT_MD_EXTENSION")
_FMT_TRIGGER = _format_name("MQFMT_TRIGGER")


class StructureError(DlqPipelineError, ValueError):
    """Bytes that are not the structure they should be. Says which structure, the byte
    offset within it and what is wrong, so a caller can add the file and message."""

    def __init__(self, structure: str, offset: int, problem: str):
        super().__init__(f"{structure} at byte {offset}: {problem}")
        self.structure = structure
        self.offset = offset
        self.problem = problem


# ---------------------------------------------------------------------------------------
# Layouts. Every structure here starts with StrucId (4 characters) and Version (MQLONG);
# the rest is listed as (attribute, kind, length) and offsets follow from the order.

_LONG, _CHAR, _BYTES = "long", "char", "bytes"
_Field = tuple[str, str, int, int]  # (attribute, kind, offset, length)
# What structures are read from: a message's bytes, or a view of them
_Raw = bytes | bytearray | memoryview
_T = TypeVar("_T")


@dataclass(frozen=True)
class _Layout:
    name: str
    strucid: str
    versions: tuple[int, ...]
    fields: tuple[_Field, ...]
    length: int


def _layout(
    name: str, strucid: str, versions: tuple[int, ...], spec: Iterable[tuple[str, str, int]], start: int = 8
) -> _Layout:
    placed, offset = [], start
    for attribute, kind, length in spec:
        placed.append((attribute, kind, offset, length))
        offset += length
    return _Layout(name, strucid, versions, tuple(placed), offset)


def _md_char(name: str) -> tuple[str, str, int]:
    return (name, _CHAR, MQMD_CHAR_LENGTHS[name])


def _md_bytes(name: str) -> tuple[str, str, int]:
    return (name, _BYTES, MQMD_BYTE_LENGTHS[name])


_MQMD_V1_SPEC = (
    ("report", _LONG, 4),
    ("msg_type", _LONG, 4),
    ("expiry", _LONG, 4),
    ("feedback", _LONG, 4),
    ("encoding", _LONG, 4),
    ("ccsid", _LONG, 4),
    _md_char("format"),
    ("priority", _LONG, 4),
    ("persistence", _LONG, 4),
    _md_bytes("msg_id"),
    _md_bytes("correl_id"),
    ("backout_count", _LONG, 4),
    _md_char("reply_to_q"),
    _md_char("reply_to_qmgr"),
    _md_char("user_id"),
    _md_bytes("accounting_token"),
    _md_char("appl_identity_data"),
    ("put_appl_type", _LONG, 4),
    _md_char("put_appl_name"),
    _md_char("put_date"),
    _md_char("put_time"),
    _md_char("appl_origin_data"),
)
_MQMD_V2_SPEC = _MQMD_V1_SPEC + (
    _md_bytes("group_id"),
    ("msg_seq_number", _LONG, 4),
    ("offset", _LONG, 4),
    ("msg_flags", _LONG, 4),
    ("original_length", _LONG, 4),
)
_MQMD_V1 = _layout("MQMD", "MD  ", (1, 2), _MQMD_V1_SPEC)
_MQMD_V2 = _layout("MQMD", "MD  ", (1, 2), _MQMD_V2_SPEC)
_DLH = _layout(
    "MQDLH",
    "DLH ",
    (1,),
    (
        ("reason", _LONG, 4),
        ("dest_q", _CHAR, 48),
        ("dest_qmgr", _CHAR, 48),
        ("encoding", _LONG, 4),
        ("ccsid", _LONG, 4),
        ("format", _CHAR, 8),
        ("put_appl_type", _LONG, 4),
        ("put_appl_name", _CHAR, 28),
        ("put_date", _CHAR, 8),
        ("put_time", _CHAR, 8),
    ),
)
_XQH_NAMES = _layout("MQXQH", "XQH ", (1,), (("remote_q", _CHAR, 48), ("remote_qmgr", _CHAR, 48)))
_XQH_MD_OFFSET = _XQH_NAMES.length  # the embedded version-1 MQMD follows the names
_XQH = replace(_XQH_NAMES, length=_XQH_MD_OFFSET + MQMD_V1_LENGTH)
_MDE = _layout(
    "MQMDE",
    "MDE ",
    (2,),
    (
        ("struc_length", _LONG, 4),
        ("encoding", _LONG, 4),
        ("ccsid", _LONG, 4),
        ("format", _CHAR, 8),
        ("flags", _LONG, 4),
        ("group_id", _BYTES, 24),
        ("msg_seq_number", _LONG, 4),
        ("offset", _LONG, 4),
        ("msg_flags", _LONG, 4),
        ("original_length", _LONG, 4),
    ),
)
_RFH2 = _layout(
    "MQRFH2",
    "RFH ",
    (2,),
    (
        ("struc_length", _LONG, 4),
        ("encoding", _LONG, 4),
        ("ccsid", _LONG, 4),
        ("format", _CHAR, 8),
        ("flags", _LONG, 4),
        ("name_value_ccsid", _LONG, 4),
    ),
)
_TM = _layout(
    "MQTM",
    "TM  ",
    (1,),
    (
        ("q_name", _CHAR, 48),
        ("process_name", _CHAR, 48),
        ("trigger_data", _CHAR, 64),
        ("appl_type", _LONG, 4),
        ("appl_id", _CHAR, 256),
        ("env_data", _CHAR, 128),
        ("user_data", _CHAR, 128),
    ),
)

assert (_MQMD_V1.length, _MQMD_V2.length, _DLH.length) == (MQMD_V1_LENGTH, MQMD_V2_LENGTH, DLH_LENGTH)
assert (_XQH.length, _MDE.length, _RFH2.length, _TM.length) == (XQH_LENGTH, MDE_LENGTH, RFH2_FIXED_LENGTH, TM_LENGTH)


# ---------------------------------------------------------------------------------------
# The structures


@dataclass(frozen=True, slots=True)
class DeadLetterHeader:
    """MQDLH version 1. Character fields are decoded and kept at full field length, blanks
    and NULs as they are, because rule matching needs them. Defaults are MQDLH_DEFAULT's."""

    reason: int = 0
    dest_q: str = " " * 48
    dest_qmgr: str = " " * 48
    encoding: int = 0
    ccsid: int = 0
    format: str = " " * 8
    put_appl_type: int = 0
    put_appl_name: str = " " * 28
    put_date: str = " " * 8
    put_time: str = " " * 8


@dataclass(frozen=True, slots=True)
class TransmissionQueueHeader:
    """MQXQH: a message on a transmission queue. ``md`` is the embedded version-1 MQMD,
    whose Encoding, CCSID and Format describe what follows the MQXQH (it has no room for
    the version-2 fields; the queue manager puts those in an MQMDE after it)."""

    remote_q: str = " " * 48
    remote_qmgr: str = " " * 48
    md: MQMD = MQMD()


@dataclass(frozen=True, slots=True)
class MessageDescriptorExtension:
    """MQMDE version 2: the version-2 MQMD fields for messages carrying a version-1 MQMD."""

    struc_length: int = MDE_LENGTH
    encoding: int = 0
    ccsid: int = 0
    format: str = " " * 8
    flags: int = 0
    group_id: bytes = b"\x00" * 24
    msg_seq_number: int = 1
    offset: int = 0
    msg_flags: int = 0
    original_length: int = -1


@dataclass(frozen=True, slots=True)
class RulesFormattingHeader2:
    """MQRFH2 fixed part (36 bytes). ``struc_length`` includes the folders, so the next
    part starts ``struc_length`` bytes after the MQRFH2's first byte."""

    struc_length: int = RFH2_FIXED_LENGTH
    encoding: int = 0
    ccsid: int = MQCCSI_INHERIT
    format: str = " " * 8
    flags: int = 0
    name_value_ccsid: int = 1208


@dataclass(frozen=True, slots=True)
class TriggerMessage:
    """MQTM version 1, a trigger message: the end of a header chain (it names no Format)."""

    q_name: str = " " * 48
    process_name: str = " " * 48
    trigger_data: str = " " * 64
    appl_type: int = 0
    appl_id: str = " " * 256
    env_data: str = " " * 128
    user_data: str = " " * 128


@dataclass(frozen=True, slots=True)
class HeaderResult:
    """What `decode_dlh` found. ``problem`` is None when the MQDLH is usable, else:

    - ``too_short``: fewer than 172 bytes (even fewer than 8, so no Version to read);
    - ``bad_strucid``: the data does not start with 'DLH ' (or a prefix of it, when shorter
      than 4 bytes) in ASCII or EBCDIC;
    - ``bad_version``: the Encoding names a byte order and Version does not read 1 in it;
    - ``unknown_encoding``: the Encoding names no byte order and Version reads 1 neither way.

    Checks run in that order of evidence: StrucId, then Version, then length, so a short
    text message is ``bad_strucid`` and a truncated MQDLH is ``too_short``. A truncated
    MQDLH whose StrucId and Version were read (a listing cut by hand) still has ``dlh``:
    the fields whose bytes are all there, None for the others, for people to see; it is
    not usable (``has_dlh`` false), so no rule matches it and nothing removes it. ``chain`` names
    the formats after the MQDLH, stripped (``("MQXMIT", "MQSTR")``; ``""`` is MQFMT_NONE).
    ``flags`` are data-quality notes, in this order:

    - ``unknown_ccsid`` (only invariant characters decoded) or ``ccsid_mismatch`` (the
      StrucId is in the other character-set family than the CCSID; decoded by the StrucId's
      family, invariant characters only);
    - ``byte_order_sniffed``: the Encoding named no byte order, Version decided it;
    - ``nul_padded:<field>``: that character field holds NUL bytes (IBM says pad with blanks);
    - ``dlh_without_mqdead``: a usable MQDLH although MQMD.Format is not MQDEAD;
      ``mqdead_without_dlh``: MQMD.Format is MQDEAD but there is no usable MQDLH;
    - ``byte_order_mismatch``: with ``bad_version``, Version does read 1 in the other order;
    - ``chain_stopped:<format>``: the chain names that header but it could not be read (bad
      StrucId/Version/length, or beyond the CHAIN_SCAN_LIMIT bytes looked at).
    """

    has_dlh: bool
    problem: str | None
    dlh: DeadLetterHeader | None
    chain: tuple[str, ...]
    flags: tuple[str, ...]


# ---------------------------------------------------------------------------------------
# Byte order and character set


def byte_order(encoding: int) -> str | None:
    """'>' or '<' from an MQ Encoding's integer part (1 normal, 2 reversed); None when it
    does not say (0 or an undefined value), and Version has to decide."""
    return {1: ">", 2: "<"}.get(int(encoding) & 0x0F)


_ENDIAN: dict[str, Literal["big", "little"]] = {">": "big", "<": "little"}


def _long(raw: _Raw, offset: int, order: str) -> int:
    return int.from_bytes(raw[offset : offset + 4], _ENDIAN[order], signed=True)


def _choose_order(raw: _Raw, encoding: int | None, versions: tuple[int, ...]) -> tuple[str | None, str | None, bool]:
    """(order, problem, sniffed). The Encoding decides when it names a byte order;
    otherwise exactly one reading of Version must be valid."""
    declared = byte_order(encoding) if encoding is not None else None
    if declared is not None:
        if _long(raw, 4, declared) in versions:
            return declared, None, False
        return declared, "bad_version", False
    valid = [order for order in (">", "<") if _long(raw, 4, order) in versions]
    if len(valid) == 1:
        return valid[0], None, True
    return None, "unknown_encoding", False


def _order_for_encode(encoding: int) -> str:
    order = byte_order(encoding)
    if order is None:
        raise ValueError(f"Encoding {encoding} does not name a byte order (integer part must be 1 or 2)")
    return order


@functools.cache
def _strucid_bytes(strucid: str, ebcdic: bool) -> bytes:
    # StrucIds are invariant characters: any ASCII or EBCDIC table spells them the same.
    return codepages.encode(strucid, 500 if ebcdic else 819)


def _strucid_family(raw: _Raw, strucid: str) -> bool | None:
    """True for EBCDIC, False for ASCII, None when the bytes are neither spelling."""
    head = bytes(raw[:4])
    if head == _strucid_bytes(strucid, False):
        return False
    if head == _strucid_bytes(strucid, True):
        return True
    return None


@functools.cache
def _ccsid_reads(ccsid: int, strucid: str, ebcdic: bool) -> bool:
    """Whether ``ccsid`` decodes this family's StrucId bytes as the StrucId."""
    return codepages.decode(_strucid_bytes(strucid, ebcdic), ccsid)[0] == strucid


def _text(raw: _Raw, ccsid: int, ebcdic: bool | None = None) -> str:
    return codepages.decode(bytes(raw), ccsid, ebcdic=ebcdic)[0]


def _encode_chars(text: str, length: int, ccsid: int, where: str) -> bytes:
    raw = codepages.encode(text, ccsid)
    if len(raw) > length:
        raise ValueError(f"{where}: {text!r} is {len(raw)} bytes in CCSID {ccsid}; the field holds {length}")
    blank = codepages.encode(" ", ccsid)
    padded = raw + blank * ((length - len(raw)) // len(blank))
    if len(padded) != length:
        raise ValueError(f"{where}: cannot pad {text!r} to {length} bytes with blanks in CCSID {ccsid}")
    return padded


# ---------------------------------------------------------------------------------------
# Generic strict decode/encode over a layout


# Any: int, str or bytes by field, for ``**`` into a structure (mypy checks ** values against every field)
def _read_fields(
    layout_fields: Iterable[_Field], raw: _Raw, order: str, ccsid: int, ebcdic: bool | None
) -> dict[str, Any]:
    values: dict[str, int | str | bytes] = {}
    for attribute, kind, offset, length in layout_fields:
        chunk = raw[offset : offset + length]
        if kind == _LONG:
            values[attribute] = int.from_bytes(chunk, _ENDIAN[order], signed=True)
        elif kind == _CHAR:
            values[attribute] = _text(chunk, ccsid, ebcdic)
        else:
            values[attribute] = bytes(chunk)
    return values


def _write_fields(
    layout: _Layout,
    layout_fields: Iterable[_Field],
    values: Mapping[str, int | str | bytes],
    out: bytearray,
    order: str,
    ccsid: int,
) -> None:
    # each value has the type its kind says: the layouts are those of the structures' fields
    for attribute, kind, offset, length in layout_fields:
        value = values[attribute]
        where = f"{layout.name}.{attribute}"
        if kind == _LONG:
            number = cast(int, value)
            if not -(2**31) <= number < 2**31:
                raise ValueError(f"{where}: {number} does not fit an MQLONG")
            out[offset : offset + 4] = number.to_bytes(4, _ENDIAN[order], signed=True)
        elif kind == _CHAR:
            out[offset : offset + length] = _encode_chars(cast(str, value), length, ccsid, where)
        else:
            data = cast(bytes, value)
            if len(data) > length:
                raise ValueError(f"{where}: {len(data)} bytes; the field holds {length}")
            out[offset : offset + length] = bytes(data).ljust(length, b"\x00")


def _open(layout: _Layout, raw: _Raw, encoding: int | None, ccsid: int | None) -> tuple[str, bool, int, int]:
    """Check StrucId, Version and length; returns (order, ebcdic, ccsid, version). The CCSID
    defaults by family (819 or 500) when the caller cannot know it."""
    name = layout.name
    if len(raw) < 4:
        raise StructureError(name, 0, f"needs {layout.length} bytes, got {len(raw)}")
    ebcdic = _strucid_family(raw, layout.strucid)
    if ebcdic is None:
        raise StructureError(
            name, 0, f"StrucId is {bytes(raw[:4]).hex().upper()}, not {layout.strucid!r} in ASCII or EBCDIC"
        )
    if ccsid is None:
        ccsid = 500 if ebcdic else 819
    if codepages.is_known(ccsid) and not _ccsid_reads(ccsid, layout.strucid, ebcdic):
        family = "EBCDIC" if ebcdic else "ASCII"
        raise StructureError(name, 0, f"StrucId is {family} but CCSID {ccsid} is not")
    if len(raw) < 8:
        raise StructureError(name, 4, f"needs {layout.length} bytes, got {len(raw)}")
    order, problem, _ = _choose_order(raw, encoding, layout.versions)
    if problem == "bad_version":
        raise StructureError(
            name,
            4,
            f"Version reads {_long(raw, 4, cast(str, order))} in byte order of Encoding "  # the one it names
            f"{encoding}; expected {' or '.join(map(str, layout.versions))}",
        )
    if problem:
        raise StructureError(
            name,
            4,
            f"Encoding {encoding} names no byte order and Version reads "
            f"{' or '.join(map(str, layout.versions))} neither way",
        )
    if len(raw) < layout.length:
        raise StructureError(name, len(raw), f"needs {layout.length} bytes, got {len(raw)}")
    order = cast(str, order)  # no problem: _choose_order chose the order
    return order, ebcdic, ccsid, _long(raw, 4, order)


def _begin(layout: _Layout, version: int, order: str, ccsid: int) -> bytearray:
    out = bytearray(layout.length)
    out[0:4] = _encode_chars(layout.strucid, 4, ccsid, f"{layout.name}.StrucId")
    out[4:8] = version.to_bytes(4, _ENDIAN[order], signed=True)
    return out


def _decode_simple(layout: _Layout, cls: Callable[..., _T], raw: _Raw, encoding: int | None, ccsid: int | None) -> _T:
    order, ebcdic, ccsid, _ = _open(layout, raw, encoding, ccsid)
    return cls(**_read_fields(layout.fields, raw, order, ccsid, ebcdic))


def _encode_simple(
    layout: _Layout,
    obj: DeadLetterHeader | MessageDescriptorExtension | RulesFormattingHeader2 | TriggerMessage,
    encoding: int,
    ccsid: int,
) -> bytes:
    order = _order_for_encode(encoding)
    out = _begin(layout, layout.versions[0], order, ccsid)
    _write_fields(layout, layout.fields, asdict(obj), out, order, ccsid)
    return bytes(out)


# ---------------------------------------------------------------------------------------
# MQMD


def decode_mqmd(raw: bytes, encoding: int | None = None, ccsid: int | None = None) -> MQMD:
    """An MQMD (v1: 324 bytes, v2: 364) from the start of ``raw``. ``encoding``/``ccsid``
    are those of the MQMD itself (the queue manager's), not its Encoding/CodedCharSetId
    fields, which describe the data. ``encoding=None`` decides the byte order by Version;
    ``ccsid=None`` takes 819 or 500 by the StrucId's family. Raises StructureError."""
    order, ebcdic, ccsid, version = _open(_MQMD_V1, raw, encoding, ccsid)
    layout = _MQMD_V2 if version >= 2 else _MQMD_V1
    if len(raw) < layout.length:
        raise StructureError("MQMD", len(raw), f"version {version} needs {layout.length} bytes, got {len(raw)}")
    return MQMD(version=version, **_read_fields(layout.fields, raw, order, ccsid, ebcdic))


def encode_mqmd(md: MQMD, encoding: int, ccsid: int) -> bytes:
    """324 bytes for a version-1 MQMD (its version-2 fields are not part of it), 364 for
    version 2; character fields blank-padded to their length."""
    if md.version not in (1, 2):
        raise ValueError(f"MQMD.version {md.version}: only 1 and 2 exist")
    layout = _MQMD_V2 if md.version == 2 else _MQMD_V1
    order = _order_for_encode(encoding)
    out = _begin(layout, md.version, order, ccsid)
    _write_fields(layout, layout.fields, md.as_dict(), out, order, ccsid)
    return bytes(out)


# ---------------------------------------------------------------------------------------
# MQXQH, MQMDE, MQRFH2, MQTM


def decode_xqh(raw: bytes, encoding: int | None, ccsid: int | None) -> TransmissionQueueHeader:
    """MQXQH (428 bytes). The embedded MQMD is in the MQXQH's own encoding and CCSID; its
    Version is kept as written but only its version-1 fields exist. Raises StructureError."""
    order, ebcdic, ccsid, _ = _open(_XQH, raw, encoding, ccsid)
    names = _read_fields(_XQH.fields, raw, order, ccsid, ebcdic)
    md_raw = raw[_XQH_MD_OFFSET:XQH_LENGTH]
    if _strucid_family(md_raw, "MD  ") is not ebcdic:
        raise StructureError(
            "MQXQH", _XQH_MD_OFFSET, f"embedded MQMD StrucId is {bytes(md_raw[:4]).hex().upper()}, not 'MD  '"
        )
    md_version = _long(md_raw, 4, order)
    md = MQMD(version=md_version, **_read_fields(_MQMD_V1.fields, md_raw, order, ccsid, ebcdic))
    return TransmissionQueueHeader(md=md, **names)


def encode_xqh(xqh: TransmissionQueueHeader, encoding: int, ccsid: int) -> bytes:
    """428 bytes; the embedded MQMD is written in its version-1 layout."""
    order = _order_for_encode(encoding)
    out = _begin(_XQH, 1, order, ccsid)
    _write_fields(_XQH, _XQH.fields, {"remote_q": xqh.remote_q, "remote_qmgr": xqh.remote_qmgr}, out, order, ccsid)
    md = bytearray(_begin(_MQMD_V1, xqh.md.version, order, ccsid))
    _write_fields(_MQMD_V1, _MQMD_V1.fields, xqh.md.as_dict(), md, order, ccsid)
    out[_XQH_MD_OFFSET:] = md
    return bytes(out)


def decode_mde(raw: bytes, encoding: int | None, ccsid: int | None) -> MessageDescriptorExtension:
    """MQMDE (72 bytes); StrucLength below 72 is an error. Raises StructureError."""
    mde = _decode_simple(_MDE, MessageDescriptorExtension, raw, encoding, ccsid)
    if mde.struc_length < MDE_LENGTH:
        raise StructureError("MQMDE", 8, f"StrucLength {mde.struc_length} is less than {MDE_LENGTH}")
    return mde


def encode_mde(mde: MessageDescriptorExtension, encoding: int, ccsid: int) -> bytes:
    return _encode_simple(_MDE, mde, encoding, ccsid)


def decode_rfh2(raw: bytes, encoding: int | None, ccsid: int | None) -> RulesFormattingHeader2:
    """The 36-byte fixed part of an MQRFH2; StrucLength below 36 is an error (the folders
    are not decoded). Raises StructureError."""
    rfh2 = _decode_simple(_RFH2, RulesFormattingHeader2, raw, encoding, ccsid)
    if rfh2.struc_length < RFH2_FIXED_LENGTH:
        raise StructureError("MQRFH2", 8, f"StrucLength {rfh2.struc_length} is less than {RFH2_FIXED_LENGTH}")
    return rfh2


def encode_rfh2(rfh2: RulesFormattingHeader2, encoding: int, ccsid: int) -> bytes:
    """The 36-byte fixed part only; the caller appends the folders StrucLength counts."""
    return _encode_simple(_RFH2, rfh2, encoding, ccsid)


def decode_tm(raw: bytes, encoding: int | None, ccsid: int | None) -> TriggerMessage:
    """MQTM (684 bytes). Raises StructureError."""
    return _decode_simple(_TM, TriggerMessage, raw, encoding, ccsid)


def encode_tm(tm: TriggerMessage, encoding: int, ccsid: int) -> bytes:
    return _encode_simple(_TM, tm, encoding, ccsid)


def encode_dlh(dlh: DeadLetterHeader, encoding: int, ccsid: int) -> bytes:
    """172 bytes of MQDLH version 1, integers in ``encoding``'s byte order, characters in
    ``ccsid``, blank-padded to their field length."""
    return _encode_simple(_DLH, dlh, encoding, ccsid)


def _decode_dlh_strict(raw: _Raw, encoding: int | None, ccsid: int | None) -> DeadLetterHeader:
    return _decode_simple(_DLH, DeadLetterHeader, raw, encoding, ccsid)


# ---------------------------------------------------------------------------------------
# MQDLH with diagnosis, and the header chain

# The DLH character fields: (attribute, offset, length), in layout order.
_DLH_CHARS = tuple((a, o, n) for a, kind, o, n in _DLH.fields if kind == _CHAR)
_DLH_LONGS = tuple((a, o) for a, kind, o, _n in _DLH.fields if kind == _LONG)
_DLH_FORMAT_OFFSET, _DLH_FORMAT_LENGTH = next((o, n) for a, o, n in _DLH_CHARS if a == "format")
_DLH_ENCODING_OFFSET, _DLH_CCSID_OFFSET = (dict(_DLH_LONGS)[a] for a in ("encoding", "ccsid"))
_DLH_ASCII = _strucid_bytes("DLH ", False)
_DLH_EBCDIC = _strucid_bytes("DLH ", True)


_DLH_VERSION_END = 8  # StrucId and Version: what must be there to judge anything else


def _dlh_problem(data: bytes, encoding: int) -> tuple[str | None, str | None, bool]:
    """(problem, order, sniffed) for the first bytes of a message."""
    head = data[:4]
    if not (_DLH_ASCII.startswith(head) or _DLH_EBCDIC.startswith(head)):
        return "bad_strucid", None, False
    if len(data) < _DLH_VERSION_END:
        return "too_short", None, False
    order, problem, sniffed = _choose_order(data, encoding, (1,))
    if problem:
        return problem, order, False
    if len(data) < DLH_LENGTH:
        return "too_short", order, sniffed
    return None, order, sniffed


def _charset_flag(ccsid: int, ebcdic: bool) -> str | None:
    if not codepages.is_known(ccsid):
        return "unknown_ccsid"
    if not _ccsid_reads(ccsid, "DLH ", ebcdic):
        return "ccsid_mismatch"
    return None


def _is_mqdead(md_format: str | None) -> bool | None:
    if md_format is None:
        return None
    return md_format.rstrip(" \x00") == _FMT_DEAD


def _chain_fields(layout: _Layout) -> tuple[_Field, ...]:
    return tuple(f for f in layout.fields if f[0] in ("struc_length", "encoding", "ccsid", "format"))


# What the chain needs of each header: its checks (`_open`, and those of decode_xqh/_mde/
# _rfh2) and the fields that say what follows, nothing else: reading every MQMD field of
# an MQXQH was most of the decode cost of a transmission-queue dead letter.
_NEXT_FIELDS = {layout.name: _chain_fields(layout) for layout in (_DLH, _MDE, _RFH2, _MQMD_V1)}


def _next_after(name: str, raw: _Raw, encoding: int, ccsid: int) -> tuple[int, int, int, str] | None:
    """(length, encoding, ccsid, format) of the part after header ``name``; None when the
    header ends the chain. Raises StructureError exactly when decoding that header would."""
    if name == _FMT_TRIGGER:
        _open(_TM, raw, encoding, ccsid)  # MQTM: validated, and nothing follows it
        return None
    if name == _FMT_XMIT:
        order, ebcdic, ccsid, _ = _open(_XQH, raw, encoding, ccsid)
        md_raw = raw[_XQH_MD_OFFSET:XQH_LENGTH]
        if _strucid_family(md_raw, "MD  ") is not ebcdic:
            raise StructureError(
                "MQXQH", _XQH_MD_OFFSET, f"embedded MQMD StrucId is {bytes(md_raw[:4]).hex().upper()}, not 'MD  '"
            )
        md = _read_fields(_NEXT_FIELDS["MQMD"], md_raw, order, ccsid, ebcdic)
        return XQH_LENGTH, md["encoding"], md["ccsid"], md["format"]
    layout, minimum = {_FMT_DEAD: (_DLH, None), _FMT_RFH2: (_RFH2, RFH2_FIXED_LENGTH), _FMT_MDE: (_MDE, MDE_LENGTH)}[
        name
    ]
    order, ebcdic, ccsid, _ = _open(layout, raw, encoding, ccsid)
    values = _read_fields(_NEXT_FIELDS[layout.name], raw, order, ccsid, ebcdic)
    if minimum is None:
        return DLH_LENGTH, values["encoding"], values["ccsid"], values["format"]
    if values["struc_length"] < minimum:
        raise StructureError(layout.name, 8, f"StrucLength {values['struc_length']} is less than {minimum}")
    return values["struc_length"], values["encoding"], values["ccsid"], values["format"]


_FOLLOWED = frozenset({_FMT_DEAD, _FMT_XMIT, _FMT_RFH2, _FMT_MDE, _FMT_TRIGGER})
# How much of a header `_next_after` reads: never more than the structure's own length.
_HEADER_LENGTH = {
    _FMT_DEAD: DLH_LENGTH,
    _FMT_XMIT: XQH_LENGTH,
    _FMT_RFH2: RFH2_FIXED_LENGTH,
    _FMT_MDE: MDE_LENGTH,
    _FMT_TRIGGER: TM_LENGTH,
}
_STOPPED = object()  # a header in the chain could not be read


@functools.lru_cache(maxsize=4096)
def _step(name: str, raw: bytes, encoding: int, ccsid: int) -> tuple[int, int, int, str] | None | object:
    """`_next_after` of a header's own bytes, or _STOPPED when it cannot be read. Cached:
    in a DLQ the same headers (one sender's MQRFH2, one channel's MQXQH fields) repeat, and
    the step depends on nothing but these arguments."""
    try:
        return _next_after(name, raw, encoding, ccsid)
    except StructureError:
        return _STOPPED


def _follow_chain(
    data: _Raw, offset: int, encoding: int, ccsid: int, fmt: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Names of the formats from ``offset`` on, and a ``chain_stopped`` flag when a named
    header cannot be read. Every header advances by at least 36 bytes and ``data`` is at
    most CHAIN_SCAN_LIMIT bytes, so this ends."""
    names = []
    while True:
        name = fmt.rstrip(" \x00")
        names.append(name)
        if name not in _FOLLOWED:
            return tuple(names), ()
        step = _step(name, bytes(data[offset : offset + _HEADER_LENGTH[name]]), encoding, ccsid)
        if step is _STOPPED:
            return tuple(names), (f"chain_stopped:{name}",)
        if step is None:
            return tuple(names), ()
        length, next_encoding, next_ccsid, fmt = cast(tuple[int, int, int, str], step)  # neither of those
        offset += length
        encoding = next_encoding
        ccsid = ccsid if next_ccsid == MQCCSI_INHERIT else next_ccsid


def decode_dlh(data: bytes, encoding: int, ccsid: int, md_format: str | None = None) -> HeaderResult:
    """The MQDLH at the start of ``data`` (a message's data), read with the MQMD's Encoding
    and CCSID, judged as IBM's handler does (StrucId, Version, length; not MQMD.Format), and
    the chain of formats after it. Never raises for the content of ``data``; see
    `HeaderResult` for the problem codes and flags."""
    data = bytes(data[:CHAIN_SCAN_LIMIT])
    md_dead = _is_mqdead(md_format)
    problem, order, sniffed = _dlh_problem(data, encoding)
    if problem and not (problem == "too_short" and order is not None):
        flags = []
        if md_dead:
            flags.append("mqdead_without_dlh")
        if problem == "bad_version" and _long(data, 4, "<" if order == ">" else ">") == 1:
            flags.append("byte_order_mismatch")
        return HeaderResult(False, problem, None, (), tuple(flags))

    dlh, flags = _dlh_fields(data, cast(str, order), ccsid, sniffed)  # Version was read: the order is known
    if problem:  # a cut MQDLH whose StrucId and Version read: the fields that are all there
        if md_dead:
            flags.append("mqdead_without_dlh")
        return HeaderResult(False, problem, dlh, (), tuple(flags))
    if md_dead is False:
        flags.append("dlh_without_mqdead")
    next_ccsid = ccsid if dlh.ccsid == MQCCSI_INHERIT else dlh.ccsid
    chain, chain_flags = _follow_chain(data, DLH_LENGTH, dlh.encoding, next_ccsid, dlh.format)
    return HeaderResult(True, None, dlh, chain, tuple(flags) + chain_flags)


def dlh_restore_fields(data: bytes, encoding: int, ccsid: int) -> tuple[str | None, tuple[str, int, int] | None]:
    """``(problem, (format, encoding, ccsid))`` of the MQDLH at the start of ``data``: what
    removing it needs (`dlq_pipeline.replay.rebuild`), as `decode_dlh` reads it (its
    ``problem``, None exactly when ``has_dlh``, and its MQDLH's Format, Encoding and
    CodedCharSetId), without the other fields and the chain after it, which a put does not use."""
    data = bytes(data[:DLH_LENGTH])
    problem, order, _sniffed = _dlh_problem(data, encoding)
    if problem:
        return problem, None
    order = cast(str, order)  # no problem: the order is known
    _charset, text_ccsid, family = _dlh_text_reading(data, ccsid)
    text = _text(data[_DLH_FORMAT_OFFSET : _DLH_FORMAT_OFFSET + _DLH_FORMAT_LENGTH], text_ccsid, family)
    return None, (text, _long(data, _DLH_ENCODING_OFFSET, order), _long(data, _DLH_CCSID_OFFSET, order))


def _dlh_text_reading(data: bytes, ccsid: int) -> tuple[str | None, int, bool | None]:
    """``(charset flag, CCSID, family)`` the MQDLH's characters are read with (`_text`): the
    MQMD's CCSID where it is known and reads the StrucId's family, else by the family the
    StrucId is spelled in (`decode_dlh` and `dlh_restore_fields` read them alike)."""
    ebcdic = data[:4] == _DLH_EBCDIC
    charset = _charset_flag(ccsid, ebcdic)
    if charset is None:
        return None, ccsid, None
    return charset, (ccsid if charset == "unknown_ccsid" else _NO_CCSID), ebcdic


def _dlh_fields(data: bytes, order: str, ccsid: int, sniffed: bool) -> tuple[DeadLetterHeader, list[str]]:
    """The MQDLH fields whose bytes are all in ``data`` (None for the others: a cut header),
    and the flags about reading them (character set, byte order, NUL padding), in
    `HeaderResult`'s order."""
    charset, text_ccsid, family = _dlh_text_reading(data, ccsid)
    # int or str by field, None where a cut header lacks it (Any: mypy checks ** values against every field)
    values: dict[str, Any] = {a: _long(data, o, order) if o + 4 <= len(data) else None for a, o in _DLH_LONGS}
    present = [(a, o, n) for a, o, n in _DLH_CHARS if o + n <= len(data)]
    values.update({a: None for a, _o, _n in _DLH_CHARS})
    values.update({a: _text(data[o : o + n], text_ccsid, family) for a, o, n in present})
    flags = [charset] if charset else []
    if sniffed:
        flags.append("byte_order_sniffed")
    flags.extend(f"nul_padded:{a}" for a, o, n in present if 0 in data[o : o + n])
    return DeadLetterHeader(**values), flags


_DLH_ATTRIBUTES = tuple(f.name for f in fields(DeadLetterHeader))


def to_columns(result: HeaderResult) -> dict[str, object]:
    """The decode columns of data/schemas/decoded.json for one message (a cut MQDLH's fields
    too: ``has_dlh`` false, ``dlh_problem`` too_short, the fields that are there filled)."""
    dlh = result.dlh
    row: dict[str, object] = {"has_dlh": result.has_dlh, "dlh_problem": result.problem}
    for attribute in _DLH_ATTRIBUTES:
        row["dlh_" + attribute] = getattr(dlh, attribute) if dlh is not None else None
    row["dlh_chain"] = ">".join(result.chain) if result.has_dlh else None
    row["decode_flags"] = list(result.flags)
    return {name: row[name] for name in DECODE_COLUMNS}


# ---------------------------------------------------------------------------------------
# Vectorized batch decoder
#
# The Spark stage hands the decoder Arrow arrays. Every message's first 172 bytes come
# right-padded to 172 (Spark's ``rpad(data, 172)``), so the batch is one n×172 byte matrix
# without a copy; the bytes after them come only for rows whose MQDLH Format may name a
# header to follow (`chain_possible`). The fixed layout is read for the whole batch at once
# (StrucId and Version checks, both byte-order views of the integers, one 256-entry lookup
# per CCSID for the characters) and the columns are built as Arrow arrays without a Python
# object per row. Only rows that need more go through `decode_dlh`'s own code: a header
# chain, a cut MQDLH, a CCSID without an exact table, characters outside ASCII.

_CHAR_INDEX = np.concatenate([np.arange(o, o + n) for _a, o, n in _DLH_CHARS])
# (attribute, start, length) of each character field within the 148 gathered bytes
_CHAR_SLICES = tuple(
    (a, start, n)
    for (a, _o, n), start in zip(_DLH_CHARS, itertools.accumulate((n for _a, _o, n in _DLH_CHARS), initial=0))
)
_WORD = {a: o // 4 for a, o in _DLH_LONGS}  # every MQDLH integer is 4-byte aligned
_ASCII_128 = "".join(map(chr, range(128)))
_MD_STATE = {None: 0, True: 1, False: 2}  # MQMD.Format: not given / MQDEAD / something else
_INT_COLUMNS = frozenset("dlh_" + a for a, _o in _DLH_LONGS)
_NOT_ASCII = 0x80  # in a table's ASCII view: this byte decodes to something else
# A piece of a batch's result: (row numbers, {decode column: its Arrow array for those rows})
_Part: TypeAlias = "tuple[np.ndarray, dict[str, pa.Array]]"


def _arrow_type(name: str) -> pa.DataType:
    import pyarrow as pa

    if name == "has_dlh":
        return pa.bool_()
    if name == "decode_flags":
        return pa.list_(pa.string())
    return pa.int32() if name in _INT_COLUMNS else pa.string()


def decode_arrow_schema() -> pa.StructType:
    """The Arrow struct type of `decode_dlh_arrow`'s result: decoded.json's decode columns."""
    import pyarrow as pa

    return pa.struct([pa.field(name, _arrow_type(name)) for name in DECODE_COLUMNS])


@functools.cache
def _batch_table(ccsid: int) -> tuple[bytes, bool] | None:
    """(ASCII view, ascii_only) for decoding this CCSID by table lookup, or None when its
    rows go to the scalar decoder. The view (a `bytes.translate` table: a C loop over the
    bytes, several times faster than a numpy gather) maps each byte to the ASCII character
    it decodes to, or to _NOT_ASCII (such rows are decoded by `codepages.decode`, one field
    at a time). Only a table that is exactly what `codepages.decode` gives is used, so both
    decoders agree by construction. A multi-byte CCSID that is ASCII below 0x80 (UTF-8)
    is table-decoded for rows whose characters are all ASCII (``ascii_only``)."""
    if not codepages.is_known(ccsid):
        return None
    if codepages.is_single_byte(ccsid):
        table = codepages.table(ccsid)
        if len(table) != 256 or codepages.decode(bytes(range(256)), ccsid)[0] != table:
            return None
        return bytes(ord(c) if ord(c) < 0x80 else _NOT_ASCII for c in table), False
    if codepages.decode(bytes(range(128)), ccsid)[0] == _ASCII_128:
        return bytes([*range(128), *[_NOT_ASCII] * 128]), True
    return None


@functools.cache
def chain_format_prefixes() -> frozenset[bytes]:
    """Every byte string an MQDLH Format field can start with when it names a header
    `decode_dlh` follows (MQXMIT, MQHRF2, ...), in every reading the decoder may use for
    it: each single-byte CCSID's table, the invariant characters of either family (unknown
    or mismatched CCSIDs) and ASCII (UTF-8). UTF-16 reads 8 bytes as 4 characters, never
    such a name. A message whose Format bytes start otherwise is decoded from its first
    172 bytes alone, so Spark ships only those (``mq.spark``)."""
    readings = [codepages.table(c) for c in codepages.KNOWN_CCSIDS if codepages.is_single_byte(c)]
    readings += [codepages.decode(bytes(range(256)), 0, ebcdic=family)[0] for family in (False, True)]
    readings.append(_ASCII_128)
    for ccsid in codepages.KNOWN_CCSIDS:  # the multi-byte ones: ASCII-compatible, or 2+ bytes a character
        assert (
            codepages.is_single_byte(ccsid)
            or codepages.decode(bytes(range(128)), ccsid)[0] == _ASCII_128
            or len(codepages.encode("M", ccsid)) >= 2
        ), ccsid
    prefixes: set[bytes] = set()
    for name in _FOLLOWED:
        for reading in readings:
            choices = [[b for b, c in enumerate(reading) if c == char] for char in name]
            prefixes.update(bytes(p) for p in itertools.product(*choices))
    return frozenset(prefixes)


def chain_possible(data: bytes) -> bool:
    """Whether `decode_dlh` may read past the first 172 bytes of this message's data: its
    bytes at the MQDLH Format's offset start one of `chain_format_prefixes`."""
    for length, prefixes in _prefixes_by_length():
        if bytes(data[_DLH_FORMAT_OFFSET : _DLH_FORMAT_OFFSET + length]) in prefixes:
            return True
    return False


@functools.cache
def _prefixes_by_length() -> tuple[tuple[int, frozenset[bytes]], ...]:
    """`chain_format_prefixes` grouped by length: one set lookup per length (ingest asks
    for every message) instead of one comparison per prefix."""
    prefixes = chain_format_prefixes()
    return tuple((n, frozenset(p for p in prefixes if len(p) == n)) for n in sorted({len(p) for p in prefixes}))


def dlh_head(data: bytes) -> bytes:
    """All of ``data`` that `decode_dlh` reads: the first 172 bytes, or the first
    CHAIN_SCAN_LIMIT when a header chain may follow (`chain_possible`). Decoding it gives
    what decoding ``data`` gives; ingest stores it (``messages.data_head``) so classify never
    reads a message's whole data (a 100 MB message must not be copied to read 172 bytes)."""
    return bytes(data[:CHAIN_SCAN_LIMIT] if chain_possible(data) else data[:DLH_LENGTH])


def chain_format_offset() -> int:
    """The byte offset (0-based) of the MQDLH Format field."""
    return _DLH_FORMAT_OFFSET


def _flags_for(key: int) -> tuple[str, ...]:
    """The flags of a table-decoded row from its key (bit 0 sniffed, bits 1-6 NULs per
    character field, bits 7-8 the MQMD.Format state), in `decode_dlh`'s order."""
    flags = ["byte_order_sniffed"] if key & 1 else []
    flags.extend(f"nul_padded:{a}" for bit, (a, _o, _n) in enumerate(_DLH_CHARS) if key >> (bit + 1) & 1)
    if key >> 7 == _MD_STATE[False]:
        flags.append("dlh_without_mqdead")
    return tuple(flags)


def _ascii_strings(rows: np.ndarray) -> pa.StringArray:
    """Rows of ASCII bytes (m×w) as an Arrow string array, NULs kept."""
    import pyarrow as pa

    m, width = rows.shape
    offsets = np.arange(m + 1, dtype=np.int32) * width
    return pa.StringArray.from_buffers(m, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(rows)))


def _patched(base: pa.Array, positions: np.ndarray, values: pa.Array) -> pa.Array:
    """``base`` with the entries at ``positions`` replaced by ``values`` (Arrow arrays)."""
    import pyarrow as pa

    if not positions.size:
        return base
    index = np.arange(len(base), dtype=np.int64)
    index[positions] = len(base) + np.arange(positions.size)
    return pa.concat_arrays([base, values.cast(base.type)]).take(pa.array(index))


def _values(array: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bytes, starts, lengths) of a binary array's values, without copying them; a null
    reads as empty."""
    import pyarrow as pa

    n = len(array)
    kind = np.int64 if pa.types.is_large_binary(array.type) else np.int32
    _validity, offsets, data = array.buffers()[:3]
    bounds = (
        np.frombuffer(offsets, dtype=kind)[array.offset : array.offset + n + 1].astype(np.int64)
        if offsets is not None and n
        else np.zeros(n + 1, dtype=np.int64)
    )
    buffer = np.frombuffer(data, dtype=np.uint8) if data is not None and data.size else np.zeros(0, np.uint8)
    lengths = np.diff(bounds)
    if array.null_count:
        lengths[array.is_null().to_numpy(zero_copy_only=False)] = 0
    return buffer, bounds[:-1], lengths


def _head_matrix(heads: pa.Array) -> np.ndarray:
    """The n×172 byte matrix of ``heads``: a view when every value is 172 bytes long and
    they follow each other (what ``rpad`` gives), else copied with NUL padding."""
    buffer, starts, lengths = _values(heads)
    n = len(heads)
    if n and (lengths == DLH_LENGTH).all() and (np.diff(starts) == DLH_LENGTH).all():
        return buffer[starts[0] : starts[0] + n * DLH_LENGTH].reshape(n, DLH_LENGTH)
    matrix = np.zeros((n, DLH_LENGTH), dtype=np.uint8)
    for i in np.flatnonzero(lengths).tolist():
        size = min(int(lengths[i]), DLH_LENGTH)
        matrix[i, :size] = buffer[starts[i] : starts[i] + size]
    return matrix


def _md_states(md_formats: pa.Array | None, n: int) -> np.ndarray:
    """Per row: 0 MQMD.Format not given (null), 1 MQDEAD, 2 anything else."""
    import pyarrow as pa

    if md_formats is None:
        return np.zeros(n, dtype=np.int64)
    encoded = md_formats if pa.types.is_dictionary(md_formats.type) else md_formats.dictionary_encode()
    states = np.array([_MD_STATE[_is_mqdead(f)] for f in encoded.dictionary.to_pylist()] + [0], dtype=np.int64)
    indices: np.ndarray = encoded.indices.fill_null(len(encoded.dictionary)).to_numpy(zero_copy_only=False)
    return states[indices.astype(np.int64)]


def _int64(values: pa.Array | np.ndarray | Sequence[int], n: int) -> np.ndarray:
    """``values`` as int64, a null as 0 (a row with no message: a data source's bad record)."""
    if hasattr(values, "fill_null"):
        values = values.fill_null(0)
    if hasattr(values, "to_numpy"):
        values = values.to_numpy(zero_copy_only=False)
    return np.asarray(values, dtype=np.int64).reshape(n)


def decode_dlh_arrow(
    heads: pa.Array,
    tails: pa.Array | None,
    lengths: pa.Array | np.ndarray | Sequence[int],
    encodings: pa.Array | np.ndarray | Sequence[int],
    ccsids: pa.Array | np.ndarray | Sequence[int],
    md_formats: pa.Array | None = None,
) -> pa.StructArray:
    """`to_columns(decode_dlh(...))` for a batch of Arrow arrays; returns a struct array of
    `decode_arrow_schema`.

    For each message: ``heads`` its data's first 172 bytes (right-padded with NULs, or not),
    ``tails`` the bytes after them up to CHAIN_SCAN_LIMIT (null or absent when not needed:
    every row with `chain_possible` data needs them), ``lengths`` its data's length, then
    the MQMD's Encoding, CCSID and Format (``md_formats`` None or a null: not given).

    The rows of at least 172 bytes are checked and decoded together: StrucId and Version,
    integers from both byte-order views picked per row, characters through one 256-entry
    table per CCSID. A header chain after the MQDLH is followed row by row by
    `decode_dlh`'s own code; rows that need more go to `decode_dlh`: a cut MQDLH, CCSIDs
    without an exact table, a StrucId in the other family than the CCSID."""
    n = len(heads)
    if not (
        len(lengths) == len(encodings) == len(ccsids) == n
        and (tails is None or len(tails) == n)
        and (md_formats is None or len(md_formats) == n)
    ):
        raise ValueError(
            f"decode_dlh_arrow: {n} headers but {len(lengths)} lengths, {len(encodings)} encodings, "
            f"{len(ccsids)} CCSIDs and {n if md_formats is None else len(md_formats)} formats"
        )
    matrix = _head_matrix(heads)
    size = np.minimum(_int64(lengths, n), CHAIN_SCAN_LIMIT)
    encoding, ccsid = _int64(encodings, n), _int64(ccsids, n)
    md_state = _md_states(md_formats, n)
    tail_values = _values(tails) if tails is not None else None

    tail_view = tail_values[0].data if tail_values is not None else None  # ndarray.data is memoryview(ndarray)

    def after(at: np.ndarray) -> list[bytes | memoryview]:
        """Each of these messages' data after its MQDLH, as `decode_dlh` reads it (up to
        CHAIN_SCAN_LIMIT in all): views of the tails' buffer, nothing copied (a header
        chain reads a few hundred of its bytes)."""
        if tail_view is None or tail_values is None:  # both set or neither
            return [b""] * at.size
        _buffer, starts, tail_lengths = tail_values
        ends = np.maximum(np.minimum(tail_lengths[at], size[at] - DLH_LENGTH), 0) + starts[at]
        return [tail_view[b:e] for b, e in zip(starts[at].tolist(), ends.tolist())]

    def data(at: np.ndarray) -> list[bytes]:
        """These messages' data as `decode_dlh` reads it (at most CHAIN_SCAN_LIMIT bytes)."""
        heads = [matrix[i, : min(k, DLH_LENGTH)].tobytes() for i, k in zip(at.tolist(), size[at].tolist())]
        return [head + bytes(rest) for head, rest in zip(heads, after(at))]

    parts: list[_Part] = []
    strucid = matrix[:, :4]
    # a StrucId (or the part of it the data holds) that is 'DLH ' in neither family
    inside = np.arange(4) < size[:, None]
    spelled = [((strucid == np.frombuffer(s, np.uint8)) | ~inside).all(axis=1) for s in (_DLH_ASCII, _DLH_EBCDIC)]
    bad_strucid = np.flatnonzero(~(spelled[0] | spelled[1]))
    if bad_strucid.size:
        parts.append(
            _invalid_part(
                bad_strucid,
                np.full(bad_strucid.size, "bad_strucid"),
                md_state[bad_strucid],
                np.zeros(bad_strucid.size, dtype=bool),
            )
        )
    # fewer bytes than StrucId and Version (empty data, mostly): too_short, no fields
    no_version = np.flatnonzero((size < _DLH_VERSION_END) & (spelled[0] | spelled[1]))
    if no_version.size:
        parts.append(
            _invalid_part(
                no_version,
                np.full(no_version.size, "too_short"),
                md_state[no_version],
                np.zeros(no_version.size, dtype=bool),
            )
        )
    whole = np.flatnonzero((size >= DLH_LENGTH) & (spelled[0] | spelled[1]))
    left = [np.flatnonzero((size >= _DLH_VERSION_END) & (size < DLH_LENGTH) & (spelled[0] | spelled[1]))]
    if whole.size:
        left.append(_decode_block(whole, matrix[whole], after, encoding[whole], ccsid[whole], md_state[whole], parts))
    scalar = np.sort(np.concatenate(left))
    if scalar.size:
        import pyarrow as pa

        formats = md_formats.take(pa.array(scalar)).to_pylist() if md_formats is not None else [None] * scalar.size
        decoded = [
            to_columns(decode_dlh(d, e, c, f))
            for d, e, c, f in zip(data(scalar), encoding[scalar].tolist(), ccsid[scalar].tolist(), formats)
        ]
        parts.append(
            (scalar, {name: pa.array([row[name] for row in decoded], _arrow_type(name)) for name in DECODE_COLUMNS})
        )
    return _assembled(parts, n)


def _invalid_part(rows: np.ndarray, problems: np.ndarray, md_state: np.ndarray, mismatch: np.ndarray) -> _Part:
    """Rows without a usable MQDLH whose StrucId and Version were judged: the problem, and
    the flags (mqdead_without_dlh, byte_order_mismatch); no fields."""
    import pyarrow as pa

    choices = pa.array(
        [[], ["mqdead_without_dlh"], ["byte_order_mismatch"], ["mqdead_without_dlh", "byte_order_mismatch"]],
        pa.list_(pa.string()),
    )
    dead = (md_state == _MD_STATE[True]).astype(np.int64)
    return rows, {
        "has_dlh": pa.array(np.zeros(rows.size, dtype=bool)),
        "dlh_problem": pa.array(problems.tolist(), pa.string()),
        "decode_flags": choices.take(pa.array(dead + 2 * mismatch.astype(np.int64))),
    }


def _assembled(parts: list[_Part], n: int) -> pa.StructArray:
    """One struct array in row order from (row numbers, {column: array}) parts; a column a
    part leaves out is null there."""
    import pyarrow as pa

    order = np.concatenate([rows for rows, _ in parts]) if parts else np.zeros(0, dtype=np.int64)
    inverse = None
    if not np.array_equal(order, np.arange(n)):
        inverse = np.empty(n, dtype=np.int64)
        inverse[order] = np.arange(n)
        inverse = pa.array(inverse)
    columns = []
    for name in DECODE_COLUMNS:
        kind = _arrow_type(name)
        pieces = [got.get(name, pa.nulls(rows.size, kind)) for rows, got in parts]
        column = pa.array([], kind) if not pieces else pieces[0] if len(pieces) == 1 else pa.concat_arrays(pieces)
        columns.append(column.take(inverse) if inverse is not None else column)
    return pa.StructArray.from_arrays(columns, fields=list(decode_arrow_schema()))


def decode_dlh_batch(
    headers: Sequence[bytes],
    encodings: Sequence[int],
    ccsids: Sequence[int],
    md_formats: Sequence[str | None] | None = None,
) -> dict[str, list[Any]]:
    """`to_columns(decode_dlh(...))` for many messages at once, one list per column:
    `decode_dlh_arrow` over Python values."""
    import pyarrow as pa

    n = len(headers)
    if not (len(encodings) == len(ccsids) == n and (md_formats is None or len(md_formats) == n)):
        raise ValueError(
            f"decode_dlh_batch: {n} headers but {len(encodings)} encodings, "
            f"{len(ccsids)} CCSIDs and {n if md_formats is None else len(md_formats)} formats"
        )
    datas = [bytes(h[:CHAIN_SCAN_LIMIT]) for h in headers]
    result = decode_dlh_arrow(
        pa.array([d[:DLH_LENGTH] for d in datas], pa.binary()),
        pa.array([d[DLH_LENGTH:] for d in datas], pa.binary()),
        [len(d) for d in datas],
        list(encodings),
        list(ccsids),
        None if md_formats is None else pa.array(list(md_formats), pa.string()),
    )
    return {name: result.field(name).to_pylist() for name in DECODE_COLUMNS}


def _decode_block(
    rows: np.ndarray,
    mat: np.ndarray,
    after: Callable[[np.ndarray], list[bytes | memoryview]],
    encoding: np.ndarray,
    ccsid: np.ndarray,
    md_state: np.ndarray,
    parts: list[_Part],
) -> np.ndarray:
    """Add the parts for the rows (172 bytes or more, a StrucId in either family; ``mat``
    their first 172) that array operations can decode; returns the row numbers left for
    the scalar decoder."""
    import pyarrow as pa
    import pyarrow.compute as pc

    big, little = mat.view(">i4"), mat.view("<i4")  # 43 aligned MQLONGs per row, both ways
    ebcdic = mat.view(">u4")[:, 0] == int.from_bytes(_DLH_EBCDIC, "big")
    declared = encoding & 0x0F
    undeclared = (declared != 1) & (declared != 2)
    use_big = (declared == 1) | (undeclared & (big[:, 1] == 1))
    valid = np.where(use_big, big[:, 1], little[:, 1]) == 1

    invalid = np.flatnonzero(~valid)
    if invalid.size:
        bad_version = ~undeclared[invalid]
        mismatch = bad_version & (np.where(use_big, little[:, 1], big[:, 1]) == 1)[invalid]
        parts.append(
            _invalid_part(
                rows[invalid], np.where(bad_version, "bad_version", "unknown_encoding"), md_state[invalid], mismatch
            )
        )

    chars = mat[:, _CHAR_INDEX]
    done, raw, text = _table_decoded(ccsid, ebcdic, valid, chars)
    decoded = np.zeros(rows.size, dtype=bool)
    decoded[done] = True
    if done.size:
        got = {"has_dlh": pa.array(np.ones(done.size, dtype=bool)), "dlh_problem": pa.nulls(done.size, pa.string())}
        for attribute, word in _WORD.items():
            got["dlh_" + attribute] = pa.array(
                np.where(use_big[done], big[done, word], little[done, word]).astype(np.int32)
            )
        key = undeclared[done].astype(np.int64) | (md_state[done] << 7)
        for bit, (attribute, start, width) in enumerate(_CHAR_SLICES):
            field = text[:, start : start + width]
            column = _ascii_strings(field)
            other = np.flatnonzero((field == _NOT_ASCII).any(axis=1))
            if other.size:  # characters outside ASCII: decoded one field at a time
                field_raw = raw[other, start : start + width]
                column = _patched(
                    column,
                    other,
                    pa.array(
                        [
                            _text(field_raw[k].tobytes(), int(c), None)
                            for k, c in enumerate(ccsid[done[other]].tolist())
                        ],
                        pa.string(),
                    ),
                )
            got["dlh_" + attribute] = column
            key |= (raw[:, start : start + width] == 0).any(axis=1).astype(np.int64) << (bit + 1)
        keys, key_index = np.unique(key, return_inverse=True)
        flags = pa.array([list(_flags_for(k)) for k in keys.tolist()], pa.list_(pa.string())).take(
            pa.array(key_index.reshape(-1).astype(np.int64))
        )
        chain = pc.utf8_rtrim(got["dlh_format"], characters=" \x00")
        # a header after the MQDLH (MQXMIT, MQHRF2, ...): the chain is followed row by row,
        # with the scalar decoder's own code, from the table-decoded MQDLH fields
        followed = np.flatnonzero(pc.is_in(chain, value_set=pa.array(sorted(_FOLLOWED))).to_numpy(zero_copy_only=False))
        if followed.size:
            at = pa.array(followed)
            chains, row_flags = [], flags.take(at).to_pylist()
            for rest, name, enc, field_ccsid, md_ccsid, extra in zip(
                after(rows[done[followed]]),
                chain.take(at).to_pylist(),
                got["dlh_encoding"].take(at).to_pylist(),
                got["dlh_ccsid"].take(at).to_pylist(),
                ccsid[done[followed]].tolist(),
                row_flags,
            ):
                next_ccsid = md_ccsid if field_ccsid == MQCCSI_INHERIT else field_ccsid
                found, stopped = _follow_chain(rest, 0, enc, next_ccsid, name)
                chains.append(">".join(found))
                extra.extend(stopped)
            chain = _patched(chain, followed, pa.array(chains, pa.string()))
            flags = _patched(flags, followed, pa.array(row_flags, pa.list_(pa.string())))
        got["dlh_chain"], got["decode_flags"] = chain, flags
        parts.append((rows[done], got))
    return rows[np.flatnonzero(valid & ~decoded)]


def _table_decoded(
    ccsid: np.ndarray, ebcdic: np.ndarray, valid: np.ndarray, chars: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(done, raw, text) for the rows that can be table-decoded: valid, a table for their
    CCSID (`_batch_table`), and the CCSID reads the StrucId's family (else a
    ``ccsid_mismatch``, which the scalar decoder handles). ``done`` their row numbers,
    grouped by CCSID (any order will do: parts carry their rows), ``raw`` their ``chars``
    and ``text`` the ASCII view of those, in that order. Rows are gathered once and each
    group translated as one run of bytes: scattering rows back into place cost more than
    the translation."""
    rows = np.flatnonzero(valid)
    group_key = ccsid[rows] * 2 + ebcdic[rows]  # (CCSID, family)
    order = np.argsort(group_key, kind="stable")
    keys, starts = np.unique(group_key[order], return_index=True)
    rows = rows[order]
    raw = chars[rows]
    flat, width = raw.tobytes(), chars.shape[1]
    pieces, keep = [], np.zeros(rows.size, dtype=bool)
    for key, start, end in zip(keys.tolist(), starts.tolist(), [*starts[1:].tolist(), rows.size]):
        found = _batch_table(key >> 1)
        if found is None or not _ccsid_reads(key >> 1, "DLH ", bool(key & 1)):
            pieces.append(flat[start * width : end * width])
            continue
        table, ascii_only = found
        view = flat[start * width : end * width].translate(table)
        pieces.append(view)
        if ascii_only:  # UTF-8 and the like: only rows whose characters are all ASCII
            keep[start:end] = ~(np.frombuffer(view, dtype=np.uint8).reshape(-1, width) == _NOT_ASCII).any(axis=1)
        else:
            keep[start:end] = True
    text = np.frombuffer(b"".join(pieces), dtype=np.uint8).reshape(-1, width)
    if not keep.all():
        rows, raw, text = rows[keep], raw[keep], text[keep]
    return rows, raw, text
