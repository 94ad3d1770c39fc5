"""The simulated queue manager: MQ's behaviour where replay and drain depend on it.

State lives in one SQLite database per simulated queue manager (WAL mode, busy timeout), so
Spark's Python workers in other processes see the same queues, and a ``kill -9`` loses
exactly what MQ would lose: a unit of work's gets are a SQLite transaction and its puts wait
in the connection until the commit inserts them in one, so uncommitted puts and gets vanish
with the process, as MQ backs them out when a connection breaks. The path
``":memory:"`` gives a private temporary database (same behaviour, deleted on `close`).

What it models (see docs/replay.md for the full list and the simplifications):

- FIFO per queue in the order units of work commit (MQ's priority order is not modelled;
  see docs/replay.md for this and the other simplifications), browse cursors, destructive get by
  MsgId/CorrelId, syncpoint units of work; backout of a get restores the message and adds
  one to its BackoutCount; `disconnect` commits like MQDISC, a broken connection backs out;
- MAXDEPTH -> 2053, MAXMSGL -> 2030 (queue) / 2031 (queue manager), put inhibited -> 2051,
  get inhibited -> 2016, unknown queue -> 2085 (so is a name with characters no MQ name
  holds, e.g. the exact bytes of a Latin-1 ReplyToQ), unknown queue manager -> 2087, missing
  authority -> 2035 (checked at open, incl. ``setall`` for set-all-context and ``altusr``
  for alternate-user puts), 2033 at the end of a queue, 2080 when the buffer is too small;
- a put naming another queue manager lands in a *remote view* (queues stored under that
  queue manager's name in the same database) when the name is configured in
  ``remote_qmgrs`` (``"*"`` there accepts every name), else fails 2087;
- queues are auto-defined (MAXDEPTH 5000, MAXMSGL 4 MB, everyone authorised) the first time
  something is put to them, unless ``auto_define`` is false or the queue is configured with
  ``exists: false``; browse, get and inquire never auto-define;
- faults on demand: a reason code (or only a delay) for an operation, optionally only for one
  queue, after N matching operations, at most K times, with probability p (seeded RNG);
  connection reasons (2009, 2059, 2161, 2162) break the connection; a ``committed`` commit
  fault commits and then reports the failure (MQ's in-doubt window). A plain delay (no
  reason, no ``after``/``times``: latency) met inside a unit of work is slept when the unit
  ends, after its database transaction: SQLite has one writer at a time, and sleeping while
  holding it would make connections wait on each other's latency, which a real queue
  manager does not (benchmarks/ measure parallel connections against these delays).
  An asynchronous put (``MQPMO_ASYNC_RESPONSE``) pays no such latency, and a failure it
  meets is counted for ``async_status`` (MQSTAT, the ``stat`` operation, a round trip that
  pays its own delay) instead of raised; a counted delay stands for a slow queue manager
  and slows asynchronous puts too.

The `put_log` table is the append-only record of every committed put, each descriptor as the
caller passed it: the truth that replay tests compare the ledger against.
"""

from __future__ import annotations

import collections
import datetime as dt
import functools
import json
import operator
import os
import random
import shutil
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass, fields
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any, cast

from dlq_pipeline.mq import reasons
from dlq_pipeline.mq.groups import Part, in_unit, order_problem, unit_name, unit_problem
from dlq_pipeline.mq.interface import DEFAULT_BUFFER, AsyncPutStatus, Message, MQError, PutHandle, read_whole
from dlq_pipeline.mq.mqmd import MQMD, MQMD_BYTE_LENGTHS
from dlq_pipeline.mq.structures import DLH_LENGTH
from dlq_pipeline.runtime.permissions import private_file

DEFAULT_MAXDEPTH = 5000
DEFAULT_MAXMSGL = 4 * 1024 * 1024
DEFAULT_USER = "dlqpipe"
PERMISSIONS = ("put", "get", "browse", "inq", "setall", "altusr")
OPERATIONS = ("connect", "open", "put", "commit", "backout", "get", "browse", "inquire", "stat")
MQMI_NONE = b"\x00" * 24
MQAT_UNIX = 6
_SIM_APPL_NAME = "dlq_pipeline.mq.sim"

_CONFIG_KEYS = {
    "auto_define",
    "maxdepth",
    "maxmsgl",
    "qmgr_maxmsgl",
    "remote_qmgrs",
    "queues",
    "faults",
    "seed",
    "deadq",
}
DEFAULT_DEADQ = "SYSTEM.DEAD.LETTER.QUEUE"
_QUEUE_KEYS = {"maxdepth", "maxmsgl", "put_inhibited", "get_inhibited", "authority", "exists"}
_FAULT_KEYS = {"op", "reason", "queue", "after", "times", "probability", "delay", "committed"}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS queues (
    qmgr TEXT NOT NULL, name TEXT NOT NULL, maxdepth INTEGER NOT NULL, maxmsgl INTEGER NOT NULL,
    put_inhibited INTEGER NOT NULL, get_inhibited INTEGER NOT NULL, authority TEXT,
    PRIMARY KEY (qmgr, name));
-- messages.state: 0 available, 2 got in an open unit of work (1, put in one, is no longer written);
-- messages.log_seq: the put_log row holding the body (see _BODY), NULL when it is in data
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, qmgr TEXT NOT NULL, queue TEXT NOT NULL,
    md TEXT NOT NULL, data BLOB NOT NULL, msg_id BLOB NOT NULL, correl_id BLOB NOT NULL,
    backout_count INTEGER NOT NULL DEFAULT 0, state INTEGER NOT NULL, log_seq INTEGER);
CREATE INDEX IF NOT EXISTS messages_by_queue ON messages (qmgr, queue, state, id);
CREATE INDEX IF NOT EXISTS messages_by_msg_id ON messages (msg_id);  -- get by MsgId stays O(log n)
CREATE TABLE IF NOT EXISTS put_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, qmgr TEXT NOT NULL, queue TEXT NOT NULL,
    md TEXT NOT NULL, data BLOB NOT NULL, user TEXT NOT NULL, connection TEXT NOT NULL,
    committed INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS get_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, qmgr TEXT NOT NULL, queue TEXT NOT NULL,
    md TEXT NOT NULL, data BLOB NOT NULL, connection TEXT NOT NULL, log_seq INTEGER);
