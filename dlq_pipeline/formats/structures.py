"""MQ header structures byte for byte: MQMD, MQDLH, MQXQH, MQMDE, MQRFH2 (fixed part), MQTM.

A dead letter's headers are in the byte order and character set of whoever wrote them
(z/OS: big-endian EBCDIC), not the reader's. So every integer is read in the byte order
named by the Encoding of the *preceding* structure and every character field in its CCSID
(message-formats.md §2-3); nothing here assumes the host's byte order.

Two MQDLH decoders agree exactly, column for column: `decode_dlh` (one message, follows the
header chain) and `decode_dlh_batch` (numpy, for the Spark pandas UDF), which decodes the
common rows with array operations and hands the rest to `decode_dlh`.

Characters go only through `codepages`; format names only through `constants`.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import asdict, dataclass, fields, replace
from typing import Sequence

import numpy as np

from dlq_pipeline.formats import codepages
from dlq_pipeline.formats import constants
from dlq_pipeline.formats.mqmd import MQMD, MQMD_BYTE_LENGTHS, MQMD_CHAR_LENGTHS

__all__ = [
    "CHAIN_SCAN_LIMIT", "DECODE_COLUMNS", "DLH_LENGTH", "MQMD_V1_LENGTH", "MQMD_V2_LENGTH",
    "XQH_LENGTH", "MDE_LENGTH", "RFH2_FIXED_LENGTH", "TM_LENGTH",
    "StructureError", "DeadLetterHeader", "TransmissionQueueHeader", "MessageDescriptorExtension",
    "RulesFormattingHeader2", "TriggerMessage", "HeaderResult",
    "byte_order", "decode_mqmd", "encode_mqmd", "decode_dlh", "encode_dlh", "decode_xqh",
    "encode_xqh", "decode_mde", "encode_mde", "decode_rfh2", "encode_rfh2", "decode_tm",
    "encode_tm", "to_columns", "decode_dlh_batch",
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
    "has_dlh", "dlh_problem", "dlh_reason", "dlh_dest_q", "dlh_dest_qmgr", "dlh_encoding",
    "dlh_ccsid", "dlh_format", "dlh_put_appl_type", "dlh_put_appl_name", "dlh_put_date",
    "dlh_put_time", "dlh_chain", "decode_flags",
)


def _format_name(constant: str) -> str:
    return constants.MQFMT[constant].rstrip(" ")


_FMT_DEAD = _format_name("MQFMT_DEAD_LETTER_HEADER")
_FMT_XMIT = _format_name("MQFMT_XMIT_Q_HEADER")
_FMT_RFH2 = _format_name("MQFMT_RF_HEADER_2")
_FMT_MDE = _format_name("MQFMT_MD_EXTENSION")
_FMT_TRIGGER = _format_name("MQFMT_TRIGGER")


class StructureError(ValueError):
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


@dataclass(frozen=True)
class _Layout:
    name: str
    strucid: str
    versions: tuple[int, ...]
    fields: tuple[tuple[str, str, int, int], ...]  # (attribute, kind, offset, length)
    length: int


def _layout(name: str, strucid: str, versions: tuple[int, ...], spec, start: int = 8) -> _Layout:
    placed, offset = [], start
    for attribute, kind, length in spec:
        placed.append((attribute, kind, offset, length))
        offset += length
    return _Layout(name, strucid, versions, tuple(placed), offset)


def _md_char(name):
    return (name, _CHAR, MQMD_CHAR_LENGTHS[name])


def _md_bytes(name):
    return (name, _BYTES, MQMD_BYTE_LENGTHS[name])


_MQMD_V1_SPEC = (
    ("report", _LONG, 4), ("msg_type", _LONG, 4), ("expiry", _LONG, 4), ("feedback", _LONG, 4),
    ("encoding", _LONG, 4), ("ccsid", _LONG, 4), _md_char("format"), ("priority", _LONG, 4),
    ("persistence", _LONG, 4), _md_bytes("msg_id"), _md_bytes("correl_id"),
    ("backout_count", _LONG, 4), _md_char("reply_to_q"), _md_char("reply_to_qmgr"),
    _md_char("user_id"), _md_bytes("accounting_token"), _md_char("appl_identity_data"),
    ("put_appl_type", _LONG, 4), _md_char("put_appl_name"), _md_char("put_date"),
    _md_char("put_time"), _md_char("appl_origin_data"),
)
_MQMD_V2_SPEC = _MQMD_V1_SPEC + (
    _md_bytes("group_id"), ("msg_seq_number", _LONG, 4), ("offset", _LONG, 4),
    ("msg_flags", _LONG, 4), ("original_length", _LONG, 4),
)
_MQMD_V1 = _layout("MQMD", "MD  ", (1, 2), _MQMD_V1_SPEC)
_MQMD_V2 = _layout("MQMD", "MD  ", (1, 2), _MQMD_V2_SPEC)
_DLH = _layout("MQDLH", "DLH ", (1,), (
    ("reason", _LONG, 4), ("dest_q", _CHAR, 48), ("dest_qmgr", _CHAR, 48), ("encoding", _LONG, 4),
    ("ccsid", _LONG, 4), ("format", _CHAR, 8), ("put_appl_type", _LONG, 4),
    ("put_appl_name", _CHAR, 28), ("put_date", _CHAR, 8), ("put_time", _CHAR, 8),
))
_XQH_NAMES = _layout("MQXQH", "XQH ", (1,), (("remote_q", _CHAR, 48), ("remote_qmgr", _CHAR, 48)))
_XQH_MD_OFFSET = _XQH_NAMES.length  # the embedded version-1 MQMD follows the names
_XQH = replace(_XQH_NAMES, length=_XQH_MD_OFFSET + MQMD_V1_LENGTH)
_MDE = _layout("MQMDE", "MDE ", (2,), (
    ("struc_length", _LONG, 4), ("encoding", _LONG, 4), ("ccsid", _LONG, 4), ("format", _CHAR, 8),
    ("flags", _LONG, 4), ("group_id", _BYTES, 24), ("msg_seq_number", _LONG, 4),
    ("offset", _LONG, 4), ("msg_flags", _LONG, 4), ("original_length", _LONG, 4),
))
_RFH2 = _layout("MQRFH2", "RFH ", (2,), (
    ("struc_length", _LONG, 4), ("encoding", _LONG, 4), ("ccsid", _LONG, 4), ("format", _CHAR, 8),
    ("flags", _LONG, 4), ("name_value_ccsid", _LONG, 4),
))
_TM = _layout("MQTM", "TM  ", (1,), (
    ("q_name", _CHAR, 48), ("process_name", _CHAR, 48), ("trigger_data", _CHAR, 64),
    ("appl_type", _LONG, 4), ("appl_id", _CHAR, 256), ("env_data", _CHAR, 128),
    ("user_data", _CHAR, 128),
))

assert (_MQMD_V1.length, _MQMD_V2.length, _DLH.length) == (MQMD_V1_LENGTH, MQMD_V2_LENGTH, DLH_LENGTH)
assert (_XQH.length, _MDE.length, _RFH2.length, _TM.length) == (
    XQH_LENGTH, MDE_LENGTH, RFH2_FIXED_LENGTH, TM_LENGTH)


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


_ENDIAN = {">": "big", "<": "little"}


def _long(raw, offset: int, order: str) -> int:
    return int.from_bytes(raw[offset:offset + 4], _ENDIAN[order], signed=True)


def _choose_order(raw, encoding: int | None, versions) -> tuple[str | None, str | None, bool]:
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


@functools.lru_cache(maxsize=None)
def _strucid_bytes(strucid: str, ebcdic: bool) -> bytes:
    # StrucIds are invariant characters: any ASCII or EBCDIC table spells them the same.
    return codepages.encode(strucid, 500 if ebcdic else 819)


def _strucid_family(raw, strucid: str) -> bool | None:
    """True for EBCDIC, False for ASCII, None when the bytes are neither spelling."""
    head = bytes(raw[:4])
    if head == _strucid_bytes(strucid, False):
        return False
    if head == _strucid_bytes(strucid, True):
        return True
    return None


@functools.lru_cache(maxsize=None)
def _ccsid_reads(ccsid: int, strucid: str, ebcdic: bool) -> bool:
    """Whether ``ccsid`` decodes this family's StrucId bytes as the StrucId."""
    return codepages.decode(_strucid_bytes(strucid, ebcdic), ccsid)[0] == strucid


