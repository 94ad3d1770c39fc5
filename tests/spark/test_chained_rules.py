"""The benchmarks' all-SQL classifier (benchmarks/chained_rules.py, the "obvious way" the
classifier is measured against) decides exactly as the reference matcher, row for row, and
keeps every generated method small whatever the table's size: a benchmark that compares the
product with a wrong or a crippled baseline would measure nothing."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from benchmarks.chained_rules import CHUNK, chained_columns, glob_regex, string_predicate
from dlq_pipeline.rules.matcher import glob_match
from dlq_pipeline.rules.model import DECISION_COLUMNS
from dlq_pipeline.rules.spark import classify_columns
from tests.profiles import examples
from tests.spark.test_rules_in_spark import (
    CHARS,
    SETTINGS,
    assert_agrees,
    assert_empty_table_and_cumulative_chain,
    assert_random_tables_agree,
    collected,
    large_messages,
    large_table,
    messages_df,
)

pytestmark = pytest.mark.spark


@settings(max_examples=examples(1), **SETTINGS)
@given(st.integers(0, 2**32 - 1))
def test_random_tables_agree_with_the_oracle(spark, seed):
    """The product's property test (tests/spark/test_rules_in_spark.py), over the all-SQL form."""
    assert_random_tables_agree(spark, random.Random(seed), chained_columns)


def test_empty_table_and_cumulative_chain(spark):
    assert_empty_table_and_cumulative_chain(spark, chained_columns)


PATTERN_TEXT = st.text(st.sampled_from(list(CHARS + "??***")), max_size=7).filter(lambda p: p.strip(" ") or p)
VALUE_TEXT = st.text(st.sampled_from(list(CHARS)), max_size=8)


@settings(max_examples=examples(5), **SETTINGS)
@given(st.lists(PATTERN_TEXT, min_size=1, max_size=25), st.lists(VALUE_TEXT, min_size=1, max_size=25))
def test_string_predicate_equals_glob_match(spark, patterns, values):
    """Every pattern against every value: equality, length, starts/ends/contains or regex."""
    df = spark.createDataFrame([(v,) for v in values], "v string")
    got = df.select("v", *[string_predicate(p, "v").alias(f"p{i}") for i, p in enumerate(patterns)]).collect()
    for row in got:
        for i, p in enumerate(patterns):
            assert row[f"p{i}"] == glob_match(p, row["v"]), (p, row["v"])


# --- examples --------------------------------------------------------------------------


def test_string_shapes_and_escaping(spark):
    cases = [
        ("MY.Q", "MY.Q" + "\x00" * 44),
        ("MY.Q*", "MY.Q" + "\x00" * 44),
        ("MY.Q", "MYXQ"),
        ("?*", " " * 48),
        ("?*", "X"),
        ("???", "AB "),
        ("???", "ABC  "),
        ("??*", "A"),
        ("AAAA.*", "AAAA.QM1"),
        ("AAAA.*", "AAAA"),
        ("*.IN", "APP.IN  "),
        ("*.IN", "APP.INX"),
        ("AB*BC", "ABC"),
        ("AB*BC", "ABBC"),
        ("*MID*", "xMIDx"),
        ("*MID*", "MI D"),
        ("A *", "A"),
        ("A *", "AB"),
        ("A  *B*", "A"),
        ("A  *B*", "A  B"),
        ("A ?*", "A"),
        (" ", "        "),
        (" ", "MQSTR"),
        (" MQSTR", " MQSTR  "),
        ("MQSTR", " MQSTR"),
        ("a$b", "a$b"),
        ("a.b", "aXb"),
        ("(x)*", "(x)yz"),
        ("\\d*", "\\d1"),
        ("\\d*", "5"),
        ("[A]*", "[A]"),
        ("[A]*", "A"),
        ("é?ß", "éÄß"),
        ("É*", "é"),
        ("*A*A*A*A*A*A*A*A*B", "A" * 48),
        ("*\x00", "Q\x00"),
        ("%_*", "%_x"),
        ("%_*", "ab"),
    ]
    df = spark.createDataFrame([(p, v) for p, v in cases], "p string, v string")
    got = [
        r["m"]
        for r in df.select(
            F.coalesce(
                *[F.when((F.col("p") == p) & (F.col("v") == v), string_predicate(p, "v")) for p, v in cases]
            ).alias("m")
        ).collect()
    ]
    assert got == [glob_match(p, v) for p, v in cases]


def test_glob_regex_escapes_every_literal():
    assert glob_regex("A.b?") == r"(?s)\AA\x{2E}b.\z"
    assert glob_regex("*A*B?*C") == r"(?s)\A(?>.*?A)(?>.*?B.).*C\z"


def test_a_500_rule_table_matches_the_oracle_in_small_methods(spark):
    """Rules from all over a 500-rule table decide, exactly as the oracle; and no generated
    whole-stage method grows with the table: each stays far below the 8000 bytes HotSpot
    will JIT (the codegen cliff). One plan, checked, then run."""
    table = large_table(500)
    rows = large_messages(500, 3000, seed=500)
    out = chained_columns(table, messages_df(spark, rows)).select(F.lit(0).alias("table"), "msg", *DECISION_COLUMNS)
    plan = out._jdf.queryExecution().executedPlan()
    debug = getattr(getattr(spark._jvm.org.apache.spark.sql.execution.debug, "package$"), "MODULE$")
    stats = spark._jvm.scala.jdk.javaapi.CollectionConverters.asJava(debug.codegenStringSeq(plan))
    sizes = [entry._3().maxMethodCodeSize() for entry in stats]
    assert sizes and 0 < max(sizes) < 8000, sizes
    got = assert_agrees(spark, [table], rows, got=collected(out))
    chosen = {d.rule_index for d in got.values() if d.rule_index is not None}
    assert len(chosen) > 250  # rules from all over the table were chosen, in every chunk
    assert {i // CHUNK for i in chosen} == set(range((500 + CHUNK - 1) // CHUNK)) and max(chosen) == 499
    indexed = classify_columns(table, messages_df(spark, rows)).select(
        F.lit(0).alias("table"), "msg", *DECISION_COLUMNS
    )
    assert collected(indexed) == got
