"""Pipeline subcommands: ingest, classify, run, report, demo.

Everything is validated (configuration, rules table) before a SparkSession is started or a
file is touched; problems exit with status 2 and list every error.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import re
import sys
import time
from pathlib import Path

import click

from dlq_pipeline import exitcodes
from dlq_pipeline.cli.generate import Size
from dlq_pipeline.config import Config, ConfigError, load_config

log = logging.getLogger(__name__)


def _err(message: str) -> None:
    click.echo(message, err=True)


def config_options(command):
    """--config/--profile/--warehouse/--format, shared by every stage."""

    @click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
                  help="Configuration file (TOML, see docs/configuration.md).")
    @click.option("--profile", default=None, help="Profile in the configuration file (local, cluster, databricks, ...).")
    @click.option("--warehouse", default=None, help="Warehouse path (overrides storage.path).")
    @click.option("--format", "storage_format", type=click.Choice(["parquet", "delta"]), default=None,
                  help="Table format (overrides storage.format).")
    @click.option("--set", "settings", multiple=True, metavar="SECTION.KEY=VALUE",
                  help="Override any option, e.g. --set storage.catalog=main --set replay.batch_size=50 "
                       "(VALUE is read as TOML, else as a string; repeatable).")
    @functools.wraps(command)
    def wrapper(*args, config_path, profile, warehouse, storage_format, settings, **kwargs):
        from dlq_pipeline import logs

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
        for section, values in kwargs.pop("_overrides", {}).items():
            overrides.setdefault(section, {}).update(values)
        try:
            config = load_config(config_path, profile=profile, overrides=overrides)
        except ConfigError as exc:
            problems += exc.problems
        if problems:
            for problem in problems:
                _err(f"error: {problem}")
            sys.exit(exitcodes.USAGE)
        logs.apply_config(config)
        return command(*args, config=config, **kwargs)

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


def load_valid_rules(path: str, *, strict: bool = False):
    """The parsed table, or exit 2 after listing every diagnostic."""
    from dlq_pipeline.rules.parser import load_rules

    table = load_rules(path)
    for diagnostic in table.diagnostics:
        _err(str(diagnostic))
    if not table.ok or (strict and table.warnings):
        _err(f"{path}: rules table is invalid ({len(table.errors)} errors); nothing was touched")
        sys.exit(exitcodes.USAGE)
    return table


def _spark(config: Config):
    """The session for a command; storage.format = delta without Delta's jars is exit 2
    (checked before a JVM starts when this process builds the session)."""
    from dlq_pipeline.spark.session import DELTA_FIX, delta_available, delta_missing, get_spark

    s = config.section("spark")
    settings = {"master": s["master"], "app_name": s["app_name"], "spark_conf": s["conf"],
                "format": config.get("storage", "format")}
    spark = None if delta_missing(settings) else get_spark(settings)
    if settings["format"] == "delta" and (spark is None or not delta_available(spark)):
        _err(f"error: storage.format is delta, but Delta Lake is not on the Spark classpath: {DELTA_FIX}")
        sys.exit(exitcodes.USAGE)
    return spark


_OUT_OF_MEMORY = re.compile(r"java\.lang\.OutOfMemoryError(?::[ \t]*([^\r\n]*))?")


def out_of_memory(exc: BaseException) -> str | None:
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
    from dlq_pipeline.spark.session import local_driver_memory

    conf = config.get("spark", "conf") or {}
    now = conf.get("spark.driver.memory") or f"{local_driver_memory()} by default"
    return (f"raise spark.driver.memory (now {now}), e.g. --set 'spark.conf={{\"spark.driver.memory\"=\"8g\"}}' "
            "or [spark] conf in the configuration; under spark-submit pass --driver-memory (and --executor-memory "
            "on a cluster). See docs/configuration.md")


@contextlib.contextmanager
def spark_errors(config: Config):
    """Spark running out of memory ends a command with one ``error:`` line naming the setting to
    raise (exit 1) instead of py4j tracebacks."""
    try:
        yield
    except Exception as exc:
        what = out_of_memory(exc)
        if what is None:
            raise
        log.debug("out of memory", exc_info=True)
        _err(f"error: Spark ran out of memory ({what}): {heap_advice(config)}")
        sys.exit(exitcodes.FAILURE)


@contextlib.contextmanager
def writing(config: Config, command: str, run_id: str = ""):
    """Hold the warehouse's writer lock (`dlq_pipeline.locks`) for the rest of a command.
    Taken before Spark starts: a command refused touches nothing. Another holder: exit 1
    naming it; a warehouse that cannot be locked (storage.lock true, storage.path not a file
    system path) or a local warehouse that cannot be made or written (a file, say): exit 2.
    Spark running out of memory in the command: `spark_errors`."""
    from dlq_pipeline.locks import LockHeld, LockUnavailable, writer_lock
    from dlq_pipeline.paths import PathError, local_path
    from dlq_pipeline.private import directory_problem

    path = config.get("storage", "path")
    try:
        problem = directory_problem(Path(local_path(path)).absolute())
    except PathError:
        problem = None  # not a file system path: the lock (or the table format) says what it needs
    if problem:
        _err(f"error: the warehouse storage.path {path!r} cannot be used: {problem}")
        sys.exit(exitcodes.USAGE)
    try:
        lock = writer_lock(config, command=command, run_id=run_id)
    except LockUnavailable as exc:
        _err(f"error: {exc}")
        sys.exit(exitcodes.USAGE)
    try:
        lock.__enter__()
    except LockHeld as exc:
        _err(f"error: {exc}")
        sys.exit(exitcodes.FAILURE)
    try:
        with spark_errors(config):
            yield
    finally:
        lock.__exit__(None, None, None)


def _stage_event(stage: str, run_id: str, started: float, counts: dict) -> None:
    """One structured log line when a stage run on its own finishes (JSON with log.format = json)."""
    seconds = round(time.monotonic() - started, 3)
    log.info("%s finished in %.3f s", stage, seconds,
             extra={"event": "stage_finished", "stage": stage, "run_id": run_id, "duration_s": seconds, **counts})


def _echo_json(obj) -> None:
    click.echo(json.dumps(obj, sort_keys=True, default=str))


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@config_options
def ingest_cmd(paths, as_json, config: Config):
    """Land dmpmqmsg dumps and amqsbcg listings into the `messages` table.

    \b
    Directories are searched for files; a large dump is split across tasks on message
    boundaries. Unreadable records go to `quarantine`; landing the same dump twice adds
    nothing.
      dlq-pipeline ingest dumps/ --warehouse ./warehouse
    """
    from dlq_pipeline.spark.ingest import ingest
    from dlq_pipeline.identity import new_run_id
    from dlq_pipeline.spark.storage import storage_from_config
    from dlq_pipeline.clock import utc_now

    run_id = config.get("pipeline", "run_id") or new_run_id(utc_now())
    started = time.monotonic()
    with writing(config, "ingest", run_id):
        spark = _spark(config)
        result = ingest(spark, storage_from_config(spark, config), list(paths), run_id=run_id, config=config,
                        progress=None if as_json else _err)
    doc = {"run_id": run_id, **result.as_dict()}
    _stage_event("ingest", run_id, started, result.as_dict())
    if as_json:
        _echo_json(doc)
    else:
        click.echo(f"landed {result.messages_landed} messages from {result.files} files "
                   f"({result.duplicates_skipped} already landed, {result.quarantined} quarantined)")
    sys.exit(exitcodes.ATTENTION if result.quarantined else exitcodes.OK)


@click.command("classify")
@click.option("--rules", "rules_path", required=False, metavar="FILE", help="Rules table (default: pipeline.rules).")
@click.option("--json", "as_json", is_flag=True, help="Print counts per action as JSON.")
@config_options
def classify_cmd(rules_path, as_json, config: Config):
    """Decide every pending message with the rules table; append to `decisions`.

    \b
    Attempt counts come from the ledger, so RETRY counts survive restarts:
      dlq-pipeline classify --rules my.rules --warehouse ./warehouse
    """
    from pyspark.sql import functions as F

    from dlq_pipeline.spark.classify import decide_pending
    from dlq_pipeline.identity import new_run_id
    from dlq_pipeline.spark.storage import storage_from_config
    from dlq_pipeline.clock import utc_now

    table = load_valid_rules(rules_path or _required(config, "rules"))
    now = utc_now()
    run_id = config.get("pipeline", "run_id") or new_run_id(now)
    started = time.monotonic()
    with writing(config, "classify", run_id):
        spark = _spark(config)
        decisions = decide_pending(spark, storage_from_config(spark, config), table, run_id=run_id, now=now,
                           retry_interval=config.get("classify", "retry_interval"))
        counts = {r["action"]: r["n"] for r in decisions.groupBy("action").agg(F.count("*").alias("n")).collect()}
    _stage_event("classify", run_id, started, {"decisions": counts})
    if as_json:
        _echo_json({"run_id": run_id, "decisions": counts})
    else:
        click.echo(f"run {run_id}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


def _required(config: Config, key: str) -> str:
    value = config.get("pipeline", key)
    if not value:
        _err(f"error: no {key} given (use --{key} or pipeline.{key} in the configuration)")
        sys.exit(exitcodes.USAGE)
    return value


@click.command("run")
@click.option("--input", "inputs", multiple=True, type=click.Path(exists=True),
              help="Dump file or directory to ingest (repeatable; default: pipeline.inputs).")
@click.option("--rules", "rules_path", metavar="FILE", help="Rules table (default: pipeline.rules).")
@click.option("--target", help="dry-run | dir:PATH | sim:[NAME] | mq:QMGR (default: pipeline.target).")
@click.option("--run-id", help="Run identifier (default: generated).")
@click.option("--source", help="Live DLQ mq:QMGR | sim:NAME: drained first, settled last (default: drain.source).")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON (last line).")
@config_options
def run_cmd(inputs, rules_path, target, run_id, source, as_json, config: Config):
    """Ingest, decode, classify, replay and summarise in one run.

    \b
    Examples:
      dlq-pipeline run --input dlq.dmp --rules my.rules --warehouse ./warehouse --target dry-run
      dlq-pipeline run --input dumps/ --rules my.rules --target dir:./replay-out --json
      dlq-pipeline run --config conf/dlq-pipeline.toml --profile cluster --target mq:QM1
      dlq-pipeline run --source mq:QM1 --rules my.rules --target mq:QM1 --config prod.toml
    \b
    Exit status: 0 all processed, 3 something needs attention (quarantined records,
    messages without a header or matching rule, failed or deferred puts), 1 failure,
    2 bad usage, configuration or rules table (nothing touched).
    """
    from dlq_pipeline.identity import new_run_id
    from dlq_pipeline.spark.run import run_pipeline
    from dlq_pipeline.clock import utc_now

    table = load_valid_rules(rules_path or _required(config, "rules"))
    target = target or config.get("pipeline", "target")
    _check_target(target, config)
    inputs = list(inputs) or list(config.get("pipeline", "inputs"))
    source = source or config.get("drain", "source") or None
    _check_source(source, config, table)
    now = utc_now()
    run_id = run_id or config.get("pipeline", "run_id") or new_run_id(now)
    with writing(config, "run", run_id):
        spark = _spark(config)
        summary = run_pipeline(spark, config, table, inputs=inputs, target=target, run_id=run_id, now=now,
                               progress=_progress(), source=source)
    if as_json:
        _echo_json(summary.as_dict())
    else:
        _print_summary(summary)
    sys.exit(summary.exit_status)


def _progress():
    """Where progress lines go: stderr, also under --json (stdout stays the result); with JSON
    log lines, nowhere: the log's stage events carry it, one JSON object per line."""
    from dlq_pipeline import logs

    return None if logs.json_lines() else _err