"""
# A body is stored once, in its put_log row: the message and get_log rows point at it by
# log_seq, and their md is '' when the stored descriptor is the one put_log holds (a put
# with set-all context, as replay's). Writing every body and descriptor three times
# (message, put_log, get_log) was most of a put's own cost in the simulator: the WAL writes
# and checkpoints of each copy. Files made before keep theirs in data and md (log_seq NULL)
# and get the column when opened (`_upgrade`).
_BODY = "COALESCE(p.data, m.data)"
_MD = "COALESCE(NULLIF(m.md, ''), p.md)"  # '': the stored descriptor is the one put_log holds
_BODY_JOIN = "LEFT JOIN put_log p ON p.seq = m.log_seq"
# CURDEPTH per queue, kept in the transaction that inserts or deletes a message (a rollback
# undoes it too): a put's MAXDEPTH check reads one row instead of counting the queue, which
# cost O(depth) per put (2.8 ms per put at 50,000 messages). Deletes keep it by a trigger;
# inserts, which all go through `_insert_puts`, add their count once per queue there (a
# per-row trigger cost 3-7 µs of a put). A file made before this table existed gets it,
# counted once, when it is opened (`_upgrade`), and a file made with the per-row insert
# trigger loses that trigger then.
_DEPTHS = (
    "CREATE TABLE depths (qmgr TEXT NOT NULL, queue TEXT NOT NULL, depth INTEGER NOT NULL, PRIMARY KEY (qmgr, queue))",
    "INSERT INTO depths SELECT qmgr, queue, COUNT(*) FROM messages GROUP BY qmgr, queue",
    "CREATE TRIGGER depth_out AFTER DELETE ON messages BEGIN "
    "UPDATE depths SET depth = depth - 1 WHERE qmgr = OLD.qmgr AND queue = OLD.queue; END",
)
_FAULT_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS counts (fault INTEGER PRIMARY KEY, seen INTEGER NOT NULL, fired INTEGER NOT NULL)"
)


# --- configuration -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueueDef:
    maxdepth: int = DEFAULT_MAXDEPTH
    maxmsgl: int = DEFAULT_MAXMSGL
    put_inhibited: bool = False
    get_inhibited: bool = False
    authority: dict | None = None  # user (or "*") -> permissions; None = everyone, everything

    def allows(self, user: str, permission: str) -> bool:
        if self.authority is None:
            return True
        granted = set(self.authority.get(user.strip(), ())) | set(self.authority.get("*", ()))
        return permission in granted


@dataclass(frozen=True, slots=True)
class Fault:
    """Fail (``reason``) or slow down (``delay`` seconds) an operation on demand."""

    op: str = "put"
    reason: int = 0
    queue: str | None = None
    after: int = 0
    times: int | None = None
    probability: float = 1.0
    delay: float = 0.0
    committed: bool = False


def normalize_config(config: Mapping | None) -> dict:
    """The validated configuration with defaults filled in; ValueError lists every problem.

    Keys: ``auto_define`` (True), ``maxdepth``/``maxmsgl`` for auto-defined queues,
    ``qmgr_maxmsgl`` (4 MB), ``remote_qmgrs`` (names whose puts land in a remote view; ``"*"``
    for any name),
    ``queues`` (name or ``"QMGR:NAME"`` -> maxdepth, maxmsgl, put_inhibited, get_inhibited,
    authority {user: [put, get, browse, inq, setall, altusr]}, exists), ``faults`` (list of
    `Fault` fields), ``seed`` (for fault probabilities).
    """
    config = dict(config or {})
    problems = [f"unknown sim setting '{k}'" for k in config if k not in _CONFIG_KEYS]
    out: dict[str, Any] = {
        "auto_define": bool(config.get("auto_define", True)),
        "maxdepth": int(config.get("maxdepth", DEFAULT_MAXDEPTH)),
        "maxmsgl": int(config.get("maxmsgl", DEFAULT_MAXMSGL)),
        "qmgr_maxmsgl": int(config.get("qmgr_maxmsgl", DEFAULT_MAXMSGL)),
        "remote_qmgrs": sorted(str(q) for q in config.get("remote_qmgrs", ())),
        "seed": int(config.get("seed", 0)),
        "deadq": str(config.get("deadq", DEFAULT_DEADQ)),
        "queues": {},
        "faults": [],
    }
    for name, spec in dict(config.get("queues", {})).items():
        spec = dict(spec or {})
        problems += [f"queue {name}: unknown setting '{k}'" for k in spec if k not in _QUEUE_KEYS]
        authority = spec.get("authority")
        if authority is not None:
            for user, perms in authority.items():
                problems += [
                    f"queue {name}: unknown permission '{p}' for {user}" for p in perms if p not in PERMISSIONS
                ]
            authority = {str(u): sorted(set(p)) for u, p in authority.items()}
        out["queues"][str(name)] = {
            "maxdepth": int(spec.get("maxdepth", out["maxdepth"])),
            "maxmsgl": int(spec.get("maxmsgl", out["maxmsgl"])),
            "put_inhibited": bool(spec.get("put_inhibited", False)),
            "get_inhibited": bool(spec.get("get_inhibited", False)),
            "authority": authority,
            "exists": bool(spec.get("exists", True)),
        }
    for i, spec in enumerate(config.get("faults", ())):
        spec = dict(spec)
        problems += [f"fault {i}: unknown setting '{k}'" for k in spec if k not in _FAULT_KEYS]
        fault: dict[str, Any] = {
            "op": str(spec.get("op", "put")),
            "reason": int(spec.get("reason", 0) or 0),
            "queue": spec.get("queue"),
            "after": int(spec.get("after", 0)),
            "times": None if spec.get("times") is None else int(spec["times"]),
            "probability": float(spec.get("probability", 1.0)),
            "delay": float(spec.get("delay", 0.0)),
            "committed": bool(spec.get("committed", False)),
        }
        if fault["op"] not in OPERATIONS:
            problems.append(f"fault {i}: op must be one of {', '.join(OPERATIONS)}, not '{fault['op']}'")
        if not fault["reason"] and not fault["delay"]:
            problems.append(f"fault {i}: needs a reason code, a delay, or both")
        if not 0.0 <= fault["probability"] <= 1.0:
            problems.append(f"fault {i}: probability must be in [0, 1]")
        out["faults"].append(fault)
    if problems:
        raise ValueError("invalid simulated queue manager configuration: " + "; ".join(problems))
    return out


def _split_queue_key(key: str, local: str) -> tuple[str, str]:
    qmgr, sep, name = key.rpartition(":")
    return (qmgr, name) if sep else (local, key)


# --- MQMD <-> JSON (the database keeps descriptors as JSON: readable, lossless) ------------

_BYTE_FIELDS = frozenset(MQMD_BYTE_LENGTHS)


@functools.lru_cache(maxsize=256)  # a user's name, once per put: few distinct values
def _readable(text: str) -> str:
    """``text`` as SQLite can hold it: bytes that are not UTF-8 (a Latin-1 UserIdentifier used
    as the alternate user) written ``\\xNN``."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# A descriptor is stored as a JSON array of its fields in the order of their sorted names:
