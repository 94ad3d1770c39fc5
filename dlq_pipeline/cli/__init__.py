"""The `dlq-pipeline` command. Each subcommand lives in its own module and imports heavy
libraries (pyspark) only when it runs, so `inspect` and `rules` start instantly."""

from __future__ import annotations

import click

from dlq_pipeline import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="dlq-pipeline")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
@click.option("--log-format", type=click.Choice(["text", "json"]), default=None,
              help="Log lines as text or one JSON object per line (default: log.format, "
                   "or $DLQ_PIPELINE_LOG_FORMAT).")
def cli(verbose: int, log_format: str | None) -> None:
    """Reprocess IBM MQ dead-letter queues with the runmqdlq rules-table language.

    \b
    Look at a dump now, without Spark:
      dlq-pipeline inspect dlq.dmp
      dlq-pipeline inspect --json dlq.dmp | jq .dlh.reason_name
    Check and try a rules table:
      dlq-pipeline rules check conf/rules/starter.rules
      dlq-pipeline rules test conf/rules/starter.rules --input dlq.dmp
    Run the whole pipeline on dumps:
      dlq-pipeline run --input dlq.dmp --rules my.rules --warehouse ./warehouse --target dry-run

    Exit status: 0 done, 1 failed, 2 bad usage/config/rules (nothing touched),
    3 done but something needs attention (quarantined records, ignored messages).
    """
    from dlq_pipeline import logs

    logs.setup_from_env(fmt=log_format, level=None if verbose == 0 else "info" if verbose == 1 else "debug")


def _register() -> None:
    """Attach every subcommand module that exists (one module per subcommand group)."""
    import importlib

    for module_name, attr in [
        ("dlq_pipeline.cli.inspect", "inspect_cmd"),
        ("dlq_pipeline.cli.generate", "generate_cmd"),
        ("dlq_pipeline.cli.rules", "rules_group"),
        ("dlq_pipeline.cli.pipeline", "PIPELINE_COMMANDS"),
        ("dlq_pipeline.cli.live", "LIVE_COMMANDS"),
    ]:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        target = getattr(module, attr)
        for command in target if isinstance(target, (list, tuple)) else [target]:
            cli.add_command(command)


_register()


def main() -> None:
    cli(prog_name="dlq-pipeline")


if __name__ == "__main__":
    main()
