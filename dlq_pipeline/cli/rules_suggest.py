"""`dlq-pipeline rules suggest`: draft a rules table from the DLQ's own content.

From dumps it reads as `rules test` does, with no Spark (twice when the effect is asked for:
once to draft, once to decide); from a warehouse it starts Spark and reads the `messages`
table. The drafting is in ``rules/suggest.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from dlq_pipeline import exitcodes
from dlq_pipeline.cli.common import Command, config_options, load_valid_rules, spark_errors
from dlq_pipeline.config import Config
from dlq_pipeline.config.settings import IngestSettings
from dlq_pipeline.errors import UsageError
from dlq_pipeline.rules.suggest import MIN_MESSAGES, Draft, Effect, SuggestOptions


@click.command("suggest", cls=Command)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    metavar="DUMP",
    help="dmpmqmsg dump or amqsbcg listing, a directory of them, or a glob (repeatable); "
    "without it, the warehouse's messages table.",
)
@click.option("--out", "out_path", type=click.Path(dir_okay=False), help="Write the draft here (default: stdout).")
@click.option("--explain", is_flag=True, help="Add what the draft decides: per rule, and the actions in total.")
@click.option(
    "--against",
    "against_path",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help="The table in use: add what would change, with counts and examples (implies --explain).",
)
@click.option(
    "--hold-prefix",
    default="DLQ.HOLD",
    show_default=True,
    help="Holding queues are PREFIX.ADDRESS, PREFIX.SECURITY, PREFIX.FORMAT, PREFIX.LIMIT, ...",
)
@click.option("--catch-all", default="DLQ.UNMATCHED", show_default=True, help="The catch-all rule's FWDQ.")
@click.option("--inputq", default=None, help="INPUTQ of the control line (default: the queue the dumps name).")
@click.option("--inputqm", default=None, help="INPUTQM of the control line (default: the dumps' queue manager).")
@click.option(
    "--min-messages",
    type=click.IntRange(min=1),
    default=MIN_MESSAGES,
    show_default=True,
    help="Messages a reason needs for a holding rule of its own (rarer ones go to the catch-all).",
)
@config_options
def rules_suggest_cmd(
    inputs, out_path, explain, against_path, hold_prefix, catch_all, inputq, inputqm, min_messages, config: Config
):
    """Draft a rules table from what the messages show: RETRY for what clears by itself
    (paced by the storms the arrivals show), FWD with HEADER(YES) to holding queues for
    what cannot succeed as it stands, and a catch-all FWD last. Every rule carries its
    evidence as comments: the messages it takes, from which queue managers and
    applications, when, and the report advice it follows.

    The draft is for a person to read and edit, not to deploy unread; `rules check`
    accepts it as it is, and it keeps to runmqdlq's documented syntax. The same
    messages give the same table. The effect (--explain, --against) is printed as comment lines after the table,
    so the output stays a rules table.

    \b
    Examples:
      dlq-pipeline rules suggest --input dumps/ --out draft.rules
      dlq-pipeline rules suggest --input dlq.dmp --explain --against my.rules
      dlq-pipeline rules suggest --warehouse ./warehouse --explain
    \b
    Exit 2 for a bad option or --against table (nothing is read); 3 when records could
    not be read (reported on stderr as FILE:LINE: CODE: MESSAGE; the rest is used).
    """
    options = SuggestOptions(hold_prefix, catch_all, inputq, inputqm, min_messages)
    against = load_valid_rules(against_path) if against_path else None
    if inputs:
        draft, effect, bad = _from_dumps(list(inputs), options, against, explain or against is not None, config)
    else:
        draft, effect, bad = _from_warehouse(options, against, explain or against is not None, config)
    text = draft.text
    if effect is not None:
        text += "\n" + "\n".join(effect.lines(against_path or "")) + "\n"
    if out_path:
        Path(out_path).write_text(text, encoding="utf-8")
        click.echo(f"wrote {out_path}: {len(draft.table.rules)} rules", err=True)
    else:
        click.echo(text, nl=False)
    return exitcodes.ATTENTION if bad else exitcodes.OK


def _from_dumps(inputs: list[str], options, against, with_effect: bool, config: Config):
    from dlq_pipeline.cli.common import err
    from dlq_pipeline.dumps.describe import printable
    from dlq_pipeline.dumps.plan import source_queue
    from dlq_pipeline.dumps.sources import expand_paths, sniff
    from dlq_pipeline.fs import InputUnreachable
    from dlq_pipeline.rules.matcher import decide
    from dlq_pipeline.rules.suggest import seen_groups, suggest
    from dlq_pipeline.rules.whatif import display_path

    limits = IngestSettings.from_config(config)
    try:
        paths = expand_paths(inputs)
    except (FileNotFoundError, ValueError, InputUnreachable) as exc:
        raise UsageError(str(exc.args[0] if exc.args else exc)) from None
    problems: list[str] = []

    def told(line: str) -> None:
        err(printable(line))
        problems.append(line)

    queues = {source_queue(path, sniff(path)) for path in paths}
    qmgrs, names = {q for q, _ in queues}, {n for _, n in queues}
    draft = suggest(
        seen_groups(view for _, _, view in _read_views(paths, limits, told)),
        options,
        inputq=names.pop() if len(names) == 1 else None,
        inputqm=qmgrs.pop() if len(qmgrs) == 1 else None,
        source=f" in {len(paths)} file{'' if len(paths) == 1 else 's'}",
    )
    effect = None
    if with_effect:
        effect = Effect(draft.table, against)
        for path, index, view in _read_views(paths, limits, lambda line: None):  # the same bad records: told once
            current = decide(against, view) if against is not None else None
            effect.add(decide(draft.table, view), current, example=f"{display_path(path)} message {index}")
    return draft, effect, len(problems)


def _read_views(
    paths: list[str], limits: IngestSettings, report: Callable[[str], None]
) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(path, index, match view) of every message of the dumps, as ingest reads them; each
    bad record or unreadable file is passed to ``report``."""
    from dlq_pipeline.dumps.sources import read_sources
    from dlq_pipeline.rules.whatif import message_view

    for path, message in read_sources(
        paths, max_line_length=limits.max_line_length, max_message_bytes=limits.max_message_bytes, report=report
    ):
        yield path, message.index, message_view(message)


def _from_warehouse(options, against, with_effect: bool, config: Config) -> tuple[Draft, Effect | None, int]:
    from dlq_pipeline.cli.common import start_spark, storage_with_tables
    from dlq_pipeline.triage import spark as triage

    with spark_errors(config):
        storage = storage_with_tables(start_spark(config), config)
        tables = triage.load(storage)
        draft = triage.suggest_rules(tables, options, source=f" in {storage.location('messages')}")
        effect = triage.draft_effect(tables, draft.table, against) if with_effect else None
    return draft, effect, 0
