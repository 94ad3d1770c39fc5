"""Decode and classify stages against the pure oracles, on the generator's realistic DLQ."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import replace

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F

from dlq_pipeline.classify.spark import DecisionCounts, classify_pending, decide_pending, decision_counts
from dlq_pipeline.dumps.generator import generate_messages, write_generated
from dlq_pipeline.dumps.sources import read_source
from dlq_pipeline.ingest.spark import ingest
from dlq_pipeline.mq.dlh_decoder import chain_possible, decode_dlh, dlh_head, to_columns
from dlq_pipeline.mq.spark import chain_possible_sql, decode_headers, decoded_struct, head_sql, without_data
from dlq_pipeline.rules.matcher import decide
from dlq_pipeline.rules.parser import load_rules
from dlq_pipeline.rules.view import match_view
from dlq_pipeline.tables.identity import data_digest, message_key
from dlq_pipeline.warehouse.ledger import message_states, pending_with_attempts
from dlq_pipeline.warehouse.schemas import table_schema
from dlq_pipeline.warehouse.storage import Storage
from tests.support import REPO

NOW = dt.datetime(2026, 11, 21, 12, 0, 0)
STARTER = REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules"


def _chained_rows() -> list[tuple[bytes, int, int, str]]:
    """Header chains the generator makes rarely: z/OS (big-endian EBCDIC) and Linux MQDLHs
    followed by an MQXQH, an MQRFH2 or a nested MQDLH, and a Format naming a header that
    is not there."""
    from dlq_pipeline.mq.mqmd import MQMD
    from dlq_pipeline.mq.structures import (
        DeadLetterHeader,
        RulesFormattingHeader2,
        TransmissionQueueHeader,
        encode_dlh,
        encode_rfh2,
        encode_xqh,
    )

    rows = []
    for encoding, ccsid in ((785, 500), (785, 1047), (546, 819), (546, 1208)):
        xqh = encode_xqh(TransmissionQueueHeader("REMOTE.Q", "QM9", MQMD(format="MQSTR")), encoding, ccsid)
        rfh2 = encode_rfh2(RulesFormattingHeader2(encoding=encoding, ccsid=ccsid, format="MQSTR"), encoding, ccsid)
        for fmt, tail in (("MQXMIT", xqh), ("MQHRF2", rfh2), ("MQDEAD", b"short"), ("MQSTR", b"x" * 500)):
            dlh = DeadLetterHeader(
                reason=2053,
                dest_q="APP.Q",
                dest_qmgr="QM1",
                encoding=encoding,
                ccsid=ccsid,
                format=fmt,
                put_appl_name="QM1",
            )
            rows.append((encode_dlh(dlh, encoding, ccsid) + tail, encoding, ccsid, "MQDEAD  "))
    return rows


@pytest.mark.parametrize("arrow", [True, False], ids=["arrow_udf", "pandas_udf"])
def test_udf_decode_equals_the_pure_decoder(spark, arrow):
    """Both UDF forms (Arrow on Spark 4.1+, pandas before) decode as the pure decoder, with
    what the JVM ships: 172 bytes, and the rest only where a chain may follow."""
    messages = [
        (m.data, m.md.encoding, m.md.ccsid, m.md.format) for m in generate_messages(400, seed=11, max_size=64 * 1024)
    ] + _chained_rows()
    rows = [Row(message_key=str(i), data=d, encoding=e, ccsid=c, format=f) for i, (d, e, c, f) in enumerate(messages)]
    df = spark.createDataFrame(rows, "message_key string, data binary, encoding int, ccsid int, format string")
    decoded = decode_headers(df, arrow=arrow).orderBy(df.message_key.cast("int")).collect()
    names = [f.name for f in decoded_struct().fields]
    got = [{n: r[n] for n in names} for r in decoded]
    expected = [to_columns(decode_dlh(*m)) for m in messages]
    assert got == expected
    assert {r["has_dlh"] for r in got} == {True, False}
    assert {"MQXMIT>MQSTR", "MQHRF2>MQSTR"} <= {r["dlh_chain"] for r in got}


def test_the_payload_is_not_queued_beside_the_decode_udf(spark):
    """Spark queues every row that goes into a Python UDF until its result is back: the
    UDF's input is a projection of its own without ``data`` when nothing after decode reads
    it (classify), and keeps it when something does."""
    df = spark.createDataFrame(
        [("k", b"x" * 300, 546, 819, "MQSTR")],
        "message_key string, data binary, encoding int, ccsid int, format string",
    )

    def udf_input(plan) -> list[str]:
        for node in _plan_nodes(plan):
            if node.nodeName() in ("ArrowEvalPython", "ArrowEvalPythonExec"):
                child = node.children().apply(0)
                return [child.output().apply(i).name() for i in range(child.output().size())]
        raise AssertionError(f"no ArrowEvalPython in {plan._jdf.queryExecution().executedPlan()}")

    decoded = decode_headers(df, arrow=True)
    assert "data" not in udf_input(decoded.select("message_key", "dlh_dest_q"))
    assert "data" in udf_input(decoded.select("data", "dlh_dest_q"))
    assert decoded.select("data", "dlh_problem").first() == (b"x" * 300, "bad_strucid")


def test_the_jvm_ships_the_tail_exactly_where_the_decoder_may_need_it(spark):
    """`chain_possible_sql` in Spark == `dlh_decoder.chain_possible` on every message."""
    messages = [m.data for m in generate_messages(300, seed=12, max_size=4096)] + [d for d, *_ in _chained_rows()]
    df = spark.createDataFrame([(i, d) for i, d in enumerate(messages)], "i int, data binary")
    got = {
        r["i"]: (r["p"], bytes(r["h"]))
        for r in df.select(
            "i", F.expr(chain_possible_sql("data")).alias("p"), F.expr(head_sql("data")).alias("h")
        ).collect()
    }
    assert got == {i: (chain_possible(d), dlh_head(d)) for i, d in enumerate(messages)}
    assert 0 < sum(p for p, _ in got.values()) < len(got)


@pytest.fixture(scope="module")
def landed(spark, tmp_path_factory):
    """A generated DLQ landed in a fresh warehouse."""
    root = tmp_path_factory.mktemp("pipeline")
    paths = write_generated(root / "dumps", 600, seed=5, files=2, max_size=32 * 1024)
    storage = Storage(spark, path=str(root / "warehouse"))
    ingest(spark, storage, [str(p) for p in paths], run_id="land-1")
    originals = {}
    for path in paths:
        for msg in read_source(str(path)):
            originals[message_key(msg.md, data_digest(msg.data))] = msg
    return storage, originals


def _oracle(table, originals, attempts_of=lambda key: 0):
    out = {}
    for key, msg in originals.items():
        d = decide(table, match_view(msg.md, msg.data, truncated=msg.truncated), attempts_of(key))
        out[key] = (d.action, d.rule_line, d.rule_index, d.target_q, d.target_qmgr, d.header, d.putaut, d.ignore_reason)
    return out


def _decided(decisions):
    return {
        r.message_key: (
            r.action,
            r.rule_line,
            r.rule_index,
            r.target_q,
            r.target_qmgr,
            r.header,
            r.putaut,
            r.ignore_reason,
        )
        for r in decisions.collect()
    }


def test_classify_equals_the_reference_matcher_for_every_message(spark, landed):
    storage, originals = landed
    table = load_rules(STARTER)
    assert table.ok
    pending = pending_with_attempts(storage.read("messages"), storage.read("ledger"))
    decisions = classify_pending(decode_headers(pending), table, run_id="r1", now=NOW)
    assert decisions.schema == table_schema("decisions")
    assert _decided(decisions) == _oracle(table, originals)
    actions = {r.action for r in decisions.select("action").distinct().collect()}
    assert {"RETRY", "FWD", "IGNORE"} <= actions


def _ledger_row(key, *, outcome, rule_line, at, action="RETRY"):
    return Row(
        run_id="earlier",
        message_key=key,
        action=action,
        rule_line=rule_line,
        attempt=1,
        target_q="Q",
        target_qmgr="QM",
        outcome=outcome,
        reason_code=2053 if outcome == "failed" else 0,
        error_text=None,
        started_at=at,
        finished_at=at,
        partition_id=0,
        batch_id=0,
    )


def test_attempts_from_the_ledger_drive_the_retry_chain_and_retryint(spark, landed):
    storage, originals = landed
    table = load_rules(STARTER)
    first = classify_pending(
        decode_headers(pending_with_attempts(storage.read("messages"), storage.read("ledger"))),
        table,
        run_id="r1",
        now=NOW,
    )
    retried = [r for r in first.collect() if r.action == "RETRY"][:3]
    delivered = [r for r in first.collect() if r.action == "FWD"][:2]
    assert len(retried) == 3 and len(delivered) == 2
    old, recent = NOW - dt.timedelta(hours=1), NOW - dt.timedelta(seconds=10)
    rows = [_ledger_row(r.message_key, outcome="failed", rule_line=r.rule_line, at=old) for r in retried]
    rows.append(_ledger_row(retried[0].message_key, outcome="failed", rule_line=retried[0].rule_line, at=recent))
    rows.append(_ledger_row(retried[1].message_key, outcome="dry_run", rule_line=retried[1].rule_line, at=recent))
    rows += [
        _ledger_row(r.message_key, outcome="delivered", rule_line=r.rule_line, at=old, action="FWD") for r in delivered
    ]
    ledger = spark.createDataFrame(rows, table_schema("ledger"))

    states = {r.message_key: (r.prior_attempts, r.ended) for r in message_states(ledger).collect()}
    assert states[retried[0].message_key] == (2, False)
    assert states[retried[1].message_key] == (1, False)  # a dry run is not an attempt
    assert states[delivered[0].message_key] == (1, True)

    attempts = {k: v[0] for k, v in states.items()}
    second = classify_pending(
        decode_headers(pending_with_attempts(storage.read("messages"), ledger)), table, run_id="r2", now=NOW
    )
    ended = {r.message_key for r in delivered}
    expected = {k: v for k, v in _oracle(table, originals, lambda k: attempts.get(k, 0)).items() if k not in ended}
    assert _decided(second) == expected

    by_key = {r.message_key: r for r in second.collect()}
    again = by_key[retried[0].message_key]
    if again.rule_line == retried[0].rule_line:  # same rule, last try 10 s ago: RETRYINT defers it
        assert again.not_before == recent + dt.timedelta(seconds=table.control.retryint)
    assert by_key[retried[2].message_key].not_before is None  # last try an hour ago
    assert again.attempt == 3


def _plan_nodes(df):
    """Every node of ``df``'s executed plan (under adaptive execution, of its current plan)."""
    todo = [df._jdf.queryExecution().executedPlan()]
    while todo:
        node = todo.pop()
        yield node
        if node.nodeName() == "AdaptiveSparkPlan":
            todo.append(node.executedPlan())
        todo.extend(node.children().apply(i) for i in range(node.children().size()))


