"""The MQDLH decoder of one message: `decode_dlh` reads the MQDLH at the start of a
message's data with the MQMD's Encoding and CCSID, judges it as IBM's handler does, follows
the header chain after it (MQXQH, MQRFH2, MQMDE, MQTM) and notes what is odd, never raising
for the data (`HeaderResult`); `to_columns` gives its decode columns. What it reads of a
message is bounded (`CHAIN_SCAN_LIMIT`, `dlh_head`), so Spark ships only those bytes.

The Arrow decoder (`dlh_arrow_decoder`) agrees with it exactly, column for column, and
hands it the rows array operations do not decode. The structures' layouts are
`structures`'; format names go only through `constants`.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, fields
from typing import Any, cast

from dlq_pipeline.mq import codepages, constants
from dlq_pipeline.mq.structures import (
    DLH_CCSID_OFFSET,
    DLH_CHAR_FIELDS,
    DLH_ENCODING_OFFSET,
    DLH_FORMAT_LENGTH,
    DLH_FORMAT_OFFSET,
    DLH_LAYOUT,
    DLH_LENGTH,
    DLH_LONG_FIELDS,
    DLH_STRUCID_ASCII,
    DLH_STRUCID_EBCDIC,
    MDE_LAYOUT,
    MDE_LENGTH,
    MQCCSI_INHERIT,
    MQMD_V1_LAYOUT,
    RFH2_FIXED_LENGTH,
    RFH2_LAYOUT,
    TM_LAYOUT,
    TM_LENGTH,
    XQH_LAYOUT,
    XQH_LENGTH,
    XQH_MD_OFFSET,
    BytesLike,
    DeadLetterHeader,
    Layout,
    LayoutField,
    StructureError,
    ccsid_reads,
    choose_order,
    open_structure,
    read_fields,
    read_long,
    read_text,
    strucid_family,
)

__all__ = [
    "CHAIN_SCAN_LIMIT",
    "DECODE_COLUMNS",
    "DLH_VERSION_END",
    "FOLLOWED_FORMATS",
    "ASCII_128",
    "HeaderResult",
    "is_mqdead",
    "follow_chain",
    "decode_dlh",
    "dlh_restore_fields",
    "to_columns",
    "chain_format_prefixes",
    "chain_possible",
    "dlh_head",
    "chain_format_offset",
]

# The decoder never looks further into a message than this: the Spark stage ships only this
# slice into Python, so the scalar decoder must not see more than the batch decoder does.
CHAIN_SCAN_LIMIT = 4096

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
# MQDLH with diagnosis, and the header chain

DLH_VERSION_END = 8  # StrucId and Version: what must be there to judge anything else


def _dlh_problem(data: bytes, encoding: int) -> tuple[str | None, str | None, bool]:
    """(problem, order, sniffed) for the first bytes of a message."""
    head = data[:4]
    if not (DLH_STRUCID_ASCII.startswith(head) or DLH_STRUCID_EBCDIC.startswith(head)):
        return "bad_strucid", None, False
    if len(data) < DLH_VERSION_END:
        return "too_short", None, False
    order, problem, sniffed = choose_order(data, encoding, (1,))
    if problem:
        return problem, order, False
    if len(data) < DLH_LENGTH:
        return "too_short", order, sniffed
    return None, order, sniffed


def _charset_flag(ccsid: int, ebcdic: bool) -> str | None:
    if not codepages.is_known(ccsid):
        return "unknown_ccsid"
    if not ccsid_reads(ccsid, "DLH ", ebcdic):
        return "ccsid_mismatch"
    return None


def is_mqdead(md_format: str | None) -> bool | None:
    """Whether an MQMD.Format names MQDEAD (trailing blanks and NULs aside); None when
    there is no MQMD.Format to judge."""
    if md_format is None:
        return None
    return md_format.rstrip(" \x00") == _FMT_DEAD


def _chain_fields(layout: Layout) -> tuple[LayoutField, ...]:
    return tuple(f for f in layout.fields if f[0] in ("struc_length", "encoding", "ccsid", "format"))


# What the chain needs of each header: its checks (`open_structure`, and those of decode_xqh,
# decode_mde and decode_rfh2) and the fields that say what follows, nothing else: reading
# every MQMD field of an MQXQH would be most of the decode cost of a transmission-queue
# dead letter.
_NEXT_FIELDS = {layout.name: _chain_fields(layout) for layout in (DLH_LAYOUT, MDE_LAYOUT, RFH2_LAYOUT, MQMD_V1_LAYOUT)}


def _next_after(name: str, raw: BytesLike, encoding: int, ccsid: int) -> tuple[int, int, int, str] | None:
    """(length, encoding, ccsid, format) of the part after header ``name``; None when the
    header ends the chain. Raises StructureError exactly when decoding that header would."""
    if name == _FMT_TRIGGER:
        open_structure(TM_LAYOUT, raw, encoding, ccsid)  # MQTM: validated, and nothing follows it
        return None
    if name == _FMT_XMIT:
        order, ebcdic, ccsid, _ = open_structure(XQH_LAYOUT, raw, encoding, ccsid)
        md_raw = raw[XQH_MD_OFFSET:XQH_LENGTH]
        if strucid_family(md_raw, "MD  ") is not ebcdic:
            raise StructureError(
                "MQXQH", XQH_MD_OFFSET, f"embedded MQMD StrucId is {bytes(md_raw[:4]).hex().upper()}, not 'MD  '"
            )
        md = read_fields(_NEXT_FIELDS["MQMD"], md_raw, order, ccsid, ebcdic)
        return XQH_LENGTH, md["encoding"], md["ccsid"], md["format"]
    layout, minimum = {
        _FMT_DEAD: (DLH_LAYOUT, None),
        _FMT_RFH2: (RFH2_LAYOUT, RFH2_FIXED_LENGTH),
        _FMT_MDE: (MDE_LAYOUT, MDE_LENGTH),
    }[name]
    order, ebcdic, ccsid, _ = open_structure(layout, raw, encoding, ccsid)
    values = read_fields(_NEXT_FIELDS[layout.name], raw, order, ccsid, ebcdic)
    if minimum is None:
        return DLH_LENGTH, values["encoding"], values["ccsid"], values["format"]
    if values["struc_length"] < minimum:
        raise StructureError(layout.name, 8, f"StrucLength {values['struc_length']} is less than {minimum}")
    return values["struc_length"], values["encoding"], values["ccsid"], values["format"]


FOLLOWED_FORMATS = frozenset({_FMT_DEAD, _FMT_XMIT, _FMT_RFH2, _FMT_MDE, _FMT_TRIGGER})
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


def follow_chain(
    data: BytesLike, offset: int, encoding: int, ccsid: int, fmt: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Names of the formats from ``offset`` on, and a ``chain_stopped`` flag when a named
    header cannot be read. Every header advances by at least 36 bytes and ``data`` is at
    most CHAIN_SCAN_LIMIT bytes, so this ends."""
    names = []
    while True:
        name = fmt.rstrip(" \x00")
        names.append(name)
        if name not in FOLLOWED_FORMATS:
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
    md_dead = is_mqdead(md_format)
    problem, order, sniffed = _dlh_problem(data, encoding)
    if problem and not (problem == "too_short" and order is not None):
        flags = []
        if md_dead:
            flags.append("mqdead_without_dlh")
        if problem == "bad_version" and read_long(data, 4, "<" if order == ">" else ">") == 1:
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
    chain, chain_flags = follow_chain(data, DLH_LENGTH, dlh.encoding, next_ccsid, dlh.format)
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
    text = read_text(data[DLH_FORMAT_OFFSET : DLH_FORMAT_OFFSET + DLH_FORMAT_LENGTH], text_ccsid, family)
    return None, (text, read_long(data, DLH_ENCODING_OFFSET, order), read_long(data, DLH_CCSID_OFFSET, order))


