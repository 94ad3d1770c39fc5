"""The pipeline over Spark Connect (marker `connect`): what Databricks serverless and shared
clusters run, against a local Spark Connect server (tests/connect_server.py, one per session).

The CLI runs in a subprocess with ``spark.remote`` set, so the client process has no JVM:
ingest → decode → classify → replay to ``dir:`` → report must produce exactly the replayed
files, tables, run summary and report of a classic local session, on Parquet and on Delta.
Replay to ``mq:`` and drain/settle need classic Spark: refused with exit 2 and one line,
before anything is touched, whether ``spark.remote``/``$SPARK_REMOTE`` asks for Connect or
the process already has a Connect session (a serverless task).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from tests.support import REPO, repo_env

from ..conftest import dump_tree

pytestmark = [pytest.mark.connect, pytest.mark.spark]

STARTER = REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules"
TABLES = ("messages", "quarantine", "decisions", "ledger")
# What must agree between classic and Connect: everything but clocks (the summary's start,
# finish and durations; the report's generated_at and decided_at; timestamp columns).
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


def cli(work: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``dlq-pipeline ARGS`` in ``work`` with this checkout's package."""
    env = {**repo_env(keep_path=False, PYSPARK_PYTHON=sys.executable), **(env or {})}
    return subprocess.run(
        [str(Path(sys.executable).parent / "dlq-pipeline"), *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def read_table(warehouse: Path, table: str, fmt: str) -> list[dict]:
    """A table's rows without its clock (timestamp) columns, in a stable order, read without
    Spark (pyarrow for Parquet, delta-rs for Delta)."""
    if not (warehouse / table).exists():  # a table nothing was written to (no quarantined record)
        return []
    if fmt == "delta":
        from deltalake import DeltaTable

        data = DeltaTable(str(warehouse / table)).to_pyarrow_table()
    else:
        import pyarrow.dataset as ds

        data = ds.dataset(str(warehouse / table), format="parquet").to_table()
    keep = [f.name for f in data.schema if not pa.types.is_timestamp(f.type)]
    rows = data.select(keep).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=repr))


def in_process(work: Path, *args: str) -> tuple[int, str, str]:
    """``dlq-pipeline ARGS`` in this process, in ``work``: its session is the suite's."""
    from click.testing import CliRunner

    from dlq_pipeline.cli import cli as command

    before = os.getcwd()
    os.chdir(work)
    try:
        result = CliRunner().invoke(command, list(args))
    finally:
        os.chdir(before)
    return result.exit_code, result.stdout, result.stderr + repr(result.exception)


def pipeline(work: Path, dumps: Path, fmt: str, remote: str = "") -> dict:
    """run (to dir:) + report in ``work`` with relative paths; what they produced. Over
    Connect (``remote``) the CLI is a subprocess (a client without a JVM); classic, it runs
    in this process on the suite's session."""
    work.mkdir()
    common = ["--warehouse", "wh", "--format", fmt]

    def run(*args):
        if remote:
            done = cli(work, *args, *common, "--set", f'spark.remote="{remote}"')
            status, out, errors = done.returncode, done.stdout, done.stderr
        else:
            status, out, errors = in_process(work, *args, *common)
        assert status in (0, 3), errors[-3000:]
        return json.loads(out.splitlines()[-1])

    summary = run(
        "run", "--input", str(dumps), "--rules", str(STARTER), "--target", "dir:out", "--run-id", "SMOKE", "--json"
    )
    report = run("report", "--json")
    return {
        "summary": {k: summary[k] for k in SUMMARY_KEYS},
        "report": {k: report[k] for k in REPORT_KEYS},
        "tables": {t: read_table(work / "wh", t, fmt) for t in TABLES},
        "files": dump_tree(work / "out"),
    }


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("connect-dumps")
    done = cli(
        out, "generate", "--out", str(out), "--count", "150", "--seed", "23", "--files", "2", "--max-size", "8192"
    )
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def classic(spark, dumps, tmp_path_factory) -> dict:
    """The pipeline on the suite's classic local session (the reference)."""
    return pipeline(tmp_path_factory.mktemp("classic") / "w", dumps, "parquet")


@pytest.mark.parametrize("fmt", ["parquet", pytest.param("delta", marks=pytest.mark.delta)])
def test_pipeline_over_spark_connect_matches_classic_spark(fmt, dumps, classic, connect_url, tmp_path):
    """Up to a minute on Delta: `run` and `report` as a client process of the suite's one
    Connect server, every stage a series of gRPC round trips, each Delta commit among them."""
    over_connect = pipeline(tmp_path / "w", dumps, fmt, remote=connect_url)
    assert classic["files"] and classic["tables"]["ledger"]  # something was landed and replayed
    assert {r["outcome"] for r in classic["tables"]["ledger"]} >= {"delivered"}
    assert over_connect == classic


