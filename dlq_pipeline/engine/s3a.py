"""Hadoop's S3A connector for a locally started Spark, pointed where the pipeline's own Python
points: one story for ``s3a://`` paths.

Spark reads and writes ``s3a://`` through Hadoop's S3A connector (``org.apache.hadoop:hadoop-aws``
of the Hadoop version inside pyspark, with the AWS SDK bundle it depends on); the pipeline's
Python (the driver's listing, the Python reader, checkpoints, the writer lease's fence, the
``dir:`` target's files) through ``pyarrow.fs`` (`dlq_pipeline.fs`). Both take the AWS SDKs'
standard settings, from the environment of each process:

- credentials from the SDKs' default chain: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``
  (and ``AWS_SESSION_TOKEN``), a profile (``AWS_PROFILE``, ``~/.aws``), web identity, the
  container's or the instance's role. S3A is given the SDK's own ``DefaultCredentialsProvider``,
  the chain pyarrow's SDK walks;
- ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL``: an S3-compatible endpoint (MinIO, a test
  server), addressed path-style;
- ``AWS_REGION`` or ``AWS_DEFAULT_REGION``.

The configuration's ``[s3]`` section sets the endpoint and the region (never credentials) by
setting those variables at the edge, before Spark starts (`environment`). Nothing here prints
or stores a credential.

The jars are fetched once into the jar cache of `dlq_pipeline.engine.jars` by ``python -m
dlq_pipeline.engine.s3a`` (``make s3a-jars``; the AWS SDK bundle is about 700 MB); a local
session gets them, and the settings, only when a path it will use is on S3 (`uses_s3`).
"""

from __future__ import annotations

import os
import re
import sys
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path

from dlq_pipeline.engine import jars

S3_SCHEMES = ("s3a", "s3", "s3n")
FETCH_COMMAND = "dlq-pipeline setup --s3a"
CONNECTOR_CLASS = "org.apache.hadoop.fs.s3a.S3AFileSystem"
CREDENTIALS_PROVIDER = "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"
ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")
FIX = (
    f"fetch Hadoop's S3A connector once with `{FETCH_COMMAND}` (from Maven Central into "
    "~/.cache/dlq-pipeline/jars), or start Spark with --packages "
    "org.apache.hadoop:hadoop-aws:<the Hadoop version of your Spark>, or run where the cluster "
    "provides it (EMR, Databricks)"
)
_HADOOP_JAR = re.compile(r"hadoop-client-api-([0-9][0-9.]*)\.jar")


def uses_s3(paths: Iterable[str]) -> bool:
    """Whether any of ``paths`` (``dir:`` targets included) is on S3."""
    return any(urllib.parse.urlparse(p.removeprefix("dir:")).scheme in S3_SCHEMES for p in paths if p)


def hadoop_version() -> str:
    """The Hadoop client version inside this pyspark (S3A must be the same release)."""
    for name in sorted(os.listdir(jars.spark_home() / "jars")):
        found = _HADOOP_JAR.fullmatch(name)
        if found:
            return found.group(1)
    raise jars.JarsError("this pyspark ships no Hadoop client (hadoop-client-api): S3A cannot be matched to it")


def package() -> str:
    return f"org.apache.hadoop:hadoop-aws:{hadoop_version()}"


def jar_dir() -> Path:
    return jars.cache_root() / f"s3a-hadoop{hadoop_version()}"


def cached_jars() -> list[str]:
    """The fetched S3A jars for this pyspark, or [] when they have not been fetched."""
    try:
        return jars.cached(jar_dir())
    except jars.JarsError:
        return []


def listed(conf: Mapping[str, str]) -> bool:
    """Whether S3A is on a session's classpath by its settings (``--packages``, ``--jars``)."""
    names = " ".join(conf.get(k, "") for k in ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath"))
    return "hadoop-aws" in names


def environment(endpoint: str = "", region: str = "") -> dict[str, str]:
    """The variables ``[s3]`` sets (pure): an endpoint and a region from the configuration go
    where both the AWS SDKs and `spark_conf` read them."""
    updates = {}
    if endpoint:
        updates["AWS_ENDPOINT_URL_S3"] = endpoint
    if region:
        updates["AWS_REGION"] = region
    return updates


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> str:
    return next((env[n] for n in names if env.get(n)), "")


def spark_conf(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """S3A's settings for what ``env`` (default: this process's environment) says (pure):
    the SDK's credential chain, and the endpoint and region when set, for the executors'
    Python too (a local session's workers have this process's environment). Never a
    credential: executors find theirs in their own environment or role."""
    env = os.environ if env is None else env
    conf = {"spark.hadoop.fs.s3a.aws.credentials.provider": CREDENTIALS_PROVIDER}
    endpoint = _first(env, ENDPOINT_VARIABLES)
    if endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = endpoint
        conf["spark.hadoop.fs.s3a.path.style.access"] = "true"  # an S3-compatible server: no bucket subdomains
        conf["spark.executorEnv.AWS_ENDPOINT_URL_S3"] = endpoint  # the executors' Python (pyarrow) too
    region = _first(env, REGION_VARIABLES)
    if region:
        conf["spark.hadoop.fs.s3a.endpoint.region"] = region
        conf["spark.executorEnv.AWS_REGION"] = region
    return conf


def available(spark) -> bool:
    """Whether the session's JVM can load S3A (a classic session; Connect: assumed)."""
    try:
        jvm = spark.sparkContext._jvm
    except Exception:  # Spark Connect has no JVM gateway: the server's classpath decides
        return True
    return bool(jvm.org.apache.spark.util.Utils.classIsLoadable(CONNECTOR_CLASS))


def main(argv: list[str] | None = None) -> int:
    return jars.command(
        argv,
        prog="python -m dlq_pipeline.engine.s3a",
        what="Hadoop's S3A connector",
        package=lambda _version: package(),
        folder=lambda _version: jar_dir(),
    )


if __name__ == "__main__":
    sys.exit(main())
