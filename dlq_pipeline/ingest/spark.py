"""Land dmpmqmsg dumps and amqsbcg listings into ``messages`` and ``quarantine``.

**Work.** The driver expands directories and globs, sniffs each file and plans *work
items* ``(path, start, end)``: a dump larger than ``split_bytes`` becomes several byte
ranges (the reader finds message boundaries itself, so one big dump is read by many tasks),
a listing is one item. Items run one per Spark partition: a dmpmqmsg dump's in the JVM
reader where the session has it (`ingest.jvm_reader`), the others through the ``mqdump``
data source, which runs `dumps.spark.read_item` (the reader of every Spark read of a dump)
in a Python worker: DataFrame API only, so it also works over Spark Connect, where there
is no SparkContext.

**Positions.** A read that starts inside a file cannot know its line numbers or message
ordinals without reading what comes before. So each task of a split file also counts the
newlines and records of its own byte range (the reader numbers lines from the split's
start, so only the last record's bytes up to the range's end are read again to count
them); the driver turns those per-split counts into per-split bases (a running sum in file
order), and every row gets ``index = base + ordinal`` and ``line = 1 + base + newlines
before it``: the same numbers a single full read gives, without moving any message data.
Likewise for when a message was recorded (``recorded_at``, the ``Created:`` stamp of the dump
header above it): a task knows the header lines of the file's prologue and of its own range,
and reports the last; in a file of several dumps concatenated, a record before its range's
first header line is under the last header an earlier range passed (`header_bases`).

**Rows.** Messages get every MQMD field typed, data as bytes, ``data_digest`` and
``message_key`` (``identity.py``); a key that repeats within one landing lands once (the
first in file order). ``RecordError``s become ``quarantine`` rows with file, line, offset,
code, text and snippet. Nothing is dropped: a file that cannot be opened or a reader that
fails mid-file becomes a quarantine row too.

**Paths.** Input files are opened by Python on the executors, so on a cluster they must be
on storage every node mounts: ``/dbfs/...`` (or ``dbfs:/...``, read through the /dbfs
mount), ``/Volumes/...``, NFS. Object-store URIs (``s3a://``, ``abfss://``, ``hdfs://``) are
refused with a clear error: copy the dumps to a mounted path first.

**Text.** MQMD character fields are stored as Spark strings (UTF-8). A dump from a host
whose code page is not UTF-8 can hold other bytes there; such a field is stored readable,
with U+FFFD for each such byte (what rules match, as `rules test` does), the note
``char_field_not_utf8:<field>``, and its exact bytes in ``md_char_bytes`` (replay puts
those back; ``message_key`` is computed from the bytes as read).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from dlq_pipeline import fs
from dlq_pipeline.config.settings import IngestSettings
from dlq_pipeline.dumps.dmpmqmsg import MAX_LINE_LENGTH
from dlq_pipeline.dumps.plan import DEFAULT_SPLIT_BYTES, FileSplit, plan_work
from dlq_pipeline.dumps.spark import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_TIME_ZONE,
    RAW_SCHEMA,
    has_data_sources,
    items_option,
    read_items,
    register,
)
from dlq_pipeline.engine import large_messages
from dlq_pipeline.engine.session import storage_memory_bytes
from dlq_pipeline.engine.tasks import Report, TaskTicker
from dlq_pipeline.errors import UsageError
from dlq_pipeline.ingest import jvm_reader
from dlq_pipeline.ingest.inputs import (
    READ_FAILURES,
    InputFile,
    InputPlan,
    LandedFile,
    clean_sources,
    inside,
    landed_files_of,
    list_inputs,
    plan_inputs,
    still_same,
)
from dlq_pipeline.runtime.clock import as_utc, utc_now
from dlq_pipeline.runtime.testhooks import crash_point
from dlq_pipeline.warehouse.landings import record_landing, recording_files, stored_message_keys
from dlq_pipeline.warehouse.schemas import collected_arrow, conform, local_rows
from dlq_pipeline.warehouse.storage import COMPACTED_TABLES, local_table

log = logging.getLogger(__name__)

SKIP_BROADCAST_ROWS = 100_000  # rows to leave out of a landing, above which ingest deduplicates whole rows
# Dumps up to this size send their messages' keys and positions with the read's summary, and
# the rows to leave out are found on the driver: no job for them (two with adaptive execution)
# when the table is new, a lookup of two without a shuffle when it is not. A dmpmqmsg record
# takes at least some 640 bytes, so 1 GiB of dumps is at most some 1.7 million messages,
# whose keys and positions come to the driver as Arrow columns (under 200 MB; 20 MB for
# 100,000 messages).
KEYS_WITH_SUMMARY_BYTES = 1024**3
MEMORY_CACHE_SHARE = 0.5  # dumps up to this share of Spark's storage memory are cached in memory
# Parquet sizes its pages and row groups only every 100 rows by default: until then a task
# buffers every large message it writes (twice: the open page and the row group's pages).
# Checked after every row, each large message leaves the heap once written, and is read back
# as a row group of its own (one row per vectorized batch, not a batch of 100 MB values).
# On top of the table's own options (`storage.TABLE_PARQUET_OPTIONS`: no dictionary for data
# and the unique columns).
LARGE_MESSAGE_PARQUET = {
    "parquet.column.statistics.enabled#data": "false",
    "compression": "uncompressed",
    "parquet.page.size.row.check.min": "1",
    "parquet.page.size.row.check.max": "1",
    "parquet.page.size.check.estimate": "false",
}


def _python_scan(
    spark: SparkSession,
    numbered: Sequence[tuple[int, FileSplit]],
    max_line_length: int,
    max_message_bytes: int,
    dump_time_zone: str = DEFAULT_TIME_ZONE,
) -> DataFrame:
    """The raw rows of work items read by the Python readers: through the ``mqdump`` data
    source where Spark has Python data sources (4.0+), else by `mapInArrow` of the same reader.

    Spark plans a Python data source on the driver, with the Python that ``PYSPARK_PYTHON``
    (``spark.pyspark.python``) names, which a spark-submit in client mode with a packed
    environment sets to the executors' unpacked archive (``./environment/bin/python``), absent
    where the driver runs: the source cannot be planned there, and ingest reads by
    `mapInArrow`, whose Python runs on the executors only."""
    if has_data_sources(spark):
        try:
            return source_scan(spark, numbered, max_line_length, max_message_bytes, dump_time_zone)
        except Exception as exc:  # noqa: BLE001 - planning runs Python on the driver (see above)
            said = [line.strip(" :") for line in str(exc).splitlines() if line.strip(" :")]
            reason = "; ".join(said[:2]) or type(exc).__name__  # py4j's first line names only the call
            log.info("ingest: the mqdump data source cannot be planned on this driver (%s): read by mapInArrow", reason)
    return arrow_scan(spark, numbered, max_line_length, max_message_bytes, dump_time_zone)


def source_scan(
    spark: SparkSession,
    numbered: Sequence[tuple[int, FileSplit]],
    max_line_length: int,
    max_message_bytes: int,
    dump_time_zone: str = DEFAULT_TIME_ZONE,
) -> DataFrame:
    """The raw rows of work items ((number in the plan, item) pairs), one partition each,
    read by the ``mqdump`` data source (`dumps.spark`), given the plan."""
    register(spark)
    return (
        spark.read.format("mqdump")
        .option("workItems", items_option(numbered))
        .option("maxLineLength", str(max_line_length))
        .option("maxMessageBytes", str(max_message_bytes))
        .option("dumpTimeZone", dump_time_zone)
        .load()
    )


def arrow_scan(
    spark: SparkSession,
    numbered: Sequence[tuple[int, FileSplit]],
    max_line_length: int,
    max_message_bytes: int,
    dump_time_zone: str = DEFAULT_TIME_ZONE,
) -> DataFrame:
    """`source_scan`'s rows by `mapInArrow` of the same reader over one row per work item:
    for Spark before 4.0, which has no Python data sources."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            chosen = [numbered[position] for position in batch.column(0).to_pylist()]
            yield from read_items(
                chosen,
                max_line_length=max_line_length,
                max_message_bytes=max_message_bytes,
                dump_time_zone=dump_time_zone,
            )

    positions = spark.range(0, len(numbered), 1, numPartitions=len(numbered))
    return positions.mapInArrow(run, RAW_SCHEMA)


