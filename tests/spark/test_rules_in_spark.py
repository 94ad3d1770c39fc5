"""The Spark rules compiler must decide exactly as the reference matcher, row for row.

Each compiled table costs Spark planning and code generation whatever its row count, so
the tests put many tables and many messages into few Spark jobs (one balanced union, one
collect): rows are nearly free, jobs and tables are not.
"""

from __future__ import annotations

import random
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dlq_pipeline.mq.dlh_decoder import decode_dlh, to_columns
from dlq_pipeline.mq.structures import DeadLetterHeader, encode_dlh
from dlq_pipeline.rules.matcher import decide, rule_matches
from dlq_pipeline.rules.model import DECISION_COLUMNS, PATTERN_FIELDS, Decision, Rule, RulesTable
from dlq_pipeline.rules.spark import classify_columns
from tests.profiles import examples

pytestmark = pytest.mark.spark

STRING_COLUMNS = [c for c, kind, _ in PATTERN_FIELDS.values() if kind == "str"]
INT_COLUMNS = [c for c, kind, _ in PATTERN_FIELDS.values() if kind == "int"]
SCHEMA = ", ".join(
    ["msg long", "has_dlh boolean", "truncated boolean", "prior_attempts int"]
    + [f"{c} string" for c in STRING_COLUMNS]
    + [f"{c} int" for c in INT_COLUMNS]
)
COLUMNS = [part.split()[0] for part in SCHEMA.split(", ")]
DECISION_TYPES = [
    ("action", "string"),
    ("rule_line", "int"),
    ("rule_index", "int"),
    ("target_q", "string"),
    ("target_qmgr", "string"),
    ("header", "boolean"),
    ("putaut", "string"),
    ("ignore_reason", "string"),
]

# Characters of decoded fields: blanks and NULs (padding), case, EBCDIC national letters,
# and regex metacharacters that must stay literal.
CHARS = "AAAAAABBB" + "aa" + "   " + "\x00" + "..." + "éÄß¢¬" + "$\\(%_[+^|"
# National characters of z/OS code pages (273 German, 277 Danish/Norwegian, 297 French),
# which sit on EBCDIC's variant code points; patterns use them too, so rules match them.
NATIONAL = "ÄÖÜß§" + "ÆØÅæøå" + "àçèù£"
EBCDIC_CCSIDS = (273, 277, 297)
ZOS_ENCODING = 785  # big-endian integers, as a z/OS queue manager writes them
HEADER_STRINGS = ("DESTQ", "DESTQM", "FORMAT")  # the MQDLH's character fields
INTS = [0, 1, 2, 4, 8, 265, 2035, 2053, -1, 999_999_999]  # incl. MQAT_UNKNOWN, MQRC_Q_FULL...
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


# --- random tables and messages --------------------------------------------------------


def random_text(rnd: random.Random, max_len: int, wildcards: bool, chars: str = CHARS + NATIONAL) -> str:
    chars = chars + ("??***" if wildcards else "")
    return "".join(rnd.choice(chars) for _ in range(rnd.randint(0, max_len)))


@cache
def ebcdic_chars(ccsid: int) -> str:
    """The test characters that code page ``ccsid`` can hold."""
    from dlq_pipeline.mq.codepages import encode

    def encodable(c: str) -> bool:
        try:
            encode(c, ccsid)
            return True
        except ValueError:
            return False

    return "".join(c for c in CHARS + NATIONAL if encodable(c))


def ebcdic_header(rnd: random.Random) -> dict:
    """The MQDLH columns of a z/OS dead letter, as the decode stage produces them: a header
    encoded big-endian in an EBCDIC code page and decoded back (48-character fields,
    national characters, NULs kept)."""
    ccsid = rnd.choice(EBCDIC_CCSIDS)
    chars = ebcdic_chars(ccsid)
    chars += 3 * "".join(c for c in chars if c in NATIONAL)  # names in the local language

    def field(length: int) -> str:
        text = random_text(rnd, min(6, length), wildcards=False, chars=chars)
        return (text + rnd.choice(["", "", "\x00" * 2])).ljust(length)[:length]

    dlh = DeadLetterHeader(
        reason=rnd.choice(INTS),
        dest_q=field(48),
        dest_qmgr=field(48),
        encoding=ZOS_ENCODING,
        ccsid=ccsid,
        format=field(8),
    )
    columns = to_columns(decode_dlh(encode_dlh(dlh, ZOS_ENCODING, ccsid), ZOS_ENCODING, ccsid, "MQDEAD"))
    assert columns["has_dlh"] and columns["dlh_dest_q"] == dlh.dest_q, columns
    return {k: columns[k] for k in ("has_dlh", "dlh_reason", "dlh_dest_q", "dlh_dest_qmgr", "dlh_format")}


