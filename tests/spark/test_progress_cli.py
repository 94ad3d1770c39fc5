"""Progress of the stages run on their own (drain, classify, replay, settle): on stderr also
under --json, whose stdout stays one JSON document; with --log-format json, stderr is JSON
log records only, the stage events among them."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from dlq_pipeline.cli import cli
from dlq_pipeline.dumps.generator import generate
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.runtime import logs

pytestmark = pytest.mark.spark
COUNT = 30
PARTITIONS = 3


def invoke(*args) -> tuple[dict, list[str]]:
    """(the --json result, the stderr lines) of one command; stdout must be exactly one JSON document."""
    try:
        result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    finally:
        logs.setup_from_env()  # the next command (or test) starts from the default logging again
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr.splitlines()


def test_each_stage_on_its_own_shows_progress_on_stderr_and_keeps_stdout_json(spark, tmp_path):
    wh = tmp_path / "wh"
    qm = SimQueueManager(wh / "_sim" / "QM1.sqlite", "QM1", {})
    c = qm.connect()
    handle = c.open_for_put("DLQ")
    for g in [g for g in generate(40, seed=11, max_size=2048) if g.dlh is not None and not g.problem][:COUNT]:
        c.put(handle, g.message.md, g.message.data)  # each with an MQDLH: the one rule discards them all
    c.commit()
    c.disconnect()
    rules = tmp_path / "discard.rules"
    rules.write_text("INPUTQM(QM1) INPUTQ('DLQ')\nACTION(DISCARD)\n")
    common = ["--warehouse", str(wh), "--set", f"replay.max_connections={PARTITIONS}", "--json"]

    drained, stderr = invoke("drain", "--source", "sim:QM1", "--rules", str(rules), *common)
    assert drained["landed"] == COUNT
    assert stderr == ["drain: 1 messages", f"drain: {COUNT} messages"] or stderr == [f"drain: {COUNT} messages"]

    decided, stderr = invoke("classify", "--rules", str(rules), *common)
    assert decided["decisions"] == {"DISCARD": COUNT}
    assert stderr and all(re.fullmatch(r"classify: \d+/\d+ tasks done", line) for line in stderr), stderr
    done, total = map(int, re.search(r"(\d+)/(\d+)", stderr[-1]).groups())
    assert done == total > 0

    # the same under JSON logs: no plain line, the stage's events and counts as records
    again, stderr = invoke("--log-format", "json", "classify", "--rules", str(rules), *common)
    assert again["decisions"] == {"DISCARD": COUNT}
    events = [json.loads(line) for line in stderr]  # every line a JSON record
    stage_events = [(r["event"], r.get("stage")) for r in events if r.get("event", "").startswith("stage_")]
    assert stage_events[0] == ("stage_started", "classify") and stage_events[-1] == ("stage_finished", "classify")
    counted = [r for r in events if r.get("event") == "stage_progress"]
    assert counted and counted[-1]["done"] == counted[-1]["total"] > 0 and counted[-1]["unit"] == "tasks"
    assert events[-1]["decisions"] == {"DISCARD": COUNT} and events[-1]["run_id"] == again["run_id"]

    # replay counts its own partitions (one task each), not the stages that read its input
    replayed, stderr = invoke("replay", "--target", "sim:QM1", *common)
    assert replayed["outcomes"] == {"discarded": COUNT} and replayed["decisions_run_id"] == again["run_id"]
    # one task per replay partition: at most max_connections (adaptive execution may coalesce small ones)
    assert stderr and all(re.fullmatch(r"replay: \d/\d partitions done", line) for line in stderr), stderr
    done, total = map(int, re.search(r"(\d+)/(\d+)", stderr[-1]).groups())
    assert done == total and 0 < total <= PARTITIONS

    settled, stderr = invoke("settle", "--source", "sim:QM1", "--rules", str(rules), *common)
    assert settled["removed"] == COUNT and qm.messages("DLQ") == []
    assert stderr[-1] == f"settle: {COUNT}/{COUNT} ended messages done"
    assert f"settle: {COUNT} messages browsed" in stderr
