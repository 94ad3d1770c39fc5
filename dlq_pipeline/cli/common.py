"""What the commands share: how a command ends, the configuration options, the checks made
before anything is touched, starting Spark, the warehouse lock, and how problems are reported.

The command line is the edge: it reads and validates the configuration, builds the typed
settings each stage needs (`dlq_pipeline.config.settings`) and hands them to the library. Every
problem found before a SparkSession starts or a file is touched exits 2 and lists every
error; another writer holding the warehouse exits 1 naming it. Spark modules are imported
inside the functions that need them, so commands that do not run Spark start instantly.

A command never exits by itself: it returns its exit status (None when done) or raises a
`dlq_pipeline.errors.DlqPipelineError`, and `exit_status` is the one place that turns either
into the status the command ends with.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import logging
import os
import re
import sys
from collections.abc import Callable
from typing import NoReturn

import click

from dlq_pipeline import exitcodes
from dlq_pipeline.config import Config, load_config
from dlq_pipeline.config.settings import LogSettings, ReplaySettings, StorageSettings, mq_qmgrs
from dlq_pipeline.errors import ConfigError, DlqPipelineError, UsageError
from dlq_pipeline.rules.model import RulesTable

log = logging.getLogger(__name__)

FILE = click.Path(exists=True, dir_okay=False)


class _Input(click.ParamType):
    """An input path or URI: a local one must exist (checked now, like click.Path); a remote
    one (hdfs://, s3a://, ...) is checked where it is listed, by fs."""

    name = "path"
    _local = click.Path(exists=True)

    def convert(self, value, param, ctx):
        from dlq_pipeline.fs import is_local

        return self._local.convert(value, param, ctx) if is_local(value) else value


INPUT = _Input()


def err(message: str) -> None:
    """One line on stderr."""
    click.echo(message, err=True)


def echo_json(obj) -> None:
    """A command's result as one JSON line on stdout."""
    click.echo(json.dumps(obj, sort_keys=True, default=str))


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


# --- how a command ends ------------------------------------------------------------------------

# What a Spark command says, on one line, when no pyspark can be imported (exit 2).
NO_PYSPARK = (
    "error: this command needs PySpark, which is not installed here: "
    "pip install 'dlq-pipeline[spark]' (or run it where a Spark runtime provides pyspark; "
    "inspect, generate and rules work without it)"
)


def exit_status(work: Callable[[], int | None]) -> int:
    """The status a command running ``work`` ends with: the one ``work`` returns (None: 0,
    done; 3: done, but something needs attention), or for an error the product reports on
    purpose (`DlqPipelineError`) its ``error:`` lines on stderr and its ``exit_code``, the
    traceback only at debug level. A missing pyspark (or py4j) is NO_PYSPARK and exit 2:
    commands import Spark before they touch anything, so nothing was written when that fires.
    Any other exception goes on."""
    try:
        status = work()
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("pyspark", "py4j"):
            raise
        err(NO_PYSPARK)
        return exitcodes.USAGE
    except DlqPipelineError as exc:
        log.debug("%s", exc, exc_info=True)
        for line in exc.lines():
            err(line)
        return exc.exit_code
    return exitcodes.OK if status is None else status


class Command(click.Command):
    """A ``dlq-pipeline`` command: its function returns its exit status or raises, and the
    command ends with `exit_status` of that through click (``ctx.exit``), whose main exits
    with it: the same status under ``dlq-pipeline`` and a per-stage script, and returned to a
    caller of ``main(..., standalone_mode=False)``."""

    def invoke(self, ctx: click.Context) -> NoReturn:
        ctx.exit(exit_status(functools.partial(super().invoke, ctx)))


class Group(click.Group):
    """A group of `Command`s, ending as they do on an error of its own."""

    command_class = Command

    def invoke(self, ctx: click.Context) -> NoReturn:
        ctx.exit(exit_status(functools.partial(super().invoke, ctx)))


class _Refused(UsageError):
    """A refusal in the command's own words, after what it has listed (a rules table's
    diagnostics): its line is printed as it is."""

    def lines(self) -> list[str]:
        return [str(self)]


class _OneLine(DlqPipelineError):
    """A failure `failing_in_one_line` has put in one line: an enclosing one leaves it so."""


# --- configuration ---------------------------------------------------------------------------


def config_options(command):
    """--config/--profile/--warehouse/--format/--set, shared by every stage: the command gets
    the validated ``config``; any problem exits 2 listing every one."""

    @click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="Configuration file (TOML, see docs/configuration.md).",
    )
    @click.option(
        "--profile", default=None, help="Profile in the configuration file (local, cluster, databricks, ...)."
    )
    @click.option("--warehouse", default=None, help="Warehouse path (overrides storage.path).")
    @click.option(
        "--format",
        "storage_format",
        type=click.Choice(["parquet", "delta"]),
        default=None,
        help="Table format (overrides storage.format).",
    )
    @click.option(
        "--set",
        "settings",
        multiple=True,
        metavar="SECTION.KEY=VALUE",
        help="Override any option, e.g. --set storage.catalog=main --set replay.batch_size=50 "
        "(VALUE is read as TOML, else as a string; repeatable).",
    )
    @functools.wraps(command)
    def wrapper(*args, config_path, profile, warehouse, storage_format, settings, **kwargs):
        from dlq_pipeline.runtime import logs

        overrides: dict[str, dict] = {"storage": {}}
        problems: list[str] = []
        for item in settings:
            try:
                section, key, value = parse_setting(item)
            except ValueError as exc:
                problems.append(str(exc))
                continue
            overrides.setdefault(section, {})[key] = value
        if warehouse:
            overrides["storage"]["path"] = warehouse
        if storage_format:
            overrides["storage"]["format"] = storage_format
        try:
            config = load_config(config_path, profile=profile, overrides=overrides)
        except ConfigError as exc:
            problems += exc.problems
        if problems:
            raise ConfigError(problems)
        logs.apply_settings(LogSettings.from_config(config))
        return command(*args, config=with_s3_environment(config), **kwargs)

    return wrapper


