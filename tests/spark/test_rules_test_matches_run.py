"""`rules test --json` (pure Python, the reference matcher) must predict exactly what `run`
decides in Spark (ingest, decode UDF, compiled rules) for the same inputs: generated
dmpmqmsg dumps (z/OS EBCDIC, AIX, Linux, Windows headers, messages without an MQDLH), an
amqsbcg listing and a real MQ dump."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from click.testing import CliRunner
from pyspark.sql import functions as F

from dlq_pipeline.classify.spark import classify_pending
from dlq_pipeline.cli import cli
from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import RunSettings, StorageSettings
from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.mq.spark import decode_headers
from dlq_pipeline.pipeline import run_pipeline
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.rules.whatif import OUTPUT_KEYS
from dlq_pipeline.warehouse.storage import open_storage
from tests.support import REPO

pytestmark = pytest.mark.spark

# Every action, a cumulative RETRY chain (Q_FULL then PAYMENT*.REQUEST), explicit IGNORE,
# every & token, HEADER(NO), PUTAUT(CTX), ?-wildcards, FWDQM(' '), and no catch-all, so
# messages also stay for no_match and retries_exhausted.
TABLE = """\
INPUTQM(' ') INPUTQ(' ') RETRYINT(0) WAIT(NO)
REASON(MQRC_Q_FULL) ACTION(RETRY) RETRY(2)
DESTQ(PAYMENT*.REQUEST) ACTION(RETRY) RETRY(1) PUTAUT(CTX)
REASON(MQRC_BACKOUT_THRESHOLD_REACHED) ACTION(IGNORE)
REASON(MQRC_NOT_AUTHORIZED) ACTION(FWD) FWDQ(DEADQ.MANUAL.SECURITY) HEADER(NO)
REASON(MQRC_UNKNOWN_OBJECT_NAME) REPLYQ(?*) ACTION(FWD) FWDQ(&REPLYQ) FWDQM(&REPLYQM)
DESTQM(CSQ?) ACTION(FWD) FWDQ(&DESTQ) FWDQM(&DESTQM) RETRY(2)
PERSIST(MQPER_NOT_PERSISTENT) ACTION(DISCARD)
FORMAT(MQSTR) DESTQ(*.IN) ACTION(FWD) FWDQ(STRINGS.IN) FWDQM(' ')
"""
FIELDS = OUTPUT_KEYS[2:]  # everything but file and index


def predicted(rules: str, inputs: list[str], attempts: int) -> tuple[dict, int]:
    args = ["rules", "test", rules, "--json", "--attempts", str(attempts)]
    for path in inputs:
        args += ["--input", path]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    return {(o["file"], o["index"]): {k: o[k] for k in FIELDS} for o in objects}, result.exit_code


def decided(rows) -> dict:
    return {(r["source_file"], r["source_index"]): {k: r[k] for k in FIELDS} for r in rows}


def test_run_decides_exactly_what_rules_test_predicts(spark, tmp_path, real_fixtures):
    rules = tmp_path / "t.rules"
    rules.write_text(TABLE)
    table = parse_rules(TABLE, str(rules))
    assert table.ok, table.diagnostics
    dumps = [str(p) for p in write_generated(tmp_path / "dumps", 240, seed=11, files=2, max_size=16 * 1024)]
    inputs = [
        *dumps,
        str(REPO / "tests" / "fixtures" / "amqsbcg-94.txt"),
        str(real_fixtures / "mq10-dmpmqmsg-stdout.dmp"),
    ]

    want0, status = predicted(str(rules), inputs, 0)
    assert status == 3  # amqsbcg could not get one message of the listing: a bad record
    config = load_config(None, overrides={"storage": {"path": str(tmp_path / "wh")}})
    summary = run_pipeline(
        spark,
        RunSettings.from_config(config),
        table,
        inputs=inputs,
        target="dry-run",
        run_id="r1",
        now=dt.datetime(2026, 1, 2, 3, 4, 5),
    )
    assert summary.quarantined == 1
    storage = open_storage(spark, StorageSettings.from_config(config))
    got0 = decided(storage.read("decisions").where(F.col("run_id") == "r1").collect())
    assert got0 == want0

    # The same stages after two attempts on every message: the chain moves on.
    want2, _ = predicted(str(rules), inputs, 2)
    pending = storage.read("messages").select(
        "*",
        F.lit(2).alias("prior_attempts"),
        F.lit(None).cast("struct<at:timestamp,rule_line:int>").alias("last_attempt"),
    )
    got2 = decided(classify_pending(decode_headers(pending), table, run_id="r2", now=dt.datetime(2026, 1, 2)).collect())
    assert got2 == want2

    # Not vacuous: every input file, every action and every reason to stay on the DLQ.
    assert {f for f, _ in got0} == set(inputs)
    both = list(got0.values()) + list(got2.values())
    assert {d["action"] for d in both} == {"RETRY", "FWD", "DISCARD", "IGNORE"}
    assert {d["ignore_reason"] for d in both} == {None, "no_dlh", "no_match", "retries_exhausted"}
    assert {d["rule_line"] for d in both} >= {2, 3, 4, 5, 6, 7, 8, 9}
    assert got0 != got2
