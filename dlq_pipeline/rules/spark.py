"""The rules applied in Spark: a validated rules table as decision columns, and the same as a
`DataFrame.transform` step for a user's own query (`decide`).

`classify_columns` turns a validated rules table into the decision columns, in one narrow
pass, agreeing with the reference matcher (``matcher.decide``) row for row: the rule is
chosen per distinct combination of the columns the rules test (`rules.index.RuleIndex`, in a
vectorized Python UDF), and the chosen rule's outputs are looked up in SQL by index (literal
arrays, one element per rule), so a message's cost does not grow with the table
(docs/rules-semantics.md, "How Spark evaluates a table"). The expressions are Spark SQL
text, parsed once per projection: built call by call through the Python-JVM gateway they
would cost a round trip each; literals are written so that no parser setting can change them
(see ``sql_string``). `decode_and_classify_columns` decodes the MQDLH and chooses the rule in
one Python UDF. The classify stage built on them is `classify.spark`.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from dlq_pipeline.engine.sql_text import sql_column, sql_json_array, sql_string
from dlq_pipeline.mq.spark import decode_headers, decode_inputs, decoded_columns, decoded_struct
from dlq_pipeline.rules.matcher import SUBSTITUTION_COLUMNS, resolve_name
from dlq_pipeline.rules.model import DECISION_COLUMNS, PATTERN_FIELDS, Rule, RulesTable

# Where a resolved target name comes from: a literal written in the table, or a column.
_LITERAL = 0
_SOURCES = {token: code for code, token in enumerate(SUBSTITUTION_COLUMNS, start=1)}
_SOURCE_COLUMNS = {code: SUBSTITUTION_COLUMNS[token] for token, code in _SOURCES.items()}

_PICK = "__dlq_rules_pick"  # the chosen rule's index, or how the choice ended


# --- outputs -----------------------------------------------------------------------------


def resolved_sql(column: str) -> str:
    """``matcher.resolve_name`` in Spark: cut at the first NUL, drop trailing blanks."""
    return f"rtrim(substring_index(coalesce({sql_column(column)}, ''), {sql_string(chr(0))}, 1))"


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


def _target_sql(rules: tuple[Rule, ...], position: int, index: str) -> str:
    """The resolved target_q (position 0) or target_qmgr (1) of the chosen rule."""
    specs = [_target_specs(r) for r in rules]
    source = f"element_at({sql_json_array([s[position][0] if s else None for s in specs], 'INT')}, {index} + 1)"
    literal = f"element_at({sql_json_array([s[position][1] if s else None for s in specs], 'STRING')}, {index} + 1)"
    branches = [f"WHEN {source} = {_LITERAL} THEN {literal}"]
    for code in sorted({s[position][0] for s in specs if s} - {_LITERAL}):
        branches.append(f"WHEN {source} = {code} THEN {resolved_sql(_SOURCE_COLUMNS[code])}")
    return f"CASE {' '.join(branches)} END"


def outputs_sql(rules: tuple[Rule, ...], index: str, seen: str) -> dict[str, str]:
    """The decision columns (SQL) from the chosen rule's index (null: implicit IGNORE)."""

    def pick(values, type_: str) -> str:
        return f"element_at({sql_json_array(values, type_)}, {index} + 1)"

    action = pick([r.action for r in rules], "STRING")
    return {
        "action": f"coalesce({action}, 'IGNORE')",
        "rule_line": pick([r.line for r in rules], "INT"),
        "rule_index": index,
        "target_q": _target_sql(rules, 0, index),
        "target_qmgr": _target_sql(rules, 1, index),
        "header": f"CASE WHEN {action} = 'FWD' THEN {pick([r.header for r in rules], 'BOOLEAN')} END",
        "putaut": f"CASE WHEN {action} IN ('RETRY', 'FWD') THEN {pick([r.putaut for r in rules], 'STRING')} END",
        "ignore_reason": (
            "CASE WHEN NOT coalesce(`has_dlh`, false) THEN 'no_dlh'"
            " WHEN coalesce(`truncated`, false) THEN 'truncated'"
            f" WHEN {index} IS NULL AND {seen} THEN 'retries_exhausted'"
            f" WHEN {index} IS NULL THEN 'no_match' END"
        ),
    }


# --- the rule chosen per distinct value ----------------------------------------------------

_ELIGIBLE = "(coalesce(`has_dlh`, false) AND NOT coalesce(`truncated`, false))"
_KINDS = {column: kind for column, kind, _ in PATTERN_FIELDS.values()}


