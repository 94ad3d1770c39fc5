"""Replay targets: where replayed messages go. Every target hands the writer the same
`Connection` interface, through `Target.partition` (one connector per Spark partition).

``dry-run``
    nothing is put; every RETRY/FWD is recorded ``dry_run``; no checkpoints (no side effects)
``dir:PATH``
    dmpmqmsg files ``PATH/<run>/<qmgr>/<queue>.dmp`` that ``dmpmqmsg -o QUEUE -f FILE`` loads;
    checkpoints: the record of what each partition published (`DumpSink`)
``sim:NAME``
    the simulated queue manager in ``WAREHOUSE/_sim/NAME.sqlite`` (``sim:`` = ``SIM``); checkpoints
``mq:QMGR``
    a real queue manager, client settings from ``[mq.qmgrs.QMGR]``; checkpoints

File names come from queue names, and ``&REPLYQ`` takes those from message content, so
`safe_file_name` turns any name into one safe path component (see its doc).
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from dlq_pipeline import fs as files
from dlq_pipeline.dumps.dmpmqmsg_writer import DumpLayout, write_dump
from dlq_pipeline.errors import UsageError
from dlq_pipeline.mq import reasons
from dlq_pipeline.mq.interface import Connection, Message, MQError, PutHandle
from dlq_pipeline.mq.mqmd import MQMD, stored_text, text_to_bytes
from dlq_pipeline.replay.checkpoints import Checkpoint, CheckpointState
from dlq_pipeline.replay.writer import queue_key
from dlq_pipeline.runtime.paths import PathError, local_dir
from dlq_pipeline.runtime.permissions import DIR_MODE, FILE_MODE, directory_problem, open_private
from dlq_pipeline.runtime.testhooks import crash_point

log = logging.getLogger(__name__)

KINDS = ("dry-run", "dir", "sim", "mq")
DEFAULT_SIM_NAME = "SIM"
LOCAL_QMGR_DIR = "@local"  # directory for a blank target queue manager (no name can map to it)
MAX_NAME_LENGTH = 120
_MQ_NAME = re.compile(r"[A-Za-z0-9._%]{1,48}")
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_KEEP = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%")
_DEVICES = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CLOCK$", "CONIN$", "CONOUT$"}
    | {f"COM{i}" for i in range(10)}
    | {f"LPT{i}" for i in range(10)}
)


class TargetError(UsageError, ValueError):
    """A target spec or its configuration is unusable; the message says how to fix it."""


def check_run_id(run_id: str) -> str:
    """Run ids name directories (checkpoints, dump output): letters, digits, ``. _ -``."""
    if not RUN_ID.fullmatch(run_id or ""):
        raise TargetError(f"run id {run_id!r} cannot name a directory (letters, digits, '.', '_', '-')")
    return run_id


def safe_file_name(name: str, max_length: int = MAX_NAME_LENGTH) -> str:
    """One safe path component for an MQ object name, distinct for distinct names.

    Trailing blanks are insignificant in MQ names and dropped. A name made only of upper-case
    letters, digits and ``. _ %`` that does not start or end with ``.`` and is not a Windows
    device name (CON, NUL, COM1, ...) is used as it is. Otherwise every byte outside that set
    (lower case included, so names differing in case stay distinct on case-insensitive file
    systems), a leading or trailing ``.``, and the first letter of a device name are written
    ``-XX`` (hex); ``-`` never appears otherwise, so the mapping cannot collide. A result
    longer than ``max_length`` is cut and ends ``~`` + 16 hex digits of the name's SHA-256. (A
    name holding a lone surrogate no dump byte maps to is encoded with ``surrogatepass`` and
    starts with ``~``.)
    The result has no separators, is never ``.``/``..``, never empty, never hidden.
    """
    prefix = ""
    try:
        raw = text_to_bytes(name.rstrip(" "))
    except UnicodeEncodeError:  # a lone surrogate that no dump byte maps to: marked, so still distinct
        raw, prefix = name.rstrip(" ").encode("utf-8", "surrogatepass"), "~"
    if not raw:
        return "-"
    base = raw.split(b".", 1)[0].decode("ascii", "replace").upper()
    device = base in _DEVICES
    out = []
    for i, byte in enumerate(raw):
        edge_dot = byte == 0x2E and (i == 0 or i == len(raw) - 1)
        if byte in _KEEP and not edge_dot and not (device and i == 0):
            out.append(chr(byte))
        else:
            out.append(f"-{byte:02X}")
    result = prefix + "".join(out)
    if len(result) > max_length:
        digest = hashlib.sha256(raw).hexdigest()[:16].upper()
        result = result[: max_length - 17] + "~" + digest
    return result


def _header_text(name: str) -> str | None:
    """A name fit for the dump's ``* Queue =`` comment line, or None (it is only a comment)."""
    name = name.rstrip(" ")
    return name if name and name.isascii() and name.isprintable() else None