def parse_setting(item: str) -> tuple[str, str, object]:
    """``"section.key=value"`` -> (section, key, value); the value is read as a TOML value
    (``50``, ``true``, ``["a", "b"]``, ``"text"``), else taken as a string (pure)."""
    import tomllib

    name, sep, raw = item.partition("=")
    section, dot, key = name.strip().partition(".")
    if not sep or not dot or not section or not key:
        raise ValueError(f"--set {item!r}: use SECTION.KEY=VALUE, e.g. storage.catalog=main")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return section, key, value


def reading_config(config_path: str | None, profile: str | None) -> Config:
    """The configuration given (or the defaults) for the commands that read dumps without the
    other options (`inspect`, `rules test`): a run's ingest limits, and for `inspect` whether
    bodies may be shown (``[privacy]``)."""
    return with_s3_environment(load_config(config_path, profile=profile))


def with_s3_environment(config: Config) -> Config:
    """``[s3]``'s endpoint and region set where every S3 client of this command reads them
    (the AWS SDKs' standard variables: pyarrow here, Spark's S3A through
    `dlq_pipeline.engine.s3a.spark_conf`), before anything reaches S3."""
    from dlq_pipeline.engine.s3a import environment

    os.environ.update(environment(config.get("s3", "endpoint"), config.get("s3", "region")))
    return config


def run_id_for(config: Config, given: str | None = None, now: dt.datetime | None = None) -> str:
    """``--run-id``, else ``pipeline.run_id``, else a new one (UTC timestamp + random)."""
    from dlq_pipeline.runtime.clock import utc_now
    from dlq_pipeline.tables.identity import new_run_id

    return given or config.get("pipeline", "run_id") or new_run_id(now or utc_now())


# --- rules tables ----------------------------------------------------------------------------


