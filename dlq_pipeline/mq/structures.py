"""MQ header structures byte for byte: MQMD, MQDLH, MQXQH, MQMDE, MQRFH2 (fixed part), MQTM.

A dead letter's headers are in the byte order and character set of whoever wrote them
(z/OS: big-endian EBCDIC), not the reader's. So every integer is read in the byte order
named by the Encoding of the *preceding* structure and every character field in its CCSID
(docs/message-formats.md §2-3); nothing here assumes the host's byte order.

Each structure is a `Layout` (its fields' kinds, offsets and lengths) with a strict decode
and encode, which raise for bytes that are not the structure. The MQDLH decoders that judge
a message's data instead of raising read these layouts: `dlh_decoder.decode_dlh` (one
message, following the header chain) and `dlh_arrow_decoder.decode_dlh_arrow` (an Arrow
batch).

Characters go only through `codepages`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal, TypeVar, cast

from dlq_pipeline.errors import DlqPipelineError
from dlq_pipeline.mq import codepages
from dlq_pipeline.mq.mqmd import MQMD, MQMD_BYTE_LENGTHS, MQMD_CHAR_LENGTHS

__all__ = [
    "DLH_LENGTH",
    "MQMD_V1_LENGTH",
    "MQMD_V2_LENGTH",
    "XQH_LENGTH",
    "MDE_LENGTH",
    "RFH2_FIXED_LENGTH",
    "TM_LENGTH",
    "MQCCSI_INHERIT",
    "StructureError",
    "BytesLike",
    "LayoutField",
    "Layout",
    "MQMD_V1_LAYOUT",
    "MQMD_V2_LAYOUT",
    "DLH_LAYOUT",
    "XQH_LAYOUT",
    "XQH_MD_OFFSET",
    "MDE_LAYOUT",
    "RFH2_LAYOUT",
    "TM_LAYOUT",
    "DeadLetterHeader",
    "TransmissionQueueHeader",
    "MessageDescriptorExtension",
    "RulesFormattingHeader2",
    "TriggerMessage",
    "byte_order",
    "read_long",
    "choose_order",
    "strucid_family",
    "ccsid_reads",
    "read_text",
    "read_fields",
    "open_structure",
    "decode_mqmd",
    "encode_mqmd",
    "encode_dlh",
    "decode_xqh",
    "encode_xqh",
    "decode_mde",
    "encode_mde",
    "decode_rfh2",
    "encode_rfh2",
    "decode_tm",
    "encode_tm",
    "DLH_CHAR_FIELDS",
    "DLH_LONG_FIELDS",
    "DLH_FORMAT_OFFSET",
    "DLH_FORMAT_LENGTH",
    "DLH_ENCODING_OFFSET",
    "DLH_CCSID_OFFSET",
    "DLH_STRUCID_ASCII",
    "DLH_STRUCID_EBCDIC",
]

DLH_LENGTH = 172
MQMD_V1_LENGTH = 324
MQMD_V2_LENGTH = 364
XQH_LENGTH = 428
MDE_LENGTH = 72
RFH2_FIXED_LENGTH = 36
TM_LENGTH = 684

# MQCCSI_INHERIT in a header's CodedCharSetId: what follows is in this header's own CCSID.
MQCCSI_INHERIT = -2


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
LayoutField = tuple[str, str, int, int]  # (attribute, kind, offset, length)
# What structures are read from: a message's bytes, or a view of them
BytesLike = bytes | bytearray | memoryview
_T = TypeVar("_T")


@dataclass(frozen=True)
class Layout:
    name: str
    strucid: str
    versions: tuple[int, ...]
    fields: tuple[LayoutField, ...]
    length: int


def _layout(
    name: str, strucid: str, versions: tuple[int, ...], spec: Iterable[tuple[str, str, int]], start: int = 8
) -> Layout:
    placed, offset = [], start
    for attribute, kind, length in spec:
        placed.append((attribute, kind, offset, length))
        offset += length
    return Layout(name, strucid, versions, tuple(placed), offset)


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
MQMD_V1_LAYOUT = _layout("MQMD", "MD  ", (1, 2), _MQMD_V1_SPEC)
MQMD_V2_LAYOUT = _layout("MQMD", "MD  ", (1, 2), _MQMD_V2_SPEC)
DLH_LAYOUT = _layout(
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
XQH_MD_OFFSET = _XQH_NAMES.length  # the embedded version-1 MQMD follows the names
XQH_LAYOUT = replace(_XQH_NAMES, length=XQH_MD_OFFSET + MQMD_V1_LENGTH)
MDE_LAYOUT = _layout(
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
RFH2_LAYOUT = _layout(
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
TM_LAYOUT = _layout(
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

assert (MQMD_V1_LAYOUT.length, MQMD_V2_LAYOUT.length, DLH_LAYOUT.length) == (MQMD_V1_LENGTH, MQMD_V2_LENGTH, DLH_LENGTH)
assert (XQH_LAYOUT.length, MDE_LAYOUT.length, RFH2_LAYOUT.length, TM_LAYOUT.length) == (
    XQH_LENGTH,
    MDE_LENGTH,
    RFH2_FIXED_LENGTH,
    TM_LENGTH,
)


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


# ---------------------------------------------------------------------------------------
# Byte order and character set


def byte_order(encoding: int) -> str | None:
    """'>' or '<' from an MQ Encoding's integer part (1 normal, 2 reversed); None when it
    does not say (0 or an undefined value), and Version has to decide."""
    return {1: ">", 2: "<"}.get(int(encoding) & 0x0F)


_ENDIAN: dict[str, Literal["big", "little"]] = {">": "big", "<": "little"}


def read_long(raw: BytesLike, offset: int, order: str) -> int:
    return int.from_bytes(raw[offset : offset + 4], _ENDIAN[order], signed=True)


def choose_order(
    raw: BytesLike, encoding: int | None, versions: tuple[int, ...]
) -> tuple[str | None, str | None, bool]:
    """(order, problem, sniffed). The Encoding decides when it names a byte order;
    otherwise exactly one reading of Version must be valid."""
    declared = byte_order(encoding) if encoding is not None else None
    if declared is not None:
        if read_long(raw, 4, declared) in versions:
            return declared, None, False
        return declared, "bad_version", False
    valid = [order for order in (">", "<") if read_long(raw, 4, order) in versions]
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


def strucid_family(raw: BytesLike, strucid: str) -> bool | None:
    """True for EBCDIC, False for ASCII, None when the bytes are neither spelling."""
    head = bytes(raw[:4])
    if head == _strucid_bytes(strucid, False):
        return False
    if head == _strucid_bytes(strucid, True):
        return True
    return None


@functools.cache
def ccsid_reads(ccsid: int, strucid: str, ebcdic: bool) -> bool:
    """Whether ``ccsid`` decodes this family's StrucId bytes as the StrucId."""
    return codepages.decode(_strucid_bytes(strucid, ebcdic), ccsid)[0] == strucid


