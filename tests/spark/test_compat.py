"""The smoke tier of the other supported Spark versions (marker `compat`).

For Spark 4.0 (Databricks 17.3 LTS) and Spark 3.5 (Databricks 15.4/16.4 LTS, EMR, Dataproc,
on-prem), a venv pinned by that tier's constraints file (cached outside the repository,
tests/venvs.py) gets the built wheel, and runs ingest → decode → classify → replay to `dir:`
→ report on Parquet in one subprocess, then reads the dumps through the ``mqdump`` data source
and decides them with `decide`. The replayed files, the decisions and the data source's rows
must be exactly what the default tier (the same commands in this process, on the suite's
session) produces from the same input; Spark 3.5, which has no Python data sources, must get
one clear refusal naming its version.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import dlq_pipeline
from dlq_pipeline.cli import cli
from tests.support import REPO, locked

from ..conftest import dump_tree
from ..venvs import clean_env, environment, pip

pytestmark = [pytest.mark.compat, pytest.mark.slow]

STARTER = REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules"
TIERS = {"spark-4.0.txt": "4.0.", "spark-3.5.txt": "3.5."}
DECIDED = ["message_key", "source_file", "source_index", "action", "rule_line", "target_q", "ignore_reason"]


# The commands a tier runs, in one process (one JVM): the subject is the pipeline on that
# Spark version, not the process. It prints one JSON object: pyspark's version and what each
# command printed last on stdout (the run's summary, the report).
SMOKE = """
import contextlib, io, json, sys
import pyspark
import dlq_pipeline
from dlq_pipeline.cli import cli

def command(*args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            cli.main(list(args), prog_name="dlq-pipeline", standalone_mode=False)
            code = 0
        except SystemExit as exc:
            code = exc.code
    assert code in (0, 3), (args, code)
    return json.loads(out.getvalue().splitlines()[-1])

dumps = sys.argv[1]
common = ["--warehouse", "wh", "--set", "spark.master=local[2]"]
summary = command("run", "--input", dumps, "--rules", STARTER, "--target", "dir:out", "--run-id", "SMOKE", "--json",
                  *common)
report = command("report", "--json", *common)

# the data source and decide, as a notebook on this Spark uses them (a clear refusal before 4.0)
import dlq_pipeline
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[2]").getOrCreate()
try:
    dlq_pipeline.register(spark)
    decided = spark.read.format("mqdump").load(dumps).transform(dlq_pipeline.decide(STARTER))
    source = {"rows": sorted([list(r) for r in decided.select(*DECIDED).collect()], key=json.dumps)}
except dlq_pipeline.DlqPipelineError as exc:
    source = {"refused": str(exc), "exit_code": exc.exit_code}
print(json.dumps({"pyspark": pyspark.__version__, "summary": summary, "report": report, "source": source}))
""".replace("STARTER", repr(str(STARTER))).replace("DECIDED", repr(DECIDED))


def smoke(python: Path, work: Path, dumps: Path) -> dict:
    """The pipeline run by ``python`` (its environment's Spark) in ``work``: what it produced."""
    env = {**clean_env(), "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python)}
    work.mkdir()
    done = subprocess.run(
        [str(python), "-c", SMOKE, str(dumps)], cwd=work, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {**json.loads(done.stdout.splitlines()[-1]), "files": dump_tree(work / "out")}


# What must agree across Spark versions: everything but clocks (each dump's `Created:` header
# time, dump_tree leaves out; the report's decided_at and generated_at, the summary's start,
# finish and durations).
SUMMARY_KEYS = (
    "decisions",
    "exit_status",
    "files",
    "ignore_reasons",
    "messages_landed",
    "messages_without_dlh",
    "outcomes",
    "pending",
    "quarantined",
    "run_id",
    "target",
)
REPORT_KEYS = ("overall", "run", "run_id", "trend")


def _comparable(result: dict) -> dict:
    return {
        "files": result["files"],
        "summary": {k: result["summary"][k] for k in SUMMARY_KEYS},
        "report": {k: result["report"][k] for k in REPORT_KEYS},
    }


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("compat-dumps")
    done = CliRunner().invoke(
        cli, ["generate", "--out", str(out), "--count", "120", "--seed", "11", "--files", "2", "--max-size", "8192"]
    )
    assert done.exit_code == 0, done.output
    return out


@pytest.fixture(scope="module")
def baseline(spark, dumps, tmp_path_factory) -> dict:
    """The same commands in this process, on the suite's session: the tested tier's outputs."""
    work = tmp_path_factory.mktemp("compat-base")
    runner = CliRunner()
    with contextlib.chdir(work):  # the same relative paths as the tiers' (the summary names its target)
        summary = runner.invoke(
            cli,
            [
                "run",
                "--input",
                str(dumps),
                "--rules",
                str(STARTER),
                "--target",
                "dir:out",
                "--run-id",
                "SMOKE",
                "--json",
                "--warehouse",
                "wh",
            ],
        )
        report = runner.invoke(cli, ["report", "--json", "--warehouse", "wh"])
    assert summary.exit_code in (0, 3) and report.exit_code in (0, 3), (summary.stderr, report.stderr)
    dlq_pipeline.register(spark)
    decided = spark.read.format("mqdump").load(str(dumps)).transform(dlq_pipeline.decide(STARTER))
    return {
        "source": {"rows": sorted([list(r) for r in decided.select(*DECIDED).collect()], key=json.dumps)},
        "summary": json.loads(summary.stdout.splitlines()[-1]),
        "report": json.loads(report.stdout.splitlines()[-1]),
        "files": dump_tree(work / "out"),
    }


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_smoke_pipeline_on_another_spark_tier_matches_the_default(tier, built_wheel, dumps, baseline, tmp_path):
    root = environment(f"compat-{tier.removesuffix('.txt')}")
    with locked(root):
        pip(root, "install", "--quiet", "--no-deps", "--force-reinstall", str(built_wheel))
        result = smoke(root / "bin" / "python", tmp_path / "w", dumps)
    assert result["pyspark"].startswith(TIERS[tier])
    assert result["files"]  # something was replayed
    assert _comparable(result) == _comparable(baseline)
    if tier == "spark-3.5.txt":  # no Python data sources: one clear refusal, naming the version
        assert result["source"] == {
            "refused": f"reading dumps with spark.read needs Spark 4.0 or later (Python data sources); this "
            f"session runs Spark {result['pyspark']}: land them with `dlq-pipeline ingest` (or "
            "dlq_pipeline.run_pipeline) and read the messages table",
            "exit_code": 2,
        }
    else:
        assert result["source"] == baseline["source"] and len(baseline["source"]["rows"]) == 120
