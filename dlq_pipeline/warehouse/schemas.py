"""The tables' schemas as Spark types, and `conform`, which every stored table is written through.

The schema files are `dlq_pipeline.tables`'s (package data, the single source of truth). A
field's ``type`` may be Spark's JSON form or a DDL type string (``array<string>``).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from dlq_pipeline.engine.sql_text import sql_column, sql_string
from dlq_pipeline.tables import TABLES, SchemaError, table_document


@cache
def table_schema(name: str) -> StructType:
    """The Spark schema of table ``name``: types, nullability and column comments."""
    doc = table_document(name)
    try:
        return _struct(doc["schema"])
    except (KeyError, TypeError, ValueError) as exc:
        raise SchemaError(f"schema of {name!r}: {exc}") from None


def arrow_schema(name: str):
    """The Arrow schema of table ``name`` (timestamps as UTC instants), for the DataFrames
    built from Arrow data: `local_rows` and replay's ``mapInArrow``."""
    return arrow_schema_of(table_schema(name))


def arrow_schema_of(schema: StructType):
    """The Arrow schema Spark gives ``schema`` (timestamps as UTC instants): what a
    ``mapInArrow`` function or a Python data source hands Spark for it."""
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(schema, timezone="UTC")
    except TypeError:  # pyspark 3.5: no timezone argument, TimestampType is always UTC there
        return to_arrow_schema(schema)


def local_rows(spark: SparkSession, rows: list[tuple], name: str) -> DataFrame:
    """Rows built on the driver (tuples in the schema's order) as a DataFrame of table
    ``name``, handed to the JVM as one Arrow table.

    Why not ``createDataFrame(rows, schema)``: that DataFrame is computed by Python worker
    processes, and an action that stops reading early (``isEmpty``, as `Storage.merge_new`
    asks before writing) closes their pipe while they still write, which printed a
    ``BrokenPipeError`` traceback per worker on stderr after every successful drain. An
    Arrow table needs no Python worker."""
    import pyarrow as pa

    schema = table_schema(name)
    arrow = arrow_schema(name)
    columns = list(zip(*rows)) if rows else [()] * len(schema.fields)
    table = pa.Table.from_arrays([pa.array(list(c), type=f.type) for c, f in zip(columns, arrow)], schema=arrow)
    if not hasattr(DataFrame, "toArrow"):  # Spark 3.5 takes no Arrow table: its pandas frame, sent as Arrow
        return spark.createDataFrame(table.to_pandas(), schema)
    return spark.createDataFrame(table, schema)


def collected_arrow(frame: DataFrame):
    """``frame``'s rows on the driver as one Arrow table: columns, not a Python object per
    value, so a million rows of a few small columns take tens of MB (Spark 4.0's
    ``toArrow``; Spark 3.5's classic session has the same collect unnamed)."""
    import pyarrow as pa

    if hasattr(frame, "toArrow"):
        return frame.toArrow()
    batches = frame._collect_as_arrow()  # type: ignore[operator]  # pyspark 3.5, where the stubs do not name it
    return pa.Table.from_batches(batches, schema=arrow_schema_of(frame.schema))


