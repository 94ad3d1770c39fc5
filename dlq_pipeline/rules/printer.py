"""The rules table printed back (`rules.parser` reads it): the canonical text ``rules show``
prints, which reads back to the same table, its JSON form, and the listing a report shows
beside its counts.
"""

from __future__ import annotations

import re
import string
from typing import cast

from dlq_pipeline.mq import constants
from dlq_pipeline.rules.lexer import BLANKS, MAX_LINE
from dlq_pipeline.rules.model import PATTERN_FIELDS, WILDCARD_ALL, ControlData, Diagnostic, Rule, RulesTable
from dlq_pipeline.rules.parser import SYMBOL_FAMILIES

# Characters a value may be printed with, unquoted, and read back unchanged.
_BARE = frozenset(string.ascii_uppercase + string.digits + "._/%*?&")


def format_value(value: str) -> str:
    """A string value written so that it reads back unchanged: bare when folding cannot
    change it, else quoted with ``''`` for a quote."""
    if value and all(char in _BARE for char in value):
        return value
    return "'" + value.replace("'", "''") + "'"


def _format_number(keyword: str, value: int | str) -> str:
    """Numbers as decimal; a negative value can only be written by its name."""
    if value == WILDCARD_ALL or (isinstance(value, int) and value >= 0):
        return str(value)
    for family in SYMBOL_FAMILIES[keyword]:
        name = constants.name_of(family, value)
        if name:
            return name
    return str(value)


def _rule_items(rule: Rule) -> list[str]:
    items = []
    for keyword, (_, kind, _) in PATTERN_FIELDS.items():
        if keyword in rule.patterns:
            value = rule.patterns[keyword]
            text = _format_number(keyword, value) if kind == "int" else format_value(cast(str, value))
            items.append(f"{keyword}({text})")
    items.append(f"ACTION({rule.action})")
    if rule.action == "FWD":
        items.append(f"FWDQ({format_value(cast(str, rule.fwdq))})")  # the parser requires FWDQ with FWD
        if rule.fwdqm is not None:
            items.append(f"FWDQM({format_value(rule.fwdqm)})")
        items.append(f"HEADER({'YES' if rule.header else 'NO'})")
    if rule.putaut != "DEF":
        items.append(f"PUTAUT({rule.putaut})")
    if rule.retry != 1:
        items.append(f"RETRY({rule.retry})")
    return items


def format_rule(rule: Rule) -> str:
    """One rule in canonical syntax on a single line (no continuation), for messages."""
    return " ".join(_rule_items(rule))


def _control_items(control: ControlData) -> list[str]:
    return [
        f"INPUTQ({format_value(control.inputq or ' ')})",
        f"INPUTQM({format_value(control.inputqm or ' ')})",
        f"RETRYINT({control.retryint})",
        f"WAIT({control.wait})",
    ]


def wrap_entry(items: list[str], width: int = MAX_LINE) -> list[str]:
    """Lay items out on lines of at most ``width`` characters, continuing with ``+``.

    An item too long for a line is cut inside, before a non-blank character (``+``
    continues from the next line's first non-blank), so it reads back unchanged.
    """
    indent = "  "
    lines: list[str] = []
    current = ""
    for item in items:  # every line keeps room for a trailing " +"
        joined = f"{current} {item}" if current.strip() else current + item
        if len(joined) + 2 <= width:
            current = joined
            continue
        if current.strip():
            lines.append(current + " +")
            current = indent
            joined = current + item
            if len(joined) + 2 <= width:
                current = joined
                continue
        rest = item
        while len(current) + len(rest) + 2 > width:
            room = min(width - len(current) - 1, len(rest) - 1)
            cut = next((k for k in range(room, 0, -1) if rest[k] not in BLANKS), None)
            if cut is None:
                break
            lines.append(current + rest[:cut] + "+")
            current, rest = indent, rest[cut:]
        current += rest
    lines.append(current)
    return lines


def format_table(table: RulesTable, *, annotate: bool = False) -> str:
    """The table in canonical rules-table syntax, one entry per line (continued with ``+``
    where IBM's 72-character limit requires). ``annotate`` adds a comment line before each
    rule with its number and the line it came from."""
    lines: list[str] = []
    if table.control.line is not None:
        if annotate:
            lines.append(f"* control data (line {table.control.line})")
        lines.extend(wrap_entry(_control_items(table.control)))
    for rule in table.rules:
        if annotate:
            lines.append(f"* rule {rule.index + 1} (line {rule.line})")
        lines.extend(wrap_entry(_rule_items(rule)))
    return "\n".join(lines) + "\n"


def diagnostic_as_dict(diagnostic: Diagnostic) -> dict[str, int | str]:
    return {
        "line": diagnostic.line,
        "col": diagnostic.col,
        "severity": diagnostic.severity,
        "code": diagnostic.code,
        "message": diagnostic.message,
    }


def rule_target(rule: Rule) -> str:
    """Where a rule sends what it matches, in words: ``FWDQ at FWDQM`` for FWD, the
    original destination for RETRY, nothing for DISCARD and IGNORE."""
    if rule.action == "FWD":
        return f"{rule.fwdq} at {rule.fwdqm}" if rule.fwdqm else f"{rule.fwdq}"
    if rule.action == "RETRY":
        return "original destination (MQDLH DestQName at DestQMgrName)"
    return ""


_NUMBERED = re.compile(r"\b(REASON|FEEDBACK)\((\d+)\)")


def _named(match: re.Match[str]) -> str:
    """``REASON(2053)`` -> ``REASON(MQRC_Q_FULL)``: what an operator reads in runmqdlq tables."""
    try:
        return f"{match.group(1)}({constants.reason_name(int(match.group(2)))})"
    except (KeyError, ValueError):
        return match.group(0)


def named_items(rule: Rule) -> list[str]:
    """The rule's items in canonical order, REASON and FEEDBACK by name where the value has
    one (``REASON(MQRC_Q_FULL)``): a table for people to read, reading back to the same rule."""
    return [_NUMBERED.sub(_named, item) for item in _rule_items(rule)]


def rules_listing(table: RulesTable) -> list[dict[str, int | str | bool]]:
    """The rules as a report shows them beside its counts (and a run summary keeps them):
    line, index, canonical text, action, target, RETRY count and whether the rule matches
    every message (a catch-all: no pattern tested)."""
    return [
        {
            "line": rule.line,
            "index": rule.index,
            "text": _NUMBERED.sub(_named, format_rule(rule)),
            "action": rule.action,
            "target": rule_target(rule),
            "retry": rule.retry,
            "catch_all": not rule.tested_patterns(),
        }
        for rule in table.rules
    ]


def table_as_dict(table: RulesTable) -> dict[str, object]:
    """The normalized table (``rules show --json``): only pattern keywords written, numbers
    for symbolic names, strings as folded."""
    control = table.control
    return {
        "file": table.path,
        "control": {
            "line": control.line,
            "inputq": control.inputq,
            "inputqm": control.inputqm,
            "retryint": control.retryint,
            "wait": control.wait,
        },
        "rules": [
            {
                "index": rule.index,
                "line": rule.line,
                "pattern": dict(rule.patterns),
                "action": rule.action,
                "retry": rule.retry,
                "fwdq": rule.fwdq,
                "fwdqm": rule.fwdqm,
                "header": rule.header,
                "putaut": rule.putaut,
            }
            for rule in table.rules
        ],
    }
