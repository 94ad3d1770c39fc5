"""Which reader a file needs, decided from its first few kilobytes.

A dmpmqmsg/qload dump is recognised by its ``* DMPMQMSG`` / ``* QLOAD`` header (after an
optional stdout banner) or, for a ``-dH`` dump written without a header, by an ``A`` or ``N``
line as its first non-blank line. An amqsbcg listing is recognised by ``AMQSBCG0 - starts
here``, or, when the start was trimmed off, by an `` MQGET of message number`` or
``****Message descriptor****`` line. dmpmqmsg ``-dT``/``-ds`` output has the dmpmqmsg header,
so it goes to the dump reader, which rejects it with ``not_a_message_dump``.

Anything else is not read: ``read_source`` yields one ``RecordError`` instead of raising, so
one stray file never stops an ingest. An empty or whitespace-only file is ``empty_file``
(nothing in it could be a message; a dump of an empty queue still has its header). A file
with NUL bytes near its start is binary and ``unknown_format``, as is text of any other kind.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Literal

from dlq_pipeline.dumps.amqsbcg import read_amqsbcg
from dlq_pipeline.dumps.dmpmqmsg import HEADER_SEARCH_LINES, MAX_LINE_LENGTH, MD_KINDS, line_kind
from dlq_pipeline.dumps.dmpmqmsg_reader import SNIPPET_LENGTH, read_dump
from dlq_pipeline.dumps.records import DumpedMessage, DumpHeader, RecordError
from dlq_pipeline.fs import list_entries, open_input
from dlq_pipeline.fs.base import Entry
from dlq_pipeline.mq.mqmd import bytes_to_text

__all__ = ["SNIFF_BYTES", "sniff", "read_source", "expand_paths", "expand_inputs", "expand_entries"]

SNIFF_BYTES = 8192
_LISTING_MARKS = (b"AMQSBCG0", b"MQGET of message number", b"****Message descriptor****")

Kind = Literal["dmpmqmsg", "amqsbcg"]


def sniff(path) -> Kind | None:
    """ "dmpmqmsg", "amqsbcg" or None, from the first ``SNIFF_BYTES`` of the file."""
    with open_input(path) as f:
        return _sniff_head(f.read(SNIFF_BYTES))


def _sniff_head(head: bytes) -> Kind | None:
    if b"\x00" in head:
        return None
    first = True
    for line in head.split(b"\n")[:HEADER_SEARCH_LINES]:
        line = line.rstrip(b"\r")
        text = line.strip()
        if not text:
            continue
        if line.startswith((b"* DMPMQMSG", b"* QLOAD")):
            return "dmpmqmsg"
        if text.startswith(_LISTING_MARKS):
            return "amqsbcg"
        if first and line_kind(line) in MD_KINDS:
            return "dmpmqmsg"
        first = False
    return None


def read_source(
    path,
    *,
    name: str | None = None,
    start: int = 0,
    end: int | None = None,
    max_line_length: int = MAX_LINE_LENGTH,
    max_message_bytes: int | None = None,
    headers: list[DumpHeader] | None = None,
) -> Iterator[DumpedMessage | RecordError]:
    """Read ``path`` with the reader its content needs (see the module docstring).

    ``start``/``end`` split a dump as ``read_dump`` does, and ``headers`` gets the dump
    header lines the read passes (a listing has none). A listing cannot be split: the
    split that starts at 0 reads all of it and the others yield nothing; likewise the
    error for a file of unknown kind comes only from the split that starts at 0.
    """
    label = name if name is not None else os.fspath(path)
    kind = sniff(path)
    if kind == "dmpmqmsg":
        records = read_dump(
            path,
            name=label,
            start=start,
            end=end,
            max_line_length=max_line_length,
            max_message_bytes=max_message_bytes,
            headers=headers,
        )
    elif start > 0:
        return
    elif kind == "amqsbcg":
        records = read_amqsbcg(path, name=label, max_line_length=max_line_length)
    else:
        yield _unknown(path, label)
        return
    for record in records:
        if max_message_bytes is not None and isinstance(record, DumpedMessage):
            record = too_large(record, label, max_message_bytes) or record
        yield record


def read_sources(
    paths: Iterable[str], *, max_line_length: int, max_message_bytes: int | None, report: Callable[[str], None]
) -> Iterator[tuple[str, DumpedMessage]]:
    """(path, message) for every message of ``paths``, each read by `read_source`; each bad
    record and each file that cannot be read is passed to ``report`` as its line, and the
    reading goes on (what `rules test` and `rules suggest` read without Spark)."""
    for path in paths:
        try:
            for record in read_source(
                path, name=path, max_line_length=max_line_length, max_message_bytes=max_message_bytes
            ):
                if isinstance(record, RecordError):
                    report(str(record))
                    continue
                yield path, record
        except OSError as exc:
            report(f"{path}: cannot read: {exc.strerror or exc}")


def too_large(msg: DumpedMessage, file: str, max_message_bytes: int) -> RecordError | None:
    """The error a message over ``ingest.max_message_bytes`` becomes (its real length counts,
    also when a listing holds only part of it)."""
    length = msg.total_length if msg.truncated and msg.total_length is not None else len(msg.data)
    if length <= max_message_bytes:
        return None
    return RecordError(
        file,
        msg.line,
        msg.offset,
        "message_too_large",
        f"the message has {length} bytes of data, more than the {max_message_bytes}-byte "
        "limit (ingest.max_message_bytes)",
        "",
        msg.index,
    )


def _unknown(path, label: str) -> RecordError:
    with open_input(path) as f:
        head = f.read(SNIFF_BYTES)
    if not head.strip():
        return RecordError(
            label, 1, 0, "empty_file", "the file is empty: neither a dmpmqmsg dump nor an amqsbcg listing"
        )
    if b"\x00" in head:
        return RecordError(
            label,
            1,
            0,
            "unknown_format",
            "binary data (NUL bytes near the start): neither a dmpmqmsg dump nor an amqsbcg listing",
            head[:32].hex(" "),
        )
    ebcdic = _ebcdic_kind(head)
    if ebcdic is not None:
        return RecordError(
            label,
            1,
            0,
            "unknown_format",
            f"this is a {ebcdic} in EBCDIC (a z/OS text file transferred in binary), which is not "
            "read: transfer it as text (FTP ASCII mode), or convert it, e.g. "
            "iconv -f IBM-1047 -t ISO-8859-1 (newline 0x15 becomes 0x85: tr '\\205' '\\n')",
            head[:32].hex(" "),
        )
    number, line, offset = _first_text_line(head)
    return RecordError(
        label,
        number,
        offset,
        "unknown_format",
        "no '* DMPMQMSG'/'* QLOAD' header and no 'AMQSBCG0' banner near the start: "
        "neither a dmpmqmsg dump nor an amqsbcg listing",
        bytes_to_text(line.rstrip(b"\r")[:SNIPPET_LENGTH]),
    )


def _first_text_line(head: bytes) -> tuple[int, bytes, int]:
    """(line number, line, offset) of the first line of ``head`` that is not blank (the last
    line when all are)."""
    offset = 0
    for number, line in enumerate(head.split(b"\n"), 1):
        if line.strip():
            return number, line, offset
        offset += len(line) + 1
    return number, line, offset


def _ebcdic_kind(head: bytes) -> str | None:
    """What an EBCDIC text file holds, judged by its first lines read as CCSID 1047 (the
    marks are invariant characters, the same in every EBCDIC code page); None if neither."""
    from dlq_pipeline.mq.codepages import decode

    text = decode(head[:SNIFF_BYTES], 1047)[0].replace("\x85", "\n")
    kind = _sniff_head(text.encode("utf-8", "replace"))
    return {"dmpmqmsg": "dmpmqmsg dump", "amqsbcg": "amqsbcg listing"}.get(kind) if kind else None


def expand_paths(paths: Iterable[str]) -> list[str]:
    """Files named by ``paths``: files as they are, directories searched recursively, globs
    expanded. Hidden files and names starting with ``_`` inside directories are skipped.
    Local files as absolute paths, remote ones as URIs (``hdfs://``, ``s3a://``...), without
    duplicates, in the given order (each directory sorted).

    The one definition of "the input files", shared by ingest and ``rules test`` so both
    see the same messages."""
    return list(expand_inputs(paths))


def expand_inputs(paths: Iterable[str], webhdfs: str = "") -> dict[str, str]:
    """`expand_paths` as {name: the URL executors read it at} (see `files.reading_url`)."""
    return {name: entry.uri for name, entry in expand_entries(paths, webhdfs).items()}


def expand_entries(paths: Iterable[str], webhdfs: str = "") -> dict[str, Entry]:
    """`expand_paths` as {name: its `Entry` as the listing saw it}: the URL executors read it
    at (``uri``), its size and modification time."""
    out: dict[str, Entry] = {}
    for given in paths:
        for name, entry in list_entries(os.fspath(given), webhdfs):
            out.setdefault(name, entry)
    return out
