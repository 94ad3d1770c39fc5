"""Live-queue and replay subcommands: drain, settle, replay.

Sources, queues and targets are checked before Spark starts (exit 2); a queue held by
another drain or settle, an MQ failure or a failed write exit 1 with what happened to the
messages (nothing is lost either way).
"""

from __future__ import annotations

import click

from dlq_pipeline import exitcodes
from dlq_pipeline.cli.common import (
    Command,
    check_target,
    config_options,
    echo_json,
    live_source,
    load_valid_rules,
    needs_classic,
    open_tables,
    run_id_for,
    staged,
    start_spark,
    storage_with_tables,
    writing,
)
from dlq_pipeline.config import Config
from dlq_pipeline.config.options import DRAIN_MODES
from dlq_pipeline.config.settings import DrainSettings, ReplaySettings, mq_qmgrs
from dlq_pipeline.errors import UsageError
from dlq_pipeline.runtime.progress import stage, to_stderr
from dlq_pipeline.tables import ATTENTION_OUTCOMES


def _source_options(command):
    command = click.option(
        "--rules",
        "rules_path",
        metavar="FILE",
        help="Rules table whose INPUTQ/INPUTQM name the queue (default: pipeline.rules, if set).",
    )(command)
    command = click.option("--qmgr", default="", help="Queue manager (overrides drain.qmgr and INPUTQM).")(command)
    command = click.option(
        "--queue", default="", help="Queue (overrides drain.queue and INPUTQ; default: the queue manager's DEADQ)."
    )(command)
    command = click.option("--source", help="mq:QMGR or sim:NAME (default: drain.source).")(command)
    return command


def _live(config: Config, source, queue, qmgr, rules_path):
    """The LiveQueue and warehouse, resolved before Spark starts; a `UsageError` (exit 2) on a
    bad source or rules table."""
    source = source or config.get("drain", "source")
    if not source:
        raise UsageError("no live source: use --source mq:QMGR|sim:NAME or drain.source in the configuration")
    rules_path = rules_path or config.get("pipeline", "rules")
    table = load_valid_rules(rules_path) if rules_path else None
    return live_source(config, source, table, queue=queue, qmgr=qmgr)


