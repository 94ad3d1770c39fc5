"""`dlq-pipeline rules suggest`: a drafted table that `rules check` accepts, that takes every
message with a dead-letter header, with its evidence, deterministic; its effect and --against."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from dlq_pipeline.cli import cli
from dlq_pipeline.dumps.generator import generate_messages, write_generated
from dlq_pipeline.dumps.records import RecordError
from dlq_pipeline.dumps.sources import expand_paths, read_source
from dlq_pipeline.mq.constants import MQRC
from dlq_pipeline.rules.matcher import decide
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.rules.suggest import HOLD_QUEUES, Seen, SuggestOptions, seen_groups, suggest
from dlq_pipeline.rules.view import match_view
from dlq_pipeline.tables import stored_md
from tests.profiles import examples
from tests.support import REPO

FIXTURES = REPO / "tests" / "fixtures"
STARTER = REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules"
Q_FULL = MQRC["MQRC_Q_FULL"]
UNKNOWN_OBJECT = MQRC["MQRC_UNKNOWN_OBJECT_NAME"]


def views_of(messages):
    return [match_view(stored_md(m.md), bytes(m.data), truncated=m.truncated) for m in messages]


def file_views(*inputs: str):
    return [
        match_view(stored_md(r.md), bytes(r.data), truncated=r.truncated)
        for path in expand_paths(list(inputs))
        for r in read_source(path, name=path)
        if not isinstance(r, RecordError)
    ]


def run(*args: str):
    return CliRunner().invoke(cli, ["rules", *args])


@pytest.fixture(scope="module")
def demo_dumps(tmp_path_factory) -> Path:
    """The demo's DLQ (its seed and message mix), smaller."""
    out = tmp_path_factory.mktemp("suggest") / "dumps"
    write_generated(out, 3000, 42, files=2, max_size=16384)
    return out


def test_the_demo_draft_is_checked_clean_ends_with_a_catch_all_and_takes_every_dead_letter(demo_dumps, tmp_path):
    draft = tmp_path / "draft.rules"
    result = run("suggest", "--input", str(demo_dumps), "--out", str(draft))
    assert result.exit_code == 0, result.output
    checked = run("check", "--strict", "--json", str(draft))
    assert checked.exit_code == 0 and json.loads(checked.stdout)["warnings"] == []
    table = parse_rules(draft.read_text(), str(draft))
    last = table.rules[-1]
    assert (last.patterns, last.action, last.fwdq, last.header) == ({}, "FWD", "DLQ.UNMATCHED", True)
    assert {r.action for r in table.rules} <= {"RETRY", "FWD"}  # the draft never discards or ignores
    tested = run("test", str(draft), "--input", str(demo_dumps), "--json")
    decisions = [json.loads(line) for line in tested.stdout.splitlines()]
    assert len(decisions) == 3000
    left = {d["ignore_reason"] for d in decisions if d["action"] == "IGNORE"}
    assert left == {"no_dlh"}  # only what no rule can act on
    text = draft.read_text()
    assert all(len(line) <= 72 for line in text.splitlines())
    assert table.control.inputqm == "QMHUB01" and table.control.inputq == "SYSTEM.DEAD.LETTER.QUEUE"  # the dump header
    # every rule's comment block gives its evidence
    blocks = text.split("\n\n")[2:]
    assert len(blocks) == len(table.rules)
    assert all(" takes " in b and ("from " in b or "none of these" in b) for b in blocks)
    # the report's findings on the demo's arrivals, each cited by the rule that follows it
    cited = [line.split()[2].rstrip(":") for line in text.splitlines() if line.startswith("*") and " Advice " in line]
    assert cited == ["queue_full", "unknown_destination_burst", "no_catch_all"]


def test_the_evidence_counts_are_what_rules_test_counts(demo_dumps):
    views = file_views(str(demo_dumps))
    draft = suggest(seen_groups(views))
    chosen = {}
    for view in views:
        index = decide(draft.table, view).rule_index
        chosen[index] = chosen.get(index, 0) + 1
    for rule in draft.table.rules:
        assert f"takes {chosen.get(rule.index, 0):,} messages" in _block_of(draft.text, rule.line)


