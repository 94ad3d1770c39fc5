"""Decode stage: the MQDLH of every message, as columns, with a vectorized Python UDF.

What crosses into Python is only what the header needs: each message's first 172 bytes
(``rpad``: exactly 172, zero-padded, so the batch is one byte matrix), its length, and the
bytes after them up to ``CHAIN_SCAN_LIMIT`` only for the few messages whose MQDLH Format
names a header the decoder follows (`dlh_decoder.chain_possible`, tested here in the JVM on
the bytes alone). So decode cost does not grow with message size, and a realistic DLQ ships
about 200 bytes a message instead of 4 KB.

Those bytes (`dlh_decoder.dlh_head`) are stored by ingest in ``messages.data_head``, so the
stored messages are decoded without reading ``data`` at all (`without_data`): reading a
100 MB message from Parquet copies all of it to slice 172 bytes (docs/performance.md, "Decode reads only the MQDLH
bytes"). A frame
without ``data_head`` (and a row landed before the column existed, where it is null) is
decoded from ``data`` with the same slice computed in the JVM (`head_sql`).

The UDF is a thin shell around ``dlh_arrow_decoder.decode_dlh_arrow``, the batch form of the pure
decoder it must agree with: an Arrow UDF (Spark 4.1+) that hands it Arrow arrays and
returns its struct array as is; on older Spark a pandas UDF doing the same through pandas.
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from dlq_pipeline.engine.sql_text import sql_json_array
from dlq_pipeline.mq.constants import reason_names
from dlq_pipeline.mq.dlh_arrow_decoder import decode_dlh_arrow
from dlq_pipeline.mq.dlh_decoder import CHAIN_SCAN_LIMIT, chain_format_offset, chain_format_prefixes
from dlq_pipeline.mq.structures import DLH_LENGTH
from dlq_pipeline.tables import HEAD_COLUMN
from dlq_pipeline.warehouse.schemas import table_schema


def decoded_struct() -> StructType:
    """The decode columns (schemas/decoded.json without the key). Column comments are left
    out: Spark compares a pandas UDF's result type including metadata, and Arrow has none."""
    return StructType(
        [StructField(f.name, f.dataType, f.nullable) for f in table_schema("decoded").fields if f.name != "message_key"]
    )


def _decode_arrow(head, _head_again, tail, length, encoding, ccsid, md_format):
    return decode_dlh_arrow(head, tail, length, encoding, ccsid, md_format)


def _decode_pandas(
    head: pd.Series,
    _head_again: pd.Series,
    tail: pd.Series,
    length: pd.Series,
    encoding: pd.Series,
    ccsid: pd.Series,
    md_format: pd.Series,
) -> pd.DataFrame:
    import pyarrow as pa

    def binary(values: pd.Series):
        return pa.array([None if v is None else bytes(v) for v in values], pa.binary())

    result = decode_dlh_arrow(
        binary(head),
        binary(tail),
        length.astype("int64").to_numpy(),
        encoding.astype("int64").to_numpy(),
        ccsid.astype("int64").to_numpy(),
        pa.array(md_format.tolist(), pa.string()),
    )
    return pd.DataFrame({f.name: result.field(f.name).to_pylist() for f in decoded_struct().fields})


def header_slice(data: Column) -> Column:
    """Everything of ``data`` the decoder may read (the row-at-a-time benchmark's input)."""
    return F.substring(data, 1, CHAIN_SCAN_LIMIT)


def _chain_test() -> tuple[int, int, list[bytes]]:
    """What `dlh_decoder.chain_possible` compares: (1-based offset, width) of the bytes at the
    MQDLH Format's offset, and the names' prefixes they may start with."""
    width = {len(p) for p in chain_format_prefixes()}
    assert len(width) == 1, "every followed format name has the same length"
    return chain_format_offset() + 1, width.pop(), sorted(chain_format_prefixes())