def read_in_jvm(
    spark: SparkSession,
    schema: StructType,
    numbered: Sequence[tuple[int, FileSplit]],
    max_line_length: int,
    max_message_bytes: int | None,
    dump_time_zone: str = "UTC",
) -> DataFrame:
    """The DataFrame of the JVM reader (`ingest.jvm_reader`) over ``numbered`` work items
    (one partition each)."""
    return (
        spark.read.format(jvm_reader.SOURCE_CLASS)
        .schema(schema)
        .option("items", jvm_reader.items_option(numbered))
        .option("layout", json.dumps(jvm_reader.layout(max_line_length, max_message_bytes, dump_time_zone)))
        .load()
    )


_PROBED = "_dlq_pipeline_jvm_reader"


def jvm_available(spark: SparkSession) -> bool:
    """Whether ``spark`` can run the JVM reader of these sources (asked once per session:
    the data source is resolved, and its digest checked, without reading anything)."""
    known = getattr(spark, _PROBED, None)
    if known is not None:
        return known
    try:
        _ = read_in_jvm(spark, StructType([StructField("rec", StringType())]), [], 80, None).schema  # analysed: loaded
        found = True
    except Exception as exc:  # noqa: BLE001 - not on the classpath, another build, no JVM: Python reads
        log.info(
            "ingest: the JVM reader is not available (%s); dumps are read with Python",
            str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__,
        )
        found = False
    try:
        setattr(spark, _PROBED, found)
    except AttributeError:
        pass
    return found


def jvm_items(spark: SparkSession, items: Sequence[FileSplit], reader: str = "auto") -> frozenset[int]:
    """The numbers of the work items the JVM reader takes (`ingest.jvm_reader`): with ``reader``
    ``auto``, the dmpmqmsg dumps at local paths, when this session has the reader's jar."""
    if reader != "auto" or not any(jvm_reader.readable(i) for i in items) or not jvm_available(spark):
        return frozenset()
    return frozenset(n for n, i in enumerate(items) if jvm_reader.readable(i))


def scan(
    spark: SparkSession,
    items: Sequence[FileSplit],
    *,
    jvm: Collection[int] = (),
    max_line_length: int = MAX_LINE_LENGTH,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    dump_time_zone: str = DEFAULT_TIME_ZONE,
) -> DataFrame:
    """The raw rows of ``items``, one work item per partition (``RAW_SCHEMA``): the items
    numbered in ``jvm`` read by the JVM reader (`jvm_items`), the rest by the Python readers.
    ``dump_time_zone``: the IANA zone dump headers' ``Created:`` stamps are read in."""
    if not items:
        return spark.createDataFrame([], RAW_SCHEMA)
    numbered = list(enumerate(items))
    in_jvm = [(n, i) for n, i in numbered if n in jvm]
    in_python = [(n, i) for n, i in numbered if n not in jvm]
    parts = []
    if in_jvm:
        parts.append(read_in_jvm(spark, RAW_SCHEMA, in_jvm, max_line_length, max_message_bytes, dump_time_zone))
    if in_python:
        parts.append(_python_scan(spark, in_python, max_line_length, max_message_bytes, dump_time_zone))
    return parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])


# --- raw rows -> table rows ------------------------------------------------------------------


KEY_COLUMNS = ["message_key", "source_file", "source_offset"]  # a landing's keys and positions


@dataclass(frozen=True)
class ReadSummary:
    """What the driver learns of a read: each work item's row (``items``: its records,
    newlines, messages, bad records, largest message's data and last dump header line, its
    offset and when its messages were recorded, epoch microseconds; or the JVM reader's row
    that leaves the item to Python, ``rec`` fallback with the reason in ``error_text``),
    and, when asked for, every message's key and position (``keys``, `KEY_COLUMNS`)."""

    items: list[dict[str, Any]]
    keys: pa.Table | None = None