def _check_target(target: str, config: Config) -> None:
    """The replay target must be usable before anything is touched (exit 2, one line each):
    its spec, the warehouse path replay keeps checkpoints in, a ``dir:`` directory that can
    be made and written, for ``mq:`` its [mq.qmgrs.X] table, the MQ client and the secrets."""
    from dlq_pipeline.mq.client import MQClientMissing
    from dlq_pipeline.replay.targets import TargetError, local_warehouse, open_target, parse_target

    try:
        parse_target(target)
    except TargetError as exc:
        _err(f"error: bad --target '{target}': {exc}")
        sys.exit(exitcodes.USAGE)
    try:
        warehouse = local_warehouse(config.get("storage", "path"))
        open_target(target, warehouse=warehouse, config=config).preflight()
    except (TargetError, MQClientMissing) as exc:
        _err(f"error: {exc}")
        sys.exit(exitcodes.USAGE)
    except ConfigError as exc:
        for problem in exc.problems:
            _err(f"error: {problem}")
        sys.exit(exitcodes.USAGE)


def _check_source(source, config: Config, table) -> None:
    """A live source must resolve (queue manager named, [mq.qmgrs.X] present) before Spark starts."""
    if not source:
        return
    from dlq_pipeline.live import live_queue
    from dlq_pipeline.replay.targets import TargetError

    try:
        live_queue(source, warehouse=config.get("storage", "path"), config=config, queue=config.get("drain", "queue"),
                   qmgr=config.get("drain", "qmgr"), control=table.control)
    except TargetError as exc:
        _err(f"error: {exc}")
        sys.exit(exitcodes.USAGE)


