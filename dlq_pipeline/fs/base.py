"""What every file-system backend of `dlq_pipeline.fs` shares: the errors, a directory
entry, what a write copies, the read buffer, and the operations each backend has (`Store`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from dlq_pipeline.errors import DlqPipelineError

BUFFER = 1 << 20  # a file is read through this much buffer, whatever the backend


class InputUnreachable(DlqPipelineError, OSError):
    """A remote input that cannot be listed or read (no credentials, no bucket, no network)."""


class InputNotFound(DlqPipelineError, FileNotFoundError):
    """Nothing is at an input path (it was reached: the file or directory is not there)."""


@dataclass(frozen=True)
class Entry:
    """A file or directory as its store lists it. ``modified``: the last modification (aware
    UTC, to the microsecond where the store has it); ``version``: what the store changes when a
    file is created again under the same name (HDFS's file id), None where it has none."""

    uri: str
    is_dir: bool
    size: int
    modified: dt.datetime | None = None
    version: str | None = None


def utc_from_seconds(seconds: float) -> dt.datetime:
    """An aware UTC datetime of a POSIX time, to the microsecond (what a Spark timestamp keeps)."""
    return dt.datetime.fromtimestamp(round(seconds, 6), dt.UTC)


Source = bytes | str  # what a write copies: the bytes, or a local file's path


def copy_source(source: Source, out) -> None:
    """Write ``source`` (bytes, or a local file's content) to the stream ``out``."""
    if isinstance(source, (bytes, bytearray)):
        out.write(source)
        return
    with open(source, "rb") as f:
        while chunk := f.read(BUFFER):
            out.write(chunk)


class Store(Protocol):
    """The operations every backend has, on URIs of its own file system (`dlq_pipeline.fs`
    maps a URI to its backend and documents each operation)."""

    def info(self, uri: str) -> Entry | None: ...
    def children(self, uri: str) -> list[Entry]: ...
    def open(self, uri: str) -> BinaryIO: ...
    def put(self, uri: str, source: Source, mode: int, replace: bool, dir_mode: int) -> bool: ...
    def rename(self, src: str, dst: str, dir_mode: int) -> bool: ...
    def read(self, uri: str) -> bytes | None: ...
    def names(self, uri: str) -> list[str]: ...
    def make_dirs(self, uri: str, mode: int) -> None: ...
    def delete(self, uri: str) -> bool: ...
    def remove_empty(self, uri: str) -> None: ...
