"""Maven packages a locally started Spark needs beyond its own jars (Delta Lake, Hadoop's S3A
connector): where their jars are kept, and fetching them once.

Databricks, EMR and a cluster started with ``--packages`` have what they need on their
classpath already. A local session (CLI, tests, spark-submit in client mode) gets the jars
from a cache outside any repository: ``~/.cache/dlq-pipeline/jars/<name>/`` (or
``$DLQ_PIPELINE_JARS/<name>/``), filled once by Spark's own resolver (``spark-submit
--packages``, so Ivy settings and mirrors apply). After that, starting a session needs no
network. The packages themselves are named by their users: `dlq_pipeline.engine.delta`
and `dlq_pipeline.engine.s3a`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from dlq_pipeline.errors import UsageError

JARS_ENV = "DLQ_PIPELINE_JARS"
MANIFEST = "jars.txt"  # written last: a folder without it is an interrupted fetch


class JarsError(UsageError, RuntimeError):
    """A package's jars cannot be had for this Spark (unknown version, fetch failed)."""


def spark_version() -> str:
    import pyspark

    return pyspark.__version__


def spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def cache_root() -> Path:
    if os.environ.get(JARS_ENV):
        return Path(os.environ[JARS_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dlq-pipeline" / "jars"


def cached(folder: Path) -> list[str]:
    """The jars fetched into ``folder``, or [] when they have not been fetched (completely)."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return []
    jars = [str(folder / name) for name in manifest.read_text().split()]
    return jars if jars and all(os.path.isfile(j) for j in jars) else []


def _artifact(jar_name: str) -> str:
    """``org.apache.parquet_parquet-column-1.16.0.jar`` -> ``parquet-column`` (Ivy's naming)."""
    stem = jar_name.rsplit(".jar", 1)[0].split("_", 1)[-1]
    parts = stem.split("-")
    while parts and parts[-1][:1].isdigit():
        parts.pop()
    return "-".join(parts)


def spark_provided(jar_names: list[str], spark_jars: list[str]) -> set[str]:
    """The resolved jars whose artifact Spark ships itself (its own version must win)."""
    shipped = {_artifact("x_" + name) for name in spark_jars}
    return {name for name in jar_names if _artifact(name) in shipped}


def fetch(package: str, folder: Path, *, repositories: str | None = None) -> list[str]:
    """Resolve the Maven ``package`` with Spark's own resolver and keep the jars Spark does not
    ship in ``folder``; return them. A second call finds them there."""
    have = cached(folder)
    if have:
        return have
    folder.parent.mkdir(parents=True, exist_ok=True)
    home = spark_home()
    with tempfile.TemporaryDirectory(prefix="dlq-jars-ivy-") as tmp:
        noop = Path(tmp) / "noop.py"
        noop.write_text("pass\n")
        command = [str(home / "bin" / "spark-submit"), "--conf", f"spark.jars.ivy={tmp}/ivy", "--packages", package]
        if repositories:
            command += ["--repositories", repositories]
        env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable}
        done = subprocess.run([*command, str(noop)], env=env, capture_output=True, text=True)
        resolved = Path(tmp) / "ivy" / "jars"
        if done.returncode != 0 or not resolved.is_dir():
            tail = "\n".join((done.stderr or "").strip().splitlines()[-8:])
            raise JarsError(f"could not fetch {package} from Maven Central:\n{tail}")
        names = sorted(p.name for p in resolved.glob("*.jar"))
        keep = [n for n in names if n not in spark_provided(names, os.listdir(home / "jars"))]
        staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
        for name in keep:
            shutil.move(str(resolved / name), staging / name)
        (staging / MANIFEST).write_text("\n".join(keep) + "\n")
    if folder.exists():
        shutil.rmtree(folder)
    staging.rename(folder)
    return cached(folder)


def command(
    argv: list[str] | None,
    *,
    prog: str,
    what: str,
    package: Callable[[str | None], str],
    folder: Callable[[str | None], Path],
    by_spark_version: bool = False,
) -> int:
    """``python -m`` of a package's module: fetch ``what`` (the Maven ``package`` for a Spark
    version) into ``folder`` once, or print where it is kept; exit 1 on a failed fetch."""
    parser = argparse.ArgumentParser(prog=prog, description=f"Fetch {what} once (Maven Central).")
    if by_spark_version:
        parser.add_argument("--spark-version", help="for this Spark version (default: the installed pyspark)")
    parser.add_argument("--repositories", help="extra Maven repositories (comma-separated URLs), e.g. a mirror")
    parser.add_argument("--print-dir", action="store_true", help="only print where the jars are kept")
    args = parser.parse_args(argv)
    version = getattr(args, "spark_version", None)
    try:
        if args.print_dir:
            print(folder(version))
            return 0
        found = fetch(package(version), folder(version), repositories=args.repositories)
    except JarsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{package(version)}: {len(found)} jars in {folder(version)}")
    return 0
