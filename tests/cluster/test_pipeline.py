"""The whole pipeline on the test bed: dumps on HDFS, a Delta warehouse on HDFS
(``storage.lock = false``: the flock needs a local file system; the writer lease guards it),
replay's checkpoints and the lease's fence file in that warehouse, a ``dir:`` target on HDFS.
``run`` on the standalone cluster decides every message and delivers exactly what ``run`` of
the same files in local mode does: the same decisions, the same ledger rows and the same
dmpmqmsg files (group-readable, ``replay.dir_mode = "0640"``)."""

from __future__ import annotations

import re
from pathlib import Path

from dlq_pipeline.spark.storage import Storage
from tests.cluster.runs import cli, write_config
from tests.conftest import REPO, require_delta

STARTER = str(REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules")
RUN_ID = "R1"
VOLATILE = ("run_id", "started_at", "finished_at")  # ledger columns that differ between any two runs


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


def _ledger(spark, warehouse: str) -> list[dict]:
    rows = [{k: v for k, v in r.asDict().items() if k not in VOLATILE}
            for r in Storage(spark, format="delta", path=warehouse).read("ledger").collect()]
    return sorted(rows, key=lambda r: (r["message_key"], str(r)))


def hdfs_tree(hdfs, path: str) -> dict[str, tuple[bytes, str]]:
    """Every file below ``path`` on HDFS: (content without the dump's ``Created:`` time, permission)."""
    found = {}
    for status in hdfs.list(path):
        child = f"{path}/{status['pathSuffix']}"
        if status["type"] == "DIRECTORY":
            found.update({f"{status['pathSuffix']}/{k}": v for k, v in hdfs_tree(hdfs, child).items()})
        else:
            found[status["pathSuffix"]] = (re.sub(rb"Created:[^\n]*", b"", hdfs.read(child)), status["permission"])
    return found


def local_tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): re.sub(rb"Created:[^\n]*", b"", p.read_bytes())
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_run_into_delta_and_dir_on_hdfs_decides_and_delivers_as_in_local_mode(bed, dumps, hdfs_dumps, tmp_path, spark):
    require_delta(spark)
    remote_warehouse = f"{bed.hdfs.uri}/dlq/warehouse"
    local_warehouse = str(tmp_path / "local-warehouse")
    on_cluster = write_config(tmp_path / "cluster.toml", {
        "pipeline": {"inputs": [hdfs_dumps]},
        "spark": {"master": bed.master, "conf": bed.spark_conf()},
        "storage": {"format": "delta", "path": remote_warehouse, "lock": False},
        "ingest": {"split_bytes": 65536, "webhdfs": bed.hdfs.http},
        "replay": {"batch_size": 7, "dir_mode": "0640"}})
    local = write_config(tmp_path / "local.toml", {
        "pipeline": {"inputs": [str(dumps)]},
        "spark": {"master": "local[2]"},
        "storage": {"format": "delta", "path": local_warehouse},
        "ingest": {"split_bytes": 65536},
        "replay": {"batch_size": 7}})
    for config, target in ((on_cluster, f"dir:{bed.hdfs.uri}/dlq/out"), (local, f"dir:{tmp_path / 'out'}")):
        cli(["run", "--config", str(config), "--rules", STARTER, "--target", target, "--run-id", RUN_ID],
            bed.spark_env(), tmp_path)

    assert bed.hdfs.list("/dlq/warehouse/decisions")  # the Delta tables are on HDFS
    remote = _decisions(spark, remote_warehouse, (hdfs_dumps, str(dumps)))
    expected = _decisions(spark, local_warehouse, None)
    assert len(expected) > 210
    assert remote == expected
    ledger = _ledger(spark, local_warehouse)
    assert sum(r["outcome"] == "delivered" for r in ledger) > 20
    assert _ledger(spark, remote_warehouse) == ledger
    written = hdfs_tree(bed.hdfs, "/dlq/out")
    assert {k: v for k, (v, _) in written.items()} == local_tree(tmp_path / "out")  # no staging name left either
    assert {mode for _, mode in written.values()} == {"640"}
    assert [s["pathSuffix"] for s in bed.hdfs.list("/dlq/warehouse/_checkpoints")] == []  # deleted once in the ledger
