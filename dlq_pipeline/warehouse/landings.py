"""Which landings still have messages pending: the part of ``messages`` classify and replay read.

A *landing* is the messages one run stored (an ingest or a drain; ``messages.run_id``). The
``landings`` table records each one (``landed``, before its messages are written) and the
moment every message of it had ended (``settled``: each delivered, discarded or expired, which is
final). Classify and replay read only the messages of landings not settled (`open_messages`):
Parquet's and Delta's statistics on ``run_id`` let Spark skip the files of settled landings,
so a scheduled run's work follows what is pending, not all that was ever landed. A message
left pending (an IGNORE, a dry run) keeps its landing open, and its landing is read by every
run until it is settled.

In a Parquet warehouse a scan still opens every data file of ``messages`` (its footer) to
find those statistics, so each write of a landing's messages records the data files it added
(``stored``, `recording_files`), and `open_messages` reads only the files of open landings
and every file no landing names (a write cut short before its record, a warehouse from before
the record, a file rewritten by hand): a scheduled run opens the files of what is pending,
not all that were ever written. The ledger is read the same way (`open_ledger`): each replay's
ledger write records its data files under every landing open at that moment (``attempted``,
`recording_ledger`). A message gets ledger rows only while it has not ended, when its landing
is open, so a ledger file all of whose landings have settled holds no row of a pending
message, and classify and the settling leave it closed. Delta keeps its files' statistics in
its log and needs none of this.

Errors only ever leave a landing open longer, or a file read that need not be (a cost,
never a lost message): ``landed`` is recorded before the messages are written, ``stored``
after, and ``settled`` only after a look at the ledger finds none of its messages pending.
A warehouse without the table gets it, once, from the run ids ``messages`` holds.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dlq_pipeline.runtime.clock import as_utc, utc_now
from dlq_pipeline.warehouse.keys import append_keys, stored_keys
from dlq_pipeline.warehouse.ledger import ended_keys
from dlq_pipeline.warehouse.schemas import local_rows
from dlq_pipeline.warehouse.storage import Storage

log = logging.getLogger(__name__)

LANDED, STORED, ATTEMPTED, SETTLED = "landed", "stored", "attempted", "settled"

T = TypeVar("T")


def _append(
    storage: Storage, run_ids, event: str, now: dt.datetime | None = None, files: Sequence[str] | None = None
) -> None:
    at = as_utc(now) or utc_now()
    rows = [(r, event, at, list(files) if files is not None else None) for r in sorted(run_ids)]
    storage.append("landings", local_rows(storage.spark, rows, "landings"))


@dataclass(frozen=True)
class LandingState:
    """What the ``landings`` table says now: the run ids of the landings not settled
    (``open``, sorted), the data files each write of messages recorded (``files``: name ->
    run id) and those of the ledger writes (``ledger``: name -> the landings open then)."""

    open: list[str]
    files: dict[str, str] = field(default_factory=dict)
    ledger: dict[str, set[str]] = field(default_factory=dict)


def landing_state(storage: Storage) -> LandingState:
    """The `LandingState` of ``storage``, from one small read (`Storage.small_table`). A
    warehouse with ``messages`` but no ``landings`` table has it made first, every landing open."""
    if not storage.exists("landings"):
        if not storage.exists("messages"):
            return LandingState([])
        runs = sorted(r["run_id"] for r in storage.read("messages").select("run_id").distinct().collect())
        if runs:
            log.info("recording the %d landings of messages in the landings table", len(runs))
            _append(storage, runs, LANDED)
        return LandingState(runs)
    landed: set[str] = set()
    settled: set[str] = set()
    files: dict[str, str] = {}
    ledger: dict[str, set[str]] = {}
    for r in storage.small_table("landings").select(["run_id", "event", "files"]).to_pylist():
        if r["event"] == LANDED:
            landed.add(r["run_id"])
        elif r["event"] == SETTLED:
            settled.add(r["run_id"])
        elif r["event"] == ATTEMPTED:
            for name in r["files"] or ():
                ledger.setdefault(name, set()).add(r["run_id"])
        else:
            files.update(dict.fromkeys(r["files"] or (), r["run_id"]))
    return LandingState(sorted(landed - settled), files, ledger)


def open_landings(storage: Storage) -> list[str]:
    """The run ids of the landings not settled, sorted (`landing_state`)."""
    return landing_state(storage).open


def record_landing(storage: Storage, run_id: str, now: dt.datetime | None = None) -> None:
    """Record that ``run_id`` stores messages (before it writes them). A run recorded twice
    is one landing (a set of run ids): no look at the table first, which would be a job."""
    _append(storage, [run_id], LANDED, now)


def stored_message_keys(storage: Storage) -> DataFrame | None:
    """The key of every stored message (`dlq_pipeline.warehouse.keys.stored_keys`, the files
    the ``stored`` records name), or None when there are none: what a write of messages
    looks its keys up in."""
    if not storage.exists("messages"):
        return None
    return stored_keys(storage, landing_state(storage).files)


def _added_files(storage: Storage, table: str, write: Callable[[], T]) -> tuple[T, list[str]]:
    """Run ``write`` (a write to ``table``) and return what it returned and the data files it
    added to the table (sorted; none where the storage does not name its files)."""
    before = storage.data_files(table)
    done = write()
    if before is None:
        return done, []
    return done, sorted(set(storage.data_files(table) or ()) - set(before))


def recording_files(storage: Storage, run_id: str, write: Callable[[], int]) -> int:
    """Run ``write`` (a write of run ``run_id``'s messages; it returns how many it stored),
    append the keys of the data files it added to ``messages`` (`dlq_pipeline.warehouse.keys`)
    and then record those files (module doc); return what ``write`` did."""
    stored, added = _added_files(storage, "messages", write)
    if added:
        append_keys(storage, added)
        _append(storage, [run_id], STORED, files=added)
    return stored


def recording_ledger(storage: Storage, write: Callable[[], None]) -> None:
    """Run ``write`` (an append to the ledger) and record the data files it added under every
    landing open now (module doc)."""
    _, added = _added_files(storage, "ledger", write)
    runs = landing_state(storage).open if added else []
    if runs:
        _append(storage, runs, ATTEMPTED, files=added)


def open_ledger(storage: Storage, state: LandingState) -> DataFrame:
    """The ledger rows that can belong to messages of the landings open in ``state``: from the
    data files recorded under one of them and every file no record names (a recovery's rows,
    a write cut short before its record), where the warehouse names its files; else all."""
    present = storage.data_files("ledger")
    if present is None:
        return storage.read("ledger")
    wanted = set(state.open)
    chosen = [name for name in present if name not in state.ledger or state.ledger[name] & wanted]
    return storage.read_files("ledger", chosen)


def files_to_read(present: Sequence[str], recorded: dict[str, str], runs: Sequence[str]) -> list[str]:
    """Of the data files ``present``, those a read of the landings ``runs`` opens: the files
    ``recorded`` (file -> its landing) for one of them, and every file no landing names (pure)."""
    wanted = set(runs)
    return [name for name in present if name not in recorded or recorded[name] in wanted]


def open_message_files(storage: Storage, state: LandingState | None = None) -> list[str] | None:
    """The data files of ``messages`` that can hold messages of the landings not settled
    (`files_to_read`), or None where the warehouse does not name its files."""
    state = landing_state(storage) if state is None else state
    present = storage.data_files("messages")
    return None if present is None else files_to_read(present, state.files, state.open)


def open_messages(storage: Storage, state: LandingState | None = None, files: list[str] | None = None) -> DataFrame:
    """The rows of ``messages`` of the landings not settled (``state``: `landing_state`, when
    known), from only the data files that can hold them where the warehouse names its files
    (``files``: `open_message_files`, when known)."""
    state = landing_state(storage) if state is None else state
    if not state.open:
        return storage.read("messages").where(F.lit(False))
    chosen = open_message_files(storage, state) if files is None else files
    if chosen is None:
        return storage.read("messages").where(F.col("run_id").isin(*state.open))
    return storage.read_files("messages", chosen).where(F.col("run_id").isin(*state.open))


def settle_landings(storage: Storage, now: dt.datetime | None = None) -> list[str]:
    """Record as settled the open landings none of whose messages is pending any more (their
    messages and their ledger rows read, nothing else); return their run ids."""
    state = landing_state(storage)
    runs = state.open
    if not runs:
        return []
    keys = open_messages(storage, state).select("message_key", "run_id")
    ledger = open_ledger(storage, state).join(keys.select("message_key"), "message_key", "left_semi")
    pending = keys.join(ended_keys(ledger), "message_key", "left_anti").select("run_id").distinct()
    settled = sorted(set(runs) - {r["run_id"] for r in pending.collect()})
    if settled:
        _append(storage, settled, SETTLED, now)
        storage.compact("landings")
        log.info("landings settled (every message delivered, discarded or expired): %s", ", ".join(settled))
    return settled
