"""Dumps as Spark rows: the reader every Spark read of a dump goes through, and the data
sources ``mqdump``, ``dmpmqmsg`` and ``amqsbcg`` (docs/api.md, "Reading dumps with Spark").

**One reader.** `read_item` turns one work item (`dumps.plan.FileSplit`: a file, or a byte
range of a large dump) into raw rows (``RAW_SCHEMA``): one per message, one per bad record,
and one (``rec = "split"``) with the item's counts; `read_items` batches them as Arrow. The
data sources run it in their partitions, and ingest runs it through the same ``mqdump``
source (or, on Spark before 4.0, `mapInArrow` of the same function), so a user's query, the
jobs and the command line read a dump into the same rows.

**The data sources** (Spark 4's Python data sources: classic Spark, Spark Connect and
Databricks serverless alike, no jar): ``spark.read.format("mqdump").load(path)`` reads every
dump and listing under ``path``; ``dmpmqmsg`` and ``amqsbcg`` read only their own kind and
give a file of the other kind one bad-record row. A row is a ``messages`` row without the
run's ``run_id``/``landed_at``, or a bad record (``error_code``, ``error_text``, ``snippet``
set, the message columns null) that says where it is (file, line, offset). One partition
reads one file, so each record's ``source_index`` and ``source_line`` are the file's own
(ingest splits a large dump into byte ranges and numbers their records from the ranges'
counts in a second pass, `ingest.spark`).

Options: ``mode`` (``PERMISSIVE``: bad records as rows; ``DROPMALFORMED``: left out;
``FAILFAST``: the first fails the query, naming it), ``decode`` (``true``: the MQDLH decoded
into the ``decisions`` table's ``dlh_*`` columns), ``maxMessageBytes``, ``maxLineLength``,
``pathGlobFilter`` (file names to read, e.g. ``*.dmp``), ``webhdfs`` (the NameNode's HTTP
address for ``hdfs://`` paths, ``hdfs.webhdfs``), ``dumpTimeZone`` (the zone a dump header's
``Created:`` stamp is read in, ``ingest.dump_time_zone``).

**When recorded.** Each message's ``recorded_at`` is when its MQMD was recorded, which its
Expiry counts from: the ``Created:`` stamp of the dump header above it, read in the
``dumpTimeZone``, else (a listing, a ``-dH`` dump, a stamp that is not ``ctime()``'s) the
file's modification time as listed.
"""

from __future__ import annotations

import fnmatch
import json
import operator
import posixpath
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict
from datetime import tzinfo
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from dlq_pipeline import fs as files
from dlq_pipeline.dumps.dmpmqmsg import DEFAULT_TIME_ZONE, MAX_LINE_LENGTH, created_time
from dlq_pipeline.dumps.dmpmqmsg_reader import SNIPPET_LENGTH, newlines_between
from dlq_pipeline.dumps.plan import FileSplit, plan_work
from dlq_pipeline.dumps.records import DumpedMessage, DumpHeader, RecordError
from dlq_pipeline.errors import DlqPipelineError, UsageError
from dlq_pipeline.fs import open_input
from dlq_pipeline.mq.constants import MQ_MAX_MESSAGE_BYTES
from dlq_pipeline.runtime.clock import epoch_micros, time_zone
from dlq_pipeline.runtime.testhooks import crash_point
from dlq_pipeline.tables import CHAR_BYTES_COLUMN, HEAD_COLUMN, MD_COLUMNS, message_row
from dlq_pipeline.warehouse.schemas import arrow_schema_of, table_schema

DEFAULT_MAX_MESSAGE_BYTES = MQ_MAX_MESSAGE_BYTES
ARROW_BATCH_ROWS = 2048
ARROW_BATCH_BYTES = 32 * 1024 * 1024  # keeps every batch's binary column well under 2 GB
# A dump is read whole by one partition of a data source: its records' numbers need no pass
# over the other ranges (a split larger than any file).
WHOLE_FILES = 2**62
MODES = ("PERMISSIVE", "DROPMALFORMED", "FAILFAST")
# The run's own columns of `messages`: not the dump's.
RUN_COLUMNS = ("run_id", "landed_at")
ERROR_COLUMNS = ("error_code", "error_text", "snippet")

