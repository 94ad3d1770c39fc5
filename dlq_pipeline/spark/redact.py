"""Redaction for notebooks and jobs that show table rows (see dlq_pipeline.redact).

``redact_frame(df)`` returns ``df`` with every column that holds message-body content made
safe to show: ``data`` becomes null and ``snippet`` (quarantine) keeps only the kind of
line. Other columns are untouched. ``redact_frame(df, enabled=not
payloads_visible(ReportSettings.from_config(config)))`` follows ``report.redact_payloads``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dlq_pipeline.redact import REDACTED

BODY_COLUMNS = ("data",)


def redact_frame(df: DataFrame, *, enabled: bool = True) -> DataFrame:
    if not enabled:
        return df
    for column in BODY_COLUMNS:
        if column in df.columns:
            df = df.withColumn(column, F.lit(None).cast(df.schema[column].dataType))
    if "snippet" in df.columns:
        kind = F.regexp_extract(F.col("snippet"), r"^(A [A-Z]{3}|[A-Z](?= |$))", 1)
        df = df.withColumn(
            "snippet",
            F.when(F.col("snippet").isNull(), None)
            .when(kind != "", F.concat(kind, F.lit(" " + REDACTED)))
            .otherwise(F.lit(REDACTED)),
        )
    return df
