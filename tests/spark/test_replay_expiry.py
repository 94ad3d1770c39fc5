"""A whole run puts each message with the lifetime it has left since its dump was taken (the
dump's ``Created:`` stamp), and does not deliver one whose lifetime ran out while it was held."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from pyspark.sql import functions as F

from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import RunSettings
from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.mq.structures import DeadLetterHeader, encode_dlh
from dlq_pipeline.pipeline import run_pipeline
from dlq_pipeline.report.spark import build_report
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.warehouse.storage import open_storage

pytestmark = pytest.mark.spark

CREATED = dt.datetime(2026, 12, 1, 11, 0, tzinfo=dt.UTC)  # the dump's stamp, read in UTC (the default zone)
TEN_DAYS, ONE_HOUR = 10 * 86_400 * 10, 3_600 * 10  # in tenths of a second


def dead_letter(n: int, expiry: int) -> tuple[MQMD, bytes]:
    md = MQMD(format="MQDEAD  ", expiry=expiry, msg_id=b"E" + n.to_bytes(4, "big") + b"\x00" * 19, put_date="20261201")
    dlh = DeadLetterHeader(reason=2053, dest_q="APP.Q", dest_qmgr="QM1", format="MQSTR   ")
    return md, encode_dlh(dlh, 546, 819) + b"e%d" % n


def tenths_since(instant: float) -> int:
    return int((instant - CREATED.timestamp()) * 10)


def test_expired_messages_are_not_delivered_and_the_rest_keep_what_is_left(spark, tmp_path):
    inbox, warehouse = tmp_path / "in", tmp_path / "wh"
    inbox.mkdir()
    messages = [dead_letter(1, TEN_DAYS), dead_letter(2, ONE_HOUR), dead_letter(3, -1)]
    write_dump(messages, inbox / "dlq.dmp", qmgr="QM1", queue="DLQ", created="Tue Dec  1 11:00:00 2026")
    config = load_config(overrides={"storage": {"format": "parquet", "path": str(warehouse)}})
    settings = RunSettings.from_config(config)
    table = parse_rules("ACTION(FWD) FWDQ(OUT) HEADER(YES)\n")

    before = time.time()
    run_pipeline(spark, settings, table, inputs=[str(inbox)], target="sim:QM1", run_id="RUN1")
    after = time.time()

    storage = open_storage(spark, settings.storage)
    recorded = storage.read("messages").select(F.unix_micros("recorded_at").alias("us")).distinct().collect()
    assert [r["us"] for r in recorded] == [int(CREATED.timestamp()) * 1_000_000]
    ledger = storage.read("ledger").orderBy("finished_at").collect()
    keys = {bytes(r["msg_id"]): r["message_key"] for r in storage.read("messages").collect()}
    outcome = {r["message_key"]: (r["outcome"], r["error_text"]) for r in ledger}
    assert outcome[keys[messages[0][0].msg_id]] == ("delivered", None)
    assert outcome[keys[messages[2][0].msg_id]] == ("delivered", None)
    expired, why = outcome[keys[messages[1][0].msg_id]]
    assert expired == "expired"
    assert why == "its Expiry of 3600s when recorded at 2026-12-01T11:00:00Z has run out; MQ would have discarded it"

    qm = SimQueueManager(warehouse / "_sim" / "QM1.sqlite", "QM1")
    try:
        put = {r.md.msg_id: r.md.expiry for r in qm.put_log("OUT")}
    finally:
        qm.close()
    assert set(put) == {messages[0][0].msg_id, messages[2][0].msg_id}  # the expired one never reached MQ
    assert TEN_DAYS - tenths_since(after) - 1 <= put[messages[0][0].msg_id] <= TEN_DAYS - tenths_since(before)
    assert put[messages[2][0].msg_id] == -1

    # expired ends the message: the next run decides nothing for it, and the report counts it
    run_pipeline(spark, settings, table, inputs=[str(inbox)], target="sim:QM1", run_id="RUN2")
    assert storage.read("decisions").where(F.col("run_id") == "RUN2").count() == 0
    report = build_report(storage, now=dt.datetime.now(dt.UTC), run_id="RUN1")
    assert {r["outcome"]: r["count"] for r in report["run"]["by_outcome"]} == {"delivered": 2, "expired": 1}
    assert report["pending"]["expiry_unknown"] == 0
