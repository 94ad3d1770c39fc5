"""Message bodies read where the `messages` table holds them, in a replay task.

Replay's join, shuffle and sorts carry each decision with its message's MQMD columns and the
data file that holds its body (``_metadata.file_path``), never the body itself; the writer's
task reads the bodies it puts from those files, a window of its work items at a time, in the
order it puts them (docs/performance.md, "Replay reads each body where it lies").

Parquet has no row-level reads: a row group's ``data`` column is read whole and the rows a
window wants are taken from it. A window is cut at ``WINDOW_BYTES`` of wanted bodies (their
stored ``data_length``), so a task holds one window's bodies and one row group, whatever the
messages' sizes. A message is found in its file by its ``message_key`` (Delta's reader gives
no row index): a file's keys are read once, with the index of the few files in use kept.
"""

from __future__ import annotations

import urllib.parse
from collections import OrderedDict
from collections.abc import Iterator, Sequence

from dlq_pipeline import fs as files
from dlq_pipeline.errors import DlqPipelineError

BODY_FILE = "body_file"  # the work item's column naming the data file that holds its body
WINDOW_BYTES = 64 * 1024 * 1024
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
    """The URI `dlq_pipeline.fs` opens for a scan's ``_metadata.file_path`` (a Hadoop path:
    percent-encoded, ``hdfs://`` reached through WebHDFS)."""
    return files.files_uri(urllib.parse.unquote(file_path), webhdfs)


class _DataFile:
    """One Parquet data file: where each message's row is, and its ``data`` by row group."""

    def __init__(self, uri: str):
        import pyarrow.parquet as pq

        self.uri = uri
        self._file = pq.ParquetFile(uri if files.is_local(uri) else files.open_input(uri))
        keys = self._file.read(columns=["message_key"]).column(0).to_pylist()
        self.row: dict[str, tuple[int, int]] = {}
        first = 0
        for group in range(self._file.num_row_groups):
            rows = self._file.metadata.row_group(group).num_rows
            for i in range(rows):
                self.row[keys[first + i]] = (group, i)
            first += rows

    def data(self, group: int):
        return self._file.read_row_group(group, columns=["data"]).column(0)


class Bodies:
    """A replay task's reader of bodies (one per task; ``webhdfs`` as `storage.webhdfs`)."""

    def __init__(self, webhdfs: str = ""):
        self._webhdfs = webhdfs
        self._files: OrderedDict[str, _DataFile] = OrderedDict()
        self._last: tuple[str, int, object] | None = None  # (file, row group, its data column)

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
            by_group: dict[int, list[tuple[int, int]]] = {}
            for i in positions:
                where = data_file.row.get(keys[i])
                if where is None:
                    raise BodyNotFound(
                        f"message {keys[i]} is not in {data_file.uri}, where the messages table's scan "
                        "found it: the table changed during replay (run replay again)"
                    )
                by_group.setdefault(where[0], []).append((where[1], i))
            for group in sorted(by_group):
                column = self._column(file_path, data_file, group)
                picked = by_group[group]
                for (_, i), body in zip(picked, column.take([row for row, _ in picked]).to_pylist()):
                    out[i] = body
        return out

    def _column(self, file_path: str, data_file: _DataFile, group: int):
        """A row group's ``data``, the last one read kept: consecutive windows share one."""
        if self._last is not None and self._last[:2] == (file_path, group):
            return self._last[2]
        self._last = None  # let the previous one go before the next is read
        column = data_file.data(group)
        self._last = (file_path, group, column)
        return column
