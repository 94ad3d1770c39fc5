"""What Delta gives the pipeline that Parquet cannot: an append-only ledger, schema
enforcement, concurrent writers, time travel, and tables any Delta reader opens (delta-rs)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest
from click.testing import CliRunner
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, TimestampType

from dlq_pipeline import tables as schemas
from dlq_pipeline.cli import cli
from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import RunSettings, StorageSettings
from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.pipeline import run_pipeline
from dlq_pipeline.rules.parser import load_rules
from dlq_pipeline.warehouse import storage as storage_module
from dlq_pipeline.warehouse.schemas import conform, table_schema
from dlq_pipeline.warehouse.storage import StorageError, open_storage
from tests.support import REPO

from ..conftest import make_storage, require_delta, storage_settings

pytestmark = [pytest.mark.spark, pytest.mark.delta]

STARTER = REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules"
T0 = dt.datetime(2026, 9, 22, 2, 34, 33)
DELTA_KINDS = ["delta", "delta-name"]


@pytest.fixture(autouse=True)
def _delta(spark):
    require_delta(spark)


def ledger_rows(spark, keys, run="r1"):
    rows = [(run, k, "RETRY", 3, 1, "Q", "QM", "delivered", 0, None, T0, T0, 0, 0) for k in keys]
    return spark.createDataFrame(rows, table_schema("ledger"))


def quarantine_rows(spark, offsets, run="r1"):
    rows = [
        Row(
            run_id=run,
            source_file="/d/a.dmp",
            source_line=1,
            source_offset=o,
            source_index=0,
            error_code="odd_length_hex",
            error_text="bad",
            snippet="X 1",
            quarantined_at=T0,
        )
        for o in offsets
    ]
    return conform(spark.createDataFrame(rows, table_schema("quarantine")), "quarantine")


@pytest.mark.parametrize("kind", DELTA_KINDS)
def test_the_ledger_refuses_update_and_delete(spark, tmp_path, kind):
    storage = make_storage(spark, kind, tmp_path / "wh")
    storage.append("ledger", ledger_rows(spark, ["k1", "k2"]))
    ref = storage._delta_ref("ledger")
    for statement in (
        f"DELETE FROM {ref} WHERE message_key = 'k1'",
        f"UPDATE {ref} SET outcome = 'failed'",
        f"MERGE INTO {ref} t USING (SELECT 'k1' AS k) s ON t.message_key = s.k WHEN MATCHED THEN DELETE",
    ):
        with pytest.raises(Exception, match="DELTA_CANNOT_MODIFY_APPEND_ONLY"):
            spark.sql(statement)
    storage.append("ledger", ledger_rows(spark, ["k3"]))  # appending is what it is for
    assert sorted(r.message_key for r in storage.read("ledger").collect()) == ["k1", "k2", "k3"]
    properties = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {ref}").collect()}
    assert properties["delta.appendOnly"] == "true"
    # the other tables are not append-only (nothing else is declared so)
    storage.append("quarantine", quarantine_rows(spark, [1]))
    spark.sql(f"DELETE FROM {storage._delta_ref('quarantine')} WHERE source_offset = 1")
    assert storage.read("quarantine").count() == 0


def test_the_tables_every_run_appends_a_little_to_compact_themselves(spark, tmp_path):
    """``files``, ``landings`` and ``keys`` carry Delta's auto compaction: their small files
    are merged after a write once enough have piled up (fifty by default; three here)."""
    storage = make_storage(spark, "delta", tmp_path / "wh")
    row = [("r1", "landed", T0, None)]
    spark.conf.set("spark.databricks.delta.autoCompact.minNumFiles", "3")
    try:
        for _ in range(4):
            storage.append("landings", spark.createDataFrame(row, table_schema("landings")))
    finally:
        spark.conf.unset("spark.databricks.delta.autoCompact.minNumFiles")
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{storage.location('landings')}`").first()
    assert detail["properties"]["delta.autoOptimize.autoCompact"] == "true"
    assert detail["numFiles"] < 4
    assert storage.read("landings").count() == 4


@pytest.mark.parametrize("kind", DELTA_KINDS)
def test_every_table_enforces_its_schema(spark, tmp_path, kind):
    storage = make_storage(spark, kind, tmp_path / "wh")
    for table in schemas.STORED_TABLES:
        storage.append(table, spark.createDataFrame([], table_schema(table)))  # creates each table
        stored = (
            spark.table(storage._delta_ref(table)).schema
            if kind == "delta-name"
            else spark.read.format("delta").load(storage.location(table)).schema
        )
        assert [(f.name, f.dataType, f.nullable) for f in stored.fields] == [
            (f.name, f.dataType, f.nullable) for f in table_schema(table).fields
        ]
    ref = storage._delta_ref("ledger")
    with pytest.raises(Exception, match="DELTA_NOT_NULL_CONSTRAINT_VIOLATED|NOT NULL"):
        spark.sql(
            f"INSERT INTO {ref} (run_id, message_key, action, outcome, started_at, finished_at) "
            "VALUES ('r', NULL, 'RETRY', 'delivered', current_timestamp(), current_timestamp())"
        )
    wrong = spark.createDataFrame([("r", "k", 1)], "run_id string, message_key string, surprise int")
    writer = wrong.write.format("delta").mode("append")
    with pytest.raises(Exception, match="DELTA_METADATA_MISMATCH|schema mismatch|A schema mismatch"):
        writer.saveAsTable(storage.location("ledger")) if kind == "delta-name" else writer.save(
            storage.location("ledger")
        )
    assert storage.read("ledger").count() == 0


@pytest.mark.parametrize("kind", DELTA_KINDS)
def test_two_writers_merging_the_same_rows_insert_them_once(spark, tmp_path, kind):
    storage = make_storage(spark, kind, tmp_path / "wh")
    storage.merge_new("quarantine", quarantine_rows(spark, [0]))  # the table exists: both race on MERGE
    batches = [quarantine_rows(spark, range(0, 60), run="a"), quarantine_rows(spark, range(30, 90), run="b")]
    inserted, errors = [], []
    start = threading.Barrier(2)

    def writer(df):
        try:
            start.wait()
            inserted.append(storage.merge_new("quarantine", df))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(df,)) for df in batches]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sum(inserted) == 89  # 1..89: every new key inserted by exactly one of the two
    offsets = Counter(r.source_offset for r in storage.read("quarantine").collect())
    assert offsets == Counter(range(90))


def test_a_table_another_writer_is_still_creating_is_absent_until_its_first_commit(spark, tmp_path):
    # The window two runs starting at once on one warehouse met: the other's CREATE has made
    # _delta_log but not committed version 0 yet (Delta calls the table existing, so our
    # CREATE IF NOT EXISTS does nothing). The table reads absent, and the lease's MERGE waits
    # for the other's first commit instead of failing with DELTA_TABLE_NOT_FOUND.
    storage = make_storage(spark, "delta", tmp_path / "wh")
    where = tmp_path / "wh" / "leases"
    (where / "_delta_log").mkdir(parents=True)
    assert not storage.exists("leases")
    assert storage.read("leases").count() == 0

    def other_writer_commits():
        time.sleep(3)
        spark.createDataFrame([], table_schema("leases")).write.format("delta").mode("append").save(str(where))

    other = threading.Thread(target=other_writer_commits)
    other.start()
    row = ("warehouse", "t1", "r1", "run", "host", 1, None, T0, T0, T0 + dt.timedelta(minutes=10))
    try:
        storage.upsert("leases", spark.createDataFrame([row], table_schema("leases")), "false")
    finally:
        other.join()
    assert storage.exists("leases")
    assert [(r.name, r.token) for r in storage.read("leases").collect()] == [("warehouse", "t1")]


def test_a_creation_that_never_finished_is_named_not_waited_for_forever(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(storage_module, "CREATE_WAIT_SECONDS", 1.0)
    storage = make_storage(spark, "delta", tmp_path / "wh")
    (tmp_path / "wh" / "quarantine" / "_delta_log").mkdir(parents=True)  # a killed writer's leftover
    with pytest.raises(
        StorageError,
        match=r"quarantine has a _delta_log but no commit after 1 s: .* remove "
        r".*quarantine/_delta_log and run again",
    ):
        storage.merge_new("quarantine", quarantine_rows(spark, [1]))


def test_a_command_meeting_a_creation_that_never_finished_says_so_in_one_line(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(storage_module, "CREATE_WAIT_SECONDS", 1.0)
    [dump] = write_generated(tmp_path / "dumps", 5, seed=3, files=1)
    (tmp_path / "wh" / "messages" / "_delta_log").mkdir(parents=True)
    result = CliRunner().invoke(cli, ["ingest", str(dump), "--format", "delta", "--warehouse", str(tmp_path / "wh")])
    assert result.exit_code == 1, result.output
    [error] = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith("error: the Delta table ") and "messages has a _delta_log but no commit" in error
    assert "Traceback" not in result.stderr


def test_time_travel_reads_the_tables_as_they_were(spark, tmp_path):
    storage = make_storage(spark, "delta", tmp_path / "wh")
    before_anything = dt.datetime.now(dt.UTC)
    storage.append("ledger", ledger_rows(spark, ["k1"]))
    storage.write_summary("RUN1", {"finished_at": dt.datetime.now(dt.UTC).isoformat()})
    between = dt.datetime.now(dt.UTC)
    storage.append("ledger", ledger_rows(spark, ["k2"], run="r2"))

    def keys(view):
        return sorted(r.message_key for r in view.read("ledger").collect())

    assert keys(storage) == ["k1", "k2"]
    assert keys(storage.as_of("RUN1")) == ["k1"]
    assert keys(storage.as_of(between.isoformat())) == ["k1"]
    assert keys(storage.as_of(before_anything)) == []  # the table did not exist yet
    assert keys(storage.as_of(before_anything - dt.timedelta(days=1))) == []
    with pytest.raises(StorageError, match="read-only view"):
        storage.as_of("RUN1").append("ledger", ledger_rows(spark, ["k3"]))
    with pytest.raises(StorageError, match="neither a timestamp"):
        storage.as_of("NO-SUCH-RUN")
    with pytest.raises(StorageError, match="needs storage.format"):
        make_storage(spark, "parquet", tmp_path / "pq").as_of("RUN1")


# --- whole runs on Delta ------------------------------------------------------------------


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    root = tmp_path_factory.mktemp("delta-run")
    return [str(p) for p in write_generated(root / "dumps", 200, seed=8, files=2, max_size=8 * 1024)]


def _arrow_rows(table, fields):
    """delta-rs rows as Spark would collect them (timestamps as epoch microseconds)."""
    out = []
    for record in table.to_pylist():
        row = []
        for f in fields:
            value = record[f.name]
            if isinstance(f.dataType, TimestampType) and value is not None:
                value = int(value.timestamp() * 1_000_000)
            elif isinstance(f.dataType, BinaryType) and value is not None:
                value = bytes(value)
            elif isinstance(value, list):
                value = tuple(value)
            row.append(value)
        out.append(tuple(row))
    return Counter(out)


def _spark_rows(df, fields):
    cols = [
        F.unix_micros(f.name).alias(f.name) if isinstance(f.dataType, TimestampType) else F.col(f.name) for f in fields
    ]
    return Counter(
        tuple(bytes(v) if isinstance(v, bytearray) else tuple(v) if isinstance(v, list) else v for v in r)
        for r in df.select(*cols).collect()
    )


@pytest.mark.parametrize("kind", DELTA_KINDS)
def test_a_run_on_delta_is_idempotent_and_every_table_reads_the_same_in_delta_rs(spark, tmp_path, dumps, kind):
    import deltalake

    settings = storage_settings(kind, tmp_path / "wh")
    config = load_config(overrides={"storage": settings})
    table = load_rules(STARTER)
    first = run_pipeline(
        spark, RunSettings.from_config(config), table, inputs=dumps, target=f"dir:{tmp_path / 'out'}", run_id="D1"
    )
    assert first.messages_landed == 200 and sum(first.decisions.values()) == 200
    second = run_pipeline(
        spark, RunSettings.from_config(config), table, inputs=dumps, target=f"dir:{tmp_path / 'out'}", run_id="D2"
    )
    assert second.messages_landed == 0 and second.input_files["skipped"] == len(dumps)  # no dump read again
    delivered_once = first.outcomes.get("delivered", 0)
    assert delivered_once > 0 and second.outcomes.get("delivered", 0) == 0  # FWD/RETRY already delivered

    storage = open_storage(spark, StorageSettings.from_config(config))
    # the run's counts, observed by the Delta write of its decisions, are the table's
    decided = storage.read("decisions").where(F.col("run_id") == "D1")
    assert first.decisions == {r["action"]: r["count"] for r in decided.groupBy("action").count().collect()}
    assert first.ignore_reasons == {
        r["ignore_reason"]: r["count"]
        for r in decided.where(F.col("ignore_reason").isNotNull()).groupBy("ignore_reason").count().collect()
    }
    for name in schemas.STORED_TABLES:
        if not storage.exists(name):
            continue
        location = spark.sql(f"DESCRIBE DETAIL {storage._delta_ref(name)}").collect()[0]["location"]
        fields = table_schema(name).fields
        independent = deltalake.DeltaTable(location.removeprefix("file:")).to_pyarrow_table()
        assert independent.column_names == [f.name for f in fields], name
        assert _arrow_rows(independent, fields) == _spark_rows(storage.read(name), fields), name
    assert storage.read("messages").count() == 200


def test_report_as_of_a_run_shows_the_tables_after_that_run(spark, tmp_path, dumps):
    """Up to a minute on a busy machine: time travel needs two whole runs on Delta (every stage,
    a commit to each table) before the three reports it compares."""
    warehouse = str(tmp_path / "wh")
    base = ["--warehouse", warehouse, "--format", "delta"]
    runner = CliRunner()
    first = runner.invoke(
        cli,
        [
            "run",
            "--input",
            dumps[0],
            "--rules",
            str(STARTER),
            "--target",
            "dry-run",
            "--run-id",
            "ASOF1",
            "--json",
            *base,
        ],
        catch_exceptions=False,
    )
    assert first.exit_code in (0, 3), first.stderr
    runner.invoke(
        cli,
        [
            "run",
            "--input",
            dumps[1],
            "--rules",
            str(STARTER),
            "--target",
            "dry-run",
            "--run-id",
            "ASOF2",
            "--json",
            *base,
        ],
        catch_exceptions=False,
    )
    now = json.loads(runner.invoke(cli, ["report", "--json", *base]).stdout)
    then = json.loads(runner.invoke(cli, ["report", "--json", "--as-of", "ASOF1", *base]).stdout)
    assert [r["run_id"] for r in now["runs"]] == ["ASOF1", "ASOF2"]
    assert [r["run_id"] for r in then["runs"]] == ["ASOF1"] and then["run_id"] == "ASOF1"
    landed_first = json.loads(first.stdout.strip().splitlines()[-1])["messages_landed"]
    assert then["overall"]["messages"] == landed_first < now["overall"]["messages"] == 200
    assert then["as_of"] and now["as_of"] is None
    text = runner.invoke(cli, ["report", "--as-of", "ASOF1", *base])
    assert text.exit_code == 0 and text.stdout.startswith(f"DLQ report, as of {then['as_of']} (time travel)")
    parquet = runner.invoke(cli, ["report", "--as-of", "ASOF1", "--warehouse", warehouse])
    assert parquet.exit_code == 2 and "--as-of needs storage.format" in parquet.stderr


def test_without_the_jars_delta_is_a_configuration_error(tmp_path, dumps):
    """A fresh process with an empty jar cache: exit 2 before any JVM starts, saying how to get them."""
    env = {**os.environ, "DLQ_PIPELINE_JARS": str(tmp_path / "no-jars")}
    env.pop("DATABRICKS_RUNTIME_VERSION", None)
    command = os.path.join(os.path.dirname(sys.executable), "dlq-pipeline")
    done = subprocess.run(
        [command, "ingest", dumps[0], "--format", "delta", "--warehouse", str(tmp_path / "wh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "Delta Lake is not on the Spark classpath" in done.stderr
    assert "dlq-pipeline setup --delta" in done.stderr
    assert not (tmp_path / "wh" / "messages").exists()


def test_a_messages_table_from_before_data_head_gets_the_column_and_decodes_alike(spark, tmp_path, dumps):
    """A Delta `messages` table created before `data_head` existed: reads show it null, the
    next write adds the column (Delta refuses a write with a column the table lacks), and
    classify's input (`without_data`) has every row's head, the older rows' from `data`
    (decode and classify of a head: tests/spark/test_pipeline.py)."""
    from dlq_pipeline.ingest.spark import ingest
    from dlq_pipeline.mq.dlh_decoder import dlh_head
    from dlq_pipeline.mq.spark import without_data

    parquet = make_storage(spark, "parquet", tmp_path / "parquet")
    ingest(spark, parquet, dumps, run_id="land")
    landed = parquet.read("messages")
    older = landed.where(F.col("source_file") == dumps[0])
    storage = make_storage(spark, "delta", tmp_path / "wh")
    older.drop("data_head").write.format("delta").save(storage.location("messages"))  # as an older version made it
    assert storage.read("messages").where(F.col("data_head").isNotNull()).isEmpty()
    assert storage.merge_new("messages", landed) == landed.count() - older.count()
    stored = spark.read.format("delta").load(storage.location("messages"))
    assert sorted(stored.columns) == sorted(table_schema("messages").names)  # added last: reads conform the order
    assert stored.where(F.col("data_head").isNull()).count() == older.count()
    heads = {r.message_key: bytes(r.data_head) for r in without_data(storage.read("messages")).collect()}
    assert heads == {r.message_key: dlh_head(r.data) for r in landed.select("message_key", "data").collect()}


def test_a_messages_table_from_before_recorded_at_gets_the_column_and_reads_null_there(spark, tmp_path, dumps):
    """A Delta `messages` table created before `recorded_at` existed: reads show it null, the
    next landing adds the column, and only the rows landed since have it."""
    from dlq_pipeline.ingest.spark import ingest

    storage = make_storage(spark, "delta", tmp_path / "wh")
    parquet = make_storage(spark, "parquet", tmp_path / "parquet")
    ingest(spark, parquet, dumps[:1], run_id="old")
    older = parquet.read("messages")
    older.drop("recorded_at").write.format("delta").save(storage.location("messages"))  # as an older version made it
    assert storage.read("messages").where(F.col("recorded_at").isNotNull()).isEmpty()
    result = ingest(spark, storage, dumps, run_id="new")
    assert result.messages_landed == 200 - older.count()
    assert "recorded_at" in spark.read.format("delta").load(storage.location("messages")).columns
    stored = (
        storage.read("messages").groupBy("run_id").agg(F.count("recorded_at").alias("n"), F.count("*").alias("all"))
    )
    counts = {r.run_id: (r.n, r.all) for r in stored.collect()}
    assert counts == {"old": (0, older.count()), "new": (200 - older.count(), 200 - older.count())}