# --- what needs classic Spark -------------------------------------------------------------------

MQ_REFUSED = (
    "error: replay to mq:QM1 cannot run over Spark Connect ({why}): it needs IBM MQ's client and a "
    "route to the queue manager on the driver and every executor, and a warehouse directory they share; "
    "run it on classic Spark (spark.remote unset: the CLI's own session, spark-submit, a Databricks "
    "classic job cluster)"
)
DRAIN_REFUSED = MQ_REFUSED.replace("replay to mq:QM1", "drain and settle of {source}")

REFUSED = [
    (["replay", "--target", "mq:QM1"], MQ_REFUSED),
    (["run", "--input", "dumps", "--rules", str(STARTER), "--target", "mq:QM1"], MQ_REFUSED),
    (["drain", "--source", "sim:QM1", "--queue", "DLQ"], DRAIN_REFUSED.replace("{source}", "sim:QM1")),
    (["settle", "--source", "mq:QM1", "--queue", "DLQ"], DRAIN_REFUSED.replace("{source}", "mq:QM1")),
    (
        ["run", "--input", "dumps", "--rules", str(STARTER), "--target", "dir:out", "--source", "sim:QM1"],
        DRAIN_REFUSED.replace("{source}", "sim:QM1"),
    ),
]


@pytest.mark.parametrize("args, line", REFUSED, ids=lambda v: v[0] if isinstance(v, list) else None)
@pytest.mark.parametrize("how", ["setting", "env"])
def test_mq_replay_drain_and_settle_refuse_spark_connect_before_touching_anything(args, line, how, tmp_path):
    """No server is needed: the refusal comes before any session (the URL goes nowhere)."""
    (tmp_path / "dumps").mkdir()
    url = "sc://127.0.0.1:9"
    if how == "setting":
        done = cli(tmp_path, *args, "--warehouse", "wh", "--set", f'spark.remote="{url}"')
        why = "spark.remote is set"
    else:
        done = cli(tmp_path, *args, "--warehouse", "wh", env={"SPARK_REMOTE": url})
        why = "$SPARK_REMOTE is set"
    assert (done.returncode, done.stderr.splitlines(), done.stdout) == (2, [line.format(why=why)], "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dumps"]  # no warehouse, no lock, no out


SERVERLESS_TASK = """
import sys
from pyspark.sql import SparkSession
SparkSession.builder.remote(sys.argv[1]).getOrCreate()   # the session a serverless task is given
from dlq_pipeline.jobs import main
main(sys.argv[2], sys.argv[3:])
"""


@pytest.mark.parametrize(
    "stage, args, line",
    [
        ("replay", ["--target", "mq:QM1"], MQ_REFUSED),
        ("drain", ["--source", "mq:QM1", "--queue", "DLQ"], DRAIN_REFUSED.replace("{source}", "mq:QM1")),
    ],
)
def test_a_job_given_a_connect_session_refuses_mq_stages(stage, args, line, connect_url, tmp_path):
    """A wheel task on serverless: the session exists (no spark.remote, no $SPARK_REMOTE)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
    done = subprocess.run(
        [sys.executable, "-c", SERVERLESS_TASK, connect_url, stage, *args, "--warehouse", "wh"],
        cwd=tmp_path,
        env=repo_env(env, keep_path=False),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (done.returncode, done.stderr.splitlines()[-1:]) == (
        2,
        [line.format(why="the session is a Spark Connect session")],
    ), done.stderr[-3000:]
    assert list(tmp_path.iterdir()) == []


def test_triage_notebook_runs_over_spark_connect(spark, connect_url, tmp_path, monkeypatch):
    """The notebook as on a serverless notebook: its kernel's session is a Connect one."""
    from .test_notebook import run_notebook

    run_notebook(spark, tmp_path, monkeypatch, SPARK_REMOTE=connect_url)


def client(script: str, cwd: Path, *args: str) -> dict:
    """The JSON a client process without a JVM prints last, running ``script`` with ``args``."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=cwd,
        env=repo_env(keep_path=False),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


JVM_READER_OVER_CONNECT = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
from dlq_pipeline.dumps.plan import plan_work
from dlq_pipeline.ingest.spark import jvm_available, jvm_items, scan
items = plan_work([sys.argv[2]], 20_000)
jvm = jvm_items(spark, items)
rows = scan(spark, items, jvm=jvm).groupBy("rec").count().collect()
print(json.dumps({"available": jvm_available(spark), "jvm_items": len(jvm), "items": len(items),
                  "rows": {r["rec"]: r["count"] for r in rows}}))
"""


