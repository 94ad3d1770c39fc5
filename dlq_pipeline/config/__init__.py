"""One configuration file for every way of running: TOML, with profiles, validated up front.

A file holds the base settings plus ``[profiles.<name>]`` tables that override them
(``local``, ``cluster``, ``databricks`` are conventional names, any name works). The
effective settings are: built-in defaults < file base < selected profile < command-line
overrides. Every problem is collected and reported at once, naming the file and the key,
before anything runs. Secrets never live in the file: only the *names* of environment
variables that hold them (``password_env``), so they stay off command lines and out of logs.
"""

from __future__ import annotations

import copy
import difflib
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlq_pipeline.dumps.dmpmqmsg import DEFAULT_TIME_ZONE, MAX_LINE_LENGTH
from dlq_pipeline.dumps.plan import DEFAULT_SPLIT_BYTES
from dlq_pipeline.errors import UsageError
from dlq_pipeline.mq.constants import MQ_MAX_MESSAGE_BYTES
from dlq_pipeline.runtime.clock import time_zone

PROFILE_ENV = "DLQ_PIPELINE_PROFILE"
UNIT_MODES = ("whole", "members")  # replay.units
EXPIRY_MODES = ("remaining", "unaltered")  # replay.expiry

# section -> key -> (type(s), default, description). The single list of every option;
# docs/configuration.md is checked against it by the test suite.
OPTIONS: dict[str, dict[str, tuple[tuple[type, ...], Any, str]]] = {
    "pipeline": {
        "rules": ((str,), "", "rules table file (runmqdlq syntax)"),
        "inputs": ((list,), [], "dump files, listings or directories to ingest"),
        "source": ((str,), "", 'live DLQ mq:QMGR | sim:NAME the run drains first and settles last ("" = none)'),
        "target": ((str,), "dry-run", "replay target: dry-run | dir:PATH | sim: | mq:QMGR"),
        "run_id": ((str,), "", "run identifier; generated (UTC timestamp + random) when empty"),
    },
    "storage": {
        "format": ((str,), "parquet", "parquet | delta"),
        "path": ((str,), "./warehouse", "warehouse root for Parquet, or Delta tables by path"),
        "catalog": ((str,), "", "Delta catalog (tables by name: catalog.schema.table)"),
        "schema": ((str,), "", "Delta schema (database) for tables by name"),
        "lock": (
            (bool,),
            True,
            "writing commands hold PATH/_locks/warehouse.lock when PATH is a file system path "
            "(one writer at a time); false = no file lock (Delta warehouses still take the lease)",
        ),
        "lease_seconds": (
            (int, float),
            120,
            "Delta: the writer lease lasts this long without a renewal (a heartbeat "
            "renews it every third of it); a holder killed with -9 frees it then",
        ),
        "lease_wait": (
            (int, float),
            0,
            "Delta: seconds a second writer waits for the lease before giving up (exit 1); 0 = refuse at once",
        ),
    },
    "spark": {
        "master": ((str,), "local[*]", "master for a locally built session (ignored when a session exists)"),
        "remote": (
            (str,),
            "",
            "Spark Connect server sc://HOST:PORT for a new session (default: $SPARK_REMOTE; "
            '"" = classic Spark); replay to mq:, drain and settle refuse it',
        ),
        "app_name": ((str,), "dlq-pipeline", "Spark application name"),
        "conf": ((dict,), {}, 'extra Spark settings, e.g. {"spark.sql.shuffle.partitions" = "8"}'),
    },
    "ingest": {
        "split_bytes": ((int,), DEFAULT_SPLIT_BYTES, "a dump larger than this is split across tasks"),
        "max_line_length": ((int,), MAX_LINE_LENGTH, "longest dump line accepted (bytes)"),
        "max_message_bytes": ((int,), MQ_MAX_MESSAGE_BYTES, "largest message accepted (MQ's maximum, 100 MB)"),
        "reader": (
            (str,),
            "auto",
            "auto: dmpmqmsg dumps at local paths are read in the JVM when the session has "
            "the reader's jar (dlq_pipeline/engine/jvm_reader.py), the rest in Python; "
            "python: always the Python reader",
        ),
        "dump_time_zone": (
            (str,),
            DEFAULT_TIME_ZONE,
            "IANA time zone (e.g. Europe/Berlin) of the host that ran dmpmqmsg: a dump header's "
            "Created stamp is its local time, naming no zone; messages.recorded_at reads it there",
        ),
        "settle_seconds": (
            (int, float),
            0,
            "a file modified less than this many seconds ago waits for a later run "
            "(0: only a file that changes while it is read waits)",
        ),
        "reread": ((bool,), False, "read files already landed and unchanged again (--reread)"),
        "clean_source": (
            (str,),
            "keep",
            "after a landing commits: keep its files, archive them to archive_dir, or delete them",
        ),
        "archive_dir": ((str,), "", "where clean_source = archive moves landed files (outside every input)"),
        "clean_quarantined": ((bool,), False, "let clean_source move files that gave quarantined records too"),
    },
    "classify": {
        "retry_interval": ((int,), None, "override the rules table's RETRYINT (seconds); not set: the table's"),
    },
    "replay": {
        "max_connections": ((int,), 4, "most MQ connections open at once (replay partitions)"),
        "connections_per_qmgr": (
            (int,),
            1,
            "most of those one target queue manager's messages are spread over "
            "(its target queues placed by size; each queue keeps DLQ order in one connection)",
        ),
        "batch_size": ((int,), 200, "puts per syncpoint unit of work"),
        "async_put": (
            (bool,),
            True,
            "put a batch without waiting for each put's answer (MQPMO_ASYNC_RESPONSE) and "
            "ask MQSTAT before the commit; a batch with a failed put is backed out and put "
            "again synchronously. Needs MQSTAT in the client library (ibmmq); false = "
            "every put waits",
        ),
        "units": (
            (str,),
            "whole",
            "whole: a message group or a message in segments is put as one unit, all its "
            "messages present and decided alike, in order, in one syncpoint, or held; "
            "members: each message on its own, as runmqdlq puts them",
        ),
        "expiry": (
            (str,),
            "remaining",
            "remaining: a message is put with the Expiry it has left (less the time since "
            "it was recorded) and one whose lifetime ran out is not put (expired); "
            "unaltered: the MQMD's Expiry as landed",
        ),
        "rate_limit": ((int, float), 0, "puts per second per connection; 0 = unlimited"),
        "breaker_threshold": ((int,), 5, "transient failures on one queue before it is left alone for the run"),
        "depth_check": ((bool,), False, "inquire CURDEPTH/MAXDEPTH and hold back when a queue is nearly full"),
        "depth_headroom": ((float,), 0.9, "with depth_check: hold back above this fraction of MAXDEPTH"),
        "reconnect_attempts": ((int,), 3, "reconnects with backoff after a connection failure"),
        "reconnect_backoff": ((int, float), 1.0, "seconds before the first reconnect; doubles each time, at most 30"),
        "dir_mode": (
            (str,),
            "0600",
            'permissions of the dmpmqmsg files a dir: target writes (octal); "0640" lets '
            "the owner's group (e.g. mqm) read them, directories made get r-x to match",
        ),
        "sim_dir": (
            (str,),
            "",
            "directory of the simulated queue managers' databases (sim: targets); a file system path "
            'every executor opens; "" = WAREHOUSE/_sim (the warehouse must then be a file system path)',
        ),
    },
    "drain": {
        "source": ((str,), "", "live DLQ mq:QMGR | sim:NAME the drain and settle commands work on"),
        "mode": ((str,), "browse", "browse (non-destructive) | move (destructive get under syncpoint)"),
        "queue": ((str,), "", "DLQ to drain; default: INPUTQ from the rules table, else the QM's DEADQ"),
        "qmgr": ((str,), "", "queue manager; default: INPUTQM from the rules table"),
        "batch_size": ((int,), 200, "messages per unit of work in move mode"),
    },
    "report": {
        "html": ((str,), "", "write the HTML report here"),
        "top": ((int,), 10, "rows in top-N tables"),
    },
    "hdfs": {
        "webhdfs": (
            (str,),
            "",
            "NameNode HTTP address (WebHDFS) the pipeline's Python reaches hdfs:// "
            "paths through (inputs, the warehouse's checkpoints and fence files, dir: targets), "
            'e.g. http://namenode:9870; "" = port 9870 of the hdfs:// URI\'s host',
        ),
    },
    "s3": {
        "endpoint": ((str,), "", 'S3-compatible endpoint URL for Spark and Python ("" = AWS_ENDPOINT_URL, else AWS)'),
        "region": ((str,), "", 'region of the buckets ("" = AWS_REGION, else the AWS SDKs\' default)'),
    },
    "privacy": {
        "redact_payloads": ((bool,), False, "never show message bodies (notebooks, inspect --config)"),
    },
    "log": {
        "format": ((str,), "text", "text | json (one JSON object per line, for log shippers)"),
        "level": (
            (str,),
            "",
            "debug | info | warning | error; default: info for JSON lines (the stage events), "
            "warning for text (-v/-vv on the command line raise it)",
        ),
    },
    "metrics": {
        "textfile": (
            (str,),
            "",
            "also write each run's metrics here in Prometheus text format (node_exporter textfile collector)",
        ),
    },
    "mq": {
        "qmgrs": (
            (dict,),
            {},
            "per queue manager: channel, conn_name, cipher_spec, key_repository, user, password_env",
        ),
    },
}

