"""Every rule compiled into Spark SQL: the "obvious way" the benchmarks compare the product's
classifier with (`dlq_pipeline.rules.spark.classify_columns`, the rule chosen per distinct
combination of tested values), and a form that must agree with the reference matcher row for
row (tests/spark/test_chained_rules.py).

Three things shape it (docs/rules-semantics.md, "Why not the table compiled into SQL: the codegen cliff"):

* String patterns keep §5's blank-padded semantics exactly. The value's trailing blanks
  (0x20 only) are cut with ``rtrim``; the pattern becomes an equality, a length test,
  ``startswith``/``endswith``/``contains``, or an anchored Java regex with every literal
  escaped. Middle ``*`` segments are matched inside atomic groups (leftmost occurrence, no
  backtracking into them), so ``*A*A*A*B`` cannot blow up on a 48-character field.
* A table of hundreds of rules must not become one huge generated Java method (64 KB is
  the JVM's limit; HotSpot does not JIT methods over 8000 bytes, so they run interpreted).
  Each rule's predicate is evaluated once, in chunks of ``CHUNK`` rules, into the list of
  matching rule indexes; every chunk expression is used twice in that projection (in the
  list and in the match count), so Spark's subexpression elimination gives each chunk its
  own small generated method. A short ``aggregate`` over the (usually tiny) list applies
  cumulative RETRY and IGNORE-at-once, with a fast path when the first matching rule
  decides; the chosen rule's outputs are looked up by index as the product does.
* The expressions are generated as Spark SQL text and parsed once per projection: building
  them call by call through the Python-JVM gateway costs thousands of round trips for a
  large table.
"""

from __future__ import annotations

import re

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from dlq_pipeline.engine.sql_text import sql_column, sql_string
from dlq_pipeline.rules.model import DECISION_COLUMNS, PATTERN_FIELDS, Rule, RulesTable
from dlq_pipeline.rules.spark import outputs_sql

# Rules per chunk expression: each becomes one generated method of a few KB, well under
# HotSpot's 8000-byte JIT limit whatever the table size (benchmarks/bench_rules_codegen.py).
CHUNK = 32


def sql_value(value) -> str:
    """A SQL literal for a rule's integer, boolean or string value."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"CAST({value} AS BIGINT)" if abs(value) > 2**31 - 1 else f"({value})"
    return sql_string(value)


def sql_array(values, type_: str) -> str:
    """A literal array; the cast fixes the element type even when every value is null."""
    return f"CAST(array({', '.join(sql_value(v) for v in values)}) AS ARRAY<{type_}>)"


_MATCHED, _COUNT, _PICK = "__dlq_rules_matched", "__dlq_rules_count", "__dlq_rules_pick"
_TRIMMED = "__dlq_rules_trimmed_"


def _all(tests: list[str]) -> str:
    return "(" + " AND ".join(tests) + ")" if tests else "true"


# --- string patterns ---------------------------------------------------------------------


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


def _plain_glob(glob: str, value: str) -> str:
    """``glob`` (stars collapsed) against an already right-trimmed value (SQL), as cheap as
    the pattern's shape allows; lengths count characters on both sides (Spark and Python)."""
    stars, marks = glob.count("*"), glob.count("?")
    if stars == 0 and marks == 0:
        return f"({value} = {sql_string(glob)})"
    if stars + marks == len(glob):  # only wildcards: "*", "?*" (not blank), "???"
        if stars == 0:
            return f"(length({value}) = {marks})"
        return "true" if marks == 0 else f"(length({value}) >= {marks})"
    if marks == 0 and stars == 1:  # prefix*suffix
        prefix, suffix = glob.split("*")
        tests = [f"startswith({value}, {sql_string(prefix)})"] if prefix else []
        tests += [f"endswith({value}, {sql_string(suffix)})"] if suffix else []
        if prefix and suffix:  # "AB*BC" must not match "ABC"
            tests.append(f"(length({value}) >= {len(prefix) + len(suffix)})")
        return _all(tests)
    if marks == 0 and stars == 2 and glob[0] == "*" and glob[-1] == "*":
        return f"contains({value}, {sql_string(glob[1:-1])})"
    return f"({value} RLIKE {sql_string(glob_regex(glob))})"