def _choices_udf(table: RulesTable, columns: list[str], arrow: bool):
    """The Python UDF giving `RuleIndex.choices` for a struct of (eligible, attempts, the
    tested columns). The index is built once per task and keeps what it learnt (value ->
    rules) across the task's batches."""
    import numpy as np
    import pyarrow as pa

    from dlq_pipeline.rules.index import RuleIndex

    held: dict = {}

    def codes(eligible, attempts, values) -> pa.Array:
        index = held.get("index") or held.setdefault("index", RuleIndex(table))
        return pa.array(index.choices(values, eligible, attempts).astype(np.int32), pa.int32())

    if arrow:

        def choose_arrow(batch):
            return codes(batch.field("eligible"), batch.field("attempts"), {c: batch.field(c) for c in columns})

        # pyspark's overloads all want functionType; without it Spark makes a scalar Arrow UDF
        return F.arrow_udf(choose_arrow, returnType="int")  # type: ignore[call-overload]

    def choose_pandas(batch):
        import pandas as pd

        def arrow(series, column):
            kind = pa.int64() if _KINDS.get(column) == "int" else pa.string()
            return pa.array(series.astype(object).where(series.notna(), None).tolist(), kind)

        got = codes(batch["eligible"].tolist(), batch["attempts"].tolist(), {c: arrow(batch[c], c) for c in columns})
        return pd.Series(got.to_numpy(zero_copy_only=False))

    # pyspark's overloads all want functionType; without it Spark makes a scalar pandas UDF
    return F.pandas_udf(choose_pandas, returnType="int")  # type: ignore[call-overload]


def classify_columns(
    table: RulesTable, df: DataFrame, attempts_col: str = "prior_attempts", *, arrow: bool | None = None
) -> DataFrame:
    """``df`` plus the decision columns (data/schemas/decisions.json types), in one narrow pass.

    ``df`` holds the match-view columns (names as in the view, strings as decoded, not
    stripped) and ``attempts_col``, the attempts already made on each message (null: 0).
    Existing columns with decision names are replaced.

    The choice of rule is made per distinct combination of the columns the rules test
    (`rules.index.RuleIndex`, in a vectorized Python UDF: an Arrow UDF on Spark 4.1+, else
    pandas; ``arrow`` forces one), so a message costs about the same whatever the table's
    size; only the chosen rule's outputs are then looked up in SQL, by index.
    """
    from dlq_pipeline.rules.index import RuleIndex

    rules = tuple(table.rules)
    if rules:
        columns = list(RuleIndex(table).columns)
        if arrow is None:
            arrow = hasattr(F, "arrow_udf")
        batch = F.expr(
            f"struct({_ELIGIBLE} AS eligible, {_attempts_sql(attempts_col)} AS attempts"
            f"{''.join(f', {sql_column(c)}' for c in columns)})"
        )
        chosen = _choices_udf(table, columns, arrow)(batch)
    else:
        chosen = F.lit(None).cast("int")
    # Few calls into the JVM (each costs a round trip, more on a busy machine): the
    # replaced columns dropped, the choice and the outputs appended, the choice dropped.
    stale = [c for c in DECISION_COLUMNS if c in df.columns]
    return _with_outputs((df.drop(*stale) if stale else df).withColumn(_PICK, chosen), rules)


def _attempts_sql(attempts_col: str) -> str:
    return f"CAST(coalesce({sql_column(attempts_col)}, 0) AS BIGINT)"


def _with_outputs(picked: DataFrame, rules: tuple[Rule, ...]) -> DataFrame:
    """``picked`` (which holds the choice, ``_PICK``) with the decision columns instead of it."""
    from dlq_pipeline.rules.index import EXHAUSTED

    pick = sql_column(_PICK)
    outputs = outputs_sql(rules, f"CASE WHEN {pick} >= 0 THEN {pick} END", f"coalesce({pick} = {EXHAUSTED}, false)")
    return picked.withColumns({name: F.expr(outputs[name]) for name in DECISION_COLUMNS}).drop(_PICK)


# --- decode and choose in one Python UDF -------------------------------------------------


