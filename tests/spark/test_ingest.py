"""Ingest: dumps and listings -> messages + quarantine, split reads, idempotent landing.

The oracle for whole outputs is `reference`: a plain sequential Python read of each file with
the readers, turned into rows by hand. Split landing must equal it row for row.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from dlq_pipeline.config.settings import IngestSettings
from dlq_pipeline.dumps.amqsbcg import read_amqsbcg
from dlq_pipeline.dumps.dmpmqmsg import created_time
from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump, read_dump_info
from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.dumps.generator import generate_messages
from dlq_pipeline.dumps.plan import plan_work
from dlq_pipeline.dumps.records import DumpedMessage, RecordError
from dlq_pipeline.dumps.sources import expand_paths
from dlq_pipeline.ingest.spark import KEY_COLUMNS, ingest, land, rows_to_leave_out, scan, skipped_rows
from dlq_pipeline.mq.dlh_decoder import dlh_head
from dlq_pipeline.mq.mqmd import MQMD, bytes_to_text
from dlq_pipeline.runtime.clock import epoch_micros
from dlq_pipeline.runtime.paths import local_path as _local
from dlq_pipeline.tables.identity import data_digest, message_key
from dlq_pipeline.warehouse.schemas import table_schema
from dlq_pipeline.warehouse.storage import Storage
from tests.conftest import make_storage
from tests.profiles import examples
from tests.spark.test_storage import assert_same_rows, expected_struct
from tests.support import REPO

LANDED = dt.datetime(2026, 9, 22, 3, 0, 0, tzinfo=dt.UTC)
RUN = "20260922T030000Z-abcdef"
HEADER = (
    "* DMPMQMSG Version:9.4.0.0 Created:Tue Sep 22 02:34:33 2026\n* Qmgr  = QM9\n* Queue = SYSTEM.DEAD.LETTER.QUEUE\n\n"
)


def md_id(n: int) -> str:
    return f"414D5120514D39{n:034X}"  # 24 bytes of hex


# A dump with three bad records among good ones (docs/message-formats.md §4): an X line with an
# odd number of hex digits in the middle of a message, an unknown attribute code, and
# attribute lines without any data line (the last record).
CORRUPT_RECORDS = [
    ("ok", ["A VER 2", f"A MSI {md_id(1)}", "A FMT MQSTR   ", "A PTD 20260922", "A PTT 02342828", "X 48656C6C6F"]),
    ("odd_length_hex", ["A VER 2", f"A MSI {md_id(2)}", "X 4142", "X 414", "X 43"]),
    ("ok", ["A VER 1", f"A MSI {md_id(3)}", "A PAN payroll", "X 576F726C64", "X 21"]),
    ("unknown_attribute", ["A VER 2", "A QQQ 5", f"A MSI {md_id(4)}", "X 00"]),
    ("ok", ["N", "X "]),  # -dN: default MQMD, zero-length data
    ("missing_data", ["A VER 2", f"A MSI {md_id(6)}"]),
]


def corrupt_text() -> tuple[str, list[tuple[str, int, int]]]:
    """The dump text and, per record, (kind, 1-based line, byte offset) of its first line."""
    text, where = HEADER, []
    for kind, lines in CORRUPT_RECORDS:
        where.append((kind, text.count("\n") + 1, len(text.encode())))
        text += "\n".join(lines) + "\n\n"
    return text, where


def reference(spark, paths, *, kinds=None, run_id=RUN, landed_at=LANDED, zone="UTC"):
    """(messages, quarantine) from a plain full read of each file, in order, built by hand."""
    messages, bad, seen = [], [], set()
    for path in paths:
        path = str(path)
        modified = dt.datetime.fromtimestamp(round(Path(path).stat().st_mtime_ns / 1e9, 6), dt.UTC)
        kind = (kinds or {}).get(path, "dmpmqmsg")
        if kind == "amqsbcg":
            records, qmgr, queue = read_amqsbcg(path, name=path), None, "SYSTEM.DEAD.LETTER.QUEUE"
        else:
            info = read_dump_info(path)
            records, qmgr, queue = read_dump(path, name=path), info.qmgr or None, info.queue or None
        for record in records:
            if isinstance(record, RecordError):
                bad.append(
                    (
                        run_id,
                        path,
                        record.line,
                        record.offset,
                        record.index,
                        record.code,
                        record.message,
                        record.snippet or None,
                        landed_at,
                    )
                )
                continue
            digest = data_digest(record.data)
            key = message_key(record.md, digest)
            if key in seen:
                continue
            seen.add(key)
            md = record.md.as_dict()
            md["md_version"] = md.pop("version")
            length = record.total_length if record.truncated else len(record.data)
            created = created_time(record.header.created, ZoneInfo(zone)) if record.header else None
            messages.append(
                {
                    "message_key": key,
                    "source_kind": kind,
                    "source_qmgr": qmgr,
                    "source_queue": queue,
                    "source_file": path,
                    "source_index": record.index,
                    "source_line": record.line,
                    "source_offset": record.offset,
                    "recorded_at": created or modified,
                    "landed_at": landed_at,
                    "run_id": run_id,
                    **md,
                    "data": record.data,
                    "data_head": dlh_head(record.data),
                    "data_length": length,
                    "data_digest": digest,
                    "truncated": record.truncated,
                    "notes": list(record.notes),
                    "md_char_bytes": None,
                }
            )
    schema = table_schema("messages")
    rows = [tuple(m[f.name] for f in schema.fields) for m in messages]
    return spark.createDataFrame(rows, schema), spark.createDataFrame(bad, table_schema("quarantine"))


@pytest.fixture
def corrupt_dump(tmp_path) -> Path:
    path = tmp_path / "corrupt.dmp"
    path.write_text(corrupt_text()[0])
    return path


# --- the real fixture ---------------------------------------------------------------------

LONG = {
    "VER": "md_version",
    "RPT": "report",
    "MST": "msg_type",
    "EXP": "expiry",
    "FDB": "feedback",
    "ENC": "encoding",
    "CCS": "ccsid",
    "PRI": "priority",
    "PER": "persistence",
    "BOC": "backout_count",
    "PAT": "put_appl_type",
    "MSQ": "msg_seq_number",
    "OFF": "offset",
    "MSF": "msg_flags",
    "ORL": "original_length",
}
CHAR = {
    "FMT": "format",
    "RTQ": "reply_to_q",
    "RTM": "reply_to_qmgr",
    "USR": "user_id",
    "PAN": "put_appl_name",
    "PTD": "put_date",
    "PTT": "put_time",
}
BYTE = {"MSI": "msg_id", "COI": "correl_id", "ACC": "accounting_token", "GRP": "group_id"}
HEXTEXT = {"AIX": "appl_identity_data", "AOX": "appl_origin_data"}


def test_real_dmpmqmsg_fixture_lands_exactly(spark, real_fixtures):
    path = real_fixtures / "mq10-dmpmqmsg-stdout.dmp"
    raw = path.read_bytes()
    messages, quarantine = land(spark, [str(path)], run_id=RUN, landed_at=LANDED)
    assert messages.schema == expected_struct("messages")
    assert quarantine.schema == expected_struct("quarantine")
    assert quarantine.count() == 0
    rows = messages.collect()
    assert len(rows) == 1
    row = rows[0].asDict()

    # every MQMD column as the file's A lines say, read here straight from the text
    expected = {}
    for line in raw.decode("ascii").splitlines():
        if line.startswith("A "):
            code, value = line[2:5], line[6:]
            if code in LONG:
                expected[LONG[code]] = int(value)
            elif code in CHAR:
                expected[CHAR[code]] = value
            elif code in BYTE:
                expected[BYTE[code]] = bytes.fromhex(value)
            else:
                expected[HEXTEXT[code]] = bytes.fromhex(value).decode("ascii")
    assert len(expected) == 28
    assert {k: row[k] for k in expected} == expected
    assert row["reply_to_q"] == " " * 48 and row["put_appl_name"] == "amqsput" + " " * 21

    data = bytes.fromhex("".join(re.findall(r"^X (\w+)$", raw.decode("ascii"), re.M)))
    assert len(data) == 238
    start = raw.index(b"A VER 2")
    assert row["data"] == data
    assert row["data_length"] == 238
    assert row["data_digest"] == data_digest(data)
    assert row["message_key"] == message_key(
        MQMD(**{("version" if k == "md_version" else k): v for k, v in expected.items()}), data_digest(data)
    )
    assert (row["source_kind"], row["source_qmgr"], row["source_queue"]) == ("dmpmqmsg", "QM1", "APP.DLQ")
    assert row["source_file"] == str(path)
    assert (row["source_index"], row["source_offset"], row["source_line"]) == (0, start, raw[:start].count(b"\n") + 1)
    assert row["landed_at"] == LANDED.replace(tzinfo=None)  # the session and this machine run in UTC
    assert (row["run_id"], row["truncated"], row["notes"]) == (RUN, False, [])
    assert_same_rows(messages, reference(spark, [path])[0])


# --- bad records ----------------------------------------------------------------------------


def test_corrupted_dump_quarantines_exactly_the_bad_records(spark, corrupt_dump):
    messages, quarantine = land(spark, [str(corrupt_dump)], run_id=RUN, landed_at=LANDED)
    _, where = corrupt_text()
    bad = sorted((kind, line, offset, index) for index, (kind, line, offset) in enumerate(where) if kind != "ok")
    got = sorted((r.error_code, r.source_line, r.source_offset, r.source_index) for r in quarantine.collect())
    assert got == bad
    for row in quarantine.collect():
        assert row.source_file == str(corrupt_dump)
        assert row.error_text and row.snippet and row.run_id == RUN
    good = [(line, offset, index) for index, (kind, line, offset) in enumerate(where) if kind == "ok"]
    assert sorted((r.source_line, r.source_offset, r.source_index) for r in messages.collect()) == good
    assert sorted(bytes(r.data) for r in messages.collect()) == [b"", b"Hello", b"World!"]
    ref_messages, ref_quarantine = reference(spark, [corrupt_dump])
    assert_same_rows(messages, ref_messages)
    assert_same_rows(quarantine, ref_quarantine)


def test_split_reads_of_a_corrupted_dump_give_the_same_rows(spark, corrupt_dump):
    items = plan_work([str(corrupt_dump)], split_bytes=90)
    assert len(items) > 3
    messages, quarantine = land(spark, [str(corrupt_dump)], run_id=RUN, landed_at=LANDED, split_bytes=90)
    ref_messages, ref_quarantine = reference(spark, [corrupt_dump])
    assert_same_rows(messages, ref_messages)
    assert_same_rows(quarantine, ref_quarantine)


# --- a large dump split across tasks ----------------------------------------------------------


@pytest.fixture(scope="module")
def big_dump(tmp_path_factory) -> Path:
    """~1 MB: 300 generated dead letters, with the corrupted records and a repeated message
    in the middle, so bad records and a duplicate fall in splits that start mid-file."""
    out = tmp_path_factory.mktemp("big")
    generated = list(generate_messages(300, seed=11, max_size=3000))
    first, second = out / "first.part", out / "second.part"
    write_dump(generated[:170], first, qmgr="QMHUB01", queue="SYSTEM.DEAD.LETTER.QUEUE")
    write_dump(generated[170:] + [generated[5]], second)
    body = second.read_text(errors="surrogateescape").split("\n", 1)[1]  # drop its header line
    middle = "".join("\n".join(lines) + "\n\n" for _, lines in CORRUPT_RECORDS[:-1])
    tail = "\n".join(CORRUPT_RECORDS[-1][1]) + "\n"
    path = out / "big.dmp"
    path.write_bytes(
        (first.read_text(errors="surrogateescape") + middle + body + "\n" + tail).encode(errors="surrogateescape")
    )
    first.unlink()
    second.unlink()
    return path


def test_a_large_dump_is_split_across_tasks_and_lands_as_a_full_read(spark, big_dump):
    split_bytes = big_dump.stat().st_size // 7
    items = plan_work([str(big_dump)], split_bytes=split_bytes)
    assert len(items) >= 7 and {i.path for i in items} == {str(big_dump)}
    assert [(i.split, i.splits) for i in items] == [(k, len(items)) for k in range(len(items))]
    assert scan(spark, items).rdd.getNumPartitions() == len(items)

    messages, quarantine = land(spark, [str(big_dump)], run_id=RUN, landed_at=LANDED, split_bytes=split_bytes)
    whole_messages, whole_quarantine = land(spark, [str(big_dump)], run_id=RUN, landed_at=LANDED, split_bytes=1 << 30)
    assert len(plan_work([str(big_dump)], split_bytes=1 << 30)) == 1
    ref_messages, ref_quarantine = reference(spark, [big_dump])
    assert ref_messages.count() == 300 + 3  # the repeated message lands once
    assert ref_quarantine.count() == 3
    assert_same_rows(messages, ref_messages)
    assert_same_rows(quarantine, ref_quarantine)
    assert_same_rows(whole_messages, ref_messages)
    assert_same_rows(whole_quarantine, ref_quarantine)
    # the bad records really were read by splits that start inside the file
    assert all(r.source_offset > items[1].start for r in quarantine.collect())
    # the repeated message is landed at its first position
    first = messages.where(F.col("source_index") == 5).collect()[0]
    assert messages.where(F.col("message_key") == first.message_key).count() == 1


def test_a_landing_of_split_and_whole_files_positions_every_row_as_whole_reads_do(spark, tmp_path, big_dump):
    # work items of two split files with a file read whole between them: each row finds its
    # own file's bases by its work item's number
    small, second = tmp_path / "small.dmp", tmp_path / "second.dmp"
    write_dump(list(generate_messages(5, seed=98, max_size=2048)), small)
    write_dump(list(generate_messages(200, seed=99, max_size=3000)), second)
    paths = [str(big_dump), str(small), str(second)]
    split_bytes = big_dump.stat().st_size // 4
    items = plan_work(paths, split_bytes=split_bytes)
    assert [i.path for i in items if i.splits == 1] == [str(small)]
    assert [i.path for i in items].index(str(small)) >= 4 and items[-1].path == str(second) and items[-1].splits > 1
    messages, quarantine = land(spark, paths, run_id=RUN, landed_at=LANDED, split_bytes=split_bytes)
    ref_messages, ref_quarantine = reference(spark, paths)
    assert ref_messages.count() == 303 + 5 + 200  # no key in two files
    assert_same_rows(messages, ref_messages)
    assert_same_rows(quarantine, ref_quarantine)


# Created stamps of every kind a header may carry: ctime()'s (a one-digit day, a daylight
# saving gap and overlap in Europe/Berlin), and ones that name no time (the file's
# modification time stands in): another format, no such day, year 0, nothing at all.
STAMPS = (
    "Tue Sep 22 02:34:33 2026",
    "Wed Sep  2 09:05:07 2026",
    "Sun Mar 29 02:30:00 2026",
    "Sun Oct 25 02:30:00 2026",
    "Mon Jan  1 00:30:00 0001",
    "2026-01-01 00:00:00",
    "Mon Feb 30 00:00:00 2026",
    "Sat Jan  1 00:00:00 0000",
    "",
)


def concatenated_runs(folder: Path) -> Path:
    """One file of several dmpmqmsg runs, each with its own header (stamped as ``STAMPS``
    has it; a header without ``Created:``; two headers back to back), as ``cat`` makes it."""
    folder.mkdir()
    runs = []
    for n, stamp in enumerate(STAMPS):
        part = folder / f"run{n}.dmp"
        write_dump(generate_messages(4, seed=500 + n, max_size=2_048), part, qmgr="QM1", queue="DLQ", created=stamp)
        text = part.read_bytes()
        if not stamp:
            text = text.replace(b" Created:", b"", 1)
        if n == 3:
            text = b"* DMPMQMSG Version:9.4.0.0 Created:Thu Jan  1 00:00:00 2026\n" + text
        runs.append(text)
        part.unlink()
    path = folder / "runs.dmp"
    path.write_bytes(b"".join(runs))
    return path


def recorded(messages) -> dict[int, int | None]:
    """Each message's ``recorded_at`` in epoch microseconds, by its offset in its file."""
    rows = messages.select("source_offset", F.unix_micros("recorded_at").alias("at")).collect()
    return {r.source_offset: r.at for r in rows}


