"""Planning ingest's parallel read: which files the inputs name, and the byte ranges (splits)
each Spark task reads. A dmpmqmsg dump is split on message boundaries (`plan_splits`) so a
large file is read by several tasks; an amqsbcg listing is one split."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from dlq_pipeline.dumps.dmpmqmsg_reader import plan_splits, read_dump_info
from dlq_pipeline.dumps.sources import expand_entries, expand_inputs, sniff
from dlq_pipeline.fs import file_size, open_input
from dlq_pipeline.fs.base import Entry
from dlq_pipeline.mq.mqmd import stored_text
from dlq_pipeline.runtime.clock import epoch_micros

DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024
_LISTING_QUEUE = re.compile(rb"\s*MQOPEN - '(.*)'\s*$")
_LISTING_HEAD_LINES = 16


@dataclass(frozen=True)
class FileSplit:
    """One Spark task's share of the input: the records whose first line starts in ``[start, end)``
    of ``path`` (a listing is one split: it is read whole)."""

    path: str
    kind: str  # "dmpmqmsg" | "amqsbcg" | "unknown"
    start: int
    end: int | None
    split: int  # 0-based number of this range within its file
    splits: int  # how many ranges the file has
    qmgr: str | None = None
    queue: str | None = None
    url: str | None = None  # where executors read it when not at ``path`` (hdfs:// through WebHDFS)
    # the file's modification time as listed (epoch microseconds; None where the store gives
    # none): when a message without a dump header's Created stamp was recorded
    modified: int | None = None

    @property
    def location(self) -> str:
        """What the readers open: `url`, or `path` itself."""
        return self.url or self.path


def _listing_queue(path: str) -> str | None:
    """The queue an amqsbcg listing browsed (its `` MQOPEN - 'QUEUE'`` line)."""
    with open_input(path) as f:
        for _ in range(_LISTING_HEAD_LINES):
            line = f.readline(4096)
            if not line:
                break
            match = _LISTING_QUEUE.match(line)
            if match:
                return stored_text(match.group(1).decode("utf-8", "replace")).strip() or None
    return None


def plan_work(
    paths: Iterable[str],
    split_bytes: int = DEFAULT_SPLIT_BYTES,
    webhdfs: str = "",
    unreadable: dict[str, str] | None = None,
) -> list[FileSplit]:
    """The splits of the files ``paths`` names, planned on the driver; reads only file heads.
    ``webhdfs``: the NameNode's HTTP address for ``hdfs://`` inputs (``hdfs.webhdfs``).
    ``unreadable``: where a file whose head cannot be read (gone, no permission) is put, by
    name with the reason, and left out; without it, the `OSError` is raised."""
    if split_bytes < 1:
        raise ValueError("split_bytes must be positive")
    if unreadable is None:
        return [i for path, e in expand_entries(paths, webhdfs).items() for i in _file_splits(path, e, split_bytes)]
    items: list[FileSplit] = []
    for given in paths:
        try:
            for path, entry in expand_entries([given], webhdfs).items():
                items += _file_splits(path, entry, split_bytes)
        except OSError as exc:
            unreadable[given] = f"{type(exc).__name__}: {exc}"
    return items


def _file_splits(path: str, entry: Entry, split_bytes: int) -> list[FileSplit]:
    url = entry.uri
    read_at = url if url != path else None
    modified = epoch_micros(entry.modified) if entry.modified is not None else None
    kind = sniff(url)
    if kind == "dmpmqmsg":
        qmgr, queue = source_queue(url, kind)
        ranges = plan_splits(url, split_bytes)
        return [
            FileSplit(path, kind, start, end, k, len(ranges), qmgr, queue, read_at, modified)
            for k, (start, end) in enumerate(ranges)
        ]
    if kind == "amqsbcg":
        return [FileSplit(path, kind, 0, None, 0, 1, *source_queue(url, kind), read_at, modified)]
    return [FileSplit(path, "unknown", 0, None, 0, 1, url=read_at, modified=modified)]


def source_queue(url: str, kind: str | None) -> tuple[str | None, str | None]:
    """The queue manager and queue a dump's header or a listing names (None where it names
    none), as the tables store text: a byte of the header that is not UTF-8 becomes U+FFFD."""
    if kind == "dmpmqmsg":
        info = read_dump_info(url)
        return stored_text(info.qmgr) or None, stored_text(info.queue) or None
    if kind == "amqsbcg":
        return None, _listing_queue(url)
    return None, None


def input_bytes(paths: Iterable[str], webhdfs: str = "") -> int | None:
    """The bytes of the files ``paths`` names, what a command will read (None when one
    cannot be listed or sized: ingest reports that, as an error or a quarantine row, later)."""
    try:
        return sum(file_size(url) for url in expand_inputs(paths, webhdfs).values())
    except Exception:  # noqa: BLE001 - only a hint for the session (`engine.session.quick_jit`)
        return None
