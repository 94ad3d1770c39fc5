"""Inputs on HDFS, read by a Spark standalone cluster (the JVM reader through Hadoop's
FileSystem, the Python readers through fs and WebHDFS), land exactly the `messages`
and `quarantine` tables that the same files land from a local folder in local mode. Small
splits, so executors read byte ranges from the middle of remote files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dlq_pipeline.config.settings import HdfsSettings, IngestSettings, StorageSettings
from dlq_pipeline.ingest.spark import ingest as ingest_here
from dlq_pipeline.warehouse.storage import open_storage
from tests.cluster.runs import ingest

RUN_COLUMNS = {"run_id", "landed_at", "quarantined_at"}  # what differs between any two runs


def _rows(spark, warehouse: Path, table: str, rename: tuple[str, str] | None) -> list[dict]:
    from dlq_pipeline.warehouse.storage import Storage

    df = Storage(spark, format="parquet", path=str(warehouse)).read(table)
    rows = []
    for row in df.collect():
        row = {k: v for k, v in row.asDict(recursive=True).items() if k not in RUN_COLUMNS}
        if rename:
            assert row["source_file"].startswith(rename[0]), row["source_file"]
            row["source_file"] = rename[1] + row["source_file"][len(rename[0]) :]
        rows.append(row)
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.fixture(scope="module")
def local(spark, dumps, tmp_path_factory) -> dict:
    """The same files landed in local mode by the Python reader, in this process's session (no
    extra JVM): the JVM reader's equality with it is tests/spark/test_jvm_reader.py's."""
    warehouse = tmp_path_factory.mktemp("local-ingest") / "warehouse"
    storage = open_storage(spark, StorageSettings(format="parquet", path=str(warehouse)))
    result = ingest_here(
        spark, storage, [str(dumps)], run_id="local", settings=IngestSettings(split_bytes=65536, reader="python")
    )
    assert result.jvm_work_items == 0
    return {
        "warehouse": warehouse,
        "result": result.as_dict(),
        "rows": {table: _rows(spark, warehouse, table, None) for table in ("messages", "quarantine")},
    }


def test_dumps_on_hdfs_land_as_the_same_files_do_locally(bed, dumps, hdfs_dumps, local, tmp_path, spark):
    """Read on the cluster by the JVM reader through Hadoop's FileSystem (the dumps) and by
    Python through WebHDFS (the listing, the stray file; and everything with ingest.reader =
    python): both land the tables of the same files read locally."""
    remote = hdfs_dumps
    cluster = {"master": bed.master, "conf": bed.spark_conf()}
    on_cluster = ingest(tmp_path, "cluster", remote, cluster, bed.spark_env(), webhdfs=bed.hdfs.http)
    in_python = ingest(
        tmp_path, "cluster-python", remote, cluster, bed.spark_env(), webhdfs=bed.hdfs.http, reader="python"
    )

    assert on_cluster["result"]["messages_landed"] == local["result"]["messages_landed"] > 210
    assert on_cluster["result"]["files"] == local["result"]["files"] == 5
    assert (
        on_cluster["result"]["jvm_work_items"] == on_cluster["result"]["work_items"] - 2 > 3
    )  # but the listing, the stray file
    assert in_python["result"]["jvm_work_items"] == 0
    for table in ("messages", "quarantine"):
        for landed in (on_cluster, in_python):
            assert _rows(spark, landed["warehouse"], table, (remote, str(dumps))) == local["rows"][table], table
    # the work was split into byte ranges read by the cluster's executors
    assert list((bed.root / "work").glob("app-*/*/stderr"))


def test_dumps_every_node_mounts_are_read_by_the_executors_jvm_reader(bed, dumps, local, tmp_path, spark):
    """Local paths (a mount every node has: this machine's disk), read on the cluster: the
    executors' JVMs run the JVM reader (its jar reaches them through spark.jars) and land the
    tables the Python reader lands in local mode."""
    on_cluster = ingest(
        tmp_path, "cluster", str(dumps), {"master": bed.master, "conf": bed.spark_conf()}, bed.spark_env()
    )
    dumped = on_cluster["result"]["work_items"] - 2  # the listing and the stray text file are Python's
    assert on_cluster["result"]["jvm_work_items"] == dumped > 3
    for key in ("messages_landed", "quarantined", "files", "work_items"):
        assert on_cluster["result"][key] == local["result"][key], key
    for table in ("messages", "quarantine"):
        assert _rows(spark, on_cluster["warehouse"], table, None) == local["rows"][table]


DATA_SOURCE_ON_THE_CLUSTER = """
import json, sys
import dlq_pipeline
from dlq_pipeline.engine.session import get_spark
master, path, conf, webhdfs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
spark = get_spark({"master": master, "spark_conf": conf})
dlq_pipeline.register(spark)
read = spark.read.format("mqdump").option("webhdfs", webhdfs).load(path)
columns = ["source_file", "source_index", "source_line", "source_offset", "message_key", "data_digest", "error_code"]
print(json.dumps([[r[c] for c in columns] for r in read.select(*columns).collect()]))
spark.stop()
"""


def test_the_data_source_reads_dumps_on_hdfs_as_it_reads_them_locally(bed, dumps, hdfs_dumps, spark, tmp_path):
    """A job's own query on the cluster: ``spark.read.format("mqdump")`` over the HDFS copy,
    planned by the driver through WebHDFS and read by the executors' Python workers, gives the
    rows of the same files read in local mode."""
    import subprocess
    import sys

    import dlq_pipeline

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            DATA_SOURCE_ON_THE_CLUSTER,
            bed.master,
            hdfs_dumps,
            json.dumps(bed.spark_conf()),
            bed.hdfs.http,
        ],
        env=bed.spark_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    remote = json.loads(done.stdout.strip().splitlines()[-1])
    dlq_pipeline.register(spark)
    columns = [
        "source_file",
        "source_index",
        "source_line",
        "source_offset",
        "message_key",
        "data_digest",
        "error_code",
    ]
    here = [[r[c] for c in columns] for r in spark.read.format("mqdump").load(str(dumps)).select(*columns).collect()]
    renamed = [[str(dumps) + row[0][len(hdfs_dumps) :], *row[1:]] for row in remote]
    assert sorted(renamed, key=json.dumps) == sorted(here, key=json.dumps) and len(here) > 210


def test_landed_dumps_on_hdfs_are_archived_and_not_read_again(bed, dumps, spark, tmp_path):
    """``ingest.clean_source = "archive"`` over an HDFS folder (WebHDFS RENAME): each landed
    file moves under the archive folder with its path below the input, byte for byte; a
    second run reads nothing and finds nothing left to move."""
    bed.hdfs.upload(dumps, "/dlq/incoming")
    incoming, landed = f"{bed.hdfs.uri}/dlq/incoming", f"{bed.hdfs.uri}/dlq/landed"
    storage = open_storage(spark, StorageSettings(format="parquet", path=str(tmp_path / "wh")))
    settings = IngestSettings(
        reader="python",
        hdfs=HdfsSettings(webhdfs=bed.hdfs.http),
        clean_source="archive",
        archive_dir=landed,
        clean_quarantined=True,
    )
    first = ingest_here(spark, storage, [incoming], run_id="archive-1", settings=settings)
    assert first.inputs.read == 5 and len(first.inputs.cleaned) == 5
    assert [s["pathSuffix"] for s in bed.hdfs.list("/dlq/incoming/more")] == [] and {
        s["pathSuffix"] for s in bed.hdfs.list("/dlq/incoming")
    } == {"_ignored.dmp", "more"}
    moved = {s["pathSuffix"] for s in bed.hdfs.list("/dlq/landed/more")}
    assert moved == {p.name for p in (dumps / "more").iterdir()}
    for name in moved:
        assert bed.hdfs.read(f"/dlq/landed/more/{name}") == (dumps / "more" / name).read_bytes()

    again = ingest_here(spark, storage, [incoming], run_id="archive-2", settings=settings)
    assert (again.inputs.read, again.inputs.skipped, again.inputs.cleaned) == (0, 0, {})