def summary_line(table: RulesTable, *, strict: bool = False) -> str:
    """The count line that ends `rules check` output (and any refusal of an invalid table)."""
    counts = f"{plural(len(table.errors), 'error')}, {plural(len(table.warnings), 'warning')}"
    if not table.ok:
        verdict = "invalid"
    elif strict and table.warnings:
        verdict = "rejected under --strict"
    else:
        verdict = f"valid, {plural(len(table.rules), 'rule')}"
    return f"{table.path}: {verdict} ({counts})"


def load_valid_rules(path: str, *, strict: bool = False) -> RulesTable:
    """The parsed table, its diagnostics listed; a refusal (exit 2) ending them when it is invalid."""
    from dlq_pipeline.rules.parser import read_rules

    table = read_rules(path)
    for diagnostic in table.diagnostics:
        err(str(diagnostic))
    if not table.ok or (strict and table.warnings):
        raise _Refused(f"{path}: rules table is invalid ({len(table.errors)} errors); nothing was touched")
    return table


def staged(progress, name: str, run_id: str, work):
    """``work()`` run as the stage ``name`` (its start, end and duration logged, its progress
    shown), with its result's counts (``as_dict``) in the stage's end event; the result."""
    from dlq_pipeline.runtime.progress import stage

    with stage(progress, name, run_id=run_id) as counts:
        result = work()
        counts.update(result.as_dict())
    return result


# --- checks before anything is touched ----------------------------------------------------------


def check_target(target: str, config: Config) -> None:
    """The replay target must be usable before anything is touched (a `UsageError`, exit 2):
    its spec, the warehouse replay keeps checkpoints in (anywhere for Delta, a file system
    path for Parquet), a ``dir:`` directory that can be made and written (or reached), for
    ``mq:`` its [mq.qmgrs.X] table, the MQ client and the secrets."""
    from dlq_pipeline.fs import is_local
    from dlq_pipeline.replay.targets import TargetError, open_target, parse_target

    try:
        parse_target(target)
    except TargetError as exc:
        raise TargetError(f"bad --target '{target}': {exc}") from None
    require_classic(config, needs_classic(target=target))
    storage = StorageSettings.from_config(config)
    if storage.format != "delta" and not is_local(storage.path):
        raise UsageError(
            f"replay keeps its checkpoints in the warehouse, and a Parquet warehouse on {storage.path!r} "
            'cannot be guarded to one writer there: set storage.format = "delta" (its lease works on HDFS and '
            "object storage) or storage.path to a local, NFS or /dbfs path"
        )
    replay = ReplaySettings.from_config(config)
    open_target(
        target,
        warehouse=storage.path,
        qmgrs=mq_qmgrs(config),
        webhdfs=storage.hdfs.webhdfs,
        file_mode=replay.dir_mode,
        sim_dir=replay.sim_dir,
    ).preflight()


def live_source(config: Config, source: str, table: RulesTable | None, *, queue: str = "", qmgr: str = ""):
    """(the `LiveQueue`, the warehouse directory) for a live source, resolved before Spark
    starts: ``--queue``/``--qmgr`` > ``drain.queue``/``drain.qmgr`` > the rules table's
    INPUTQ/INPUTQM; a `UsageError` (exit 2) when it names no queue manager, lacks its
    [mq.qmgrs.X] table, or the warehouse is not a file system path (it holds the queue's lock)."""
    from dlq_pipeline.live.loops import live_queue
    from dlq_pipeline.replay.targets import local_warehouse

    require_classic(config, needs_classic(source=source))
    warehouse = local_warehouse(config.get("storage", "path"))
    live = live_queue(
        source,
        warehouse=warehouse,
        qmgrs=mq_qmgrs(config),
        queue=queue or config.get("drain", "queue"),
        qmgr=qmgr or config.get("drain", "qmgr"),
        control=table.control if table is not None else None,
    )
    return live, warehouse


