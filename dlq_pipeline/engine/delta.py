"""Delta Lake's jars for a locally started Spark: which release fits this pyspark, kept in the
jar cache of `dlq_pipeline.engine.jars` (``<cache>/delta-<release>-spark<major.minor>/``)
and fetched once by ``python -m dlq_pipeline.engine.delta`` (``make delta-jars``).

Databricks (and a cluster started with ``--packages io.delta:...``) has Delta on its
classpath already.

The pip package ``delta-spark`` is not used for this: its ``configure_spark_with_delta_pip``
names the Maven artifact after the pip version, and pip releases without a Maven release of
the same number exist (pip 4.4.1; Maven has 4.4.0), so that lookup fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dlq_pipeline.engine import jars
from dlq_pipeline.engine.jars import spark_version

# Spark major.minor -> the Delta Lake Maven package for it (Scala 2.13 from Spark 4, 2.12 for
# pip's pyspark 3.5). Delta 4.4 is built for Spark 4.0, 4.1 and 4.2; 3.3 is the last for 3.5.
DELTA_PACKAGES = {
    "4.2": "io.delta:delta-spark_4.2_2.13:4.4.0",
    "4.1": "io.delta:delta-spark_4.1_2.13:4.4.0",
    "4.0": "io.delta:delta-spark_4.0_2.13:4.4.0",
    "3.5": "io.delta:delta-spark_2.12:3.3.2",
}
FETCH_COMMAND = "dlq-pipeline setup --delta"


class DeltaJarsError(jars.JarsError):
    """Delta's jars cannot be had for this Spark (unknown version, fetch failed)."""


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


def jar_dir(version: str | None = None) -> Path:
    """``<cache>/delta-<release>-spark<major.minor>``: one folder per (Delta, Spark) pair."""
    version = version or spark_version()
    release = package_for(version).rsplit(":", 1)[1]
    return jars.cache_root() / f"delta-{release}-spark{'.'.join(version.split('.')[:2])}"


def cached_jars(version: str | None = None) -> list[str]:
    """The fetched jars for this Spark, or [] when they have not been fetched (completely)."""
    try:
        return jars.cached(jar_dir(version))
    except DeltaJarsError:
        return []


def main(argv: list[str] | None = None) -> int:
    return jars.command(
        argv,
        prog="python -m dlq_pipeline.engine.delta",
        what="Delta Lake's jars",
        package=package_for,
        folder=jar_dir,
        by_spark_version=True,
    )


if __name__ == "__main__":
    sys.exit(main())