def random_pattern(rnd: random.Random, kind: str, keyword: str = ""):
    if rnd.random() < 0.1:
        return "*"
    if kind == "int":
        return rnd.choice(INTS)
    if rnd.random() < (0.4 if keyword in HEADER_STRINGS else 0.1):  # national characters, as z/OS names have
        return rnd.choice(["*{}*", "{}*", "?{}*", "*{}"]).format(rnd.choice(NATIONAL))
    text = random_text(rnd, 5, wildcards=True)
    return text if text.strip(" ") else rnd.choice([" ", "?*", "A*"])  # the parser needs a significant char


def random_name(rnd: random.Random, tokens: tuple[str, ...]) -> str | None:
    return rnd.choice([*tokens, "DEAD.Q", "dead.q", "Q.B  ", " LEAD", "\x00", " "])


def random_rule(rnd: random.Random, index: int, line: int) -> Rule:
    keywords = rnd.sample(sorted(PATTERN_FIELDS), rnd.choice([0, 1, 1, 2, 2, 3, 4]))
    patterns = {k: random_pattern(rnd, PATTERN_FIELDS[k][1], k) for k in keywords}
    action = rnd.choice(["DISCARD", "IGNORE", "RETRY", "RETRY", "FWD", "FWD"])
    retry = rnd.choice([1, 1, 2, 3, 999_999_999])
    fwdq = fwdqm = None
    if action == "FWD":
        fwdq = random_name(rnd, ("&DESTQ", "&REPLYQ", "&destq"))
        fwdqm = rnd.choice([None, random_name(rnd, ("&DESTQM", "&REPLYQM"))])
    return Rule(
        line=line,
        index=index,
        patterns=patterns,
        action=action,
        retry=retry,
        fwdq=fwdq,
        fwdqm=fwdqm,
        header=rnd.random() < 0.5,
        putaut=rnd.choice(["DEF", "CTX"]),
    )


def random_table(rnd: random.Random, max_rules: int) -> RulesTable:
    rules, line = [], 1
    for index in range(rnd.randint(0, max_rules)):
        line += rnd.randint(1, 3)
        rules.append(random_rule(rnd, index, line))
    return RulesTable(path="random.rules", rules=tuple(rules))


def random_message(rnd: random.Random, number: int) -> dict:
    row = {
        "msg": number,
        "has_dlh": rnd.random() < 0.92,
        "truncated": rnd.random() < 0.05,
        "prior_attempts": rnd.choice([0, 0, 0, 1, 2, 3, 4, 5, 10**9, None]),
    }
    if rnd.random() < 0.02:
        row["has_dlh"] = None
    for column in STRING_COLUMNS:
        value = random_text(rnd, 6, wildcards=False)
        padding = rnd.choice(["", "", " " * 6, "\x00" * 3])
        row[column] = None if rnd.random() < 0.02 else value + padding
    for column in INT_COLUMNS:
        row[column] = None if rnd.random() < 0.02 else rnd.choice(INTS + [3, 7])
    if rnd.random() < 0.3:
        row.update(ebcdic_header(rnd), ebcdic=True)
    return row


def oracle(table: RulesTable, row: dict) -> Decision:
    return decide(table, row, row["prior_attempts"] or 0)