def _print_summary(summary) -> None:
    click.echo(f"run {summary.run_id} -> {summary.target}")
    click.echo(f"  landed {summary.messages_landed} new messages from {summary.files} files "
               f"({summary.duplicates_skipped} already landed, {summary.quarantined} quarantined)")
    click.echo(f"  pending {summary.pending}: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.decisions.items())))
    if summary.ignore_reasons:
        click.echo("  ignored because: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.ignore_reasons.items())))
    click.echo("  outcomes: " + (", ".join(f"{k} {v}" for k, v in sorted(summary.outcomes.items())) or "none"))
    if getattr(summary, "source", ""):
        click.echo(f"  drained {summary.source}: {summary.drain}")
        click.echo(f"  settled: {summary.settle}")
    status = {0: "done", 3: "done, needs attention"}.get(summary.exit_status, str(summary.exit_status))
    click.echo(f"  status: {status}")


@click.command("report")
@click.option("--run-id", help="Run to report on (default: the latest).")
@click.option("--rules", "rules_path", metavar="FILE",
              help="Rules table the run used, for the rule text beside each rule line "
                   "(default: the one in the run's summary).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write a self-contained HTML page (charts work offline).")
@click.option("--as-of", "as_of", metavar="RUN_ID|TIMESTAMP",
              help="Delta only: the tables as they were at the end of that run, or at that instant (ISO 8601, UTC "
                   "unless it says otherwise).")
@config_options
def report_cmd(run_id, rules_path, as_json, html_path, as_of, config: Config):
    """What happened, since when, and what to do: advice with its evidence, arrivals over
    time with bursts flagged, counts by reason, destination, sender, rule and outcome.

    \b
      dlq-pipeline report --warehouse ./warehouse
      dlq-pipeline report --warehouse ./warehouse --html dlq-report.html
      dlq-pipeline report --warehouse ./warehouse --json | jq '.advice[] | .title'
      dlq-pipeline report --format delta --as-of 20261123T170500Z-1a2b3c   # time travel
    A warehouse without tables (a wrong path) is exit 2.
    """
    from dlq_pipeline.spark.storage import StorageError

    if as_of and config.get("storage", "format") != "delta":
        _err("error: --as-of needs storage.format = \"delta\": Parquet tables keep no history")
        sys.exit(exitcodes.USAGE)
    table = load_valid_rules(rules_path) if rules_path else None
    with spark_errors(config):
        storage = storage_with_tables(_spark(config), config)
        if as_of:
            try:
                storage = storage.as_of(as_of)
            except StorageError as exc:
                _err(f"error: {exc}")
                sys.exit(exitcodes.USAGE)
            run_id = run_id or (as_of if storage.as_of_time and not _is_instant(as_of) else None)
        report = _build_and_write_report(storage, config, run_id=run_id, table=table,
                                         html_path=html_path or config.get("report", "html") or None)
    if as_json:
        _echo_json(report)
    else:
        from dlq_pipeline.report_render import render_text

        click.echo(render_text(report), nl=False)
        if html_path:
            click.echo(f"HTML report: {html_path}")


def _is_instant(text: str) -> bool:
    from dlq_pipeline.spark.storage import parse_instant

    return parse_instant(text) is not None


def storage_with_tables(spark, config: Config):
    """The configured storage; exit 2 naming the warehouse when it holds no tables (a wrong
    --warehouse must not read as an empty DLQ): report, replay and settle."""
    from dlq_pipeline.spark.storage import StorageError, storage_from_config

    storage = storage_from_config(spark, config)
    try:
        storage.require_tables()
    except StorageError as exc:
        _err(f"error: {exc}")
        sys.exit(exitcodes.USAGE)
    return storage


def _build_and_write_report(storage, config: Config, *, run_id=None, html_path=None, table=None) -> dict:
    from dlq_pipeline.report_render import render_html
    from dlq_pipeline.rules.parser import rules_listing
    from dlq_pipeline.spark.report import build_report
    from dlq_pipeline.clock import utc_now

    # as of a past instant, pending messages age up to that instant, not to now
    report = build_report(storage, now=storage.as_of_time or utc_now(), run_id=run_id, top=config.get("report", "top"),
                          rules=rules_listing(table) if table is not None else None,
                          rules_file=table.path if table is not None else None)
    if html_path:
        from dlq_pipeline.private import open_private

        with open_private(html_path, "w", encoding="utf-8") as f:
            f.write(render_html(report))
    return report


@click.command("demo")
@click.option("--out", default="demo-out", show_default=True, type=click.Path(file_okay=False),
              help="Where the generated dumps, the warehouse and the HTML report go.")
@click.option("--count", default=20000, show_default=True, help="Messages to generate.")
@click.option("--seed", default=42, show_default=True, help="Generator seed (same seed, same DLQ).")
@click.option("--files", default=4, show_default=True, help="Dump files to spread the messages over.")
@click.option("--max-size", type=Size(), default="256K", show_default=True,
              help="Largest generated message in bytes, K or M suffix allowed (sizes are long-tailed up to this).")
@click.option("--rules", "rules_path", type=click.Path(exists=True, dir_okay=False), metavar="FILE",
              help="Rules table (default: the shipped starter table, `dlq-pipeline rules example starter`).")
@click.option("--target", default="sim:DEMO", show_default=True,
              help="Replay target: the simulated queue manager, dry-run or dir:PATH.")
@click.option("--master", default="local[*]", show_default=True, help="Spark master.")
def demo_cmd(out, count, seed, files, max_size, rules_path, target, master):
    """Generate a realistic DLQ and run the whole pipeline on it, locally.

    \b
    Messages from z/OS (EBCDIC, big-endian), AIX and Linux/Windows queue managers, with
    the common reason codes, are written as dmpmqmsg dumps, landed, decoded, classified
    with the starter rules table, replayed into a simulated queue manager, and reported.
    Runs offline; re-running with the same --out changes nothing that should not change.
    """
    from dlq_pipeline.dumps.generator import write_generated
    from dlq_pipeline.spark.run import run_pipeline
    from dlq_pipeline.report_render import render_text

    out_dir = Path(out)
    if rules_path is None:
        from dlq_pipeline.rules.shipped import STARTER, shipped_path

        rules_path = str(shipped_path(STARTER))
    if not Path(rules_path).is_file():
        _err(f"error: no rules table at {rules_path}; pass --rules FILE")
        sys.exit(exitcodes.USAGE)
    table = load_valid_rules(rules_path)
    config = load_config(None, overrides={"storage": {"path": str(out_dir / "warehouse")},
                                          "spark": {"master": master}})
    _check_target(target, config)
    with writing(config, "demo"):
        _err(f"generating {count} messages (seed {seed}) into {out_dir / 'dumps'}")
        paths = write_generated(out_dir / "dumps", count, seed, files=files, max_size=max_size)
        if target.startswith("sim:"):
            _prepare_demo_sim(out_dir / "warehouse", target)
        spark = _spark(config)
        summary = run_pipeline(spark, config, table, inputs=[str(p) for p in paths], target=target,
                               progress=lambda m: _err(m))
        from dlq_pipeline.spark.storage import storage_from_config

        html_path = out_dir / "report.html"
        report = _build_and_write_report(storage_from_config(spark, config), config, run_id=summary.run_id,
                                         html_path=html_path)
    click.echo(render_text(report), nl=False)
    _print_summary(summary)
    click.echo(f"HTML report: {html_path}")
    click.echo(f"warehouse:   {out_dir / 'warehouse'}")


def _prepare_demo_sim(warehouse: Path, target: str) -> None:
    """The demo's simulated queue manager stands for a whole MQ network: RETRY puts go to
    the queue managers named in the dead-letter headers, so it accepts any remote name."""
    from dlq_pipeline.mq.sim import SimQueueManager
    from dlq_pipeline.replay.targets import open_target

    sim = open_target(target, warehouse=warehouse)
    SimQueueManager(sim.location, sim.name).configure({"remote_qmgrs": ["*"]})


PIPELINE_COMMANDS = [ingest_cmd, classify_cmd, run_cmd, report_cmd, demo_cmd]