def split_padding_tail(pattern: str) -> tuple[str, str]:
    """(head, tail): tail is the longest ending made of blanks and ``*`` only.

    Once the match runs into the field's padding only such characters can follow, so the
    padding can start nowhere but inside the tail."""
    head = pattern.rstrip(" *")
    return head, pattern[len(head) :]


def trimmed_sql(column: str) -> str:
    """The value a string pattern is matched against: null read as blank, trailing blanks cut."""
    return f"rtrim(coalesce({sql_column(column)}, ''))"


def string_sql(pattern: str, column: str, trimmed: str | None = None) -> str:
    """§5 string matching of a column (decoded, unstripped; null reads as blank) against
    ``pattern``, as SQL; ``trimmed`` is a column already holding `trimmed_sql(column)`.

    With ``s`` the value without trailing blanks and ``p`` the pattern likewise, ``p``
    matches the padded field exactly when ``head`` alone matches ``s``, or ``head`` + the
    tail's leading blanks + ``*`` does (those blanks can only match inside ``s``, which
    ends in a non-blank; after them the padding may start anywhere).
    """
    p = re.sub(r"\*+", "*", pattern.rstrip(" "))
    s = sql_column(trimmed) if trimmed else trimmed_sql(column)
    head, tail = split_padding_tail(p)
    if not tail:
        return _plain_glob(p, s)
    blanks = len(tail) - len(tail.lstrip(" "))
    with_tail = _plain_glob(head + " " * blanks + "*", s)
    return with_tail if blanks == 0 else f"({_plain_glob(head, s)} OR {with_tail})"


def string_predicate(pattern: str, column: str) -> Column:
    return F.expr(string_sql(pattern, column))


def _cost(test: str) -> int:
    """Rough cost class of a generated test: integer compare, string test, regex."""
    return 2 if " RLIKE " in test else 0 if test.startswith("coalesce(") else 1


def rule_sql(rule: Rule, trimmed: dict[str, str] | None = None) -> str:
    """Every tested pattern of ``rule`` (a null column never matches an integer), cheapest
    first: AND stops at the first false test, and most rules fail on REASON or another
    integer, so a string or regex test runs only for the few messages that pass those.
    ``trimmed`` maps a column to the name of its precomputed `trimmed_sql` column."""
    tests = []
    for keyword, wanted in rule.tested_patterns().items():
        column, kind, _ = PATTERN_FIELDS[keyword]
        if kind == "int":
            tests.append(f"coalesce({sql_column(column)} = {sql_value(int(wanted))}, false)")
        else:
            tests.append(string_sql(str(wanted), column, (trimmed or {}).get(column)))
    return _all(sorted(tests, key=_cost))


def string_columns(rules: tuple[Rule, ...]) -> list[str]:
    """The string columns the rules' patterns read, in PATTERN_FIELDS order."""
    used = {PATTERN_FIELDS[k][0] for r in rules for k in r.tested_patterns() if PATTERN_FIELDS[k][1] != "int"}
    return [c for c, kind, _ in PATTERN_FIELDS.values() if kind != "int" and c in used]


# --- choosing a rule ---------------------------------------------------------------------

_EMPTY = "CAST(array() AS ARRAY<INT>)"


def chunk_sql(rules: tuple[Rule, ...], start: int, eligible: str, trimmed: dict[str, str] | None = None) -> str:
    """The indexes of the rules ``start``.. ``start + CHUNK`` that match (array<int>, table
    order); empty for a message that is not eligible, whose predicates are then skipped."""
    flags = [
        f"CASE WHEN {rule_sql(r, trimmed)} THEN {start + k} ELSE -1 END"
        for k, r in enumerate(rules[start : start + CHUNK])
    ]
    # array_remove is compiled; array_compact would be an interpreted filter() lambda
    return f"CASE WHEN {eligible} THEN array_remove(array({', '.join(flags)}), -1) ELSE {_EMPTY} END"


