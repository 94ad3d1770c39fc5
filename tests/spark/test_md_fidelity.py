"""A whole run puts the MQMD back byte for byte: a dmpmqmsg dump from a Latin-1
queue manager (UserIdentifier, PutApplName, ReplyToQ holding bytes that are not UTF-8) is
landed, decided exactly as `rules test` decides, and replayed to ``sim:`` and ``dir:`` with
the descriptor MQ would get identical to the original's, and FWDQ(&REPLYQ) opening the
queue the message named (before: U+FFFD in all of them, a 14-byte UserIdentifier, and a
different queue)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from click.testing import CliRunner
from pyspark.sql import functions as F

from dlq_pipeline.cli import cli
from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import RunSettings, StorageSettings
from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.mq.client import md_fields
from dlq_pipeline.mq.mqmd import MQMD, bytes_to_text
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.mq.structures import DeadLetterHeader, encode_dlh
from dlq_pipeline.pipeline import run_pipeline
from dlq_pipeline.replay.rebuild import rebuild
from dlq_pipeline.replay.targets import LOCAL_QMGR_DIR
from dlq_pipeline.rules.model import Decision
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.rules.whatif import OUTPUT_KEYS
from dlq_pipeline.warehouse.storage import open_storage

pytestmark = pytest.mark.spark

TABLE = """\
REASON(MQRC_Q_FULL) APPLNAME('Caf?Kasse.exe') ACTION(RETRY) RETRY(1)
REASON(MQRC_UNKNOWN_OBJECT_NAME) ACTION(FWD) FWDQ(&REPLYQ) FWDQM(&REPLYQM) HEADER(YES)
"""
LATIN1_Q = b"R\xc9PONSE.Q"  # RÉPONSE.Q in CCSID 819/1252
NOW = dt.datetime(2026, 3, 2, 8, tzinfo=dt.UTC)


def dead_letter(n: int, reason: int, reply_to_q: bytes) -> tuple[MQMD, bytes]:
    md = MQMD(
        version=2,
        encoding=546,
        ccsid=819,
        format="MQDEAD  ",
        persistence=1,
        priority=4,
        msg_id=b"M" + bytes([n]) * 23,
        correl_id=b"C" * 24,
        user_id=bytes_to_text(b"J\xfcrgen".ljust(12)),
        put_appl_name=bytes_to_text(b"Caf\xe9Kasse.exe".ljust(28)),
        put_date="20260301",
        put_time="10000000",
        reply_to_q=bytes_to_text(reply_to_q.ljust(48)),
        reply_to_qmgr=" " * 48,
        appl_identity_data=bytes_to_text(b"\xa7 ident".ljust(32)),
    )
    dlh = DeadLetterHeader(
        reason=reason,
        dest_q="APP.IN".ljust(48),
        dest_qmgr="SIM".ljust(48),
        encoding=546,
        ccsid=819,
        format="MQSTR   ",
        put_appl_type=7,
        put_appl_name="QM1".ljust(28),
    )
    return md, encode_dlh(dlh, 546, 819) + b"payload %d" % n


MESSAGES = [dead_letter(0, 2053, b"PLAIN.REPLY"), dead_letter(1, 2085, b"PLAIN.REPLY"), dead_letter(2, 2085, LATIN1_Q)]


@pytest.fixture
def latin1_dump(tmp_path):
    path = tmp_path / "latin1.dmp"
    write_dump(MESSAGES, path, qmgr="QM1", queue="SYSTEM.DEAD.LETTER.QUEUE")
    assert [(m.md, m.data) for m in read_dump(str(path))] == MESSAGES  # the dump holds the exact bytes
    return path


def run(spark, tmp_path, name: str, dump, target: str):
    rules = tmp_path / "t.rules"
    rules.write_text(TABLE)
    table = parse_rules(TABLE, str(rules))
    assert table.ok, table.diagnostics
    config = load_config(None, overrides={"storage": {"path": str(tmp_path / name)}})
    summary = run_pipeline(
        spark, RunSettings.from_config(config), table, inputs=[str(dump)], target=target, run_id=f"run-{name}", now=NOW
    )
    return summary, open_storage(spark, StorageSettings.from_config(config)), str(rules)


def test_a_run_puts_the_latin1_descriptor_back_byte_for_byte(spark, tmp_path, latin1_dump):
    retried = rebuild(*MESSAGES[0], Decision("RETRY"))

    summary, storage, rules = run(spark, tmp_path, "wh-sim", latin1_dump, "sim:")
    ledger = {r["message_key"]: r for r in storage.read("ledger").collect()}
    stored = {r["source_index"]: r for r in storage.read("messages").collect()}
    outcomes = {
        i: (
            ledger[stored[i]["message_key"]]["outcome"],
            ledger[stored[i]["message_key"]]["target_q"],
            ledger[stored[i]["message_key"]]["reason_code"],
        )
        for i in stored
    }
    # No queue can be named with byte 0xC9: the queue manager refuses the exact name (2085).
    assert outcomes == {
        0: ("delivered", "APP.IN", 0),
        1: ("delivered", "PLAIN.REPLY", 0),
        2: ("failed", "R\ufffdPONSE.Q", 2085),
    }
    assert "R\\udcc9PONSE.Q" in ledger[stored[2]["message_key"]]["error_text"]  # the exact name was asked for
    sim = SimQueueManager(tmp_path / "wh-sim" / "_sim" / "SIM.sqlite", "SIM")
    puts = {p.queue: p for p in sim.put_log()}
    assert sorted(puts) == ["APP.IN", "PLAIN.REPLY"]
    assert (md_fields(puts["APP.IN"].md), puts["APP.IN"].data) == (md_fields(retried[0]), retried[1])
    assert (md_fields(puts["PLAIN.REPLY"].md), puts["PLAIN.REPLY"].data) == (md_fields(MESSAGES[1][0]), MESSAGES[1][1])
    assert md_fields(puts["APP.IN"].md)["UserIdentifier"] == b"J\xfcrgen".ljust(12)

    # The table stays readable; the exact bytes are beside; nothing else is flagged.
    row = stored[2]
    assert row["user_id"] == "J\ufffdrgen".ljust(12) and row["reply_to_q"] == "R\ufffdPONSE.Q".ljust(48)
    assert {k: bytes(v) for k, v in row["md_char_bytes"].items()} == {
        "reply_to_q": LATIN1_Q.ljust(48),
        "user_id": b"J\xfcrgen".ljust(12),
        "appl_identity_data": b"\xa7 ident".ljust(32),
        "put_appl_name": b"Caf\xe9Kasse.exe".ljust(28),
    }
    assert stored[0]["md_char_bytes"].keys() == {"user_id", "appl_identity_data", "put_appl_name"}
    assert summary.quarantined == 0 and summary.messages_without_dlh == 0
    assert summary.outcomes == {"delivered": 2, "failed": 1}

    # Spark decided what `rules test` (the reference matcher) predicts, APPLNAME on the stored text.
    fields = OUTPUT_KEYS[2:]
    result = CliRunner().invoke(
        cli, ["rules", "test", rules, "--json", "--input", str(latin1_dump)], catch_exceptions=False
    )
    predicted = {o["index"]: {k: o[k] for k in fields} for o in map(json.loads, result.stdout.splitlines())}
    decisions = storage.read("decisions").where(F.col("run_id") == "run-wh-sim").collect()
    assert {r["source_index"]: {k: r[k] for k in fields} for r in decisions} == predicted
    assert [predicted[i]["action"] for i in range(3)] == ["RETRY", "FWD", "FWD"]


def test_a_dir_replay_writes_the_latin1_descriptor_to_the_queue_it_names(spark, tmp_path, latin1_dump):
    out = tmp_path / "out"
    summary, _, _ = run(spark, tmp_path, "wh-dir", latin1_dump, f"dir:{out}")
    assert summary.outcomes == {"delivered": 3} and summary.exit_status == 0
    root = out / "run-wh-dir"
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.dmp")) == [
        f"{LOCAL_QMGR_DIR}/PLAIN.REPLY.dmp",
        f"{LOCAL_QMGR_DIR}/R-C9PONSE.Q.dmp",
        "SIM/APP.IN.dmp",
    ]

    def read(name):
        folder = "SIM" if name == "APP.IN.dmp" else LOCAL_QMGR_DIR
        return [(md_fields(m.md), m.data) for m in read_dump(str(root / folder / name))]

    retried = rebuild(*MESSAGES[0], Decision("RETRY"))
    assert read("APP.IN.dmp") == [(md_fields(retried[0]), retried[1])]
    assert read("PLAIN.REPLY.dmp") == [(md_fields(MESSAGES[1][0]), MESSAGES[1][1])]
    assert read("R-C9PONSE.Q.dmp") == [(md_fields(MESSAGES[2][0]), MESSAGES[2][1])]