@click.command("drain", cls=Command)
@_source_options
@click.option(
    "--mode",
    type=click.Choice(DRAIN_MODES),
    default=None,
    help="browse: land a copy, leave the queue as it is (default: drain.mode); "
    "move: destructive gets under syncpoint, committed after the rows are written.",
)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many messages.")
@click.option("--run-id", help="Run identifier stamped on the landed rows (default: generated).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@config_options
def drain_cmd(source, queue, qmgr, rules_path, mode, limit, run_id, as_json, config: Config):
    """Land a live dead-letter queue into the `messages` table, exactly as ingest would.

    \b
    The queue is --queue, else drain.queue, else INPUTQ of the rules table, else the
    queue manager's DEADQ; the queue manager is the one in --source, else --qmgr,
    drain.qmgr or INPUTQM. One drain or settle per queue runs at a time.
      dlq-pipeline drain --source mq:QM1 --config prod.toml
      dlq-pipeline drain --source sim:QM1 --queue MY.DLQ --mode move --warehouse ./warehouse
    Draining twice lands nothing twice. Move mode removes a message only after its row is
    written; a failure in between leaves it on the queue.
    """
    from dlq_pipeline.live.spark import drain

    live, warehouse = _live(config, source, queue, qmgr, rules_path)
    settings = DrainSettings.from_config(config)
    mode = mode or settings.mode
    run_id = run_id_for(config, run_id)
    progress = to_stderr()  # also under --json: stdout is the result
    with writing(config, f"drain ({mode})", run_id):
        spark = start_spark(config, needs_classic(source=live.spec))
        result = staged(
            progress,
            "drain",
            run_id,
            lambda: drain(
                spark,
                open_tables(spark, config),
                live,
                warehouse=warehouse,
                run_id=run_id,
                mode=mode,
                batch_size=settings.batch_size,
                limit=limit,
                progress=progress,
            ),
        )
    doc = {"run_id": run_id, **result.as_dict()}
    if as_json:
        echo_json(doc)
    else:
        click.echo(
            f"drained {result.queue} on {result.qmgr} ({mode}): read {result.read}, landed {result.landed} new "
            f"({result.already_landed} already landed), removed {result.removed}"
        )


@click.command("settle", cls=Command)
@_source_options
@click.option("--run-id", help="Run identifier for the lock and the log (default: generated).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@config_options
def settle_cmd(source, queue, qmgr, rules_path, run_id, as_json, config: Config):
    """Remove from a live DLQ the messages whose processing has ended (delivered, discarded or expired).

    \b
    Each message is got by MsgId and CorrelId under syncpoint and removed only when it is
    the message that was processed (same key: data digest, put date/time, application);
    any other message is left on the queue and reported (exit 3). `run` with a live
    source settles by itself; use this after `replay`, or when a run stopped early.
      dlq-pipeline settle --source mq:QM1 --config prod.toml
    """
    from dlq_pipeline.live.spark import settle

    live, warehouse = _live(config, source, queue, qmgr, rules_path)
    run_id = run_id_for(config, run_id)
    batch_size = DrainSettings.from_config(config).batch_size
    progress = to_stderr()
    with writing(config, "settle", run_id):
        spark = start_spark(config, needs_classic(source=live.spec))
        storage = storage_with_tables(spark, config)
        result = staged(
            progress,
            "settle",
            run_id,
            lambda: settle(
                spark, storage, live, warehouse=warehouse, run_id=run_id, batch_size=batch_size, progress=progress
            ),
        )
    if as_json:
        echo_json({"run_id": run_id, **result.as_dict()})
    else:
        click.echo(
            f"settled {result.queue} on {result.qmgr}: {result.removed} removed of {result.ended} ended "
            f"({result.browsed} on the queue, {result.gone} already gone, "
            f"{len(result.mismatched)} left because they are not the message processed)"
        )
        for m in result.mismatched:
            click.echo(f"  left: MsgId {m['msg_id']} (key {m['message_key']}): {m['reason']}")
    return exitcodes.ATTENTION if result.mismatched else exitcodes.OK


@click.command("replay", cls=Command)
@click.option("--run-id", help="Run whose decisions to replay (default: the latest run with decisions).")
@click.option("--target", help="dry-run | dir:PATH | sim:[NAME] | mq:QMGR (default: pipeline.target).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@config_options
def replay_cmd(run_id, target, as_json, config: Config):
    """Replay the decisions of a run to a target and record every attempt in the ledger.

    \b
    For decisions made by `classify`, or to send for real what a dry run showed:
      dlq-pipeline classify --rules my.rules --warehouse ./warehouse
      dlq-pipeline replay --warehouse ./warehouse --target dir:./replay-out
      dlq-pipeline replay --run-id 20260301T120000Z-abc123 --target mq:QM1 --config prod.toml
    Decisions overtaken since (the message was delivered, discarded or expired, or tried again by
    another run) are skipped as stale: classify again. Exit 3 when some were stale or
    failed or deferred.
    """
    from dlq_pipeline.replay.spark import replay_decisions

    target = target or config.get("pipeline", "target")
    check_target(target, config)
    progress = to_stderr()
    with writing(config, "replay", run_id or "(latest decisions)"):
        spark = start_spark(config, needs_classic(target=target))
        with stage(progress, "replay", run_id=run_id or "") as counts:
            result = replay_decisions(
                spark,
                storage_with_tables(spark, config),
                target=target,
                settings=ReplaySettings.from_config(config),
                qmgrs=mq_qmgrs(config),
                run_id=run_id or None,
                progress=progress,
            )
            counts.update(
                run_id=result["run_id"],
                decisions_run_id=result["decisions_run_id"],
                outcomes=result["outcomes"],
                stale=result["stale"],
            )
    if as_json:
        echo_json(result)
    else:
        click.echo(
            f"replayed the decisions of run {result['decisions_run_id']} to {target} as run {result['run_id']}: "
            + (", ".join(f"{k} {v}" for k, v in sorted(result["outcomes"].items())) or "nothing to do")
            + (f"; {result['stale']} stale decisions skipped (classify again)" if result["stale"] else "")
        )
    outcomes = result["outcomes"]
    attention = result["stale"] or any(outcomes.get(o) for o in ATTENTION_OUTCOMES)
    return exitcodes.ATTENTION if attention else exitcodes.OK


LIVE_COMMANDS = [drain_cmd, settle_cmd, replay_cmd]
