"""The whole pipeline on S3, run as a user runs it with nothing but the AWS SDKs' standard
variables set: dumps in a bucket (read by the JVM reader through S3A, and by the Python
reader through pyarrow), a Delta warehouse in the bucket, classify, replay to a ``dir:``
target in the bucket, the report. Its tables and files equal those of the same run on a
local disk. What cannot work is refused before anything is written, in one line: a wrong
key, a missing bucket, a missing connector, a Parquet warehouse replay cannot guard."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from dlq_pipeline import exitcodes
from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.warehouse.storage import Storage
from tests.cluster.runs import CLI, STARTER, decisions, ledger
from tests.conftest import dump_tree

BUCKET = "dlq"
RUN_ID = "S3-RUN"
MESSAGE_RUN_COLUMNS = {"run_id", "landed_at"}  # what differs between two runs of the same dumps


def cli(args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=900)


def _run(inputs: str, warehouse: str, target: str, env: dict, cwd: Path, *extra: str) -> dict:
    args = ["run", "--input", inputs, "--rules", STARTER, "--warehouse", warehouse, "--format", "delta"]
    done = cli([*args, "--target", target, "--run-id", RUN_ID, "--json", *extra], env, cwd)
    assert done.returncode in (exitcodes.OK, exitcodes.ATTENTION), done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _messages(spark, warehouse: Path, rename: tuple[str, str] | None) -> list[dict]:
    rows = []
    for row in Storage(spark, format="delta", path=str(warehouse)).read("messages").collect():
        row = {k: v for k, v in row.asDict(recursive=True).items() if k not in MESSAGE_RUN_COLUMNS}
        if rename:
            assert row["source_file"].startswith(rename[0]), row["source_file"]
            row["source_file"] = rename[1] + row["source_file"][len(rename[0]) :]
        rows.append(row)
    return sorted(rows, key=lambda r: r["message_key"])


@pytest.fixture(scope="module")
def local_run(s3, spark, tmp_path_factory) -> dict:
    """The dumps, in a local folder and in the bucket, and the run on a local disk."""
    root = tmp_path_factory.mktemp("s3-pipeline")
    dumps = root / "dumps"
    write_generated(dumps, 240, seed=23, files=2, max_size=65536)
    s3.client().create_bucket(Bucket=BUCKET)
    remote = s3.upload(dumps, BUCKET, "dumps")
    summary = _run(str(dumps), str(root / "wh"), f"dir:{root / 'out'}", s3.env(), root)
    return {"root": root, "dumps": dumps, "remote": remote, "summary": summary}


def test_the_whole_pipeline_on_s3_equals_the_same_run_on_a_local_disk(s3, spark, local_run, tmp_path):
    """About two minutes: two `dlq-pipeline run` processes, each a local Spark with Delta and
    S3A, on S3 and (the module's) on a local disk; a run's own process is what a user starts,
    with only the AWS variables set."""
    on_s3 = _run(local_run["remote"], f"s3a://{BUCKET}/wh", f"dir:s3a://{BUCKET}/out", s3.env(), tmp_path)
    here = local_run["summary"]
    for key in ("messages_landed", "quarantined", "decisions", "outcomes", "ignore_reasons"):
        assert on_s3[key] == here[key], key
    assert on_s3["outcomes"]["delivered"] > 100

    warehouse = s3.download(BUCKET, "wh", tmp_path / "wh")
    rename = (local_run["remote"], str(local_run["dumps"]))
    local_wh = local_run["root"] / "wh"
    assert _messages(spark, warehouse, rename) == _messages(spark, local_wh, None)
    assert decisions(spark, str(warehouse), rename) == decisions(spark, str(local_wh), None)
    assert ledger(spark, str(warehouse)) == ledger(spark, str(local_wh))
    out = s3.download(BUCKET, "out", tmp_path / "out")
    assert dump_tree(out) == dump_tree(local_run["root"] / "out")  # byte for byte, but the dumps' Created: time

    report = cli(["report", "--warehouse", f"s3a://{BUCKET}/wh", "--format", "delta", "--json"], s3.env(), tmp_path)
    assert report.returncode in (exitcodes.OK, exitcodes.ATTENTION), report.stderr[-4000:]
    assert json.loads(report.stdout.strip().splitlines()[-1])["runs"][0]["run_id"] == RUN_ID


def test_the_python_reader_lands_from_s3_what_the_jvm_reader_lands(s3, spark, local_run, tmp_path):
    """About a minute: one `dlq-pipeline run` process with ``ingest.reader = python``, each
    work item read from the bucket by pyarrow in the executors' Python."""
    on_s3 = _run(
        local_run["remote"],
        f"s3a://{BUCKET}/wh-python",
        "dry-run",
        s3.env(),
        tmp_path,
        "--set",
        "ingest.reader=python",
        "--set",
        "ingest.split_bytes=65536",
    )
    assert on_s3["messages_landed"] == local_run["summary"]["messages_landed"]
    warehouse = s3.download(BUCKET, "wh-python", tmp_path / "wh")
    rename = (local_run["remote"], str(local_run["dumps"]))
    assert _messages(spark, warehouse, rename) == _messages(spark, local_run["root"] / "wh", None)


@pytest.mark.parametrize(
    ("name", "args", "env", "says"),
    [
        ("a wrong key", [], {"AWS_SECRET_ACCESS_KEY": "not-the-key"}, "ACCESS_DENIED"),
        ("a missing bucket", ["--warehouse", "s3a://no-such-bucket/wh"], {}, "there is no bucket 'no-such-bucket'"),
    ],
)
def test_what_cannot_reach_s3_is_one_line_and_exit_2_before_anything_is_written(
    s3, local_run, tmp_path, name, args, env, says
):
    before = s3.keys(BUCKET)
    base = ["run", "--input", local_run["remote"], "--rules", STARTER, "--format", "delta", "--target", "dry-run"]
    warehouse = [] if "--warehouse" in args else ["--warehouse", f"s3a://{BUCKET}/refused"]
    done = cli([*base, *warehouse, *args], s3.env(**env), tmp_path)
    assert done.returncode == exitcodes.USAGE, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: 's3a://") and says in line, line
    assert s3.secret not in done.stderr + done.stdout
    assert s3.keys(BUCKET) == before and list(tmp_path.iterdir()) == []


def test_without_the_s3a_connector_a_run_on_s3_is_refused_naming_the_fix(s3, local_run, tmp_path):
    empty = tmp_path / "no-jars"
    empty.mkdir()
    args = ["run", "--input", local_run["remote"], "--rules", STARTER, "--warehouse", f"s3a://{BUCKET}/no-s3a"]
    done = cli([*args, "--format", "delta", "--target", "dry-run"], s3.env(DLQ_PIPELINE_JARS=str(empty)), tmp_path)
    assert done.returncode == exitcodes.USAGE, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"error: s3a://{BUCKET}/no-s3a is on S3, but Hadoop's S3A connector is not on the Spark")
    assert "dlq-pipeline setup --s3a" in line
    assert not s3.keys(BUCKET, "no-s3a")


