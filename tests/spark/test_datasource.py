"""The data sources ``mqdump``, ``dmpmqmsg`` and ``amqsbcg`` (`dlq_pipeline.dumps.spark`) and the
column functions (`decode_dlh`, `reason_name`, `decide`) on the suite's classic session.

The oracle for the rows is ingest itself (`ingest.spark.land`, which reads large dumps in byte
ranges and numbers their records from the ranges' counts): a data source's message rows are
the ``messages`` rows ingest lands (without the run's columns; ingest keeps the first of a
repeated message), and its bad-record rows are the ``quarantine`` rows. Inputs: generated DLQs
of every platform, the real and test fixtures, and damaged copies of generated dumps.
"""

from __future__ import annotations

import random
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

import dlq_pipeline
from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.dumps.spark import ERROR_COLUMNS, RUN_COLUMNS, MalformedRecord, source_schema
from dlq_pipeline.fs import stat
from dlq_pipeline.ingest.spark import land
from dlq_pipeline.mq.constants import reason_name as python_reason_name
from dlq_pipeline.mq.constants import reason_names
from dlq_pipeline.mq.spark import decode_headers, decoded_struct
from dlq_pipeline.rules.model import DECISION_COLUMNS
from dlq_pipeline.rules.parser import load_rules
from dlq_pipeline.runtime.clock import epoch_micros
from dlq_pipeline.tables import table_columns
from tests.support import REPO
from tests.unit.test_fuzz import mutate

pytestmark = pytest.mark.spark

FIXTURES = REPO / "tests" / "fixtures"
STARTER = REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules"
QUARANTINE_COLUMNS = ("source_file", "source_line", "source_offset", "source_index", *ERROR_COLUMNS)
MESSAGE_COLUMNS = tuple(c for c in table_columns("messages") if c not in RUN_COLUMNS)


@pytest.fixture(scope="module")
def sources(spark):
    dlq_pipeline.register(spark)
    return spark


def _plain(value):
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def collected(df, columns) -> list[dict]:
    """The rows as dicts of ``columns``, in (file, offset) order."""
    rows = [{c: _plain(r[c]) for c in columns} for r in df.select(*columns).collect()]
    return sorted(rows, key=lambda r: (r["source_file"], r["source_offset"], r.get("error_code") or ""))


def first_of_each_key(rows: list[dict]) -> list[dict]:
    """What ingest keeps of rows in file order: the first of each message key."""
    seen: set[str] = set()
    kept = []
    for row in rows:
        if row["message_key"] not in seen:
            seen.add(row["message_key"])
            kept.append(row)
    return kept


def assert_rows_are_ingests(spark, paths, split_bytes):
    """The ``mqdump`` source's rows of ``paths`` are ingest's rows of them, landed in byte
    ranges of ``split_bytes``."""
    read = spark.read.format("mqdump").load([str(p) for p in paths] if len(paths) > 1 else str(paths[0]))
    messages, quarantine = land(spark, [str(p) for p in paths], run_id="R", split_bytes=split_bytes)
    ours = collected(read.where("error_code IS NULL"), MESSAGE_COLUMNS)
    assert first_of_each_key(ours) == collected(messages, MESSAGE_COLUMNS)
    assert collected(read.where("error_code IS NOT NULL"), QUARANTINE_COLUMNS) == collected(
        quarantine, QUARANTINE_COLUMNS
    )
    assert all(r["message_key"] is None for r in collected(read.where("error_code IS NOT NULL"), MESSAGE_COLUMNS))
    return ours


def test_the_schema_is_messages_without_the_run_then_the_bad_records(sources):
    schema = sources.read.format("mqdump").load(str(FIXTURES / "real")).schema
    assert schema.fieldNames() == [*MESSAGE_COLUMNS, *ERROR_COLUMNS]
    assert schema == source_schema()
    decoded = sources.read.format("mqdump").option("decode", "true").load(str(FIXTURES / "real")).schema
    assert decoded.fieldNames() == [*MESSAGE_COLUMNS, *ERROR_COLUMNS, *decoded_struct().fieldNames()]