# --- dry run -------------------------------------------------------------------------------


class DryRunConnection:
    """Accepts nothing: the writer records ``dry_run`` and never calls put."""

    dry_run = True
    qmgr_name = ""

    def disconnect(self) -> None:
        pass

    def open_for_put(self, q, qmgr="", *, set_all_context=True, alternate_user=None) -> PutHandle:
        return PutHandle(q, qmgr or "", set_all_context, alternate_user)

    def put(self, handle, md, data, *, syncpoint=True) -> None:
        raise RuntimeError("dry run: nothing is put")

    def commit(self) -> None:
        pass

    def backout(self) -> None:
        pass

    def browse(self, q, *, buffer_size=0) -> Iterator[Message]:
        return iter(())

    def get(self, q, **kw) -> Message:
        raise MQError(reasons.MQRC_NO_MSG_AVAILABLE, "dry run")

    def inquire_depth(self, q, qmgr="") -> tuple[int, int]:
        return 0, 0


# --- dmpmqmsg directory --------------------------------------------------------------------


class StagedCheckpoint:
    """The checkpoint a ``dir:`` partition's writer sees: `load` gives what earlier attempts
    of the task published (the partition's own checkpoint), `record` keeps what it commits
    now in memory: none of it counts until `DumpSink.finish` publishes it."""

    def __init__(self, published: Checkpoint):
        self.published = published
        self.state = CheckpointState()

    def load(self) -> CheckpointState:
        return self.published.load()

    def record(self, rows: list[dict], *, next_batch: int, breakers: list) -> None:
        for row in rows:
            self.state.rows.setdefault(row["message_key"], []).append(row)
        self.state.next_batch, self.state.breakers = next_batch, breakers


class _Hashing:
    """A binary file that also hashes what is written to it into ``sha256`` (the file's
    hash, carried on across the appends that write it)."""

    def __init__(self, f, sha256):
        self.f, self.sha256 = f, sha256

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        return self.f.write(data)


DUMP_LAYOUT = DumpLayout()  # dmpmqmsg's defaults: what `dmpmqmsg -o` loads


def dir_modes(file_mode: int) -> int:
    """The mode of the directories a ``dir:`` target makes for files of ``file_mode`` (pure):
    owner rwx, plus r-x for group and others where the files are readable by them, so a
    group-readable file can be reached by its group (``mqm`` loading it with ``dmpmqmsg -o``)."""
    return 0o700 | (0o050 if file_mode & 0o040 else 0) | (0o005 if file_mode & 0o004 else 0)