# md_to_json runs once or twice per simulated put, and its text is a put-log row's largest
# column after the body. The array is about 480 characters where a dict of the same values
# is 895 (the names repeated in every row), and is filled into a template when every field
# has its declared type (ints, str, bytes: all descriptors the pipeline builds): strings
# escaped by json's own C function, ints by %d, bytes as hex; any other value (a bool, an
# enum) takes the encoder over the list. md_from_json reads both forms, so a put log
# holding descriptors as dicts still reads.
_MD_NAMES = tuple(sorted(f.name for f in fields(MQMD)))
_MD_VALUES = operator.attrgetter(*_MD_NAMES)
_MD_TYPES = tuple(type(value) for value in _MD_VALUES(MQMD()))
_MD_STR_AT = tuple(i for i, kind in enumerate(_MD_TYPES) if kind is str)
_MD_BYTES_AT = tuple(i for i, kind in enumerate(_MD_TYPES) if kind is bytes)
_MD_TEMPLATE = "[" + ",".join({int: "%d", str: "%s", bytes: '"%s"'}[kind] for kind in _MD_TYPES) + "]"
_JSON = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))


def md_to_json(md: MQMD) -> str:
    values = list(_MD_VALUES(md))
    if tuple(map(type, values)) != _MD_TYPES:
        return _JSON.encode([value.hex() if name in _BYTE_FIELDS else value for name, value in zip(_MD_NAMES, values)])
    for i in _MD_STR_AT:
        values[i] = encode_basestring_ascii(values[i])
    for i in _MD_BYTES_AT:
        values[i] = values[i].hex()
    return _MD_TEMPLATE % tuple(values)


def md_from_json(text: str) -> MQMD:
    values = json.loads(text)
    if isinstance(values, list):
        if len(values) != len(_MD_NAMES):
            raise ValueError(f"a stored descriptor has {len(values)} fields, not the {len(_MD_NAMES)} of an MQMD")
        values = dict(zip(_MD_NAMES, values))
    kwargs: dict[str, Any] = {k: bytes.fromhex(v) if k in _BYTE_FIELDS else v for k, v in values.items()}
    return MQMD(**kwargs)


@dataclass(frozen=True, slots=True)
class PutRecord:
    """One committed put, as the caller passed it (``md`` before the queue manager filled in
    anything), with where it went and who put it."""

    seq: int
    qmgr: str
    queue: str
    md: MQMD
    data: bytes
    user: str
    connection: str


# --- the queue manager ---------------------------------------------------------------------


