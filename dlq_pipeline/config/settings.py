"""Typed settings, one frozen dataclass per stage, built once at the edge.

The configuration file (`dlq_pipeline.config`) is read and validated by the command line
(`dlq_pipeline.cli`) or a job before anything runs; a bad value is a ``ConfigError`` there
(exit 2). From the validated `Config` the edge builds the settings a stage needs with
``XSettings.from_config(config)`` and hands them to the library, so library code is given
values instead of reading the whole configuration: a notebook or a test calls a stage with
the few values it cares about, and what a stage depends on is visible in its signature.

This module and the edge are the only places that read a `Config`. The defaults here are the
configuration's defaults (``XSettings.from_config(load_config()) == XSettings()``, tested).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dlq_pipeline.dumps.dmpmqmsg import DEFAULT_TIME_ZONE, MAX_LINE_LENGTH
from dlq_pipeline.dumps.plan import DEFAULT_SPLIT_BYTES
from dlq_pipeline.mq.constants import MQ_MAX_MESSAGE_BYTES


@dataclass(frozen=True)
class StorageSettings:
    """``[storage]``: where the tables are and how writers exclude each other: the file lock
    (``lock``) and, for Delta, the lease (``lease_seconds``, ``lease_wait``; `dlq_pipeline.warehouse.lease`)."""

    format: str = "parquet"  # noqa: A003 - the configuration's word
    path: str = "./warehouse"
    catalog: str | None = None
    schema: str | None = None
    lock: bool = True
    lease_seconds: float = 120.0
    lease_wait: float = 0.0
    webhdfs: str = ""  # hdfs.webhdfs: how the pipeline's Python reaches an hdfs:// warehouse (checkpoints, fence)

    @classmethod
    def from_config(cls, config) -> StorageSettings:
        s = config.section("storage")
        return cls(
            format=s["format"],
            path=s["path"],
            catalog=s["catalog"] or None,
            schema=s["schema"] or None,
            lock=s["lock"],
            lease_seconds=float(s["lease_seconds"]),
            lease_wait=float(s["lease_wait"]),
            webhdfs=config.get("hdfs", "webhdfs"),
        )


@dataclass(frozen=True)
class IngestSettings:
    """``[ingest]``: how dumps are split across tasks and the limits every reader applies
    (ingest, `rules test` and `inspect` alike, so they see a dump the same way)."""

    split_bytes: int = DEFAULT_SPLIT_BYTES
    max_line_length: int = MAX_LINE_LENGTH
    max_message_bytes: int = MQ_MAX_MESSAGE_BYTES
    webhdfs: str = ""  # hdfs.webhdfs: the NameNode's HTTP address for hdfs:// inputs; "" = http://NAMENODE:9870
    reader: str = "auto"  # auto: the JVM reader where the session has it (engine.jvm_reader); python
    # the IANA zone a dump header's Created stamp (a wall-clock time naming no zone) is read in
    dump_time_zone: str = DEFAULT_TIME_ZONE
    # which files a landing reads and what becomes of them (ingest.inputs)
    settle_seconds: float = 0.0  # a file modified less long ago waits for a later run
    reread: bool = False  # read files already landed and unchanged too
    clean_source: str = "keep"  # keep | archive | delete, after the landing's commit
    archive_dir: str = ""  # where clean_source = "archive" moves landed files
    clean_quarantined: bool = False  # also move files that gave quarantined records

    @classmethod
    def from_config(cls, config) -> IngestSettings:
        s = config.section("ingest")
        return cls(
            split_bytes=s["split_bytes"],
            max_line_length=s["max_line_length"],
            max_message_bytes=s["max_message_bytes"],
            webhdfs=config.get("hdfs", "webhdfs"),
            reader=s["reader"],
            dump_time_zone=s["dump_time_zone"],
            settle_seconds=float(s["settle_seconds"]),
            reread=s["reread"],
            clean_source=s["clean_source"],
            archive_dir=s["archive_dir"],
            clean_quarantined=s["clean_quarantined"],
        )


@dataclass(frozen=True)
class ClassifySettings:
    """``[classify]``: ``retry_interval`` overrides the rules table's RETRYINT (seconds);
    None (not set) keeps the table's."""

    retry_interval: int | None = None

    @classmethod
    def from_config(cls, config) -> ClassifySettings:
        return cls(retry_interval=config.get("classify", "retry_interval"))