class DumpSink:
    """One partition's output under ``root`` (``OUT/<run>``, a local path or a URI of the
    filesystem layer, `dlq_pipeline.fs`), published exactly once.

    Committed messages are written as they come, one dump file per queue, into a private
    temporary directory on the executor (they die with the task). `finish` publishes every
    dump file whole (create-exclusive; linked, not copied, where the target is on the same
    local filesystem) into ``root/.staging-pNNNNN-*`` on the target's filesystem, a
    directory the partition's checkpoint names before it is made; then it records ONE checkpoint record that names
    each file (final path, staged path, SHA-256, message count, message keys) and holds all
    the partition's ledger rows, and only then renames the files into place (HDFS ``RENAME``;
    on an object store a server-side copy: the final object appears whole). That record is
    the commit point: `complete_partition` (run by a retried task and, through replay's
    recovery, by the next run) renames whatever a record names that is still staged and
    removes the staging directories, so a partition killed after the record is published
    whole and its rows reach the ledger; one killed before it published nothing and recorded
    nothing, so its messages are decided and written again. A published file is never
    overwritten (`_free_name`). Files get ``mode`` (``replay.dir_mode``), the directories
    made for them `dir_modes` of it.
    """

    def __init__(self, root: str, partition_id: int, checkpoint: Checkpoint, mode: int = FILE_MODE):
        self.root, self.checkpoint, self.mode = root, checkpoint, mode
        complete_partition(checkpoint.load())  # an earlier attempt of this task: finish or clear it
        self.staging = files.join(root, f".staging-p{partition_id:05d}-{uuid.uuid4().hex[:8]}")
        checkpoint.record_staging(self.staging)
        local_dirs = os.environ.get("SPARK_LOCAL_DIRS", "").split(",")[0] or None  # an executor's scratch space
        self.scratch = Path(tempfile.mkdtemp(prefix="dlq-dir-", dir=local_dirs))
        self.progress = StagedCheckpoint(checkpoint)
        self.files: dict[tuple[str, str], Path] = {}
        self.counts: dict[tuple[str, str], int] = {}
        self.hashes: dict[tuple[str, str], hashlib._Hash] = {}

    @property
    def writer_checkpoint(self) -> StagedCheckpoint:
        return self.progress

    def path_for(self, qmgr: str, queue: str) -> str:
        qdir = safe_file_name(qmgr) if qmgr.strip(" ") else LOCAL_QMGR_DIR
        return files.join(self.root, qdir, f"{safe_file_name(queue)}.dmp")

    def accept(self, messages: list[tuple[str, str, MQMD, bytes]]) -> None:
        for qmgr, queue, md, data in messages:
            key = (qmgr, queue)
            if key not in self.files:
                self.files[key] = self.scratch / f"{len(self.files):06d}.dmp"
                self.counts[key], self.hashes[key] = 0, hashlib.sha256()
                with open_private(self.files[key], "wb") as f:
                    _Hashing(f, self.hashes[key]).write(DUMP_LAYOUT.header(_header_text(qmgr), _header_text(queue)))
            with open_private(self.files[key], "ab") as f:
                DUMP_LAYOUT.write_message(_Hashing(f, self.hashes[key]), md, data, self.counts[key])
            self.counts[key] += 1

    def finish(self) -> list[str]:
        """Publish the partition's files and rows (see the class doc); the files' paths."""
        staged = self.progress.state
        rows = [row for key_rows in staged.rows.values() for row in key_rows]
        keys: dict[tuple[str, str], list[str]] = {}
        for row in rows:
            if row["outcome"] == "delivered":
                keys.setdefault(queue_key(row["target_qmgr"], row["target_q"]), []).append(row["message_key"])
        entries: list[dict] = []
        taken: set[str] = set()
        for n, (key, local) in enumerate(sorted(self.files.items())):
            qmgr, queue = key  # exact names; the rows hold them as stored text
            shown = (stored_text(qmgr), stored_text(queue))
            final = _free_name(self.path_for(qmgr, queue), taken)
            taken.add(final)
            written = files.join(self.staging, f"{n:06d}.dmp")
            if not files.write_file(written, str(local), mode=self.mode, dir_mode=dir_modes(self.mode), move=True):
                raise RuntimeError(f"{written} exists already: another attempt of this partition is running")
            local.unlink()
            entries.append(
                {
                    "file": final,
                    "staged": written,
                    "sha256": self.hashes[key].hexdigest(),
                    "messages": self.counts[key],
                    "keys": keys.get(shown, []),
                }
            )
        crash_point("dir-files-written")
        if entries or rows:
            self.checkpoint.record(rows, next_batch=staged.next_batch, breakers=staged.breakers, publish=entries)
        crash_point("dir-publish-recorded")
        published = _publish(entries, dir_modes(self.mode))
        files.delete(self.staging)
        self.discard()
        crash_point("dir-published")
        return published

    def discard(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)


def _free_name(path: str, taken) -> str:
    """``path``, or ``NAME~N.dmp`` when that is taken in this publish or already there (a run
    id used again): a published file is never overwritten. Safe names hold ``~`` only
    before 16 hex digits, so ``~N`` cannot collide with one."""
    stem, _, suffix = path.rpartition(".")
    candidate, n = path, 0
    while candidate in taken or files.exists(candidate):
        n += 1
        candidate = f"{stem}~{n}.{suffix}"
    return candidate


def _publish(entries: list[dict], dir_mode: int = DIR_MODE) -> list[str]:
    """Rename each recorded file that is still staged into place; the final paths."""
    published = []
    for n, entry in enumerate(entries, 1):
        staged, final = entry["staged"], entry["file"]
        if files.exists(staged):
            if not files.rename(staged, final, dir_mode=dir_mode):  # something took the name after the record
                taken = final
                final = _free_name(final, ())
                log.warning("%s existed already; published as %s", taken, final)
                files.rename(staged, final, dir_mode=dir_mode)
        elif not files.exists(final):
            log.warning("%s was published (%d messages) and has since been removed", final, entry["messages"])
        published.append(final)
        crash_point("dir-file-renamed", n)
    return published