def _scans(plan) -> list:
    """The Parquet scans of an executed plan (leaves), as (output column names, rows read)."""
    return [
        (
            [node.output().apply(i).name() for i in range(node.output().size())],
            node.metrics().apply("numOutputRows").value(),
        )
        for node in _plan_nodes(plan)
        if node.nodeName().startswith("Scan parquet")
    ]


def test_classify_reads_the_stored_head_and_data_only_of_rows_landed_before_it(spark, landed, tmp_path):
    """Classify decodes ``data_head`` (ingest stores it), never ``data``; a warehouse written
    before the column existed (its files have none) still decides every message as the
    oracle, its older rows decoded from ``data``, and only those rows' data is read: the
    scan that reads ``data`` skips the row groups written since (Parquet statistics)."""
    storage, originals = landed
    stored = storage.read("messages")
    assert stored.where(F.col("data_head").isNull()).isEmpty()
    older_keys = sorted(originals)[::2]
    old = Storage(spark, path=str(tmp_path / "warehouse"))
    older = stored.where(F.col("message_key").isin(older_keys))
    older.drop("data_head").coalesce(1).write.parquet(old.location("messages"))  # as an older version wrote it
    old.append("messages", stored.where(~F.col("message_key").isin(older_keys)).coalesce(1))

    heads = without_data(old.read("messages"))
    assert "data" not in heads.columns
    plan = heads.select("message_key", "data_head")
    got = {r["message_key"]: bytes(r["data_head"]) for r in plan.collect()}
    assert got == {k: dlh_head(m.data) for k, m in originals.items()}
    reading_data = [rows for output, rows in _scans(plan) if "data" in output]
    assert reading_data == [len(older_keys)]  # not the rows of the file written with data_head

    table = load_rules(STARTER)
    decisions, counts = decide_pending(spark, old, table, run_id="r1", now=NOW)
    try:
        expected = _oracle(table, originals)
        assert _decided(decisions) == expected
        # counted by the write itself (an observation), as the oracle's decisions count
        actions = Counter(d[0] for d in expected.values())
        reasons = Counter(d[-1] for d in expected.values() if d[-1] is not None)
        assert len(actions) > 1 and reasons
        assert counts == DecisionCounts(len(expected), dict(sorted(actions.items())), dict(sorted(reasons.items())))
        assert counts == replace(decision_counts(decisions), puts_per_queue=None)
    finally:
        decisions.unpersist()