QMGR_KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    "channel": ((str,), "server-connection channel"),
    "conn_name": ((str,), "host(port)[,host(port)]"),
    "cipher_spec": ((str,), "TLS CipherSpec, e.g. ANY_TLS13_OR_HIGHER"),
    "key_repository": ((str,), "TLS key repository stem (without .kdb)"),
    "user": ((str,), "user id for connection authentication"),
    "password_env": ((str,), "name of the environment variable that holds the password"),
    "key_stash_password_env": ((str,), "name of the environment variable holding the key repository password"),
}
SECRET_WORDS = ("password", "passwd", "secret", "token")


class ConfigError(UsageError):
    """Every problem with a configuration, reported together."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class Config:
    """Validated settings: ``config.section["key"]`` style access via ``get``."""

    values: Mapping[str, Mapping[str, Any]]
    source: str = "<defaults>"
    profile: str = ""
    given: frozenset[str] = frozenset()  # "section.key" of each option a file, profile or override set

    def is_given(self, section: str, key: str) -> bool:
        """Whether the option was set (to any value, its default too) rather than defaulted."""
        return f"{section}.{key}" in self.given

    def get(self, section: str, key: str) -> Any:
        return self.values[section][key]

    def section(self, section: str) -> Mapping[str, Any]:
        return self.values[section]


def defaults() -> dict[str, dict[str, Any]]:
    return {s: {k: copy.deepcopy(spec[1]) for k, spec in keys.items()} for s, keys in OPTIONS.items()}


def _did_you_mean(word: str, choices) -> str:
    near = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean '{near[0]}'?)" if near else ""


def _check_section(where: str, section: str, table: Any, problems: list[str]) -> dict[str, Any]:
    if not isinstance(table, dict):
        problems.append(f"{where}: [{section}] must be a table")
        return {}
    known = OPTIONS[section]
    clean: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            problems.append(f"{where}: unknown key '{section}.{key}'{_did_you_mean(key, known)}")
            continue
        types, _, _ = known[key]
        if isinstance(value, bool) and bool not in types:
            ok = False
        else:
            ok = isinstance(value, types) or (float in types and isinstance(value, int))
        if not ok:
            want = " or ".join(t.__name__ for t in types)
            problems.append(f"{where}: '{section}.{key}' must be {want}, not {type(value).__name__}")
            continue
        clean[key] = value
    return clean


def _check_values(where: str, values: dict[str, dict[str, Any]], problems: list[str]) -> None:
    """Checks that need more than a type: enumerations, ranges, secrets."""
    fmt = values["storage"]["format"]
    if fmt not in ("parquet", "delta"):
        problems.append(f"{where}: 'storage.format' must be parquet or delta, not '{fmt}'")
    target = values["pipeline"]["target"]
    if not (target in ("dry-run", "sim:") or target.split(":", 1)[0] in ("dir", "sim", "mq") and ":" in target):
        problems.append(f"{where}: 'pipeline.target' must be dry-run, dir:PATH, sim:[NAME] or mq:QMGR, not '{target}'")
    for section in ("pipeline", "drain"):
        source = values[section]["source"]
        if source and (":" not in source or source.split(":", 1)[0] not in ("mq", "sim")):
            problems.append(f"{where}: '{section}.source' must be mq:QMGR or sim:NAME, not '{source}'")
    if values["log"]["format"] not in ("text", "json"):
        problems.append(f"{where}: 'log.format' must be text or json, not '{values['log']['format']}'")
    if values["log"]["level"].lower() not in ("", "debug", "info", "warning", "error"):
        problems.append(f"{where}: 'log.level' must be debug, info, warning or error, not '{values['log']['level']}'")
    if values["ingest"]["reader"] not in ("auto", "python"):
        problems.append(f"{where}: 'ingest.reader' must be auto or python, not '{values['ingest']['reader']}'")
    ingest = values["ingest"]
    if ingest["clean_source"] not in ("keep", "archive", "delete"):
        problems.append(
            f"{where}: 'ingest.clean_source' must be keep, archive or delete, not '{ingest['clean_source']}'"
        )
    elif ingest["clean_source"] == "archive" and not ingest["archive_dir"]:
        problems.append(f"{where}: 'ingest.clean_source' = archive needs 'ingest.archive_dir'")
    if ingest["settle_seconds"] < 0:
        problems.append(f"{where}: 'ingest.settle_seconds' must be at least 0")
    try:
        time_zone(ingest["dump_time_zone"])
    except ValueError as exc:
        problems.append(f"{where}: 'ingest.dump_time_zone': {exc}")
    for key, allowed in (("units", UNIT_MODES), ("expiry", EXPIRY_MODES)):
        if values["replay"][key] not in allowed:
            problems.append(f"{where}: 'replay.{key}' must be {' or '.join(allowed)}, not '{values['replay'][key]}'")
    if values["drain"]["mode"] not in ("browse", "move"):
        problems.append(f"{where}: 'drain.mode' must be browse or move, not '{values['drain']['mode']}'")
    for section, key, low in [
        ("replay", "max_connections", 1),
        ("replay", "connections_per_qmgr", 1),
        ("replay", "batch_size", 1),
        ("replay", "breaker_threshold", 1),
        ("replay", "reconnect_attempts", 0),
        ("drain", "batch_size", 1),
        ("ingest", "split_bytes", 1024),
        ("ingest", "max_line_length", 80),
        ("ingest", "max_message_bytes", 0),
        ("report", "top", 1),
        ("replay", "rate_limit", 0),
        ("replay", "reconnect_backoff", 0),
        ("classify", "retry_interval", 0),
    ]:
        if values[section][key] is not None and values[section][key] < low:
            problems.append(f"{where}: '{section}.{key}' must be at least {low}")
    if values["storage"]["lease_seconds"] < 5:
        problems.append(f"{where}: 'storage.lease_seconds' must be at least 5 (a heartbeat renews it every third)")
    if values["storage"]["lease_wait"] < 0:
        problems.append(f"{where}: 'storage.lease_wait' must be at least 0")
    if not 0 < values["replay"]["depth_headroom"] <= 1:
        problems.append(f"{where}: 'replay.depth_headroom' must be in (0, 1]")
    mode_problem = file_mode_problem(values["replay"]["dir_mode"])
    if mode_problem:
        problems.append(f"{where}: 'replay.dir_mode' {mode_problem}")
    for name, qm in values["mq"]["qmgrs"].items():
        if not isinstance(qm, dict):
            problems.append(f"{where}: 'mq.qmgrs.{name}' must be a table")
            continue
        for key, value in qm.items():
            if key not in QMGR_KEYS:
                hint = ""
                if any(w in key.lower() for w in SECRET_WORDS):
                    hint = " (secrets never go in the file: name an environment variable with 'password_env')"
                problems.append(f"{where}: unknown key 'mq.qmgrs.{name}.{key}'{hint or _did_you_mean(key, QMGR_KEYS)}")
            elif not isinstance(value, QMGR_KEYS[key][0]):
                problems.append(f"{where}: 'mq.qmgrs.{name}.{key}' must be a string")
        problems.extend(f"{where}: {p}" for p in qmgr_problems(name, qm))


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_CIPHER_SPEC = re.compile(r"[A-Z0-9_]{4,64}")
# CipherSpecs MQ deprecated as insecure (SSL 3.0, NULL, export, RC4, single/triple DES).
_WEAK_CIPHER = re.compile(r"^SSL_|NULL|EXPORT|RC4|_DES_|3DES|DES_SHA")


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


def qmgr_problems(name: str, qm: Mapping[str, Any]) -> list[str]:
    """What is inconsistent in one ``[mq.qmgrs.NAME]`` table (TLS, secrets). (A missing
    channel or conn_name is reported when the table is used, before any task starts.)

    Values of ``*_env`` keys are never repeated in a message: someone may have pasted the
    password itself there."""
    problems = []
    where = f"mq.qmgrs.{name}"
    text = {k: v for k, v in qm.items() if k in QMGR_KEYS and isinstance(v, str)}
    for key in ("password_env", "key_stash_password_env"):
        if key in text and not _ENV_NAME.fullmatch(text[key]):
            problems.append(
                f"'{where}.{key}' must be the NAME of an environment variable (letters, digits, _), "
                "not the secret itself; the value is not shown"
            )
    if text.get("user") and not text.get("password_env"):
        problems.append(f"'{where}' names a user but no password_env (the variable that holds the password)")
    if text.get("password_env") and not text.get("user"):
        problems.append(f"'{where}.password_env' is set but no user: the password would not be sent")
    cipher, keys = text.get("cipher_spec", ""), text.get("key_repository", "")
    if cipher and not keys:
        problems.append(f"'{where}.cipher_spec' needs key_repository (the TLS key repository stem) too")
    if keys and not cipher:
        problems.append(f"'{where}.key_repository' is set but no cipher_spec: the channel would not use TLS")
    if cipher and not _CIPHER_SPEC.fullmatch(cipher):
        problems.append(
            f"'{where}.cipher_spec' {cipher!r} is not a CipherSpec name "
            "(e.g. ANY_TLS13_OR_HIGHER, TLS_AES_256_GCM_SHA384)"
        )
    elif cipher and _WEAK_CIPHER.search(cipher):
        problems.append(
            f"'{where}.cipher_spec' {cipher} is deprecated as insecure: use ANY_TLS13_OR_HIGHER, "
            "ANY_TLS12_OR_HIGHER or a TLS 1.2/1.3 CipherSpec"
        )
    if keys.endswith((".kdb", ".p12", ".sth")):
        problems.append(
            f"'{where}.key_repository' is the stem without the extension (e.g. /var/mqm/ssl/client for client.kdb)"
        )
    if text.get("key_stash_password_env") and not keys:
        problems.append(f"'{where}.key_stash_password_env' is set but no key_repository")
    return problems


def _merge(values: dict[str, dict[str, Any]], layer: Mapping[str, Mapping[str, Any]], given: set[str]) -> None:
    for section, table in layer.items():
        values[section].update(table)
        given.update(f"{section}.{key}" for key in table)


def _parse_layer(where: str, doc: Mapping[str, Any], problems: list[str]) -> dict[str, dict[str, Any]]:
    layer: dict[str, dict[str, Any]] = {}
    for section, table in doc.items():
        if section == "profiles":
            continue
        if section not in OPTIONS:
            problems.append(f"{where}: unknown section [{section}]{_did_you_mean(section, OPTIONS)}")
            continue
        layer[section] = _check_section(where, section, table, problems)
    return layer


def load_config(
    path: str | os.PathLike | None = None,
    *,
    profile: str | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> Config:
    """Read, merge and validate; raises ConfigError listing every problem."""
    problems: list[str] = []
    values = defaults()
    given: set[str] = set()
    where = str(path) if path else "<defaults>"
    profile = profile if profile is not None else os.environ.get(PROFILE_ENV, "")
    if path is not None:
        try:
            doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError([f"{where}: no such configuration file"]) from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError([f"{where}: not valid TOML: {exc}"]) from None
        _merge(values, _parse_layer(where, doc, problems), given)
        profiles = doc.get("profiles", {})
        if not isinstance(profiles, dict):
            problems.append(f"{where}: [profiles] must hold tables like [profiles.local]")
            profiles = {}
        if profile:
            if profile not in profiles:
                problems.append(
                    f"{where}: no profile '{profile}' (profiles here: {', '.join(sorted(profiles)) or 'none'})"
                )
            else:
                _merge(values, _parse_layer(f"{where} [profiles.{profile}]", profiles[profile], problems), given)
    elif profile:
        problems.append(f"profile '{profile}' selected but no configuration file given")
    if overrides:
        _merge(values, _parse_layer("command line", overrides, problems), given)
    _check_values(where, values, problems)
    if problems:
        raise ConfigError(problems)
    return Config(values=values, source=where, profile=profile or "", given=frozenset(given))


def secret(env_name: str, where: str) -> str:
    """The value of the secret in environment variable ``env_name``, which the setting
    ``where`` (e.g. ``mq.qmgrs.QM1.password_env``) names.

    The error names the setting, never ``env_name``: a password pasted into ``password_env``
    passes as a variable name when it is made of letters, digits and ``_``."""
    value = os.environ.get(env_name)
    if value is None:
        raise ConfigError(
            [
                f"the environment variable that '{where}' names is not set (its name is not "
                "shown, in case a password was put there by mistake)"
            ]
        )
    return value
