"""The jobs/*.py scripts under a real ``spark-submit --master local[1]`` (three processes in all).

One generated dump; the expected decisions come from the reference matcher (pure Python),
so the scripts' outputs are compared with an independent answer, not with themselves.
The live scripts (drain, settle) run against a simulated queue manager in the warehouse.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.dumps.records import DumpedMessage
from dlq_pipeline.rules.matcher import decide
from dlq_pipeline.rules.parser import load_rules
from dlq_pipeline.rules.view import match_view
from tests.support import REPO

pytestmark = [pytest.mark.spark, pytest.mark.deploy]
STARTER = str(REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules")
SPARK_SUBMIT = str(Path(sys.executable).with_name("spark-submit"))
HARNESS = str(Path(__file__).with_name("jobs_harness.py"))
COUNT = 80


def spark_submit(args: list[str], cwd: Path, **env) -> subprocess.CompletedProcess:
    environ = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable, **env}
    return subprocess.run(
        [SPARK_SUBMIT, "--master", "local[1]", "--conf", "spark.ui.enabled=false", *args],
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def dump(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("jobs")
    [path] = write_generated(root / "dumps", COUNT, seed=11, files=1, max_size=8 * 1024)
    return str(path)


@pytest.fixture(scope="module")
def expected_actions(dump) -> dict[str, int]:
    """What the reference matcher decides for every message of the dump (no attempts yet)."""
    table = load_rules(STARTER)
    decisions = Counter()
    for record in read_dump(dump):
        assert isinstance(record, DumpedMessage)
        decisions[decide(table, match_view(record.md, record.data, truncated=record.truncated)).action] += 1
    return dict(decisions)


def test_ingest_classify_replay_report_scripts_under_spark_submit(tmp_path, dump, expected_actions):
    warehouse = str(tmp_path / "wh")
    stage_runs = [
        ["jobs/ingest.py", dump, "--warehouse", warehouse, "--json"],
        ["jobs/classify.py", "--rules", STARTER, "--warehouse", warehouse, "--json"],
        ["jobs/replay.py", "--warehouse", warehouse, "--target", "dry-run", "--json"],
        ["jobs/report.py", "--warehouse", warehouse, "--json"],
    ]
    args = [HARNESS, str(tmp_path / "result.json")]
    for run in stage_runs:
        args += [str(REPO / run[0]), *run[1:], "--"]
    proc = spark_submit(args, tmp_path, DLQ_PIPELINE_LOG_FORMAT="json", DLQ_PIPELINE_LOG_LEVEL="info")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["master"] == "local[1]"  # spark-submit's --master, not the config's local[*]
    ingest, classify, replay, report = result["runs"]
    assert [r["exit"] for r in result["runs"]] == [0, 0, 0, 0], result

    landed = json.loads(ingest["stdout"])
    assert {k: landed[k] for k in ("messages_landed", "duplicates_skipped", "quarantined", "files")} == {
        "messages_landed": COUNT,
        "duplicates_skipped": 0,
        "quarantined": 0,
        "files": 1,
    }
    decided = json.loads(classify["stdout"])
    assert decided["decisions"] == expected_actions
    replayed = json.loads(replay["stdout"])
    assert replayed["decisions_run_id"] == decided["run_id"] and replayed["stale"] == 0
    assert replayed["outcomes"]["dry_run"] == expected_actions.get("RETRY", 0) + expected_actions.get("FWD", 0)
    doc = json.loads(report["stdout"])
    assert doc["run_id"] == decided["run_id"] and doc["overall"]["messages"] == COUNT
    assert {r["action"]: r["count"] for r in doc["run"]["by_action"]} == expected_actions

    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"ts"')]
    finished = {e["stage"]: e for e in events if e.get("event") == "stage_finished"}
    assert set(finished) == {"ingest", "classify", "replay"}
    assert finished["ingest"]["messages_landed"] == COUNT and finished["ingest"]["run_id"] == landed["run_id"]
    assert finished["classify"]["decisions"] == expected_actions and finished["classify"]["duration_s"] >= 0
    assert finished["replay"]["outcomes"] == replayed["outcomes"] and finished["replay"]["run_id"] == replayed["run_id"]


def test_run_script_under_spark_submit_logs_json_and_writes_metrics(tmp_path, dump, expected_actions):
    warehouse = tmp_path / "wh"
    prom = tmp_path / "textfile" / "dlq_pipeline.prom"
    proc = spark_submit(
        [
            str(REPO / "jobs" / "run.py"),
            "--input",
            dump,
            "--rules",
            STARTER,
            "--warehouse",
            str(warehouse),
            "--target",
            "dry-run",
            "--json",
            "--set",
            f"metrics.textfile={json.dumps(str(prom))}",
            "--set",
            "log.format=json",
        ],
        tmp_path,
        DLQ_PIPELINE_LOG_LEVEL="info",
    )
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    expected_status = 3 if expected_actions.get("IGNORE") else 0
    assert proc.returncode == expected_status == summary["exit_status"], proc.stderr[-3000:]
    assert summary["decisions"] == expected_actions and summary["messages_landed"] == COUNT
    assert summary["metrics"]["counts"]["messages_read"] == COUNT
    assert set(summary["metrics"]["durations_s"]) == {"ingest", "classify", "replay", "total"}
    stored = json.loads((warehouse / "_runs" / f"{summary['run_id']}.json").read_text())
    # the printed summary also times the summary stage itself, which the stored one cannot
    assert stored == {**summary, "durations": {k: v for k, v in summary["durations"].items() if k != "summary"}}

    # spark-submit merges the Python driver's stderr into its stdout: the log lines are there
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"ts"')]
    finished = [e["stage"] for e in events if e.get("event") == "stage_finished"]
    assert finished == ["ingest", "classify", "replay", "summary"]
    assert all(e["run_id"] == summary["run_id"] for e in events if "run_id" in e)
    [last] = [e for e in events if e.get("event") == "run_finished"]
    assert last["exit_status"] == expected_status and last["metrics"] == summary["metrics"]

    text = prom.read_text()
    assert f'dlq_pipeline_last_run_info{{run_id="{summary["run_id"]}",target="dry-run"}} 1' in text
    assert f"dlq_pipeline_last_run_exit_status {expected_status}" in text
    for action, count in expected_actions.items():
        assert f'dlq_pipeline_last_run_decisions{{action="{action}"}} {count}' in text


def test_drain_and_settle_scripts_under_spark_submit(tmp_path, dump, expected_actions):
    """The live scripts against a simulated queue manager: drain (browse) lands the DLQ,
    classify and replay (to the same sim) decide and deliver, settle removes what ended."""
    from dlq_pipeline.mq.sim import SimQueueManager

    from .test_live import DLQ, seed_queue

    warehouse = tmp_path / "wh"
    qm = SimQueueManager(warehouse / "_sim" / "QM1.sqlite", "QM1", {"remote_qmgrs": ["*"]})
    seed_queue(qm, [(r.md, r.data) for r in read_dump(dump)])
    common = ["--warehouse", str(warehouse), "--json"]
    stage_runs = [
        ["jobs/drain.py", "--source", "sim:QM1", "--queue", DLQ, *common],
        ["jobs/classify.py", "--rules", STARTER, *common],
        ["jobs/replay.py", "--target", "sim:QM1", *common],
        ["jobs/settle.py", "--source", "sim:QM1", "--queue", DLQ, *common],
    ]
    args = [HARNESS, str(tmp_path / "result.json")]
    for run in stage_runs:
        args += [str(REPO / run[0]), *run[1:], "--"]
    proc = spark_submit(args, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = json.loads((tmp_path / "result.json").read_text())["runs"]
    assert [r["exit"] for r in runs] == [0, 0, 0, 0], runs
    drained, decided, replayed, settled = [json.loads(r["stdout"]) for r in runs]
    assert drained["landed"] == COUNT
    assert decided["decisions"] == expected_actions
    ended = replayed["outcomes"].get("delivered", 0) + replayed["outcomes"].get("discarded", 0)
    assert ended == COUNT - expected_actions.get("IGNORE", 0)  # the sim accepts every target
    assert settled["removed"] == ended
    assert len(qm.messages(DLQ)) == COUNT - ended  # what the rules ignore stays on the DLQ