def _text(raw, ccsid: int, ebcdic: bool | None = None) -> str:
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


def _read_fields(layout_fields, raw, order: str, ccsid: int, ebcdic: bool | None) -> dict:
    values = {}
    for attribute, kind, offset, length in layout_fields:
        chunk = raw[offset:offset + length]
        if kind == _LONG:
            values[attribute] = int.from_bytes(chunk, _ENDIAN[order], signed=True)
        elif kind == _CHAR:
            values[attribute] = _text(chunk, ccsid, ebcdic)
        else:
            values[attribute] = bytes(chunk)
    return values


def _write_fields(layout: _Layout, layout_fields, values: dict, out: bytearray, order: str, ccsid: int) -> None:
    for attribute, kind, offset, length in layout_fields:
        value = values[attribute]
        where = f"{layout.name}.{attribute}"
        if kind == _LONG:
            if not -2**31 <= value < 2**31:
                raise ValueError(f"{where}: {value} does not fit an MQLONG")
            out[offset:offset + 4] = value.to_bytes(4, _ENDIAN[order], signed=True)
        elif kind == _CHAR:
            out[offset:offset + length] = _encode_chars(value, length, ccsid, where)
        else:
            if len(value) > length:
                raise ValueError(f"{where}: {len(value)} bytes; the field holds {length}")
            out[offset:offset + length] = bytes(value).ljust(length, b"\x00")


