"""Typed settings, one frozen dataclass per stage, built once at the edge.

The configuration file (`dlq_pipeline.config`) is read and validated by the command line
(`dlq_pipeline.cli`) or a job before anything runs; a bad value is a ``ConfigError`` there
(exit 2). From the validated `Config` the edge builds the settings a stage needs with
``XSettings.from_config(config)`` and hands them to the library, so library code is given
values instead of reading the whole configuration: a notebook or a test calls a stage with
the few values it cares about, and what a stage depends on is visible in its signature.

This module and the edge are the only places that read a `Config`. A field that holds an
option is a `setting` naming it: its default is the option's declared default
(`dlq_pipeline.config.options`) and ``from_config`` reads it from the configuration, both
converted alike, so ``XSettings.from_config(load_config()) == XSettings()`` (tested).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Self

from dlq_pipeline.config import Config
from dlq_pipeline.config.options import OPTIONS

_OPTION = "option"  # field metadata: the Option a `setting` holds
_CONVERT = "convert"  # field metadata: configured value -> field value
_PART = "part"  # field metadata: the settings class a `part` holds


def _same(value: Any) -> Any:
    return value


def _blank_is_none(value: str) -> str | None:
    return value or None


def _octal(text: str) -> int:
    return int(text, 8)


def setting(section: str, key: str, convert: Callable[[Any], Any] = _same) -> Any:
    """A settings field holding option ``section.key``, converted by ``convert`` (its default too)."""
    option = OPTIONS[section][key]
    metadata = {_OPTION: option, _CONVERT: convert}
    if isinstance(option.default, (list, dict)):
        return field(default_factory=lambda: convert(copy.deepcopy(option.default)), metadata=metadata)
    return field(default=convert(option.default), metadata=metadata)


def part(kind: type[Settings]) -> Any:
    """A settings field holding the settings ``kind`` (built by its own ``from_config``)."""
    return field(default_factory=kind, metadata={_PART: kind})


@dataclass(frozen=True)
class Settings:
    """What every settings class shares: ``from_config`` builds its `setting` and `part` fields
    from a validated configuration; the other fields keep their defaults."""

    @classmethod
    def from_config(cls, config: Config) -> Self:
        values: dict[str, Any] = {}
        for f in fields(cls):
            if _OPTION in f.metadata:
                option = f.metadata[_OPTION]
                values[f.name] = f.metadata[_CONVERT](config.get(option.section, option.key))
            elif _PART in f.metadata:
                values[f.name] = f.metadata[_PART].from_config(config)
        return cls(**values)


@dataclass(frozen=True)
class HdfsSettings(Settings):
    """``[hdfs]``: how the pipeline's Python reaches ``hdfs://`` paths (WebHDFS), for the
    inputs ingest reads and for the warehouse's own files (checkpoints, fence) alike."""

    webhdfs: str = setting("hdfs", "webhdfs")  # the NameNode's HTTP address; "" = http://NAMENODE:9870


@dataclass(frozen=True)
class StorageSettings(Settings):
    """``[storage]``: where the tables are and how writers exclude each other: the file lock
    (``lock``) and, for Delta, the lease (``lease_seconds``, ``lease_wait``; `dlq_pipeline.warehouse.lease`)."""

    format: str = setting("storage", "format")  # noqa: A003 - the configuration's word
    path: str = setting("storage", "path")
    catalog: str | None = setting("storage", "catalog", _blank_is_none)
    schema: str | None = setting("storage", "schema", _blank_is_none)
    lock: bool = setting("storage", "lock")
    lease_seconds: float = setting("storage", "lease_seconds", float)
    lease_wait: float = setting("storage", "lease_wait", float)
    hdfs: HdfsSettings = part(HdfsSettings)


@dataclass(frozen=True)
class IngestSettings(Settings):
    """``[ingest]``: how dumps are split across tasks and the limits every reader applies
    (ingest, `rules test` and `inspect` alike, so they see a dump the same way)."""

    split_bytes: int = setting("ingest", "split_bytes")
    max_line_length: int = setting("ingest", "max_line_length")
    max_message_bytes: int = setting("ingest", "max_message_bytes")
    hdfs: HdfsSettings = part(HdfsSettings)
    reader: str = setting("ingest", "reader")  # auto: the JVM reader where the session has it (ingest.jvm_reader)
    # the IANA zone a dump header's Created stamp (a wall-clock time naming no zone) is read in
    dump_time_zone: str = setting("ingest", "dump_time_zone")
    # which files a landing reads and what becomes of them (ingest.inputs)
    settle_seconds: float = setting("ingest", "settle_seconds", float)
    reread: bool = setting("ingest", "reread")
    clean_source: str = setting("ingest", "clean_source")
    archive_dir: str = setting("ingest", "archive_dir")
    clean_quarantined: bool = setting("ingest", "clean_quarantined")