_MESSAGES = table_schema("messages")
_MD_TYPES = {column: _MESSAGES[column].dataType for column in MD_COLUMNS.values()}

# One row per message, per bad record, and per work item (``rec = "split"``) with its counts:
# what the driver needs of a read comes from those rows alone (`ingest.spark.read_summary`).
RAW_SCHEMA = T.StructType(
    [
        T.StructField("rec", T.StringType(), False),  # message | error | split
        T.StructField("source_file", T.StringType(), False),
        T.StructField("source_kind", T.StringType(), False),
        T.StructField("source_qmgr", T.StringType(), True),
        T.StructField("source_queue", T.StringType(), True),
        T.StructField("split", T.IntegerType(), False),
        T.StructField("splits", T.IntegerType(), False),
        T.StructField("item", T.IntegerType(), False),  # the work item's number in the plan
        T.StructField("reader_index", T.LongType(), True),
        T.StructField("reader_line", T.LongType(), True),
        T.StructField("source_offset", T.LongType(), True),
        T.StructField("ordinal", T.LongType(), True),  # position among the split's records
        T.StructField("newlines", T.LongType(), True),  # '\n's from the split start up to the row
        T.StructField("messages", T.LongType(), True),  # a work item's row: its messages,
        T.StructField("errors", T.LongType(), True),  # its bad records,
        T.StructField("largest", T.LongType(), True),  # and its largest message's stored data
        # When the message's MQMD was recorded (`recorded_micros`), and the offset of the dump
        # header line that says so; a work item's row: those of the last header line it knows
        # (with them `ingest.spark.header_bases` puts a split's records under the header an
        # earlier split read).
        T.StructField("recorded_at", T.TimestampType(), True),
        T.StructField("header_offset", T.LongType(), True),
        *[T.StructField(column, _MD_TYPES[column], True) for column in MD_COLUMNS.values()],
        T.StructField(CHAR_BYTES_COLUMN, _MESSAGES[CHAR_BYTES_COLUMN].dataType, True),
        T.StructField("data", T.BinaryType(), True),
        T.StructField(HEAD_COLUMN, T.BinaryType(), True),
        T.StructField("data_length", T.IntegerType(), True),
        T.StructField("data_digest", T.StringType(), True),
        T.StructField("message_key", T.StringType(), True),
        T.StructField("truncated", T.BooleanType(), True),
        T.StructField("notes", T.ArrayType(T.StringType(), True), True),
        T.StructField("error_code", T.StringType(), True),
        T.StructField("error_text", T.StringType(), True),
        T.StructField("snippet", T.StringType(), True),
    ]
)


ARROW_SCHEMA = arrow_schema_of(RAW_SCHEMA)


# --- the rows of one work item ---------------------------------------------------------------


def _shown(text: str | None) -> str | None:
    """``text`` for people: undecodable bytes shown as ``\\xNN``."""
    if text is None:
        return None
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class _Batcher:
    """Collects rows (dicts naming some of ``ARROW_SCHEMA``'s columns; the rest are null) and
    hands out Arrow batches of bounded size. Each row becomes one tuple (a dict copy and one
    ``itemgetter`` call, both in C); a batch's columns are those tuples transposed."""

    _values = operator.itemgetter(*ARROW_SCHEMA.names)
    _nulls = dict.fromkeys(ARROW_SCHEMA.names)

    def __init__(self):
        self._reset()

    def _reset(self):
        self.rows: list[tuple] = []
        self.bytes = 0

    def add(self, row: Mapping[str, Any]) -> pa.RecordBatch | None:
        full = self._nulls.copy()
        full.update(row)
        self.rows.append(self._values(full))
        data = full["data"]
        if data is not None:
            self.bytes += len(data)
        if len(self.rows) >= ARROW_BATCH_ROWS or self.bytes >= ARROW_BATCH_BYTES:
            return self.flush()
        return None

    def flush(self) -> pa.RecordBatch | None:
        if not self.rows:
            return None
        columns = zip(*self.rows)
        self._reset()
        return pa.RecordBatch.from_arrays(
            [pa.array(values, type=f.type) for f, values in zip(ARROW_SCHEMA, columns)], schema=ARROW_SCHEMA
        )