def read_text(raw: BytesLike, ccsid: int, ebcdic: bool | None = None) -> str:
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
def read_fields(
    layout_fields: Iterable[LayoutField], raw: BytesLike, order: str, ccsid: int, ebcdic: bool | None
) -> dict[str, Any]:
    values: dict[str, int | str | bytes] = {}
    for attribute, kind, offset, length in layout_fields:
        chunk = raw[offset : offset + length]
        if kind == _LONG:
            values[attribute] = int.from_bytes(chunk, _ENDIAN[order], signed=True)
        elif kind == _CHAR:
            values[attribute] = read_text(chunk, ccsid, ebcdic)
        else:
            values[attribute] = bytes(chunk)
    return values


def _write_fields(
    layout: Layout,
    layout_fields: Iterable[LayoutField],
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


def open_structure(
    layout: Layout, raw: BytesLike, encoding: int | None, ccsid: int | None
) -> tuple[str, bool, int, int]:
    """Check StrucId, Version and length; returns (order, ebcdic, ccsid, version). The CCSID
    defaults by family (819 or 500) when the caller cannot know it."""
    name = layout.name
    if len(raw) < 4:
        raise StructureError(name, 0, f"needs {layout.length} bytes, got {len(raw)}")
    ebcdic = strucid_family(raw, layout.strucid)
    if ebcdic is None:
        raise StructureError(
            name, 0, f"StrucId is {bytes(raw[:4]).hex().upper()}, not {layout.strucid!r} in ASCII or EBCDIC"
        )
    if ccsid is None:
        ccsid = 500 if ebcdic else 819
    if codepages.is_known(ccsid) and not ccsid_reads(ccsid, layout.strucid, ebcdic):
        family = "EBCDIC" if ebcdic else "ASCII"
        raise StructureError(name, 0, f"StrucId is {family} but CCSID {ccsid} is not")
    if len(raw) < 8:
        raise StructureError(name, 4, f"needs {layout.length} bytes, got {len(raw)}")
    order, problem, _ = choose_order(raw, encoding, layout.versions)
    if problem == "bad_version":
        raise StructureError(
            name,
            4,
            f"Version reads {read_long(raw, 4, cast(str, order))} in byte order of Encoding "  # the one it names
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
    order = cast(str, order)  # no problem: choose_order chose the order
    return order, ebcdic, ccsid, read_long(raw, 4, order)


def _begin(layout: Layout, version: int, order: str, ccsid: int) -> bytearray:
    out = bytearray(layout.length)
    out[0:4] = _encode_chars(layout.strucid, 4, ccsid, f"{layout.name}.StrucId")
    out[4:8] = version.to_bytes(4, _ENDIAN[order], signed=True)
    return out


def _decode_simple(
    layout: Layout, cls: Callable[..., _T], raw: BytesLike, encoding: int | None, ccsid: int | None
) -> _T:
    order, ebcdic, ccsid, _ = open_structure(layout, raw, encoding, ccsid)
    return cls(**read_fields(layout.fields, raw, order, ccsid, ebcdic))


def _encode_simple(
    layout: Layout,
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
    order, ebcdic, ccsid, version = open_structure(MQMD_V1_LAYOUT, raw, encoding, ccsid)
    layout = MQMD_V2_LAYOUT if version >= 2 else MQMD_V1_LAYOUT
    if len(raw) < layout.length:
        raise StructureError("MQMD", len(raw), f"version {version} needs {layout.length} bytes, got {len(raw)}")
    return MQMD(version=version, **read_fields(layout.fields, raw, order, ccsid, ebcdic))


def encode_mqmd(md: MQMD, encoding: int, ccsid: int) -> bytes:
    """324 bytes for a version-1 MQMD (its version-2 fields are not part of it), 364 for
    version 2; character fields blank-padded to their length."""
    if md.version not in (1, 2):
        raise ValueError(f"MQMD.version {md.version}: only 1 and 2 exist")
    layout = MQMD_V2_LAYOUT if md.version == 2 else MQMD_V1_LAYOUT
    order = _order_for_encode(encoding)
    out = _begin(layout, md.version, order, ccsid)
    _write_fields(layout, layout.fields, md.as_dict(), out, order, ccsid)
    return bytes(out)


# ---------------------------------------------------------------------------------------
# MQXQH, MQMDE, MQRFH2, MQTM


def decode_xqh(raw: bytes, encoding: int | None, ccsid: int | None) -> TransmissionQueueHeader:
    """MQXQH (428 bytes). The embedded MQMD is in the MQXQH's own encoding and CCSID; its
    Version is kept as written but only its version-1 fields exist. Raises StructureError."""
    order, ebcdic, ccsid, _ = open_structure(XQH_LAYOUT, raw, encoding, ccsid)
    names = read_fields(XQH_LAYOUT.fields, raw, order, ccsid, ebcdic)
    md_raw = raw[XQH_MD_OFFSET:XQH_LENGTH]
    if strucid_family(md_raw, "MD  ") is not ebcdic:
        raise StructureError(
            "MQXQH", XQH_MD_OFFSET, f"embedded MQMD StrucId is {bytes(md_raw[:4]).hex().upper()}, not 'MD  '"
        )
    md_version = read_long(md_raw, 4, order)
    md = MQMD(version=md_version, **read_fields(MQMD_V1_LAYOUT.fields, md_raw, order, ccsid, ebcdic))
    return TransmissionQueueHeader(md=md, **names)


def encode_xqh(xqh: TransmissionQueueHeader, encoding: int, ccsid: int) -> bytes:
    """428 bytes; the embedded MQMD is written in its version-1 layout."""
    order = _order_for_encode(encoding)
    out = _begin(XQH_LAYOUT, 1, order, ccsid)
    _write_fields(
        XQH_LAYOUT, XQH_LAYOUT.fields, {"remote_q": xqh.remote_q, "remote_qmgr": xqh.remote_qmgr}, out, order, ccsid
    )
    md = bytearray(_begin(MQMD_V1_LAYOUT, xqh.md.version, order, ccsid))
    _write_fields(MQMD_V1_LAYOUT, MQMD_V1_LAYOUT.fields, xqh.md.as_dict(), md, order, ccsid)
    out[XQH_MD_OFFSET:] = md
    return bytes(out)


def decode_mde(raw: bytes, encoding: int | None, ccsid: int | None) -> MessageDescriptorExtension:
    """MQMDE (72 bytes); StrucLength below 72 is an error. Raises StructureError."""
    mde = _decode_simple(MDE_LAYOUT, MessageDescriptorExtension, raw, encoding, ccsid)
    if mde.struc_length < MDE_LENGTH:
        raise StructureError("MQMDE", 8, f"StrucLength {mde.struc_length} is less than {MDE_LENGTH}")
    return mde


def encode_mde(mde: MessageDescriptorExtension, encoding: int, ccsid: int) -> bytes:
    return _encode_simple(MDE_LAYOUT, mde, encoding, ccsid)


def decode_rfh2(raw: bytes, encoding: int | None, ccsid: int | None) -> RulesFormattingHeader2:
    """The 36-byte fixed part of an MQRFH2; StrucLength below 36 is an error (the folders
    are not decoded). Raises StructureError."""
    rfh2 = _decode_simple(RFH2_LAYOUT, RulesFormattingHeader2, raw, encoding, ccsid)
    if rfh2.struc_length < RFH2_FIXED_LENGTH:
        raise StructureError("MQRFH2", 8, f"StrucLength {rfh2.struc_length} is less than {RFH2_FIXED_LENGTH}")
    return rfh2


def encode_rfh2(rfh2: RulesFormattingHeader2, encoding: int, ccsid: int) -> bytes:
    """The 36-byte fixed part only; the caller appends the folders StrucLength counts."""
    return _encode_simple(RFH2_LAYOUT, rfh2, encoding, ccsid)


def decode_tm(raw: bytes, encoding: int | None, ccsid: int | None) -> TriggerMessage:
    """MQTM (684 bytes). Raises StructureError."""
    return _decode_simple(TM_LAYOUT, TriggerMessage, raw, encoding, ccsid)


def encode_tm(tm: TriggerMessage, encoding: int, ccsid: int) -> bytes:
    return _encode_simple(TM_LAYOUT, tm, encoding, ccsid)


def encode_dlh(dlh: DeadLetterHeader, encoding: int, ccsid: int) -> bytes:
    """172 bytes of MQDLH version 1, integers in ``encoding``'s byte order, characters in
    ``ccsid``, blank-padded to their field length."""
    return _encode_simple(DLH_LAYOUT, dlh, encoding, ccsid)


# ---------------------------------------------------------------------------------------
# The MQDLH's fields by kind and offset, what the MQDLH decoders read

# The DLH character fields: (attribute, offset, length), in layout order.
DLH_CHAR_FIELDS = tuple((a, o, n) for a, kind, o, n in DLH_LAYOUT.fields if kind == _CHAR)
DLH_LONG_FIELDS = tuple((a, o) for a, kind, o, _n in DLH_LAYOUT.fields if kind == _LONG)
DLH_FORMAT_OFFSET, DLH_FORMAT_LENGTH = next((o, n) for a, o, n in DLH_CHAR_FIELDS if a == "format")
DLH_ENCODING_OFFSET, DLH_CCSID_OFFSET = (dict(DLH_LONG_FIELDS)[a] for a in ("encoding", "ccsid"))
DLH_STRUCID_ASCII = _strucid_bytes("DLH ", False)
DLH_STRUCID_EBCDIC = _strucid_bytes("DLH ", True)