def test_the_connect_server_reads_dumps_in_its_jvm(dumps, connect_url, tmp_path):
    """The server was started with the session's jars (tests/connect_server.py), the JVM
    reader's among them: a client without a JVM has its dumps read in the server's, every
    work item to its end."""
    dump = sorted(dumps.glob("*.dmp"))[0]
    got = client(JVM_READER_OVER_CONNECT, tmp_path, connect_url, str(dump))
    assert got["available"] and got["jvm_items"] == got["items"] > 1
    assert got["rows"] == {"message": 75, "split": got["items"]}  # no fallback row


DATA_SOURCE_OVER_CONNECT = """
import json, sys
from pyspark.sql import SparkSession
import dlq_pipeline
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
dlq_pipeline.register(spark)
decided = spark.read.format("mqdump").load(sys.argv[2]).transform(dlq_pipeline.decide(sys.argv[3]))
rows = decided.select("message_key", "source_file", "source_index", "action", "rule_line", "target_q",
                      dlq_pipeline.reason_name().alias("reason")).collect()
spark.sql("CREATE TEMPORARY VIEW dumps USING dmpmqmsg OPTIONS (path '" + sys.argv[2] + "')")
print(json.dumps({"rows": sorted((list(r) for r in rows), key=json.dumps),
                  "sql": spark.sql("SELECT count(*) FROM dumps WHERE error_code IS NULL").first()[0]}))
"""


def test_the_data_sources_and_functions_run_over_connect(spark, dumps, connect_url, tmp_path):
    """A notebook on serverless: a client without a JVM reads the dumps through the data
    source, decides them and names their reasons, with the rows the classic session gives."""
    import dlq_pipeline

    got = client(DATA_SOURCE_OVER_CONNECT, tmp_path, connect_url, str(dumps), str(STARTER))
    dlq_pipeline.register(spark)
    decided = spark.read.format("mqdump").load(str(dumps)).transform(dlq_pipeline.decide(STARTER))
    rows = decided.select(
        "message_key",
        "source_file",
        "source_index",
        "action",
        "rule_line",
        "target_q",
        dlq_pipeline.reason_name().alias("reason"),
    ).collect()
    assert got["rows"] == sorted((list(r) for r in rows), key=json.dumps)
    assert got["sql"] == len(rows) == 150


STREAM_OVER_CONNECT = """
import json, sys
from pyspark.sql import SparkSession
import dlq_pipeline
from dlq_pipeline.config.settings import StorageSettings
from dlq_pipeline.ingest.spark import stream_landing
url, inbox, warehouse, checkpoint = sys.argv[1:5]
spark = SparkSession.builder.remote(url).getOrCreate()
dlq_pipeline.register(spark)
query = (spark.readStream.format("mqdump").option("maxFilesPerTrigger", "1").load(inbox)
         .writeStream.foreachBatch(stream_landing(StorageSettings(path=warehouse)))
         .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
query.awaitTermination()
files = spark.read.parquet(warehouse + "/files").select("path", "messages").collect()
print(json.dumps({"messages": spark.read.parquet(warehouse + "/messages").count(),
                  "files": sorted([r["path"].rsplit("/", 1)[-1], r["messages"]] for r in files)}))
"""


def test_a_stream_over_connect_lands_each_file_once_across_restarts(dumps, connect_url, tmp_path):
    """A Databricks job's ingest task on serverless: an availableNow stream of a dumps folder
    landed by `stream_landing`, which runs on the server; a restart lands only what is new."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    first, second = sorted(dumps.glob("*.dmp"))[:2]
    (inbox / first.name).write_bytes(first.read_bytes())
    args = (connect_url, str(inbox), str(tmp_path / "wh"), str(tmp_path / "checkpoint"))
    got = client(STREAM_OVER_CONNECT, tmp_path, *args)
    assert got["messages"] == 75 and got["files"] == [[first.name, 75]]
    assert client(STREAM_OVER_CONNECT, tmp_path, *args)["files"] == [[first.name, 75]]  # nothing new
    (inbox / second.name).write_bytes(second.read_bytes())
    got = client(STREAM_OVER_CONNECT, tmp_path, *args)
    assert got["messages"] == 150 and got["files"] == sorted([[first.name, 75], [second.name, 75]])
