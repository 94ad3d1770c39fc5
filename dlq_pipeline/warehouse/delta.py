"""Delta Lake's jars for a locally started Spark: which release fits this pyspark, where the
jars are kept, and fetching them once from Maven Central.

Databricks (and a cluster started with ``--packages io.delta:...``) has Delta on its
classpath already. A local session (CLI, tests, spark-submit in client mode) gets the jars
from a cache outside any repository, filled once by ``python -m dlq_pipeline.warehouse.delta``
(``make delta-jars``): Spark's own resolver (``spark-submit --packages``, so Ivy settings and
mirrors apply) fetches the release and its dependencies, and the jars Spark does not ship
itself are kept in ``~/.cache/dlq-pipeline/jars/delta-<release>-spark<major.minor>/`` (or
``$DLQ_PIPELINE_JARS/...``). After that, starting a Delta session needs no network.

The pip package ``delta-spark`` is not used for this: its ``configure_spark_with_delta_pip``
names the Maven artifact after the pip version, and pip releases without a Maven release of
the same number exist (pip 4.4.1; Maven has 4.4.0), so that lookup fails.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dlq_pipeline.errors import UsageError

JARS_ENV = "DLQ_PIPELINE_JARS"
MANIFEST = "jars.txt"  # written last: a folder without it is an interrupted fetch

# Spark major.minor -> the Delta Lake Maven package for it (Scala 2.13 from Spark 4, 2.12 for
# pip's pyspark 3.5). Delta 4.4 is built for Spark 4.0, 4.1 and 4.2; 3.3 is the last for 3.5.
DELTA_PACKAGES = {
    "4.2": "io.delta:delta-spark_4.2_2.13:4.4.0",
    "4.1": "io.delta:delta-spark_4.1_2.13:4.4.0",
    "4.0": "io.delta:delta-spark_4.0_2.13:4.4.0",
    "3.5": "io.delta:delta-spark_2.12:3.3.2",
}
FETCH_COMMAND = "python -m dlq_pipeline.warehouse.delta"


class DeltaJarsError(UsageError, RuntimeError):
    """Delta's jars cannot be had for this Spark (unknown version, fetch failed)."""


def spark_version() -> str:
    import pyspark

    return pyspark.__version__


def package_for(version: str | None = None) -> str:
    """The Maven coordinates of the Delta release for Spark ``version`` (default: this pyspark)."""
    version = version or spark_version()
    major_minor = ".".join(version.split(".")[:2])
    try:
        return DELTA_PACKAGES[major_minor]
    except KeyError:
        raise DeltaJarsError(
            f"no Delta Lake release is known for Spark {version} (supported: {', '.join(sorted(DELTA_PACKAGES))})"
        ) from None


def cache_root() -> Path:
    if os.environ.get(JARS_ENV):
        return Path(os.environ[JARS_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dlq-pipeline" / "jars"


def jar_dir(version: str | None = None) -> Path:
    """``<cache>/delta-<release>-spark<major.minor>``: one folder per (Delta, Spark) pair."""
    version = version or spark_version()
    release = package_for(version).rsplit(":", 1)[1]
    return cache_root() / f"delta-{release}-spark{'.'.join(version.split('.')[:2])}"


def cached_jars(version: str | None = None) -> list[str]:
    """The fetched jars for this Spark, or [] when they have not been fetched (completely)."""
    try:
        folder = jar_dir(version)
    except DeltaJarsError:
        return []
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return []
    jars = [str(folder / name) for name in manifest.read_text().split()]
    return jars if jars and all(os.path.isfile(j) for j in jars) else []


def _spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


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


def fetch(version: str | None = None, *, repositories: str | None = None) -> list[str]:
    """Resolve the Delta package for Spark ``version`` with Spark's own resolver and keep the
    jars Spark does not ship in `jar_dir`; return them. A second call finds them there."""
    version = version or spark_version()
    have = cached_jars(version)
    if have:
        return have
    package = package_for(version)
    folder = jar_dir(version)
    folder.parent.mkdir(parents=True, exist_ok=True)
    home = _spark_home()
    with tempfile.TemporaryDirectory(prefix="dlq-delta-ivy-") as tmp:
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
            raise DeltaJarsError(f"could not fetch {package} from Maven Central:\n{tail}")
        names = sorted(p.name for p in resolved.glob("*.jar"))
        keep = [n for n in names if n not in spark_provided(names, os.listdir(home / "jars"))]
        staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
        for name in keep:
            shutil.copy2(resolved / name, staging / name)
        (staging / MANIFEST).write_text("\n".join(keep) + "\n")
    if folder.exists():
        shutil.rmtree(folder)
    staging.rename(folder)
    return cached_jars(version)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=FETCH_COMMAND, description="Fetch Delta Lake's jars once (Maven Central).")
    parser.add_argument("--spark-version", help="for this Spark version (default: the installed pyspark)")
    parser.add_argument("--repositories", help="extra Maven repositories (comma-separated URLs), e.g. a mirror")
    parser.add_argument("--print-dir", action="store_true", help="only print where the jars are kept")
    args = parser.parse_args(argv)
    try:
        if args.print_dir:
            print(jar_dir(args.spark_version))
            return 0
        jars = fetch(args.spark_version, repositories=args.repositories)
    except DeltaJarsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{package_for(args.spark_version)}: {len(jars)} jars in {jar_dir(args.spark_version)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