@dataclass(frozen=True)
class ReplaySettings:
    """``[replay]``: ``max_connections`` bounds the replay stage's partitions (one MQ
    connection each), ``connections_per_qmgr`` how many of them one target queue manager's
    messages may use (`dlq_pipeline.replay.spark.partition_key`); the rest is what each
    partition's writer (`dlq_pipeline.replay.writer`) does: syncpoint batches, asynchronous
    puts, rate limit, circuit breakers, depth check, reconnect backoff (seconds)."""

    batch_size: int = 200
    rate_limit: float = 0.0
    breaker_threshold: int = 5
    depth_check: bool = False
    depth_headroom: float = 0.9
    reconnect_attempts: int = 3
    backoff_initial: float = 1.0
    backoff_max: float = 30.0
    max_connections: int = 4
    connections_per_qmgr: int = 1
    async_put: bool = True
    units: str = "whole"  # or "members" (replay.units)
    expiry: str = "remaining"  # or "unaltered" (replay.expiry)
    dir_mode: int = 0o600  # the dir: target's files (replay.dir_mode, checked by the configuration)
    sim_dir: str = ""  # the sim: targets' databases; "" = WAREHOUSE/_sim

    @classmethod
    def from_config(cls, config) -> ReplaySettings:
        r = config.section("replay")
        return cls(
            batch_size=r["batch_size"],
            rate_limit=float(r["rate_limit"]),
            breaker_threshold=r["breaker_threshold"],
            depth_check=r["depth_check"],
            depth_headroom=float(r["depth_headroom"]),
            reconnect_attempts=r["reconnect_attempts"],
            backoff_initial=float(r["reconnect_backoff"]),
            max_connections=r["max_connections"],
            connections_per_qmgr=r["connections_per_qmgr"],
            async_put=r["async_put"],
            units=r["units"],
            expiry=r["expiry"],
            dir_mode=int(r["dir_mode"], 8),
            sim_dir=r["sim_dir"],
        )


@dataclass(frozen=True)
class DrainSettings:
    """``[drain]``: the live DLQ a run drains first and settles last ("" = none), how, and
    which queue (blank: the rules table's INPUTQ/INPUTQM, else the queue manager's DEADQ)."""

    source: str = ""
    mode: str = "browse"
    queue: str = ""
    qmgr: str = ""
    batch_size: int = 200

    @classmethod
    def from_config(cls, config) -> DrainSettings:
        d = config.section("drain")
        return cls(source=d["source"], mode=d["mode"], queue=d["queue"], qmgr=d["qmgr"], batch_size=d["batch_size"])


@dataclass(frozen=True)
class ReportSettings:
    """``[report]``: rows in top-N tables and where the HTML goes ("" = nowhere). The report
    shows no message body at all."""

    top: int = 10
    html: str = ""

    @classmethod
    def from_config(cls, config) -> ReportSettings:
        r = config.section("report")
        return cls(top=r["top"], html=r["html"])


@dataclass(frozen=True)
class PrivacySettings:
    """``[privacy]``: whether message bodies may be shown wherever the product shows them
    (notebooks, ``inspect``)."""

    redact_payloads: bool = False

    @classmethod
    def from_config(cls, config) -> PrivacySettings:
        return cls(redact_payloads=config.get("privacy", "redact_payloads"))


@dataclass(frozen=True)
class LogSettings:
    """``[log]``: the configuration file's log format and level (`dlq_pipeline.runtime.logs`)."""

    format: str = "text"  # noqa: A003 - the configuration's word
    level: str = ""  # "": info for JSON, warning for text (logs.default_level)

    @classmethod
    def from_config(cls, config) -> LogSettings:
        return cls(format=config.get("log", "format"), level=config.get("log", "level"))


def mq_qmgrs(config) -> Mapping[str, Mapping[str, Any]]:
    """``[mq.qmgrs]``: client settings per queue manager name (for ``mq:`` targets and sources)."""
    return config.get("mq", "qmgrs")


@dataclass(frozen=True)
class RunSettings:
    """Everything one run (`dlq_pipeline.pipeline.run_pipeline`) needs: each stage's
    settings, the MQ client settings per queue manager, and where metrics also go."""

    storage: StorageSettings = field(default_factory=StorageSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    classify: ClassifySettings = field(default_factory=ClassifySettings)
    replay: ReplaySettings = field(default_factory=ReplaySettings)
    drain: DrainSettings = field(default_factory=DrainSettings)
    qmgrs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    metrics_textfile: str = ""  # also write each run's metrics here (Prometheus text format)

    @classmethod
    def from_config(cls, config) -> RunSettings:
        return cls(
            storage=StorageSettings.from_config(config),
            ingest=IngestSettings.from_config(config),
            classify=ClassifySettings.from_config(config),
            replay=ReplaySettings.from_config(config),
            drain=DrainSettings.from_config(config),
            qmgrs=mq_qmgrs(config),
            metrics_textfile=config.get("metrics", "textfile"),
        )
