"""Running the CLI of this checkout as its own process, locally or on the test bed (one
SparkContext per process: the suite's own local session cannot be pointed at a cluster)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CLI = str(Path(sys.executable).with_name("dlq-pipeline"))


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


def ingest(tmp: Path, name: str, inputs: str, spark: dict, env: dict, *, webhdfs: str = "", reader: str = "auto") -> dict:
    """Ingest ``inputs`` into a fresh Parquet warehouse ``tmp/NAME-warehouse`` (64 KiB splits)."""
    warehouse = tmp / f"{name}-warehouse"
    config = write_config(tmp / f"{name}.toml", {"spark": spark, "storage": {"path": str(warehouse)},
                                                 "ingest": {"split_bytes": 65536, "webhdfs": webhdfs,
                                                            "reader": reader}})
    done = cli(["ingest", "--config", str(config), "--json", inputs], env, tmp)
    return {"warehouse": warehouse, "result": json.loads(done.stdout.strip().splitlines()[-1])}