def complete_partition(state: CheckpointState) -> int:
    """Finish what a ``dir:`` partition that stopped left behind, from its checkpoint: rename
    into place every file a publish record names that is still staged, and remove its
    staging directories and the run's output directory if that leaves it empty. Idempotent;
    the number of files it renamed. Targets without files have neither kind of record:
    nothing to do."""
    renamed = sum(1 for e in state.published if files.exists(e["staged"]))
    if renamed:
        log.warning("publishing %d dmpmqmsg files recorded by a replay that stopped", renamed)
    _publish(state.published)
    for directory in state.staging:
        if files.exists(directory):
            files.delete(directory)
            files.remove_empty_dir(directory.rstrip("/").rpartition("/")[0])  # OUT/<run>, when it published nothing
    return renamed


class DirConnection:
    """Puts become dmpmqmsg records; a unit of work is what `commit` hands to the sink."""

    dry_run = False
    qmgr_name = ""

    def __init__(self, sink: DumpSink):
        self._sink = sink
        self._uow: list[tuple[str, str, MQMD, bytes]] = []

    def disconnect(self) -> None:
        self._uow = []

    def open_for_put(self, q, qmgr="", *, set_all_context=True, alternate_user=None) -> PutHandle:
        return PutHandle(q, (qmgr or "").rstrip(" "), set_all_context, alternate_user)

    def put(self, handle: PutHandle, md: MQMD, data: bytes, *, syncpoint: bool = True) -> None:
        try:  # refuse here, per message, what the file format cannot hold
            write_dump([(md, b"")], io.BytesIO())  # only the MQMD can be unwritable
        except ValueError as exc:
            raise MQError(reasons.MQRC_MD_ERROR, f"cannot be written as a dmpmqmsg record: {exc}") from None
        self._uow.append((handle.qmgr, handle.queue, md, bytes(data)))
        if not syncpoint:
            self.commit()

    def commit(self) -> None:
        uow, self._uow = self._uow, []
        self._sink.accept(uow)

    def backout(self) -> None:
        self._uow = []

    def browse(self, q, *, buffer_size=0) -> Iterator[Message]:
        return iter(())

    def get(self, q, **kw) -> Message:
        raise MQError(reasons.MQRC_NO_MSG_AVAILABLE, "a dump directory cannot be read as a queue")

    def inquire_depth(self, q, qmgr="") -> tuple[int, int]:
        return 0, 0  # MAXDEPTH 0: no limit to hold back for


# --- the targets ---------------------------------------------------------------------------


class Partition(NamedTuple):
    """One partition's connector, and the checkpoint its writer records progress in."""

    connect: Callable[[], Connection]
    checkpoint: Checkpoint | StagedCheckpoint | None


@dataclass(frozen=True)
class Target:
    """A parsed target; picklable, so Spark ships it to the executors."""

    spec: str
    kind: str
    location: str = ""  # dir: the directory; sim: the database file; mq: the queue manager name
    name: str = ""  # sim: the queue manager name
    settings: Mapping[str, str] = field(default_factory=dict)  # mq: [mq.qmgrs.QMGR]
    file_mode: int = FILE_MODE  # dir: the dmpmqmsg files' permissions (replay.dir_mode)

    @property
    def resumable(self) -> bool:
        """True when a retried task must skip what an earlier attempt committed (checkpoints);
        for ``dir:`` the checkpoint also records what each partition published."""
        return self.kind in ("dir", "sim", "mq")

    @property
    def dry_run(self) -> bool:
        return self.kind == "dry-run"

    def preflight(self) -> None:
        """Driver-side checks before anything is touched: a ``dir:`` directory can be made
        and written; for ``mq:`` the MQ client and the secrets are there."""
        if self.kind == "dir":
            if files.is_local(self.location):
                problem = directory_problem(self.location)
            else:
                try:
                    files.list_names(self.location)
                    problem = None
                except OSError as exc:
                    problem = str(exc)
            if problem:
                raise TargetError(f"target {self.spec}: {problem}")
        if self.kind != "mq":
            return
        from dlq_pipeline.mq.client import client_settings, load_library
        from dlq_pipeline.runtime.secrets import secret

        load_library()
        try:
            s = client_settings(self.location, self.settings)
        except ValueError as exc:
            raise TargetError(str(exc)) from None
        for key in ("password_env", "key_stash_password_env"):
            if getattr(s, key):
                secret(getattr(s, key), f"mq.qmgrs.{self.location}.{key}")

    @contextmanager
    def partition(self, run_id: str, partition_id: int, checkpoint: Checkpoint | None = None) -> Iterator[Partition]:
        """What one partition's writer uses: its connector and its checkpoint. ``dir:`` needs
        ``checkpoint`` (its publish record) and publishes the files when the block ends
        normally (nothing is published if it raises)."""
        if self.kind == "dry-run":
            yield Partition(DryRunConnection, checkpoint)
        elif self.kind == "dir":
            if checkpoint is None:
                raise TargetError("the dir: target needs the partition's checkpoint (it records what is published)")
            sink = DumpSink(files.join(self.location, check_run_id(run_id)), partition_id, checkpoint, self.file_mode)
            try:
                yield Partition(lambda: DirConnection(sink), sink.writer_checkpoint)
            except BaseException:
                sink.discard()
                raise
            sink.finish()
        elif self.kind == "sim":
            from dlq_pipeline.mq.sim import SimQueueManager

            qm = SimQueueManager(self.location, self.name)
            yield Partition(qm.connect, checkpoint)
        else:
            from dlq_pipeline.mq.client import ClientConnection

            yield Partition(lambda: ClientConnection(self.location, self.settings), checkpoint)