def _block_of(text: str, line: int) -> str:
    lines = text.splitlines()
    start = line - 1
    while start > 0 and lines[start - 1].startswith("*"):
        start -= 1
    return " ".join(lines[start:line]).replace("*", " ")


def test_the_same_messages_in_any_order_give_the_same_table(demo_dumps):
    views = file_views(str(demo_dumps))
    first = suggest(seen_groups(views)).text
    random.Random(7).shuffle(views)
    assert suggest(seen_groups(views)).text == first


def test_against_the_starter_table_shows_what_changes_with_examples(demo_dumps):
    result = run("suggest", "--input", str(demo_dumps), "--against", str(STARTER))
    assert result.exit_code == 0, result.output
    effect = result.stdout.split("* Effect on the ", 1)[1]
    assert effect.startswith("3,000 messages (no prior attempts):")
    against = effect.split("* Against ", 1)[1]
    head, *rows = against.splitlines()
    unchanged, changes = (int(part.split()[0].replace(",", "")) for part in head.split(": ", 1)[1].split(", "))
    assert unchanged + changes == 3000 and changes > 0
    assert any("FWD DEADQ.MANUAL.ADDRESS -> FWD DLQ.HOLD.ADDRESS" in row for row in rows)
    assert any("FWD &REPLYQ -> " in row for row in rows)  # a substitution shown as written, not per queue
    assert any("e.g. " in row for row in rows)
    # the whole output, effect included, is still a rules table
    assert parse_rules(result.stdout).diagnostics == []


def test_explain_counts_per_rule_add_up(demo_dumps):
    result = run("suggest", "--input", str(demo_dumps), "--explain")
    table = parse_rules(result.stdout)
    rows = result.stdout.split("*   rule  line action   messages\n", 1)[1].splitlines()[: len(table.rules)]
    counted = [int(row.split()[-1].replace(",", "")) for row in rows]
    assert [int(row.split()[2]) for row in rows] == [r.line for r in table.rules]
    no_dlh = int(result.stdout.split("implicit IGNORE): no_dlh ", 1)[1].split()[0].replace(",", ""))
    assert sum(counted) + no_dlh == 3000


def test_a_queue_full_storm_gets_its_own_rule_and_a_longer_interval():
    start = dt.datetime(2026, 11, 2, 0)
    quiet = [
        Seen(True, False, UNKNOWN_OBJECT, "NOWHERE", "QM2", "QMA", "app", start + dt.timedelta(hours=h), 2)
        for h in range(48)
    ]
    storm = [
        Seen(True, False, Q_FULL, "ORDERS.IN", "ORDQM01", "QMA", "orders", start + dt.timedelta(hours=10 + h), 300)
        for h in range(6)
    ]
    draft = suggest(
        [*quiet, *storm], SuggestOptions(hold_prefix="HOLD"), inputq="SYSTEM.DEAD.LETTER.QUEUE", inputqm="HUB"
    )
    assert draft.table.diagnostics == []
    control = draft.table.control
    assert (control.inputq, control.inputqm, control.retryint, control.wait) == (
        "SYSTEM.DEAD.LETTER.QUEUE",
        "HUB",
        1800,
        "NO",
    )
    storm_rule, reason_rule, hold, catch_all = draft.table.rules
    assert storm_rule.patterns == {"DESTQ": "ORDERS.IN", "DESTQM": "ORDQM01", "REASON": Q_FULL}
    assert (storm_rule.action, storm_rule.retry) == ("RETRY", 24)  # twice the 6 hours at 30 minutes
    assert (reason_rule.patterns, reason_rule.retry) == ({"REASON": Q_FULL}, 12)
    assert (hold.patterns, hold.fwdq) == ({"REASON": UNKNOWN_OBJECT}, "HOLD.ADDRESS")
    assert catch_all.patterns == {}
    assert "Advice queue_full: Find why ORDERS.IN stopped draining" in " ".join(draft.text.split())
    assert "takes 1,800 messages (94.9%) from QMA (1,800)" in " ".join(draft.text.split())


