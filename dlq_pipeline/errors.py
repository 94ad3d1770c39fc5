"""The product's errors: one base class that carries the command's exit status.

A notebook or job catches `DlqPipelineError` for every failure the product reports on
purpose; the command line prints ``error:`` and the exception's text (one line each) and
exits with its `DlqPipelineError.exit_code`. `UsageError`'s are found before anything is
touched: a bad setting, rules table, target or warehouse (exit 2).

Each concept keeps its own subclass beside the code that raises it; this module names them
all: ``from dlq_pipeline.errors import LockHeld`` gives the class its module defines
(`DEFINED_IN`), loading that module when first asked (the Spark ones import pyspark).
Importing this module imports nothing else of the package. docs/api.md draws the tree.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dlq_pipeline import exitcodes


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


class ConfigError(UsageError):
    """Every problem with a configuration, reported together."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


# Every other error class a caller can catch -> the module that defines it.
DEFINED_IN = {
    "RulesError": "dlq_pipeline.rules.model",
    "TargetError": "dlq_pipeline.replay.targets",
    "ReplayError": "dlq_pipeline.replay.spark",
    "PathError": "dlq_pipeline.runtime.paths",
    "LockUnavailable": "dlq_pipeline.warehouse.locks",
    "SparkVersionError": "dlq_pipeline.dumps.spark",
    "JarsError": "dlq_pipeline.engine.jars",
    "DeltaJarsError": "dlq_pipeline.engine.delta",
    "MQClientMissing": "dlq_pipeline.mq.client",
    "StorageError": "dlq_pipeline.warehouse.storage",
    "WarehouseMismatch": "dlq_pipeline.warehouse.storage",
    "SchemaError": "dlq_pipeline.tables",
    "LockHeld": "dlq_pipeline.warehouse.locks",
    "WarehouseLocked": "dlq_pipeline.warehouse.locks",
    "LeaseHeld": "dlq_pipeline.warehouse.lease",
    "LeaseLost": "dlq_pipeline.warehouse.lease",
    "MalformedRecord": "dlq_pipeline.dumps.spark",
    "BodyNotFound": "dlq_pipeline.replay.bodies",
    "InputNotFound": "dlq_pipeline.fs.base",
    "InputUnreachable": "dlq_pipeline.fs.base",
    "MQError": "dlq_pipeline.mq.interface",
    "LiveError": "dlq_pipeline.live.loops",
    "QueueLocked": "dlq_pipeline.live.loops",
    "StructureError": "dlq_pipeline.mq.structures",
    "RebuildError": "dlq_pipeline.replay.rebuild",
}

__all__ = [
    "DlqPipelineError",
    "UsageError",
    "ConfigError",
    "RulesError",
    "TargetError",
    "ReplayError",
    "PathError",
    "LockUnavailable",
    "SparkVersionError",
    "JarsError",
    "DeltaJarsError",
    "MQClientMissing",
    "StorageError",
    "WarehouseMismatch",
    "SchemaError",
    "LockHeld",
    "WarehouseLocked",
    "LeaseHeld",
    "LeaseLost",
    "MalformedRecord",
    "BodyNotFound",
    "InputNotFound",
    "InputUnreachable",
    "MQError",
    "LiveError",
    "QueueLocked",
    "StructureError",
    "RebuildError",
]

if TYPE_CHECKING:
    from dlq_pipeline.dumps.spark import MalformedRecord, SparkVersionError
    from dlq_pipeline.engine.delta import DeltaJarsError
    from dlq_pipeline.engine.jars import JarsError
    from dlq_pipeline.fs.base import InputNotFound, InputUnreachable
    from dlq_pipeline.live.loops import LiveError, QueueLocked
    from dlq_pipeline.mq.client import MQClientMissing
    from dlq_pipeline.mq.interface import MQError
    from dlq_pipeline.mq.structures import StructureError
    from dlq_pipeline.replay.bodies import BodyNotFound
    from dlq_pipeline.replay.rebuild import RebuildError
    from dlq_pipeline.replay.spark import ReplayError
    from dlq_pipeline.replay.targets import TargetError
    from dlq_pipeline.rules.model import RulesError
    from dlq_pipeline.runtime.paths import PathError
    from dlq_pipeline.tables import SchemaError
    from dlq_pipeline.warehouse.lease import LeaseHeld, LeaseLost
    from dlq_pipeline.warehouse.locks import LockHeld, LockUnavailable, WarehouseLocked
    from dlq_pipeline.warehouse.storage import StorageError, WarehouseMismatch


def lazy_attribute(namespace: dict[str, Any], homes: Mapping[str, str], name: str) -> Any:
    """A module's ``__getattr__``: ``name`` taken from the module ``homes`` gives it, imported
    on first use and kept in ``namespace`` (the module's globals) from then on."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    namespace[name] = value
    return value


def __getattr__(name: str) -> Any:
    return lazy_attribute(globals(), DEFINED_IN, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(DEFINED_IN))