def _open(layout: _Layout, raw, encoding: int | None, ccsid: int | None) -> tuple[str, bool, int, int]:
    """Check StrucId, Version and length; returns (order, ebcdic, ccsid, version). The CCSID
    defaults by family (819 or 500) when the caller cannot know it."""
    name = layout.name
    if len(raw) < 4:
        raise StructureError(name, 0, f"needs {layout.length} bytes, got {len(raw)}")
    ebcdic = _strucid_family(raw, layout.strucid)
    if ebcdic is None:
        raise StructureError(name, 0, f"StrucId is {bytes(raw[:4]).hex().upper()}, "
                                      f"not {layout.strucid!r} in ASCII or EBCDIC")
    if ccsid is None:
        ccsid = 500 if ebcdic else 819
    if codepages.is_known(ccsid) and not _ccsid_reads(ccsid, layout.strucid, ebcdic):
        family = "EBCDIC" if ebcdic else "ASCII"
        raise StructureError(name, 0, f"StrucId is {family} but CCSID {ccsid} is not")
    if len(raw) < 8:
        raise StructureError(name, 4, f"needs {layout.length} bytes, got {len(raw)}")
    order, problem, _ = _choose_order(raw, encoding, layout.versions)
    if problem == "bad_version":
        raise StructureError(name, 4, f"Version reads {_long(raw, 4, order)} in byte order of Encoding "
                                      f"{encoding}; expected {' or '.join(map(str, layout.versions))}")
    if problem:
        raise StructureError(name, 4, f"Encoding {encoding} names no byte order and Version reads "
                                      f"{' or '.join(map(str, layout.versions))} neither way")
    if len(raw) < layout.length:
        raise StructureError(name, len(raw), f"needs {layout.length} bytes, got {len(raw)}")
    return order, ebcdic, ccsid, _long(raw, 4, order)


def _begin(layout: _Layout, version: int, order: str, ccsid: int) -> bytearray:
    out = bytearray(layout.length)
    out[0:4] = _encode_chars(layout.strucid, 4, ccsid, f"{layout.name}.StrucId")
    out[4:8] = version.to_bytes(4, _ENDIAN[order], signed=True)
    return out


def _decode_simple(layout: _Layout, cls, raw, encoding, ccsid):
    order, ebcdic, ccsid, _ = _open(layout, raw, encoding, ccsid)
    return cls(**_read_fields(layout.fields, raw, order, ccsid, ebcdic))


def _encode_simple(layout: _Layout, obj, encoding: int, ccsid: int) -> bytes:
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
        raise StructureError("MQXQH", _XQH_MD_OFFSET,
                             f"embedded MQMD StrucId is {bytes(md_raw[:4]).hex().upper()}, not 'MD  '")
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


def _decode_dlh_strict(raw, encoding, ccsid) -> DeadLetterHeader:
    return _decode_simple(_DLH, DeadLetterHeader, raw, encoding, ccsid)


# ---------------------------------------------------------------------------------------
# MQDLH with diagnosis, and the header chain

