"""The report on a generated DLQ with its storms: scopes, distinct counts, rule text, run
metadata, arrivals with the storms flagged, advice with evidence; a wrong warehouse is exit 2."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from click.testing import CliRunner

from dlq_pipeline.cli import cli
from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import RunSettings, StorageSettings
from dlq_pipeline.dumps.generator import HUB_QMGR, STORMS, generate, write_generated
from dlq_pipeline.pipeline import run_pipeline
from dlq_pipeline.report.spark import SCOPES, build_report
from dlq_pipeline.rules.parser import load_rules
from dlq_pipeline.warehouse.storage import open_storage
from tests.support import REPO

pytestmark = pytest.mark.spark
STARTER = str(REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules")
COUNT = 2000
NOW = dt.datetime(2026, 11, 2, 12, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def warehouse(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    dumps = [str(p) for p in write_generated(root / "dumps", COUNT, seed=4, files=2, max_size=4096)]
    config = load_config(overrides={"storage": {"path": str(root / "wh")}})
    table = load_rules(STARTER)
    first = run_pipeline(
        spark, RunSettings.from_config(config), table, inputs=dumps, target="dry-run", now=NOW, run_id="first"
    )
    second = run_pipeline(
        spark,
        RunSettings.from_config(config),
        table,
        inputs=dumps,
        target="dry-run",
        now=NOW + dt.timedelta(hours=1),
        run_id="second",
    )
    return root / "wh", config, first, second


def test_the_report_says_scopes_counts_distinct_messages_and_shows_rule_text(spark, warehouse):
    path, config, first, second = warehouse
    report = build_report(open_storage(spark, StorageSettings.from_config(config)), now=NOW)
    assert report["run_id"] == "second" and report["scopes"] == SCOPES
    assert report["overall"]["scope"] == SCOPES["all_time"] and report["pending"]["scope"] == SCOPES["pending"]
    assert report["run"]["scope"] == SCOPES["run"]
    # every message once, by its latest outcome, though both runs decided all of them
    assert sum(r["count"] for r in report["overall"]["states"]) == COUNT == report["overall"]["messages"]
    assert report["run"]["messages"] == report["run"]["decisions"] == COUNT
    info = report["run_info"]
    assert (info["target"], info["rules_file"], info["exit_status"]) == ("dry-run", STARTER, second.exit_status)
    assert info["duration_s"] == pytest.approx(sum(second.durations.values()), abs=0.01)
    texts = {r["line"]: r["text"] for r in report["rules"]}
    for row in report["run"]["by_rule"]:
        if row["rule_line"] is not None:
            assert row["rule"] == texts[row["rule_line"]]
        else:
            assert row["rule"] == "(no rule: no_dlh)" and row["action"] == "IGNORE"
    assert "REASON(MQRC_Q_FULL) ACTION(RETRY) RETRY(12)" in texts.values()
    json.dumps(report)  # JSON-ready as it is


def test_arrivals_flag_the_generated_storms_and_the_advice_names_the_full_queue(spark, warehouse):
    _, config, _, _ = warehouse
    report = build_report(open_storage(spark, StorageSettings.from_config(config)), now=NOW)
    arrivals = report["arrivals"]
    assert arrivals["bucket"] == "hour" and len(arrivals["series"]) == 14 * 24
    generated = list(generate(COUNT, seed=4, max_size=4096))
    assert sum(s["count"] for s in arrivals["series"]) == COUNT
    by_storm = {s.name: s for s in STORMS}
    assert [b["reasons"][0]["reason"] for b in arrivals["bursts"]] == ["MQRC_UNKNOWN_OBJECT_NAME", "MQRC_Q_FULL"]
    q_full = arrivals["bursts"][1]
    members = [g for g in generated if g.storm == "q_full"]
    assert q_full["reasons"][0]["count"] >= len(members)  # the whole storm is inside the flagged hours
    assert q_full["qmgrs"][0]["qmgr"] == "CSQ1" and q_full["destinations"][0]["dest"] == "ORDQM01/ORDERS.IN"
    codes = [a["code"] for a in report["advice"]]
    assert codes[:2] == ["unknown_destination_burst", "queue_full"]
    full = report["advice"][1]
    assert full["title"].startswith(f"{by_storm['q_full'].dest_q} on {by_storm['q_full'].home} was full for about ")
    assert full["evidence"]["messages"] == q_full["count"]
    assert "no_dlh_stays" in codes
    senders = {r["qmgr"] for r in report["overall"]["originators"]}
    assert HUB_QMGR not in senders and "CSQ1" in senders


def test_report_on_a_warehouse_without_tables_is_exit_2_naming_it(spark, tmp_path):
    missing = tmp_path / "no" / "such" / "dir"
    result = CliRunner().invoke(cli, ["report", "--warehouse", str(missing), "--json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert f"error: no tables in the warehouse {missing}" in result.stderr
    replay = CliRunner().invoke(cli, ["replay", "--warehouse", str(missing), "--target", "dry-run"])
    assert replay.exit_code == 2 and f"no tables in the warehouse {missing}" in replay.stderr


def test_report_json_carries_arrivals_and_advice(spark, warehouse):
    path, _, _, _ = warehouse
    result = CliRunner().invoke(cli, ["report", "--warehouse", str(path), "--json", "--rules", STARTER])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert {"arrivals", "advice", "run_info", "rules", "pending", "overall", "run"} <= set(doc)
    assert all({"code", "severity", "title", "action", "evidence"} == set(a) for a in doc["advice"])
    assert sum(1 for s in doc["arrivals"]["series"] if s["burst"]) >= 5
