"""The Spark compiler: a validated rules table -> the decision columns, in one pass.

It must agree with the reference matcher (``matcher.decide``) row for row. Two things
shape it:

* String patterns keep §5's blank-padded semantics exactly. The value's trailing blanks
  (0x20 only) are cut with ``rtrim``; the pattern becomes an equality, a ``startswith`` or
  an anchored Java regex with every literal escaped. Middle ``*`` segments are matched
  inside atomic groups (leftmost occurrence, no backtracking into them), so a pattern like
  ``*A*A*A*B`` cannot blow up on a 48-character field.
* A table of hundreds of rules must not become one enormous generated Java method (the
  64 KB method limit, and HotSpot's refusal to JIT methods over 8000 bytes). So there is
  no chain that grows with the table: each rule's match predicate is evaluated once, in
  chunks of at most ``CHUNK`` rules per array expression, into the short list of the
  rules that match; a small ``aggregate`` over that list applies the cumulative RETRY and
  IGNORE-at-once rule; the chosen rule's outputs are looked up by index in literal arrays.
  See docs/rules-semantics.md for the measurements.
"""

from __future__ import annotations

import re

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from dlq_pipeline.rules.matcher import SUBSTITUTION_COLUMNS, resolve_name
from dlq_pipeline.rules.model import PATTERN_FIELDS, Rule, RulesTable

# Rules per array expression: keeps each generated method well under HotSpot's 8000-byte
# JIT limit whatever the table size (see benchmarks/bench_rules_codegen.py).
CHUNK = 40

DECISION_COLUMNS = (
    "action",
    "rule_line",
    "rule_index",
    "target_q",
    "target_qmgr",
    "header",
    "putaut",
    "ignore_reason",
)

# Where a resolved target name comes from: a literal written in the table, or a column.
_LITERAL = 0
_SOURCES = {token: code for code, token in enumerate(SUBSTITUTION_COLUMNS, start=1)}
_SOURCE_COLUMNS = {code: SUBSTITUTION_COLUMNS[token] for token, code in _SOURCES.items()}


# --- string patterns ----------------------------------------------------------------------

def _regex_literal(text: str) -> str:
    """Every character outside [A-Za-z0-9] as \\x{...}, so nothing is a regex operator."""
    return "".join(c if c.isascii() and c.isalnum() else f"\\x{{{ord(c):X}}}" for c in text)


def _segment(text: str) -> str:
    return "".join("." if c == "?" else _regex_literal(c) for c in text)


def glob_regex(glob: str) -> str:
    """A Java regex that fully matches exactly what ``glob`` matches (no blank padding).

    Middle segments take their leftmost occurrence inside an atomic group: for ``?``/``*``
    globs that is always a correct choice, and it keeps matching linear-ish."""
    segments = glob.split("*")
    if len(segments) == 1:
        return f"(?s)\\A{_segment(glob)}\\z"
    middle = "".join(f"(?>.*?{_segment(s)})" for s in segments[1:-1])
    return f"(?s)\\A{_segment(segments[0])}{middle}.*{_segment(segments[-1])}\\z"


def _plain_glob(glob: str, value: Column) -> Column:
    """``glob`` against an already right-trimmed value, as cheap as the pattern allows."""
    if "?" not in glob and "*" not in glob:
        return value == F.lit(glob)
    if glob == "*":
        return F.lit(True)
    head = glob[:-1]
    if glob.endswith("*") and "?" not in head and "*" not in head:
        return value.startswith(F.lit(head))
    return value.rlike(glob_regex(glob))


def split_padding_tail(pattern: str) -> tuple[str, str]:
    """(head, tail): tail is the longest ending made of blanks and ``*`` only.

    Once the match runs into the field's padding only such characters can follow, so the
    padding can start nowhere but inside the tail."""
    head = pattern.rstrip(" *")
    return head, pattern[len(head):]


def string_predicate(pattern: str, value: Column) -> Column:
    """§5 string matching of ``value`` (decoded, unstripped) against ``pattern``.

    With ``s`` the value without trailing blanks and ``p`` the pattern likewise, ``p``
    matches the padded field exactly when either ``head`` alone matches ``s`` or ``head``
    + the tail's leading blanks + ``*`` matches ``s`` (the blanks before the tail's first
    ``*`` can only be matched inside ``s``, as ``s`` ends in a non-blank).
    """
    p = re.sub(r"\*+", "*", pattern.rstrip(" "))
    s = F.rtrim(F.coalesce(value, F.lit("")))
    head, tail = split_padding_tail(p)
    if not tail:
        return _plain_glob(p, s)
    blanks = len(tail) - len(tail.lstrip(" "))
    with_tail = _plain_glob(head + " " * blanks + "*", s)
    return with_tail if blanks == 0 else _plain_glob(head, s) | with_tail


def rule_predicate(rule: Rule) -> Column:
    """Every tested pattern of ``rule`` (a null column never matches an integer)."""
    tests = []
    for keyword, wanted in rule.tested_patterns().items():
        column, kind, _ = PATTERN_FIELDS[keyword]
        if kind == "int":
            tests.append(F.coalesce(F.col(column) == F.lit(wanted), F.lit(False)))
        else:
            tests.append(string_predicate(str(wanted), F.col(column)))
    predicate = None
    for test in tests:
        predicate = test if predicate is None else predicate & test
    return F.lit(True) if predicate is None else predicate


# --- choosing a rule ---------------------------------------------------------------------

