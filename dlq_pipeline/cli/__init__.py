"""The `dlq-pipeline` command. Each subcommand lives in its own module and imports heavy
libraries (pyspark) only when it runs, so `inspect` and `rules` start instantly."""

from __future__ import annotations

import contextlib
import logging
import sys

import click

from dlq_pipeline import __version__
from dlq_pipeline.errors import DlqPipelineError
from dlq_pipeline.runtime import exitcodes

# What a Spark command says, on one line, when no pyspark can be imported (exit 2).
NO_PYSPARK = (
    "error: this command needs PySpark, which is not installed here: "
    "pip install 'dlq-pipeline[spark]' (or run it where a Spark runtime provides pyspark; "
    "inspect, generate and rules work without it)"
)


@contextlib.contextmanager
def command_errors():
    """How a command ends on an error the product reports on purpose: its ``error:`` lines on
    stderr and its exit status (`dlq_pipeline.errors.DlqPipelineError`), the traceback only at
    debug level. A missing pyspark (or py4j) is NO_PYSPARK and exit 2: commands import Spark
    before they touch anything, so nothing was written when that fires."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("pyspark", "py4j"):
            raise
        click.echo(NO_PYSPARK, err=True)
        sys.exit(exitcodes.USAGE)
    except DlqPipelineError as exc:
        logging.getLogger(__name__).debug("%s", exc, exc_info=True)
        for line in exc.lines():
            click.echo(line, err=True)
        sys.exit(exc.exit_code)


class _Cli(click.Group):
    def invoke(self, ctx):
        with command_errors():
            return super().invoke(ctx)


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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