class SimQueueManager:
    """One simulated queue manager backed by the SQLite file at ``path``.

    ``config`` (see `normalize_config`), when given, replaces the stored configuration;
    otherwise the one stored in the database (or the defaults) applies, so every process
    that opens the file sees the same queues and faults.
    """

    def __init__(
        self, path: str | os.PathLike, name: str = "SIM", config: Mapping | None = None, *, busy_timeout: float = 120.0
    ):
        self.name = name
        self.busy_timeout = busy_timeout
        self._tempdir = None
        if str(path) == ":memory:":
            self._tempdir = tempfile.mkdtemp(prefix="dlq-sim-")
            path = Path(self._tempdir) / f"{name}.sqlite"
        else:
            path = Path(path)
            private_file(path)  # the queues hold message bodies: owner-only (SQLite's -wal/-shm follow)
        self.path = Path(path)
        self.faults_path = self.path.with_name(self.path.name + ".faults")
        if self._tempdir is None:
            private_file(self.faults_path)
        with closing(self._open()) as db:
            db.executescript(_SCHEMA)
            _upgrade(db)
            with closing(sqlite3.connect(self.faults_path, timeout=busy_timeout)) as fdb:
                fdb.execute(_FAULT_SCHEMA)
                fdb.commit()
            db.execute("INSERT OR IGNORE INTO meta VALUES ('name', ?)", (name,))
            stored = db.execute("SELECT value FROM meta WHERE key='name'").fetchone()
            if stored[0] != name:
                raise ValueError(f"{self.path} holds simulated queue manager {stored[0]}, not {name}")
        if config is not None:
            self.configure(config)

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None, check_same_thread=False)
        # A new file's pages are 16 KiB (a file made before keeps its own): a put-log row (a body
        # of up to a few KiB and its descriptor) filled most of a 4 KiB page alone, and every page
        # is a write to the WAL and another at its checkpoint. 16 KiB took about a fifth less CPU a put.
        db.execute("PRAGMA page_size=16384")
        db.execute("PRAGMA journal_mode=WAL")
        # A commit survives the death of a process (SQLite hands its pages to the OS at every
        # commit), not of the machine: all the sim promises. NORMAL's fsyncs at each WAL
        # checkpoint were a third of its CPU per put of 4 KB messages, on top of the commit
        # latency a benchmark configures for the queue manager's log (docs/performance.md,
        # "The simulated queue manager's write path").
        db.execute("PRAGMA synchronous=OFF")
        db.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
        return db

    # configuration

    def configure(self, config: Mapping) -> dict:
        """Store ``config`` (replacing the previous one), define its queues, reset fault counts."""
        normal = normalize_config(config)
        with closing(self._open()) as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('config', ?)", (json.dumps(normal),))
            for key, spec in normal["queues"].items():
                qmgr, name = _split_queue_key(key, self.name)
                if not spec["exists"]:
                    db.execute("DELETE FROM queues WHERE qmgr=? AND name=?", (qmgr, name))
                    continue
                db.execute(
                    "INSERT OR REPLACE INTO queues VALUES (?,?,?,?,?,?,?)",
                    (
                        qmgr,
                        name,
                        spec["maxdepth"],
                        spec["maxmsgl"],
                        int(spec["put_inhibited"]),
                        int(spec["get_inhibited"]),
                        None if spec["authority"] is None else json.dumps(spec["authority"]),
                    ),
                )
            db.execute("COMMIT")
        with closing(sqlite3.connect(self.faults_path, timeout=self.busy_timeout)) as fdb:
            fdb.execute("DELETE FROM counts")
            fdb.commit()
        return normal

    def config(self) -> dict:
        with closing(self._open()) as db:
            row = db.execute("SELECT value FROM meta WHERE key='config'").fetchone()
        return json.loads(row[0]) if row else normalize_config({})

    # connections

    def connect(self, user: str = DEFAULT_USER) -> SimConnection:
        """A new connection (MQCONNX) as ``user``; may fail with an injected ``connect`` fault."""
        return SimConnection(self, user)

    # inspection (tests, demo, rehearsals)

    def put_log(self, queue: str | None = None, qmgr: str | None = None) -> list[PutRecord]:
        """Every committed put, in commit order."""
        sql = "SELECT seq, qmgr, queue, md, data, user, connection FROM put_log WHERE committed=1"
        args: list[str] = []
        if queue is not None:
            sql, args = sql + " AND queue=?", args + [queue]
        if qmgr is not None:
            sql, args = sql + " AND qmgr=?", args + [qmgr]
        with closing(self._open()) as db:
            rows = db.execute(sql + " ORDER BY seq", args).fetchall()
        return [PutRecord(r[0], r[1], r[2], md_from_json(r[3]), bytes(r[4]), r[5], r[6]) for r in rows]

    def get_log(self, queue: str, qmgr: str | None = None) -> list[Message]:
        """Every committed destructive get from a queue, in commit order, as it was got."""
        with closing(self._open()) as db:
            rows = db.execute(
                f"SELECT {_MD}, {_BODY}, 0 FROM get_log m {_BODY_JOIN} WHERE m.qmgr=? AND m.queue=? ORDER BY m.seq",
                (qmgr or self.name, queue),
            ).fetchall()
        return [Message(_as_got(md_from_json(r[0]), r[2]), bytes(r[1])) for r in rows]

    def messages(self, queue: str, qmgr: str | None = None) -> list[Message]:
        """The committed messages on a queue, first to last, as a get would return them."""
        with closing(self._open()) as db:
            rows = db.execute(
                f"SELECT {_MD}, {_BODY}, m.backout_count FROM messages m {_BODY_JOIN} "
                "WHERE m.qmgr=? AND m.queue=? AND m.state=0 ORDER BY m.id",
                (qmgr or self.name, queue),
            ).fetchall()
        return [Message(_as_got(md_from_json(r[0]), r[2]), bytes(r[1])) for r in rows]

    def group_report(self, queue: str, qmgr: str | None = None) -> list[str]:
        """What a getter of ``queue`` would find wrong with the groups and segmented messages
        on it (`dlq_pipeline.mq.groups`): a unit put out of ``MsgSeqNumber``/``Offset`` order,
        or there only in part. Empty when every unit on the queue is whole and in order. MQ
        takes a unit's messages in any order from a putter that names their positions, so a
        queue manager reports none of this; a getter with ``MQGMO_ALL_MSGS_AVAILABLE`` waits
        on a part forever, one without it processes a part: what replay must never leave."""
        units: dict[bytes, list[Part]] = collections.defaultdict(list)
        for n, m in enumerate(self.messages(queue, qmgr), start=1):
            md = m.md
            if in_unit(md.msg_flags):
                header = DLH_LENGTH if md.format.rstrip(" ") == "MQDEAD" else 0
                part = Part(f"#{n}", md.group_id, md.msg_seq_number, md.offset, md.msg_flags, len(m.data) - header)
                units[md.group_id].append(part)
        found = []
        for group_id, parts in sorted(units.items()):
            for why in (order_problem(parts), unit_problem(parts)):
                if why:
                    found.append(f"group {unit_name(group_id)} on {queue}: {why}")
        return found

    def define(self, queue: str, qmgr: str | None = None, **settings) -> None:
        """Define (or redefine) one queue now, keeping the rest of the configuration."""
        config = self.config()
        key = queue if qmgr in (None, "", self.name) else f"{qmgr}:{queue}"
        config["queues"][key] = {**config["queues"].get(key, {}), **settings}
        self.configure(config)

    def close(self) -> None:
        """Delete a ``":memory:"`` database; a file database stays for the next process."""
        if self._tempdir:
            shutil.rmtree(self._tempdir, ignore_errors=True)
            self._tempdir = None


def _upgrade(db: sqlite3.Connection) -> None:
    """Bring a file made by an earlier simulator up to this layout: the ``depths`` table and
    its trigger (see ``_DEPTHS``), the ``log_seq`` columns (see ``_BODY``)."""

    def work(db):
        if db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='depths'").fetchone() is None:
            for statement in _DEPTHS:
                db.execute(statement)
        db.execute("DROP TRIGGER IF EXISTS depth_in")  # `_insert_puts` counts the inserts
        for table in ("messages", "get_log"):
            if "log_seq" not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:
                db.execute(f"ALTER TABLE {table} ADD COLUMN log_seq INTEGER")

    _transaction(db, work)


LOCK_RETRY_S = (0.0001, 0.001)  # a connection asks for the write lock again after 0.1 ms, doubling to 1 ms


def _write_lock(db: sqlite3.Connection) -> None:
    """BEGIN IMMEDIATE, asking again after 0.1, 0.2, 0.4, 0.8, then every 1 ms while another
    connection holds the write lock, up to the connection's busy timeout. SQLite's own busy
    handler sleeps 1, 2, 5, 10 ms and longer between attempts, so a unit that found the lock
    taken by a commit of a few ms could wait twice as long as that commit (docs/performance.md,
    "The simulated queue manager's write path")."""
    timeout_ms = db.execute("PRAGMA busy_timeout").fetchone()[0]
    db.execute("PRAGMA busy_timeout=0")
    try:
        deadline = time.monotonic() + timeout_ms / 1000
        pause, longest = LOCK_RETRY_S
        while True:
            try:
                db.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(2 * pause, longest)
    finally:
        db.execute(f"PRAGMA busy_timeout={timeout_ms}")


