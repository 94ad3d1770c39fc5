"""One dispatcher for every way a scheduler starts a stage.

- ``jobs/<stage>.py`` scripts for ``spark-submit`` call ``main("<stage>")``;
- the wheel's console scripts (``dlq-pipeline-<stage>``, usable as Databricks
  ``python_wheel_task`` entry points) are the functions at the bottom of this module.

Both run the ``dlq-pipeline <stage>`` CLI command of the same name with the same options
(``--config``, ``--profile``, ``--set``, ...): configuration loading, validation, exit
statuses and the library calls live in the CLI commands, once. A stage whose command is
not in this version (``drain``, ``settle``, ``replay`` arrive with ``dlq_pipeline.cli.live``)
is a `UsageError` (exit 2) saying so, before anything is touched. `main` ends every start the
way the command line does: with the status the command ends with (click's main exits with it),
or with `dlq_pipeline.cli.common.exit_status`'s for what fails before the command runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn
from urllib.parse import urlparse

from dlq_pipeline.errors import UsageError

# Every stage a job can run, in pipeline order; `run` is all of them in one job.
STAGES = ("drain", "ingest", "classify", "replay", "settle", "report", "run")
# Options naming a file the driver reads: a bare name may be one of spark-submit's --files.
FILE_OPTIONS = ("--config", "--rules")


def shipped_files(spark_files: str) -> dict[str, str]:
    """File name -> local path of each local file in ``spark.files`` (spark-submit's
    ``--files``, as URIs or paths, comma-separated); remote ones are left out (pure)."""
    found: dict[str, str] = {}
    for entry in filter(None, (e.strip() for e in spark_files.split(","))):
        parsed = urlparse(entry)
        if parsed.scheme in ("", "file", "local"):
            found.setdefault(os.path.basename(parsed.path), parsed.path)
    return found


def with_shipped_files(
    args: Sequence[str], shipped: dict[str, str], exists: Callable[[str], bool] = os.path.exists
) -> list[str]:
    """``args`` with each ``--config NAME``/``--rules NAME`` that names no file here but is the
    name of a file given to spark-submit's ``--files`` pointed at that file (pure but for ``exists``).

    In cluster mode the driver runs where Spark put the ``--files``, so ``--config prod.toml``
    opens; in client mode it runs where spark-submit was started, and Spark copies the files
    only into its own scratch directory: the same command line must work in both modes."""
    out = list(args)
    for i, arg in enumerate(out):
        option, eq, value = arg.partition("=")
        if option not in FILE_OPTIONS:
            continue
        at = i if eq else i + 1
        if not eq:
            if at >= len(out):
                continue
            value = out[at]
        if exists(value) or os.path.basename(value) != value or value not in shipped:
            continue
        out[at] = f"{option}={shipped[value]}" if eq else shipped[value]
    return out


def _spark_files() -> str:
    """``spark.files`` of the spark-submit that started this driver ("" outside spark-submit:
    no JVM is started to find out)."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return ""
    from dlq_pipeline.engine.session import launcher_conf

    return launcher_conf().get("spark.files", "")


def command_for(stage: str):
    """The click command for ``stage``, or None when this version has none."""
    from dlq_pipeline.cli import cli

    return cli.commands.get(stage)


def available_stages() -> list[str]:
    return [s for s in STAGES if command_for(s) is not None]


def main(stage: str, argv: Sequence[str] | None = None) -> NoReturn:
    """Run ``dlq-pipeline <stage> ARGS`` and exit with its status (spark-submit scripts, wheel tasks)."""
    from dlq_pipeline.cli.common import exit_status
    from dlq_pipeline.runtime import logs

    logs.setup_from_env()
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
    sys.exit(exit_status(lambda: _run(stage, argv)))


def _run(stage: str, argv: Sequence[str] | None) -> None:
    """The stage's command run on ``argv`` (default: this process's arguments); click's main
    exits with its status. A `UsageError` when this version has no such command."""
    command = command_for(stage)
    if command is None:
        raise UsageError(f"this dlq-pipeline has no '{stage}' stage (available: {', '.join(available_stages())})")
    args = list(sys.argv[1:] if argv is None else argv)
    shipped = shipped_files(_spark_files())
    if shipped:
        args = with_shipped_files(args, shipped)
    command.main(args=args, prog_name=f"dlq-pipeline-{stage}", standalone_mode=True)


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
