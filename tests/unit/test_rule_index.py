"""The per-distinct-value rules index decides exactly as the reference matcher (`decide`)."""

from __future__ import annotations

import random

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq_pipeline.rules.index import EXHAUSTED, NO_MATCH, RuleIndex
from dlq_pipeline.rules.matcher import decide
from dlq_pipeline.rules.model import PATTERN_FIELDS, Rule, RulesTable
from tests.profiles import examples

CHARS = "AAB  .\x00é*?"  # blanks, NULs, a national letter; * and ? are literal in values
INTS = [0, 1, 2, 2053, -1]


def random_pattern(rnd: random.Random, kind: str):
    if kind == "int":
        return rnd.choice(INTS)
    text = "".join(rnd.choice("AAB .\x00é" + "**??") for _ in range(rnd.randint(0, 5)))
    return text if text.strip(" ") else rnd.choice([" ", "?*", "A*", "AB", "*"])


def random_table(rnd: random.Random) -> RulesTable:
    rules = []
    for i in range(rnd.randint(0, 12)):
        keywords = rnd.sample(sorted(PATTERN_FIELDS), rnd.choice([0, 1, 1, 2, 3]))
        patterns = {k: random_pattern(rnd, PATTERN_FIELDS[k][1]) for k in keywords}
        action = rnd.choice(["DISCARD", "IGNORE", "RETRY", "RETRY", "FWD"])
        rules.append(
            Rule(
                line=i + 1,
                index=i,
                patterns=patterns,
                action=action,
                retry=rnd.choice([1, 1, 2, 3]),
                fwdq="Q" if action == "FWD" else None,
            )
        )
    return RulesTable("random.rules", rules=tuple(rules))


def random_view(rnd: random.Random) -> dict:
    view = {"has_dlh": rnd.random() < 0.9, "truncated": rnd.random() < 0.05}
    for column, kind, _ in PATTERN_FIELDS.values():
        if rnd.random() < 0.05:
            view[column] = None
        elif kind == "int":
            view[column] = rnd.choice(INTS + [7])
        else:  # few distinct values, as in a DLQ
            view[column] = rnd.choice(["", "A", "AB", "A B", "AB  ", "AB\x00", "é.A", "BA", "A*", "?"])
    return view


def expected_code(table: RulesTable, view: dict, attempts: int) -> int:
    decision = decide(table, view, attempts)
    if decision.rule_index is not None:
        return decision.rule_index
    return EXHAUSTED if decision.ignore_reason == "retries_exhausted" else NO_MATCH


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_choices_equal_the_reference_matcher(seed, arrow):
    """Random tables (wildcards, blanks, NULs, RETRY chains, IGNORE) over messages whose
    values repeat: every message's choice is `decide`'s, one at a time and in a batch, from
    Python lists or Arrow arrays."""
    rnd = random.Random(seed)
    table = random_table(rnd)
    views = [random_view(rnd) for _ in range(60)]
    attempts = [rnd.choice([0, 0, 1, 2, 3, 5, None]) for _ in views]
    index = RuleIndex(table)
    want = [expected_code(table, v, a or 0) for v, a in zip(views, attempts)]
    assert [index.decide_one(v, a or 0) for v, a in zip(views, attempts)] == want
    columns = {c: [v[c] for v in views] for c in index.columns}
    eligible = [v["has_dlh"] and not v["truncated"] for v in views]
    if arrow:
        kinds = {c: pa.int32() if k == "int" else pa.string() for c, k, _ in PATTERN_FIELDS.values()}
        columns = {c: pa.array(values, kinds[c]) for c, values in columns.items()}
        eligible, attempts = pa.array(eligible), pa.array(attempts, pa.int32())
    assert RuleIndex(table).choices(columns, eligible, attempts).tolist() == want


def test_cumulative_retry_and_first_ignore():
    table = RulesTable(
        "t",
        rules=(
            Rule(5, 0, {"REASON": 2053}, "RETRY", retry=3),
            Rule(7, 1, {}, "FWD", retry=1, fwdq="B"),
            Rule(9, 2, {"DESTQ": "X*"}, "IGNORE"),
        ),
    )
    index = RuleIndex(table)
    view = {"has_dlh": True, "truncated": False, "dlh_reason": 2053, "dlh_dest_q": "XQ"}
    assert [index.decide_one(view, a) for a in range(7)] == [0, 0, 0, 1, 2, 2, 2]
    assert index.decide_one(view | {"dlh_dest_q": "Y"}, 4) == EXHAUSTED
    assert index.decide_one(view | {"has_dlh": False}) == NO_MATCH
    assert RuleIndex(RulesTable("empty")).decide_one(view) == NO_MATCH


def test_caches_start_afresh_at_their_limit(monkeypatch):
    """Values unique to each message do not grow the index without bound, and decisions
    stay exact across a clear."""
    import dlq_pipeline.rules.index as module

    monkeypatch.setattr(module, "CACHE_LIMIT", 4)
    table = RulesTable("t", rules=(Rule(1, 0, {"APPLIDAT": "ID1*"}, "DISCARD"), Rule(2, 1, {}, "IGNORE")))
    index = RuleIndex(table)
    views = [{"has_dlh": True, "truncated": False, "appl_identity_data": f"ID{k}"} for k in range(20)]
    assert [index.decide_one(v) for v in views] == [expected_code(table, v, 0) for v in views]
    assert len(index.columns["appl_identity_data"].cache) <= 4