def local_warehouse(path: str, needs: str = "the simulated queue managers (sim:) and the live queue locks") -> Path:
    """The warehouse as a path every process can open (``dbfs:/x`` is ``/dbfs/x``): what
    ``needs`` it (SQLite databases and ``flock`` need a file system). TargetError for other
    URIs. Replay's checkpoints do not: they go through `dlq_pipeline.fs`."""
    try:
        return local_dir(path)
    except PathError:
        raise TargetError(
            f"{needs} need storage.path to be a file system path every executor can open (local, "
            f"NFS, /dbfs), not {path!r}"
        ) from None


def parse_target(spec: str) -> tuple[str, str]:
    """(kind, argument) of ``dry-run``, ``dir:PATH``, ``sim:[NAME]`` or ``mq:QMGR``."""
    if spec == "dry-run":
        return "dry-run", ""
    kind, sep, arg = spec.partition(":")
    if not sep or kind not in KINDS[1:]:
        raise TargetError(f"target must be dry-run, dir:PATH, sim:[NAME] or mq:QMGR, not {spec!r}")
    if kind == "sim":
        arg = arg or DEFAULT_SIM_NAME
    if not arg:
        raise TargetError(f"target {spec!r} needs a {'directory' if kind == 'dir' else 'queue manager name'}")
    if kind in ("sim", "mq") and (not _MQ_NAME.fullmatch(arg) or arg.startswith(".")):
        raise TargetError(f"{arg!r} is not a valid queue manager name (A-Z a-z 0-9 . _ %, at most 48)")
    return kind, arg


def open_target(
    spec: str,
    *,
    warehouse: str | os.PathLike,
    qmgrs: Mapping[str, Mapping] | None = None,
    file_mode: int = FILE_MODE,
    webhdfs: str = "",
    sim_dir: str = "",
) -> Target:
    """The `Target` for ``spec``; ``warehouse`` holds ``_sim/`` (a file system path) unless
    ``sim_dir`` (``replay.sim_dir``) names the simulated queue managers' directory;
    ``qmgrs`` are the client settings per queue manager (``[mq.qmgrs]``) an ``mq:`` target
    needs; ``file_mode`` the ``dir:`` files' permissions; ``webhdfs`` the NameNode's HTTP
    address for a ``dir:hdfs://...`` target (``hdfs.webhdfs``)."""
    kind, arg = parse_target(spec)
    if kind == "dry-run":
        return Target(spec, kind)
    if kind == "dir":
        try:
            return Target(spec, kind, location=files.files_uri(arg, webhdfs), file_mode=file_mode)
        except (ValueError, OSError) as exc:
            raise TargetError(f"target {spec}: {exc}") from None
    if kind == "sim":
        if not sim_dir:
            where = local_warehouse(os.fspath(warehouse)) / "_sim"
        else:
            try:
                where = local_dir(sim_dir, needed_for="replay.sim_dir")
            except PathError as exc:
                raise TargetError(f"target {spec}: {exc}") from None
        return Target(spec, kind, location=str(where / f"{arg}.sqlite"), name=arg)
    qmgrs = qmgrs or {}
    if arg not in qmgrs:
        raise TargetError(
            f"target mq:{arg} needs a [mq.qmgrs.{arg}] table (channel, conn_name, ...) in the configuration"
        )
    return Target(spec, kind, location=arg, settings=dict(qmgrs[arg]))