def test_the_fixtures_read_as_ingest_lands_them(sources):
    """The real dump, the test fixtures' dumps and listings (bad records among them), and
    the fuzz corpus: every row as ingest gives it, ingest reading them in small ranges."""
    paths = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in (".dmp", ".txt"))
    ours = assert_rows_are_ingests(sources, paths, 4096)
    assert len(ours) > 20


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**16),
    files=st.integers(1, 3),
    damaged=st.booleans(),
    split_bytes=st.sampled_from([20_000, 1 << 20]),
)
def test_generated_and_damaged_dumps_read_as_ingest_lands_them(
    sources, tmp_path_factory, seed, files, damaged, split_bytes
):
    """Generated DLQs (every platform, payload kind, header chains, EBCDIC), some damaged by
    the fuzz mutator: the source's rows are ingest's, however ingest cuts the files."""
    out = tmp_path_factory.mktemp("generated")
    paths = write_generated(out, 120, seed=seed, files=files, max_size=6000)
    if damaged:
        rng = random.Random(seed)
        for path in paths:
            path.write_bytes(mutate(rng, path.read_bytes()))
    assert_rows_are_ingests(sources, paths, split_bytes)


def test_bad_records_are_rows_left_out_or_a_failure_as_mode_says(sources, tmp_path):
    dump = FIXTURES / "fuzz-corpus"
    permissive = sources.read.format("mqdump").load(str(dump))
    bad = permissive.where("error_code IS NOT NULL").count()
    assert bad > 0
    dropped = sources.read.format("mqdump").option("mode", "DROPMALFORMED").load(str(dump))
    assert dropped.where("error_code IS NOT NULL").count() == 0
    assert dropped.count() == permissive.count() - bad
    first = collected(permissive.where("error_code IS NOT NULL"), QUARANTINE_COLUMNS)
    with pytest.raises(Exception, match="mode FAILFAST") as failed:
        sources.read.format("mqdump").option("mode", "failfast").load(str(dump)).collect()
    assert any(
        f"line {r['source_line']}, byte {r['source_offset']}: {r['error_code']}" in str(failed.value) for r in first
    )
    assert MalformedRecord.__name__ in str(failed.value)


def test_each_kind_has_its_own_source(sources, tmp_path):
    """``dmpmqmsg`` and ``amqsbcg`` read their own kind as ``mqdump`` does, and give a file of
    the other kind one row saying so."""
    listing, dump = FIXTURES / "amqsbcg-94.txt", FIXTURES / "real" / "mq10-dmpmqmsg-stdout.dmp"
    shutil.copy(listing, tmp_path / listing.name)
    shutil.copy(dump, tmp_path / dump.name)
    columns = [*MESSAGE_COLUMNS, *ERROR_COLUMNS]
    both = collected(sources.read.format("mqdump").load(str(tmp_path)), columns)
    for kind, own, other in (("amqsbcg", listing, dump), ("dmpmqmsg", dump, listing)):
        rows = collected(sources.read.format(kind).load(str(tmp_path)), columns)
        theirs = [r for r in rows if r["source_file"] == str(tmp_path / own.name)]
        assert theirs == [r for r in both if r["source_file"] == str(tmp_path / own.name)] and theirs
        wrong = [r for r in rows if r["source_file"] == str(tmp_path / other.name)]
        assert [(r["error_code"], r["source_line"], r["source_offset"]) for r in wrong] == [("wrong_format", 1, 0)]
        assert "read it with format 'mqdump'" in wrong[0]["error_text"]


