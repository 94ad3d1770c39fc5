"""Inputs on HDFS, read by a Spark standalone cluster through dumps.files (WebHDFS), land
exactly the `messages` and `quarantine` tables that the same files land from a local folder in
local mode. Small splits, so executors read byte ranges from the middle of remote files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dlq_pipeline.dumps.generator import write_generated
from tests.conftest import REPO

CLI = str(Path(sys.executable).with_name("dlq-pipeline"))
FIXTURES = REPO / "tests" / "fixtures"
RUN_COLUMNS = {"run_id", "landed_at", "quarantined_at"}  # what differs between any two runs


def _value(v) -> str:
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(v)


def _toml(settings: dict) -> str:
    lines = []
    for section, values in settings.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {_value(v)}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def ingest(tmp: Path, name: str, inputs: str, spark: dict, env: dict, *, webhdfs: str = "") -> dict:
    warehouse = tmp / f"{name}-warehouse"
    config = tmp / f"{name}.toml"
    config.write_text(_toml({"spark": spark, "storage": {"path": str(warehouse)},
                             "ingest": {"split_bytes": 65536, "webhdfs": webhdfs}}))
    done = subprocess.run([CLI, "ingest", "--config", str(config), "--json", inputs], env=env, cwd=tmp,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 3), done.stderr[-4000:]
    return {"warehouse": warehouse, "result": json.loads(done.stdout.strip().splitlines()[-1])}


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("inputs") / "dumps"
    write_generated(root, 150, seed=23, files=2, max_size=4096)
    write_generated(root / "more", 60, seed=24, files=1, qmgr="QM2", max_size=4096)
    shutil.copy(FIXTURES / "amqsbcg-field-mq91-rfh2.txt", root / "more" / "listing.txt")
    (root / "more" / "notes.txt").write_text("not a dump\n")  # one quarantine record
    (root / "_ignored.dmp").write_text("skipped: starts with _\n")
    return root


def _rows(spark, warehouse: Path, table: str, rename: tuple[str, str] | None) -> list[dict]:
    from dlq_pipeline.spark.storage import Storage

    df = Storage(spark, format="parquet", path=str(warehouse)).read(table)
    rows = []
    for row in df.collect():
        row = {k: v for k, v in row.asDict(recursive=True).items() if k not in RUN_COLUMNS}
        if rename:
            assert row["source_file"].startswith(rename[0]), row["source_file"]
            row["source_file"] = rename[1] + row["source_file"][len(rename[0]):]
        rows.append(row)
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def test_dumps_on_hdfs_land_as_the_same_files_do_locally(bed, dumps, tmp_path, spark):
    uploaded = bed.hdfs.upload(dumps, "/dlq/dumps")
    assert len(uploaded) == 6
    remote = f"{bed.hdfs.uri}/dlq/dumps"
    on_cluster = ingest(tmp_path, "cluster", remote, {"master": bed.master, "conf": bed.spark_conf()},
                        bed.spark_env(), webhdfs=bed.hdfs.http)
    local = ingest(tmp_path, "local", str(dumps), {"master": "local[2]"}, bed.spark_env())

    assert on_cluster["result"]["messages_landed"] == local["result"]["messages_landed"] > 210
    assert on_cluster["result"]["files"] == local["result"]["files"] == 5
    for table in ("messages", "quarantine"):
        cluster_rows = _rows(spark, on_cluster["warehouse"], table, (remote, str(dumps)))
        local_rows = _rows(spark, local["warehouse"], table, None)
        assert cluster_rows == local_rows, table
    # the work was split into byte ranges read by the cluster's executors
    assert list((bed.root / "work").glob("app-*/*/stderr"))
