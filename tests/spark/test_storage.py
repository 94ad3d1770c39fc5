"""Schemas from dlq_pipeline/data/schemas/*.json, conform, and Storage on Parquet, Delta by path and
Delta by catalog name."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import stat
from collections import Counter
from pathlib import Path

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.sql.types import StructType, _parse_datatype_string

from dlq_pipeline import tables as schemas
from dlq_pipeline.tables import SchemaError, table_key
from dlq_pipeline.warehouse import schemas as spark_schemas
from dlq_pipeline.warehouse.schemas import conform, render_tables_md, table_schema
from dlq_pipeline.warehouse.storage import Storage, StorageError
from tests.support import REPO

from ..conftest import make_storage

SCHEMA_DIR = REPO / "dlq_pipeline" / "data" / "schemas"
T0 = dt.datetime(2026, 9, 22, 2, 34, 33)


def json_schema(table: str) -> dict:
    return json.loads((SCHEMA_DIR / f"{table}.json").read_text())


def expected_struct(table: str) -> StructType:
    """The schema file read with Spark's own parsers (JSON schema; DDL for type strings)."""
    doc = json_schema(table)["schema"]
    fields = []
    for f in doc["fields"]:
        kind = f["type"]
        if isinstance(kind, str) and kind not in ("string", "integer", "long", "binary", "boolean", "timestamp"):
            kind = _parse_datatype_string(kind).jsonValue()
        fields.append({**f, "type": kind})
    return StructType.fromJson({"type": "struct", "fields": fields})


def _frozen(value):
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return value


def assert_same_rows(actual, expected):
    """Same schema and the same multiset of rows (each side collected once)."""
    assert actual.schema == expected.schema
    got = Counter(_frozen(tuple(r)) for r in actual.collect())
    want = Counter(_frozen(tuple(r)) for r in expected.collect())
    assert sum(got.values()) == sum(want.values())
    assert got == want


# --- schemas ------------------------------------------------------------------------------


@pytest.mark.parametrize("table", schemas.TABLES)
def test_table_schema_is_the_json_file(spark, table):
    assert table_schema(table) == expected_struct(table)
    assert table_key(table) == json_schema(table)["key"]


def test_every_schema_file_is_known_and_is_the_one_copy():
    files = {p.stem for p in SCHEMA_DIR.glob("*.json")}
    assert files == set(schemas.TABLES)
    assert {p.name for p in schemas.schema_files().iterdir()} == {f"{t}.json" for t in files}
    assert not any(p.is_symlink() for p in SCHEMA_DIR.iterdir())
    assert not (REPO / "schemas").exists()  # no second copy outside the package


def test_unknown_table_is_a_clear_error():
    with pytest.raises(SchemaError, match="no schema for table 'nope'"):
        table_schema("nope")
    with pytest.raises(SchemaError, match="not a table name"):
        table_schema("../messages")


def test_ddl_type_strings_in_a_schema_file_parse():
    got = spark_schemas._struct(
        {
            "type": "struct",
            "fields": [
                {"name": "a", "type": "map<string,array<long>>", "nullable": False, "metadata": {}},
                {"name": "b", "type": "decimal(10, 2)", "nullable": True, "metadata": {}},
                {"name": "c", "type": "struct<x:int,y:string>", "nullable": True, "metadata": {}},
            ],
        }
    )
    assert [f.dataType.simpleString() for f in got.fields] == [
        "map<string,array<bigint>>",
        "decimal(10,2)",
        "struct<x:int,y:string>",
    ]
    assert [f.nullable for f in got.fields] == [False, True, True]


def test_docs_tables_md_is_generated_from_the_schemas():
    page = (REPO / "docs" / "tables.md").read_text()
    assert page == render_tables_md() + "\n", "regenerate docs/tables.md with schemas.render_tables_md()"


LEDGER_SHUFFLED = (
    "finished_at timestamp, outcome string, message_key string, run_id string, action string, "
    "started_at timestamp, rule_line long, extra string, attempt long, target_q string, "
    "target_qmgr string, reason_code long, error_text string, partition_id long, batch_id int"
)


def _ledger_rows(spark, rows):
    """Ledger rows in another column order, with wider types and an extra column."""
    return spark.createDataFrame([(*r, None, None, None, None, None, None, None) for r in rows], LEDGER_SHUFFLED)


def test_conform_orders_casts_drops_and_restores_the_declared_schema(spark):
    df = _ledger_rows(spark, [(T0, "delivered", "k1", "r1", "RETRY", T0, 7, "dropped")])
    out = conform(df, "ledger")
    assert out.schema == expected_struct("ledger")  # order, types, nullability, comments
    assert out.collect() == [
        Row(
            run_id="r1",
            message_key="k1",
            action="RETRY",
            rule_line=7,
            attempt=None,
            target_q=None,
            target_qmgr=None,
            outcome="delivered",
            reason_code=None,
            error_text=None,
            started_at=T0,
            finished_at=T0,
            partition_id=None,
            batch_id=None,
        )
    ]


