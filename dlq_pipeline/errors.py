"""The product's errors: one base class that carries the command's exit status.

A notebook or job catches `DlqPipelineError` for every failure the product reports on
purpose; the command line prints ``error:`` and the exception's text (one line each) and
exits with its `DlqPipelineError.exit_code`. `UsageError`'s are found before anything is
touched: a bad setting, rules table, target or warehouse (exit 2). Each concept keeps its own
subclass beside the code that raises it (`dlq_pipeline.config.ConfigError`,
`dlq_pipeline.rules.model.RulesError`, `dlq_pipeline.replay.targets.TargetError`, ...);
docs/api.md lists them.
"""

from __future__ import annotations

from dlq_pipeline.runtime import exitcodes


class DlqPipelineError(Exception):
    """Something the product could not do, said in words a user acts on (exit 1)."""

    exit_code: int = exitcodes.FAILURE

    def lines(self) -> list[str]:
        """What the command line prints: one ``error:`` line per line of the message."""
        return [f"error: {line}" for line in (str(self) or type(self).__name__).splitlines()]


class UsageError(DlqPipelineError):
    """Bad usage, configuration, rules table, target or warehouse, found before anything was
    touched (exit 2)."""

    exit_code = exitcodes.USAGE
