"""Running the CLI of this checkout as its own process, locally or on the test bed (one
SparkContext per process: the suite's own local session cannot be pointed at a cluster), and
what such runs leave (decisions, ledger, files on HDFS) in a form two runs can be compared in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dlq_pipeline.warehouse.storage import Storage
from tests.conftest import without_created
from tests.support import REPO

CLI = str(Path(sys.executable).with_name("dlq-pipeline"))
STARTER = str(REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules")
VOLATILE = ("run_id", "started_at", "finished_at")  # ledger columns that differ between any two runs


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


def write_config(path: Path, settings: dict) -> Path:
    path.write_text(_toml(settings))
    return path


def cli(args: list[str], env: dict, cwd: Path, ok=(0, 3)) -> subprocess.CompletedProcess:
    """``dlq-pipeline ARGS`` in its own process (its own SparkContext: local or on the bed)."""
    done = subprocess.run([CLI, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert done.returncode in ok, done.stderr[-4000:]
    return done


def ingest(
    tmp: Path, name: str, inputs: str, spark: dict, env: dict, *, webhdfs: str = "", reader: str = "auto"
) -> dict:
    """Ingest ``inputs`` into a fresh Parquet warehouse ``tmp/NAME-warehouse`` (64 KiB splits)."""
    warehouse = tmp / f"{name}-warehouse"
    config = write_config(
        tmp / f"{name}.toml",
        {
            "spark": spark,
            "storage": {"path": str(warehouse)},
            "ingest": {"split_bytes": 65536, "reader": reader},
            "hdfs": {"webhdfs": webhdfs},
        },
    )
    done = cli(["ingest", "--config", str(config), "--json", inputs], env, tmp)
    return {"warehouse": warehouse, "result": json.loads(done.stdout.strip().splitlines()[-1])}


def decisions(spark, warehouse: str, rename: tuple[str, str] | None, webhdfs: str = "") -> list[dict]:
    """The ``decisions`` of a Delta warehouse, comparable between runs: no run id, a retry's
    ``not_before`` relative to its decision, the source files under ``rename[1]`` for ``rename[0]``
    (``webhdfs``: the NameNode's HTTP address of a warehouse on HDFS, `Storage`'s)."""
    rows = []
    for row in Storage(spark, format="delta", path=warehouse, webhdfs=webhdfs).read("decisions").collect():
        row = row.asDict(recursive=True)
        decided_at = row.pop("decided_at")
        row.pop("run_id")
        if row["not_before"] is not None:  # a retry: when, relative to the decision
            row["not_before"] = row["not_before"] - decided_at
        if rename:
            assert row["source_file"].startswith(rename[0]), row["source_file"]
            row["source_file"] = rename[1] + row["source_file"][len(rename[0]) :]
        rows.append(row)
    return sorted(rows, key=lambda r: (r["message_key"], str(r)))


def ledger(spark, warehouse: str, webhdfs: str = "") -> list[dict]:
    rows = [
        {k: v for k, v in r.asDict().items() if k not in VOLATILE}
        for r in Storage(spark, format="delta", path=warehouse, webhdfs=webhdfs).read("ledger").collect()
    ]
    return sorted(rows, key=lambda r: (r["message_key"], str(r)))


def hdfs_tree(hdfs, path: str) -> dict[str, tuple[bytes, str]]:
    """Every file below ``path`` on HDFS: (content without the dump's ``Created:`` time, permission)."""
    found = {}
    for status in hdfs.list(path):
        child = f"{path}/{status['pathSuffix']}"
        if status["type"] == "DIRECTORY":
            found.update({f"{status['pathSuffix']}/{k}": v for k, v in hdfs_tree(hdfs, child).items()})
        else:
            found[status["pathSuffix"]] = (without_created(hdfs.read(child)), status["permission"])
    return found
