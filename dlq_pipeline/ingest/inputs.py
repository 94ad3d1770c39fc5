"""Which input files a landing reads, and what becomes of them after it.

**The files table.** Every file a landing reads whole gets a row in ``files`` (path, size,
modification time, the store's version where it has one, the run, its messages and bad
records; docs/tables.md). The latest row of a path is what was landed of it. A run lists its
inputs (one listing call per directory: sizes and times come with the names) and compares:

- a file whose size, modification time and version match its row is **skipped**, never
  opened: a scheduled run over a directory where dumps pile up reads only what is new;
- a file that is new, grew or was rewritten is **read**; its messages already stored are
  found by key, so only the new ones land;
- a file modified less than ``ingest.settle_seconds`` ago, or whose size, time or version
  change between the listing and the end of its read, is **deferred** to a later run: it is
  still being written, and a dmpmqmsg dump cut at a line boundary reads as a valid shorter
  one. Nothing of a deferred file lands;
- a file that cannot be opened (gone, no permission) or whose read failed part way is
  **unreadable**: one line says why, nothing of it is recorded, and the next run tries again.

``ingest.reread`` (``--reread``) reads every file again (messages still land once).

**Moving landed files away** (``ingest.clean_source``): ``keep`` (the default) leaves them;
``archive`` moves each into ``ingest.archive_dir`` under its path relative to the input it
was listed under, ``delete`` removes it. Only files whose row is committed (the landing's
tables written), unchanged since, and without bad records (unless
``ingest.clean_quarantined``) are moved, so a kill at any point leaves every file either in
place, to be moved by the next run (it is landed and unchanged, so it is not read again), or
moved. An archive move never replaces a file; where the store copies and deletes (object
stores), a copy left by a kill is finished by the next run.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from dlq_pipeline import fs
from dlq_pipeline.fs.base import Entry
from dlq_pipeline.runtime.clock import as_utc

log = logging.getLogger(__name__)

CLEAN_SOURCE = ("keep", "archive", "delete")
READ_FAILURES = ("unreadable_file", "reader_failed")  # quarantine codes of a read that did not finish


@dataclass(frozen=True)
class InputFile:
    """A file an input names: ``name`` as the tables record it, ``entry`` as the listing saw it
    (``entry.uri``: where the readers open it), ``under``: the input it was listed under."""

    name: str
    entry: Entry
    under: str = ""

    @property
    def size(self) -> int:
        return self.entry.size


@dataclass(frozen=True)
class LandedFile:
    """The latest ``files`` row of a path."""

    path: str
    size: int
    modified: dt.datetime | None
    version: str | None
    run_id: str
    messages: int
    quarantined: int


@dataclass
class InputPlan:
    """What a landing does with each listed file (`plan_inputs`)."""

    read: list[InputFile] = field(default_factory=list)
    skipped: list[InputFile] = field(default_factory=list)
    deferred: dict[str, str] = field(default_factory=dict)  # name -> why
    unreadable: dict[str, str] = field(default_factory=dict)  # name -> why
    sizes: dict[str, int] = field(default_factory=dict)  # name -> bytes as listed, of every file


def micros(when: dt.datetime | None) -> int | None:
    if when is None:
        return None
    utc = as_utc(when)
    return None if utc is None else round(utc.timestamp() * 1_000_000)


def same_file(entry: Entry, landed: LandedFile) -> bool:
    """Whether ``entry`` is the file ``landed`` records: same size, modification time (to the
    microsecond) and, where both have one, version (pure)."""
    if entry.size != landed.size or micros(entry.modified) != micros(landed.modified):
        return False
    return entry.version is None or landed.version is None or entry.version == landed.version


def plan_inputs(
    listed: Sequence[InputFile],
    landed: Mapping[str, LandedFile],
    *,
    now: dt.datetime,
    settle_seconds: float = 0.0,
    reread: bool = False,
) -> InputPlan:
    """Which of ``listed`` to read, skip or defer (module doc), given the ``landed`` files'
    rows by path (pure)."""
    plan = InputPlan()
    settled_before = micros(now - dt.timedelta(seconds=settle_seconds))
    for item in listed:
        plan.sizes[item.name] = item.size
        row = landed.get(item.name)
        if not reread and row is not None and same_file(item.entry, row):
            plan.skipped.append(item)
            continue
        modified = micros(item.entry.modified)
        if settle_seconds > 0 and modified is not None and settled_before is not None and modified > settled_before:
            plan.deferred[item.name] = f"modified less than {settle_seconds:g} s ago (ingest.settle_seconds)"
            continue
        plan.read.append(item)
    return plan


def changed(before: Entry, after: Entry | None) -> str | None:
    """Why a file read as ``before`` is not that file any more (``after``: its entry now,
    None when gone), or None when it is unchanged (pure)."""
    if after is None:
        return "it vanished while it was read"
    if after.size != before.size:
        return f"it changed while it was read (size {before.size} -> {after.size}): still being written"
    if micros(after.modified) != micros(before.modified) or (
        before.version is not None and after.version is not None and before.version != after.version
    ):
        return "it changed while it was read (modification time or version): still being written"
    return None


def still_same(files: Iterable[InputFile]) -> dict[str, str]:
    """The files of ``files`` that changed since they were listed, with why (one stat each)."""
    moved: dict[str, str] = {}
    for item in files:
        try:
            now = fs.stat(item.entry.uri)
        except OSError as exc:
            moved[item.name] = f"it cannot be stat-ed any more: {exc}"
            continue
        why = changed(item.entry, now)
        if why:
            moved[item.name] = why
    return moved


def list_inputs(paths: Sequence[str], webhdfs: str = "") -> list[InputFile]:
    """The files ``paths`` name, each once (the first input naming it wins), with its entry."""
    seen: dict[str, InputFile] = {}
    for given in paths:
        for name, entry in fs.list_entries(os.fspath(given), webhdfs):
            seen.setdefault(name, InputFile(name, entry, os.fspath(given)))
    return list(seen.values())


def landed_files_of(rows: Iterable[Mapping]) -> dict[str, LandedFile]:
    """The latest of the ``files`` rows (mappings of the table's columns) of every path (pure)."""
    latest: dict[str, Mapping] = {}
    for row in rows:
        known = latest.get(row["path"])
        if known is None or (row["landed_at"], row["run_id"]) >= (known["landed_at"], known["run_id"]):
            latest[row["path"]] = row
    return {
        path: LandedFile(path, r["size"], r["modified_at"], r["version"], r["run_id"], r["messages"], r["quarantined"])
        for path, r in latest.items()
    }


def bytes_to_land(paths: Sequence[str], landed: Mapping[str, LandedFile], webhdfs: str = "") -> int | None:
    """The bytes a landing of ``paths`` will read: those of the files not among the ``landed``
    ones whole and unchanged. A hint for sizing the session before it starts
    (`dlq_pipeline.engine.session.quick_jit`): a scheduled run over a directory that holds its
    history reads only what is new. None when the inputs cannot be listed."""
    try:
        listed = list_inputs(paths, webhdfs)
    except Exception:  # noqa: BLE001 - only a hint: ingest reports what cannot be listed, later
        return None
    return sum(i.size for i in listed if i.name not in landed or not same_file(i.entry, landed[i.name]))


# --- moving landed files away ------------------------------------------------------------------


def archive_uri(item: InputFile, archive_dir: str) -> str:
    """Where ``archive`` moves ``item``: ``archive_dir`` joined with its path relative to the
    input it was listed under (its base name when the input named the file itself; pure)."""
    name, under = item.name.rstrip("/"), item.under.rstrip("/")
    relative = name[len(under) + 1 :] if under and name.startswith(under + "/") else name.rsplit("/", 1)[-1]
    return fs.join(archive_dir, *[part for part in relative.split("/") if part])


def inside(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or below it (pure, by name)."""
    path, directory = path.rstrip("/"), directory.rstrip("/")
    return path == directory or path.startswith(directory + "/")


def clean_sources(
    files: Sequence[InputFile],
    landed: Mapping[str, LandedFile],
    *,
    mode: str,
    archive_dir: str = "",
    quarantined_too: bool = False,
) -> dict[str, str]:
    """Archive or delete (``mode``) the files of ``files`` whose ``landed`` row is committed
    and matches them (module doc); return what was done to each, by name. A file that cannot
    be moved is left where it is, with a warning: the next run tries again."""
    done: dict[str, str] = {}
    if mode == "keep":
        return done
    for item in files:
        row = landed.get(item.name)
        if row is None or not same_file(item.entry, row) or (row.quarantined and not quarantined_too):
            continue
        try:
            if mode == "delete":
                fs.delete(item.entry.uri)
                done[item.name] = "deleted"
                continue
            target = archive_uri(item, archive_dir)
            if not fs.rename(item.entry.uri, target):
                there = fs.stat(target)
                if there is None or there.size != item.size:
                    log.warning("ingest: %s not archived: %s exists and is another file", item.name, target)
                    continue
                fs.delete(item.entry.uri)  # a move that copied and was killed before it deleted
            done[item.name] = f"archived to {target}"
        except OSError as exc:
            log.warning("ingest: %s not %s: %s (the next run tries again)", item.name, mode + "d", exc)
    return done
