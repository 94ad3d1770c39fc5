"""The JVM reader (`dlq_pipeline.ingest.jvm_reader`, the Java data source in
``dlq_pipeline/ingest/jvm/``) gives the Python reader's rows, or leaves the work item to it.

The oracle is the Python reader (`dumps.spark.read_item`, the rows `scan` hands Spark from a
Python worker): every work item the JVM reader reads to its end must hold exactly the rows
Python gives for it, column for column; an item it does not read ends in its ``fallback`` row, and ingest then reads it
with Python, so a landing is the same whichever reader ran. Inputs: the real fixture, the
test fixtures, generated DLQs (every platform and payload kind, header chains, z/OS EBCDIC),
and damaged copies of them made by the fuzz mutator, each cut into byte ranges of several
sizes. Generated dumps must not fall back at all: that is the JVM reader doing the work.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random

import pytest
from pyspark.sql import functions as F

from dlq_pipeline.config.settings import IngestSettings
from dlq_pipeline.dumps.dmpmqmsg import MAX_LINE_LENGTH
from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.dumps.generator import generate_messages, write_generated
from dlq_pipeline.dumps.plan import plan_work
from dlq_pipeline.dumps.spark import RAW_SCHEMA, read_item
from dlq_pipeline.ingest import jvm_reader
from dlq_pipeline.ingest.spark import ingest, jvm_available, jvm_items, land, read_in_jvm, scan
from dlq_pipeline.mq.constants import MQ_MAX_MESSAGE_BYTES
from tests.conftest import make_storage
from tests.spark.test_ingest import STAMPS, concatenated_runs, corrupt_text
from tests.spark.test_storage import assert_same_rows
from tests.support import REPO
from tests.unit.test_fuzz import mutate

pytestmark = pytest.mark.spark

FIXTURES = REPO / "tests" / "fixtures"
LANDED = dt.datetime(2026, 11, 30, 4, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def jvm(spark):
    """The suite's session has the reader (make test builds the jar before pytest starts)."""
    if not jvm_available(spark):
        pytest.fail(
            "the JVM reader is not on the test session: build it with `make jvm-reader` "
            "(python -m dlq_pipeline.ingest.jvm_reader)"
        )
    return spark


def _plain(value):
    return bytes(value) if isinstance(value, bytearray) else value


def by_item(rows) -> dict[int, list[dict]]:
    """Rows (dicts of every RAW_SCHEMA column) by work item, in file order, the item's own row last."""
    out: dict[int, list[dict]] = {}
    for d in rows:
        out.setdefault(d["item"], []).append(d)
    for found in out.values():
        found.sort(key=lambda d: (d["rec"] in ("split", "fallback"), d["source_offset"] or 0, d["rec"]))
    return out


def python_rows(items, limits) -> list[dict]:
    """The oracle: the Python reader's rows of each item, as `scan` gives them to Spark."""
    names = RAW_SCHEMA.fieldNames()
    return [
        {name: row.get(name) for name in names}
        for number, item in enumerate(items)
        for row in read_item(item, number=number, **limits)
    ]


def compare(spark, paths, split_bytes, *, limits=None, dumps_only=True) -> tuple[int, dict[int, str]]:
    """Read ``paths`` with the JVM reader; every item it reads to the end must hold the Python
    reader's rows. Returns (items the JVM reader read to the end, the items it left to
    Python, with its reasons)."""
    limits = limits or {}
    items = plan_work([str(p) for p in paths], split_bytes)
    numbers = jvm_items(spark, items)
    if dumps_only:
        assert numbers == frozenset(range(len(items))), "every item is a local dmpmqmsg dump"
    jvm_read = [
        {k: _plain(v) for k, v in r.asDict(recursive=True).items()}
        for r in read_in_jvm(
            spark,
            RAW_SCHEMA,
            [(n, items[n]) for n in sorted(numbers)],
            limits.get("max_line_length", MAX_LINE_LENGTH),
            limits.get("max_message_bytes", MQ_MAX_MESSAGE_BYTES),
            limits.get("dump_time_zone", "UTC"),
        )
        .withColumn("recorded_at", F.unix_micros("recorded_at"))  # as the Python reader's rows hold it
        .collect()
    ]
    ours, python = by_item(jvm_read), by_item(python_rows(items, limits))
    left = {}
    for number in sorted(numbers):
        item, rows = items[number], ours[number]
        fallback = [r for r in rows if r["rec"] == "fallback"]
        if fallback:
            assert len(fallback) == 1 and rows[-1]["rec"] == "fallback" and not any(r["rec"] == "split" for r in rows)
            left[number] = fallback[0]["error_text"]
            continue
        assert rows == python[number], f"{item.path} bytes {item.start}..{item.end}"
    return len(numbers) - len(left), left