def _newlines_between(location: str, start: int, stop: int | None) -> int:
    """The ``\\n`` bytes in ``[start, stop)`` of the file at ``location`` (None: to its end)."""
    if stop is not None and stop <= start:
        return 0
    with open_input(location) as f:
        return newlines_between(f, start, stop)


def _error_row(err: RecordError) -> dict[str, Any]:
    return {
        "rec": "error",
        "reader_index": err.index,
        "reader_line": err.line,
        "source_offset": err.offset,
        "error_code": err.code,
        "error_text": _shown(err.message),
        "snippet": _shown(err.snippet[:SNIPPET_LENGTH]) if err.snippet else None,
    }


def recorded_micros(header: DumpHeader | None, zone: tzinfo, modified: int | None) -> int | None:
    """When a message under the dump header ``header`` was recorded, in epoch microseconds:
    the header's ``Created:`` stamp read in ``zone``; ``modified`` (the file's modification
    time, None when unknown) where there is no header or its stamp is not a ``ctime()`` one."""
    when = created_time(header.created, zone) if header is not None else None
    return epoch_micros(when) if when is not None else modified


def read_item(
    item: FileSplit,
    *,
    number: int = 0,
    max_line_length: int = MAX_LINE_LENGTH,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    dump_time_zone: str = DEFAULT_TIME_ZONE,
) -> Iterator[dict[str, Any]]:
    """The raw rows of one work item, ``number`` in the plan (plain dicts; runs on an executor).
    ``dump_time_zone``: the IANA zone a dump header's ``Created:`` stamp is read in."""
    from dlq_pipeline.dumps.sources import read_source

    zone = time_zone(dump_time_zone)
    headers: list[DumpHeader] = []
    recorded: dict[DumpHeader | None, int | None] = {}  # a dump has a header or a few: each read once

    def when(header: DumpHeader | None) -> int | None:
        if header not in recorded:
            recorded[header] = recorded_micros(header, zone, item.modified)
        return recorded[header]

    split_file = item.splits > 1
    ordinal = messages = errors = largest = 0
    # the last row's offset and, in a split file, the newlines from the split's start up to
    # it: its line less one (the reader numbers a split's lines from its start, every row
    # has one), so the split's bytes are read once
    last_offset, last_newlines = item.start, 0
    common = {
        "source_file": item.path,
        "source_kind": "amqsbcg" if item.kind == "amqsbcg" else "dmpmqmsg",
        "source_qmgr": item.qmgr,
        "source_queue": item.queue,
        "split": item.split,
        "splits": item.splits,
        "item": number,
    }
    try:
        records = read_source(
            item.location,
            name=item.path,
            start=item.start,
            end=item.end,
            max_line_length=max_line_length,
            max_message_bytes=max_message_bytes,
            headers=headers,
        )
        for record in records:
            if isinstance(record, DumpedMessage):
                row = message_row(record)
                row["recorded_at"] = when(record.header)
                row["header_offset"] = record.header.offset if record.header is not None else None
                messages += 1
                largest = max(largest, len(row["data"]))
            else:
                row = _error_row(record)
                errors += 1
            last_offset = row["source_offset"]
            if row["reader_index"] is not None:
                row["ordinal"] = ordinal
                ordinal += 1
            if split_file:
                row["newlines"] = last_newlines = row["reader_line"] - 1
            row.update(common)  # (a fresh dict, no key in common: no copy needed)
            yield row
            crash_point("ingest-record", ordinal)
    except Exception as exc:  # noqa: BLE001 - bad input (or a reader bug) must not stop the run
        code = "unreadable_file" if isinstance(exc, OSError) else "reader_failed"
        where = f"bytes {last_offset}..{item.end if item.end is not None else 'end'}"
        errors += 1
        yield {
            **common,
            "rec": "error",
            "source_offset": last_offset,
            "error_code": code,
            "error_text": f"{type(exc).__name__}: {exc}; {where} of the file were not read",
        }
    total = None
    if split_file:  # the last record's bytes up to the split's end (only they are read again)
        total = last_newlines + _newlines_between(item.location, last_offset, item.end)
    last = headers[-1] if headers else None
    yield {
        **common,
        "rec": "split",
        "source_offset": item.start,
        "ordinal": ordinal,
        "newlines": total,
        "messages": messages,
        "errors": errors,
        "largest": largest,
        "recorded_at": when(last) if last is not None else None,
        "header_offset": last.offset if last is not None else None,
    }


