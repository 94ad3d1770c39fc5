"""Decode stage: the MQDLH of every message, as columns, with a vectorized pandas UDF.

Only the header slice (the first ``CHAIN_SCAN_LIMIT`` bytes) crosses into Python, never the
whole payload, so decode cost does not grow with message size. The UDF is a thin shell
around ``structures.decode_dlh_batch``: the pure decoder it must agree with.
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from dlq_pipeline.spark.schemas import table_schema
from dlq_pipeline.formats.structures import CHAIN_SCAN_LIMIT, decode_dlh_batch


def decoded_struct() -> StructType:
    """The decode columns (schemas/decoded.json without the key). Column comments are left
    out: Spark compares a pandas UDF's result type including metadata, and Arrow has none."""
    return StructType(
        [StructField(f.name, f.dataType, f.nullable) for f in table_schema("decoded").fields if f.name != "message_key"]
    )


def _decode_batch(header: pd.Series, encoding: pd.Series, ccsid: pd.Series, md_format: pd.Series) -> pd.DataFrame:
    columns = decode_dlh_batch(
        header.tolist(),
        encoding.astype("int64").tolist(),
        ccsid.astype("int64").tolist(),
        md_format.tolist(),
    )
    return pd.DataFrame(columns, columns=[f.name for f in decoded_struct().fields])


def header_slice(data: Column) -> Column:
    return F.substring(data, 1, CHAIN_SCAN_LIMIT)


def decode_headers(messages: DataFrame) -> DataFrame:
    """``messages`` plus the ``dlh_*``, ``has_dlh``, ``dlh_problem``, ``dlh_chain`` and
    ``decode_flags`` columns, decoded with the MQMD's Encoding and CCSID."""
    udf = F.pandas_udf(_decode_batch, returnType=decoded_struct())
    decoded = udf(header_slice(F.col("data")), F.col("encoding"), F.col("ccsid"), F.col("format"))
    names = [f.name for f in decoded_struct().fields]
    return messages.withColumn("_decoded", decoded).select(
        *[c for c in messages.columns if c not in names], *[F.col(f"_decoded.{n}").alias(n) for n in names]
    )