# --- Spark Connect: what needs classic Spark -----------------------------------------------------


def needs_classic(target: str = "", source: str | None = None) -> str:
    """What of a command cannot run over Spark Connect, "" when all of it can (pure): a
    replay to ``mq:`` and the drain and settle of a live source."""
    needs = [f"replay to {target}"] if target.startswith("mq:") else []
    if source:
        needs.append(f"drain and settle of {source}")
    return " and ".join(needs)


def connect_requested(config: Config) -> str:
    """Why this command's session would be Spark Connect ("" when it would not), before it
    starts: the settings, or a Connect session this process has already (Databricks
    serverless; only possible once pyspark's Connect client is imported)."""
    if config.get("spark", "remote"):
        return "spark.remote is set"
    if os.environ.get("SPARK_REMOTE"):
        return "$SPARK_REMOTE is set"
    if "pyspark.sql.connect.session" in sys.modules:
        from dlq_pipeline.engine.session import active_connect

        if active_connect():
            return "the session is a Spark Connect session"
    return ""


def require_classic(config: Config, what: str, why: str = "") -> None:
    """A `UsageError` (exit 2) when ``what`` (`needs_classic`) would run over Spark Connect:
    an ``mq:`` put or a drain needs IBM MQ's client library and a route to the queue manager
    on the driver and every executor, and the warehouse as a directory they share for locks
    and checkpoints, which a Connect server or serverless compute does not give. Checked
    before Spark starts (``spark.remote``, ``$SPARK_REMOTE``) and again on the session
    (``why``: an existing Connect session, Databricks serverless)."""
    why = why or connect_requested(config)
    if what and why:
        raise UsageError(
            f"{what} cannot run over Spark Connect ({why}): it needs IBM MQ's client and a route to the queue "
            "manager on the driver and every executor, and a warehouse directory they share; run it on classic Spark "
            "(spark.remote unset: the CLI's own session, spark-submit, a Databricks classic job cluster)"
        )


# --- Spark and the warehouse -------------------------------------------------------------------


def _landing_bytes(config: Config, inputs: list[str], reread: bool) -> int | None:
    """The bytes a landing of ``inputs`` into the configured warehouse will read
    (`dlq_pipeline.ingest.inputs.bytes_to_land`): the files it has not landed, as a Parquet
    warehouse at a local path tells before Spark starts; all of them otherwise, and with
    ``reread`` (--reread)."""
    from dlq_pipeline.ingest.inputs import bytes_to_land
    from dlq_pipeline.ingest.spark import landed_files_at

    storage = StorageSettings.from_config(config)
    at_path = storage.format == "parquet" and storage.catalog is None
    reread = reread or bool(config.get("ingest", "reread"))
    landed = landed_files_at(storage.path if at_path and not reread else None)
    return bytes_to_land(inputs, landed, config.get("hdfs", "webhdfs"))


def start_spark(config: Config, classic_for: str = "", inputs: list[str] | None = None, reread: bool = False):
    """The SparkSession for ``[spark]`` (an active one is reused: spark-submit, Databricks;
    ``spark.remote``/``$SPARK_REMOTE`` make it a Spark Connect session). storage.format =
    delta without Delta's jars is a `UsageError`, exit 2 (checked before a JVM starts when this
    process builds the session), and so is a Connect session for ``classic_for`` (`needs_classic`).
    ``inputs``: the dumps the command lands and nothing else (no live DLQ): a small total of
    what it will read of them (all with ``reread``) starts the JVM with C1 only
    (`dlq_pipeline.engine.session.quick_jit`)."""
    from dlq_pipeline.engine import s3a
    from dlq_pipeline.engine.session import (
        DELTA_FIX,
        delta_available,
        delta_missing,
        get_spark,
        is_connect,
        s3a_missing,
    )

    s = config.section("spark")
    on_s3 = check_s3(config, inputs)
    settings = {
        "master": s["master"],
        "remote": s["remote"],
        "app_name": s["app_name"],
        "spark_conf": s["conf"],
        "format": config.get("storage", "format"),
        "work_bytes": None if inputs is None else _landing_bytes(config, inputs, reread),
        "s3a": bool(on_s3),
        # a first run without a class archive leaves one for the next (docs/deploy.md)
        "archive_classes": True,
    }
    if on_s3 and s3a_missing(settings):
        _refuse_without_s3a(on_s3[0])
    spark = None if delta_missing(settings) else get_spark(settings)
    if spark is not None and is_connect(spark):  # the settings were checked before (check_target, live_source)
        require_classic(config, classic_for, "the session is a Spark Connect session")
    if settings["format"] == "delta" and (spark is None or not delta_available(spark)):
        raise UsageError(f"storage.format is delta, but Delta Lake is not on the Spark classpath: {DELTA_FIX}")
    if on_s3 and not s3a.available(spark):
        _refuse_without_s3a(on_s3[0])
    _check_default_fs(spark, config.get("storage", "path"))
    return spark


