"""What every file-system backend of `dlq_pipeline.fs` shares: the errors, a directory
entry, what a write copies, and the read buffer."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

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