ITEM_FIGURES = (
    "split",
    "splits",
    "item",
    "ordinal",
    "newlines",
    "messages",
    "errors",
    "largest",
    "header_offset",
    "recorded",
)


def _figure(name: str):
    """A work item's figure as a long: its column, or (``recorded``) its last header line's
    ``recorded_at`` in epoch microseconds."""
    return F.unix_micros(F.col("recorded_at")) if name == "recorded" else F.col(name).cast("long")


def read_summary(raw: DataFrame, keys: bool = False) -> ReadSummary:
    """What the driver needs of a read, in one job without a shuffle, collected as Arrow
    columns. A work item's figures travel as one list, null on a message's row, so each
    message costs the driver its key, file and offset (some 100 bytes), not a Python row."""
    kinds = ("split", "fallback", "message") if keys else ("split", "fallback")
    figures = F.array(*[_figure(name) for name in ITEM_FIGURES])
    table = collected_arrow(
        raw.where(F.col("rec").isin(*kinds)).select(
            "rec",
            *KEY_COLUMNS,
            "error_text",
            F.when(F.col("rec") != "message", figures).alias("figures"),
        )
    )
    is_message = pc.equal(table.column("rec"), "message")
    items = [
        {"rec": row["rec"], "source_file": row["source_file"], "error_text": row["error_text"]}
        | dict(zip(ITEM_FIGURES, row["figures"], strict=True))
        for row in table.filter(pc.invert(is_message)).to_pylist()
    ]
    return ReadSummary(items, table.filter(is_message).select(KEY_COLUMNS) if keys else None)


def rows_to_leave_out(keys: pa.Table, stored: pa.Array | pa.ChunkedArray | None = None) -> list[tuple[str, int]]:
    """``(source_file, source_offset)`` of the rows a landing must leave out, from its message
    keys and positions (`KEY_COLUMNS`) and the keys already ``stored``: what `skipped_rows`
    finds in Spark (every occurrence of a key after its first in file order, every row of
    a stored key), found on the driver in Arrow (pure; sorted). Arrow, Python and Spark all
    order strings by their UTF-8 bytes, so "first in file order" is the same in each."""
    ordered = keys.sort_by([("source_file", "ascending"), ("source_offset", "ascending")])
    ordered = ordered.append_column("_at", pa.array(range(ordered.num_rows), pa.int64()))
    firsts = ordered.group_by("message_key", use_threads=False).aggregate([("_at", "min")]).column("_at_min")
    leave = pc.invert(pc.is_in(ordered.column("_at"), value_set=firsts))
    if stored is not None and len(stored):
        leave = pc.or_(leave, pc.is_in(ordered.column("message_key"), value_set=stored))
    left = ordered.filter(leave)
    return sorted(set(zip(left.column("source_file").to_pylist(), left.column("source_offset").to_pylist())))