def _refuse_without_s3a(path: str) -> None:
    from dlq_pipeline.engine.s3a import FIX

    raise UsageError(f"{path} is on S3, but Hadoop's S3A connector is not on the Spark classpath: {FIX}")


def check_s3(config: Config, inputs: list[str] | None = None) -> list[str]:
    """The warehouse and ``inputs`` that are on S3; a `UsageError` (exit 2) naming the first
    whose bucket cannot be reached (no or wrong credentials, no such bucket, no endpoint),
    before Spark starts or anything is written."""
    from dlq_pipeline.engine.s3a import uses_s3
    from dlq_pipeline.fs import InputUnreachable

    on_s3 = [p for p in [config.get("storage", "path"), *(inputs or [])] if uses_s3([p])]
    for uri in on_s3:
        try:
            _reached(uri)
        except InputUnreachable as exc:
            raise UsageError(str(exc)) from None
    return on_s3


@functools.cache
def _reached(uri: str) -> None:
    """``uri``'s bucket probed once a command: `writing` asks before the lock, and each
    `start_spark` after it (the lease's and the command's own) asks again."""
    from dlq_pipeline.fs import probe

    probe(uri)


def _check_default_fs(spark, path: str) -> None:
    """A `UsageError` (exit 2) when a scheme-less storage.path would be on HDFS for Spark but
    local for the lock and the checkpoints (`dlq_pipeline.runtime.paths.default_fs_problem`)."""
    from urllib.parse import urlparse

    from dlq_pipeline.runtime.paths import default_fs_problem
    from dlq_pipeline.warehouse.storage import default_fs

    if urlparse(path).scheme:
        return
    found = default_fs(spark, path)
    problem = found and default_fs_problem(path, *found)
    if problem:
        raise UsageError(problem)


def open_tables(spark, config: Config):
    """The warehouse's tables (`Storage`) as ``[storage]`` describes them."""
    from dlq_pipeline.warehouse.storage import open_storage

    return open_storage(spark, StorageSettings.from_config(config))


def storage_with_tables(spark, config: Config):
    """`open_tables`; a `WarehouseMismatch` (exit 2) naming the warehouse when it holds no
    tables (a wrong --warehouse must not read as an empty DLQ): report, replay and settle."""
    storage = open_tables(spark, config)
    storage.require_tables()
    return storage


_OUT_OF_MEMORY = re.compile(r"java\.lang\.OutOfMemoryError(?::[ \t]*([^\r\n]*))?")