def read_items(
    numbered: Sequence[tuple[int, FileSplit]],
    *,
    max_line_length: int = MAX_LINE_LENGTH,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    dump_time_zone: str = DEFAULT_TIME_ZONE,
) -> Iterator[pa.RecordBatch]:
    """The raw rows of work items ((number in the plan, item) pairs) as Arrow batches of
    ``ARROW_SCHEMA``, each at most ``ARROW_BATCH_ROWS`` rows and about ``ARROW_BATCH_BYTES``."""
    batcher = _Batcher()
    for number, item in numbered:
        for row in read_item(
            item,
            number=number,
            max_line_length=max_line_length,
            max_message_bytes=max_message_bytes,
            dump_time_zone=dump_time_zone,
        ):
            full = batcher.add(row)
            if full is not None:
                yield full
    rest = batcher.flush()
    if rest is not None:
        yield rest


def items_option(numbered: Sequence[tuple[int, FileSplit]]) -> str:
    """Work items as the ``mqdump`` source's ``workItems`` option (JSON): how ingest hands
    the source the plan it made (byte ranges, WebHDFS URLs) instead of a path."""
    return json.dumps([{"number": number, **asdict(item)} for number, item in numbered])


def _items_from(text: str) -> list[tuple[int, FileSplit]]:
    return [(doc.pop("number"), FileSplit(**doc)) for doc in json.loads(text)]


# --- the rows a data source gives ---------------------------------------------------------------


def source_schema(decode: bool = False) -> T.StructType:
    """The rows of the data sources: ``messages`` without the run's columns, then the bad
    record's columns, then (``decode``) the decoded MQDLH's."""
    fields = [f for f in _MESSAGES.fields if f.name not in RUN_COLUMNS]
    fields += [T.StructField(name, T.StringType(), True) for name in ERROR_COLUMNS]
    if decode:
        from dlq_pipeline.mq.spark import decoded_struct

        fields += decoded_struct().fields
    # every column nullable: a bad record's row has no message, a message's no error
    return T.StructType([T.StructField(f.name, f.dataType, True, f.metadata) for f in fields])


class MalformedRecord(DlqPipelineError, ValueError):
    """A bad record in a dump read with ``mode`` ``FAILFAST`` (exit 1: the input needs a look)."""