def fallbacks(summary: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    """The work items the JVM reader left to the Python reader, with its reason (pure)."""
    return {r["item"]: r["error_text"] for r in summary if r["rec"] == "fallback"}


def split_bases(summary: Sequence[Mapping[str, Any]]) -> dict[int, tuple[int, int]]:
    """Per work item of a split file (by its number): the records and newlines in the file's
    ranges before it (from `read_summary`; pure)."""
    counts = [
        (r["source_file"], r["split"], r["item"], r["ordinal"], r["newlines"])
        for r in summary
        if r["splits"] > 1 and r["rec"] == "split"
    ]
    bases: dict[int, tuple[int, int]] = {}
    running: dict[str, tuple[int, int]] = {}
    for path, _split, item, records, newlines in sorted(counts):
        before = running.get(path, (0, 0))
        bases[item] = before
        running[path] = (before[0] + records, before[1] + newlines)
    return bases


def header_bases(summary: Sequence[Mapping[str, Any]]) -> dict[int, tuple[int, int | None]]:
    """Per work item of a split file whose ranges know different last dump header lines (a
    file of several dumps concatenated): the last header line the file's ranges before it
    know, as (its offset, when the messages under it were recorded: epoch microseconds, None
    when unknown), from `read_summary` (pure). A record of the item whose own header line
    comes before that one (its task knew no later one) is under that one. A file whose
    ranges all know the same last header line (one dump: its header) needs none."""
    reports: dict[str, list[tuple[int, int, int | None, int | None]]] = {}
    for r in summary:
        if r["splits"] > 1 and r["rec"] == "split":
            reports.setdefault(r["source_file"], []).append((r["split"], r["item"], r["header_offset"], r["recorded"]))
    bases: dict[int, tuple[int, int | None]] = {}
    for ranges in reports.values():
        if len({offset for _, _, offset, _ in ranges}) < 2:
            continue
        latest: tuple[int, int | None] | None = None  # of the ranges so far, in file order
        for _split, item, offset, recorded in sorted(ranges, key=lambda r: r[0]):
            if latest is not None:
                bases[item] = latest
            if offset is not None and (latest is None or offset > latest[0]):
                latest = (offset, recorded)
    return bases


def _positioned(
    raw: DataFrame,
    bases: Mapping[int, tuple[int, int]] | None,
    items: int,
    headers: Mapping[int, tuple[int, int | None]] | None = None,
) -> DataFrame:
    """``raw`` with ``source_index`` and ``source_line`` as a full read of each file gives them,
    and, with ``headers`` (`header_bases`), ``recorded_at`` too. The bases are array literals
    indexed by the work item's number (``items`` of them; 0 for an item of a file read whole):
    a broadcast join with them cost a job, and a row finds its base in constant time however
    many items there are."""
    at = F.col("item") + 1
    if headers:
        offsets = [headers[item][0] if item in headers else -1 for item in range(items)]
        recorded = [headers[item][1] if item in headers else None for item in range(items)]
        later = F.element_at(F.array(*[F.lit(v).cast("long") for v in offsets]), at)
        under = (F.col("rec") == "message") & (later > F.coalesce(F.col("header_offset"), F.lit(-1)))
        when = F.timestamp_micros(F.element_at(F.array(*[F.lit(v).cast("long") for v in recorded]), at))
        raw = raw.withColumn("recorded_at", F.when(under, when).otherwise(F.col("recorded_at")))
    if not bases:
        return raw.withColumn("source_index", F.col("reader_index")).withColumn("source_line", F.col("reader_line"))

    def base(part: int):
        values = [bases.get(item, (0, 0))[part] for item in range(items)]
        return F.element_at(F.array(*[F.lit(v).cast("long") for v in values]), at)

    split_file = F.col("splits") > 1
    return raw.withColumn(
        "source_index",
        F.when(split_file & F.col("reader_index").isNotNull(), base(0) + F.col("ordinal")).otherwise(
            F.col("reader_index")
        ),
    ).withColumn(
        "source_line",
        F.when(split_file, base(1) + F.col("newlines") + 1).otherwise(F.col("reader_line")),
    )


def _timestamp(when: dt.datetime | None) -> dt.datetime:
    """An aware UTC datetime (naive ones are taken as UTC, as the rest of the pipeline does)."""
    return as_utc(when) or utc_now()


def _occurrence():
    """1 for a key's first row in file order, 2 for its second, ..."""
    return F.row_number().over(Window.partitionBy("message_key").orderBy("source_file", "source_offset"))


def messages_rows(
    positioned: DataFrame, *, run_id: str, landed_at: dt.datetime, skip: DataFrame | None = None, unique: bool = False
) -> DataFrame:
    """The ``messages`` rows, conformed: one per message key, the first in file order.

    Without ``skip`` the rows are deduplicated by a window over ``message_key``, which
    shuffles every row with its data. ``skip`` (from ``skipped_rows``, small enough to
    broadcast) names the rows to leave out instead, so the data does not move. ``unique``:
    ``skipped_rows`` found nothing to leave out, so every row is taken as it is."""
    rows = positioned.where(F.col("rec") == "message")
    if skip is not None:
        rows = rows.join(F.broadcast(skip), ["source_file", "source_offset"], "left_anti")
    elif not unique:
        rows = rows.withColumn("_n", _occurrence()).where(F.col("_n") == 1)
    rows = rows.withColumn("landed_at", F.lit(_timestamp(landed_at)).cast("timestamp")).withColumn(
        "run_id", F.lit(run_id)
    )
    return conform(rows, "messages")


def skipped_rows(raw: DataFrame, stored_keys: DataFrame | None = None) -> DataFrame:
    """``(source_file, source_offset)`` of the message rows ``messages_rows`` must leave out:
    every occurrence of a key after its first in file order, and every row whose key is in
    ``stored_keys``. Only keys and positions are shuffled, never the data."""
    narrow = raw.where(F.col("rec") == "message").select("message_key", "source_file", "source_offset")
    skip = narrow.withColumn("_n", _occurrence()).where(F.col("_n") > 1)
    if stored_keys is not None:
        skip = skip.select("source_file", "source_offset").unionByName(
            narrow.join(stored_keys.select("message_key").distinct(), "message_key", "left_semi").select(
                "source_file", "source_offset"
            )
        )
    return skip.select("source_file", "source_offset").distinct()


def quarantine_rows(bad: DataFrame, *, run_id: str, landed_at: dt.datetime) -> DataFrame:
    """The ``quarantine`` rows of the bad-record rows ``bad`` (ingest's positioned read, or
    the ``mqdump`` source's), conformed."""
    rows = bad.select(
        F.lit(run_id).alias("run_id"),
        "source_file",
        "source_line",
        "source_offset",
        "source_index",
        "error_code",
        "error_text",
        "snippet",
        F.lit(_timestamp(landed_at)).cast("timestamp").alias("quarantined_at"),
    )
    return conform(rows, "quarantine")


@dataclass
class _Landing:
    items: list[FileSplit]
    raw: DataFrame
    positioned: DataFrame
    run_id: str
    landed_at: dt.datetime
    persisted: bool = False
    per_file: dict[str, dict[str, int]] | None = None
    largest: int = 0  # bytes of data of the largest message read (known when persisted)
    in_jvm: int = 0  # work items the JVM reader read (the rest: the Python readers)
    keys: pa.Table | None = None  # the message keys and positions of a landing of up to KEYS_WITH_SUMMARY_BYTES

    def messages(self, skip: DataFrame | None = None, unique: bool = False) -> DataFrame:
        return messages_rows(self.positioned, run_id=self.run_id, landed_at=self.landed_at, skip=skip, unique=unique)

    def quarantine(self) -> DataFrame:
        """Built when asked for: most landings have no bad records, and planning the rows costs
        the driver a second or so of analysis."""
        bad = self.positioned.where(F.col("rec") == "error")
        return quarantine_rows(bad, run_id=self.run_id, landed_at=self.landed_at)

    def release(self) -> None:
        if self.persisted:
            self.raw.unpersist()


def read_cache_level(input_bytes: int, storage_bytes: int | None) -> StorageLevel:
    """How ingest caches its one read of the inputs: in memory (spilling to disk) when the
    dumps are at most half the storage memory (their messages, about half a hex dump, then
    take at most a quarter of it), else on disk only. Cached blocks in memory are evicted only
    for memory Spark accounts for, and building a cached batch of a large message is not
    (its column buffers): 100 messages of 100 MB cached in a 2 GB heap left no room to build
    the next batch (docs/performance.md, "Ingest's one cached read"). Inputs that large would spill to disk
    anyway. Unknown storage memory (Spark Connect): in memory, the storage level of a small input.

    In memory the cached batches are kept as they are built (``_DESER``): PySpark's
    ``MEMORY_AND_DISK`` is the serialized level, which copied every batch through Java
    serialization on the way in and out (about 1 s of a 316 MB dump's 9 s ingest)."""
    if storage_bytes is not None and input_bytes > storage_bytes * MEMORY_CACHE_SHARE:
        return StorageLevel.DISK_ONLY
    return StorageLevel.MEMORY_AND_DISK_DESER


def file_counts(summary: Sequence[Mapping[str, Any]], paths: Iterable[str] = ()) -> dict[str, dict[str, int]]:
    """Per input file (``paths`` too, with zeros, when nothing came of them): the messages
    read, the records quarantined, and (``largest``) the length of the largest message's
    data, from `read_summary` (pure)."""
    counts = {path: {"messages": 0, "quarantined": 0, "largest": 0} for path in paths}
    for row in summary:
        if row["rec"] != "split":
            continue
        entry = counts.setdefault(row["source_file"], {"messages": 0, "quarantined": 0, "largest": 0})
        entry["messages"] += int(row["messages"])
        entry["quarantined"] += int(row["errors"])
        entry["largest"] = max(entry["largest"], int(row["largest"]))
    return counts


def _split_bytes(items: Sequence[FileSplit]) -> int:
    """The bytes of dumps ``items`` read (a split of unknown end, a compressed file, counts 0)."""
    return sum(item.end - item.start for item in items if item.end is not None)


def _plan_line(items: Sequence[FileSplit]) -> str:
    files = len({item.path for item in items})
    return f"ingest: {files} files ({_split_bytes(items) / 1e6:,.1f} MB of dumps) in {len(items)} work items"


def _land(
    spark,
    paths,
    *,
    run_id,
    split_bytes,
    landed_at,
    max_line_length,
    max_message_bytes,
    persist: bool,
    progress: Report | None = None,
    webhdfs: str = "",
    reader: str = "auto",
    unreadable: dict[str, str] | None = None,
    dump_time_zone: str = DEFAULT_TIME_ZONE,
) -> _Landing:
    items = plan_work(paths, split_bytes, webhdfs, unreadable)
    if progress:
        progress(_plan_line(items))
    jvm = jvm_items(spark, items, reader)
    log.info("ingest: %d of %d work items read by the JVM reader", len(jvm), len(items))
    limits = {
        "max_line_length": max_line_length,
        "max_message_bytes": max_message_bytes,
        "dump_time_zone": dump_time_zone,
    }
    level = read_cache_level(_split_bytes(items), storage_memory_bytes(spark)) if persist else None
    # the keys of a landing of files whose sizes are known, up to a size (with a cached read only)
    with_keys = all(i.end is not None for i in items) and _split_bytes(items) <= KEYS_WITH_SUMMARY_BYTES

    def read(jvm_numbers) -> tuple[DataFrame, bool, ReadSummary | None]:
        """The scan, cached when ``persist`` (where the session can cache), and its summary
        when the rest needs it: always when cached (the one full read, with its progress),
        else for split files or the JVM reader's fallbacks."""
        raw, cached = scan(spark, items, jvm=jvm_numbers, **limits), False
        if persist:
            try:
                raw, cached = raw.persist(cast(StorageLevel, level)), True  # chosen when persist
            except Exception:  # noqa: BLE001 - e.g. serverless compute: read the files twice instead
                cached = False
            with TaskTicker(spark, progress, "ingest", "work items"):
                return raw, cached, read_summary(raw, keys=with_keys)
        needed = jvm_numbers or any(i.splits > 1 for i in items)
        return raw, cached, read_summary(raw) if needed else None

    raw, persisted, summary = read(jvm)
    left = fallbacks(summary.items if summary else [])
    if left:  # read again, those items with Python (the JVM reader's rows of them are dropped with the cache)
        for number, why in sorted(left.items()):
            item = items[number]
            log.info(
                "ingest: %s bytes %d..%s: read with the Python reader (the JVM reader: %s)",
                item.path,
                item.start,
                item.end if item.end is not None else "end",
                why,
            )
        if persisted:
            raw.unpersist()
        jvm = jvm - set(left)
        raw, persisted, summary = read(jvm)
    per_file, largest = None, 0
    if persist:
        per_file = file_counts(cast(ReadSummary, summary).items, [i.path for i in items])  # read whenever persist
        if progress:
            for path in sorted(per_file):
                counts = per_file[path]
                progress(f"ingest: {path}: {counts['messages']} messages, {counts['quarantined']} quarantined")
        largest = max((c.pop("largest") for c in per_file.values()), default=0)
        if persisted and largest >= large_messages.LARGE_MESSAGE_BYTES and level != StorageLevel.DISK_ONLY:
            # Kept in memory, the cached messages would leave too little heap for writing them;
            # the next job reads the files again into a cache on disk.
            raw.unpersist(blocking=True)
            raw = scan(spark, items, jvm=jvm, **limits).persist(StorageLevel.DISK_ONLY)
    # the summary is read where there are split files, and always when persisted
    split = any(i.splits > 1 for i in items)
    bases = split_bases(cast(ReadSummary, summary).items) if split else None
    headers = header_bases(cast(ReadSummary, summary).items) if split else None
    keys = cast(ReadSummary, summary).keys if persisted else None
    return _Landing(
        items,
        raw,
        _positioned(raw, bases, len(items), headers),
        run_id,
        _timestamp(landed_at),
        persisted,
        per_file,
        largest,
        len(jvm),
        keys,
    )


def land(
    spark: SparkSession,
    paths: Sequence[str],
    *,
    run_id: str,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    landed_at: dt.datetime | None = None,
    max_line_length: int = MAX_LINE_LENGTH,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    reader: str = "auto",
    dump_time_zone: str = DEFAULT_TIME_ZONE,
) -> tuple[DataFrame, DataFrame]:
    """``(messages, quarantine)`` DataFrames for the files under ``paths``; writes nothing.

    Plans on the driver now (and, when a file is split or the JVM reader reads, runs one job
    for the split counts and the items the JVM reader leaves to Python); the DataFrames read
    the files each time an action runs on them. ``landed_at``
    (default: now) stamps ``landed_at`` and ``quarantined_at``; naive means UTC.
    ``dump_time_zone`` (an IANA name) is the zone dump headers' ``Created:`` stamps are read
    in (``ingest.dump_time_zone``).
    """
    landing = _land(
        spark,
        paths,
        run_id=run_id,
        split_bytes=split_bytes,
        landed_at=landed_at,
        max_line_length=max_line_length,
        max_message_bytes=max_message_bytes,
        persist=False,
        reader=reader,
        dump_time_zone=dump_time_zone,
    )
    return landing.messages(), landing.quarantine()


# --- the files table (`ingest.inputs`) --------------------------------------------------------------------------


def landed_files(storage) -> dict[str, LandedFile]:
    """The latest ``files`` row of every path landed so far (one small read, `Storage.small_table`)."""
    return landed_files_of(storage.small_table("files").to_pylist())


def landed_files_at(warehouse: str | None) -> dict[str, LandedFile]:
    """`landed_files` of the Parquet warehouse at the local path ``warehouse``, read without
    Spark, before a session starts (`dlq_pipeline.warehouse.storage.local_table`); none for
    None (Delta, a catalog, a remote warehouse) or a table that cannot be read there."""
    files = None if warehouse is None else local_table(warehouse, "files")
    return landed_files_of(files.to_pylist()) if files is not None else {}


def files_rows(
    spark: SparkSession,
    landed: Sequence[InputFile],
    counts: Mapping[str, Mapping[str, int]],
    *,
    run_id: str,
    landed_at: dt.datetime,
) -> DataFrame:
    """The ``files`` rows of the files a landing read whole (``counts``: their messages and
    bad records, `ingest.spark.file_counts`)."""
    rows = [
        (
            item.name,
            item.size,
            as_utc(item.entry.modified),
            item.entry.version,
            run_id,
            as_utc(landed_at),
            int(counts.get(item.name, {}).get("messages", 0)),
            int(counts.get(item.name, {}).get("quarantined", 0)),
        )
        for item in landed
    ]
    return local_rows(spark, rows, "files")


# --- ingest: land + write ----------------------------------------------------------------------


@dataclass
class IngestResult:
    """What one ingest did. ``quarantined`` counts the bad records found in these inputs
    (also when an earlier ingest already stored them: they still need attention);
    ``quarantine_added`` counts the rows actually added to the table. ``inputs``: the files
    read, skipped, deferred and unreadable, and their bytes (`InputCounts`)."""

    messages_landed: int
    duplicates_skipped: int
    quarantined: int
    files: int
    quarantine_added: int = 0
    messages_read: int = 0
    work_items: int = 0
    jvm_work_items: int = 0  # of them, read by the JVM reader
    inputs: InputCounts = field(default_factory=lambda: InputCounts())
    file_list: list[str] = field(default_factory=list, repr=False)
    per_file: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)

    def as_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc.pop("file_list")
        return doc


