"""Section 1, decode: the MQDLH decoded by ours (an Arrow UDF over the header bytes), against
the obvious way (a row-at-a-time Python UDF) and the limit (a scan of ``data``; JVM expressions
for the subset a generic expression can decode)."""

from __future__ import annotations

import os
from pathlib import Path

from benchmarks.common import Context, Sizes, interleaved, median, noop, ratio, summary
from benchmarks.data import decode_input

# MQDLH fields at their byte offsets (0-based), for the JVM-only decode
_DLH_TEXT = (
    ("dlh_dest_q", 12, 48),
    ("dlh_dest_qmgr", 60, 48),
    ("dlh_format", 116, 8),
    ("dlh_put_appl_name", 128, 28),
    ("dlh_put_date", 156, 8),
    ("dlh_put_time", 164, 8),
)
_DLH_INT = (("dlh_reason", 8), ("dlh_encoding", 108), ("dlh_ccsid", 112), ("dlh_put_appl_type", 124))
_ASCII_CCSIDS = (367, 437, 646, 819, 850, 912, 923, 1208, 1250, 1251, 1252, 5346, 5347, 5348)


def _le_int_sql(offset: int) -> str:
    """A little-endian signed 32-bit integer at ``offset`` of ``data``, in Spark SQL."""
    h = f"hex(substring(data, {offset + 1}, 4))"
    swapped = f"concat(substr({h}, 7, 2), substr({h}, 5, 2), substr({h}, 3, 2), substr({h}, 1, 2))"
    unsigned = f"CAST(conv({swapped}, 16, 10) AS BIGINT)"
    return f"CAST(CASE WHEN {unsigned} >= 2147483648 THEN {unsigned} - 4294967296 ELSE {unsigned} END AS INT)"


def jvm_decode(df):
    """The MQDLH decoded with JVM expressions only (substring/hex/conv), for the subset a
    generic expression can do: little-endian (Encoding 546) headers in an ASCII CCSID. Every
    other message gets nulls: this is the floor a JVM decode could reach, not a decoder."""
    from pyspark.sql import functions as F

    usable = (
        f"((encoding & 15) = 2 AND ccsid IN ({', '.join(map(str, _ASCII_CCSIDS))}) "
        f"AND length(data) >= 172 AND CAST(substring(data, 1, 4) AS STRING) = 'DLH ' "
        f"AND {_le_int_sql(4)} = 1)"
    )
    columns = [F.expr(usable).alias("has_dlh")]
    columns += [F.expr(f"CASE WHEN {usable} THEN {_le_int_sql(o)} END").alias(n) for n, o in _DLH_INT]
    columns += [
        F.expr(f"CASE WHEN {usable} THEN CAST(substring(data, {o + 1}, {n}) AS STRING) END").alias(c)
        for c, o, n in _DLH_TEXT
    ]
    return df.select("message_key", *columns)


def row_udf_decode(df):
    """The obvious way: a row-at-a-time Python UDF calling ``decode_dlh`` (same header slice)."""
    from pyspark.sql import functions as F

    from dlq_pipeline.mq.dlh_decoder import decode_dlh, to_columns
    from dlq_pipeline.mq.spark import decoded_struct, header_slice

    schema = decoded_struct()
    names = [f.name for f in schema.fields]

    def decode_one(header, encoding, ccsid, md_format):
        columns = to_columns(decode_dlh(bytes(header), encoding, ccsid, md_format))
        return tuple(columns[n] for n in names)

    udf = F.udf(decode_one, schema)
    decoded = udf(header_slice(F.col("data")), F.col("encoding"), F.col("ccsid"), F.col("format"))
    return df.select("message_key", decoded.alias("d")).select("message_key", "d.*")


def ours_decode(df):
    """``mq.spark.decode_headers``: an Arrow (or pandas) UDF over the header bytes."""
    from dlq_pipeline.mq.spark import decode_headers, decoded_struct

    names = [f.name for f in decoded_struct().fields]
    return decode_headers(df.select("message_key", "data", "encoding", "ccsid", "format")).select("message_key", *names)


def jvm_agreement(spark, pool: str) -> dict:
    """On the pool: of the messages the JVM decode handles, how many agree with ours."""
    from pyspark.sql import functions as F

    df = spark.read.parquet(pool)
    ours = ours_decode(df).alias("o")
    jvm = jvm_decode(df).where("has_dlh").alias("j")
    joined = jvm.join(ours, "message_key")
    same = F.lit(True)
    for name, _ in _DLH_INT:
        same = same & (F.col(f"j.{name}") == F.col(f"o.{name}"))
    for name, _, _ in _DLH_TEXT:
        same = same & (F.col(f"j.{name}") == F.col(f"o.{name}"))
    row = joined.agg(F.count("*").alias("n"), F.sum(F.when(same, 1).otherwise(0)).alias("same")).first()
    total = df.count()
    return {
        "handled": int(row["n"]),
        "agree": int(row["same"] or 0),
        "of": total,
        "handled_fraction": round(row["n"] / total, 3) if total else None,
    }


def bench_decode(spark, sizes: Sizes, work: Path, ctx: Context) -> dict:
    from pyspark.sql import functions as F

    pool, copies = decode_input(spark, sizes, work)
    df = spark.read.parquet(copies)
    stats = df.agg(F.count("*").alias("n"), F.sum("data_length").alias("bytes")).first()
    n, payload = int(stats["n"]), int(stats["bytes"] or 0)
    variants = {
        "scan_only": lambda: noop(df.select("message_key", "data")),
        "jvm_expressions": lambda: noop(jvm_decode(df)),
        "ours": lambda: noop(ours_decode(df)),
        "row_udf": lambda: noop(row_udf_decode(df)),
    }
    cpu: dict[str, list[float]] = {}
    times = interleaved(variants, sizes.repeats, cpu=cpu)
    figures = {k: summary(v, n, payload / 1e6) for k, v in times.items()}
    for k, used in cpu.items():
        figures[k]["cpu_us_per_message"] = round(median(used) / n * 1e6, 3) if n else None
    t = {k: median(v) for k, v in times.items()}
    c = {k: median(v) for k, v in cpu.items()}

    def ratios(x: dict) -> dict:
        return {
            # targets: ours <= 1.5x the JVM expressions, >= 3x faster than the row UDF
            "ours_over_jvm_expressions": ratio(x["ours"], x["jvm_expressions"]),
            "row_udf_over_ours": ratio(x["row_udf"], x["ours"]),
            "ours_over_scan_only": ratio(x["ours"], x["scan_only"]),
            "jvm_expressions_over_scan_only": ratio(x["jvm_expressions"], x["scan_only"]),
        }

    return {
        "messages": n,
        "payload_mb": round(payload / 1e6, 1),
        "distinct_messages": sizes.decode_pool,
        "mean_payload_bytes": round(payload / n) if n else 0,
        "variants": figures,
        "ratios": ratios(t),
        # the same in CPU seconds (JVM + Python workers): steadier than wall time on a shared machine
        "cpu_ratios": ratios(c) if all(c.values()) else None,
        "load_average_after": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "jvm_expressions_coverage": jvm_agreement(spark, pool),
    }