def source_batch(raw: pa.RecordBatch, schema: pa.Schema, mode: str = "PERMISSIVE") -> pa.RecordBatch:
    """A data source's batch (``schema``: `source_schema` as Arrow) from a batch of raw rows of
    whole files (their reader's numbers are the file's): the records' rows in file order, bad
    ones as ``mode`` says (pure)."""
    keep = ("message",) if mode == "DROPMALFORMED" else ("message", "error")
    rows = raw.filter(pc.is_in(raw.column("rec"), pa.array(keep)))
    if mode == "FAILFAST":
        errors = rows.filter(pc.equal(rows.column("rec"), "error"))
        if errors.num_rows:
            first = errors.slice(0, 1).to_pylist()[0]
            raise MalformedRecord(
                f"{first['source_file']}: line {first['reader_line']}, byte {first['source_offset']}: "
                f"{first['error_code']}: {first['error_text']} (mode FAILFAST; PERMISSIVE gives bad records as rows)"
            )
    renamed = {"source_index": "reader_index", "source_line": "reader_line"}
    columns = {
        name: rows.column(renamed.get(name, name))
        for name in schema.names
        if name in renamed or name in raw.schema.names
    }
    if "has_dlh" in schema.names:
        columns.update(_decoded_columns(rows))
    return pa.RecordBatch.from_arrays([columns[f.name].cast(f.type) for f in schema], schema=schema)


def _decoded_columns(rows: pa.RecordBatch) -> dict[str, pa.Array]:
    """The decoded MQDLH's columns of each row (null for a bad record's), from ``data_head``
    as the decode UDF reads it (`mq.spark.header_columns`)."""
    from dlq_pipeline.mq.dlh_arrow_decoder import decode_dlh_arrow
    from dlq_pipeline.mq.dlh_decoder import CHAIN_SCAN_LIMIT
    from dlq_pipeline.mq.structures import DLH_LENGTH

    messages = pc.equal(rows.column("rec"), "message")
    head = pc.if_else(messages, rows.column(HEAD_COLUMN), pa.scalar(b"", pa.binary()))
    length = pc.binary_length(head)
    tail = pc.if_else(
        pc.greater(length, DLH_LENGTH),
        pc.binary_slice(head, DLH_LENGTH, CHAIN_SCAN_LIMIT),
        pa.scalar(None, pa.binary()),
    )
    decoded = decode_dlh_arrow(
        head,
        tail,
        length.to_numpy(zero_copy_only=False),
        pc.fill_null(rows.column("encoding"), 0),
        pc.fill_null(rows.column("ccsid"), 0),
        rows.column("format"),
    )
    nulls = pc.invert(messages)
    return {
        decoded.type.field(i).name: pc.if_else(nulls, pa.scalar(None, decoded.type.field(i).type), column)
        for i, column in enumerate(decoded.flatten())
    }


# --- the data sources ----------------------------------------------------------------------------


class SparkVersionError(UsageError):
    """The session's Spark has no Python data sources (before 4.0)."""


def _paths(options: Mapping[str, str]) -> list[str]:
    if "paths" in options:
        return list(json.loads(options["paths"]))
    if "path" in options:
        return [options["path"]]
    raise UsageError("no path: spark.read.format('mqdump').load('/path/to/dumps') (a file, a directory or a glob)")


def _flag(options: Mapping[str, str], name: str) -> bool:
    value = options.get(name, "false").strip().lower()
    if value not in ("true", "false"):
        raise UsageError(f"option {name} must be true or false, not {options[name]!r}")
    return value == "true"


