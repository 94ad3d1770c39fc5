"""The triage API the notebook calls, on a small warehouse, against pure-Python answers."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import pytest

from dlq_pipeline import open_warehouse
from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import RunSettings
from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.mq.dlh_decoder import decode_dlh
from dlq_pipeline.pipeline import run_pipeline
from dlq_pipeline.rules.matcher import decide
from dlq_pipeline.rules.parser import load_rules, parse_rules
from dlq_pipeline.rules.view import match_view
from dlq_pipeline.tables.identity import data_digest, message_key
from dlq_pipeline.triage import spark as triage
from dlq_pipeline.triage.charts import body_preview
from tests.support import REPO

pytestmark = pytest.mark.spark
STARTER = REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules"
NOW = dt.datetime(2026, 3, 1, 12, 0, 0)
DRAFT_TOP = "REASON(MQRC_Q_FULL) ACTION(FWD) FWDQ(HOLD.QFULL) HEADER(YES)\n"


@pytest.fixture(scope="module")
def warehouse(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("triage")
    [dump] = write_generated(root / "dumps", 120, seed=5, files=1, max_size=4096)
    config = load_config(overrides={"storage": {"path": str(root / "wh")}})
    run_pipeline(
        spark, RunSettings.from_config(config), load_rules(str(STARTER)), inputs=[str(dump)], target="dry-run", now=NOW
    )
    messages = [m for m in read_dump(dump)]
    return root / "wh", messages


@pytest.fixture(scope="module")
def tables(spark, warehouse):
    return triage.load(open_warehouse(spark, str(warehouse[0])))


def headers(messages):
    return [(m, decode_dlh(m.data, m.md.encoding, m.md.ccsid, m.md.format)) for m in messages]


def test_overview_and_counts_match_the_decoded_dump(tables, warehouse):
    messages = warehouse[1]
    decoded = headers(messages)
    with_dlh = [h.dlh for _, h in decoded if h.has_dlh]
    assert triage.overview(tables) == {
        "messages": 120,
        "pending": 120,
        "without_dlh": 120 - len(with_dlh),
        "truncated": 0,
        "quarantined": 0,
        "runs": 1,
    }
    reasons = Counter(d.reason for d in with_dlh)
    got = triage.by_reason(tables, top=100)
    assert sorted(zip(got["reason"], got["count"])) == sorted(reasons.items())
    assert list(got["count"]) == sorted(got["count"], reverse=True)
    dests = Counter((d.dest_qmgr.rstrip(" \0"), d.dest_q.rstrip(" \0")) for d in with_dlh)
    got = triage.by_destination(tables, top=100)
    assert sorted(zip(got["dest_qmgr"], got["dest_q"], got["count"])) == sorted((*k, v) for k, v in dests.items())
    ages = triage.by_age(tables, NOW)
    assert list(ages["age"]) == ["< 1 hour", "1-24 hours", "1-7 days", "> 7 days"] and ages["count"].sum() == 120
    offenders = triage.top_offenders(tables, top=100)
    assert offenders["count"].sum() == len(with_dlh)
    decisions, outcomes = triage.trend(tables)
    assert decisions["count"].sum() == 120 and set(outcomes["outcome"]) <= {"dry_run", "ignored", "discarded"}


def test_sample_previews_bodies_and_redacts(tables, warehouse):
    by_key = {message_key(m.md, data_digest(m.data)): (m, h) for m, h in headers(warehouse[1])}
    shown = triage.sample(tables, n=8, preview_chars=40)
    redacted = triage.sample(tables, n=8, redact=True)
    assert list(shown["message_key"]) == list(redacted["message_key"]) and len(shown) == 8
    for key, preview, secret in zip(shown["message_key"], shown["preview"], redacted["preview"]):
        m, h = by_key[key]
        ccsid = h.dlh.ccsid if h.has_dlh else m.md.ccsid
        assert preview == body_preview(m.data, ccsid, has_dlh=h.has_dlh, limit=40)
        assert secret == f"<redacted: {len(m.data) - (172 if h.has_dlh else 0)} bytes>"


def test_what_if_finds_exactly_the_messages_a_draft_changes(tables, warehouse):
    starter = load_rules(str(STARTER))
    text = STARTER.read_text()
    head, _, rest = text.partition("\nREASON(MQRC_Q_FULL)")
    draft = parse_rules(head + "\n" + DRAFT_TOP + "REASON(MQRC_Q_FULL)" + rest, "draft.rules")
    assert draft.ok

    same = triage.what_if(tables, starter)
    assert (same.evaluated, same.changed) == (120, 0)
    assert all(same.transitions["current_action"] == same.transitions["draft_action"])

    expected = set()
    for m in warehouse[1]:
        view = match_view(m.md, m.data, truncated=m.truncated)
        a, b = decide(starter, view), decide(draft, view)
        if (a.action, a.target_q, a.target_qmgr, a.header, a.ignore_reason) != (
            b.action,
            b.target_q,
            b.target_qmgr,
            b.header,
            b.ignore_reason,
        ):
            expected.add(message_key(m.md, data_digest(m.data)))
    assert expected  # the seed has queue-full messages
    result = triage.what_if(tables, draft, limit=1000)
    assert result.changed == len(expected) and set(result.changes["message_key"]) == expected
    assert set(result.changes["draft_target_q"]) == {"HOLD.QFULL"}
    against_table = triage.what_if(tables, draft, current=starter, limit=1000)
    assert set(against_table.changes["message_key"]) == expected


def test_a_draft_from_the_warehouse_is_the_draft_from_its_dumps(tables, warehouse):
    from dlq_pipeline.dumps.plan import source_queue
    from dlq_pipeline.rules.suggest import Effect, seen_groups, suggest
    from dlq_pipeline.tables import stored_md

    dump = warehouse[0].parent / "dumps" / "dlq-0000.dmp"
    views = [match_view(stored_md(m.md), m.data, truncated=m.truncated) for m in warehouse[1]]
    qmgr, queue = source_queue(str(dump), "dmpmqmsg")
    expected = suggest(seen_groups(views), inputq=queue, inputqm=qmgr)
    got = triage.suggest_rules(tables)
    assert got.text == expected.text and got.table.diagnostics == []

    starter = load_rules(str(STARTER))
    effect = triage.draft_effect(tables, got.table, starter)
    python = Effect(expected.table, starter)
    for view in views:
        python.add(decide(expected.table, view), decide(starter, view))
    assert (effect.messages, effect.actions, effect.chosen, effect.implicit, effect.transitions, effect.unchanged) == (
        python.messages,
        python.actions,
        python.chosen,
        python.implicit,
        python.transitions,
        python.unchanged,
    )
    assert all(len(shown) >= 1 for shown in effect.examples.values())


def test_rules_suggest_reads_a_warehouse_end_to_end(warehouse):
    from click.testing import CliRunner

    from dlq_pipeline.cli import cli

    result = CliRunner().invoke(cli, ["rules", "suggest", "--warehouse", str(warehouse[0]), "--against", str(STARTER)])
    assert result.exit_code == 0, result.output
    comments = " ".join(line.removeprefix("*").strip() for line in result.stdout.splitlines())
    assert f"from 120 messages in {warehouse[0]}/messages" in comments
    assert "* Against " in result.stdout and parse_rules(result.stdout).diagnostics == []