# --- decode and the rule choice in one Python UDF (what decide_pending runs) --------------


def _python_evaluations(df) -> int:
    """The Python UDF evaluations in ``df``'s executed plan: each is a Python worker per task."""
    return sum(
        node.nodeName() in ("ArrowEvalPython", "ArrowEvalPythonExec", "BatchEvalPython") for node in _plan_nodes(df)
    )


def _tables_from(values: dict[str, list], seed: int, count: int) -> list:
    """Random tables whose patterns are made of the values the messages hold (exact, a
    prefix with ``*``, a ``?`` in place of a character), with RETRY counts that make
    cumulative chains: decisions of every kind, not a table that matches nothing."""
    import random

    from dlq_pipeline.rules.model import PATTERN_FIELDS, Rule, RulesTable

    rnd = random.Random(seed)
    keywords = [k for k, (column, _kind, _n) in PATTERN_FIELDS.items() if values.get(column)]

    def pattern(keyword):
        column, kind, _ = PATTERN_FIELDS[keyword]
        value = rnd.choice(values[column])
        if kind == "int" or not value:
            return value
        value = value.rstrip(" \x00") or value
        shape = rnd.random()
        if shape < 0.3 and len(value) > 2:
            return value[: rnd.randint(1, len(value) - 1)] + "*"
        if shape < 0.4:
            at = rnd.randrange(len(value))
            return value[:at] + "?" + value[at + 1 :]
        return value

    tables = []
    for n in range(count):
        rules = []
        for index in range(rnd.randint(1, 12)):
            tested = {k: pattern(k) for k in rnd.sample(keywords, rnd.randint(0, 3))}
            action = rnd.choice(["RETRY", "RETRY", "FWD", "FWD", "DISCARD", "IGNORE"])
            rules.append(
                Rule(
                    line=2 * index + 1,
                    index=index,
                    patterns=tested,
                    action=action,
                    retry=rnd.randint(1, 3),
                    fwdq=rnd.choice(["&DESTQ", "&REPLYQ", "DLQ.REVIEW"]) if action == "FWD" else None,
                    fwdqm=rnd.choice([None, "&DESTQM", "QM2"]) if action == "FWD" else None,
                )
            )
        tables.append(RulesTable(path=f"random-{seed}-{n}.rules", rules=tuple(rules)))
    return tables