def _number(options: Mapping[str, str], name: str, default: int) -> int:
    value = options.get(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise UsageError(f"option {name} must be a positive whole number, not {value!r}")
    return number


def _zone(options: Mapping[str, str]) -> str:
    """The ``dumpTimeZone`` option, checked here, on the driver: a name no reader can use is
    the query's error, before any task runs."""
    name = options.get("dumpTimeZone", DEFAULT_TIME_ZONE)
    try:
        time_zone(name)
    except ValueError as exc:
        raise UsageError(f"option dumpTimeZone: {exc}") from None
    return name


def _mode(options: Mapping[str, str]) -> str:
    mode = options.get("mode", "PERMISSIVE").upper()
    if mode not in MODES:
        raise UsageError(f"option mode must be one of {', '.join(MODES)}, not {options['mode']!r}")
    return mode


def _planned(options: Mapping[str, str]) -> bool:
    """Whether the load reads work items ingest planned (``workItems``), not paths."""
    return "workItems" in options


# What each kind of file is, for people.
KINDS = {"dmpmqmsg": "a dmpmqmsg dump", "amqsbcg": "an amqsbcg listing"}


def _wrong_kind(item: FileSplit, wanted: str) -> dict[str, Any]:
    """The one row a file of the other kind gets from the ``dmpmqmsg`` or ``amqsbcg`` source."""
    return {
        "rec": "error",
        "source_file": item.path,
        "source_kind": item.kind,
        "split": 0,
        "splits": 1,
        "item": 0,
        "reader_index": 0,
        "reader_line": 1,
        "source_offset": 0,
        "error_code": "wrong_format",
        "error_text": f"{KINDS[item.kind]}, not {KINDS[wanted]}: read it with format 'mqdump', which reads both",
    }


try:
    from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
except ImportError:  # Spark before 4.0: `register` says so
    DataSource = DataSourceReader = DataSourceStreamReader = InputPartition = object  # type: ignore[assignment,misc]
try:  # Spark 4.2: read limits and Trigger.AvailableNow for Python streaming sources
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxBytes,
        ReadMaxFiles,
        SupportsTriggerAvailableNow,
    )
except ImportError:
    # a class of its own: with Spark 3.5's `object` for the stream reader too, two `object`
    # bases would be a duplicate
    SupportsTriggerAvailableNow = type("NoTriggerAvailableNow", (), {})  # type: ignore[assignment,misc]
    ReadAllAvailable = ReadMaxBytes = ReadMaxFiles = type("NoReadLimit", (), {})  # type: ignore[assignment,misc]


class _Items(InputPartition):
    """One partition: work items ((number, item) pairs) read in order."""

    def __init__(self, numbered: Sequence[tuple[int, FileSplit]]):
        self.numbered = list(numbered)


class _Reader(DataSourceReader):
    """Plans and reads one load: the files under the path(s), or the work items ingest planned
    (``workItems``: then the raw rows, ``RAW_SCHEMA``)."""

    def __init__(self, kind: str, options: Mapping[str, str]):
        self.kind = kind
        self.mode = _mode(options)
        self.decode = _flag(options, "decode")
        self.limits: dict[str, Any] = {
            "max_line_length": _number(options, "maxLineLength", MAX_LINE_LENGTH),
            "max_message_bytes": _number(options, "maxMessageBytes", DEFAULT_MAX_MESSAGE_BYTES),
            "dump_time_zone": _zone(options),
        }
        self.items = _items_from(options["workItems"]) if _planned(options) else None
        self.paths = None if self.items is not None else _paths(options)
        self.glob = options.get("pathGlobFilter")
        self.webhdfs = options.get("webhdfs", "")

    def partitions(self) -> list[_Items]:
        if self.items is not None:
            return [_Items([numbered]) for numbered in self.items]
        items = plan_work(self.paths or [], WHOLE_FILES, self.webhdfs)
        if self.glob:
            items = [i for i in items if fnmatch.fnmatchcase(posixpath.basename(i.path), self.glob)]
        return [_Items([(number, item)]) for number, item in enumerate(items)]

    def read(self, partition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, _Items):  # Spark reads a source with no partitions as one empty one
            return
        if self.items is not None:
            yield from read_items(partition.numbered, **self.limits)
            return
        yield from _source_batches(self.kind, partition.numbered, self.limits, self.decode, self.mode)