@dataclass
class InputCounts:
    """The input files of one ingest by what it did with them (`ingest.inputs`), with their
    bytes; ``backlog_*``: what is left for a later run (deferred and unreadable files)."""

    read: int = 0
    skipped: int = 0
    deferred: int = 0
    unreadable: int = 0
    bytes_read: int = 0
    bytes_skipped: int = 0
    bytes_deferred: int = 0
    bytes_unreadable: int = 0
    backlog_files: int = 0
    backlog_bytes: int = 0
    deferred_files: dict[str, str] = field(default_factory=dict)  # name -> why
    unreadable_files: dict[str, str] = field(default_factory=dict)  # name -> why
    cleaned: dict[str, str] = field(default_factory=dict)  # name -> what ingest.clean_source did

    @classmethod
    def of(cls, plan: InputPlan, read: Sequence[str], cleaned: Mapping[str, str]) -> InputCounts:
        sizes = plan.sizes

        def total(names: Iterable[str]) -> int:
            return sum(sizes.get(n, 0) for n in names)

        skipped = [i.name for i in plan.skipped]
        return cls(
            read=len(read),
            skipped=len(skipped),
            deferred=len(plan.deferred),
            unreadable=len(plan.unreadable),
            bytes_read=total(read),
            bytes_skipped=total(skipped),
            bytes_deferred=total(plan.deferred),
            bytes_unreadable=total(plan.unreadable),
            backlog_files=len(plan.deferred) + len(plan.unreadable),
            backlog_bytes=total(plan.deferred) + total(plan.unreadable),
            deferred_files=dict(sorted(plan.deferred.items())),
            unreadable_files=dict(sorted(plan.unreadable.items())),
            cleaned=dict(sorted(cleaned.items())),
        )