def test_conform_missing_column_names_it(spark):
    df = spark.createDataFrame([("r1",)], "run_id string")
    with pytest.raises(SchemaError, match=r"missing column\(s\) message_key, action"):
        conform(df, "ledger")


def test_conform_refuses_nulls_in_non_nullable_columns(spark):
    df = spark.createDataFrame(
        [("r1", None, "a", "x", "ok", T0, T0)],
        "run_id string, message_key string, action string, target_q string, outcome string, "
        "started_at timestamp, finished_at timestamp",
    )
    full = df.select(
        "*",
        *[
            F.lit(None).cast(f.dataType).alias(f.name)
            for f in table_schema("ledger").fields
            if f.name not in df.columns
        ],
    )
    out = conform(full, "ledger")
    assert out.schema == table_schema("ledger")
    with pytest.raises(Exception, match="ledger.message_key is null"):
        out.collect()


def _conform_by_columns(df, name):
    """The obvious conform, a Column per field (what `conform` was before it became one SQL
    select): the oracle for the random shapes below."""
    schema = table_schema(name)
    shaped = df.select(*[F.col(f"`{f.name}`").cast(f.dataType) for f in schema.fields])
    final = []
    for field, got in zip(schema.fields, shaped.schema.fields):
        col = F.col(f"`{field.name}`")
        if not field.nullable and got.nullable:
            message = f"{name}.{field.name} is null, but the table schema says it never is"
            col = F.coalesce(col, F.raise_error(F.lit(message)).cast(field.dataType))
        final.append(col.alias(field.name, metadata=field.metadata))
    return shaped.select(*final)


_VALUES = {
    "string": "concat('s', id)",
    "int": "CAST(id AS INT)",
    "bigint": "id",
    "boolean": "id % 2 = 0",
    "binary": "CAST(concat('b', id) AS BINARY)",
    "timestamp": "timestamp_seconds(id)",
    "array<string>": "array(concat('a', id))",
    "map<string,binary>": "map('k', CAST('v' AS BINARY))",
}
_OTHER_TYPE = {"int": "bigint", "bigint": "int", "timestamp": "string", "boolean": "string"}


@pytest.mark.parametrize("table", ["messages", "decisions", "ledger", "quarantine", "decoded", "leases"])
def test_conform_gives_every_shape_of_input_the_table_s_schema_and_values(spark, table):
    """Columns shuffled, extra ones, some nullable, some of another type: the table's exact
    schema (comments and nullability too) and the values the column-by-column oracle gives;
    a null where the table allows none fails the query, naming the column."""
    schema, rnd = table_schema(table), random.Random(table)
    for _ in range(3):
        exprs = ["'x' AS extra"]
        for f in schema.fields:
            kind = f.dataType.simpleString()
            value, shape = _VALUES[kind], rnd.choice(["as is", "nullable", "other type"])
            if shape == "nullable":
                value = f"CASE WHEN id >= 0 THEN {value} END"
            elif shape == "other type" and kind in _OTHER_TYPE:
                value = f"CAST({value} AS {_OTHER_TYPE[kind]})"
            exprs.append(f"{value} AS `{f.name}`")
        rnd.shuffle(exprs)
        df = spark.range(3).selectExpr(*exprs)
        out = conform(df, table)
        assert out.schema.jsonValue() == schema.jsonValue()
        assert out.collect() == _conform_by_columns(df, table).collect()
    never_null = next(f for f in schema.fields if not f.nullable)
    nulled = spark.range(1).selectExpr(
        *[
            f"CAST(NULL AS {f.dataType.simpleString()}) AS `{f.name}`"
            if f is never_null
            else f"{_VALUES[f.dataType.simpleString()]} AS `{f.name}`"
            for f in schema.fields
        ]
    )
    with pytest.raises(Exception, match=f"{table}.{never_null.name} is null"):
        conform(nulled, table).collect()


def test_a_column_name_with_quotes_and_backslashes_is_conformed_and_named_in_the_null_error(spark):
    from pyspark.sql.types import StringType, StructField

    from dlq_pipeline.warehouse.schemas import _column_sql

    name = "it's a \\ `name`"
    df = spark.range(1).select(F.lit(None).cast("string").alias(name))
    sql = _column_sql(StructField(name, StringType(), False), df.schema.fields[0], "t")
    out = df.selectExpr(sql)  # SQL text that parses: the name's quote and backslash are escaped
    assert out.schema.fields[0].name == name and not out.schema.fields[0].nullable
    with pytest.raises(Exception, match=re.escape(f"USER_RAISED_EXCEPTION] t.{name} is null")):
        out.collect()