def at(when: dt.datetime) -> int:
    return epoch_micros(when)


MODIFIED_NS = 1_790_000_000_123_456_000  # a file's modification time, set by the tests that need one


def test_a_dump_is_recorded_when_its_header_says_in_the_zone_ingest_names(spark, tmp_path):
    path = tmp_path / "berlin.dmp"
    write_dump(generate_messages(5, seed=3, max_size=2048), path, created="Tue Sep 22 02:34:33 2026")
    for reader in ("auto", "python"):
        for zone, utc_hour in (("UTC", 2), ("Europe/Berlin", 0), ("America/New_York", 6)):
            messages, _ = land(spark, [str(path)], run_id=RUN, landed_at=LANDED, reader=reader, dump_time_zone=zone)
            assert set(recorded(messages).values()) == {at(dt.datetime(2026, 9, 22, utc_hour, 34, 33, tzinfo=dt.UTC))}


def test_the_runs_of_one_file_split_anywhere_are_each_recorded_when_their_own_run_was(spark, tmp_path):
    """Several dmpmqmsg runs in one file: each message under its own run's header, whichever
    range of the file read it and whichever reader; a stamp that names no time is the
    file's modification time. A whole read is the oracle (`reference`)."""
    path = concatenated_runs(tmp_path / "runs")
    os.utime(path, ns=(MODIFIED_NS, MODIFIED_NS))
    oracle = recorded(reference(spark, [path], zone="Europe/Berlin")[0])
    assert len(set(oracle.values())) == 5  # four stamps and the modification time
    for split_bytes in (1 << 30, 5_000, 997):
        for reader in ("auto", "python"):
            messages, _ = land(
                spark,
                [str(path)],
                run_id=RUN,
                landed_at=LANDED,
                split_bytes=split_bytes,
                reader=reader,
                dump_time_zone="Europe/Berlin",
            )
            assert recorded(messages) == oracle, (split_bytes, reader)