def test_a_session_get_spark_builds_has_the_reader(jvm):
    assert jvm_reader.existing() in jvm.sparkContext.getConf().get("spark.driver.extraClassPath").split(os.pathsep)
    items = plan_work([str(FIXTURES / "real" / "mq10-dmpmqmsg-stdout.dmp")])
    assert (
        "dmpmqmsg dumps, 1 work items"
        in scan(jvm, items, jvm=jvm_items(jvm, items))._jdf.queryExecution().executedPlan().toString()
    )


@pytest.mark.parametrize("split_bytes", [64 << 20, 4096, 300, 97])
def test_the_fixtures_read_as_python_reads_them(jvm, split_bytes):
    dumps = (
        sorted(FIXTURES.glob("*.dmp"))
        + sorted((FIXTURES / "fuzz-corpus").glob("*.dmp"))
        + sorted((FIXTURES / "real").glob("*.dmp"))
    )
    read, left = compare(jvm, dumps, split_bytes)
    assert read > 0
    # the real fixture and the CRLF one are what dmpmqmsg writes: the JVM reads them itself
    plain = [
        n
        for n, i in enumerate(plan_work([str(p) for p in dumps], split_bytes))
        if i.path.endswith(("mq10-dmpmqmsg-stdout.dmp", "dump-crlf.dmp"))
    ]
    assert plain and not set(plain) & set(left), left


@pytest.mark.parametrize("split_bytes", [64 << 20, 1 << 20, 50_000])
def test_generated_dlqs_are_read_by_the_jvm_alone(jvm, tmp_path, split_bytes):
    """Every platform and payload kind of the generator, z/OS EBCDIC and header chains
    included, in a dump cut into ranges that fall anywhere: no item falls back."""
    paths = write_generated(tmp_path, 600, seed=404, files=3, max_size=40_000)
    read, left = compare(jvm, paths, split_bytes)
    assert not left and read >= 3


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "Asia/Kolkata", "Pacific/Chatham"])
def test_dumps_of_several_runs_are_recorded_as_python_records_them(jvm, tmp_path, zone):
    """Each message under its own run's header, its Created stamp read in the zone ingest
    names, or the file's modification time: the JVM reads such a file itself, in any ranges."""
    path = concatenated_runs(tmp_path / "runs")
    os.utime(path, ns=(1_790_000_000_123_456_000,) * 2)
    for split_bytes in (64 << 20, 5_000, 997):
        assert compare(jvm, [path], split_bytes, limits={"dump_time_zone": zone})[1] == {}
    rows = [r for r in python_rows(plan_work([str(path)]), {"dump_time_zone": zone}) if r["rec"] == "message"]
    assert len(rows) == 4 * len(STAMPS)
    stamped = {r["recorded_at"] for r in rows} - {1_790_000_000_123_456}
    # the ctime() stamps that name an instant: year 1 at 00:30 is one only where it is still year 1 in UTC
    assert len(stamped) == (5 if zone == "UTC" else 4)


def test_a_zone_the_jvm_does_not_know_leaves_the_item_to_python(jvm, tmp_path):
    [path] = write_generated(tmp_path, 3, seed=5, files=1)
    read, left = compare(jvm, [path], 64 << 20, limits={"dump_time_zone": "posixrules"})
    assert (read, list(left.values())) == (0, ["the time zone posixrules is not one this JVM knows"])