def _transaction(db: sqlite3.Connection, work):
    """``work(db)`` in a write transaction of its own: committed, or rolled back if it raises."""
    _write_lock(db)
    try:
        result = work(db)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
    return result


def _admit(qdef: QueueDef, depth: int, queue: str, data: bytes, qmgr_maxmsgl: int) -> None:
    """Raise what MQPUT would for ``data`` onto ``queue`` (defined ``qdef``, holding ``depth``)."""
    if qdef.put_inhibited:
        raise MQError(reasons.MQRC_PUT_INHIBITED, f"puts to {queue} are inhibited")
    if len(data) > qmgr_maxmsgl:
        raise MQError(reasons.MQRC_MSG_TOO_BIG_FOR_Q_MGR, f"{len(data)} bytes exceed the queue manager's MAXMSGL")
    if len(data) > qdef.maxmsgl:
        raise MQError(reasons.MQRC_MSG_TOO_BIG_FOR_Q, f"{len(data)} bytes exceed MAXMSGL of {queue}")
    if depth >= qdef.maxdepth:
        raise MQError(reasons.MQRC_Q_FULL, f"{queue} holds {depth} messages (MAXDEPTH {qdef.maxdepth})")


def _insert_puts(db: sqlite3.Connection, rows: list[tuple]) -> None:
    """Insert puts (qmgr, queue, stored md, data, msg_id, correl_id, given md, user, connection)
    as available messages and their put_log rows, in the order given.

    put_log rows are written ``committed = 1``: they are in the put's own SQLite transaction
    (files made before may hold rows with committed=0: put_log reads committed=1 only)."""
    # the caller holds the write lock: the next seq values are AUTOINCREMENT's own, given here
    # so that each message row can point at its body's put_log row
    last = db.execute("SELECT seq FROM sqlite_sequence WHERE name='put_log'").fetchone()
    first = (last[0] if last else 0) + 1
    db.executemany(
        "INSERT INTO put_log (seq, qmgr, queue, md, data, user, connection, committed) VALUES (?,?,?,?,?,?,?,1)",
        [(first + i, r[0], r[1], r[6], r[3], r[7], r[8]) for i, r in enumerate(rows)],
    )
    db.executemany(
        "INSERT INTO messages (qmgr, queue, md, data, msg_id, correl_id, state, log_seq) VALUES (?,?,?,X'',?,?,0,?)",
        [(r[0], r[1], r[2], r[4], r[5], first + i) for i, r in enumerate(rows)],
    )
    db.executemany(
        "INSERT INTO depths VALUES (?,?,?) ON CONFLICT (qmgr, queue) DO UPDATE SET depth = depth + excluded.depth",
        [(*key, n) for key, n in collections.Counter(r[:2] for r in rows).items()],
    )


def _stored_queue(db: sqlite3.Connection, qmgr: str, queue: str) -> tuple[QueueDef, int] | None:
    """A defined queue's definition and CURDEPTH in one statement, None if it is not defined."""
    row = db.execute(
        "SELECT q.maxdepth, q.maxmsgl, q.put_inhibited, q.get_inhibited, q.authority, d.depth FROM queues q "
        "LEFT JOIN depths d ON d.qmgr = q.qmgr AND d.queue = q.name WHERE q.qmgr=? AND q.name=?",
        (qmgr, queue),
    ).fetchone()
    if row is None:
        return None
    return QueueDef(row[0], row[1], bool(row[2]), bool(row[3]), json.loads(row[4]) if row[4] else None), row[5] or 0


def _depth(db: sqlite3.Connection, qmgr: str, queue: str) -> int:
    row = db.execute("SELECT depth FROM depths WHERE qmgr=? AND queue=?", (qmgr, queue)).fetchone()
    return row[0] if row else 0


def _as_got(md: MQMD, backout_count: int) -> MQMD:
    """The descriptor a version-2 MQGET returns for a stored message."""
    return md.replace(version=2, backout_count=backout_count)


def _now_gmt() -> tuple[str, str]:
    now = dt.datetime.now(dt.UTC)
    return now.strftime("%Y%m%d"), now.strftime("%H%M%S") + f"{now.microsecond // 10000:02d}"


class _FaultCounter:
    """Fault counts shared by every connection and process (a side database, so that counts
    survive the backout of the unit of work in which a fault fired)."""

    def __init__(self, path: Path, timeout: float):
        self.path, self.timeout = path, timeout
        self._db: sqlite3.Connection | None = None

    def _conn(self) -> sqlite3.Connection:
        # One connection per sim connection, WAL: a count survives the death of a process
        # (not of the machine), which is all the sim promises.
        if self._db is None:
            db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._db = db
        return self._db

    def bump(self, fault: int, fired: bool) -> tuple[int, int]:
        def work(db):
            row = db.execute("SELECT seen, fired FROM counts WHERE fault=?", (fault,)).fetchone() or (0, 0)
            seen, count = (row[0], row[1] + 1) if fired else (row[0] + 1, row[1])
            db.execute("INSERT OR REPLACE INTO counts VALUES (?,?,?)", (fault, seen, count))
            return seen, count

        return _transaction(self._conn(), work)

    def close(self) -> None:
        db, self._db = self._db, None
        if db is not None:
            db.close()