def _store_messages(storage, landing: _Landing, read: int) -> int:
    """Store the landing's new messages; return how many.

    With the read cached and Parquet storage, the rows to leave out (repeats within the
    landing, keys already stored) are found on keys and positions alone and broadcast from
    the driver (none at all is the common case), so the messages go from the cache to the
    table without a shuffle. The keys of a landing of up to ``KEYS_WITH_SUMMARY_BYTES`` came
    with its read's summary: its repeats are found on the driver, and only a table already
    stored costs jobs (the landings' records, then `stored_among` over the stored keys,
    `dlq_pipeline.warehouse.keys`: three); a larger one's are found by jobs over the cache
    (`skipped_rows`: two with adaptive execution, more with a stored table). A
    Delta table, an uncached read, or more than ``SKIP_BROADCAST_ROWS`` rows to leave out
    (re-landing a large dump) take ``merge_new``, which deduplicates the whole rows."""
    if not landing.persisted or storage.format == "delta":
        return storage.merge_new("messages", landing.messages())
    stored = stored_message_keys(storage)
    if landing.keys is not None:
        skip = rows_to_leave_out(landing.keys, stored_among(stored, landing.raw) if stored is not None else None)
    else:
        skip = [
            (r["source_file"], r["source_offset"])
            for r in skipped_rows(landing.raw, stored).limit(SKIP_BROADCAST_ROWS + 1).collect()
        ]
    if len(skip) > SKIP_BROADCAST_ROWS:
        return storage.merge_new("messages", landing.messages(), stored=stored)
    if len(skip) >= read:
        return 0  # nothing new: leave no empty file behind
    options = LARGE_MESSAGE_PARQUET if landing.largest >= large_messages.LARGE_MESSAGE_BYTES else None
    if not skip:  # the common case: no join at all (broadcasting even an empty list is a job)
        rows = landing.messages(unique=True)
    else:
        positions = landing.raw.sparkSession.createDataFrame(skip, "source_file string, source_offset long")
        rows = landing.messages(positions)
    tasks = large_messages.large_message_tasks(landing.raw.sparkSession, landing.largest)
    storage.append("messages", rows if tasks is None else rows.coalesce(tasks), parquet_options=options)
    return read - len(skip)