def chain_possible_sql(data: str = "data") -> str:
    """`dlh_decoder.chain_possible` in Spark SQL: the bytes at the MQDLH Format's offset
    start a name of a header the decoder follows, in some CCSID."""
    offset, width, prefixes = _chain_test()
    names = ", ".join(f"X'{p.hex().upper()}'" for p in prefixes)
    return f"(substring({data}, {offset}, {width}) IN ({names}))"  # bytes to bytes: no hex string per row


def head_sql(data: str = "data") -> str:
    """`dlh_decoder.dlh_head` in Spark SQL: the bytes of ``data`` the decoder reads."""
    return (
        f"CASE WHEN {chain_possible_sql(data)} THEN substring({data}, 1, {CHAIN_SCAN_LIMIT}) "
        f"ELSE substring({data}, 1, {DLH_LENGTH}) END"
    )


def head_source(columns) -> str:
    """SQL for each message's `dlh_decoder.dlh_head` in a frame with these ``columns``: the
    stored ``data_head``, else (no such column, or a row landed before it existed) computed
    from ``data``."""
    if HEAD_COLUMN not in columns:
        return head_sql("`data`")
    if "data" not in columns:
        return f"`{HEAD_COLUMN}`"
    return f"coalesce(`{HEAD_COLUMN}`, {head_sql('`data`')})"


def header_columns(head: str) -> list[Column]:
    """(head, tail, length): what the decoder is given of each message, from ``head`` (SQL
    for its `dlh_decoder.dlh_head`: 172 bytes, or up to CHAIN_SCAN_LIMIT where a chain may
    follow). The length of ``head`` stands for the data's: the decoder only compares it
    with 172 and CHAIN_SCAN_LIMIT, and reads past 172 only where a chain may follow."""
    tail = F.when(
        F.expr(f"length({head})") > DLH_LENGTH,
        F.expr(f"substring({head}, {DLH_LENGTH + 1}, {CHAIN_SCAN_LIMIT - DLH_LENGTH})"),
    )
    return [F.expr(f"rpad({head}, {DLH_LENGTH})"), tail, F.expr(f"length({head})")]


def without_data(messages: DataFrame) -> DataFrame:
    """Stored ``messages`` rows without ``data``, each with its ``data_head``: what decode and
    classify read. Rows landed before ``data_head`` existed (null there) get it from
    ``data``, in a second scan of their own: its filter (``data_head IS NULL``) is pushed
    into the Parquet reader, whose statistics (null count 0) skip every row group written
    since, so the data of those is never read (a union of two scans of the same files, in
    the same stage: no job, no shuffle)."""
    head = F.col(HEAD_COLUMN)
    stored = messages.where(head.isNotNull()).drop("data")
    older = messages.where(head.isNull()).withColumn(HEAD_COLUMN, F.expr(head_sql("`data`"))).drop("data")
    return stored.unionByName(older)


def decoder(arrow: bool | None = None):
    """The decode UDF: an Arrow UDF where Spark has them (4.1+), else a pandas UDF;
    ``arrow`` forces one (tests compare both). Its arguments: head, head again (ignored,
    see `decode_headers`), tail, length, Encoding, CCSID, Format."""
    if arrow is None:
        arrow = hasattr(F, "arrow_udf")
    # pyspark's overloads all want functionType; without it Spark makes a scalar UDF of either kind
    if arrow:
        return F.arrow_udf(_decode_arrow, returnType=decoded_struct())  # type: ignore[call-overload]
    return F.pandas_udf(_decode_pandas, returnType=decoded_struct())  # type: ignore[call-overload]


_INPUTS = ("__dlq_decode_head", "__dlq_decode_tail", "__dlq_decode_length")


