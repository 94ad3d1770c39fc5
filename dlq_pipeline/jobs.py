"""One dispatcher for every way a scheduler starts a stage.

- ``jobs/<stage>.py`` scripts for ``spark-submit`` call ``main("<stage>")``;
- the wheel's console scripts (``dlq-pipeline-<stage>``, usable as Databricks
  ``python_wheel_task`` entry points) are the functions at the bottom of this module.

Both run the ``dlq-pipeline <stage>`` CLI command of the same name with the same options
(``--config``, ``--profile``, ``--set``, ...): configuration loading, validation, exit
statuses and the library calls live in the CLI commands, once. A stage whose command is
not in this version (``drain``, ``settle``, ``replay`` arrive with ``dlq_pipeline.cli.live``)
exits 2 with a message saying so, before anything is touched.
"""

from __future__ import annotations

import sys
from typing import NoReturn, Sequence

# Every stage a job can run, in pipeline order; `run` is all of them in one job.
STAGES = ("drain", "ingest", "classify", "replay", "settle", "report", "run")


def command_for(stage: str):
    """The click command for ``stage``, or None when this version has none."""
    from dlq_pipeline.cli import cli

    return cli.commands.get(stage)


def available_stages() -> list[str]:
    return [s for s in STAGES if command_for(s) is not None]


def main(stage: str, argv: Sequence[str] | None = None) -> NoReturn:
    """Run ``dlq-pipeline <stage> ARGS`` and exit with its status (spark-submit scripts, wheel tasks)."""
    from dlq_pipeline import exitcodes, logs

    logs.setup_from_env()
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
    command = command_for(stage)
    if command is None:
        print(f"error: this dlq-pipeline has no '{stage}' stage (available: {', '.join(available_stages())})",
              file=sys.stderr)
        sys.exit(exitcodes.USAGE)
    from dlq_pipeline.cli import pyspark_required

    args = list(sys.argv[1:] if argv is None else argv)
    with pyspark_required():
        command.main(args=args, prog_name=f"dlq-pipeline-{stage}", standalone_mode=True)
    sys.exit(exitcodes.OK)  # pragma: no cover - standalone_mode always exits


def drain() -> NoReturn:
    main("drain")


def ingest() -> NoReturn:
    main("ingest")


def classify() -> NoReturn:
    main("classify")


def replay() -> NoReturn:
    main("replay")


def settle() -> NoReturn:
    main("settle")


def report() -> NoReturn:
    main("report")


def run() -> NoReturn:
    main("run")
