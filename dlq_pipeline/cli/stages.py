"""Pipeline subcommands: ingest, classify, run, report, demo.

Everything is validated (configuration, rules table) before a SparkSession is started or a
file is touched; problems are a `UsageError` (exit 2) listing every error.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from dlq_pipeline import exitcodes
from dlq_pipeline.cli.common import (
    INPUT,
    Command,
    check_target,
    config_options,
    echo_json,
    err,
    live_source,
    load_valid_rules,
    needs_classic,
    open_tables,
    run_id_for,
    spark_errors,
    staged,
    start_spark,
    storage_with_tables,
    writing,
)
from dlq_pipeline.cli.generate import Size
from dlq_pipeline.config import Config
from dlq_pipeline.config.settings import ClassifySettings, IngestSettings, ReplaySettings, ReportSettings, RunSettings
from dlq_pipeline.errors import UsageError
from dlq_pipeline.runtime.progress import stage, to_stderr

_REREAD = click.option(
    "--reread",
    is_flag=True,
    help="Read every input file again, also those landed before and unchanged (ingest.reread).",
)


def _ingest_settings(config: Config, reread: bool) -> IngestSettings:
    settings = IngestSettings.from_config(config)
    return dataclasses.replace(settings, reread=True) if reread else settings


def _input_line(inputs: dict) -> str:
    """What ingest did with the input files, for the result line (empty when it listed none)."""
    from dlq_pipeline.report.render import input_files_line

    line = input_files_line(inputs)
    return f"  files: {line}" if line else ""


@click.command("ingest", cls=Command)
@click.argument("paths", nargs=-1, required=True, type=INPUT)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@_REREAD
@config_options
def ingest_cmd(paths, as_json, reread, config: Config):
    """Land dmpmqmsg dumps and amqsbcg listings into the `messages` table.

    \b
    Directories are searched for files; a large dump is split across tasks on message
    boundaries. Unreadable records go to `quarantine`; landing the same dump twice adds
    nothing, and a file landed before and unchanged is not read again (--reread reads it).
      dlq-pipeline ingest dumps/ --warehouse ./warehouse
    """
    from dlq_pipeline.ingest.spark import ingest

    run_id = run_id_for(config)
    progress = to_stderr()  # also under --json: stdout is the result
    with writing(config, "ingest", run_id, inputs=list(paths)):
        spark = start_spark(config, inputs=list(paths), reread=reread)
        result = staged(
            progress,
            "ingest",
            run_id,
            lambda: ingest(
                spark,
                open_tables(spark, config),
                list(paths),
                run_id=run_id,
                settings=_ingest_settings(config, reread),
                progress=progress,
            ),
        )
    doc = {"run_id": run_id, **result.as_dict()}
    if as_json:
        echo_json(doc)
    else:
        click.echo(
            f"landed {result.messages_landed} messages from {result.files} files "
            f"({result.duplicates_skipped} already landed, {result.quarantined} quarantined)"
        )
        if line := _input_line(doc["inputs"]):
            click.echo(line)
    needs_look = result.quarantined or result.inputs.unreadable
    return exitcodes.ATTENTION if needs_look else exitcodes.OK


@click.command("classify", cls=Command)
@click.option("--rules", "rules_path", required=False, metavar="FILE", help="Rules table (default: pipeline.rules).")
@click.option("--json", "as_json", is_flag=True, help="Print counts per action as JSON.")
@config_options
def classify_cmd(rules_path, as_json, config: Config):
    """Decide every pending message with the rules table; append to `decisions`.

    \b
    Attempt counts come from the ledger, so RETRY counts survive restarts:
      dlq-pipeline classify --rules my.rules --warehouse ./warehouse
    """
    from dlq_pipeline.classify.spark import decide_pending
    from dlq_pipeline.runtime.clock import utc_now

    table = load_valid_rules(rules_path or _required(config, "rules"))
    now = utc_now()
    run_id = run_id_for(config, now=now)
    progress = to_stderr()
    with writing(config, "classify", run_id):
        spark = start_spark(config)
        with stage(progress, "classify", run_id=run_id) as event:
            decisions, counted = decide_pending(
                spark,
                open_tables(spark, config),
                table,
                run_id=run_id,
                now=now,
                retry_interval=ClassifySettings.from_config(config).retry_interval,
                progress=progress,
            )
            decisions.unpersist()  # decide_pending hands them back persisted
            counts = counted.actions
            event["decisions"] = counts
    if as_json:
        echo_json({"run_id": run_id, "decisions": counts})
    else:
        click.echo(f"run {run_id}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


def _required(config: Config, key: str) -> str:
    value = config.get("pipeline", key)
    if not value:
        raise UsageError(f"no {key} given (use --{key} or pipeline.{key} in the configuration)")
    return value


@click.command("run", cls=Command)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    type=INPUT,
    help="Dump file or directory to ingest (repeatable; default: pipeline.inputs).",
)
@click.option("--rules", "rules_path", metavar="FILE", help="Rules table (default: pipeline.rules).")
@click.option("--target", help="dry-run | dir:PATH | sim:[NAME] | mq:QMGR (default: pipeline.target).")
@click.option("--run-id", help="Run identifier (default: generated).")
@click.option("--source", help="Live DLQ mq:QMGR | sim:NAME: drained first, settled last (default: pipeline.source).")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON (last line).")
@_REREAD
@config_options
def run_cmd(inputs, rules_path, target, run_id, source, as_json, reread, config: Config):
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
    from dlq_pipeline.pipeline import run_pipeline
    from dlq_pipeline.runtime.clock import utc_now

    table = load_valid_rules(rules_path or _required(config, "rules"))
    target = target or config.get("pipeline", "target")
    check_target(target, config)
    inputs = list(inputs) or list(config.get("pipeline", "inputs"))
    source = source or config.get("pipeline", "source") or None
    if source:
        live_source(config, source, table)  # exit 2 now rather than after ingest
    now = utc_now()
    run_id = run_id_for(config, run_id, now)
    read = None if source else inputs
    with writing(config, "run", run_id, inputs=read):
        spark = start_spark(config, needs_classic(target, source), inputs=read, reread=reread)
        settings = RunSettings.from_config(config)
        if reread:
            settings = dataclasses.replace(settings, ingest=_ingest_settings(config, reread))
        summary = run_pipeline(
            spark,
            settings,
            table,
            inputs=inputs,
            target=target,
            run_id=run_id,
            now=now,
            progress=to_stderr(),
            source=source,
        )
    if as_json:
        echo_json(summary.as_dict())
    else:
        _print_summary(summary)
    return summary.exit_status


def _print_summary(summary) -> None:
    click.echo(f"run {summary.run_id} -> {summary.target}")
    click.echo(
        f"  landed {summary.messages_landed} new messages from {summary.files} files "
        f"({summary.duplicates_skipped} already landed, {summary.quarantined} quarantined)"
    )
    if line := _input_line(summary.input_files):
        click.echo(line)
    click.echo(f"  pending {summary.pending}: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.decisions.items())))
    if summary.ignore_reasons:
        click.echo("  ignored because: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.ignore_reasons.items())))
    click.echo("  outcomes: " + (", ".join(f"{k} {v}" for k, v in sorted(summary.outcomes.items())) or "none"))
    if getattr(summary, "source", ""):
        click.echo(f"  drained {summary.source}: {summary.drain}")
        click.echo(f"  settled: {summary.settle}")
    status = {0: "done", 3: "done, needs attention"}.get(summary.exit_status, str(summary.exit_status))
    click.echo(f"  status: {status}")


@click.command("report", cls=Command)
@click.option("--run-id", help="Run to report on (default: the latest).")
@click.option(
    "--rules",
    "rules_path",
    metavar="FILE",
    help="Rules table the run used, for the rule text beside each rule line (default: the one in the run's summary).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Also write a self-contained HTML page (charts work offline).",
)
@click.option(
    "--as-of",
    "as_of",
    metavar="RUN_ID|TIMESTAMP",
    help="Delta only: the tables as they were at the end of that run, or at that instant (ISO 8601, UTC "
    "unless it says otherwise).",
)
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

    if as_of and config.get("storage", "format") != "delta":
        raise UsageError('--as-of needs storage.format = "delta": Parquet tables keep no history')
    table = load_valid_rules(rules_path) if rules_path else None
    settings = ReportSettings.from_config(config)
    with spark_errors(config):
        storage = storage_with_tables(start_spark(config), config)
        if as_of:
            storage = storage.as_of(as_of)
            run_id = run_id or (as_of if storage.as_of_time and not _is_instant(as_of) else None)
        report = _build_and_write_report(
            storage, settings, run_id=run_id, table=table, html_path=html_path or settings.html or None
        )
    if as_json:
        echo_json(report)
    else:
        from dlq_pipeline.report.render import render_text

        click.echo(render_text(report), nl=False)
        if html_path:
            click.echo(f"HTML report: {html_path}")


def _is_instant(text: str) -> bool:
    from dlq_pipeline.warehouse.storage import parse_instant

    return parse_instant(text) is not None


def _build_and_write_report(storage, settings: ReportSettings, *, run_id=None, html_path=None, table=None) -> dict:
    from dlq_pipeline.report.render import render_html
    from dlq_pipeline.report.spark import build_report
    from dlq_pipeline.rules.printer import rules_listing
    from dlq_pipeline.runtime.clock import utc_now

    # as of a past instant, pending messages age up to that instant, not to now
    report = build_report(
        storage,
        now=storage.as_of_time or utc_now(),
        run_id=run_id,
        top=settings.top,
        rules=rules_listing(table) if table is not None else None,
        rules_file=table.path if table is not None else None,
    )
    if html_path:
        from dlq_pipeline.runtime.permissions import open_private

        with open_private(html_path, "w", encoding="utf-8") as f:
            f.write(render_html(report))
    return report


@click.command("demo", cls=Command)
@click.option(
    "--out",
    default="demo-out",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where the generated dumps, the warehouse and the HTML report go.",
)
@click.option("--count", default=20000, show_default=True, help="Messages to generate.")
@click.option("--seed", default=42, show_default=True, help="Generator seed (same seed, same DLQ).")
@click.option("--files", default=4, show_default=True, help="Dump files to spread the messages over.")
@click.option(
    "--max-size",
    type=Size(),
    default="256K",
    show_default=True,
    help="Largest generated message in bytes, K or M suffix allowed (sizes are long-tailed up to this).",
)
@click.option(
    "--rules",
    "rules_path",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help="Rules table (default: the shipped starter table, `dlq-pipeline rules example starter`).",
)
@click.option(
    "--target",
    default="sim:DEMO",
    show_default=True,
    help="Replay target: the simulated queue manager, dry-run or dir:PATH.",
)
@config_options
def demo_cmd(config, out, count, seed, files, max_size, rules_path, target):
    """Generate a realistic DLQ and run the whole pipeline on it, locally.

    \b
    Messages from z/OS (EBCDIC, big-endian), AIX and Linux/Windows queue managers, with
    the common reason codes, are written as dmpmqmsg dumps, landed, decoded, classified
    with the starter rules table, replayed into a simulated queue manager, and reported.
    Runs offline; re-running with the same --out changes nothing that should not change.
    The warehouse is OUT/warehouse unless the configuration names one (storage.path,
    --warehouse); --config, --profile and --set work as for every command.
    """
    from dlq_pipeline.dumps.generator import write_generated
    from dlq_pipeline.pipeline import run_pipeline
    from dlq_pipeline.report.render import render_text

    out_dir = Path(out)
    if rules_path is None:
        from dlq_pipeline.rules.shipped import STARTER, shipped_path

        rules_path = str(shipped_path(STARTER))
    if not Path(rules_path).is_file():
        raise UsageError(f"no rules table at {rules_path}; pass --rules FILE")
    table = load_valid_rules(rules_path)
    if not config.is_given("storage", "path"):
        values = {section: dict(keys) for section, keys in config.values.items()}
        values["storage"]["path"] = str(out_dir / "warehouse")
        config = dataclasses.replace(config, values=values)
    warehouse = Path(config.get("storage", "path"))
    check_target(target, config)
    with writing(config, "demo"):
        err(f"generating {count} messages (seed {seed}) into {out_dir / 'dumps'}")
        paths = write_generated(out_dir / "dumps", count, seed, files=files, max_size=max_size)
        if target.startswith("sim:"):
            _prepare_demo_sim(warehouse, target, ReplaySettings.from_config(config).sim_dir)
        spark = start_spark(config)
        summary = run_pipeline(
            spark,
            RunSettings.from_config(config),
            table,
            inputs=[str(p) for p in paths],
            target=target,
            progress=to_stderr(),
        )
        html_path = out_dir / "report.html"
        report = _build_and_write_report(
            open_tables(spark, config), ReportSettings.from_config(config), run_id=summary.run_id, html_path=html_path
        )
    click.echo(render_text(report), nl=False)
    _print_summary(summary)
    click.echo(f"HTML report: {html_path}")
    click.echo(f"warehouse:   {warehouse}")


def _prepare_demo_sim(warehouse: Path, target: str, sim_dir: str) -> None:
    """The demo's simulated queue manager stands for a whole MQ network: RETRY puts go to
    the queue managers named in the dead-letter headers, so it accepts any remote name."""
    from dlq_pipeline.mq.sim import SimQueueManager
    from dlq_pipeline.replay.targets import open_target

    sim = open_target(target, warehouse=warehouse, sim_dir=sim_dir)
    SimQueueManager(sim.location, sim.name).configure({"remote_qmgrs": ["*"]})


PIPELINE_COMMANDS = [ingest_cmd, classify_cmd, run_cmd, report_cmd, demo_cmd]
