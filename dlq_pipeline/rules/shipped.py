"""The rules tables shipped in the package (``dlq_pipeline/data/rules/*.rules``).

Their one home is package data, so an installed wheel has them as well as the source tree:
``dlq-pipeline demo`` reads the starter table from here, and ``dlq-pipeline rules example
NAME`` prints any of them for a user to copy and edit. Pure Python, no Spark.
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

STARTER = "starter"


def _directory() -> Traversable:
    return resources.files("dlq_pipeline").joinpath("data", "rules")


def shipped_names() -> list[str]:
    """The names of the shipped tables (file names without ``.rules``), sorted."""
    return sorted(p.name[: -len(".rules")] for p in _directory().iterdir() if p.name.endswith(".rules"))


def shipped_path(name: str) -> Path:
    """The file of shipped table ``name``; KeyError naming the known tables if there is none."""
    if name not in shipped_names():
        raise KeyError(f"no shipped rules table {name!r} (shipped: {', '.join(shipped_names())})")
    # A package installed from a wheel or in place is a directory, so this is a real file.
    return Path(str(_directory().joinpath(f"{name}.rules")))
