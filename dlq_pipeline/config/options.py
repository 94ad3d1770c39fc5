"""Every configuration option, declared once: `DECLARED`.

An `Option` is its section and key, the types a value may have, the built-in default, what
values it takes (``choices``, a range, or a check of its own) and what it means. From that one
declaration come: `OPTIONS` (section -> key -> `Option`), the defaults `load_config` starts
from, the checks it applies to a value (`Option.type_problem`, `Option.value_problem`), the
settings dataclasses' defaults and ``from_config`` (`dlq_pipeline.config.settings.setting`),
and the tables of docs/configuration.md (`options_table`, `qmgr_keys_table`; the test suite
holds the page to them).

Choices that another module owns are read from it: the log formats and levels from
`dlq_pipeline.runtime.logs`, ``ingest.clean_source`` from `dlq_pipeline.ingest.inputs`.
`STORAGE_FORMATS` is the home of the storage formats (`dlq_pipeline.warehouse.storage` reads
it: that module imports pyspark, which the configuration must not).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dlq_pipeline.dumps.dmpmqmsg import DEFAULT_TIME_ZONE, MAX_LINE_LENGTH
from dlq_pipeline.dumps.plan import DEFAULT_SPLIT_BYTES
from dlq_pipeline.ingest.inputs import CLEAN_SOURCE
from dlq_pipeline.mq.constants import MQ_MAX_MESSAGE_BYTES
from dlq_pipeline.runtime import logs
from dlq_pipeline.runtime.clock import time_zone

STORAGE_FORMATS = ("parquet", "delta")
DRAIN_MODES = ("browse", "move")  # drain.mode: MQ browse, or a destructive get under syncpoint


def alternatives(words: Sequence[str]) -> str:
    """``a or b``, ``a, b or c`` (pure)."""
    return " or ".join(filter(None, (", ".join(words[:-1]), words[-1])))


@dataclass(frozen=True)
class Option:
    """One option, ``[section] key = value`` in the file. ``description`` is Markdown (it is
    the option's row in docs/configuration.md). A value of the right type must also be one of
    ``choices`` (compared in lower case with ``fold_case``), lie in the range ``minimum`` ..
    ``maximum`` (``minimum`` left out with ``exclusive_minimum``; ``minimum_reason`` says why
    the bound is what it is) and pass ``check``, which gives the problem with a value, or
    None. A value of None (an option not set, with no default) is not checked."""

    section: str
    key: str
    types: tuple[type, ...]
    default: Any
    description: str
    choices: tuple[str, ...] = ()
    fold_case: bool = False
    minimum: float | None = None
    exclusive_minimum: bool = False
    minimum_reason: str = ""
    maximum: float | None = None
    check: Callable[[str, Any], str | None] | None = None

    @property
    def name(self) -> str:
        return f"{self.section}.{self.key}"

    def type_problem(self, value: Any) -> str | None:
        """What is wrong with the type of ``value`` (pure): a bool is not a number, an int is a float."""
        if isinstance(value, bool) and bool not in self.types:
            ok = False
        else:
            ok = isinstance(value, self.types) or (float in self.types and isinstance(value, int))
        if ok:
            return None
        return f"'{self.name}' must be {' or '.join(t.__name__ for t in self.types)}, not {type(value).__name__}"

    def value_problem(self, value: Any) -> str | None:
        """What is wrong with ``value``, of the right type (pure)."""
        if value is None:
            return None
        if self.choices and (value.lower() if self.fold_case else value) not in self.choices:
            return f"'{self.name}' must be {alternatives([c for c in self.choices if c])}, not '{value}'"
        if self._out_of_range(value):
            return f"'{self.name}' must be {self.range_text()}"
        return self.check(self.name, value) if self.check else None

    def _out_of_range(self, value: float) -> bool:
        low, high = self.minimum, self.maximum
        below = low is not None and (value <= low if self.exclusive_minimum else value < low)
        return below or (high is not None and value > high)

    def range_text(self) -> str:
        """``at least 1``, ``in (0, 1]``, ... ("" for an option without a range)."""
        low, high = self.minimum, self.maximum
        reason = f" ({self.minimum_reason})" if self.minimum_reason else ""
        if low is not None and high is not None:
            return f"in {'(' if self.exclusive_minimum else '['}{low}, {high}]"
        if low is not None:
            return f"{'more than' if self.exclusive_minimum else 'at least'} {low}{reason}"
        return f"at most {high}" if high is not None else ""


def file_mode_problem(text: str) -> str | None:
    """What is wrong with ``replay.dir_mode`` (octal text such as ``"0640"``), or None (pure):
    the owner must read and write, nothing may be executable, no one else may write."""
    if not re.fullmatch(r"0?[0-7]{3}", text):
        return f"must be an octal file mode such as \"0640\", not '{text}'"
    mode = int(text, 8)
    if mode & 0o600 != 0o600 or mode & 0o111 or mode & 0o002:
        return (
            f"'{text}' must let the owner read and write, make nothing executable and let no one else write "
            '(e.g. "0600" or "0640")'
        )
    return None


def _dir_mode_problem(name: str, text: str) -> str | None:
    problem = file_mode_problem(text)
    return f"'{name}' {problem}" if problem else None


def _target_problem(name: str, target: str) -> str | None:
    if target in ("dry-run", "sim:") or (target.split(":", 1)[0] in ("dir", "sim", "mq") and ":" in target):
        return None
    return f"'{name}' must be dry-run, dir:PATH, sim:[NAME] or mq:QMGR, not '{target}'"


def _source_problem(name: str, source: str) -> str | None:
    if not source or (":" in source and source.split(":", 1)[0] in ("mq", "sim")):
        return None
    return f"'{name}' must be mq:QMGR or sim:NAME, not '{source}'"


def _time_zone_problem(name: str, zone: str) -> str | None:
    try:
        time_zone(zone)
    except ValueError as exc:
        return f"'{name}': {exc}"
    return None


DECLARED: tuple[Option, ...] = (
    Option("pipeline", "rules", (str,), "", "rules table file (runmqdlq syntax)"),
    Option("pipeline", "inputs", (list,), [], "dump files, listings or directories to ingest"),
    Option(
        "pipeline",
        "source",
        (str,),
        "",
        'live DLQ mq:QMGR | sim:NAME the run drains first and settles last ("" = none)',
        check=_source_problem,
    ),
    Option(
        "pipeline",
        "target",
        (str,),
        "dry-run",
        "replay target: dry-run | dir:PATH | sim:[NAME] | mq:QMGR",
        check=_target_problem,
    ),
    Option("pipeline", "run_id", (str,), "", "run identifier; generated (UTC timestamp + random) when empty"),
    Option(
        "storage",
        "format",
        (str,),
        "parquet",
        "how the tables are stored: Parquet files, or Delta Lake tables (below)",
        choices=STORAGE_FORMATS,
    ),
    Option(
        "storage",
        "path",
        (str,),
        "./warehouse",
        "warehouse root for Parquet, or Delta tables by path; a local directory or a URI (`file:///...`, "
        "`hdfs://NAMENODE:8020/...`). Without a scheme on a cluster whose `fs.defaultFS` is not local (HDFS), "
        "Spark commands exit 2 asking for the full URI (docs/deploy.md)",
    ),
    Option("storage", "catalog", (str,), "", "Delta catalog (tables by name: catalog.schema.table)"),
    Option("storage", "schema", (str,), "", "Delta schema (database) for tables by name"),
    Option(
        "storage",
        "lock",
        (bool,),
        True,
        "writing commands hold PATH/_locks/warehouse.lock when PATH is a file system path "
        "(one writer at a time); false = no file lock (Delta warehouses still take the lease)",
    ),
    Option(
        "storage",
        "lease_seconds",
        (int, float),
        120,
        "Delta: the writer lease lasts this long without a renewal (a heartbeat "
        "renews it every third of it); a holder killed with -9 frees it then",
        minimum=5,
        minimum_reason="a heartbeat renews it every third",
    ),
    Option(
        "storage",
        "lease_wait",
        (int, float),
        0,
        "Delta: seconds a second writer waits for the lease before giving up (exit 1); 0 = refuse at once",
        minimum=0,
    ),
    Option("spark", "master", (str,), "local[*]", "master for a locally built session (ignored when a session exists)"),
    Option(
        "spark",
        "remote",
        (str,),
        "",
        "Spark Connect server sc://HOST:PORT for a new session (default: $SPARK_REMOTE; "
        '"" = classic Spark); replay to mq:, drain and settle refuse it',
    ),
    Option("spark", "app_name", (str,), "dlq-pipeline", "Spark application name"),
    Option("spark", "conf", (dict,), {}, 'extra Spark settings, e.g. {"spark.sql.shuffle.partitions" = "8"}'),
    Option(
        "ingest",
        "split_bytes",
        (int,),
        DEFAULT_SPLIT_BYTES,
        "a dump larger than this is split across tasks",
        minimum=1024,
    ),
    Option("ingest", "max_line_length", (int,), MAX_LINE_LENGTH, "longest dump line accepted (bytes)", minimum=80),
    Option(
        "ingest",
        "max_message_bytes",
        (int,),
        MQ_MAX_MESSAGE_BYTES,
        "largest message accepted (MQ's maximum, 100 MB)",
        minimum=0,
    ),
    Option(
        "ingest",
        "reader",
        (str,),
        "auto",
        "auto: dmpmqmsg dumps at local paths are read in the JVM when the session has "
        "the reader's jar (dlq_pipeline/ingest/jvm_reader.py), the rest in Python; "
        "python: always the Python reader",
        choices=("auto", "python"),
    ),
    Option(
        "ingest",
        "dump_time_zone",
        (str,),
        DEFAULT_TIME_ZONE,
        'IANA time zone (e.g. `"Europe/Berlin"`) of the host that ran dmpmqmsg: a dump header\'s `Created:` '
        "stamp is that host's local time and names no zone, and `messages.recorded_at` (when each message's "
        "Expiry was recorded, what replay counts it down from) reads it there (docs/message-formats.md §4). "
        "A name that is not a zone is a configuration error (exit 2)",
        check=_time_zone_problem,
    ),
    Option(
        "ingest",
        "settle_seconds",
        (int, float),
        0,
        "a file modified less than this many seconds ago waits for a later run "
        "(0: only a file that changes while it is read waits)",
        minimum=0,
    ),
    Option("ingest", "reread", (bool,), False, "read files already landed and unchanged again (--reread)"),
    Option(
        "ingest",
        "clean_source",
        (str,),
        "keep",
        "after a landing commits: keep its files, archive them to archive_dir, or delete them",
        choices=CLEAN_SOURCE,
    ),
    Option(
        "ingest",
        "archive_dir",
        (str,),
        "",
        "where clean_source = archive moves landed files (outside every input); archive needs it",
    ),
    Option(
        "ingest", "clean_quarantined", (bool,), False, "let clean_source move files that gave quarantined records too"
    ),
    Option(
        "classify",
        "retry_interval",
        (int,),
        None,
        "override the rules table's RETRYINT (seconds); not set: the table's",
        minimum=0,
    ),
    Option(
        "replay",
        "max_connections",
        (int,),
        4,
        "most MQ connections open at once (replay partitions)",
        minimum=1,
    ),
    Option(
        "replay",
        "connections_per_qmgr",
        (int,),
        1,
        "most of those one target queue manager's messages are spread over "
        "(its target queues placed by size; each queue keeps DLQ order in one connection)",
        minimum=1,
    ),
    Option("replay", "batch_size", (int,), 200, "puts per syncpoint unit of work", minimum=1),
    Option(
        "replay",
        "async_put",
        (bool,),
        True,
        "put a batch without waiting for each put's answer (MQPMO_ASYNC_RESPONSE) and "
        "ask MQSTAT before the commit; a batch with a failed put is backed out and put "
        "again synchronously. Needs MQSTAT in the client library (ibmmq); false = "
        "every put waits",
    ),
    Option(
        "replay",
        "units",
        (str,),
        "whole",
        "whole: a message group or a message in segments is put as one unit, all its "
        "messages present and decided alike, in order, in one syncpoint, or held "
        '(docs/replay.md, "Groups and segments"); members: each message on its own, as runmqdlq puts them',
        choices=("whole", "members"),
    ),
    Option(
        "replay",
        "expiry",
        (str,),
        "remaining",
        "remaining: a message is put with the Expiry it has left (less the time since "
        "it was recorded) and one whose lifetime ran out is not put (`expired`; docs/replay.md, "
        '"Expiry"); unaltered: the MQMD\'s Expiry as landed',
        choices=("remaining", "unaltered"),
    ),
    Option("replay", "rate_limit", (int, float), 0, "puts per second per connection; 0 = unlimited", minimum=0),
    Option(
        "replay",
        "breaker_threshold",
        (int,),
        5,
        "transient failures on one queue before it is left alone for the run",
        minimum=1,
    ),
    Option(
        "replay", "depth_check", (bool,), False, "inquire CURDEPTH/MAXDEPTH and hold back when a queue is nearly full"
    ),
    Option(
        "replay",
        "depth_headroom",
        (float,),
        0.9,
        "with depth_check: hold back above this fraction of MAXDEPTH",
        minimum=0,
        exclusive_minimum=True,
        maximum=1,
    ),
    Option(
        "replay",
        "reconnect_attempts",
        (int,),
        3,
        "reconnects with backoff after a connection failure",
        minimum=0,
    ),
    Option(
        "replay",
        "reconnect_backoff",
        (int, float),
        1.0,
        "seconds before the first reconnect; doubles each time, at most 30",
        minimum=0,
    ),
    Option(
        "replay",
        "dir_mode",
        (str,),
        "0600",
        'permissions of the dmpmqmsg files a dir: target writes (octal); "0640" lets '
        "the owner's group (e.g. mqm) read them, directories made get r-x to match; the owner "
        "reads and writes, nothing is executable, no one else writes",
        check=_dir_mode_problem,
    ),
    Option(
        "replay",
        "sim_dir",
        (str,),
        "",
        "directory of the simulated queue managers' databases (`sim:` targets); a file system path "
        'every executor opens; "" = WAREHOUSE/_sim (the warehouse must then be a file system path): '
        "set it when the warehouse is in object storage",
    ),
    Option(
        "drain",
        "source",
        (str,),
        "",
        "live DLQ mq:QMGR | sim:NAME the drain and settle commands work on",
        check=_source_problem,
    ),
    Option(
        "drain",
        "mode",
        (str,),
        "browse",
        "browse: non-destructive; move: destructive get under syncpoint",
        choices=DRAIN_MODES,
    ),
    Option("drain", "queue", (str,), "", "DLQ to drain; default: INPUTQ from the rules table, else the QM's DEADQ"),
    Option("drain", "qmgr", (str,), "", "queue manager; default: INPUTQM from the rules table"),
    Option("drain", "batch_size", (int,), 200, "messages per unit of work in move mode", minimum=1),
    Option("report", "html", (str,), "", "write the HTML report here"),
    Option("report", "top", (int,), 10, "rows in top-N tables", minimum=1),
    Option(
        "hdfs",
        "webhdfs",
        (str,),
        "",
        "NameNode HTTP address (WebHDFS) the pipeline's Python reaches hdfs:// "
        "paths through (inputs, the warehouse's checkpoints and fence files, dir: targets), "
        'e.g. http://namenode:9870; "" = port 9870 of the hdfs:// URI\'s host',
    ),
    Option(
        "s3",
        "endpoint",
        (str,),
        "",
        'S3-compatible endpoint URL for Spark and Python ("" = `AWS_ENDPOINT_URL`, else AWS); docs/deploy.md, "S3"',
    ),
    Option("s3", "region", (str,), "", 'region of the buckets ("" = `AWS_REGION`, else the AWS SDKs\' default)'),
    Option("privacy", "redact_payloads", (bool,), False, "never show message bodies (notebooks, inspect --config)"),
    Option(
        "log",
        "format",
        (str,),
        "text",
        "text: lines for people; json: one JSON object per line, for log shippers",
        choices=logs.FORMATS,
    ),
    Option(
        "log",
        "level",
        (str,),
        "",
        '"": info for JSON lines (the stage events), warning for text (-v/-vv on the command line raise it)',
        choices=("", *logs.LEVELS),
        fold_case=True,
    ),
    Option(
        "metrics",
        "textfile",
        (str,),
        "",
        "also write each run's metrics here in Prometheus text format (node_exporter textfile collector)",
    ),
    Option(
        "mq",
        "qmgrs",
        (dict,),
        {},
        "per queue manager: channel, conn_name, cipher_spec, key_repository, user, password_env (below)",
    ),
)


def _by_section(options: Iterable[Option]) -> dict[str, dict[str, Option]]:
    found: dict[str, dict[str, Option]] = {}
    for option in options:
        found.setdefault(option.section, {})[option.key] = option
    return found


OPTIONS: dict[str, dict[str, Option]] = _by_section(DECLARED)

# The keys of one [mq.qmgrs.NAME] table: key -> (type(s), meaning).
QMGR_KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    "channel": ((str,), "server-connection channel"),
    "conn_name": ((str,), "host(port)[,host(port)]"),
    "cipher_spec": ((str,), "TLS CipherSpec, e.g. ANY_TLS13_OR_HIGHER"),
    "key_repository": ((str,), "TLS key repository stem (without .kdb)"),
    "user": ((str,), "user id for connection authentication"),
    "password_env": ((str,), "name of the environment variable that holds the password"),
    "key_stash_password_env": ((str,), "name of the environment variable holding the key repository password"),
}


def default(section: str, key: str) -> Any:
    """The built-in default of ``section.key`` (shared: copy a list or dict before changing it)."""
    return OPTIONS[section][key].default


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _default_text(value: Any) -> str:
    return "not set" if value is None else f"`{json.dumps(value)}`"


def _allowed_text(option: Option) -> str:
    if option.choices:
        return ", ".join(f"`{json.dumps(c)}`" for c in option.choices) + (" (any case)" if option.fold_case else "")
    return option.range_text()


def options_table() -> str:
    """The table of every option in docs/configuration.md, "Every option" (Markdown)."""
    rows = [
        "| option | type | default | allowed | meaning |",
        "|---|---|---|---|---|",
        *(
            f"| `{o.name}` | {' or '.join(t.__name__ for t in o.types)} | {_default_text(o.default)} | "
            f"{_cell(_allowed_text(o))} | {_cell(o.description)} |"
            for o in DECLARED
        ),
    ]
    return "\n".join(rows) + "\n"


def qmgr_keys_table() -> str:
    """The table of a ``[mq.qmgrs.NAME]`` table's keys in docs/configuration.md (Markdown)."""
    rows = ["| key | meaning |", "|---|---|", *(f"| `{k}` | {_cell(m)} |" for k, (_, m) in QMGR_KEYS.items())]
    return "\n".join(rows) + "\n"