@dataclass(frozen=True)
class ClassifySettings(Settings):
    """``[classify]``: ``retry_interval`` overrides the rules table's RETRYINT (seconds);
    None (not set) keeps the table's."""

    retry_interval: int | None = setting("classify", "retry_interval")


@dataclass(frozen=True)
class ReplaySettings(Settings):
    """``[replay]``: ``max_connections`` bounds the replay stage's partitions (one MQ
    connection each), ``connections_per_qmgr`` how many of them one target queue manager's
    messages may use (`dlq_pipeline.replay.spark.partition_key`); the rest is what each
    partition's writer (`dlq_pipeline.replay.writer`) does: syncpoint batches, asynchronous
    puts, rate limit, circuit breakers, depth check, reconnect backoff (seconds)."""

    batch_size: int = setting("replay", "batch_size")
    rate_limit: float = setting("replay", "rate_limit", float)
    breaker_threshold: int = setting("replay", "breaker_threshold")
    depth_check: bool = setting("replay", "depth_check")
    depth_headroom: float = setting("replay", "depth_headroom", float)
    reconnect_attempts: int = setting("replay", "reconnect_attempts")
    backoff_initial: float = setting("replay", "reconnect_backoff", float)
    backoff_max: float = 30.0
    max_connections: int = setting("replay", "max_connections")
    connections_per_qmgr: int = setting("replay", "connections_per_qmgr")
    async_put: bool = setting("replay", "async_put")
    units: str = setting("replay", "units")
    expiry: str = setting("replay", "expiry")
    dir_mode: int = setting("replay", "dir_mode", _octal)  # the dir: target's files
    sim_dir: str = setting("replay", "sim_dir")  # the sim: targets' databases; "" = WAREHOUSE/_sim


@dataclass(frozen=True)
class DrainSettings(Settings):
    """``[drain]``: the live DLQ a run drains first and settles last ("" = none), how, and
    which queue (blank: the rules table's INPUTQ/INPUTQM, else the queue manager's DEADQ)."""

    source: str = setting("drain", "source")
    mode: str = setting("drain", "mode")
    queue: str = setting("drain", "queue")
    qmgr: str = setting("drain", "qmgr")
    batch_size: int = setting("drain", "batch_size")


@dataclass(frozen=True)
class ReportSettings(Settings):
    """``[report]``: rows in top-N tables and where the HTML goes ("" = nowhere). The report
    shows no message body at all."""

    top: int = setting("report", "top")
    html: str = setting("report", "html")


@dataclass(frozen=True)
class PrivacySettings(Settings):
    """``[privacy]``: whether message bodies may be shown wherever the product shows them
    (notebooks, ``inspect``)."""

    redact_payloads: bool = setting("privacy", "redact_payloads")


@dataclass(frozen=True)
class LogSettings(Settings):
    """``[log]``: the configuration file's log format and level (`dlq_pipeline.runtime.logs`)."""

    format: str = setting("log", "format")  # noqa: A003 - the configuration's word
    level: str = setting("log", "level")  # "": info for JSON, warning for text (logs.default_level)


def mq_qmgrs(config: Config) -> Mapping[str, Mapping[str, Any]]:
    """``[mq.qmgrs]``: client settings per queue manager name (for ``mq:`` targets and sources)."""
    return config.get("mq", "qmgrs")


@dataclass(frozen=True)
class RunSettings(Settings):
    """Everything one run (`dlq_pipeline.pipeline.run_pipeline`) needs: each stage's
    settings, the MQ client settings per queue manager, and where metrics also go."""

    storage: StorageSettings = part(StorageSettings)
    ingest: IngestSettings = part(IngestSettings)
    classify: ClassifySettings = part(ClassifySettings)
    replay: ReplaySettings = part(ReplaySettings)
    drain: DrainSettings = part(DrainSettings)
    qmgrs: Mapping[str, Mapping[str, Any]] = setting("mq", "qmgrs")  # as `mq_qmgrs` reads them
    metrics_textfile: str = setting("metrics", "textfile")  # also write each run's metrics here (Prometheus text)