def _dlh_text_reading(data: bytes, ccsid: int) -> tuple[str | None, int, bool | None]:
    """``(charset flag, CCSID, family)`` the MQDLH's characters are read with (`read_text`): the
    MQMD's CCSID where it is known and reads the StrucId's family, else by the family the
    StrucId is spelled in (`decode_dlh` and `dlh_restore_fields` read them alike)."""
    ebcdic = data[:4] == DLH_STRUCID_EBCDIC
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
    values: dict[str, Any] = {a: read_long(data, o, order) if o + 4 <= len(data) else None for a, o in DLH_LONG_FIELDS}
    present = [(a, o, n) for a, o, n in DLH_CHAR_FIELDS if o + n <= len(data)]
    values.update({a: None for a, _o, _n in DLH_CHAR_FIELDS})
    values.update({a: read_text(data[o : o + n], text_ccsid, family) for a, o, n in present})
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
# What the decoder reads of a message

# The 128 characters ASCII (and UTF-8) reads bytes 0x00-0x7F as, in byte order
ASCII_128 = "".join(map(chr, range(128)))


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
    readings.append(ASCII_128)
    for ccsid in codepages.KNOWN_CCSIDS:  # the multi-byte ones: ASCII-compatible, or 2+ bytes a character
        assert (
            codepages.is_single_byte(ccsid)
            or codepages.decode(bytes(range(128)), ccsid)[0] == ASCII_128
            or len(codepages.encode("M", ccsid)) >= 2
        ), ccsid
    prefixes: set[bytes] = set()
    for name in FOLLOWED_FORMATS:
        for reading in readings:
            choices = [[b for b, c in enumerate(reading) if c == char] for char in name]
            prefixes.update(bytes(p) for p in itertools.product(*choices))
    return frozenset(prefixes)


def chain_possible(data: bytes) -> bool:
    """Whether `decode_dlh` may read past the first 172 bytes of this message's data: its
    bytes at the MQDLH Format's offset start one of `chain_format_prefixes`."""
    for length, prefixes in _prefixes_by_length():
        if bytes(data[DLH_FORMAT_OFFSET : DLH_FORMAT_OFFSET + length]) in prefixes:
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
    return DLH_FORMAT_OFFSET