class SimConnection:
    """A connection to a `SimQueueManager`; implements `dlq_pipeline.mq.interface.Connection`
    and `dlq_pipeline.mq.interface.AsyncPuts`."""

    dry_run = False
    async_put = True

    def __init__(self, qm: SimQueueManager, user: str):
        self._qm = qm
        self.qmgr_name = qm.name
        self.user = user
        self.id = uuid.uuid4().hex[:12]
        self._db: sqlite3.Connection | None = None
        self._config = qm.config()
        self._faults = [Fault(**f) for f in self._config["faults"]]
        self._counter = _FaultCounter(qm.faults_path, qm.busy_timeout)
        self._rng = random.Random(self._config["seed"])
        self._in_uow = False  # a unit of work is open (a syncpoint call since the last commit/backout)
        self._locked = False  # ... and holds SQLite's write lock (a transaction): see `put`
        self._got: list[int] = []
        # This unit's puts, inserted at its commit (see `put`), and what it knows of their queues.
        self._put: list[tuple] = []
        self._uow_queues: dict[tuple[str, str], list] = {}  # (qmgr, queue) -> [QueueDef, CURDEPTH]
        self._cursors: dict[str, int] = {}
        self._broken: int | None = None
        self._owed_delay = 0.0  # latency met inside the unit of work (see the module docstring)
        self._async = [0, 0, 0]  # asynchronous puts since the last async_status: succeeded, failed, first reason
        self._fault("connect", None)
        self._db = qm._open()

    # plumbing

    def _usable(self) -> sqlite3.Connection:
        if self._broken is not None:
            raise MQError(reasons.MQRC_CONNECTION_BROKEN, "the connection was broken earlier")
        if self._db is None:
            raise MQError(reasons.MQRC_CONNECTION_BROKEN, "not connected")
        return self._db

    def _fault(self, op: str, queue: str | None, *, wait: bool = True) -> None:
        """Apply the faults configured for ``op``; ``wait=False``: a call that does not wait for
        the queue manager's answer (an asynchronous put) pays no latency (a plain delay); a
        counted delay (``after``/``times``) stands for a slow queue manager and is slept still."""
        for index, fault in enumerate(self._faults):
            if fault.op != op or (fault.queue is not None and fault.queue != queue):
                continue
            # Only `after` and `times` need every call counted; other faults count only when
            # they fire with a reason (tests read those counts), so a pure delay standing for
            # network latency costs no database transaction per call.
            gated = fault.after > 0 or fault.times is not None
            if gated:
                seen, fired = self._counter.bump(index, fired=False)
                if seen <= fault.after or (fault.times is not None and fired >= fault.times):
                    continue
            if fault.probability < 1.0 and self._rng.random() >= fault.probability:
                continue
            if gated or fault.reason:
                self._counter.bump(index, fired=True)
            if fault.delay:
                latency = not gated and not fault.reason
                if latency and not wait:
                    pass  # an asynchronous call does not wait for the round trip
                elif latency and self._in_uow:
                    self._owed_delay += fault.delay  # latency: slept when the unit of work ends
                else:
                    time.sleep(fault.delay)
            if not fault.reason:
                continue
            text = f"injected fault on {op}" + (f" for {queue}" if queue else "")
            if op == "commit" and fault.committed and self._db is not None:
                self._finish_commit()
                self._break(fault.reason)
                raise MQError(fault.reason, text + " (after the commit completed)")
            if reasons.is_connection_failure(fault.reason):
                self._break(fault.reason)
            elif op == "commit":
                self._rollback()
            raise MQError(fault.reason, text)

    def _break(self, reason: int) -> None:
        """The connection is gone: MQ backs out the unit of work."""
        if self._db is not None:
            self._rollback()
            self._db.close()
            self._db = None
        self._counter.close()
        self._broken = reason

    def _begin(self, db: sqlite3.Connection) -> None:
        """Open the unit of work's SQLite transaction (a get, or anything else it must write
        before its commit), if it has none yet."""
        if not self._locked:
            _write_lock(db)
            self._locked = True
        self._in_uow = True

    def _rollback(self) -> None:
        db = self._db
        if db is None or not self._in_uow:
            return
        if self._locked:
            db.execute("ROLLBACK")
        self._in_uow = self._locked = False
        self._put = []
        self._uow_queues = {}
        got, self._got = self._got, []
        if got:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("UPDATE messages SET backout_count = backout_count + 1 WHERE id=?", [(i,) for i in got])
            db.execute("COMMIT")

    def _finish_commit(self) -> None:
        db = self._db
        if db is None or not self._in_uow:
            return
        self._begin(db)  # a unit of puts takes the write lock only now
        self._recheck_depths(db)
        # By the rows this unit touched: a scan for state 1/2 would cost the whole table per
        # commit (a runmqdlq-like loop commits every message).
        got = sorted(self._got)
        db.executemany(
            "INSERT INTO get_log (qmgr, queue, md, data, connection, log_seq) "
            "SELECT qmgr, queue, md, data, ?, log_seq FROM messages WHERE id=?",
            [(self.id, i) for i in got],
        )
        db.executemany("DELETE FROM messages WHERE id=?", [(i,) for i in got])
        _insert_puts(db, self._put)
        db.execute("COMMIT")
        self._in_uow = self._locked = False
        self._got = []
        self._put = []
        self._uow_queues = {}

    def _recheck_depths(self, db: sqlite3.Connection) -> None:
        """At the commit, with the write lock: the unit's puts still fit their queues. They
        were checked against CURDEPTH when put, but without the lock, so another connection
        may have committed to the same queue since (MQ would count its uncommitted puts and
        fail the later put with 2053; the simulator cannot see them). Then the unit is backed
        out and the commit fails with 2003, as a commit MQ cannot complete does."""
        counts: dict[tuple[str, str], int] = {}
        for row in self._put:
            counts[row[:2]] = counts.get(row[:2], 0) + 1
        for key, n in counts.items():
            qdef = self._uow_queues[key][0]
            if _depth(db, *key) + n > qdef.maxdepth:
                self._rollback()
                raise MQError(
                    reasons.MQRC_BACKED_OUT,
                    f"unit of work backed out: {key[1]} filled up (MAXDEPTH {qdef.maxdepth}) before its commit",
                )

    def _queue_for_use(self, qmgr: str, queue: str) -> tuple[QueueDef, int]:
        """A queue's definition and CURDEPTH for MQOPEN or a unit's first put to it. Outside
        a write transaction a defined queue is read as last committed, without taking the
        write lock, which other connections' commits hold (their units waited for each
        lookup: docs/performance.md, "The simulated queue manager's write path"); only a queue not yet defined
        takes it, to be defined (auto-define)."""
        db = self._usable()
        if not self._locked and queue.isascii():
            found = _stored_queue(db, qmgr, queue)
            if found is not None:
                return found
        return self._outside_unit(lambda d: self._queue_depth(d, qmgr, queue, define=True))

    def _outside_unit(self, work):
        """Run ``work(db)`` in the unit's transaction if it holds one, else in a short one of
        its own: looking a queue up (and defining it) is not part of a unit of work."""
        db = self._usable()
        return work(db) if self._locked else _transaction(db, work)

    def _run(self, syncpoint: bool, work):
        """Run ``work(db)`` in the unit of work (syncpoint) or in its own transaction."""
        db = self._usable()
        if syncpoint:
            self._begin(db)
            return work(db)
        if self._in_uow:
            raise ValueError("sim: a no-syncpoint call inside an open unit of work is not simulated; commit first")
        return _transaction(db, work)

    def _resolve_qmgr(self, qmgr: str) -> str:
        qmgr = (qmgr or "").rstrip(" ")
        if qmgr in ("", self.qmgr_name):
            return self.qmgr_name
        if not qmgr.isascii():
            raise MQError(
                reasons.MQRC_UNKNOWN_REMOTE_Q_MGR,
                f"queue manager {qmgr!r} cannot exist: MQ names are A-Z a-z 0-9 . / _ %",
            )
        remotes = self._config["remote_qmgrs"]
        if qmgr in remotes or "*" in remotes:
            return qmgr
        raise MQError(reasons.MQRC_UNKNOWN_REMOTE_Q_MGR, f"queue manager {qmgr!r} is not known to {self.qmgr_name}")

    def _queue(self, db: sqlite3.Connection, qmgr: str, queue: str, *, define: bool) -> QueueDef:
        return self._queue_depth(db, qmgr, queue, define=define)[0]

    def _queue_depth(self, db: sqlite3.Connection, qmgr: str, queue: str, *, define: bool) -> tuple[QueueDef, int]:
        """The queue's definition and CURDEPTH in one statement (a put needs both: one SQLite
        round trip fewer per put, about 10 µs of the simulator's own cost)."""
        if not queue.isascii():  # e.g. a Latin-1 ReplyToQ's exact bytes: no queue can have that name
            raise MQError(
                reasons.MQRC_UNKNOWN_OBJECT_NAME,
                f"queue {queue!r} cannot exist on {qmgr}: MQ names are A-Z a-z 0-9 . / _ %",
            )
        found = _stored_queue(db, qmgr, queue)
        if found is not None:
            return found
        key = queue if qmgr == self.qmgr_name else f"{qmgr}:{queue}"
        configured = self._config["queues"].get(key)
        if not define or not self._config["auto_define"] or (configured and not configured["exists"]) or not queue:
            raise MQError(reasons.MQRC_UNKNOWN_OBJECT_NAME, f"queue {queue!r} is not defined on {qmgr}")
        qdef = QueueDef(self._config["maxdepth"], self._config["maxmsgl"])
        db.execute("INSERT OR IGNORE INTO queues VALUES (?,?,?,?,0,0,NULL)", (qmgr, queue, qdef.maxdepth, qdef.maxmsgl))
        return qdef, _depth(db, qmgr, queue)

    def _check(self, qdef: QueueDef, queue: str, permission: str, user: str | None = None) -> None:
        who = (user or self.user).strip()
        if not qdef.allows(who, permission):
            raise MQError(reasons.MQRC_NOT_AUTHORIZED, f"{who} has no {permission} authority on {queue}")

    # the interface

    def disconnect(self) -> None:
        """MQDISC: commits an open unit of work, as MQ does for a normal disconnect."""
        self._counter.close()
        if self._db is None:
            return
        if self._in_uow:
            self._finish_commit()
        self._db.close()
        self._db = None

    def open_for_put(
        self, q: str, qmgr: str = "", *, set_all_context: bool = True, alternate_user: str | None = None
    ) -> PutHandle:
        self._usable()
        self._fault("open", q)
        target = self._resolve_qmgr(qmgr)
        qdef = self._queue_for_use(target, q)[0]
        if alternate_user is not None:
            self._check(qdef, q, "altusr")
        self._check(qdef, q, "put", alternate_user)
        if set_all_context:
            self._check(qdef, q, "setall", alternate_user)
        return PutHandle(q, (qmgr or "").rstrip(" "), set_all_context, alternate_user, token=target)

    def put(
        self, handle: PutHandle, md: MQMD, data: bytes, *, syncpoint: bool = True, asynchronous: bool = False
    ) -> None:
        """MQPUT. ``asynchronous`` (MQPMO_ASYNC_RESPONSE): no wait for the answer (no latency)
        and a failure other than a broken connection is not raised but counted for
        `async_status`; the message is then not put, as on a queue manager."""
        if not asynchronous:
            self._put_message(handle, md, data, syncpoint, wait=True)
            return
        try:
            self._put_message(handle, md, data, syncpoint, wait=False)
        except MQError as exc:
            if exc.connection_failure:
                raise
            self._async[1] += 1
            self._async[2] = self._async[2] or exc.reason
            return
        self._async[0] += 1

    def async_status(self) -> AsyncPutStatus:
        """MQSTAT: the asynchronous puts since the last call (a round trip: the ``stat``
        operation's faults and latency apply)."""
        self._usable()
        self._fault("stat", None)
        (succeeded, failed, reason), self._async = self._async, [0, 0, 0]
        return AsyncPutStatus(succeeded=succeeded, failed=failed, reason=reason)

    def _put_message(self, handle: PutHandle, md: MQMD, data: bytes, syncpoint: bool, *, wait: bool) -> None:
        self._usable()
        self._fault("put", handle.queue, wait=wait)
        data = bytes(data)
        stored = md if md.backout_count == 0 else md.replace(backout_count=0)
        if md.msg_id == MQMI_NONE:
            stored = stored.replace(msg_id=b"SIM " + uuid.uuid4().bytes + b"\x00" * 4)
        if not handle.set_all_context:
            date, time_ = _now_gmt()
            stored = stored.replace(
                user_id=self.user[:12].ljust(12),
                accounting_token=b"\x00" * 32,
                appl_identity_data=" " * 32,
                put_appl_type=MQAT_UNIX,
                put_appl_name=_SIM_APPL_NAME.ljust(28),
                put_date=date,
                put_time=time_,
                appl_origin_data=" " * 4,
            )
        given = md_to_json(md)
        stored_json = "" if stored is md else md_to_json(stored)  # "": as given (see _MD)
        key = (cast(str, handle.token), handle.queue)  # `open_for_put` made the token the resolved queue manager
        row = (
            *key,
            stored_json,
            data,
            stored.msg_id,
            stored.correl_id,
            given,
            _readable((handle.alternate_user or self.user).strip()),
            self.id,
        )
        if not syncpoint:

            def work(db):
                _admit(*self._queue_depth(db, *key, define=True), handle.queue, data, self._config["qmgr_maxmsgl"])
                _insert_puts(db, [row])

            self._run(False, work)
            return
        # Under syncpoint the rows wait for the commit, which takes SQLite's write lock and
        # inserts them all with two executemany calls, so the ids and put_log order are
        # those of inserting at once. A unit of puts holds no lock before its commit: other
        # connections (Spark tasks in other processes) put and commit meanwhile, as they do
        # on a queue manager, where holding the lock from the first put made them wait for
        # each other's whole unit. Nobody could see the rows before the commit anyway, a
        # backout or a crash drops them with the connection, and a get never returns a
        # message of its own open unit. What the unit learnt of a queue (definition,
        # CURDEPTH plus its own puts) is kept for the unit (three SQL statements per put were
        # most of its cost) and checked again at the commit (`_recheck_depths`).
        self._in_uow = True
        known = self._uow_queues.get(key)
        if known is None:
            known = self._uow_queues[key] = list(self._queue_for_use(*key))
        _admit(known[0], known[1], handle.queue, data, self._config["qmgr_maxmsgl"])
        self._put.append(row)
        known[1] += 1

    def commit(self) -> None:
        self._usable()
        self._fault("commit", None)
        self._finish_commit()
        self._pay_latency()

    def backout(self) -> None:
        self._usable()
        self._fault("backout", None)
        self._rollback()
        self._pay_latency()

    def _pay_latency(self) -> None:
        owed, self._owed_delay = self._owed_delay, 0.0
        if owed:
            time.sleep(owed)

    def mqget(
        self,
        q: str,
        *,
        max_length: int,
        browse: str | None = None,
        msg_id: bytes | None = None,
        correl_id: bytes | None = None,
        syncpoint: bool = True,
    ) -> Message:
        """One MQGET, faithfully: ``browse`` "first"/"next" moves this connection's browse
        cursor on ``q``; otherwise destructive. 2033 when nothing matches; 2080 (with the real
        length in ``data_length``) when the data exceeds ``max_length``, cursor and message
        left where they were."""
        db = self._usable()
        self._fault("browse" if browse else "get", q)
        qdef = self._queue(db, self.qmgr_name, q, define=False)
        self._check(qdef, q, "browse" if browse else "get")
        if qdef.get_inhibited:
            raise MQError(reasons.MQRC_GET_INHIBITED, f"gets from {q} are inhibited")
        # by MsgId: SQLite would otherwise walk the queue's index in id order to find it,
        # O(depth) per get (a 100,000-message reference run spent most of its time there)
        table = "messages m INDEXED BY messages_by_msg_id" if msg_id is not None else "messages m"
        sql = (
            f"SELECT m.id, {_MD}, {_BODY}, m.backout_count FROM {table} {_BODY_JOIN} "
            "WHERE m.qmgr=? AND m.queue=? AND m.state=0"
        )
        args: list = [self.qmgr_name, q]
        if browse:
            after = 0 if browse == "first" else self._cursors.get(q, 0)
            sql, args = sql + " AND m.id>?", args + [after]
        if msg_id is not None:
            sql, args = sql + " AND m.msg_id=?", args + [bytes(msg_id)]
        if correl_id is not None:
            sql, args = sql + " AND m.correl_id=?", args + [bytes(correl_id)]
        sql += " ORDER BY m.id LIMIT 1"

        def select(d) -> tuple[int, Message]:
            row = d.execute(sql, args).fetchone()
            if row is None:
                raise MQError(reasons.MQRC_NO_MSG_AVAILABLE, f"no message on {q}")
            data = bytes(row[2])
            if len(data) > max_length:
                raise MQError(
                    reasons.MQRC_TRUNCATED_MSG_FAILED,
                    f"{len(data)} bytes do not fit {max_length}",
                    data_length=len(data),
                )
            return row[0], Message(_as_got(md_from_json(row[1]), row[3]), data)

        if browse:
            ident, message = select(db)
            self._cursors[q] = ident
            return message

        def work(d) -> tuple[int, Message]:
            ident, message = select(d)
            d.execute("UPDATE messages SET state=2 WHERE id=?", (ident,))
            if not syncpoint:
                d.execute(
                    "INSERT INTO get_log (qmgr, queue, md, data, connection, log_seq) "
                    "SELECT qmgr, queue, md, data, ?, log_seq FROM messages WHERE id=?",
                    (self.id, ident),
                )
                d.execute("DELETE FROM messages WHERE id=?", (ident,))
            return ident, message

        ident, message = self._run(syncpoint, work)
        if syncpoint:
            self._got.append(ident)
        return message

    def browse(self, q: str, *, buffer_size: int = DEFAULT_BUFFER) -> Iterator[Message]:
        """Browse first, then next, until 2033; every message whole (the buffer grows on 2080)."""
        mode = "first"
        while True:

            def attempt(n: int, mode: str = mode) -> Message:
                return self.mqget(q, max_length=n, browse=mode)

            try:
                message = read_whole(attempt, buffer_size)
            except MQError as exc:
                if exc.reason == reasons.MQRC_NO_MSG_AVAILABLE:
                    return
                raise
            mode = "next"
            yield message

    def get(
        self,
        q: str,
        *,
        msg_id: bytes | None = None,
        correl_id: bytes | None = None,
        syncpoint: bool = True,
        buffer_size: int = DEFAULT_BUFFER,
    ) -> Message:
        return read_whole(
            lambda n: self.mqget(q, max_length=n, msg_id=msg_id, correl_id=correl_id, syncpoint=syncpoint), buffer_size
        )

    def dead_letter_queue(self) -> str:
        """The queue manager's DEADQ attribute (MQINQ MQCA_DEAD_LETTER_Q_NAME), blanks removed."""
        self._usable()
        return self._config.get("deadq", DEFAULT_DEADQ).rstrip(" ")

    def inquire_depth(self, q: str, qmgr: str = "") -> tuple[int, int]:
        """(CURDEPTH, MAXDEPTH) as this connection sees them (its own open unit of work included)."""
        db = self._usable()
        self._fault("inquire", q)
        target = self._resolve_qmgr(qmgr)
        qdef = self._queue(db, target, q, define=False)
        self._check(qdef, q, "inq")
        known = self._uow_queues.get((target, q))  # the unit's own puts are not inserted yet
        return (known[1] if known else _depth(db, target, q)), qdef.maxdepth