def balanced_union(parts: list[DataFrame]) -> DataFrame:
    """One union of same-shaped DataFrames as a balanced tree: each union call re-checks
    the whole plan, so a left-deep chain of n unions costs O(n^2) analysis."""
    while len(parts) > 1:
        parts = [parts[i].union(parts[i + 1]) if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
    return parts[0]


def messages_df(spark, rows: list[dict]) -> DataFrame:
    return spark.createDataFrame([tuple(r[c] for c in COLUMNS) for r in rows], SCHEMA)


# The classifier in both of its UDF forms (the pandas one is what Spark before 4.1 runs); the
# benchmark's all-SQL form is checked the same way (tests/spark/test_chained_rules.py).
FORMS = {"indexed": classify_columns, "indexed_pandas": lambda t, df: classify_columns(t, df, arrow=False)}


def compiled(
    spark, tables: list[RulesTable], rows: list[dict], classify=classify_columns
) -> dict[tuple[int, int], Decision]:
    """Every table over every message, in one Spark job."""
    df = messages_df(spark, rows)
    parts = [classify(t, df).select(F.lit(n).alias("table"), "msg", *DECISION_COLUMNS) for n, t in enumerate(tables)]
    return collected(balanced_union(parts))


def collected(df: DataFrame) -> dict[tuple[int, int], Decision]:
    return {(r["table"], r["msg"]): Decision(*[r[c] for c in DECISION_COLUMNS]) for r in df.collect()}


def assert_agrees(
    spark, tables: list[RulesTable], rows: list[dict], got: dict | None = None, classify=classify_columns
) -> dict:
    got = compiled(spark, tables, rows, classify) if got is None else got
    expected = {(n, r["msg"]): oracle(t, r) for n, t in enumerate(tables) for r in rows}
    assert got.keys() == expected.keys()
    wrong = [(key, expected[key], got[key]) for key in expected if got[key] != expected[key]]
    if wrong:
        (t, m), want, have = wrong[0]
        pytest.fail(
            f"{len(wrong)} disagreements; first: table {tables[t].rules!r}\nmessage {rows[m]!r}\n"
            f"oracle {want}\nspark  {have}"
        )
    return got


# --- properties ------------------------------------------------------------------------


@settings(max_examples=examples(2), **SETTINGS)
@given(st.integers(0, 2**32 - 1))
def test_random_tables_agree_with_the_oracle(spark, seed):
    """Small tables (up to 6 rules, short chains) and larger ones (up to 12) over messages
    with ASCII and z/OS EBCDIC headers: 60 tables x 500 messages per Spark job."""
    assert_random_tables_agree(spark, random.Random(seed), classify_columns)


def assert_random_tables_agree(spark, rnd: random.Random, classify) -> None:
    tables = [random_table(rnd, 6) for _ in range(30)] + [random_table(rnd, 12) for _ in range(30)]
    rows = [random_message(rnd, n) for n in range(500)]
    got = assert_agrees(spark, tables, rows, classify=classify)
    actions = {d.action for d in got.values()}
    reasons = {d.ignore_reason for d in got.values()}
    assert actions == {"DISCARD", "IGNORE", "RETRY", "FWD"}  # the comparison was not vacuous
    assert {"no_dlh", "truncated", "no_match", "retries_exhausted", None} <= reasons
    # ... and header patterns with national characters matched EBCDIC messages, at or before
    # the rule that decided them (so they took part in the decision)
    assert (
        sum(national_matches(t, r, got[(n, r["msg"])]) for n, t in enumerate(tables) for r in rows if r.get("ebcdic"))
        > 0
    )


def national_matches(table: RulesTable, row: dict, decision: Decision) -> int:
    """Rules up to the deciding one whose DESTQ/DESTQM/FORMAT pattern holds a national
    character and matches ``row``."""
    last = len(table.rules) if decision.rule_index is None else decision.rule_index + 1
    return sum(
        1
        for rule in table.rules[:last]
        if any(c in NATIONAL for k, p in rule.tested_patterns().items() if k in HEADER_STRINGS for c in str(p))
        and rule_matches(rule, row)
    )


def test_output_columns_types_and_replacement(spark):
    table = RulesTable("t", rules=(Rule(3, 0, {"REASON": 2053}, "FWD", fwdq="&REPLYQ", fwdqm="&REPLYQM"),))
    row = random_message(random.Random(1), 0) | {
        "has_dlh": True,
        "truncated": False,
        "dlh_reason": 2053,
        "reply_to_q": "R.Q\x00junk",
        "reply_to_qmgr": "QM2   ",
    }
    df = spark.createDataFrame([tuple(row[c] for c in COLUMNS)], SCHEMA).withColumn("action", F.lit("stale"))
    out = classify_columns(table, df)
    assert out.columns == [c for c in df.columns if c != "action"] + list(DECISION_COLUMNS)
    assert [(f.name, f.dataType.simpleString()) for f in out.schema.fields[-8:]] == DECISION_TYPES
    assert Decision(*[out.first()[c] for c in DECISION_COLUMNS]) == Decision("FWD", 3, 0, "R.Q", "QM2", True, "DEF")


@pytest.mark.parametrize("form", sorted(FORMS))
def test_empty_table_and_cumulative_chain(spark, form):
    """An empty table ignores everything (for the right reason); with A RETRY(3) then B
    RETRY(1), attempts 0-2 choose A, 3 chooses B, then nothing. One Spark job per form."""
    assert_empty_table_and_cumulative_chain(spark, FORMS[form])


def assert_empty_table_and_cumulative_chain(spark, classify) -> None:
    empty = RulesTable("empty")
    chain = RulesTable("t", rules=(Rule(5, 0, {}, "RETRY", retry=3), Rule(7, 1, {}, "FWD", retry=1, fwdq="B")))
    mixed = [random_message(random.Random(n), n) | {"has_dlh": n % 3 > 0, "truncated": n % 3 == 1} for n in range(9)]
    base = random_message(random.Random(2), 0) | {"has_dlh": True, "truncated": False}
    attempts = [base | {"msg": 100 + n, "prior_attempts": n} for n in range(6)]
    got = compiled(spark, [empty, chain], mixed + attempts, classify)
    assert [got[(0, r["msg"])] for r in mixed] == [oracle(empty, r) for r in mixed]
    assert {got[(0, r["msg"])].ignore_reason for r in mixed} == {"no_dlh", "truncated", "no_match"}
    assert [got[(1, 100 + n)].rule_line for n in range(6)] == [5, 5, 5, 7, None, None]
    assert got[(1, 104)].ignore_reason == "retries_exhausted"
    assert all(got[(1, r["msg"])] == oracle(chain, r) for r in mixed + attempts)


# --- a large table ------------------------------------------------------------------------


def large_table(size: int) -> RulesTable:
    """Real-world shapes: per-application queues, reasons, the ?* idiom, &-substitutions."""
    rules = []
    for i in range(size - 1):
        app, shape = f"APP{i:03d}", i % 6
        if shape == 0:
            r = dict(patterns={"DESTQ": f"{app}.*", "REASON": 2053}, action="RETRY", retry=1 + i % 3)
        elif shape == 1:
            r = dict(patterns={"DESTQ": f"{app}.IN"}, action="FWD", fwdq=f"{app}.ERRORS", fwdqm="QMERR")
        elif shape == 2:
            r = dict(patterns={"DESTQM": f"QM{i:03d}", "REPLYQM": "?*"}, action="FWD", fwdq="&REPLYQ", fwdqm="&REPLYQM")
        elif shape == 3:
            r = dict(patterns={"APPLNAME": f"svc{i:03d}*", "PERSIST": 0}, action="DISCARD")
        elif shape == 4:
            r = dict(patterns={"REASON": 2035, "USERID": f"u{i:03d}"}, action="FWD", fwdq="SECURITY.Q", header=False)
        else:
            r = dict(patterns={"FORMAT": "MQSTR", "DESTQ": f"*.{app}.?N"}, action="IGNORE")
        rules.append(Rule(line=10 + i, index=i, **r))
    rules.append(Rule(line=10 + size, index=size - 1, patterns={}, action="FWD", fwdq="DEADQ.MANUAL"))
    return RulesTable("large.rules", rules=tuple(rules))


def large_messages(size: int, count: int, seed: int) -> list[dict]:
    rnd = random.Random(seed)
    rows = []
    for n in range(count):
        k = f"{rnd.randrange(size):03d}"
        row = random_message(rnd, n) | {
            "has_dlh": rnd.random() < 0.97,
            "truncated": rnd.random() < 0.01,
            "dlh_reason": rnd.choice([2053, 2035, 2051]),
            "persistence": rnd.choice([0, 1]),
            "dlh_dest_q": rnd.choice([f"APP{k}.IN", f"X.APP{k}.IN", f"APP{k}.OUT"]).ljust(48),
            "dlh_dest_qmgr": f"QM{k}".ljust(48),
            "dlh_format": rnd.choice(["MQSTR   ", "MQHRF2  "]),
            "reply_to_qmgr": rnd.choice(["", "QMR"]).ljust(48),
            "reply_to_q": f"R.{k}".ljust(48),
            "user_id": f"u{k}".ljust(12),
            "put_appl_name": f"svc{k}-w".ljust(28),
        }
        rows.append(row)
    return rows


def test_500_rule_table_matches_the_oracle(spark):
    """Rules from all over a 500-rule table decide, exactly as the oracle."""
    table = large_table(500)
    rows = large_messages(500, 3000, seed=500)
    got = assert_agrees(spark, [table], rows)
    chosen = {d.rule_index for d in got.values() if d.rule_index is not None}
    assert len(chosen) > 250 and max(chosen) == 499  # rules from all over the table were chosen
