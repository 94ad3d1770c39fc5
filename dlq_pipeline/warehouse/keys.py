"""The keys of the stored messages: which of a landing's messages are stored already.

A landing's lookup reads the ``keys`` table (each stored message's ``message_key`` and the run
that landed it, in one or a few files: `Storage.compact`), not ``messages``, whose key column
sits in a data file or more per write of every landing ever made. Message keys are SHA-256
digests, spread uniformly: no sort or partitioning narrows an exact lookup of a landing's new
keys to a part of the stored ones, so a compact table of the keys alone is what keeps the
lookup small (docs/architecture.md, "What a run reads").

**Which messages it covers.** A write of a landing's messages appends the keys of the data
files it added, read back from those files, and only then records the files (``stored``,
`dlq_pipeline.warehouse.landings.recording_files`): a data file of ``messages`` that a
``stored`` record names has its keys here. A file no record names (a write cut short before
its record) is read for its keys by `stored_keys`, so a lost record costs a read, never a
message stored twice. A warehouse without the table gets it at its next landing, from every
data file of ``messages``. Delta's files are its log's to name: there, and for tables by
name, the lookup reads the key column of ``messages``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from pyspark.sql import DataFrame

from dlq_pipeline.warehouse.storage import Storage


def stored_keys(storage: Storage, recorded: Collection[str]) -> DataFrame | None:
    """The key of every message ``storage`` holds (one column, ``message_key``; a key may
    appear twice), or None when it holds none. ``recorded``: the data files of ``messages``
    that a ``stored`` record names (`dlq_pipeline.warehouse.landings.LandingState`)."""
    if not storage.exists("messages"):
        return None
    present = storage.data_files("messages")
    if present is None or not storage.exists("keys"):
        return storage.read("messages").select("message_key")
    keys = storage.read("keys").select("message_key")
    unnamed = [name for name in present if name not in recorded]
    if not unnamed:
        return keys
    return keys.unionByName(storage.read_files("messages", unnamed).select("message_key"))


def append_keys(storage: Storage, added: Sequence[str]) -> None:
    """Append to ``keys`` the keys of the data files ``added`` to a Parquet ``messages``
    (read back from them: exactly what they hold), in one file. A warehouse without the table
    gets it made from every data file of ``messages`` (one scan of their key column, once)."""
    names = added if storage.exists("keys") else storage.data_files("messages") or added
    rows = storage.read_files("messages", names).select("message_key", "run_id")
    storage.append("keys", rows.coalesce(1))