# The DLH character fields: (attribute, offset, length), in layout order.
_DLH_CHARS = tuple((a, o, n) for a, kind, o, n in _DLH.fields if kind == _CHAR)
_DLH_LONGS = tuple((a, o) for a, kind, o, _n in _DLH.fields if kind == _LONG)
_DLH_ASCII = _strucid_bytes("DLH ", False)
_DLH_EBCDIC = _strucid_bytes("DLH ", True)


def _dlh_problem(data: bytes, encoding: int) -> tuple[str | None, str | None, bool]:
    """(problem, order, sniffed) for the first bytes of a message."""
    head = data[:4]
    if not (_DLH_ASCII.startswith(head) or _DLH_EBCDIC.startswith(head)):
        return "bad_strucid", None, False
    if len(data) < 8:
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


def _chain_fields(layout: _Layout) -> tuple:
    return tuple(f for f in layout.fields if f[0] in ("struc_length", "encoding", "ccsid", "format"))


# What the chain needs of each header: its checks (`_open`, and those of decode_xqh/_mde/
# _rfh2) and the fields that say what follows, nothing else: reading every MQMD field of
# an MQXQH was most of the decode cost of a transmission-queue dead letter.
_NEXT_FIELDS = {layout.name: _chain_fields(layout) for layout in (_DLH, _MDE, _RFH2, _MQMD_V1)}


def _next_after(name: str, raw, encoding: int, ccsid: int):
    """(length, encoding, ccsid, format) of the part after header ``name``; None when the
    header ends the chain. Raises StructureError exactly when decoding that header would."""
    if name == _FMT_TRIGGER:
        _open(_TM, raw, encoding, ccsid)  # MQTM: validated, and nothing follows it
        return None
    if name == _FMT_XMIT:
        order, ebcdic, ccsid, _ = _open(_XQH, raw, encoding, ccsid)
        md_raw = raw[_XQH_MD_OFFSET:XQH_LENGTH]
        if _strucid_family(md_raw, "MD  ") is not ebcdic:
            raise StructureError("MQXQH", _XQH_MD_OFFSET,
                                 f"embedded MQMD StrucId is {bytes(md_raw[:4]).hex().upper()}, not 'MD  '")
        md = _read_fields(_NEXT_FIELDS["MQMD"], md_raw, order, ccsid, ebcdic)
        return XQH_LENGTH, md["encoding"], md["ccsid"], md["format"]
    layout, minimum = {_FMT_DEAD: (_DLH, None), _FMT_RFH2: (_RFH2, RFH2_FIXED_LENGTH), _FMT_MDE: (_MDE, MDE_LENGTH)}[name]
    order, ebcdic, ccsid, _ = _open(layout, raw, encoding, ccsid)
    values = _read_fields(_NEXT_FIELDS[layout.name], raw, order, ccsid, ebcdic)
    if minimum is None:
        return DLH_LENGTH, values["encoding"], values["ccsid"], values["format"]
    if values["struc_length"] < minimum:
        raise StructureError(layout.name, 8, f"StrucLength {values['struc_length']} is less than {minimum}")
    return values["struc_length"], values["encoding"], values["ccsid"], values["format"]


_FOLLOWED = frozenset({_FMT_DEAD, _FMT_XMIT, _FMT_RFH2, _FMT_MDE, _FMT_TRIGGER})


