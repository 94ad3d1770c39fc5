"""The smoke tier of the other supported Spark versions (marker `compat`).

For Spark 4.0 (Databricks 17.3 LTS) and Spark 3.5 (Databricks 15.4/16.4 LTS, EMR, Dataproc,
on-prem), a venv pinned by that tier's constraints file (cached outside the repository,
tests/venvs.py) gets the built wheel, and runs ingest → decode → classify → replay to `dir:`
→ report on Parquet in a subprocess. The replayed files and the decisions must be exactly
what the default tier (this test's own environment) produces from the same input.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import REPO, dump_tree
from ..venvs import clean_env, environment, locked, pip

pytestmark = [pytest.mark.compat, pytest.mark.slow]

STARTER = REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules"
TIERS = {"spark-4.0.txt": "4.0.", "spark-3.5.txt": "3.5."}


def smoke(bin_dir: Path, work: Path, dumps: Path) -> dict:
    """Run the pipeline with the `dlq-pipeline` of ``bin_dir`` in ``work``; what it produced."""
    env = {**clean_env(), "PYSPARK_PYTHON": str(bin_dir / "python"), "PYSPARK_DRIVER_PYTHON": str(bin_dir / "python")}
    work.mkdir()
    common = ["--warehouse", "wh", "--set", "spark.master=local[2]"]

    def run(*args):
        done = subprocess.run([str(bin_dir / "dlq-pipeline"), *args, *common], cwd=work, env=env,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode in (0, 3), done.stderr[-3000:]
        return json.loads(done.stdout.splitlines()[-1])

    summary = run("run", "--input", str(dumps), "--rules", str(STARTER), "--target", "dir:out",
                  "--run-id", "SMOKE", "--json")
    report = run("report", "--json")
    version = subprocess.run([str(bin_dir / "python"), "-c", "import pyspark; print(pyspark.__version__)"],
                             env=env, capture_output=True, text=True, check=True).stdout.strip()
    return {"pyspark": version, "summary": summary, "report": report,
            "files": dump_tree(work / "out")}


# What must agree across Spark versions: everything but clocks (each dump's `Created:` header
# time, dump_tree leaves out; the report's decided_at and generated_at, the summary's start,
# finish and durations).
SUMMARY_KEYS = ("decisions", "exit_status", "files", "ignore_reasons", "messages_landed", "messages_without_dlh",
                "outcomes", "pending", "quarantined", "run_id", "target")
REPORT_KEYS = ("overall", "run", "run_id", "trend")


def _comparable(result: dict) -> dict:
    return {"files": result["files"], "summary": {k: result["summary"][k] for k in SUMMARY_KEYS},
            "report": {k: result["report"][k] for k in REPORT_KEYS}}


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("compat-dumps")
    subprocess.run([str(Path(sys.executable).parent / "dlq-pipeline"), "generate", "--out", str(out), "--count", "120",
                    "--seed", "11", "--files", "2", "--max-size", "8192"], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def baseline(dumps, tmp_path_factory) -> dict:
    return smoke(Path(sys.executable).parent, tmp_path_factory.mktemp("compat-base") / "w", dumps)


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_smoke_pipeline_on_another_spark_tier_matches_the_default(tier, built_wheel, dumps, baseline, tmp_path):
    root = environment(f"compat-{tier.removesuffix('.txt')}")
    with locked(root):
        pip(root, "install", "--quiet", "--no-deps", "--force-reinstall", str(built_wheel))
        result = smoke(root / "bin", tmp_path / "w", dumps)
    assert result["pyspark"].startswith(TIERS[tier])
    assert result["files"]  # something was replayed
    assert _comparable(result) == _comparable(baseline)