# --- storage --------------------------------------------------------------------------------


def quarantine_df(spark, rows):
    return conform(spark.createDataFrame(rows, table_schema("quarantine")), "quarantine")


def q(file, offset, code, run="r1", line=1):
    return Row(
        run_id=run,
        source_file=file,
        source_line=line,
        source_offset=offset,
        source_index=0,
        error_code=code,
        error_text="bad",
        snippet="X 1",
        quarantined_at=T0,
    )


@pytest.fixture
def warehouse(tmp_path):
    return tmp_path / "wh" / "house"


def test_read_of_an_absent_table_is_empty_with_the_schema(spark, warehouse, storage_kind):
    storage = make_storage(spark, storage_kind, warehouse)
    for table in schemas.STORED_TABLES:
        df = storage.read(table)
        assert df.schema == expected_struct(table)
        assert df.count() == 0
        assert not storage.exists(table)
    assert not warehouse.exists()  # reading creates nothing


def test_append_and_read_round_trip_every_stored_table(spark, warehouse, storage_kind):
    storage = make_storage(spark, storage_kind, warehouse)
    rows = {
        "quarantine": quarantine_df(spark, [q("/d/a.dmp", 10, "odd_length_hex"), q("/d/a.dmp", None, "empty_file")]),
        "ledger": conform(
            _ledger_rows(
                spark,
                [(T0, "delivered", "k1", "r1", "RETRY", T0, 7, "-"), (T0, "failed", "k2", "r1", "FWD", T0, None, "-")],
            ),
            "ledger",
        ),
        "decisions": conform(
            spark.createDataFrame(
                [("r1", "k1", "/d/a.dmp", 0, "RETRY", 3, 0, None, None, True, None, None, 1, None, T0)],
                table_schema("decisions"),
            ),
            "decisions",
        ),
    }
    for table, df in rows.items():
        storage.append(table, df)
        assert storage.exists(table)
        back = storage.read(table)
        assert back.schema == expected_struct(table)
        assert_same_rows(back, df)
    storage.append("ledger", rows["ledger"])
    assert storage.read("ledger").count() == 4  # append is an append


def test_a_small_table_reads_on_the_driver_as_spark_reads_it(spark, warehouse, storage_kind):
    """`Storage.small_table` (pyarrow on a Parquet table's files, no Spark job; a collect
    otherwise) gives what Spark reads: every column, nulls and instants to the microsecond,
    and a column a file lacks (written before it joined the schema) as null."""
    from dlq_pipeline.warehouse.schemas import collected_arrow, local_rows

    storage = make_storage(spark, storage_kind, warehouse)
    assert storage.small_table("landings").num_rows == 0
    at = dt.datetime(2026, 12, 6, 22, 47, 50, 110569, tzinfo=dt.UTC)
    for rows in ([("r1", "landed", at, None)], [("r1", "stored", at, ["part-1.parquet", None]), ("r2", "x", at, [])]):
        storage.append("landings", local_rows(spark, rows, "landings"))
    small = storage.small_table("landings")
    assert small.schema == spark_schemas.arrow_schema("landings")
    key = [("run_id", "ascending"), ("event", "ascending")]
    assert small.sort_by(key).to_pylist() == collected_arrow(storage.read("landings")).sort_by(key).to_pylist()
    assert small.sort_by(key).column("at").to_pylist() == [at] * 3

    if storage_kind == "parquet":
        older = warehouse / "landings" / "part-older.parquet"
        spark.createDataFrame([("r3", "landed", at)], "run_id string, event string, at timestamp").coalesce(
            1
        ).write.parquet(str(warehouse / "older"))
        next((warehouse / "older").glob("*.parquet")).rename(older)
        rows = {r["run_id"]: r["files"] for r in storage.small_table("landings").to_pylist()}
        assert "r3" in rows and rows["r3"] is None