def stored_among(stored: DataFrame, raw: DataFrame) -> pa.Array:
    """Which of a landing's message keys are ``stored`` (`dlq_pipeline.warehouse.keys.stored_keys`):
    the stored keys scanned against the landing's, broadcast from its cached read (two jobs:
    the broadcast, the scan; no shuffle), collected as an Arrow array of distinct keys."""
    wanted = raw.where(F.col("rec") == "message").select("message_key")
    found = stored.join(F.broadcast(wanted), "message_key", "left_semi")
    return pc.unique(collected_arrow(found).column("message_key"))  # on the driver: no shuffle for a distinct


def ingest(
    spark: SparkSession,
    storage,
    paths: Sequence[str],
    *,
    run_id: str,
    settings: IngestSettings = IngestSettings(),
    landed_at: dt.datetime | None = None,
    progress: Report | None = None,
) -> IngestResult:
    """Land the files under ``paths`` that are new or changed since they were landed
    (`ingest.inputs`: the ``files`` table; ``settings.reread`` reads all) and store them:
    ``messages`` merged by ``message_key``, ``quarantine`` merged by (source_file,
    source_offset, error_code), then the ``files`` rows of the files read whole, then
    ``settings.clean_source``. Idempotent: ingesting the same files again adds nothing (and
    reads nothing). ``settings`` are the ``[ingest]`` options; ``progress`` receives the
    plan, read progress and per-file counts as lines."""
    when = _timestamp(landed_at)
    if settings.clean_source == "archive":
        archive = fs.files_uri(settings.archive_dir, settings.hdfs.webhdfs)
        for given in paths:
            if inside(archive, fs.files_uri(os.fspath(given), settings.hdfs.webhdfs)):
                raise UsageError(
                    f"ingest.archive_dir {settings.archive_dir!r} is inside the input {given!r}: "
                    "archived files would be listed again; choose a folder outside every input"
                )
    listed = list_inputs(paths, settings.hdfs.webhdfs)
    landed_before = landed_files(storage)
    plan = plan_inputs(listed, landed_before, now=when, settle_seconds=settings.settle_seconds, reread=settings.reread)
    if progress:
        progress(_inputs_line(plan))
    reading = list(plan.read)
    landed, read, quarantined, added, per_file = 0, 0, 0, 0, {}
    landing: _Landing | None = None
    while reading:
        landing = _land(
            spark,
            [f.name for f in reading],
            run_id=run_id,
            split_bytes=settings.split_bytes,
            landed_at=when,
            max_line_length=settings.max_line_length,
            max_message_bytes=settings.max_message_bytes,
            persist=True,
            progress=progress,
            webhdfs=settings.hdfs.webhdfs,
            reader=settings.reader,
            unreadable=plan.unreadable,
            dump_time_zone=settings.dump_time_zone,
        )
        moved = still_same(f for f in reading if f.name not in plan.unreadable)
        if not moved:
            break
        # still being written: nothing of these lands now; the rest is read again without them
        landing.release()
        landing = None
        plan.deferred.update(moved)
        reading = [f for f in reading if f.name not in moved]
    reading = [f for f in reading if f.name not in plan.unreadable]
    for name, why in sorted({**plan.deferred, **plan.unreadable}.items()):
        kind = "deferred" if name in plan.deferred else "unreadable"
        log.warning("ingest: %s %s: %s (a later run reads it)", name, kind, why)
        if progress:
            progress(f"ingest: {name}: {kind}, {why}; a later run reads it")
    if landing is not None:
        try:
            per_file = landing.per_file or {}
            read = sum(c["messages"] for c in per_file.values())
            quarantined = sum(c["quarantined"] for c in per_file.values())
            if read:
                record_landing(storage, run_id, when)
            landed = recording_files(storage, run_id, lambda: _store_messages(storage, landing, read))
            crash_point("ingest-messages-stored")
            added = storage.merge_new("quarantine", landing.quarantine()) if quarantined else 0
            failed = _read_failures(landing) if quarantined else {}
        finally:
            landing.release()
        for name, why in failed.items():  # what it gave is stored; the file is read again next time
            plan.unreadable[name] = why
            log.warning("ingest: %s: its read did not finish (%s): a later run reads it again", name, why)
        whole = [f for f in reading if f.name not in failed]
        if whole:
            storage.append("files", files_rows(spark, whole, per_file, run_id=run_id, landed_at=when))
        crash_point("ingest-files-recorded")
        compact_records(storage)
    recorded = [f.name for f in reading]
    # bad records of files landed before still need a look while the files are there
    quarantined += sum(landed_before[f.name].quarantined for f in plan.skipped)
    cleaned = _clean(storage, plan, settings) if settings.clean_source != "keep" else {}
    counts = InputCounts.of(plan, [n for n in recorded if n not in plan.unreadable], cleaned)
    files = sorted({i.path for i in landing.items}) if landing is not None else []
    return IngestResult(
        messages_landed=landed,
        duplicates_skipped=read - landed,
        quarantined=quarantined,
        files=len(files),
        quarantine_added=added,
        messages_read=read,
        work_items=len(landing.items) if landing is not None else 0,
        jvm_work_items=landing.in_jvm if landing is not None else 0,
        inputs=counts,
        file_list=files,
        per_file=per_file,
    )