def test_path_glob_filter_and_sql(sources, tmp_path):
    for name in ("a.dmp", "b.txt"):
        shutil.copy(FIXTURES / "real" / "mq10-dmpmqmsg-stdout.dmp", tmp_path / name)
    chosen = sources.read.format("mqdump").option("pathGlobFilter", "*.dmp").load(str(tmp_path))
    assert {r["source_file"] for r in chosen.select("source_file").distinct().collect()} == {str(tmp_path / "a.dmp")}
    sources.sql(f"CREATE OR REPLACE TEMPORARY VIEW dumps USING mqdump OPTIONS (path '{tmp_path}', decode 'true')")
    by_sql = sources.sql("SELECT source_file, count(*) AS n, count(has_dlh) AS decoded FROM dumps GROUP BY source_file")
    counts = {r["source_file"]: (r["n"], r["decoded"]) for r in by_sql.collect()}
    assert counts == {
        str(tmp_path / "a.dmp"): (chosen.count(), chosen.count()),
        str(tmp_path / "b.txt"): (chosen.count(), chosen.count()),
    }


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("mode", "LENIENT", "option mode must be one of PERMISSIVE, DROPMALFORMED, FAILFAST, not 'LENIENT'"),
        ("decode", "yes", "option decode must be true or false, not 'yes'"),
        ("maxMessageBytes", "-5", "option maxMessageBytes must be a positive whole number, not '-5'"),
        ("dumpTimeZone", "CEST", "option dumpTimeZone: 'CEST' is not an IANA time zone name"),
    ],
)
def test_a_bad_option_is_named(sources, option, value, says):
    with pytest.raises(Exception, match=says):
        sources.read.format("mqdump").option(option, value).load(str(FIXTURES / "real")).collect()


def test_a_missing_path_is_named(sources, tmp_path):
    with pytest.raises(Exception, match="no such file or directory"):
        sources.read.format("mqdump").load(str(tmp_path / "nothing-here")).collect()


def test_no_files_is_no_rows(sources, tmp_path):
    (tmp_path / "empty-dir").mkdir()
    assert sources.read.format("mqdump").load(str(tmp_path / "empty-dir")).collect() == []


def test_a_dump_header_stamp_is_read_in_the_zone_the_option_names(sources):
    """The real dump's header says ``Created:Tue Sep 22 02:34:33 2026``; a listing says
    nowhere when it was taken, so its file's modification time does."""
    dump, listing = FIXTURES / "real" / "mq10-dmpmqmsg-stdout.dmp", FIXTURES / "amqsbcg-old.txt"

    def recorded(zone: str | None) -> dict[str, int]:
        reader = sources.read.format("mqdump")
        if zone is not None:
            reader = reader.option("dumpTimeZone", zone)
        rows = reader.load([str(dump), str(listing)]).where("error_code IS NULL")
        return {
            r.source_kind: r.at for r in rows.select("source_kind", F.unix_micros("recorded_at").alias("at")).collect()
        }

    stamp = 1_790_044_473_000_000  # 2026-09-22T02:34:33Z
    modified = epoch_micros(stat(str(listing)).modified)  # as the listing of its folder gives it
    assert recorded(None) == {"dmpmqmsg": stamp, "amqsbcg": modified}  # UTC unless told
    assert recorded("Australia/Sydney") == {"dmpmqmsg": stamp - 10 * 3600 * 1_000_000, "amqsbcg": modified}


def test_the_size_limit_is_ingests(sources):
    dump = str(FIXTURES / "real" / "mq10-dmpmqmsg-stdout.dmp")
    read = sources.read.format("mqdump").option("maxMessageBytes", "10").load(dump)
    codes = {r["error_code"] for r in read.collect()}
    assert "message_too_large" in codes


# --- the column functions ---------------------------------------------------------------------


def test_decode_dlh_and_the_decode_option_are_the_decode_stage(sources, tmp_path):
    paths = write_generated(tmp_path, 200, seed=91, files=2, max_size=9000)
    read = sources.read.format("mqdump").load(str(tmp_path))
    names = decoded_struct().fieldNames()
    keys = ["source_file", "source_offset"]
    stage = collected(decode_headers(read), [*keys, *names])
    by_function = read.select(*keys, dlq_pipeline.decode_dlh("data").alias("dlh")).select(*keys, "dlh.*")
    from_head = read.select(*keys, dlq_pipeline.decode_dlh(F.col("data_head")).alias("dlh")).select(*keys, "dlh.*")
    option = sources.read.format("mqdump").option("decode", "true").load(str(tmp_path))
    assert len(stage) == 200 and len(paths) == 2
    assert collected(by_function, [*keys, *names]) == stage
    assert collected(from_head, [*keys, *names]) == stage
    assert collected(option, [*keys, *names]) == stage


