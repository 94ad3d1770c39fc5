"""`dlq-pipeline rules test`: what would a rules table do with these dumps? No Spark.

Reads dumps and listings as ingest does (same file discovery, same readers, same size
limit), decides each message with the reference matcher and prints the decisions as they
are made, so a large dump streams. The logic is in ``rules/whatif.py``.
"""

from __future__ import annotations

import json

import click

from dlq_pipeline import exitcodes
from dlq_pipeline.cli.common import FILE, Command, reading_config, summary_line
from dlq_pipeline.config.settings import IngestSettings
from dlq_pipeline.errors import UsageError


@click.command("test", cls=Command)
@click.argument("file", type=FILE)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    required=True,
    metavar="DUMP",
    help="dmpmqmsg dump or amqsbcg listing, a directory of them, or a glob (repeatable).",
)
@click.option(
    "--attempts",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="Attempts already made on every message (cumulative RETRY counts them).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line per message, in input order.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Configuration file: its ingest limits apply, as in a run.",
)
@click.option("--profile", default=None, help="Profile in the configuration file.")
def rules_test_cmd(file, inputs, attempts, as_json, config_path, profile):
    """Decide every message of the dumps with rules table FILE, as `run` would, without
    Spark and without touching anything (a what-if).

    Every message is taken to have had N prior attempts (--attempts, default 0), so the
    cumulative RETRY chain can be walked: with A RETRY(3) then B RETRY(1) both matching,
    attempts 0-2 choose A, 3 chooses B, 4 and more leave the message on the DLQ
    (implicit IGNORE, retries_exhausted).

    \b
    Examples:
      dlq-pipeline rules test my.rules --input dlq.dmp
      dlq-pipeline rules test my.rules --input dumps/ --input browse.txt --attempts 3
      dlq-pipeline rules test my.rules --input dlq.dmp --json | jq -r .action | sort | uniq -c

    \b
    --json objects carry exactly: file (absolute path, as in the decisions table's
    source_file), index (0-based position in the file), action (RETRY, FWD, DISCARD,
    IGNORE), rule_line (null for an implicit IGNORE), target_q and target_qmgr (resolved;
    null unless RETRY/FWD; "" means blank), header (FWD only), putaut (RETRY/FWD only),
    ignore_reason (implicit IGNORE only: no_dlh, truncated, no_match, retries_exhausted).
    Without --json: a table of decisions, then counts per rule and the rules that matched
    no message.

    \b
    An invalid table is reported as by `rules check` and nothing is read (exit 2).
    A record that cannot be read is reported on stderr as FILE:LINE: CODE: MESSAGE and
    the rest is still read (exit 3 at the end). Exit 0 when every record was read.
    """
    from dlq_pipeline.dumps.describe import printable
    from dlq_pipeline.dumps.sources import expand_paths, read_sources
    from dlq_pipeline.fs import InputUnreachable
    from dlq_pipeline.rules.parser import read_rules
    from dlq_pipeline.rules.whatif import Tally, decide_message, file_width, format_outcome, format_tally, text_header

    table = read_rules(file)
    for diagnostic in table.diagnostics:
        click.echo(str(diagnostic), err=True)
    if not table.ok:
        click.echo(summary_line(table), err=True)
        return exitcodes.USAGE
    limits = IngestSettings.from_config(reading_config(config_path, profile))
    try:
        paths = expand_paths(inputs)
    except (FileNotFoundError, ValueError, InputUnreachable) as exc:
        raise UsageError(str(exc.args[0] if exc.args else exc)) from None

    tally = Tally(table)
    width = file_width(paths)
    if not as_json:
        click.echo(text_header(width))

    def bad(line: str) -> None:
        click.echo(printable(line), err=True)
        tally.bad_records += 1

    for path, message in read_sources(
        paths, max_line_length=limits.max_line_length, max_message_bytes=limits.max_message_bytes, report=bad
    ):
        outcome = decide_message(table, message, path, attempts)
        tally.add(outcome)
        click.echo(json.dumps(outcome.as_dict(), ensure_ascii=True) if as_json else format_outcome(outcome, width))
    if not as_json:
        click.echo("")
        click.echo(format_tally(tally, attempts))
    return exitcodes.ATTENTION if tally.bad_records else exitcodes.OK
