"""`rules test`: what a table would decide for messages read from dumps, without Spark.

Pure functions over ``DumpedMessage`` records; the command (``cli/rules_test.py``) does the
reading and printing. Each message is seen as the pipeline sees it after ingest (MQMD
character fields as the ``messages`` table stores them, the size limit of ingest) and
decided by the reference matcher, which the rules in Spark (`rules.spark`) are proven equal
to (tests/spark/test_rules_in_spark.py).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dlq_pipeline.dumps.describe import printable
from dlq_pipeline.dumps.records import DumpedMessage
from dlq_pipeline.rules.matcher import decide, rule_matches
from dlq_pipeline.rules.model import ACTIONS, DECISION_COLUMNS, PUT_ACTIONS, Decision, Rule, RulesTable
from dlq_pipeline.rules.printer import format_rule
from dlq_pipeline.rules.view import match_view
from dlq_pipeline.tables import IGNORE_REASONS, stored_md

# The keys of a `rules test --json` object, in order.
OUTPUT_KEYS = ("file", "index", *(c for c in DECISION_COLUMNS if c != "rule_index"))
# the actions in the order the summary shows them: those that put first
SHOWN_ACTIONS = (*PUT_ACTIONS, *(a for a in ACTIONS if a not in PUT_ACTIONS))
IMPLICIT_REASONS = IGNORE_REASONS


@dataclass(frozen=True)
class Outcome:
    """The decision for one message, where it came from, and which rules matched it
    (indexes; empty when the message is not eligible for matching)."""

    file: str
    index: int
    decision: Decision
    matched: tuple[int, ...] = ()

    def as_dict(self) -> dict[str, int | str | bool | None]:
        d = self.decision
        return {
            "file": self.file,
            "index": self.index,
            "action": d.action,
            "rule_line": d.rule_line,
            "target_q": d.target_q,
            "target_qmgr": d.target_qmgr,
            "header": d.header,
            "putaut": d.putaut,
            "ignore_reason": d.ignore_reason,
        }


def message_view(msg: DumpedMessage) -> dict[str, Any]:
    """What the rules match ``msg`` on, from its MQMD as a run lands it and its data."""
    return match_view(stored_md(msg.md), bytes(msg.data), truncated=msg.truncated)


def decide_message(table: RulesTable, msg: DumpedMessage, file: str, attempts: int = 0) -> Outcome:
    """What ``table`` decides for ``msg`` after ``attempts`` prior attempts, as a run would
    (a message over the size limit is `dlq_pipeline.dumps.sources.read_source`'s error)."""
    view = message_view(msg)
    decision = decide(table, view, attempts)
    eligible = view.get("has_dlh") and not view.get("truncated")
    matched = tuple(r.index for r in table.rules if rule_matches(r, view)) if eligible else ()
    return Outcome(file, msg.index, decision, matched)


@dataclass
class Tally:
    """Counts over the outcomes, kept as they stream past (nothing per message)."""

    table: RulesTable
    messages: int = 0
    bad_records: int = 0
    actions: Counter[str] = field(default_factory=Counter)
    implicit: Counter[str | None] = field(default_factory=Counter)  # ignore reason -> messages
    chosen: Counter[int] = field(default_factory=Counter)  # rule index -> messages it decided
    matched: Counter[int] = field(default_factory=Counter)  # rule index -> messages it matched

    def add(self, outcome: Outcome) -> None:
        self.messages += 1
        d = outcome.decision
        self.actions[d.action] += 1
        if d.rule_index is None:
            self.implicit[d.ignore_reason] += 1
        else:
            self.chosen[d.rule_index] += 1
        self.matched.update(outcome.matched)

    def unmatched_rules(self) -> list[Rule]:
        return [r for r in self.table.rules if not self.matched[r.index]]


def display_path(path: str, cwd: str | None = None) -> str:
    """A path for people: relative to the working directory when it is below it."""
    cwd = cwd or os.getcwd()
    try:
        rel = os.path.relpath(path, cwd)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _target(d: Decision) -> str:
    qmgr = f" at {d.target_qmgr}" if d.target_qmgr else " (local resolution)"
    queue = d.target_q if d.target_q else "'' (blank: the put will fail)"
    extras = []
    if d.action == "FWD":
        extras.append(f"HEADER({'YES' if d.header else 'NO'})")
    if d.putaut == "CTX":
        extras.append("PUTAUT(CTX)")
    return f"{queue}{qmgr}" + (f"  {' '.join(extras)}" if extras else "")


def text_header(width: int) -> str:
    """The heading of the text table; ``width`` is the FILE column's (see ``file_width``)."""
    return f"{'FILE':<{width}} {'INDEX':>6}  {'ACTION':<7} {'RULE':>5}  TARGET / REASON"


def file_width(paths: Iterable[str], cwd: str | None = None) -> int:
    """The FILE column's width for these input files (known before anything is read)."""
    return max([len("FILE"), *(len(display_path(p, cwd)) for p in paths)])


def format_outcome(outcome: Outcome, width: int = 32, cwd: str | None = None) -> str:
    """One row of the text table, terminal-safe (``inspect.printable``)."""
    d = outcome.decision
    rule = str(d.rule_line) if d.rule_line is not None else "-"
    if d.action in ("RETRY", "FWD"):
        detail = _target(d)
    elif d.rule_line is None:
        detail = f"left on the DLQ: {d.ignore_reason}"
    else:
        detail = ""
    row = f"{display_path(outcome.file, cwd):<{width}} {outcome.index:>6}  {d.action:<7} {rule:>5}  {detail}"
    return printable(row.rstrip())  # targets may come from message fields (&REPLYQ)


def format_tally(tally: Tally, attempts: int) -> str:
    """Counts per action, per rule (chosen and matched), implicit IGNOREs, and the rules
    that matched no message."""
    lines = [
        f"{tally.messages} messages, {attempts} prior attempts each: "
        + ", ".join(f"{a} {tally.actions[a]}" for a in SHOWN_ACTIONS)
        + (f"; {tally.bad_records} bad record{'' if tally.bad_records == 1 else 's'}" if tally.bad_records else "")
    ]
    lines += [
        "",
        "per rule (chosen: messages it decided; matched: messages its pattern matched)",
        f"  {'rule':>4} {'line':>5} {'action':<7} {'chosen':>7} {'matched':>8}",
    ]
    for r in tally.table.rules:
        lines.append(
            f"  {r.index + 1:>4} {r.line:>5} {r.action:<7} {tally.chosen[r.index]:>7} {tally.matched[r.index]:>8}"
        )
    implicit = [f"{reason} {tally.implicit[reason]}" for reason in IMPLICIT_REASONS if tally.implicit[reason]]
    lines += ["", "left on the DLQ by no rule (implicit IGNORE): " + (", ".join(implicit) or "none")]
    unmatched = tally.unmatched_rules()
    lines += ["", "rules that matched nothing:" + ("" if unmatched else " none")]
    lines += [f"  line {r.line}: {format_rule(r)}" for r in unmatched]
    return "\n".join(lines)