def test_merge_new_inserts_only_new_keys_and_is_idempotent(spark, warehouse, storage_kind):
    storage = make_storage(spark, storage_kind, warehouse)
    first = quarantine_df(
        spark,
        [
            q("/d/a.dmp", 10, "odd_length_hex"),
            q("/d/a.dmp", 10, "unknown_attribute"),
            q("/d/a.dmp", None, "empty_file"),
        ],
    )
    assert storage.merge_new("quarantine", first) == 3
    assert_same_rows(storage.read("quarantine"), first)

    again = quarantine_df(
        spark,
        [
            q("/d/a.dmp", 10, "odd_length_hex", run="r2"),
            q("/d/a.dmp", None, "empty_file", run="r2"),
            q("/d/b.dmp", 10, "odd_length_hex", run="r2"),
            q("/d/b.dmp", 10, "odd_length_hex", run="r2"),
        ],
    )  # repeated within the input
    assert storage.merge_new("quarantine", again) == 1  # null offsets match null-safely
    expected = first.unionByName(quarantine_df(spark, [q("/d/b.dmp", 10, "odd_length_hex", run="r2")]))
    assert_same_rows(storage.read("quarantine"), expected)

    data_files = (
        (lambda: sorted(p.name for p in (warehouse / "quarantine").glob("*.parquet")))
        if storage_kind != "delta-name"
        else (lambda: [])
    )
    files_before = data_files()
    assert storage.merge_new("quarantine", again) == 0
    assert data_files() == files_before  # no empty files either
    assert_same_rows(storage.read("quarantine"), expected)


def test_merge_new_with_an_explicit_key(spark, warehouse, storage_kind):
    storage = make_storage(spark, storage_kind, warehouse)
    storage.merge_new("quarantine", quarantine_df(spark, [q("/d/a.dmp", 10, "odd_length_hex")]), key=["source_file"])
    added = storage.merge_new(
        "quarantine", quarantine_df(spark, [q("/d/a.dmp", 99, "bad_hex"), q("/d/c.dmp", 1, "x")]), key=["source_file"]
    )
    assert added == 1
    assert sorted(r.source_file for r in storage.read("quarantine").collect()) == ["/d/a.dmp", "/d/c.dmp"]


def test_merge_new_refuses_the_append_only_ledger(spark, warehouse, storage_kind):
    with pytest.raises(StorageError, match="append-only"):
        make_storage(spark, storage_kind, warehouse).merge_new(
            "ledger", spark.createDataFrame([], table_schema("ledger"))
        )


@pytest.mark.parametrize("kind", ["parquet", pytest.param("delta", marks=pytest.mark.delta)])
def test_warehouse_is_owner_only_and_summaries_are_json(spark, warehouse, kind):
    storage = make_storage(spark, kind, warehouse)
    storage.append("quarantine", quarantine_df(spark, [q("/d/a.dmp", 1, "x")]))
    for directory in (warehouse.parent, warehouse, warehouse / "quarantine"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    for path in (warehouse / "quarantine").rglob("*"):  # data files and Delta's log alike
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path
    path = storage.write_summary("20260922T023433Z-abc123", {"run_id": "x", "when": T0, "counts": {"a": 1}})
    assert path == f"{warehouse}/_runs/20260922T023433Z-abc123.json"
    assert stat.S_IMODE((warehouse / "_runs").stat().st_mode) == 0o700
    assert stat.S_IMODE(Path(path).stat().st_mode) == 0o600
    assert json.loads(Path(path).read_text()) == {"run_id": "x", "when": "2026-09-22 02:34:33", "counts": {"a": 1}}
    storage.write_summary("20260922T023433Z-abc123", {"run_id": "y"})  # rewritten in place
    assert json.loads(Path(path).read_text()) == {"run_id": "y"}
    assert os.listdir(warehouse / "_runs") == ["20260922T023433Z-abc123.json"]


def test_existing_warehouse_permissions_are_left_alone(spark, tmp_path):
    existing = tmp_path / "existing-warehouse"
    existing.mkdir(mode=0o755)
    os.chmod(existing, 0o755)
    Storage(spark, path=str(existing)).write_summary("r1", {})
    assert stat.S_IMODE(existing.stat().st_mode) == 0o755
    assert stat.S_IMODE((existing / "_runs").stat().st_mode) == 0o700


def test_bad_run_ids_cannot_escape_the_runs_directory(spark, warehouse):
    storage = Storage(spark, path=str(warehouse))
    for bad in ("../x", "a/b", "", ".hidden"):
        with pytest.raises(StorageError, match="cannot name a file"):
            storage.write_summary(bad, {})


def test_configuration_errors(spark, warehouse, monkeypatch):
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    monkeypatch.setattr("dlq_pipeline.warehouse.storage.delta_available", lambda s: False)  # a session without the jars
    with pytest.raises(StorageError, match="needs Delta Lake on the Spark classpath.*dlq-pipeline setup --delta"):
        Storage(spark, format="delta", path=str(warehouse))
    with pytest.raises(StorageError, match="must be one of parquet, delta"):
        Storage(spark, format="orc", path=str(warehouse))
    with pytest.raises(StorageError, match="Delta tables"):
        Storage(spark, format="parquet", catalog="main", schema="dlq")


def test_table_locations(spark, warehouse):
    storage = Storage(spark, path=str(warehouse) + "/")
    assert storage.location("messages") == f"{warehouse}/messages"
    with pytest.raises(StorageError):
        storage.location("../etc")
