"""The MQDLH decoder of an Arrow batch: `decode_dlh_arrow` (and `decode_dlh_batch` over
Python values) gives what `dlh_decoder.decode_dlh` and `dlh_decoder.to_columns` give for
each message, column for column, for the Spark stage's Arrow UDF.

The Spark stage hands the decoder Arrow arrays. Every message's first 172 bytes come
right-padded to 172 (Spark's ``rpad(data, 172)``), so the batch is one n×172 byte matrix
without a copy; the bytes after them come only for rows whose MQDLH Format may name a
header to follow (`dlh_decoder.chain_possible`). The fixed layout is read for the whole
batch at once (StrucId and Version checks, both byte-order views of the integers, one
256-entry lookup per CCSID for the characters) and the columns are built as Arrow arrays
without a Python object per row. Only rows that need more go through `decode_dlh`'s own
code: a header chain, a cut MQDLH, a CCSID without an exact table, characters outside
ASCII.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from dlq_pipeline.mq import codepages
from dlq_pipeline.mq.dlh_decoder import (
    ASCII_128,
    CHAIN_SCAN_LIMIT,
    DECODE_COLUMNS,
    DLH_VERSION_END,
    FOLLOWED_FORMATS,
    decode_dlh,
    follow_chain,
    is_mqdead,
    to_columns,
)
from dlq_pipeline.mq.structures import (
    DLH_CHAR_FIELDS,
    DLH_LENGTH,
    DLH_LONG_FIELDS,
    DLH_STRUCID_ASCII,
    DLH_STRUCID_EBCDIC,
    MQCCSI_INHERIT,
    ccsid_reads,
    read_text,
)

if TYPE_CHECKING:
    import pyarrow as pa  # imported where used: a message's decode needs no Arrow

__all__ = [
    "decode_arrow_schema",
    "decode_dlh_arrow",
    "decode_dlh_batch",
]

_CHAR_INDEX = np.concatenate([np.arange(o, o + n) for _a, o, n in DLH_CHAR_FIELDS])
# (attribute, start, length) of each character field within the 148 gathered bytes
_CHAR_SLICES = tuple(
    (a, start, n)
    for (a, _o, n), start in zip(DLH_CHAR_FIELDS, itertools.accumulate((n for _a, _o, n in DLH_CHAR_FIELDS), initial=0))
)
_WORD = {a: o // 4 for a, o in DLH_LONG_FIELDS}  # every MQDLH integer is 4-byte aligned
_MD_STATE = {None: 0, True: 1, False: 2}  # MQMD.Format: not given / MQDEAD / something else
_INT_COLUMNS = frozenset("dlh_" + a for a, _o in DLH_LONG_FIELDS)
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
    if codepages.decode(bytes(range(128)), ccsid)[0] == ASCII_128:
        return bytes([*range(128), *[_NOT_ASCII] * 128]), True
    return None


def _flags_for(key: int) -> tuple[str, ...]:
    """The flags of a table-decoded row from its key (bit 0 sniffed, bits 1-6 NULs per
    character field, bits 7-8 the MQMD.Format state), in `decode_dlh`'s order."""
    flags = ["byte_order_sniffed"] if key & 1 else []
    flags.extend(f"nul_padded:{a}" for bit, (a, _o, _n) in enumerate(DLH_CHAR_FIELDS) if key >> (bit + 1) & 1)
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
    states = np.array([_MD_STATE[is_mqdead(f)] for f in encoded.dictionary.to_pylist()] + [0], dtype=np.int64)
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
    spelled = [
        ((strucid == np.frombuffer(s, np.uint8)) | ~inside).all(axis=1) for s in (DLH_STRUCID_ASCII, DLH_STRUCID_EBCDIC)
    ]
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
    no_version = np.flatnonzero((size < DLH_VERSION_END) & (spelled[0] | spelled[1]))
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
    left = [np.flatnonzero((size >= DLH_VERSION_END) & (size < DLH_LENGTH) & (spelled[0] | spelled[1]))]
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
    ebcdic = mat.view(">u4")[:, 0] == int.from_bytes(DLH_STRUCID_EBCDIC, "big")
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
                            read_text(field_raw[k].tobytes(), int(c), None)
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
        followed = np.flatnonzero(
            pc.is_in(chain, value_set=pa.array(sorted(FOLLOWED_FORMATS))).to_numpy(zero_copy_only=False)
        )
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
                found, stopped = follow_chain(rest, 0, enc, next_ccsid, name)
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
        if found is None or not ccsid_reads(key >> 1, "DLH ", bool(key & 1)):
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