def test_reason_name_names_every_reason(sources):
    codes = [*sorted(reason_names()), 0, 1, 999_999, None]
    frame = sources.createDataFrame([(c,) for c in codes], "dlh_reason int")
    got = {
        r["dlh_reason"]: r["name"]
        for r in frame.select("dlh_reason", dlq_pipeline.reason_name().alias("name")).collect()
    }
    assert got == {c: (python_reason_name(c) if c is not None else None) for c in codes}
    assert got[2053] == "MQRC_Q_FULL"


def test_decide_gives_each_message_the_decision_a_run_gives(sources, tmp_path):
    """Three lines, as a notebook writes them, decide as ``run`` decides: the same action, rule,
    target and ignore reason for every message (attempts 0: a first run)."""
    paths = write_generated(tmp_path / "dumps", 300, seed=5, files=2, max_size=9000)
    settings = dlq_pipeline.RunSettings.from_config(
        dlq_pipeline.load_config(overrides={"storage": {"path": str(tmp_path / "wh")}})
    )
    dlq_pipeline.run_pipeline(
        sources, settings, load_rules(STARTER), inputs=[str(tmp_path / "dumps")], target="dry-run"
    )
    stored = dlq_pipeline.open_warehouse(sources, settings.storage).read("decisions")

    decided = sources.read.format("mqdump").load(str(tmp_path / "dumps")).transform(dlq_pipeline.decide(STARTER))

    columns = ["message_key", *DECISION_COLUMNS]
    ours = sorted((tuple(r) for r in decided.select(*columns).dropDuplicates(["message_key"]).collect()), key=str)
    runs = sorted((tuple(r) for r in stored.select(*columns).collect()), key=str)
    assert ours == runs and len(paths) == 2 and runs


def test_decide_counts_attempts_and_leaves_bad_records_undecided(sources):
    rules = load_rules(STARTER)
    read = sources.read.format("mqdump").load(str(FIXTURES))
    first = read.transform(dlq_pipeline.decide(rules))
    assert first.where("error_code IS NOT NULL AND action IS NOT NULL").count() == 0
    assert first.where("error_code IS NULL AND action IS NULL").count() == 0
    retries = first.where("action = 'RETRY'").select("message_key").collect()
    assert retries
    exhausted = read.transform(dlq_pipeline.decide(rules, attempts=1000))
    assert exhausted.where("action = 'RETRY'").count() == 0
    by_column = read.withColumn("tries", F.lit(1000)).transform(dlq_pipeline.decide(rules, attempts="tries"))
    assert (
        by_column.select("message_key", "action", "ignore_reason").collect()
        == exhausted.select("message_key", "action", "ignore_reason").collect()
    )


def test_ingest_reads_by_map_in_arrow_where_the_driver_cannot_plan_the_source(sources, monkeypatch, caplog):
    """A spark-submit in client mode with a packed environment: the driver cannot start the
    Python that plans the source (tests/cluster/test_deploy_doc.py runs the real one). Ingest
    reads the same rows by mapInArrow, and says why in its log."""
    import logging

    import dlq_pipeline.ingest.spark as ingest_spark

    paths = [str(FIXTURES / "amqsbcg-94.txt"), str(FIXTURES / "real")]
    planned, _ = land(sources, paths, run_id="R", reader="python")

    def unplannable(*_args):
        raise RuntimeError(
            'An error occurred while calling o300.load.\n: Cannot run program "./environment/bin/python"'
        )

    monkeypatch.setattr(ingest_spark, "source_scan", unplannable)
    with caplog.at_level(logging.INFO, logger="dlq_pipeline.ingest.spark"):
        mapped, _ = land(sources, paths, run_id="R", reader="python")
    assert collected(mapped, MESSAGE_COLUMNS) == collected(planned, MESSAGE_COLUMNS) != []
    assert 'Cannot run program "./environment/bin/python"): read by mapInArrow' in caplog.text
