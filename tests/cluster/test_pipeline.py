"""The pipeline beyond ingest on the test bed: dumps on HDFS, a Delta warehouse on HDFS
(``storage.lock = false``: the flock needs a local file system), ingest and classify on the
standalone cluster decide every message exactly as ingest and classify of the same files in
local mode. Replay is not here yet: its checkpoints need a local warehouse (issue 15, part 2)."""

from __future__ import annotations

from dlq_pipeline.spark.storage import Storage
from tests.cluster.runs import cli, write_config
from tests.conftest import REPO, require_delta

STARTER = str(REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules")


def _decisions(spark, warehouse: str, rename: tuple[str, str] | None) -> list[dict]:
    rows = []
    for row in Storage(spark, format="delta", path=warehouse).read("decisions").collect():
        row = row.asDict(recursive=True)
        decided_at = row.pop("decided_at")
        row.pop("run_id")
        if row["not_before"] is not None:  # a retry: when, relative to the decision
            row["not_before"] = row["not_before"] - decided_at
        if rename:
            assert row["source_file"].startswith(rename[0]), row["source_file"]
            row["source_file"] = rename[1] + row["source_file"][len(rename[0]):]
        rows.append(row)
    return sorted(rows, key=lambda r: (r["message_key"], str(r)))


def test_ingest_and_classify_into_delta_on_hdfs_decide_as_in_local_mode(bed, dumps, hdfs_dumps, tmp_path, spark):
    require_delta(spark)
    remote_warehouse = f"{bed.hdfs.uri}/dlq/warehouse"
    local_warehouse = str(tmp_path / "local-warehouse")
    on_cluster = write_config(tmp_path / "cluster.toml", {
        "spark": {"master": bed.master, "conf": bed.spark_conf()},
        "storage": {"format": "delta", "path": remote_warehouse, "lock": False},
        "ingest": {"split_bytes": 65536, "webhdfs": bed.hdfs.http}})
    local = write_config(tmp_path / "local.toml", {
        "spark": {"master": "local[2]"},
        "storage": {"format": "delta", "path": local_warehouse},
        "ingest": {"split_bytes": 65536}})
    for config, inputs in ((on_cluster, hdfs_dumps), (local, str(dumps))):
        cli(["ingest", "--config", str(config), inputs], bed.spark_env(), tmp_path)
        cli(["classify", "--config", str(config), "--rules", STARTER], bed.spark_env(), tmp_path)

    assert bed.hdfs.list("/dlq/warehouse/decisions")  # the Delta tables are on HDFS
    remote = _decisions(spark, remote_warehouse, (hdfs_dumps, str(dumps)))
    expected = _decisions(spark, local_warehouse, None)
    assert len(expected) > 210
    assert remote == expected