def test_limits_are_the_python_readers(jvm, tmp_path):
    """A line over max_line_length, a message over max_message_bytes: the item is left to
    Python, whose error rows the landing gets; without the limits the JVM reads it."""
    wide = tmp_path / "wide.dmp"
    write_dump(generate_messages(30, seed=9, max_size=6_000), wide, hex_width=60)  # X lines of 122 bytes
    assert compare(jvm, [wide], 64 << 20) == (1, {})
    read, left = compare(jvm, [wide], 64 << 20, limits={"max_line_length": 100})
    assert not read and "longer than 100 bytes" in left[0]
    read, left = compare(jvm, [wide], 64 << 20, limits={"max_message_bytes": 1_500})
    assert not read and "larger than the limit" in left[0]


def test_damaged_dumps_read_as_python_reads_them(jvm, tmp_path):
    """The fuzz mutator's damage (flipped bytes, cuts, spliced lines, dropped or doubled
    lines, CRLF, a second copy appended) to generated dumps and the fixtures, cut into
    ranges: each item is read as Python reads it, or left to Python."""
    rng = random.Random(1612)
    seeds = [p.read_bytes() for p in write_generated(tmp_path / "seed", 12, seed=77, files=3, max_size=3_000)]
    seeds += [p.read_bytes() for p in sorted(FIXTURES.glob("*.dmp"))]
    folder = tmp_path / "damaged"
    folder.mkdir()
    for n in range(100):
        (folder / f"v{n:03}.dmp").write_bytes(mutate(rng, rng.choice(seeds)))
    paths = sorted(folder.glob("*.dmp"))
    read, left = compare(jvm, paths, 1_000, dumps_only=False)
    assert read > 1_000 and len(left) > 100  # both readers had work: most ranges hold no damage
    read, left = compare(jvm, paths, 64 << 20, dumps_only=False)
    assert len(left) > 50


def test_a_landing_is_the_same_whichever_reader_reads(jvm, tmp_path):
    """land() and ingest() with the JVM reader (its fallbacks read again by Python) against
    the Python reader alone: the same messages and quarantine rows, also split."""
    corrupt = tmp_path / "corrupt.dmp"
    corrupt.write_text(corrupt_text()[0])
    paths = [str(corrupt), *map(str, write_generated(tmp_path / "g", 60, seed=3, files=2, max_size=4_000))]
    for split_bytes in (64 << 20, 20_000):
        ours = land(jvm, paths, run_id="r1", landed_at=LANDED, split_bytes=split_bytes)
        python = land(jvm, paths, run_id="r1", landed_at=LANDED, split_bytes=split_bytes, reader="python")
        for a, b in zip(ours, python):
            assert_same_rows(a, b)
    tables = {}
    for reader in ("auto", "python"):
        storage = make_storage(jvm, "parquet", tmp_path / f"wh-{reader}")
        result = ingest(
            jvm,
            storage,
            paths,
            run_id="r1",
            landed_at=LANDED,
            settings=IngestSettings(split_bytes=20_000, reader=reader),
        )
        tables[reader] = (result.as_dict(), storage.read("messages"), storage.read("quarantine"))
    ours, python = tables["auto"][0], tables["python"][0]
    assert (
        ours.pop("jvm_work_items") == ours["work_items"] - 1 and python.pop("jvm_work_items") == 0
    )  # the bad one: Python
    assert ours == python and ours["quarantined"] == 3
    assert_same_rows(tables["auto"][1], tables["python"][1])
    assert_same_rows(tables["auto"][2], tables["python"][2])


def test_a_jar_built_from_other_sources_is_refused(jvm):
    """The data source checks the digest of the sources it was built from against the
    package's: another build (on a cluster, a Connect server) is unavailable, not trusted."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    layout = jvm_reader.layout(80, None)
    layout["digest"] = "0" * 16
    with pytest.raises((Py4JJavaError, PySparkException, Exception), match="built from other sources"):
        (
            jvm.read.format(jvm_reader.SOURCE_CLASS)
            .schema(RAW_SCHEMA)
            .option("items", "[]")
            .option("layout", json.dumps(layout))
            .load()
        )


def test_reader_python_reads_nothing_with_the_jvm(jvm, tmp_path):
    [path] = write_generated(tmp_path, 5, seed=1, files=1)
    items = plan_work([str(path)])
    assert jvm_items(jvm, items, "python") == frozenset() and jvm_items(jvm, items) == {0}