def _follow_chain(data: bytes, offset: int, encoding: int, ccsid: int, fmt: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Names of the formats from ``offset`` on, and a ``chain_stopped`` flag when a named
    header cannot be read. Every header advances by at least 36 bytes and ``data`` is at
    most CHAIN_SCAN_LIMIT bytes, so this ends."""
    names = []
    while True:
        name = fmt.rstrip(" \x00")
        names.append(name)
        if name not in _FOLLOWED:
            return tuple(names), ()
        try:
            step = _next_after(name, data[offset:], encoding, ccsid)
        except StructureError:
            return tuple(names), (f"chain_stopped:{name}",)
        if step is None:
            return tuple(names), ()
        length, next_encoding, next_ccsid, fmt = step
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

    dlh, flags = _dlh_fields(data, order, ccsid, sniffed)
    if problem:  # a cut MQDLH whose StrucId and Version read: the fields that are all there
        if md_dead:
            flags.append("mqdead_without_dlh")
        return HeaderResult(False, problem, dlh, (), tuple(flags))
    if md_dead is False:
        flags.append("dlh_without_mqdead")
    next_ccsid = ccsid if dlh.ccsid == MQCCSI_INHERIT else dlh.ccsid
    chain, chain_flags = _follow_chain(data, DLH_LENGTH, dlh.encoding, next_ccsid, dlh.format)
    return HeaderResult(True, None, dlh, chain, tuple(flags) + chain_flags)


def _dlh_fields(data: bytes, order: str, ccsid: int, sniffed: bool) -> tuple[DeadLetterHeader, list[str]]:
    """The MQDLH fields whose bytes are all in ``data`` (None for the others: a cut header),
    and the flags about reading them (character set, byte order, NUL padding), in
    `HeaderResult`'s order."""
    ebcdic = data[:4] == _DLH_EBCDIC
    charset = _charset_flag(ccsid, ebcdic)
    if charset is None:
        text_ccsid, family = ccsid, None
    else:
        text_ccsid, family = (ccsid if charset == "unknown_ccsid" else _NO_CCSID), ebcdic
    values = {a: _long(data, o, order) if o + 4 <= len(data) else None for a, o in _DLH_LONGS}
    present = [(a, o, n) for a, o, n in _DLH_CHARS if o + n <= len(data)]
    values.update({a: None for a, _o, _n in _DLH_CHARS})
    values.update({a: _text(data[o:o + n], text_ccsid, family) for a, o, n in present})
    flags = [charset] if charset else []
    if sniffed:
        flags.append("byte_order_sniffed")
    flags.extend(f"nul_padded:{a}" for a, o, n in present if 0 in data[o:o + n])
    return DeadLetterHeader(**values), flags


_DLH_ATTRIBUTES = tuple(f.name for f in fields(DeadLetterHeader))


def to_columns(result: HeaderResult) -> dict:
    """The decode columns of data/schemas/decoded.json for one message (a cut MQDLH's fields
    too: ``has_dlh`` false, ``dlh_problem`` too_short, the fields that are there filled)."""
    dlh = result.dlh
    row = {"has_dlh": result.has_dlh, "dlh_problem": result.problem}
    for attribute in _DLH_ATTRIBUTES:
        row["dlh_" + attribute] = getattr(dlh, attribute) if dlh is not None else None
    row["dlh_chain"] = ">".join(result.chain) if result.has_dlh else None
    row["decode_flags"] = list(result.flags)
    return {name: row[name] for name in DECODE_COLUMNS}


# ---------------------------------------------------------------------------------------
# Vectorized batch decoder

_CHAR_INDEX = np.concatenate([np.arange(o, o + n) for _a, o, n in _DLH_CHARS])
# (attribute, start, length) of each character field within the 148 gathered bytes
_CHAR_SLICES = tuple((a, start, n) for (a, _o, n), start
                     in zip(_DLH_CHARS, itertools.accumulate((n for _a, _o, n in _DLH_CHARS), initial=0)))
_FORMAT_SLICE = next(slice(start, start + n) for a, start, n in _CHAR_SLICES if a == "format")
_WORD = {a: o // 4 for a, o in _DLH_LONGS}  # every MQDLH integer is 4-byte aligned
_ASCII_128 = "".join(map(chr, range(128)))
_MD_STATE = {None: 0, True: 1, False: 2}  # MQMD.Format: not given / MQDEAD / something else


@functools.lru_cache(maxsize=None)
def _batch_table(ccsid: int) -> tuple[np.ndarray | None, bool]:
    """(256 code points, ascii_only) for decoding this CCSID by table lookup, or (None, _)
    when its rows go to the scalar decoder. The table is used only if it is exactly what
    `codepages.decode` gives, so both decoders agree by construction. A multi-byte CCSID
    that is ASCII below 0x80 (UTF-8) is table-decoded for rows whose characters are all ASCII."""
    if not codepages.is_known(ccsid):
        return None, False
    if codepages.is_single_byte(ccsid):
        table = codepages.table(ccsid)
        if len(table) == 256 and codepages.decode(bytes(range(256)), ccsid)[0] == table:
            return np.array([ord(c) for c in table], dtype=np.uint32), False
        return None, False
    if codepages.decode(bytes(range(128)), ccsid)[0] == _ASCII_128:
        return np.arange(256, dtype=np.uint32), True
    return None, False


def _flags_for(key: int) -> tuple[str, ...]:
    """The flags of a table-decoded row from its key (bit 0 sniffed, bits 1-6 NULs per
    character field, bits 7-8 the MQMD.Format state), in `decode_dlh`'s order."""
    flags = ["byte_order_sniffed"] if key & 1 else []
    flags.extend(f"nul_padded:{a}" for bit, (a, _o, _n) in enumerate(_DLH_CHARS) if key >> (bit + 1) & 1)
    if key >> 7 == _MD_STATE[False]:
        flags.append("dlh_without_mqdead")
    return tuple(flags)


def _strings(codes: np.ndarray) -> list[str]:
    """Rows of code points as str. numpy's fixed-width strings drop trailing NULs, which
    are data here, so rows ending in NUL are rebuilt one by one."""
    width = codes.shape[1]
    strings = np.ascontiguousarray(codes, dtype=np.uint32).view(np.dtype(("U", width)))[:, 0].tolist()
    for j in np.flatnonzero(codes[:, -1] == 0).tolist():
        strings[j] = "".join(map(chr, codes[j].tolist()))
    return strings


def _put(columns: dict, name: str, targets: np.ndarray, values) -> None:
    """Set ``columns[name][targets] = values``; fromiter keeps each value one object
    (a flags list must not become a row of a 2-D array)."""
    columns[name][targets] = np.fromiter(values, dtype=object, count=targets.size)


def decode_dlh_batch(headers: Sequence[bytes], encodings: Sequence[int], ccsids: Sequence[int],
                     md_formats: Sequence[str | None] | None = None) -> dict[str, list]:
    """`to_columns(decode_dlh(...))` for many messages at once, one list per column.

    Rows of at least 172 bytes are checked and decoded as an n×172 array: StrucId and
    Version for all rows at once, integers from both byte-order views picked per row,
    characters by 256-entry lookup per CCSID; a header chain after the MQDLH is followed
    row by row by `decode_dlh`'s own code. Rows that need more go to `decode_dlh`: short
    rows, CCSIDs without an exact table, a StrucId in the other family than the CCSID."""
    n = len(headers)
    if md_formats is None:
        md_formats = [None] * n
    if not len(encodings) == len(ccsids) == len(md_formats) == n:
        raise ValueError(f"decode_dlh_batch: {n} headers but {len(encodings)} encodings, "
                         f"{len(ccsids)} CCSIDs and {len(md_formats)} formats")
    columns = {name: np.full(n, None, dtype=object) for name in DECODE_COLUMNS}
    encoding_all = np.asarray(encodings, dtype=np.int64).reshape(n)
    ccsid_all = np.asarray(ccsids, dtype=np.int64).reshape(n)
    lengths = np.fromiter(map(len, headers), dtype=np.int64, count=n)

    rows = np.flatnonzero(lengths >= DLH_LENGTH)
    scalar = [np.flatnonzero(lengths < DLH_LENGTH)]
    if rows.size:
        state_of = {f: _MD_STATE[_is_mqdead(f)] for f in set(md_formats)}
        md_state = np.fromiter((state_of[md_formats[i]] for i in rows.tolist()), dtype=np.int64, count=rows.size)
        scalar.append(_decode_block(rows, headers, encoding_all[rows], ccsid_all[rows], md_state, columns))
    for i in np.sort(np.concatenate(scalar)).tolist():
        row = to_columns(decode_dlh(headers[i], int(encoding_all[i]), int(ccsid_all[i]), md_formats[i]))
        for name in DECODE_COLUMNS:
            columns[name][i] = row[name]
    return {name: column.tolist() for name, column in columns.items()}


def _decode_block(rows: np.ndarray, headers, encoding: np.ndarray, ccsid: np.ndarray,
                  md_state: np.ndarray, columns: dict) -> np.ndarray:
    """Fill ``columns`` for the rows (all ≥172 bytes) that array operations can decode;
    returns the row numbers left for the scalar decoder."""
    mat = np.frombuffer(b"".join([headers[i][:DLH_LENGTH] for i in rows.tolist()]), dtype=np.uint8)
    mat = mat.reshape(rows.size, DLH_LENGTH)
    big, little = mat.view(">i4"), mat.view("<i4")  # 43 aligned MQLONGs per row, both ways
    strucid = mat.view(">u4")[:, 0]
    ebcdic = strucid == int.from_bytes(_DLH_EBCDIC, "big")
    strucid_ok = ebcdic | (strucid == int.from_bytes(_DLH_ASCII, "big"))
    declared = encoding & 0x0F
    undeclared = (declared != 1) & (declared != 2)
    use_big = (declared == 1) | (undeclared & (big[:, 1] == 1))
    valid = strucid_ok & (np.where(use_big, big[:, 1], little[:, 1]) == 1)

    invalid = np.flatnonzero(~valid)
    bad_version = strucid_ok & ~undeclared & ~valid
    mismatch = bad_version & (np.where(use_big, little[:, 1], big[:, 1]) == 1)
    problem = np.where(~strucid_ok, "bad_strucid", np.where(bad_version, "bad_version", "unknown_encoding"))
    targets = rows[invalid]
    _put(columns, "has_dlh", targets, [False] * invalid.size)
    _put(columns, "dlh_problem", targets, problem[invalid].tolist())
    _put(columns, "decode_flags", targets, [
        (["mqdead_without_dlh"] if state == _MD_STATE[True] else []) + (["byte_order_mismatch"] if odd else [])
        for state, odd in zip(md_state[invalid].tolist(), mismatch[invalid].tolist())])

    chars = mat[:, _CHAR_INDEX]
    table_id, lut = _table_ids(ccsid, ebcdic, valid, chars)
    decodable = np.flatnonzero(table_id >= 0)
    codes = lut[table_id[decodable][:, None], chars[decodable]]
    done = decodable
    targets = rows[done]
    _put(columns, "has_dlh", targets, [True] * done.size)
    _put(columns, "dlh_problem", targets, [None] * done.size)
    integers = {}
    for attribute, word in _WORD.items():
        integers[attribute] = np.where(use_big[done], big[done, word], little[done, word]).tolist()
        _put(columns, "dlh_" + attribute, targets, integers[attribute])
    key = undeclared[done].astype(np.int64) | (md_state[done] << 7)
    for bit, (attribute, start, width) in enumerate(_CHAR_SLICES):
        _put(columns, "dlh_" + attribute, targets, _strings(codes[:, start:start + width]))
        key |= (chars[done, start:start + width] == 0).any(axis=1).astype(np.int64) << (bit + 1)
    flag_sets = {k: _flags_for(k) for k in np.unique(key).tolist()}
    flags = [list(flag_sets[k]) for k in key.tolist()]
    chains = [f.rstrip(" \x00") for f in _strings(codes[:, _FORMAT_SLICE])]
    # a header after the MQDLH (MQXMIT, MQHRF2, ...): the chain is followed row by row,
    # with the scalar decoder's own code, from the table-decoded MQDLH fields
    for j, name in enumerate(chains):
        if name in _FOLLOWED:
            field_ccsid = integers["ccsid"][j]
            chain, stopped = _follow_chain(bytes(headers[targets[j]][:CHAIN_SCAN_LIMIT]), DLH_LENGTH,
                                           integers["encoding"][j],
                                           int(ccsid[done[j]]) if field_ccsid == MQCCSI_INHERIT else field_ccsid,
                                           name)
            chains[j] = ">".join(chain)
            flags[j].extend(stopped)
    _put(columns, "dlh_chain", targets, chains)
    _put(columns, "decode_flags", targets, flags)
    return rows[np.flatnonzero(valid & (table_id < 0))]


def _table_ids(ccsid: np.ndarray, ebcdic: np.ndarray, valid: np.ndarray, chars: np.ndarray):
    """Per row, the index into the returned (tables × 256) lookup array of the exact table
    for its CCSID, or -1: not valid, no table, or the CCSID does not read the StrucId's
    family (a ``ccsid_mismatch``, which the scalar decoder handles)."""
    table_id = np.full(ccsid.size, -1, dtype=np.int64)
    tables = [np.zeros(256, dtype=np.uint32)]  # never picked; keeps the array non-empty
    all_ascii = None
    for value in np.unique(ccsid[valid]).tolist():
        table, ascii_only = _batch_table(value)
        if table is None:
            continue
        for family in (False, True):
            if _ccsid_reads(value, "DLH ", family):
                picked = valid & (ccsid == value) & (ebcdic == family)
                if ascii_only:
                    all_ascii = (chars < 0x80).all(axis=1) if all_ascii is None else all_ascii
                    picked &= all_ascii
                table_id[picked] = len(tables)
        tables.append(table)
    return table_id, np.stack(tables)