def compact_records(storage) -> None:
    """Merge the small files of the tables each landing appends a little to and every run
    reads (`Storage.compact`), so that reading them costs what they hold, not how many runs
    wrote them."""
    for table in COMPACTED_TABLES:
        storage.compact(table)


def _inputs_line(plan: InputPlan) -> str:
    def mb(files) -> str:
        return f"{sum(plan.sizes.get(n, 0) for n in files) / 1e6:,.1f} MB"

    skipped = [f.name for f in plan.skipped]
    read = [f.name for f in plan.read]
    return (
        f"ingest: {len(read)} files to read ({mb(read)}), {len(skipped)} landed before and unchanged, "
        f"skipped ({mb(skipped)}), {len(plan.deferred)} deferred ({mb(plan.deferred)})"
    )


def _read_failures(landing: _Landing) -> dict[str, str]:
    """The files of a landing whose read failed part way (a quarantine row of `READ_FAILURES`)."""
    rows = (
        landing.positioned.where((F.col("rec") == "error") & F.col("error_code").isin(*READ_FAILURES))
        .groupBy("source_file")
        .agg(F.first("error_text").alias("why"))
        .collect()
    )
    return {r["source_file"]: r["why"] for r in rows}


def _clean(storage, plan: InputPlan, settings: IngestSettings) -> dict[str, str]:
    """``ingest.clean_source`` over the files landed and unchanged, by the rows now committed."""
    candidates = [*plan.skipped, *plan.read]
    return clean_sources(
        [f for f in candidates if f.name not in plan.deferred and f.name not in plan.unreadable],
        landed_files(storage),
        mode=settings.clean_source,
        archive_dir=fs.files_uri(settings.archive_dir, settings.hdfs.webhdfs) if settings.archive_dir else "",
        quarantined_too=settings.clean_quarantined,
    )


# --- a stream's micro-batches (`spark.readStream.format("mqdump")`) --------------------------


def land_rows(storage, rows: DataFrame, *, run_id: str, landed_at: dt.datetime | None = None) -> IngestResult:
    """Store the rows of the ``mqdump`` source (``rows``, e.g. one micro-batch of a stream):
    its messages merged into ``messages`` by key (a key repeated in ``rows`` lands once, the
    first in file order), its bad records into ``quarantine``, and a ``files`` row for each
    file the rows came from (as it is now; a file that vanished gets none). Idempotent: the
    same rows again add nothing, so a micro-batch Spark runs again after a restart lands
    nothing twice."""
    when = _timestamp(landed_at)
    rows = rows.persist(StorageLevel.MEMORY_AND_DISK_DESER)
    try:
        per_file = {
            r["source_file"]: {"messages": int(r["messages"]), "quarantined": int(r["quarantined"])}
            for r in rows.groupBy("source_file")
            .agg(
                F.count(F.when(F.col("error_code").isNull(), 1)).alias("messages"),
                F.count(F.col("error_code")).alias("quarantined"),
            )
            .collect()
        }
        read = sum(c["messages"] for c in per_file.values())
        quarantined = sum(c["quarantined"] for c in per_file.values())
        landed = added = 0
        if read:
            record_landing(storage, run_id, when)
            messages = (
                rows.where(F.col("error_code").isNull())
                .withColumn("_n", _occurrence())
                .where(F.col("_n") == 1)
                .withColumn("run_id", F.lit(run_id))
                .withColumn("landed_at", F.lit(when).cast("timestamp"))
            )
            stored = stored_message_keys(storage)
            landed = recording_files(
                storage, run_id, lambda: storage.merge_new("messages", conform(messages, "messages"), stored=stored)
            )
        if quarantined:
            bad = quarantine_rows(rows.where(F.col("error_code").isNotNull()), run_id=run_id, landed_at=when)
            added = storage.merge_new("quarantine", bad)
    finally:
        rows.unpersist()
    stats = {name: fs.stat(name) for name in per_file}
    whole = [InputFile(name, entry) for name, entry in stats.items() if entry is not None and not entry.is_dir]
    if whole:
        storage.append("files", files_rows(storage.spark, whole, per_file, run_id=run_id, landed_at=when))
    compact_records(storage)
    return IngestResult(
        messages_landed=landed,
        duplicates_skipped=read - landed,
        quarantined=quarantined,
        files=len(per_file),
        quarantine_added=added,
        messages_read=read,
        file_list=sorted(per_file),
        per_file=per_file,
    )


def stream_landing(settings, *, command: str = "stream"):
    """A ``foreachBatch`` function that lands each micro-batch of a ``mqdump`` stream in the
    warehouse of the ``[storage]`` ``settings`` (`land_rows`), as one run of its own holding
    the warehouse's writer lock and lease while it writes. It opens the tables in the batch's
    own session, so it works where Spark runs the function (Spark Connect runs it on the
    server)::

        query = (
            spark.readStream.format("mqdump").load("/Volumes/ops/mq/dumps")
            .writeStream.foreachBatch(stream_landing(RunSettings.from_config(config).storage))
            .option("checkpointLocation", "/Volumes/ops/mq/checkpoints/ingest")
            .trigger(availableNow=True).start()
        )
        query.awaitTermination()   # then classify and replay: run_pipeline(..., inputs=[])
    """
    from dlq_pipeline.tables.identity import new_run_id
    from dlq_pipeline.warehouse.lease import writer_lease
    from dlq_pipeline.warehouse.locks import writer_lock
    from dlq_pipeline.warehouse.storage import open_storage

    def land(batch: DataFrame, batch_id: int) -> None:
        run_id = new_run_id(utc_now())
        spark = batch.sparkSession
        with (
            writer_lock(settings, command=command, run_id=run_id),
            writer_lease(spark, settings, command=command, run_id=run_id),
        ):
            result = land_rows(open_storage(spark, settings), batch, run_id=run_id)
        log.info(
            "stream batch %d (run %s): landed %d messages from %d files (%d already landed, %d quarantined)",
            batch_id,
            run_id,
            result.messages_landed,
            result.files,
            result.duplicates_skipped,
            result.quarantined,
        )

    return land