def decode_and_classify_columns(
    table: RulesTable, messages: DataFrame, attempts_col: str = "prior_attempts"
) -> DataFrame:
    """``classify_columns(table, decode_headers(messages), attempts_col)``, with the MQDLH
    decoded and the rule chosen in one Arrow UDF instead of two; ``messages`` that hold the
    decode columns already (`mq.spark.decode_headers`) are classified as they are.

    Spark runs each Python UDF of a task in a Python worker of its own, and a new worker
    costs about a second of CPU before its first row (pyspark, pyarrow, pandas and this
    package imported): with decode and the choice apart, a run's classify started two
    workers per task, four on two cores. Spark can only put two UDFs into one worker when
    one is the other's only argument, and the choice also reads the message's attempts and
    MQMD columns. The UDF is `dlh_arrow_decoder.decode_dlh_arrow` followed by
    `RuleIndex.choices` on its output, so its decisions are those of the two UDFs
    (tests/spark/test_pipeline.py).
    On Spark without Arrow UDFs (before 4.1), and for an empty table, it is the two steps."""
    from dlq_pipeline.rules.index import RuleIndex

    decoded = set(decoded_struct().fieldNames())
    if decoded <= set(messages.columns):
        return classify_columns(table, messages, attempts_col)
    rules = tuple(table.rules)
    if not rules or not hasattr(F, "arrow_udf"):
        return classify_columns(table, decode_headers(messages), attempts_col)
    columns = list(RuleIndex(table).columns)
    given = [c for c in columns if c not in decoded]  # the MQMD's, as stored
    prepared, arguments = decode_inputs(messages)
    rest = F.expr(
        f"struct(NOT coalesce(`truncated`, false) AS whole, {_attempts_sql(attempts_col)} AS attempts"
        f"{''.join(f', {sql_column(c)}' for c in given)})"
    )
    both = prepared.withColumn(_DECIDED, _decide_udf(table, columns)(*arguments, rest))
    picked = both.select(*decoded_columns(messages, _DECIDED), F.col(f"{_DECIDED}.{_PICK}").alias(_PICK))
    return _with_outputs(picked, rules)


_DECIDED = "__dlq_decided"


def _decide_udf(table: RulesTable, columns: list[str]):
    """The Arrow UDF of `decode_and_classify_columns`: the decode UDF's arguments and a
    struct (whole: not truncated, attempts, the tested MQMD columns) -> the decode struct
    with the choice (``_PICK``) as its last field. The index is built once per task."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql.types import IntegerType, StructField, StructType

    from dlq_pipeline.mq.dlh_arrow_decoder import decode_dlh_arrow
    from dlq_pipeline.rules.index import RuleIndex

    held: dict = {}

    def fields(struct) -> dict:
        kind = struct.type
        return dict(zip((kind.field(i).name for i in range(kind.num_fields)), struct.flatten()))

    def decide_arrow(head, _head_again, tail, length, encoding, ccsid, md_format, rest):
        decoded = fields(decode_dlh_arrow(head, tail, length, encoding, ccsid, md_format))
        given = fields(rest)
        eligible = pc.and_(pc.fill_null(decoded["has_dlh"], False), given["whole"])
        index = held.get("index") or held.setdefault("index", RuleIndex(table))
        values = {c: decoded[c] if c in decoded else given[c] for c in columns}
        pick = pa.array(index.choices(values, eligible, given["attempts"]).astype(np.int32), pa.int32())
        return pa.StructArray.from_arrays([*decoded.values(), pick], names=[*decoded, _PICK])

    returned = StructType([*decoded_struct().fields, StructField(_PICK, IntegerType(), True)])
    # pyspark's overloads all want functionType; without it Spark makes a scalar Arrow UDF
    return F.arrow_udf(decide_arrow, returnType=returned)  # type: ignore[call-overload]


# --- a transform for a user's own query (docs/api.md) ------------------------------------------

_ATTEMPTS = "__dlq_attempts"


def decide(
    rules: RulesTable | str | os.PathLike[str], *, attempts: int | str | Column | None = None
) -> Callable[[DataFrame], DataFrame]:
    """A `DataFrame.transform` step that decides each message with ``rules`` (a `RulesTable`,
    or a rules file's path, loaded with `rules.parser.load_rules`): it adds the ``decisions``
    table's decision columns (``action``, ``rule_line``, ``target_q``, ``target_qmgr``, ...)
    with IBM's semantics, exactly as a run decides, and the decoded MQDLH's columns where the
    frame has none yet (`mq.spark.decode_dlh`). ``attempts`` is each message's count of
    attempts already made (RETRY(n) compares with it): a number, a column (name), or none (0).
    A bad record's row from a data source (``error_code`` set) gets no decision (nulls).

    RETRYINT needs the time of the last attempt, which a run takes from its ledger: a run's
    ``not_before`` is not among the columns."""
    from dlq_pipeline.rules.parser import load_rules

    table = rules if isinstance(rules, RulesTable) else load_rules(os.fspath(rules))
    if attempts is None or isinstance(attempts, int):
        count = F.lit(attempts or 0)
    else:
        count = F.col(attempts) if isinstance(attempts, str) else attempts

    def step(df: DataFrame) -> DataFrame:
        decided = decode_and_classify_columns(table, df.withColumn(_ATTEMPTS, count), _ATTEMPTS).drop(_ATTEMPTS)
        if "error_code" in df.columns:
            message = F.col("error_code").isNull()
            decided = decided.withColumns({c: F.when(message, F.col(c)) for c in DECISION_COLUMNS})
        return decided

    return step
