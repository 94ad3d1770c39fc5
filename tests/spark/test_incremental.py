"""Incremental ingest over a directory where dumps keep arriving (`ingest.inputs`): files
landed whole and unchanged are not read again, new, grown and rewritten ones are, files still
being written wait, unreadable ones are reported and tried again, landed files can be moved
away; the ``files`` table says what was landed of each."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from dlq_pipeline.config.settings import IngestSettings
from dlq_pipeline.dumps import plan as dump_plan
from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.dumps.generator import generate_messages
from dlq_pipeline.errors import UsageError
from dlq_pipeline.ingest import spark as ingest_spark
from dlq_pipeline.ingest.spark import ingest
from tests.conftest import make_storage

COLUMNS = ["message_key", "source_file", "source_offset", "source_index", "source_line", "data"]


POOL = [(m.md, m.data) for m in generate_messages(30, seed=5, max_size=2048)]


def dump(path: Path, first: int, count: int) -> None:
    """A dump of messages ``first`` .. ``first + count - 1`` of one generated DLQ."""
    write_dump(POOL[first : first + count], path)


def stored(storage) -> list[tuple]:
    return sorted(tuple(r) for r in storage.read("messages").select(*COLUMNS).collect())


def run(spark, storage, paths, n, **settings):
    return ingest(spark, storage, [str(p) for p in paths], run_id=f"R{n}", settings=IngestSettings(**settings))


@pytest.fixture
def landing(spark, tmp_path):
    inbox = tmp_path / "in"
    inbox.mkdir()
    dump(inbox / "a.dmp", 0, 6)
    dump(inbox / "b.dmp", 6, 4)
    return inbox, make_storage(spark, "parquet", tmp_path / "wh")


def test_a_second_run_reads_nothing_and_a_new_dump_alone_is_read(spark, landing, tmp_path):
    inbox, storage = landing
    first = run(spark, storage, [inbox], 1)
    assert (first.messages_landed, first.inputs.read, first.inputs.skipped) == (10, 2, 0)
    before = stored(storage)

    again = run(spark, storage, [inbox], 2)
    assert (again.messages_read, again.messages_landed, again.files, again.work_items) == (0, 0, 0, 0)
    assert (again.inputs.skipped, again.inputs.bytes_skipped) == (2, sum(p.stat().st_size for p in inbox.iterdir()))
    assert stored(storage) == before

    dump(inbox / "c.dmp", 10, 3)
    third = run(spark, storage, [inbox], 3)
    assert (third.inputs.read, third.inputs.skipped, third.file_list) == (1, 2, [str(inbox / "c.dmp")])
    assert third.messages_landed == 3

    fresh = make_storage(spark, "parquet", tmp_path / "fresh")
    run(spark, fresh, [inbox], 1)
    assert stored(storage) == stored(fresh)  # the same rows as one landing of everything

    rows = storage.read("files").orderBy("path", "landed_at").collect()
    assert [(Path(r["path"]).name, r["run_id"], r["messages"], r["quarantined"]) for r in rows] == [
        ("a.dmp", "R1", 6, 0),
        ("b.dmp", "R1", 4, 0),
        ("c.dmp", "R3", 3, 0),
    ]
    assert all(r["size"] == Path(r["path"]).stat().st_size for r in rows)

    reread = run(spark, storage, [inbox], 4, reread=True)
    assert (reread.inputs.read, reread.messages_read, reread.messages_landed) == (3, 13, 0)


def test_a_dump_that_grew_or_was_rewritten_lands_only_its_new_messages(spark, landing):
    inbox, storage = landing
    run(spark, storage, [inbox], 1)
    write_dump(POOL[0:6] + POOL[20:23], inbox / "a.dmp")  # the same DLQ dumped again later: three more
    grown = run(spark, storage, [inbox], 2)
    assert (grown.inputs.read, grown.messages_read, grown.messages_landed) == (1, 9, 3)
    rows = storage.read("files").where(F.col("path").endswith("a.dmp")).orderBy("landed_at").collect()
    assert [(r["run_id"], r["messages"]) for r in rows] == [("R1", 6), ("R2", 9)]  # the latest row is its state
    assert run(spark, storage, [inbox], 3).inputs.read == 0


def test_a_file_still_being_written_waits_for_the_next_run(spark, landing, monkeypatch):
    inbox, storage = landing
    half = inbox / "half.dmp"
    dump(half, 20, 4)
    whole = half.read_bytes()
    half.write_bytes(whole[: len(whole) // 2])  # a writer half way through

    settled = run(spark, storage, [inbox], 1, settle_seconds=3600)
    assert settled.inputs.deferred == 3 and settled.inputs.backlog_files == 3 and settled.messages_landed == 0
    assert storage.read("messages").count() == 0

    real_land = ingest_spark._land

    def writer_goes_on(spark_, paths, **kw):  # the writer appends while the file is read
        landing_ = real_land(spark_, paths, **kw)
        if half.stat().st_size < len(whole):
            half.write_bytes(whole)
        return landing_

    monkeypatch.setattr(ingest_spark, "_land", writer_goes_on)
    moving = run(spark, storage, [inbox], 2)
    assert moving.inputs.deferred_files == {
        str(half): f"it changed while it was read (size {len(whole) // 2} -> {len(whole)}): still being written"
    }
    assert moving.messages_landed == 10 and moving.inputs.read == 2
    monkeypatch.undo()

    complete = run(spark, storage, [inbox], 3)
    assert (complete.inputs.read, complete.messages_landed, complete.quarantined) == (1, 4, 0)
    assert storage.read("quarantine").count() == 0  # its half was never landed


def test_unreadable_and_vanished_files_are_reported_and_tried_again(spark, landing, monkeypatch):
    inbox, storage = landing
    real_sniff = dump_plan.sniff

    def refused(url):
        if url.endswith("b.dmp"):
            raise PermissionError(13, "Permission denied", url)
        return real_sniff(url)

    monkeypatch.setattr(dump_plan, "sniff", refused)
    first = run(spark, storage, [inbox], 1)
    assert first.messages_landed == 6 and first.inputs.unreadable == 1
    assert "Permission denied" in first.inputs.unreadable_files[str(inbox / "b.dmp")]
    monkeypatch.undo()

    real_land = ingest_spark._land

    def vanishes(spark_, paths, **kw):
        landing_ = real_land(spark_, paths, **kw)
        (inbox / "b.dmp").rename(inbox / ".b.dmp.moved")
        return landing_

    monkeypatch.setattr(ingest_spark, "_land", vanishes)
    gone = run(spark, storage, [inbox], 2)
    assert gone.inputs.deferred_files == {str(inbox / "b.dmp"): "it vanished while it was read"}
    assert gone.messages_landed == 0
    monkeypatch.undo()

    (inbox / ".b.dmp.moved").rename(inbox / "b.dmp")
    last = run(spark, storage, [inbox], 3)
    assert (last.inputs.read, last.inputs.skipped, last.messages_landed) == (1, 1, 4)
    assert storage.read("messages").count() == 10


def test_landed_files_are_archived_or_deleted_after_the_commit(spark, landing, tmp_path):
    inbox, storage = landing
    bad = inbox / "sub" / "bad.dmp"
    bad.parent.mkdir()
    bad.write_bytes(b"* DMPMQMSG Version:9.4.0.0\nA VER 2\nX 414\n")  # odd-length hex: a bad record
    archive = tmp_path / "archive"
    with pytest.raises(UsageError, match="inside the input"):
        run(spark, storage, [inbox], 0, clean_source="archive", archive_dir=str(inbox / "old"))

    done = run(spark, storage, [inbox], 1, clean_source="archive", archive_dir=str(archive))
    assert done.messages_landed == 10 and done.quarantined == 1
    assert sorted(p.name for p in archive.rglob("*.dmp")) == ["a.dmp", "b.dmp"]
    assert [p.relative_to(inbox) for p in inbox.rglob("*.dmp")] == [Path("sub/bad.dmp")]  # kept: it needs a look
    assert set(done.inputs.cleaned.values()) == {f"archived to {archive / 'a.dmp'}", f"archived to {archive / 'b.dmp'}"}

    again = run(spark, storage, [inbox], 2, clean_source="delete", clean_quarantined=True)
    assert again.inputs.read == 0 and again.quarantined == 1 and not bad.exists()
    assert storage.read("messages").count() == 10


def test_the_run_summary_json_and_metrics_count_the_files(spark, landing, tmp_path):
    from dlq_pipeline.config import load_config
    from dlq_pipeline.config.settings import RunSettings
    from dlq_pipeline.pipeline import run_pipeline
    from dlq_pipeline.report.metrics import prometheus_text
    from dlq_pipeline.report.render import render_text
    from dlq_pipeline.report.spark import build_report
    from dlq_pipeline.rules.parser import parse_rules

    inbox, _ = landing
    table = parse_rules("ACTION(DISCARD)\n")
    config = load_config(overrides={"storage": {"path": str(tmp_path / "wh-run"), "format": "parquet"}})
    settings = dataclasses.replace(RunSettings.from_config(config))
    run_pipeline(spark, settings, table, inputs=[str(inbox)], target="dry-run", run_id="RUN1")
    (inbox / "late.dmp").write_bytes(b"* DMPMQMSG Version:9.4.0.0\n")
    os.utime(inbox / "late.dmp", (dt.datetime.now().timestamp(),) * 2)
    settle = dataclasses.replace(settings, ingest=dataclasses.replace(settings.ingest, settle_seconds=600))
    summary = run_pipeline(spark, settle, table, inputs=[str(inbox)], target="dry-run", run_id="RUN2")
    doc = summary.as_dict()
    assert doc["input_files"]["skipped"] == 2 and doc["input_files"]["deferred"] == 1
    assert doc["metrics"]["counts"]["backlog_files"] == 1
    text = prometheus_text(doc)
    assert 'dlq_pipeline_last_run_input_files{state="skipped"} 2' in text
    assert 'dlq_pipeline_last_run_input_files{state="deferred"} 1' in text
    assert f"dlq_pipeline_last_run_backlog_bytes {(inbox / 'late.dmp').stat().st_size}" in text

    # the report says it in one line, and names the file left for the next run
    report = build_report(make_storage(spark, "parquet", tmp_path / "wh-run"), now=dt.datetime.now(dt.UTC))
    assert report["run_id"] == "RUN2"
    assert "input files: 0 read (0.0 MB), 2 landed before and skipped (" in render_text(report)
    [left] = [item for item in report["advice"] if item["code"] == "inputs_deferred"]
    assert left["evidence"]["files"] == doc["input_files"]["deferred_files"] and str(inbox / "late.dmp") in str(left)


def test_pending_messages_are_read_from_the_files_of_open_landings_and_unnamed_files(spark, landing, monkeypatch):
    """A settled landing's data files are not opened; a file no landing names (its write's
    record cut short) always is, so nothing pending is missed."""
    from dlq_pipeline.warehouse import landings

    inbox, storage = landing
    run(spark, storage, [inbox / "a.dmp"], 1)
    landings._append(storage, ["R1"], landings.SETTLED)  # every message of R1 ended
    run(spark, storage, [inbox / "b.dmp"], 2)
    dump(inbox / "c.dmp", 10, 3)
    real = landings._append
    monkeypatch.setattr(
        landings,
        "_append",
        lambda st, runs, event, *a, **k: None if event == "stored" else real(st, runs, event, *a, **k),
    )
    run(spark, storage, [inbox / "c.dmp"], 3)  # killed between its write and the record of its files
    monkeypatch.undo()

    stored_rows = storage.read("landings").where(F.col("event") == "stored").collect()
    named = {r["run_id"]: set(r["files"]) for r in stored_rows}
    assert set(named) == {"R1", "R2"} and not named["R1"] & named["R2"]
    pending = landings.open_messages(storage)
    opened = {Path(r[0]).name for r in pending.select(F.input_file_name()).distinct().collect()}
    unnamed = set(storage.data_files("messages")) - named["R1"] - named["R2"]
    assert unnamed and opened == named["R2"] | unnamed
    assert sorted(r["run_id"] for r in pending.select("run_id").collect()) == ["R2"] * 4 + ["R3"] * 3


def opened_files(frame) -> set[str]:
    return {Path(r[0]).name for r in frame.select(F.input_file_name()).distinct().collect()}


def test_the_key_lookup_reads_the_keys_table_and_unnamed_files_only(spark, landing, monkeypatch):
    """A landing finds the messages already stored in ``keys`` (one file a write) and in the
    data files no record names; a write cut short before its keys and its record still
    has its messages found, so landing everything again stores nothing twice."""
    from dlq_pipeline.warehouse import keys, landings

    inbox, storage = landing
    run(spark, storage, [inbox / "a.dmp"], 1)
    run(spark, storage, [inbox / "b.dmp"], 2)
    dump(inbox / "c.dmp", 10, 3)
    real = landings._append
    monkeypatch.setattr(landings, "append_keys", lambda *a: None)
    monkeypatch.setattr(
        landings,
        "_append",
        lambda st, runs, event, *a, **k: None if event == "stored" else real(st, runs, event, *a, **k),
    )
    run(spark, storage, [inbox / "c.dmp"], 3)  # killed after its write, before its keys and its record
    monkeypatch.undo()

    state = landings.landing_state(storage)
    unnamed = set(storage.data_files("messages")) - set(state.files)
    assert len(unnamed) == 1
    lookup = keys.stored_keys(storage, state.files)
    assert opened_files(lookup) == set(storage.data_files("keys")) | unnamed
    assert sorted(r[0] for r in lookup.collect()) == sorted(r[0] for r in storage.read("messages").collect())
    named = storage.read("messages").where(F.col("run_id") != "R3").select("message_key", "run_id")
    assert sorted(tuple(r) for r in storage.read("keys").collect()) == sorted(tuple(r) for r in named.collect())

    before = stored(storage)
    again = run(spark, storage, [inbox], 4, reread=True)
    assert (again.messages_read, again.messages_landed) == (13, 0)
    assert stored(storage) == before


def test_a_warehouse_without_the_keys_table_gets_it_at_its_next_landing(spark, landing):
    from dlq_pipeline import fs

    inbox, storage = landing
    run(spark, storage, [inbox / "a.dmp"], 1)
    assert fs.delete(storage.location("keys"))  # a warehouse landed without it
    assert run(spark, storage, [inbox], 2).messages_landed == 4  # a.dmp's six found in messages itself
    expected = sorted(tuple(r) for r in storage.read("messages").select("message_key", "run_id").collect())
    assert sorted(tuple(r) for r in storage.read("keys").collect()) == expected


def test_the_small_tables_compact_once_their_files_pile_up(spark, landing, monkeypatch):
    """Each landing appends to ``files``, ``landings`` and ``keys``; once more than
    COMPACT_FILES small files have piled up they are merged into one, which reads the same.
    A compaction cut short between its write and its deletes leaves rows twice, which
    read the same too; a table whose rows count is never compacted."""
    from dlq_pipeline.warehouse import landings
    from dlq_pipeline.warehouse import storage as storage_module
    from dlq_pipeline.warehouse.storage import StorageError

    inbox, storage = landing
    monkeypatch.setattr(storage_module, "COMPACT_FILES", 3)
    for n in range(5):
        dump(inbox / f"n{n}.dmp", 10 + 2 * n, 2)
        run(spark, storage, [inbox / f"n{n}.dmp"], n)
    assert {t: len(storage.data_files(t)) for t in ("files", "landings", "keys")} == {
        "files": 2,  # one a landing: merged at the fourth's end, then the fifth's
        "landings": 3,  # two a landing: merged at the fourth's end, then the fifth's two
        "keys": 2,
    }
    state, files = landings.landing_state(storage), ingest_spark.landed_files(storage)
    keys = sorted(tuple(r) for r in storage.read("keys").collect())
    assert keys == sorted(tuple(r) for r in storage.read("messages").select("message_key", "run_id").collect())

    monkeypatch.setattr(storage_module, "_delete_data_files", lambda *a: None)  # killed before its deletes
    monkeypatch.setattr(storage_module, "COMPACT_FILES", 1)
    for table in ("files", "landings", "keys"):
        assert storage.compact(table) > 1
    assert landings.landing_state(storage) == state and ingest_spark.landed_files(storage) == files
    assert sorted(set(tuple(r) for r in storage.read("keys").collect())) == keys
    with pytest.raises(StorageError, match="ledger"):
        storage.compact("ledger")


def test_classify_and_the_settling_open_the_ledger_files_of_open_landings_only(spark, landing, tmp_path):
    """A replay's ledger files are recorded under the landings open then: once those have
    settled the files stay closed; a ledger file no record names (a recovery's rows) is read."""
    from dlq_pipeline.config.settings import RunSettings, StorageSettings
    from dlq_pipeline.pipeline import run_pipeline
    from dlq_pipeline.rules.parser import parse_rules
    from dlq_pipeline.warehouse import landings

    inbox, storage = landing
    settings = RunSettings(storage=StorageSettings(path=storage.path))
    table = parse_rules("ACTION(FWD) FWDQ(DLQ.HOLD) HEADER(YES)\n")
    first = run_pipeline(
        spark, settings, table, inputs=[str(inbox / "a.dmp")], target=f"dir:{tmp_path / 'out'}", run_id="R1"
    )
    assert first.outcomes == {"delivered": 6}
    settled = set(storage.data_files("ledger"))
    second = run_pipeline(spark, settings, table, inputs=[str(inbox / "b.dmp")], target="dry-run", run_id="R2")
    assert second.pending == 4
    state = landings.landing_state(storage)
    assert state.open == ["R2"]
    assert {frozenset(v) for v in state.ledger.values()} == {frozenset({"R1"}), frozenset({"R2"})}
    recovered = storage.read("ledger").where(F.col("run_id") == "R2").limit(1)
    storage.append("ledger", recovered.withColumn("run_id", F.lit("R2.recovered")).localCheckpoint())
    unnamed = set(storage.data_files("ledger")) - set(state.ledger)
    assert len(unnamed) == 1
    assert opened_files(landings.open_ledger(storage, state)) == (set(storage.data_files("ledger")) - settled)


# --- the streaming source ----------------------------------------------------------------------


def stream_into(spark, inbox: Path, warehouse: Path, checkpoint: Path, **options) -> list[int]:
    """An availableNow stream of ``inbox`` landed by `stream_landing`; the rows of each batch."""
    from dlq_pipeline.config.settings import StorageSettings
    from dlq_pipeline.dumps.spark import register
    from dlq_pipeline.ingest.spark import stream_landing

    register(spark)
    land = stream_landing(StorageSettings(path=str(warehouse)))
    sizes: list[int] = []

    def each(batch, batch_id):
        sizes.append(batch.count())
        land(batch, batch_id)

    reader = spark.readStream.format("mqdump")
    for key, value in options.items():
        reader = reader.option(key, str(value))
    query = (
        reader.load(str(inbox))
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None
    return sizes


def test_a_stream_lands_each_file_once_across_restarts(spark, landing, tmp_path):
    inbox, _ = landing
    bad = inbox / "bad.dmp"
    bad.write_bytes(b"* DMPMQMSG Version:9.4.0.0\nA VER 2\nX 414\n")
    wh, checkpoint = tmp_path / "wh-stream", tmp_path / "checkpoint"
    assert stream_into(spark, inbox, wh, checkpoint, maxFilesPerTrigger=1) == [6, 4, 1]  # a file a batch, in order

    storage = make_storage(spark, "parquet", wh)
    batch = make_storage(spark, "parquet", tmp_path / "wh-batch")
    run(spark, batch, [inbox], 1)
    assert stored(storage) == stored(batch)  # the rows one batch ingest lands
    assert storage.read("quarantine").select("source_file", "error_code").collect() == [(str(bad), "odd_length_hex")]
    recorded = {Path(r["path"]).name: (r["messages"], r["quarantined"]) for r in storage.read("files").collect()}
    assert recorded == {"a.dmp": (6, 0), "b.dmp": (4, 0), "bad.dmp": (0, 1)}

    # a restart finds nothing new; a new file, and a file that grew, are read once each
    assert stream_into(spark, inbox, wh, checkpoint, maxFilesPerTrigger=1) == []
    dump(inbox / "c.dmp", 10, 3)
    write_dump(POOL[0:6] + POOL[20:22], inbox / "a.dmp")
    assert sorted(stream_into(spark, inbox, wh, checkpoint)) == [3 + 8]

    # the sink ran but the query died before it recorded the batch: the batch runs again
    last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    for name in (str(last), f".{last}.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    assert stream_into(spark, inbox, wh, checkpoint) == [11]
    keys = [r["message_key"] for r in storage.read("messages").select("message_key").collect()]
    assert len(keys) == len(set(keys)) == 15  # every message stored once


def test_a_stream_takes_as_many_bytes_a_batch_as_it_is_told(spark, landing, tmp_path):
    inbox, _ = landing
    dump(inbox / "c.dmp", 10, 3)
    largest = max(p.stat().st_size for p in inbox.iterdir())
    # each batch at most the largest file's bytes: one file a batch
    sizes = stream_into(spark, inbox, tmp_path / "wh", tmp_path / "ck", maxBytesPerTrigger=largest)
    assert sizes == [6, 4, 3]
    assert not list(inbox.glob("*.json")) and (inbox / "_mqdump_log").is_dir()  # the log is never listed