def arrow_conformed(table, name: str):
    """An Arrow ``table`` read from a data file of table ``name``, as `arrow_schema` gives it:
    its columns in order and cast (Spark's INT96 timestamps, which pyarrow reads as naive
    nanoseconds, are UTC instants), a column its file lacks (added to the schema later) null."""
    import pyarrow as pa

    schema = arrow_schema(name)
    have = set(table.column_names)
    columns = [
        table.column(f.name).cast(f.type) if f.name in have else pa.nulls(table.num_rows, f.type) for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


# --- JSON and DDL type parsing (pure Python: no JVM needed) ----------------------------------

_ATOMIC: dict[str, DataType] = {
    "string": StringType(),
    "binary": BinaryType(),
    "boolean": BooleanType(),
    "byte": ByteType(),
    "tinyint": ByteType(),
    "short": ShortType(),
    "smallint": ShortType(),
    "integer": IntegerType(),
    "int": IntegerType(),
    "long": LongType(),
    "bigint": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "date": DateType(),
    "timestamp": TimestampType(),
    "timestamp_ntz": TimestampNTZType(),
}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def _struct(doc: dict) -> StructType:
    if doc.get("type") != "struct":
        raise ValueError("the top level must be a struct")
    return StructType([_field(f) for f in doc["fields"]])


def _field(doc: dict) -> StructField:
    return StructField(doc["name"], _type(doc["type"]), bool(doc.get("nullable", True)), doc.get("metadata") or {})


def _type(doc: Any) -> DataType:
    if isinstance(doc, dict):
        kind = doc.get("type")
        if kind == "struct":
            return _struct(doc)
        if kind == "array":
            return ArrayType(_type(doc["elementType"]), bool(doc.get("containsNull", True)))
        if kind == "map":
            return MapType(_type(doc["keyType"]), _type(doc["valueType"]), bool(doc.get("valueContainsNull", True)))
        raise ValueError(f"unknown type {doc!r}")
    if isinstance(doc, str):
        parsed, rest = _ddl(doc.strip())
        if rest.strip():
            raise ValueError(f"cannot parse type {doc!r}")
        return parsed
    raise ValueError(f"unknown type {doc!r}")


def _ddl(text: str) -> tuple[DataType, str]:
    """Parse one DDL type from the start of ``text``; (type, rest)."""
    lower = text.lower()
    for prefix in ("array<", "map<", "struct<"):
        if lower.startswith(prefix):
            rest = text[len(prefix) :]
            if prefix == "array<":
                element, rest = _ddl(rest.lstrip())
                return ArrayType(element, True), _expect(rest, ">")
            if prefix == "map<":
                key, rest = _ddl(rest.lstrip())
                value, rest = _ddl(_expect(rest, ",").lstrip())
                return MapType(key, value, True), _expect(rest, ">")
            fields: list[StructField] = []
            while True:
                rest = rest.lstrip()
                if rest.startswith(">"):
                    return StructType(fields), rest[1:]
                name, _, rest = rest.partition(":")
                kind, rest = _ddl(rest.lstrip())
                fields.append(StructField(name.strip().strip("`"), kind, True))
                rest = rest.lstrip()
                if rest.startswith(","):
                    rest = rest[1:]
    decimal = _DECIMAL.match(lower)
    if decimal:
        return DecimalType(int(decimal.group(1)), int(decimal.group(2))), text[decimal.end() :]
    word = re.match(r"[a-z_]+", lower)
    if word and word.group(0) in _ATOMIC:
        return _ATOMIC[word.group(0)], text[word.end() :]
    raise ValueError(f"cannot parse type {text!r}")


def _expect(rest: str, token: str) -> str:
    rest = rest.lstrip()
    if not rest.startswith(token):
        raise ValueError(f"expected {token!r} at {rest[:20]!r}")
    return rest[len(token) :]


# --- conforming a DataFrame to a table ------------------------------------------------------


def _zero_sql(kind: DataType) -> str | None:
    """A non-null SQL literal of ``kind`` (only ever reached as coalesce's last, unreachable, arm)."""
    if isinstance(kind, StringType):
        return "''"
    if isinstance(kind, BinaryType):
        return "X''"
    if isinstance(kind, BooleanType):
        return "false"
    if isinstance(kind, (ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType)):
        return f"CAST(0 AS {kind.simpleString()})"
    if isinstance(kind, TimestampType):
        return "timestamp_seconds(0)"
    if isinstance(kind, TimestampNTZType):
        return "make_timestamp_ntz(1970, 1, 1, 0, 0, 0)"
    if isinstance(kind, DateType):
        return "DATE'1970-01-01'"
    if isinstance(kind, (ArrayType, MapType)):
        return f"CAST({'array' if isinstance(kind, ArrayType) else 'map'}() AS {kind.simpleString()})"
    return None


def _column_sql(field: StructField, got: StructField, table: str) -> str:
    """The SQL that gives ``got`` as ``field``: cast to its type, with its nullability.

    A non-nullable field that may be null (or that a cast may make null) is
    coalesce(x, raise_error(..), zero): non-nullable because its last arm is, which is never
    evaluated because raise_error throws first, so a null fails the query instead of being
    silently replaced. A nullable field is declared so (CASE without ELSE)."""
    expr, cast = sql_column(got.name), got.dataType != field.dataType
    if cast:
        expr = f"CAST({expr} AS {field.dataType.simpleString()})"
    zero = _zero_sql(field.dataType)
    if not field.nullable and (got.nullable or cast) and zero is not None:
        message = f"{table}.{field.name} is null, but the table schema says it never is"
        expr = f"coalesce({expr}, CAST(raise_error({sql_string(message)}) AS {field.dataType.simpleString()}), {zero})"
    elif field.nullable and not got.nullable:
        expr = f"CASE WHEN {expr} IS NOT NULL THEN {expr} END"
    return f"{expr} AS {sql_column(field.name)}"


def conform(df: DataFrame, name: str) -> DataFrame:
    """``df`` as table ``name``: exactly its columns, in schema order, cast to its types, with
    its nullability and column comments. Extra columns are dropped; a missing column is an
    error naming it. The result's schema equals ``table_schema(name)``.

    One ``selectExpr`` of SQL text and ``to`` for the comments: a few calls into the JVM
    instead of several per column (a call each costs a run's driver time: docs/performance.md,
    "Fewer calls into the JVM")."""
    schema = table_schema(name)
    current = df.schema
    if same_schema(current, schema):
        return df  # conformed already (e.g. by the stage, then again by the write): no second analysis
    have = {f.name: f for f in current.fields}
    missing = [f.name for f in schema.fields if f.name not in have]
    if missing:
        raise SchemaError(
            f"cannot conform to table {name!r}: missing column(s) {', '.join(missing)} "
            f"(the DataFrame has {', '.join(df.columns) or 'no columns'})"
        )
    return df.selectExpr(*[_column_sql(field, have[field.name], name) for field in schema.fields]).to(schema)


def same_schema(a: StructType, b: StructType) -> bool:
    """Equal names, types, nullability and metadata, in order."""
    return a.jsonValue() == b.jsonValue()


# --- documentation ----------------------------------------------------------------------------


def _type_text(kind: DataType) -> str:
    return kind.simpleString()


def render_tables_md() -> str:
    """docs/tables.md, generated from the schema files (a test keeps the page in step)."""
    lines = [
        "# Tables",
        "",
        "<!-- Generated from dlq_pipeline/data/schemas/*.json by dlq_pipeline.warehouse.schemas.render_tables_md();",
        "     tests/spark/test_storage.py fails when this page and the schemas disagree. -->",
        "",
        "The schemas in `dlq_pipeline/data/schemas/*.json` are the single source of truth: the code",
        "loads them (`dlq_pipeline.tables`, `dlq_pipeline.warehouse.schemas`), "
        "every stored table is written through `conform`, and",
        "the tests compare what was written with them. `messages`, `decisions`, `ledger` and",
        "`quarantine` are stored (Parquet dataset directories `WAREHOUSE/<table>`, or Delta",
        "tables by path or by catalog name); `decoded` lists the columns the decode stage adds",
        "to `messages` in memory. Each run also writes `WAREHOUSE/_runs/<run_id>.json`.",
        "",
        "Keys: `messages` and `quarantine` are landed with `Storage.merge_new` (insert only rows",
        "whose key is not there yet), so landing the same input twice adds nothing. The",
        "`ledger` has no key: it is append-only.",
        "",
        "Timestamps: every `timestamp` column holds an instant (microseconds since the epoch),",
        "written as UTC whatever the time zone of the host, the JVM or the Spark session",
        "(`dlq_pipeline.runtime.clock`: the pipeline hands Spark only time-zone-aware UTC datetimes and",
        "reads timestamps back as `unix_micros`). Spark *displays* them in",
        "`spark.sql.session.timeZone`, which sessions built by `get_spark` set to UTC. MQ's own",
        "`put_date`/`put_time` are the GMT strings MQ wrote. A dmpmqmsg header's `Created:` stamp",
        "names no zone: `messages.recorded_at` reads it as wall-clock time in `ingest.dump_time_zone`",
        "(docs/message-formats.md, §4).",
        "",
        "Warehouses written by an earlier version: a column added to a schema since is",
        "nullable, and older rows read null there. Parquet needs nothing (its files are read",
        "with the declared schema); a Delta table gets the column (`ALTER TABLE ... ADD",
        "COLUMNS`, logged) before the first write that needs it, since Delta refuses writes",
        'with a column the table lacks. `messages.data_head` (docs/performance.md, "Decode',
        'reads only the MQDLH bytes") is such a column: rows landed before it are',
        "decoded from `data`, correctly, but with `data` read for them (a 100 MB",
        "message of those still costs its copies); every row landed since is decoded from",
        "`data_head` alone. `messages.recorded_at` is another: replay puts a row landed before it",
        'with the Expiry it was landed with (docs/replay.md, "Expiry"). Nothing needs rewriting.',
        "",
    ]
    for name in TABLES:
        doc = table_document(name)
        schema = table_schema(name)
        key = ", ".join(f"`{k}`" for k in doc["key"]) or "none (append-only)"
        lines += [
            f"## {name}",
            "",
            doc["description"],
            "",
            f"Key: {key}",
            "",
            "| column | type | null | meaning |",
            "|---|---|---|---|",
        ]
        for field in schema.fields:
            comment = (field.metadata or {}).get("comment", "").replace("|", "\\|")
            null = "yes" if field.nullable else "no"
            lines.append(f"| `{field.name}` | {_type_text(field.dataType)} | {null} | {comment} |")
        lines.append("")
    return "\n".join(lines)