def test_replay_refuses_a_parquet_warehouse_on_s3_it_cannot_guard(s3, local_run, tmp_path):
    args = ["run", "--input", local_run["remote"], "--rules", STARTER, "--warehouse", f"s3a://{BUCKET}/parquet"]
    done = cli([*args, "--format", "parquet", "--target", "dry-run"], s3.env(), tmp_path)
    assert done.returncode == exitcodes.USAGE, done.stderr
    assert 'storage.format = "delta"' in done.stderr
    assert not s3.keys(BUCKET, "parquet")


DATA_SOURCE_ON_S3 = """
import json, os, sys
from pyspark.sql import SparkSession
import dlq_pipeline
spark = SparkSession.builder.master("local[2]").getOrCreate()
dlq_pipeline.register(spark)
decided = spark.read.format("mqdump").load(sys.argv[1]).transform(dlq_pipeline.decide(sys.argv[2]))
rows = decided.select("message_key", "source_file", "source_index", "source_line", "data_digest", "action").collect()
print(json.dumps(sorted([list(r) for r in rows])))
"""


def test_the_data_source_reads_dumps_in_a_bucket(s3, spark, local_run, tmp_path):
    """A notebook reading a bucket's dumps with ``spark.read.format("mqdump")``: a plain local
    Spark (no S3A: the executors' Python reads the objects through pyarrow, with the AWS
    variables alone) gives the rows and decisions of the same dumps on a local disk."""
    import sys

    import dlq_pipeline

    done = subprocess.run(
        [sys.executable, "-c", DATA_SOURCE_ON_S3, local_run["remote"], STARTER],
        env={**s3.env(), "PYSPARK_PYTHON": sys.executable},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    remote, local = local_run["remote"], str(local_run["dumps"])
    got = [[local + r[1][len(remote) :], *r[2:]] for r in sorted(json.loads(done.stdout.splitlines()[-1]))]
    dlq_pipeline.register(spark)
    here = spark.read.format("mqdump").load(local).transform(dlq_pipeline.decide(STARTER))
    columns = ("source_file", "source_index", "source_line", "data_digest", "action")
    assert sorted(got) == sorted([list(r) for r in here.select(*columns).collect()]) and len(got) == 240


def test_landed_dumps_in_a_bucket_are_archived_once_even_after_a_move_cut_short(s3, local_run, tmp_path):
    """``ingest.clean_source = "archive"`` on S3, where a move is a copy and a delete: each
    landed object moves under the archive prefix byte for byte, one whose copy a killed run had
    already made is finished (its source deleted, the copy kept), and a second run reads and
    moves nothing."""
    client = s3.client()
    s3.upload(local_run["dumps"], BUCKET, "incoming")
    names = sorted(p.name for p in local_run["dumps"].iterdir())
    client.copy_object(
        Bucket=BUCKET, Key=f"landed/{names[0]}", CopySource={"Bucket": BUCKET, "Key": f"incoming/{names[0]}"}
    )
    args = ["ingest", f"s3a://{BUCKET}/incoming", "--warehouse", str(tmp_path / "wh"), "--json"]
    archive = ["--set", 'ingest.clean_source="archive"', "--set", f'ingest.archive_dir="s3a://{BUCKET}/landed"']
    first = cli([*args, *archive, "--set", "ingest.reader=python"], s3.env(), tmp_path)
    assert first.returncode == exitcodes.OK, first.stderr[-4000:]
    assert sorted(json.loads(first.stdout.splitlines()[-1])["inputs"]["cleaned"]) == [
        f"s3a://{BUCKET}/incoming/{name}" for name in names
    ]
    objects = {prefix: [k for k in s3.keys(BUCKET, prefix) if not k.endswith("/")] for prefix in ("incoming", "landed")}
    assert objects == {"incoming": [], "landed": [f"landed/{n}" for n in names]}  # the folder's marker may stay
    for name in names:
        body = client.get_object(Bucket=BUCKET, Key=f"landed/{name}")["Body"].read()
        assert body == (local_run["dumps"] / name).read_bytes()
    again = cli([*args, *archive], s3.env(), tmp_path)
    assert json.loads(again.stdout.splitlines()[-1])["inputs"]["read"] == 0