def out_of_memory(exc: BaseException | None) -> str | None:
    """The JVM's OutOfMemoryError line inside ``exc`` or the exceptions it came from (py4j
    puts the Java exception's text in its own), or None (pure)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        found = _OUT_OF_MEMORY.search(str(exc))
        if found:
            return found.group(0).strip()
        exc = exc.__cause__ or exc.__context__
    return None


def heap_advice(config: Config) -> str:
    """Which setting gives Spark more memory, and its value now (pure but for the machine's memory)."""
    from dlq_pipeline.engine.session import local_driver_memory

    conf = config.get("spark", "conf") or {}
    now = conf.get("spark.driver.memory") or f"{local_driver_memory()} by default"
    return (
        f'raise spark.driver.memory (now {now}), e.g. --set \'spark.conf={{"spark.driver.memory"="8g"}}\' '
        "or [spark] conf in the configuration; under spark-submit pass --driver-memory (and --executor-memory "
        "on a cluster). See docs/configuration.md"
    )


@contextlib.contextmanager
def failing_in_one_line(explain):
    """An exception ``explain`` (exception -> line or None) recognises ends the command with its
    one ``error:`` line (a `DlqPipelineError`, exit 1; the exception is its cause, in the
    traceback at debug level); any other goes on."""
    try:
        yield
    except _OneLine:
        raise
    except Exception as exc:
        line = explain(exc)
        if line is None:
            raise
        raise _OneLine(line) from exc


def spark_errors(config: Config):
    """Spark running out of memory ends a command with one ``error:`` line naming the setting to
    raise (exit 1) instead of py4j tracebacks."""

    def explain(exc: Exception) -> str | None:
        what = out_of_memory(exc)
        return None if what is None else f"Spark ran out of memory ({what}): {heap_advice(config)}"

    return failing_in_one_line(explain)


@contextlib.contextmanager
def writing(config: Config, command: str, run_id: str = "", inputs: list[str] | None = None):
    """Hold the warehouse's writer lock (`dlq_pipeline.warehouse.locks`) for the rest of a command.
    Taken before Spark starts: a command refused touches nothing. A Delta warehouse is also
    (or, off a file system, only) guarded by its writer lease (`dlq_pipeline.warehouse.lease`),
    claimed as soon as Spark has started, before any table is touched. Another holder: exit 1
    naming it; a warehouse that cannot be locked (Parquet, storage.lock true, storage.path not
    a file system path) or a local warehouse that cannot be made or written (a file, say):
    exit 2. The lease lost while the command runs: exit 1, one line. Spark running out of
    memory in the command: `spark_errors`. ``inputs``: the dumps the command reads, as its
    own `start_spark` is told (the lease starts the session first)."""
    from dlq_pipeline.runtime.paths import PathError, local_dir
    from dlq_pipeline.runtime.permissions import directory_problem
    from dlq_pipeline.warehouse.locks import writer_lock

    storage = StorageSettings.from_config(config)
    try:
        problem = directory_problem(local_dir(storage.path))
    except PathError:
        problem = None  # not a file system path: the lock (or the table format) says what it needs
    if problem:
        raise UsageError(f"the warehouse storage.path {storage.path!r} cannot be used: {problem}")
    lock = writer_lock(storage, command=command, run_id=run_id)  # LockUnavailable: exit 2
    check_s3(config, inputs)  # the buckets reached, before the lock file is written
    lock.__enter__()  # LockHeld: exit 1 naming the holder
    try:
        with spark_errors(config), _leased(config, storage, command, run_id, inputs):
            yield
    finally:
        lock.__exit__(None, None, None)


@contextlib.contextmanager
def _leased(config: Config, storage: StorageSettings, command: str, run_id: str, inputs: list[str] | None):
    """The Delta writer lease for the block (nothing for Parquet): exit 1 naming the holder
    when another writer keeps it, or with one line when this one loses it meanwhile."""
    if storage.format != "delta":
        yield
        return
    from dlq_pipeline.warehouse.lease import lost_message, writer_lease

    spark = start_spark(config, inputs=inputs)  # the command's own start_spark gets this session back
    lease = writer_lease(spark, storage, command=command, run_id=run_id)
    lease.__enter__()  # LeaseHeld: exit 1 naming the holder
    with contextlib.ExitStack() as release:
        release.push(lease)
        with failing_in_one_line(lost_message):
            yield