def test_files_without_a_stamp_are_recorded_when_they_were_modified(spark, tmp_path):
    """An amqsbcg listing and a dump written without its header (dmpmqmsg -dH) say nowhere
    when they were taken: their file's modification time, as listed, does."""
    listing = tmp_path / "amqsbcg-old.txt"
    shutil.copy(REPO / "tests" / "fixtures" / "amqsbcg-old.txt", listing)
    headerless = tmp_path / "headerless.dmp"
    write_dump(generate_messages(3, seed=8, max_size=2048), headerless)
    headerless.write_bytes(headerless.read_bytes().split(b"\n\n", 1)[1])
    for path in (listing, headerless):
        os.utime(path, ns=(MODIFIED_NS, MODIFIED_NS))
    messages, quarantine = land(spark, [str(listing), str(headerless)], run_id=RUN, landed_at=LANDED)
    assert quarantine.isEmpty()
    kinds = {r.source_kind for r in messages.collect()}
    assert kinds == {"amqsbcg", "dmpmqmsg"}
    assert set(recorded(messages).values()) == {MODIFIED_NS // 1000}


def test_ingest_stores_when_each_message_was_recorded_and_older_rows_read_null(spark, tmp_path):
    """``ingest.dump_time_zone`` reaches the stored column; rows of a table written before the
    column existed read null there (Parquet reads the declared schema), next to new ones."""
    first, second = tmp_path / "first.dmp", tmp_path / "second.dmp"
    write_dump(generate_messages(4, seed=21, max_size=2048), first, created="Tue Sep 22 02:34:33 2026")
    write_dump(generate_messages(3, seed=22, max_size=2048), second, created="Wed Sep 23 11:00:00 2026")
    settings = IngestSettings(dump_time_zone="Asia/Kolkata")
    landed = make_storage(spark, "parquet", tmp_path / "landed")
    ingest(spark, landed, [str(first)], run_id=RUN, landed_at=LANDED, settings=settings)
    older = landed.read("messages")
    assert set(recorded(older).values()) == {at(dt.datetime(2026, 9, 21, 21, 4, 33, tzinfo=dt.UTC))}

    storage = make_storage(spark, "parquet", tmp_path / "wh")
    older.drop("recorded_at").coalesce(1).write.parquet(storage.location("messages"))  # as an older version wrote it
    assert storage.read("messages").where(F.col("recorded_at").isNotNull()).isEmpty()
    result = ingest(spark, storage, [str(second)], run_id="R2", landed_at=LANDED, settings=settings)
    assert result.messages_landed == 3
    stored = storage.read("messages")
    by_file = {
        r.source_file: r.at
        for r in stored.select("source_file", F.unix_micros("recorded_at").alias("at")).distinct().collect()
    }
    assert by_file == {str(first): None, str(second): at(dt.datetime(2026, 9, 23, 5, 30, tzinfo=dt.UTC))}


# --- ingest into storage: idempotent ---------------------------------------------------------


def test_ingest_is_idempotent_for_messages_and_quarantine(spark, tmp_path, corrupt_dump, real_fixtures, storage_kind):
    storage = make_storage(spark, storage_kind, tmp_path / "warehouse")
    inputs = [str(corrupt_dump), str(real_fixtures / "mq10-dmpmqmsg-stdout.dmp")]
    lines = []
    first = ingest(
        spark,
        storage,
        inputs,
        run_id=RUN,
        landed_at=LANDED,
        settings=IngestSettings(split_bytes=100),
        progress=lines.append,
    )
    per_file = {inputs[0]: {"messages": 3, "quarantined": 3}, inputs[1]: {"messages": 1, "quarantined": 0}}
    size = sum(Path(p).stat().st_size for p in inputs)
    assert first.as_dict() == {
        "messages_landed": 4,
        "duplicates_skipped": 0,
        "quarantined": 3,
        "files": 2,
        "quarantine_added": 3,
        "messages_read": 4,
        "work_items": first.work_items,
        "jvm_work_items": first.jvm_work_items,
        "inputs": {
            **{k: 0 for k in ("skipped", "deferred", "unreadable", "bytes_skipped", "bytes_deferred")},
            **{"bytes_unreadable": 0, "backlog_files": 0, "backlog_bytes": 0},
            **{"read": 2, "bytes_read": size, "deferred_files": {}, "unreadable_files": {}, "cleaned": {}},
        },
        "per_file": per_file,
    }
    assert first.work_items > 2 and 0 < first.jvm_work_items < first.work_items  # the bad records' items: Python
    # progress: the input files, the plan, the read (at least its final count), then one line per file
    mb = f"{size / 1e6:,.1f} MB"
    assert (
        lines[0]
        == f"ingest: 2 files to read ({mb}), 0 landed before and unchanged, skipped (0.0 MB), 0 deferred (0.0 MB)"
    )
    assert lines[1] == f"ingest: 2 files ({mb} of dumps) in {first.work_items} work items"
    assert lines[-3] == f"ingest: {first.work_items}/{first.work_items} work items done"
    assert all(re.fullmatch(rf"ingest: \d+/{first.work_items} work items done", line) for line in lines[2:-2])
    assert lines[-2:] == [
        f"ingest: {p}: {c['messages']} messages, {c['quarantined']} quarantined" for p, c in sorted(per_file.items())
    ]
    stored_messages, stored_quarantine = storage.read("messages"), storage.read("quarantine")
    assert stored_messages.schema == expected_struct("messages")
    assert stored_quarantine.schema == expected_struct("quarantine")
    ref_messages, ref_quarantine = reference(spark, [corrupt_dump, real_fixtures / "mq10-dmpmqmsg-stdout.dmp"])
    assert_same_rows(stored_messages, ref_messages)
    assert_same_rows(stored_quarantine, ref_quarantine)

    again = ingest(spark, storage, inputs, run_id="second-run", landed_at=LANDED + dt.timedelta(days=1))
    # nothing read; the bad records of a file still there still count (they need a look)
    assert (again.messages_landed, again.duplicates_skipped, again.quarantined, again.quarantine_added) == (0, 0, 3, 0)
    assert (again.inputs.skipped, again.inputs.read, again.work_items) == (2, 0, 0)
    reread = ingest(
        spark,
        storage,
        inputs,
        run_id="third-run",
        landed_at=LANDED + dt.timedelta(days=2),
        settings=IngestSettings(reread=True),
    )
    assert (reread.messages_landed, reread.duplicates_skipped, reread.quarantined, reread.quarantine_added) == (
        0,
        4,
        3,
        0,
    )
    assert_same_rows(storage.read("messages"), ref_messages)
    assert_same_rows(storage.read("quarantine"), ref_quarantine)


@pytest.mark.parametrize(
    "keys_limit, broadcast_limit, large_message",
    [
        (64 << 20, 100_000, 1 << 30),
        (0, 100_000, 1 << 30),
        (64 << 20, 0, 1 << 30),
        (0, 0, 1 << 30),
        (64 << 20, 100_000, 1),
    ],
    ids=[
        "keys-with-summary",
        "skip-rows-job",
        "keys-with-summary-whole-row-merge",
        "whole-row-merge",
        "large-messages",
    ],
)
def test_ingest_stores_each_key_once_when_landings_overlap(
    spark, tmp_path, big_dump, monkeypatch, keys_limit, broadcast_limit, large_message
):
    """Repeats inside one landing and keys stored by an earlier ingest are left out, the
    first in file order kept: alike when the rows to leave out are found on the driver from
    the keys the read's summary brought (a small landing), by a job over the cached read
    (a larger one), when there are too many to broadcast and whole rows are deduplicated,
    and when a message counts as large (the read cached again on disk, the table written
    uncompressed)."""
    import dlq_pipeline.ingest.spark as ingest_module
    from dlq_pipeline.engine import large_messages

    monkeypatch.setattr(ingest_module, "KEYS_WITH_SUMMARY_BYTES", keys_limit)
    monkeypatch.setattr(ingest_module, "SKIP_BROADCAST_ROWS", broadcast_limit)
    monkeypatch.setattr(large_messages, "LARGE_MESSAGE_BYTES", large_message)
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    generated = list(generate_messages(40, seed=23, max_size=2048))
    write_dump(generated[:25], dumps / "a.dmp")
    write_dump(generated[20:] + generated[30:33], dumps / "b.dmp")  # overlaps a.dmp, repeats itself
    storage = Storage(spark, path=str(tmp_path / "warehouse"))
    first = ingest(
        spark, storage, [str(dumps / "a.dmp")], run_id=RUN, landed_at=LANDED, settings=IngestSettings(split_bytes=4096)
    )
    later = LANDED + dt.timedelta(hours=1)
    second = ingest(
        spark,
        storage,
        [str(big_dump), str(dumps / "b.dmp")],
        run_id="second",
        landed_at=later,
        settings=IngestSettings(split_bytes=big_dump.stat().st_size // 5),
    )
    assert (first.messages_landed, first.duplicates_skipped) == (25, 0)
    # big.dmp: 303 distinct (one repeat); b.dmp: 23 rows of which 5 are in a.dmp and 3 repeat
    assert (second.messages_read, second.messages_landed, second.duplicates_skipped) == (304 + 23, 303 + 15, 9)
    ref_first, _ = reference(spark, [dumps / "a.dmp"])
    ref_second, _ = reference(spark, [big_dump, dumps / "b.dmp"], run_id="second", landed_at=later)
    expected = ref_first.unionByName(ref_second.join(ref_first.select("message_key"), "message_key", "left_anti"))
    assert_same_rows(storage.read("messages"), expected)


_LANDED_KEYS = st.lists(
    st.tuples(
        st.sampled_from("ABCDE"),
        st.sampled_from(["/d/a.dmp", "/d/b.dmp", "/d/z.dmp", "/d/é.dmp", "/e/a.dmp"]),  # é sorts after z
        st.integers(0, 40),
    ),
    max_size=30,
    unique_by=lambda k: k[1:],
)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_LANDED_KEYS, st.sets(st.sampled_from("ABCDEF")))
def test_the_rows_to_leave_out_found_on_the_driver_are_those_the_job_finds(spark, keys, stored):
    """A small landing's rows to leave out come from its keys on the driver (`rows_to_leave_out`),
    a larger one's from a job over the read (`skipped_rows`): the same rows for any repeats
    of keys across files and positions, and any keys already stored."""
    raw = spark.createDataFrame(
        [("message", k, path, offset) for k, path, offset in keys] + [("error", "A", "/d/a.dmp", 99)],
        "rec string, message_key string, source_file string, source_offset long",
    )
    stored_keys = spark.createDataFrame([(k,) for k in sorted(stored)], "message_key string")
    by_job = sorted((r["source_file"], r["source_offset"]) for r in skipped_rows(raw, stored_keys).collect())
    landed = pa.Table.from_pylist(
        [dict(zip(KEY_COLUMNS, k, strict=True)) for k in keys],
        pa.schema([("message_key", pa.string()), ("source_file", pa.string()), ("source_offset", pa.int64())]),
    )
    assert rows_to_leave_out(landed, pa.array(sorted(stored), pa.string())) == by_job


def test_a_large_message_landing_sizes_its_row_groups_after_every_row(spark, tmp_path, monkeypatch):
    """Parquet checks its page and row-group sizes only every 100 rows by default, so a task
    would hold every large message it wrote until then (100 MB ones would run a 2 GB heap
    out). A large-message landing is checked after each row: with a row group of less than
    two messages, each message is a row group of its own (on one read's worth, a batch of its
    own), and the rows are those of the reference."""
    import dataclasses

    import pyarrow.parquet as pq

    import dlq_pipeline.ingest.spark as ingest_module
    from dlq_pipeline.engine import large_messages

    size = 96 * 1024
    monkeypatch.setattr(large_messages, "LARGE_MESSAGE_BYTES", size)
    monkeypatch.setattr(
        ingest_module,
        "LARGE_MESSAGE_PARQUET",
        {**ingest_module.LARGE_MESSAGE_PARQUET, "parquet.block.size": str(2 * size)},
    )
    generated = [
        dataclasses.replace(m, data=m.data + bytes([k]) * size)
        for k, m in enumerate(generate_messages(6, seed=5, max_size=2048))
    ]
    dump = tmp_path / "large.dmp"
    write_dump(generated, dump)
    storage = Storage(spark, path=str(tmp_path / "warehouse"))
    got = ingest(spark, storage, [str(dump)], run_id=RUN, landed_at=LANDED)
    assert (got.work_items, got.messages_landed) == (1, 6)
    files = sorted((tmp_path / "warehouse").rglob("messages/**/*.parquet"))
    assert [pq.ParquetFile(f).metadata.num_row_groups for f in files] == [6]
    assert_same_rows(storage.read("messages"), reference(spark, [dump])[0])


def test_messages_are_stored_with_a_dictionary_only_for_the_columns_that_repeat(spark, tmp_path):
    """A message's data (and its head) is nearly always unique: Parquet's dictionary for them
    is built, thrown away and the pages encoded again, a quarter of the write. They are
    written plainly, even where bodies repeat (where the dictionary would have been kept), as
    are the columns unique by construction (key, digest, MsgId, positions); columns that
    repeat (queue names, formats) keep theirs; the rows are those of the reference."""
    import dataclasses

    import pyarrow.parquet as pq

    from dlq_pipeline.warehouse.storage import UNIQUE_MESSAGE_COLUMNS

    body = bytes(range(256)) * 8
    generated = [dataclasses.replace(m, data=body) for m in generate_messages(40, seed=6, max_size=2048)]
    dump = tmp_path / "same-body.dmp"
    write_dump(generated, dump)
    storage = Storage(spark, path=str(tmp_path / "warehouse"))
    assert ingest(spark, storage, [str(dump)], run_id=RUN, landed_at=LANDED).messages_landed == 40
    files = sorted((tmp_path / "warehouse").rglob("messages/**/*.parquet"))
    assert files
    dictionary = {"PLAIN_DICTIONARY", "RLE_DICTIONARY"}
    for f in files:
        meta = pq.ParquetFile(f).metadata
        for g in range(meta.num_row_groups):
            encodings = {
                meta.row_group(g).column(c).path_in_schema: set(meta.row_group(g).column(c).encodings)
                for c in range(meta.num_columns)
            }
            for column in ("data", "data_head", *UNIQUE_MESSAGE_COLUMNS):
                assert not encodings[column] & dictionary, (f, column, encodings)
            assert encodings["reply_to_q"] & dictionary, (f, encodings)
    assert_same_rows(storage.read("messages"), reference(spark, [dump])[0])


def test_a_landing_too_large_for_every_task_slot_is_written_by_as_many_tasks_as_fit(
    spark, tmp_path, big_dump, monkeypatch
):
    """Messages too large for every task slot to hold one (`large_message_tasks`, here one)
    are written by that many tasks: six byte ranges read, one file written, the same rows."""
    from dlq_pipeline.engine import large_messages

    asked = []
    monkeypatch.setattr(large_messages, "LARGE_MESSAGE_BYTES", 1)
    monkeypatch.setattr(large_messages, "tasks_that_fit", lambda spark_, task: asked.append(task) or 1)
    storage = Storage(spark, path=str(tmp_path / "warehouse"))
    got = ingest(
        spark,
        storage,
        [str(big_dump)],
        run_id=RUN,
        landed_at=LANDED,
        settings=IngestSettings(split_bytes=big_dump.stat().st_size // 5),
    )
    assert (got.work_items, got.messages_landed) == (6, 303)
    largest = max(len(m.data) for m in read_dump(str(big_dump)) if isinstance(m, DumpedMessage))
    assert asked == [large_messages.LARGE_MESSAGE_TASK_COPIES * largest]
    assert len(list((tmp_path / "warehouse").rglob("messages/**/*.parquet"))) == 1
    assert_same_rows(storage.read("messages"), reference(spark, [big_dump])[0])


def test_the_same_message_in_two_files_lands_once(spark, tmp_path, real_fixtures):
    folder = tmp_path / "dumps"
    (folder / "sub").mkdir(parents=True)
    shutil.copy(real_fixtures / "mq10-dmpmqmsg-stdout.dmp", folder / "a.dmp")
    shutil.copy(real_fixtures / "mq10-dmpmqmsg-stdout.dmp", folder / "sub" / "b.dmp")
    (folder / ".hidden.dmp").write_text("not read")
    (folder / "notes.txt").write_text("id,queue\n1,DLQ\n")
    messages, quarantine = land(spark, [str(folder)], run_id=RUN, landed_at=LANDED)
    rows = messages.collect()
    assert [(r.source_file, r.source_index) for r in rows] == [(str(folder / "a.dmp"), 0)]
    assert [(r.source_file, r.error_code, r.source_line) for r in quarantine.collect()] == [
        (str(folder / "notes.txt"), "unknown_format", 1)
    ]


# --- amqsbcg listings and text that is not UTF-8 ---------------------------------------------


def test_amqsbcg_listing_lands_with_its_queue(spark):
    path = REPO / "tests" / "fixtures" / "amqsbcg-94.txt"
    messages, quarantine = land(spark, [str(path)], run_id=RUN, landed_at=LANDED)
    ref_messages, ref_quarantine = reference(spark, [path], kinds={str(path): "amqsbcg"})
    assert ref_messages.count() == 4 and ref_quarantine.count() == 1
    assert_same_rows(messages, ref_messages)
    assert_same_rows(quarantine, ref_quarantine)
    assert {r.source_kind for r in messages.collect()} == {"amqsbcg"}


def test_a_listing_pasted_in_part_lands_truncated_with_its_note(spark):
    """384 of 856 bytes of an AIX dead letter: a messages row (not quarantine), truncated,
    data_length the whole 856, the note saying what is missing."""
    path = REPO / "tests" / "fixtures" / "amqsbcg-field-aix-trigger-cut.txt"
    messages, quarantine = land(spark, [str(path)], run_id=RUN, landed_at=LANDED)
    assert quarantine.count() == 0
    [row] = messages.collect()
    assert (row.truncated, row.data_length, len(row.data), list(row.notes)) == (True, 856, 384, ["listing_cut:384/856"])
    assert bytes(row.data[:12]) == b"DLH \x00\x00\x00\x01\x00\x00\x01\x09"  # big-endian, reason 265


def test_a_listing_cut_inside_its_dead_letter_header_shows_the_fields_that_are_there(spark):
    """133 of 184 bytes (MQSeries 5 listing copied into a mail): the MQDLH is cut at byte
    133, so it is unusable (too_short) and the message IGNOREd as it always was, but the
    decode columns show Reason, the destination and what else is all there, for triage."""
    from dlq_pipeline.mq.spark import decode_headers

    path = REPO / "tests" / "fixtures" / "amqsbcg-field-mqseries5-mail.txt"
    messages, quarantine = land(spark, [str(path)], run_id=RUN, landed_at=LANDED)
    assert quarantine.count() == 0
    [row] = decode_headers(messages).collect()
    assert (row.truncated, row.data_length, len(row.data), list(row.notes)) == (True, 184, 133, ["listing_cut:133/184"])
    assert (
        row.has_dlh,
        row.dlh_problem,
        row.dlh_reason,
        row.dlh_dest_q.rstrip(),
        row.dlh_dest_qmgr.rstrip(),
        row.dlh_encoding,
        row.dlh_ccsid,
        row.dlh_format,
        row.dlh_put_appl_type,
    ) == (False, "too_short", 2085, "ASDF2", "MQADMIN4", 546, 850, "MQSTR   ", 6)
    assert (row.dlh_put_appl_name, row.dlh_put_date, row.dlh_put_time, row.dlh_chain) == (None, None, None, None)


def test_char_fields_that_are_not_utf8_are_noted_and_keyed_on_their_bytes(spark, tmp_path):
    path = tmp_path / "latin1.dmp"
    path.write_bytes(HEADER.encode() + b"A VER 2\nA PAN caf\xe9 app\nA USR ok\nX 4142434445\n")
    messages, quarantine = land(spark, [str(path)], run_id=RUN, landed_at=LANDED, max_message_bytes=4)
    assert messages.count() == 0  # 5 bytes > 4: quarantined, not dropped
    assert [(r.error_code, r.source_line) for r in quarantine.collect()] == [("message_too_large", 5)]

    messages, quarantine = land(spark, [str(path)], run_id=RUN, landed_at=LANDED)
    row = messages.collect()[0]
    assert row.put_appl_name == "caf\ufffd app"
    assert row.user_id == "ok"
    assert row.notes == ["char_field_not_utf8:put_appl_name"]
    assert {k: bytes(v) for k, v in row.md_char_bytes.items()} == {"put_appl_name": b"caf\xe9 app"}  # kept exactly
    msg = next(iter(read_dump(str(path))))
    assert isinstance(msg, DumpedMessage) and msg.md.put_appl_name == bytes_to_text(b"caf\xe9 app")
    assert row.message_key == message_key(msg.md, data_digest(b"ABCDE"))


# --- planning -------------------------------------------------------------------------------


def test_paths_expand_on_the_driver(tmp_path):
    (tmp_path / "d" / "e").mkdir(parents=True)
    for name in ("d/b.dmp", "d/a.dmp", "d/e/c.dmp", "d/_tmp", "d/.x"):
        (tmp_path / name).write_text("x")
    d = tmp_path / "d"
    assert expand_paths([str(d)]) == [str(d / "a.dmp"), str(d / "b.dmp"), str(d / "e" / "c.dmp")]
    assert expand_paths([str(d / "*.dmp"), str(d / "a.dmp")]) == [str(d / "a.dmp"), str(d / "b.dmp")]
    assert expand_paths([f"file://{d / 'a.dmp'}"]) == [str(d / "a.dmp")]
    with pytest.raises(FileNotFoundError):
        expand_paths([str(tmp_path / "missing.dmp")])
    with pytest.raises(FileNotFoundError, match="no file matches"):
        expand_paths([str(tmp_path / "*.none")])
    assert _local("dbfs:/mnt/dumps/x.dmp") == "/dbfs/mnt/dumps/x.dmp"
