"""The `dlq-pipeline` command. Each subcommand lives in its own module and imports heavy
libraries (pyspark) only when it runs, so `inspect` and `rules` start instantly. Every command
ends through `dlq_pipeline.cli.common.exit_status`."""

from __future__ import annotations

import click

from dlq_pipeline import __version__
from dlq_pipeline.cli.common import Group


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="dlq-pipeline")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default=None,
    help="Log lines as text or one JSON object per line (default: log.format, or $DLQ_PIPELINE_LOG_FORMAT).",
)
def cli(verbose: int, log_format: str | None) -> None:
    """Reprocess IBM MQ dead-letter queues with the runmqdlq rules-table language.

    \b
    Look at a dump now, without Spark:
      dlq-pipeline inspect dlq.dmp
      dlq-pipeline inspect --json dlq.dmp | jq .dlh.reason_name
    Check and try a rules table:
      dlq-pipeline rules example starter > my.rules
      dlq-pipeline rules check my.rules
      dlq-pipeline rules test my.rules --input dlq.dmp
    Run the whole pipeline on dumps:
      dlq-pipeline run --input dlq.dmp --rules my.rules --warehouse ./warehouse --target dry-run

    Exit status: 0 done, 1 failed, 2 bad usage/config/rules (nothing touched),
    3 done but something needs attention (quarantined records, ignored messages).
    """
    from dlq_pipeline.runtime import logs

    logs.setup_from_env(fmt=log_format, level=None if verbose == 0 else "info" if verbose == 1 else "debug")


# One module per group of subcommands; each imports pyspark only when a command runs.
from dlq_pipeline.cli.generate import generate_cmd  # noqa: E402
from dlq_pipeline.cli.inspect import inspect_cmd  # noqa: E402
from dlq_pipeline.cli.live import LIVE_COMMANDS  # noqa: E402
from dlq_pipeline.cli.rules import rules_group  # noqa: E402
from dlq_pipeline.cli.setup import setup_cmd  # noqa: E402
from dlq_pipeline.cli.stages import PIPELINE_COMMANDS  # noqa: E402

for _command in (inspect_cmd, generate_cmd, rules_group, *PIPELINE_COMMANDS, *LIVE_COMMANDS, setup_cmd):
    cli.add_command(_command)


def main() -> None:
    cli(prog_name="dlq-pipeline")


if __name__ == "__main__":
    main()