def _source_batches(
    kind: str, numbered: Sequence[tuple[int, FileSplit]], limits: Mapping[str, Any], decode: bool, mode: str
) -> Iterator[pa.RecordBatch]:
    """The rows of a data source's partition: each whole file's records in file order."""
    schema = arrow_schema_of(source_schema(decode))
    for number, item in numbered:
        if kind != "mqdump" and item.kind in KINDS and item.kind != kind:
            batches: Iterable[pa.RecordBatch] = [pa.RecordBatch.from_pylist([_wrong_kind(item, kind)], ARROW_SCHEMA)]
        else:
            batches = read_items([(number, item)], **limits)
        for raw in batches:
            batch = source_batch(raw, schema, mode)
            if batch.num_rows:
                yield batch


# --- the streaming source -------------------------------------------------------------------------

STREAM_LOG = "_mqdump_log"  # the default log of a stream's files, under its (first) path


def _whole_file(name: str, url: str) -> FileSplit:
    """The work item of one file read whole, planned now; a file that cannot be opened any more
    is an item of unknown kind, whose read gives its ``unreadable_file`` row."""
    try:
        planned = plan_work([name], WHOLE_FILES)
    except OSError:
        planned = []
    return planned[0] if planned else FileSplit(name, "unknown", 0, None, 0, 1, url=url if url != name else None)


class _StreamReader(SupportsTriggerAvailableNow, DataSourceStreamReader):
    """The files under the path(s) as a stream: each file listed that is new (or grew, or was
    rewritten: a new size or modification time) is appended to the stream's file log, and an
    offset is how many entries of that log a query has read (``{"files": N}``). The log
    (option ``fileLog``, default ``PATH/_mqdump_log``, which no listing includes) is one
    immutable record per call that found new files, written create-exclusive before its
    offset is returned, so the files of an offset in the query's checkpoint are found again
    after a restart: each file is read in exactly one micro-batch."""

    def __init__(self, kind: str, options: Mapping[str, str]):
        self.kind, self.options = kind, options
        self.mode = _mode(options)
        self.decode = _flag(options, "decode")
        self.limits: dict[str, Any] = {
            "max_line_length": _number(options, "maxLineLength", MAX_LINE_LENGTH),
            "max_message_bytes": _number(options, "maxMessageBytes", DEFAULT_MAX_MESSAGE_BYTES),
            "dump_time_zone": _zone(options),
        }
        self.paths = _paths(options)
        self.glob = options.get("pathGlobFilter")
        self.webhdfs = options.get("webhdfs", "")
        self.log_dir = options.get("fileLog") or files.join(files.files_uri(self.paths[0], self.webhdfs), STREAM_LOG)
        self.settle = float(options.get("settleSeconds", "0") or 0)
        self.max_files = _number(options, "maxFilesPerTrigger", 0) if "maxFilesPerTrigger" in options else None
        self.max_bytes = _number(options, "maxBytesPerTrigger", 0) if "maxBytesPerTrigger" in options else None
        self.target: int | None = None
        self.entries: list[list] = self._read_log()  # [name, url, size, modified µs]

    def _read_log(self) -> list[list]:
        entries: list[list] = []
        for name in files.list_names(self.log_dir):
            if name.endswith(".json") and not name.startswith("."):
                record = json.loads(files.read_bytes(files.join(self.log_dir, name)) or b"{}")
                entries[record["first"] :] = record["files"]
        return entries

    def _refresh(self) -> None:
        """Append the files listed now that the log does not hold (as listed: name, size, time)."""
        seen = {(e[0], e[2], e[3]) for e in self.entries}
        now_us = time.time() * 1e6
        new = []
        for given in self.paths:
            for name, entry in files.list_entries(given, self.webhdfs):
                if self.glob and not fnmatch.fnmatchcase(posixpath.basename(name), self.glob):
                    continue
                modified = round(entry.modified.timestamp() * 1e6) if entry.modified else 0
                if (name, entry.size, modified) in seen or (self.settle and now_us - modified < self.settle * 1e6):
                    continue
                seen.add((name, entry.size, modified))
                new.append([name, entry.uri, entry.size, modified])
        if new:
            first = len(self.entries)
            record = json.dumps({"first": first, "files": new}).encode()
            if not files.write_file(files.join(self.log_dir, f"{first:012d}.json"), record):
                raise UsageError(f"{self.log_dir}: another query writes this file log (option fileLog: one per query)")
            self.entries += new

    def initialOffset(self) -> dict:
        return {"files": 0}

    def getDefaultReadLimit(self):
        if self.max_files:
            return ReadMaxFiles(self.max_files)
        if self.max_bytes:
            return ReadMaxBytes(self.max_bytes)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._refresh()
        self.target = len(self.entries)

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        """The offset a micro-batch reads up to: every file logged (before Spark 4.2, which
        gives neither ``start`` nor ``limit``), or as many as ``limit`` lets through from
        ``start`` (at least one file: a file larger than ``maxBytesPerTrigger`` is read alone)."""
        if self.target is None:
            self._refresh()
        available = len(self.entries) if self.target is None else self.target
        if start is None:
            return {"files": available}
        begin = int(start["files"])
        end = available
        if isinstance(limit, ReadMaxFiles):
            end = min(available, begin + limit.max_files)
        elif isinstance(limit, ReadMaxBytes):
            total, end = 0, begin
            while end < available and (end == begin or total + self.entries[end][2] <= limit.max_bytes):
                total += self.entries[end][2]
                end += 1
        return {"files": max(end, begin)}

    def partitions(self, start: dict, end: dict) -> list[_Items]:
        chosen = self.entries[int(start["files"]) : int(end["files"])]
        return [_Items([(number, _whole_file(e[0], e[1]))]) for number, e in enumerate(chosen)]

    def read(self, partition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, _Items):
            yield from _source_batches(self.kind, partition.numbered, self.limits, self.decode, self.mode)

    def commit(self, end: dict) -> None:
        """Nothing to do: the log is what restarts read, and it only grows."""