def decode_inputs(messages: DataFrame) -> tuple[DataFrame, list[Column]]:
    """``messages`` with the decoder's inputs as columns of their own, and the decode UDF's
    arguments: what `decode_headers` calls it with (so does `rules.spark.decode_and_classify_columns`).

    The inputs (`header_columns`) are computed in a projection of their own, below the UDF:
    Spark keeps every row that goes into a Python UDF in a queue until its result is back,
    so when the inputs were computed from ``data`` inside the UDF's call, each message's
    whole payload was copied into that queue (about a quarter of decode's CPU on the
    benchmark mix). Below, ``data`` is pruned wherever nothing after decode reads it
    (classify). Spark would merge the two projections back (CollapseProject) unless an
    input it cannot cheaply repeat is used twice: so the head goes to the UDF twice (sent
    once; the UDF ignores the second)."""
    head, tail, length = _INPUTS
    sources = header_columns(head_source(messages.columns))
    prepared = messages.select("*", *[c.alias(n) for c, n in zip(sources, _INPUTS)])
    arguments = [
        F.col(head),
        F.col(head),
        F.col(tail),
        F.col(length),
        F.col("encoding"),
        F.col("ccsid"),
        F.col("format"),
    ]
    return prepared, arguments


def decoded_columns(messages: DataFrame, result: str) -> list[str | Column]:
    """The columns of ``messages`` (but those decode replaces) and the decode columns, from
    the struct column ``result`` holding the decoder's output."""
    names = [f.name for f in decoded_struct().fields]
    return [*[c for c in messages.columns if c not in names], *[F.col(f"{result}.{n}").alias(n) for n in names]]


def decode_headers(messages: DataFrame, *, arrow: bool | None = None) -> DataFrame:
    """``messages`` plus the ``dlh_*``, ``has_dlh``, ``dlh_problem``, ``dlh_chain`` and
    ``decode_flags`` columns, decoded with the MQMD's Encoding and CCSID (`decode_inputs`
    says what goes into the UDF)."""
    prepared, arguments = decode_inputs(messages)
    return prepared.withColumn("_decoded", decoder(arrow)(*arguments)).select(*decoded_columns(messages, "_decoded"))


# --- column functions for a user's own query (docs/api.md) ------------------------------------


def _column(given: str | Column) -> Column:
    return F.col(given) if isinstance(given, str) else given


def dlh_head_column(data: Column) -> Column:
    """`head_sql` as a Column, for a column given as a Column rather than by name."""
    offset, width, prefixes = _chain_test()
    possible = F.substring(data, offset, width).isin(*[F.lit(bytearray(p)) for p in prefixes])
    return F.when(possible, F.substring(data, 1, CHAIN_SCAN_LIMIT)).otherwise(F.substring(data, 1, DLH_LENGTH))


def decode_dlh(
    data: str | Column = "data",
    *,
    encoding: str | Column = "encoding",
    ccsid: str | Column = "ccsid",
    format: str | Column = "format",  # noqa: A002 - the MQMD field's name
) -> Column:
    """The MQDLH at the start of each message's ``data`` (or its ``data_head``), decoded with
    the MQMD's ``encoding``, ``ccsid`` and ``format``: a struct of the ``decisions`` table's
    ``dlh_*``, ``has_dlh``, ``dlh_problem``, ``dlh_chain`` and ``decode_flags`` columns, the
    same values the pipeline's decode stage gives (`decode_headers`). Only the header's bytes
    go to Python."""
    head = dlh_head_column(_column(data))
    length = F.length(head)
    tail = F.when(length > DLH_LENGTH, F.substring(head, DLH_LENGTH + 1, CHAIN_SCAN_LIMIT - DLH_LENGTH))
    return decoder()(head, head, tail, length, _column(encoding), _column(ccsid), _column(format))


def reason_names_sql() -> str:
    """Every named MQDLH Reason value -> its name (`constants.reason_names`), as one SQL map
    literal (two JSON arrays the optimizer folds: no expression per value)."""
    names = reason_names()
    codes = sorted(names)
    return f"map_from_arrays({sql_json_array(codes, 'INT')}, {sql_json_array([names[c] for c in codes], 'STRING')})"


def reason_name(reason: str | Column = "dlh_reason") -> Column:
    """The ``MQRC_*`` (or ``MQFB_*``) name of an MQDLH Reason column, as `constants.reason_name`
    gives it; null for a value nobody named, and for null."""
    return F.try_element_at(F.expr(reason_names_sql()), _column(reason).cast("int"))
