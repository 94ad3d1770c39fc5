"""A bad replay target or warehouse is exit 2 with one clear line, before Spark starts or
anything is written (not a traceback after ingest and classify have run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from dlq_pipeline.cli import cli
from dlq_pipeline.cli import stages as pipeline_cli
from tests.support import REPO

STARTER = str(REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules")


@pytest.fixture(autouse=True)
def no_spark(monkeypatch):
    """Every case here must stop before a SparkSession is asked for."""

    def refuse(config, *_, **__):
        raise AssertionError("Spark was started: the check came too late")

    monkeypatch.setattr(pipeline_cli, "start_spark", refuse)
    import dlq_pipeline.cli.live as live_cli

    monkeypatch.setattr(live_cli, "start_spark", refuse)


def invoke(*args):
    result = CliRunner().invoke(cli, list(args))
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.exception is None or isinstance(result.exception, SystemExit), result.stderr
    assert "Traceback" not in result.stderr
    return result.exit_code, errors


@pytest.fixture
def dump(tmp_path):
    path = tmp_path / "in.dmp"
    path.write_bytes(b"* never read\n")
    return str(path)


def write_config(tmp_path, text):
    path = tmp_path / "c.toml"
    path.write_text(text)
    return str(path)


def test_bad_targets_are_exit_2_before_anything_is_touched(tmp_path, dump):
    wh = tmp_path / "wh"
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with_qm1 = write_config(tmp_path, '[mq.qmgrs.QM1]\nchannel = "APP.SVRCONN"\nconn_name = "mq(1414)"\n')
    cases = [
        (
            ["--target", "mq:QM1", "--config", with_qm1],
            "no IBM MQ client for Python: install it with  pip install 'dlq-pipeline[mq]'",
        ),
        (["--target", "mq:QM1"], "target mq:QM1 needs a [mq.qmgrs.QM1] table"),
        (["--target", "sim:../../x"], "bad --target 'sim:../../x': '../../x' is not a valid queue manager name"),
        (["--target", "dir:/proc/nope"], "error: target dir:/proc/nope: cannot write in /proc: "),
        (
            ["--target", f"dir:{a_file}/out"],
            f"error: target dir:{a_file}/out: {a_file} is a file, so {a_file}/out cannot be made",
        ),
        (["--target", "ftp:x"], "bad --target 'ftp:x': target must be dry-run, dir:PATH, sim:[NAME] or mq:QMGR"),
    ]
    for extra, message in cases:
        status, errors = invoke("run", "--input", dump, "--rules", STARTER, "--warehouse", str(wh), *extra)
        assert status == 2 and len(errors) == 1 and message in errors[0], (extra, errors)
        status, errors = invoke("replay", "--warehouse", str(wh), *extra)
        assert status == 2 and len(errors) == 1 and message in errors[0], (extra, errors)
    assert not wh.exists() and not Path("/proc/nope").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "c.toml", "in.dmp"]  # no probe left behind


def test_a_warehouse_that_is_a_file_is_exit_2_and_left_alone(tmp_path, dump):
    wh = tmp_path / "wh"
    wh.write_bytes(b"not a warehouse")
    before = os.stat(wh)
    message = f"error: the warehouse storage.path '{wh}' cannot be used: {wh} is not a directory"
    for args in (
        ["run", "--input", dump, "--rules", STARTER, "--target", "dry-run"],
        ["ingest", dump],
        ["classify", "--rules", STARTER],
        ["replay", "--target", "dry-run"],
    ):
        status, errors = invoke(*args, "--warehouse", str(wh))
        assert (status, errors) == (2, [message]), args
    status, errors = invoke("ingest", dump, "--warehouse", str(wh / "inside"))
    assert (status, errors) == (
        2,
        [
            f"error: the warehouse storage.path '{wh / 'inside'}' cannot be used: "
            f"{wh} is a file, so {wh / 'inside'} cannot be made"
        ],
    )
    after = os.stat(wh)
    assert (after.st_mtime_ns, after.st_size, wh.read_bytes()) == (
        before.st_mtime_ns,
        before.st_size,
        b"not a warehouse",
    )


def test_what_needs_classic_spark():
    from dlq_pipeline.cli.common import needs_classic

    assert needs_classic() == ""
    assert [needs_classic(target=t) for t in ("dry-run", "dir:out", "sim:QM1", "mq:QM1")] == [
        "",
        "",
        "",
        "replay to mq:QM1",
    ]
    assert needs_classic("mq:QM1", "sim:DLQ") == "replay to mq:QM1 and drain and settle of sim:DLQ"
    assert needs_classic("dir:out", "mq:QM2") == "drain and settle of mq:QM2"


def test_replay_to_mq_over_spark_connect_is_exit_2_before_the_mq_checks(monkeypatch, tmp_path):
    """spark.remote set: refused before the [mq.qmgrs.QM1] table or the MQ client are looked at."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        cli, ["replay", "--target", "mq:QM1", "--warehouse", "wh", "--set", 'spark.remote="sc://127.0.0.1:9"']
    )
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        "error: replay to mq:QM1 cannot run over Spark Connect (spark.remote is set): it needs IBM MQ's client and a "
        "route to the queue manager on the driver and every executor, and a warehouse directory they share; run it "
        "on classic Spark (spark.remote unset: the CLI's own session, spark-submit, a Databricks classic job "
        "cluster)"
    ]
    assert list(tmp_path.iterdir()) == []