def choose_sql(rules: tuple[Rule, ...], matched: str, count: str, attempts: str) -> str:
    """§8 over the matching rules (bigint): ``-(i + 1)`` when rule ``i`` is chosen (the
    first IGNORE, or the first rule at which the running total of RETRY exceeds
    ``attempts``), else the final running total (>= 0)."""
    ignore = sql_array([r.action == "IGNORE" for r in rules], "BOOLEAN")
    retry = sql_array([r.retry for r in rules], "BIGINT")

    def decides(i: str, total: str) -> str:
        return f"(element_at({ignore}, {i} + 1) OR {total} + element_at({retry}, {i} + 1) > {attempts})"

    step = (
        f"(__t, __i) -> CASE WHEN __t < 0 THEN __t WHEN {decides('__i', '__t')} THEN -(CAST(__i AS BIGINT) + 1)"
        f" ELSE __t + element_at({retry}, __i + 1) END"
    )
    first = f"element_at({matched}, 1)"
    return (
        f"CASE WHEN {count} = 0 THEN CAST(0 AS BIGINT)"
        f" WHEN {decides(first, 'CAST(0 AS BIGINT)')} THEN -(CAST({first} AS BIGINT) + 1)"  # the usual case
        f" ELSE aggregate({matched}, CAST(0 AS BIGINT), {step}) END"
    )


def chained_columns(table: RulesTable, df: DataFrame, attempts_col: str = "prior_attempts") -> DataFrame:
    """`classify_columns` with every rule compiled into SQL (the match list in chunks, the
    §8 choice as an ``aggregate``): no Python, but each message tests every rule, so its
    cost grows with the table.

    ``df`` plus the decision columns (data/schemas/decisions.json types), in one narrow pass.

    ``df`` holds the match-view columns (names as in the view, strings as decoded, not
    stripped) and ``attempts_col``, the attempts already made on each message (null: 0).
    Existing columns with decision names are replaced.

    Three projections, one pass: the match list, the choice, the outputs. Each result is
    used several times by the next, so Spark keeps them apart (CollapseProject does not
    repeat an expensive expression) and evaluates each once per row.
    """
    rules = tuple(table.rules)
    eligible = "(coalesce(`has_dlh`, false) AND NOT coalesce(`truncated`, false))"
    attempts = f"CAST(coalesce({sql_column(attempts_col)}, 0) AS BIGINT)"
    # Each string column trimmed once per row, in a projection of its own: inside the CASE
    # and AND branches of the chunks subexpression elimination does not reach, so every
    # pattern would trim its column again. CollapseProject keeps the projection apart
    # because the consumer uses each trimmed value more than once.
    trimmed = {c: f"{_TRIMMED}{c}" for c in string_columns(rules)}
    source = (
        df.select(
            *[F.col(sql_column(c)) for c in df.columns], *[F.expr(trimmed_sql(c)).alias(t) for c, t in trimmed.items()]
        )
        if trimmed
        else df
    )
    chunks = [chunk_sql(rules, start, eligible, trimmed) for start in range(0, len(rules), CHUNK)]
    # Each chunk is used twice here: subexpression elimination then evaluates it once, in
    # its own generated method. The count says whether anything matched.
    matched = (f"concat({', '.join(chunks)})" if len(chunks) > 1 else chunks[0]) if chunks else _EMPTY
    count = " + ".join(f"size({c})" for c in chunks) if chunks else "0"
    listed = source.select(
        *[F.col(sql_column(c)) for c in df.columns], F.expr(matched).alias(_MATCHED), F.expr(count).alias(_COUNT)
    )
    picked = listed.select(
        "*", F.expr(choose_sql(rules, sql_column(_MATCHED), sql_column(_COUNT), attempts)).alias(_PICK)
    )
    index = f"CASE WHEN {sql_column(_PICK)} < 0 THEN CAST(-{sql_column(_PICK)} - 1 AS INT) END"
    outputs = outputs_sql(rules, index, f"({sql_column(_COUNT)} > 0)")
    kept = [F.col(sql_column(c)) for c in df.columns if c not in DECISION_COLUMNS]
    return picked.select(*kept, *[F.expr(outputs[name]).alias(name) for name in DECISION_COLUMNS])
