"""Virtual environments for tests that need a different one (no pyspark, another Spark tier).

Each is named in `ENVIRONMENTS` (what it holds, at which tier's pins), created once from its
constraints file and kept outside the repository, under ``~/.cache/dlq-pipeline/venvs/`` (or
``$DLQ_PIPELINE_TEST_CACHE/venvs``), keyed by what is installed in them, so only the first
run pays for the install. ``make test`` builds them all before pytest starts (``python -m
tests.venvs``: set-up, like the jars); a test asks for one with `environment`. A file lock
serialises creation and every change to one environment (two pytest processes may share it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.support import REPO, cached_build, digest

CONSTRAINTS = REPO / "constraints"
CACHE = Path(os.environ.get("DLQ_PIPELINE_TEST_CACHE") or Path.home() / ".cache" / "dlq-pipeline") / "venvs"


def clean_env() -> dict[str, str]:
    """The environment for a subprocess in another venv, or for what a user's shell runs (`make
    package`, an unpacked archive): nothing of this checkout or its venv leaks in."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}


def pip(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(root / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", *args],
        env=clean_env(),
        capture_output=True,
        text=True,
        check=check,
        timeout=1800,
    )


def cached_venv(name: str, requirements: list[str], constraints: Path) -> Path:
    """A venv with ``requirements`` installed at ``constraints``' versions (created if missing;
    installs and uninstalls into it happen under its lock, `tests.support.locked`)."""

    def build(root: Path) -> None:
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, env=clean_env())
        pip(root, "install", "--quiet", "-c", str(constraints), *requirements)

    key = digest([json.dumps([requirements, constraints.read_text()]).encode()], 12)
    return cached_build(CACHE / f"{name}-{key}", build)


def installed(root: Path) -> dict[str, str]:
    """name -> version of every distribution installed in ``root`` (``pip list``)."""
    return {
        d["name"].lower().replace("_", "-"): d["version"] for d in json.loads(pip(root, "list", "--format=json").stdout)
    }


PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
RUNTIME_PACKAGES = ("pyspark", "pandas", "numpy", "pyarrow")
TIER_PACKAGES = [*RUNTIME_PACKAGES, "delta-spark", "click", "tqdm"]  # what the pipeline imports

# name -> (requirements, the constraints file that pins them)
ENVIRONMENTS: dict[str, tuple[list[str], Path]] = {
    # the smoke tier of the other supported Spark versions (tests/spark/test_compat.py)
    "compat-spark-4.0": (TIER_PACKAGES, CONSTRAINTS / "spark-4.0.txt"),
    "compat-spark-3.5": (TIER_PACKAGES, CONSTRAINTS / "spark-3.5.txt"),
    # a Databricks 17.3 runtime's packages, plotly included (tests/unit/test_dependencies.py)
    "runtime-spark-4.0-plotly": ([*RUNTIME_PACKAGES, "click", "plotly"], CONSTRAINTS / "spark-4.0.txt"),
    # the wheel's dependencies with pyspark, as `pip install 'dlq-pipeline[spark]'` gives them
    # (tests/spark/test_installed_wheel.py)
    "runtime-spark-4.2": (
        [*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["spark"]],
        CONSTRAINTS / "spark-4.2.txt",
    ),
    # the wheel's own dependencies and no pyspark at all (tests/unit/test_dependencies.py)
    "no-pyspark": (
        PROJECT["dependencies"],
        CONSTRAINTS / "spark-4.2.txt",
    ),
}


def environment(name: str) -> Path:
    """The cached venv `ENVIRONMENTS` names (created if missing)."""
    requirements, constraints = ENVIRONMENTS[name]
    return cached_venv(name, requirements, constraints)


if __name__ == "__main__":
    for name in ENVIRONMENTS:
        print(environment(name))