def test_decode_and_choice_in_one_udf_decide_as_decode_then_classify(spark, landed):
    """`classify_pending` of stored messages (one Python UDF: decode, then the choice on its
    output) gives the same decisions rows as of decoded ones (`decode_headers`, two UDFs), for
    the starter table and random tables made of the messages' own values, with attempts in the
    ledger (cumulative RETRY) and header chains, z/OS and truncated messages among them."""
    from dlq_pipeline.rules.model import PATTERN_FIELDS, RulesTable

    storage, _originals = landed
    stored = storage.read("messages")
    extra = [
        (f"chained-{i}", data, encoding, ccsid, fmt, i % 3 == 0)
        for i, (data, encoding, ccsid, fmt) in enumerate(_chained_rows())
    ]
    frame = spark.createDataFrame(
        extra, "message_key string, data binary, encoding int, ccsid int, format string, truncated boolean"
    )
    # the chained rows in the stored messages' shape (their data_head computed from data)
    padded = (
        stored.limit(len(extra))
        .drop("message_key", "data", "encoding", "ccsid", "format", "truncated", "data_head")
        .withColumn("_n", F.monotonically_increasing_id())
    )
    extra_rows = frame.withColumn("_n", F.monotonically_increasing_id())
    messages = stored.unionByName(
        padded.join(extra_rows, "_n").drop("_n").withColumn("data_head", F.expr(head_sql("data"))),
        allowMissingColumns=True,
    )
    keys = [r.message_key for r in stored.select("message_key").orderBy("message_key").collect()]
    at = NOW - dt.timedelta(hours=1)
    ledger = spark.createDataFrame(
        [_ledger_row(k, outcome="failed", rule_line=1 + 2 * (n % 4), at=at) for n, k in enumerate(keys[::3])]
        + [_ledger_row(k, outcome="failed", rule_line=3, at=at) for k in keys[::6]],
        table_schema("ledger"),
    )
    # one partition: each table's part of the union is then one task (one Python worker)
    pending = pending_with_attempts(without_data(messages), ledger).coalesce(1).cache()
    try:
        columns = [column for column, _kind, _n in PATTERN_FIELDS.values()]
        view = decode_headers(pending).select(*columns).distinct().collect()
        values = {c: sorted({r[c] for r in view if r[c] is not None}, key=str) for c in columns}
        tables = [load_rules(STARTER), RulesTable("empty")] + _tables_from(values, seed=16, count=5)

        def decisions(form):
            parts = [form(pending, t).withColumn("table", F.lit(n)) for n, t in enumerate(tables)]
            while len(parts) > 1:
                parts = [
                    parts[i].unionByName(parts[i + 1]) if i + 1 < len(parts) else parts[i]
                    for i in range(0, len(parts), 2)
                ]
            return sorted(parts[0].collect(), key=lambda r: (r["table"], r["message_key"]))

        one = decisions(lambda p, t: classify_pending(p, t, run_id="r", now=NOW))
        two = decisions(lambda p, t: classify_pending(decode_headers(p), t, run_id="r", now=NOW))
        assert len(one) == len(tables) * pending.count()
        assert one == two
        assert {r["action"] for r in one} == {"RETRY", "FWD", "DISCARD", "IGNORE"}  # not vacuous
        assert {"no_dlh", "truncated", "no_match", "retries_exhausted"} <= {r["ignore_reason"] for r in one}
        assert {r["attempt"] for r in one if r["action"] in ("RETRY", "FWD")} >= {1, 2, 3}
        # the point of it: one Python evaluation where decode then classify has two
        table = tables[0]
        assert _python_evaluations(classify_pending(pending, table, run_id="r", now=NOW)) == 1
        assert _python_evaluations(classify_pending(decode_headers(pending), table, run_id="r", now=NOW)) == 2
    finally:
        pending.unpersist()