def test_a_rare_reason_goes_to_the_catch_all_named_in_its_evidence():
    seen = [
        Seen(True, False, UNKNOWN_OBJECT, "NOWHERE", "QM2", "QMA", "app", None, 3),
        Seen(True, False, 999, "X", "QM2", "QMA", "app", None, 1),
    ]
    draft = suggest(seen, SuggestOptions(min_messages=5))
    assert [r.patterns for r in draft.table.rules] == [{}]
    assert "Reasons: MQRC_UNKNOWN_OBJECT_NAME (3), reason 999 (1)." in " ".join(draft.text.split())
    held = suggest(seen, SuggestOptions(min_messages=3)).table.rules
    assert [r.patterns for r in held] == [{"REASON": UNKNOWN_OBJECT}, {}]


def test_an_empty_dlq_still_gets_a_catch_all():
    draft = suggest([])
    assert draft.table.diagnostics == [] and [r.action for r in draft.table.rules] == ["FWD"]
    assert "takes none of these messages" in draft.text


@pytest.mark.parametrize(
    "args, says",
    [
        (("--catch-all", "NOT A QUEUE"), "--catch-all 'NOT A QUEUE' is not an MQ queue name"),
        (("--hold-prefix", "H" * 45), "--hold-prefix"),
        (("--min-messages", "0"), "--min-messages"),
    ],
)
def test_a_bad_option_is_exit_2_before_anything_is_read(args, says, tmp_path):
    result = run("suggest", "--input", str(tmp_path / "missing.dmp"), *args)
    assert result.exit_code == 2 and says in result.output


def test_a_bad_record_is_reported_once_and_the_rest_drafted(demo_dumps, tmp_path):
    broken = tmp_path / "broken.dmp"
    lines = (demo_dumps / "dlq-0000.dmp").read_text(errors="replace").splitlines(keepends=True)
    bad = next(i for i, line in enumerate(lines) if line.startswith("X ") and i > 40)
    broken.write_text("".join(lines[:bad] + ["X 414\n"] + lines[bad + 1 :]))
    result = run("suggest", "--input", str(broken), "--explain")
    assert result.exit_code == 3
    assert result.stderr.count(str(broken)) == 1
    assert parse_rules(result.stdout).diagnostics == []


@pytest.mark.parametrize(
    "fixture",
    sorted(p.name for p in FIXTURES.iterdir() if p.suffix in (".dmp", ".txt")) + ["real/mq10-dmpmqmsg-stdout.dmp"],
)
def test_the_real_fixtures_get_a_clean_draft(fixture):
    result = run("suggest", "--input", str(FIXTURES / fixture))
    assert result.exit_code in (0, 3), result.output
    assert parse_rules(result.stdout).diagnostics == []


def test_a_dump_header_names_the_control_line():
    result = run("suggest", "--input", str(FIXTURES / "real" / "mq10-dmpmqmsg-stdout.dmp"))
    assert "INPUTQM(QM1) INPUTQ(APP.DLQ)" in result.stdout


@settings(max_examples=examples(25), deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(0, 300),
    mix=st.fixed_dictionaries(
        {},
        optional={
            "zos": st.sampled_from([0.0, 1.0, 5.0]),
            "no_dlh": st.sampled_from([0.0, 1.0, 5.0]),
            "xmit": st.sampled_from([0.0, 1.0]),
        },
    ),
    min_messages=st.integers(1, 50),
)
def test_every_generated_dlq_gets_a_clean_draft_taking_every_dead_letter(seed, count, mix, min_messages):
    views = views_of(generate_messages(count, seed, mix or None, max_size=4096))
    draft = suggest(seen_groups(views), SuggestOptions(min_messages=min_messages))
    assert draft.table.diagnostics == []
    assert draft.table.rules[-1].patterns == {} and draft.table.rules[-1].action == "FWD"
    assert all(r.patterns for r in draft.table.rules[:-1])  # the catch-all is last, and only last
    for view in views:
        decision = decide(draft.table, view)
        if view["has_dlh"] and not view["truncated"]:
            assert decision.rule_index is not None
    held = {r.patterns.get("REASON") for r in draft.table.rules if r.action == "FWD" and r.patterns}
    assert held <= set(HOLD_QUEUES)
