"""A replay partition's progress, kept where a retried task or a rerun finds it: one
immutable record per committed batch (`Checkpoint`), read back into a `CheckpointState`.

A retried Spark task, or the next run after a kill, re-emits the rows a partition settled
and skips their messages: that is what keeps a replay from putting a message twice
(docs/replay.md). The records live under the warehouse (``_checkpoints/<run_id>/``), on
whatever file system it is on (`dlq_pipeline.fs`).
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Protocol, cast

from dlq_pipeline import fs as files
from dlq_pipeline.runtime.clock import epoch_micros, from_epoch_micros

log = logging.getLogger(__name__)

_TIME_COLUMNS = ("started_at", "finished_at")


def _record_rows(record: dict) -> list[dict]:
    """A checkpoint record's rows as the writer yields them (`Checkpoint.record` wrote them)."""
    rows = [dict(zip(record["columns"], values)) for values in record["rows"]]
    for row in rows:
        for column in record["epoch_us"]:
            if row.get(column) is not None:
                row[column] = from_epoch_micros(row[column])
    return rows


@dataclass
class CheckpointState:
    rows: dict[str, list[dict]] = field(default_factory=dict)
    next_batch: int = 0
    breakers: list = field(default_factory=list)
    published: list[dict] = field(default_factory=list)  # dir: files a publish record names
    staging: list[str] = field(default_factory=list)  # dir: staging directories the partition made


class PartitionProgress(Protocol):
    """What the writer needs of a partition's checkpoint: `Checkpoint`, or the ``dir:``
    target's `dlq_pipeline.replay.targets.StagedCheckpoint`."""

    def load(self) -> CheckpointState: ...

    def record(self, rows: list[dict], *, next_batch: int, breakers: list) -> None: ...


class Checkpoint:
    """A partition's progress as small immutable objects in its own directory
    (``ROOT/<run_id>/partition-NNNNN/``), on whatever filesystem the warehouse is on
    (`dlq_pipeline.fs`: local, HDFS, object storage): one object ``NNNNNNNN.json``
    per committed batch, created exclusively and published whole, never rewritten, holding
    the ledger rows settled since the previous one, the next batch id and the circuit
    breakers. A crash leaves no torn record: the batch whose record was not published is
    the at-least-once window.

    The ``dir:`` target (`dlq_pipeline.replay.targets`) adds two kinds of record: ``staging``
    (a staging directory, recorded before it is made, so recovery can remove it) and
    ``publish`` (the files a partition is about to rename into place, what each holds, and
    all its rows in the same record: once that record exists, the files are published).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self._next: int | None = None  # the number of the next record

    @classmethod
    def for_partition(cls, root: str | os.PathLike, run_id: str, partition_id: int) -> Checkpoint:
        if not run_id or "/" in run_id or "\\" in run_id or run_id.startswith("."):
            raise ValueError(f"run id {run_id!r} cannot name a checkpoint directory")
        return cls(files.join(os.fspath(root), run_id, f"partition-{partition_id:05d}"))

    def _records(self) -> list[bytes]:
        names = [n for n in files.list_names(self.path) if _RECORD.fullmatch(n)]
        self._next = int(names[-1][:-5]) + 1 if names else 0
        return [files.read_bytes(files.join(self.path, n)) or b"" for n in names]

    def load(self) -> CheckpointState:
        state = CheckpointState()
        for text in self._records():
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except ValueError:
                log.warning("%s: ignoring a torn checkpoint record", self.path)
                continue
            if "staging" in record:
                state.staging.append(record["staging"])
                continue
            for row in _record_rows(record):
                state.rows.setdefault(row["message_key"], []).append(row)
            state.next_batch = record["next_batch"]
            state.breakers = record["breakers"]
            state.published.extend(record.get("publish", ()))
        return state

    def record(self, rows: list[dict], *, next_batch: int, breakers: list, publish: list[dict] | None = None) -> None:
        """Rows as lists under their ``columns``, times as epoch microseconds: a replay task
        writes one record per committed batch, and a dict with ISO times per row costs more
        than twice as much to encode (docs/performance.md, "A replay task's work per message")."""
        columns = list(rows[0]) if rows else []
        times = [n for n, c in enumerate(columns) if c in _TIME_COLUMNS]
        values = []
        for row in rows:
            value = [row[c] for c in columns]
            for n in times:
                if value[n] is not None:
                    value[n] = epoch_micros(value[n])
            values.append(value)
        record = {
            "next_batch": next_batch,
            "breakers": breakers,
            "columns": columns,
            "epoch_us": _TIME_COLUMNS,
            "rows": values,
        }
        if publish is not None:
            record["publish"] = publish
        self._append(record)

    def record_staging(self, directory: str | os.PathLike) -> None:
        """Note a ``dir:`` staging directory before it is made (recovery removes it)."""
        self._append({"staging": os.fspath(directory)})

    def _append(self, record: dict) -> None:
        if self._next is None:
            self._records()
        name = files.join(self.path, f"{self._next:08d}.json")
        if not files.write_file(name, json.dumps(record, separators=(",", ":")).encode()):
            raise RuntimeError(
                f"checkpoint record {name} exists already: another attempt of this partition is "
                "running at the same time"
            )
        self._next = cast(int, self._next) + 1  # set by _records() above


_RECORD = re.compile(r"[0-9]{8}\.json")