class _Source(DataSource):
    kind: str  # the format's name

    @classmethod
    def name(cls) -> str:
        return cls.kind

    def schema(self) -> T.StructType:
        if _planned(self.options):
            return RAW_SCHEMA
        return source_schema(_flag(self.options, "decode"))

    def reader(self, schema: T.StructType) -> _Reader:
        return _Reader(self.kind, self.options)

    def streamReader(self, schema: T.StructType) -> _StreamReader:
        if _planned(self.options):
            raise UsageError("workItems is for ingest's batch reads, not for a stream")
        return _StreamReader(self.kind, self.options)


class MqDumpSource(_Source):
    """``mqdump``: dmpmqmsg dumps and amqsbcg listings, each file read by the reader its
    content needs (`dumps.sources.sniff`)."""

    kind = "mqdump"


class DmpmqmsgSource(_Source):
    """``dmpmqmsg``: dmpmqmsg/qload dumps only."""

    kind = "dmpmqmsg"


class AmqsbcgSource(_Source):
    """``amqsbcg``: amqsbcg listings only."""

    kind = "amqsbcg"


SOURCES = (MqDumpSource, DmpmqmsgSource, AmqsbcgSource)


def has_data_sources(spark: SparkSession) -> bool:
    """Whether the session's Spark (the server's, over Connect) runs Python data sources (4.0+)."""
    return DataSource is not object and int(spark.version.split(".")[0]) >= 4


def register(spark: SparkSession) -> None:
    """Register the ``mqdump``, ``dmpmqmsg`` and ``amqsbcg`` data sources with ``spark``
    (classic or Spark Connect). Idempotent. `SparkVersionError` before Spark 4.0."""
    if not has_data_sources(spark):
        raise SparkVersionError(
            f"reading dumps with spark.read needs Spark 4.0 or later (Python data sources); this session "
            f"runs Spark {spark.version}: land them with `dlq-pipeline ingest` (or dlq_pipeline.run_pipeline) "
            "and read the messages table"
        )
    for source in SOURCES:
        spark.dataSource.register(source)
