"""Message bodies read where the `messages` table holds them, in a replay task.

Replay's join, shuffle and sorts carry each decision with its message's MQMD columns and the
data file that holds its body (``_metadata.file_path``), never the body itself; the writer's
task reads the bodies it puts from those files, a window of its work items at a time, in the
order it puts them (docs/performance.md, "Replay reads each body where it lies").

Parquet has no row-level reads: a file's ``data`` is read forwards in small batches, and the
rows a window wants are taken from them. `messages` holds the DLQ in order (ingest writes each
file from a run of it), and the writer asks in DLQ order, so each task reads the files it
needs once, front to back. A window is cut at ``WINDOW_BYTES`` of wanted bodies (their
stored ``data_length``), so a task holds one window's bodies and one batch, whatever the
messages' sizes. A message is found in its file by its ``message_key`` (Delta's reader gives
no row index): a file's keys are read once, with the cursors of the few files in use kept.
"""

from __future__ import annotations

import bisect
import itertools
import urllib.parse
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, cast

from dlq_pipeline import fs as files
from dlq_pipeline.errors import DlqPipelineError
from dlq_pipeline.runtime.paths import local_path

if TYPE_CHECKING:
    import pyarrow as pa

BODY_FILE = "body_file"  # the work item's column naming the data file that holds its body
WINDOW_BYTES = 64 * 1024 * 1024
READ_BATCH_BYTES = 8 * 1024 * 1024  # of bodies per batch a file's cursor reads
READ_BATCH_ROWS = 1024
OPEN_FILES = 4  # data files whose key index a task keeps: DLQ order moves through few at once


class BodyNotFound(DlqPipelineError, RuntimeError):
    """A message is missing from the data file the scan named: the table changed under the run."""


def windows(lengths: Sequence[int | None], limit: int = WINDOW_BYTES) -> Iterator[tuple[int, int]]:
    """(start, stop) ranges over ``lengths`` (bodies' sizes, None for none wanted), in order,
    each of at most ``limit`` bytes of bodies or one body larger than that (pure)."""
    start, held = 0, 0
    for i, length in enumerate(lengths):
        size = length or 0
        if i > start and held + size > limit:
            yield start, i
            start, held = i, 0
        held += size
    if start < len(lengths):
        yield start, len(lengths)


def file_uri(file_path: str, webhdfs: str = "") -> str:
    """Where Python opens a scan's ``_metadata.file_path`` (a Hadoop path, percent-encoded):
    the OS path of a local file (``dbfs:`` through the ``/dbfs`` mount), else the URI
    `dlq_pipeline.fs` opens (``hdfs://`` reached through WebHDFS)."""
    path = urllib.parse.unquote(file_path)
    return local_path(path) if files.is_local(path) else files.files_uri(path, webhdfs)


class _DataFile:
    """One Parquet data file: where each message's row is, and a cursor that reads its
    ``data`` forwards in small batches (`READ_BATCH_BYTES`), so that rows asked for in file
    order are read once, and a batch's buffers are reused rather than mapped afresh."""

    def __init__(self, uri: str):
        import pyarrow.parquet as pq

        self.uri = uri
        # pre_buffer off: with it, a reader over a file's remaining row groups keeps every row
        # group it has read until it ends, and a task's memory grows with the file (over 100
        # messages of 100 MB, a Python worker of 21 GB); without it, a batch and no more
        self._file = pq.ParquetFile(uri if files.is_local(uri) else files.open_input(uri), pre_buffer=False)
        keys = self._file.read(columns=["message_key"]).column(0).to_pylist()
        self.row = {key: i for i, key in enumerate(keys)}
        meta = self._file.metadata
        self._group_starts = list(
            itertools.accumulate((meta.row_group(g).num_rows for g in range(meta.num_row_groups)), initial=0)
        )
        # the Parquet leaf column of ``data`` (not its Arrow field index: a struct before it,
        # the MQMD's, counts one leaf per field)
        column = [meta.schema.column(i).path for i in range(meta.num_columns)].index("data")
        widest = max(
            (
                meta.row_group(g).column(column).total_uncompressed_size / max(1, meta.row_group(g).num_rows)
                for g in range(meta.num_row_groups)
            ),
            default=0,
        )
        self._batch_rows = int(max(1, min(READ_BATCH_ROWS, READ_BATCH_BYTES // max(1, widest))))
        self._batches: Iterator[pa.RecordBatch] | None = None
        self._batch: pa.RecordBatch | None = None
        self._batch_start = self._batch_stop = 0

    def bodies(self, rows: Sequence[int]) -> list[bytes | None]:
        """The ``data`` of ``rows`` (ascending row numbers in the file)."""
        out: list[bytes | None] = []
        i = 0
        while i < len(rows):
            if self._batches is None or rows[i] < self._batch_start:
                self._seek(rows[i])
            while rows[i] >= self._batch_stop:
                self._next_batch()
            j = bisect.bisect_left(rows, self._batch_stop, i)  # the rows in this batch
            out += (
                cast("pa.RecordBatch", self._batch)
                .column(0)
                .take([row - self._batch_start for row in rows[i:j]])
                .to_pylist()
            )
            i = j
        return out

    def _seek(self, row: int) -> None:
        """The cursor at the start of the row group holding ``row``."""
        group = bisect.bisect_right(self._group_starts, row) - 1
        self._batches = self._file.iter_batches(
            batch_size=self._batch_rows,
            row_groups=list(range(group, self._file.num_row_groups)),
            columns=["data"],
            use_threads=False,
        )
        self._batch = None
        self._batch_start = self._batch_stop = self._group_starts[group]

    def _next_batch(self) -> None:
        self._batch = None  # let the previous one go before the next is read
        batch = next(cast("Iterator[pa.RecordBatch]", self._batches))
        self._batch, self._batch_start, self._batch_stop = batch, self._batch_stop, self._batch_stop + batch.num_rows


class Bodies:
    """A replay task's reader of bodies (one per task; ``webhdfs`` as `storage.webhdfs`)."""

    def __init__(self, webhdfs: str = ""):
        self._webhdfs = webhdfs
        self._files: OrderedDict[str, _DataFile] = OrderedDict()

    def _file(self, file_path: str) -> _DataFile:
        found = self._files.pop(file_path, None)
        if found is None:
            found = _DataFile(file_uri(file_path, self._webhdfs))
            while len(self._files) >= OPEN_FILES:
                self._files.popitem(last=False)
        self._files[file_path] = found
        return found

    def read(self, body_files: Sequence[str | None], keys: Sequence[str]) -> list[bytes | None]:
        """The body of each message whose ``body_files`` entry is set (None elsewhere)."""
        out: list[bytes | None] = [None] * len(keys)
        wanted: dict[str, list[int]] = {}
        for i, file_path in enumerate(body_files):
            if file_path is not None:
                wanted.setdefault(file_path, []).append(i)
        for file_path, positions in wanted.items():
            data_file = self._file(file_path)
            at = []
            for i in positions:
                row = data_file.row.get(keys[i])
                if row is None:
                    raise BodyNotFound(
                        f"message {keys[i]} is not in {data_file.uri}, where the messages table's scan "
                        "found it: the table changed during replay (run replay again)"
                    )
                at.append((row, i))
            at.sort()
            for (_, i), body in zip(at, data_file.bodies([row for row, _ in at])):
                out[i] = body
        return out