def matched_rules(rules: tuple[Rule, ...]) -> Column:
    """The 0-based indexes of the rules that match, in table order (array<int>)."""
    if not rules:
        return F.array().cast("array<int>")
    chunks = []
    for start in range(0, len(rules), CHUNK):
        flags = [F.when(rule_predicate(r), F.lit(start + k)).otherwise(F.lit(-1)) for k, r in enumerate(rules[start:start + CHUNK])]
        # array_remove is compiled; array_compact would be an interpreted filter() lambda
        chunks.append(F.array_remove(F.array(*flags), -1))
    return chunks[0] if len(chunks) == 1 else F.concat(*chunks)


def _array(values, type_: str) -> Column:
    return F.array(*[F.lit(v) for v in values]).cast(f"array<{type_}>")


def choose(rules: tuple[Rule, ...], matched: Column, attempts: Column) -> Column:
    """§8 over the matching rules: struct(``chosen`` = index of the first IGNORE, or of the
    first rule at which the running total of RETRY exceeds ``attempts``, else null;
    ``seen`` = some rule matched)."""
    ignore = _array([r.action == "IGNORE" for r in rules], "boolean")
    retry = _array([r.retry for r in rules], "bigint")

    def step(state: Column, i: Column) -> Column:
        total = state["total"] + F.element_at(retry, i + 1)
        now = F.when(F.element_at(ignore, i + 1), i).when(total > attempts, i)
        return F.when(state["chosen"].isNotNull(), state).otherwise(
            F.struct(now.alias("chosen"), total.alias("total"), F.lit(True).alias("seen"))
        )

    start = F.struct(
        F.lit(None).cast("int").alias("chosen"), F.lit(0).cast("bigint").alias("total"), F.lit(False).alias("seen")
    )
    return F.aggregate(matched, start, step)


# --- outputs -----------------------------------------------------------------------------

def _resolved(column: str) -> Column:
    """``matcher.resolve_name`` in Spark: cut at the first NUL, drop trailing blanks."""
    return F.rtrim(F.substring_index(F.coalesce(F.col(column), F.lit("")), "\x00", 1))


def _target_specs(rule: Rule) -> tuple[tuple[int, str], tuple[int, str]] | None:
    """(source, literal) for target_q and target_qmgr; None when the action puts nothing."""
    if rule.action == "RETRY":
        return (_SOURCES["&DESTQ"], ""), (_SOURCES["&DESTQM"], "")

    def spec(value: str | None) -> tuple[int, str]:
        if value is not None and value.upper() in _SOURCES:
            return _SOURCES[value.upper()], ""
        return _LITERAL, resolve_name(value)

    if rule.action == "FWD":
        return spec(rule.fwdq), spec(rule.fwdqm)
    return None


def _target(rules: tuple[Rule, ...], position: int, index: Column) -> Column:
    """The resolved target_q (position 0) or target_qmgr (1) of the chosen rule."""
    specs = [_target_specs(r) for r in rules]
    sources = _array([s[position][0] if s else None for s in specs], "int")
    literals = _array([s[position][1] if s else None for s in specs], "string")
    source = F.element_at(sources, index + 1)
    target = F.when(source == _LITERAL, F.element_at(literals, index + 1))
    for code in sorted({s[position][0] for s in specs if s} - {_LITERAL}):
        target = target.when(source == code, _resolved(_SOURCE_COLUMNS[code]))
    return target


def _outputs(rules: tuple[Rule, ...], index: Column, seen: Column) -> dict[str, Column]:
    """The decision columns from the chosen rule's index (null: implicit IGNORE)."""

    def pick(values, type_: str) -> Column:
        return F.element_at(_array(values, type_), index + 1)

    action = pick([r.action for r in rules], "string")
    puts = action.isin("RETRY", "FWD")
    ignore_reason = (
        F.when(~F.coalesce(F.col("has_dlh"), F.lit(False)), F.lit("no_dlh"))
        .when(F.coalesce(F.col("truncated"), F.lit(False)), F.lit("truncated"))
        .when(index.isNull() & seen, F.lit("retries_exhausted"))
        .when(index.isNull(), F.lit("no_match"))
    )
    return {
        "action": F.coalesce(action, F.lit("IGNORE")),
        "rule_line": pick([r.line for r in rules], "int"),
        "rule_index": index,
        "target_q": _target(rules, 0, index),
        "target_qmgr": _target(rules, 1, index),
        "header": F.when(action == "FWD", pick([r.header for r in rules], "boolean")),
        "putaut": F.when(puts, pick([r.putaut for r in rules], "string")),
        "ignore_reason": ignore_reason,
    }


def classify_columns(table: RulesTable, df: DataFrame, attempts_col: str = "prior_attempts") -> DataFrame:
    """``df`` plus the decision columns (schemas/decisions.json types), in one narrow pass.

    ``df`` holds the match-view columns (names as in the view, strings as decoded, not
    stripped) and ``attempts_col``, the attempts already made on each message (null: 0).
    Existing columns with decision names are replaced. The rule choice is one projection
    and the outputs a second one over its result, so the choice is evaluated once per row
    (Spark does not merge projections that would repeat an expensive expression).
    """
    rules = tuple(table.rules)
    eligible = F.coalesce(F.col("has_dlh"), F.lit(False)) & ~F.coalesce(F.col("truncated"), F.lit(False))
    attempts = F.coalesce(F.col(attempts_col), F.lit(0)).cast("bigint")
    matched = F.when(eligible, matched_rules(rules)).otherwise(F.array().cast("array<int>"))
    staged = df.select(*[F.col(c) for c in df.columns], choose(rules, matched, attempts).alias(_PICK))
    outputs = _outputs(rules, F.col(f"{_PICK}.chosen"), F.col(f"{_PICK}.seen"))
    kept = [F.col(c) for c in df.columns if c not in DECISION_COLUMNS]
    return staged.select(*kept, *[outputs[name].alias(name) for name in DECISION_COLUMNS])


_PICK = "__dlq_rules_pick"
