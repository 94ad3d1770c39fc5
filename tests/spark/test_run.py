"""`dlq-pipeline run` and `report` end to end on a small generated DLQ (dry-run target)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dlq_pipeline.cli import cli
from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
from dlq_pipeline.dumps.generator import write_generated
from tests.support import REPO

STARTER = str(REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules")


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    root = tmp_path_factory.mktemp("run")
    return [str(p) for p in write_generated(root / "dumps", 300, seed=3, files=2, max_size=16 * 1024)]


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_run_summarises_and_a_rerun_adds_nothing(spark, dumps, tmp_path):
    warehouse = str(tmp_path / "wh")
    args = [
        "run",
        "--input",
        dumps[0],
        "--input",
        dumps[1],
        "--rules",
        STARTER,
        "--warehouse",
        warehouse,
        "--target",
        "dry-run",
        "--json",
    ]
    first = invoke(*args)
    summary = json.loads(first.stdout)  # --json: stdout is the summary alone, progress is on stderr
    shown = first.stderr.splitlines()
    assert [line for line in shown if line.startswith("[")] == [
        "[1/4] ingest",
        "[2/4] classify",
        "[3/4] replay",
        "[4/4] summary",
    ]
    assert shown[shown.index("[3/4] replay") + 1 : shown.index("[4/4] summary")][-1] == "replay: 4/4 partitions done"
    assert summary["messages_landed"] == 300 and summary["quarantined"] == 0
    assert sum(summary["decisions"].values()) == 300 == summary["pending"]
    assert summary["messages_without_dlh"] == summary["ignore_reasons"]["no_dlh"] > 0
    puts = summary["decisions"].get("RETRY", 0) + summary["decisions"].get("FWD", 0)
    assert summary["outcomes"]["dry_run"] == puts  # a dry run sends nothing and ends nothing
    assert first.exit_code == 3  # messages without a header need attention
    assert (tmp_path / "wh" / "_runs" / f"{summary['run_id']}.json").exists()

    second = json.loads(invoke(*args).stdout.strip().splitlines()[-1])
    assert second["messages_landed"] == 0 and second["duplicates_skipped"] == 0  # no file read again
    assert (second["input_files"]["read"], second["input_files"]["skipped"]) == (0, summary["files"])
    assert second["decisions"] == summary["decisions"]  # dry runs consume no attempts

    report = invoke("report", "--warehouse", warehouse, "--json", "--html", str(tmp_path / "r.html"))
    assert report.exit_code == 0
    doc = json.loads(report.stdout)
    assert doc["run_id"] == second["run_id"] and len(doc["runs"]) == 2
    assert doc["overall"]["messages"] == 300
    assert {r["action"]: r["count"] for r in doc["run"]["by_action"]} == second["decisions"]
    assert sum(r["count"] for r in doc["overall"]["without_dlh"]) == summary["messages_without_dlh"]
    page = (tmp_path / "r.html").read_text()
    assert page.count("Plotly.newPlot(") >= 4 and "chart-arrivals-reason" in page  # charts drawn by plotly.js

    # landing again by hand: nothing read; --reread reads them, progress per file on stderr
    again = invoke("ingest", *dumps, "--warehouse", warehouse)
    size = sum(Path(p).stat().st_size for p in dumps) / 1e6
    assert (again.exit_code, again.stdout) == (
        0,
        "landed 0 messages from 0 files (0 already landed, 0 quarantined)\n"
        f"  files: 0 read (0.0 MB), 2 landed before and skipped ({size:,.1f} MB), 0 deferred\n",
    )
    again = invoke("ingest", *dumps, "--warehouse", warehouse, "--reread")
    assert again.exit_code == 0
    assert again.stdout.splitlines()[0] == "landed 0 messages from 2 files (300 already landed, 0 quarantined)"
    progress = again.stderr.splitlines()
    assert progress[1].startswith("ingest: 2 files (") and progress[1].endswith(" work items")
    counts = {path: sum(1 for _ in read_dump(path)) for path in dumps}
    assert progress[-2:] == [f"ingest: {p}: {counts[p]} messages, 0 quarantined" for p in sorted(dumps)]
    assert sum(counts.values()) == 300


def test_bad_rules_table_stops_before_anything_is_touched(tmp_path, dumps):
    bad = tmp_path / "bad.rules"
    bad.write_text("REASON(MQRC_Q_FULL) ACTION(RETRY) RETRIES(3)\nDESTQ(A) ACTION(FWD)\n")
    result = CliRunner().invoke(
        cli,
        ["run", "--input", dumps[0], "--rules", str(bad), "--warehouse", str(tmp_path / "wh"), "--target", "dry-run"],
    )
    assert result.exit_code == 2
    assert f"{bad}:1:" in result.stderr and f"{bad}:2:" in result.stderr
    assert "nothing was touched" in result.stderr
    assert not (tmp_path / "wh").exists()


def test_bad_configuration_and_target_exit_2(tmp_path, dumps):
    conf = tmp_path / "c.toml"
    conf.write_text("[replay]\nbatchsize = 1\n")
    result = CliRunner().invoke(cli, ["run", "--config", str(conf), "--input", dumps[0], "--rules", STARTER])
    assert result.exit_code == 2
    assert "unknown key 'replay.batchsize' (did you mean 'batch_size'?)" in result.stderr
    result = CliRunner().invoke(
        cli, ["run", "--input", dumps[0], "--rules", STARTER, "--target", "ftp:x", "--warehouse", str(tmp_path / "wh")]
    )
    assert result.exit_code == 2 and "bad --target 'ftp:x'" in result.stderr
