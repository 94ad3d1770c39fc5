"""The reference matcher: matching and choosing a rule (docs/rules-semantics.md, sections 2-3) in
plain Python.

This is the oracle. The rules in Spark (`rules.spark.classify_columns`, the rule chosen by
`rules.index.RuleIndex`) must agree with it row for row; the ``rules test`` command uses it
directly. Keep it obviously correct before fast.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from dlq_pipeline.rules.model import PATTERN_FIELDS, Decision, Rule, RulesTable

BLANK = " "  # only 0x20 pads MQ character fields; NUL and tabs are ordinary characters


def glob_match(pattern: str, value: str) -> bool:
    """Match a rules-table pattern against a blank-padded MQ character field.

    The field is modelled as its value with trailing blanks removed, followed by an
    endless run of padding blanks. ``?`` takes one character of the value (never padding),
    ``*`` takes any run, a literal blank takes a blank or padding, any other literal only
    itself; when the pattern is used up the rest must be padding. The state set makes this
    O(len(pattern) * len(value)) with no backtracking.
    """
    text = value.rstrip(BLANK)
    end = len(text)  # the state "inside the padding"
    states = {0}
    for p in pattern.rstrip(BLANK):
        following: set[int] = set()
        if p == "*":
            lowest = min(states, default=end + 1)
            following = set(range(lowest, end + 1))
        else:
            for j in states:
                if j < end:
                    if p == "?" or p == text[j]:
                        following.add(j + 1)
                elif p == BLANK:
                    following.add(end)
        states = following
        if not states:
            return False
    return end in states


# A match view (`rules.view.match_view`, or a Spark row): column -> value, of the column's type
MatchView = Mapping[str, Any]


def _text(view: MatchView, column: str) -> str:
    """A missing character field reads as blank (Spark nulls get the same treatment)."""
    value: str | None = view.get(column)
    return "" if value is None else value


def rule_matches(rule: Rule, view: MatchView) -> bool:
    """Every tested pattern matches: ints by equality, strings by ``glob_match``."""
    for keyword, wanted in rule.tested_patterns().items():
        column, kind, _ = PATTERN_FIELDS[keyword]
        if kind == "int":
            if view.get(column) != wanted:
                return False
        elif not glob_match(cast(str, wanted), _text(view, column)):  # a "str" keyword's pattern is a string
            return False
    return True


def resolve_name(name: str | None) -> str:
    """An object name as MQ reads it: the first NUL ends it, trailing blanks do not count.

    Leading and embedded blanks stay; MQ rejects such a name and the attempt fails.
    """
    if name is None:
        return ""
    return name.split("\x00", 1)[0].rstrip(BLANK)


# "&" tokens -> the match-view column they take the name from
SUBSTITUTION_COLUMNS = {
    "&DESTQ": "dlh_dest_q",
    "&DESTQM": "dlh_dest_qmgr",
    "&REPLYQ": "reply_to_q",
    "&REPLYQM": "reply_to_qmgr",
}


def _name(spec: str | None, view: MatchView) -> str:
    """A FWDQ/FWDQM value: an ``&`` token taken from the message, else the name written."""
    if spec is not None and spec.upper() in SUBSTITUTION_COLUMNS:
        return resolve_name(_text(view, SUBSTITUTION_COLUMNS[spec.upper()]))
    return resolve_name(spec)


def chosen(rule: Rule, view: MatchView) -> Decision:
    """The decision a rule makes for a message once it is chosen."""
    if rule.action == "IGNORE":
        return Decision("IGNORE", rule.line, rule.index)
    if rule.action == "DISCARD":
        return Decision("DISCARD", rule.line, rule.index)
    if rule.action == "RETRY":
        target_q = resolve_name(_text(view, "dlh_dest_q"))
        target_qmgr = resolve_name(_text(view, "dlh_dest_qmgr"))
        return Decision("RETRY", rule.line, rule.index, target_q, target_qmgr, None, rule.putaut)
    if rule.action == "FWD":
        target_q, target_qmgr = _name(rule.fwdq, view), _name(rule.fwdqm, view)
        return Decision("FWD", rule.line, rule.index, target_q, target_qmgr, rule.header, rule.putaut)
    raise ValueError(f"unknown action {rule.action!r} in rule at line {rule.line}")


def decide(table: RulesTable, view: MatchView, attempts: int = 0) -> Decision:
    """Choosing a rule (docs/rules-semantics.md, section 3): the first matching IGNORE, or the
    first matching rule at which the running total of RETRY over matching rules exceeds the
    attempts already made."""
    if not view.get("has_dlh"):
        return Decision("IGNORE", ignore_reason="no_dlh")
    if view.get("truncated"):
        return Decision("IGNORE", ignore_reason="truncated")
    total = 0
    matched = False
    for rule in table.rules:
        if not rule_matches(rule, view):
            continue
        matched = True
        if rule.action == "IGNORE":
            return chosen(rule, view)
        total += rule.retry
        if total > attempts:
            return chosen(rule, view)
    return Decision("IGNORE", ignore_reason="retries_exhausted" if matched else "no_match")
