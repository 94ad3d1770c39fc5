"""`dlq-pipeline setup`: what a local Spark of this installation needs besides pip's packages,
fetched and built once, each step saying what it did."""

from __future__ import annotations

import os

import click

from dlq_pipeline.cli.common import Command, config_options, err
from dlq_pipeline.errors import DlqPipelineError

_HELP = """Set up this machine's local Spark for dlq-pipeline, once: idempotent, each step on a line.

\b
  - the JVM reader of ingest (compiled when this checkout has none; a wheel has it),
  - Delta Lake's jars with --delta or storage.format = "delta", and Hadoop's S3A
    connector with --s3a or a warehouse on s3a://, fetched from Maven Central (or a mirror,
    --repositories) into ~/.cache/dlq-pipeline/jars ($DLQ_PIPELINE_JARS),
  - the JVM class archive local sessions start from in about half the time, built for the
    class path those runs have, into ~/.cache/dlq-pipeline/cds (about 40 s and 180 MB each).

\b
A first run without it works, builds the class archive for the next run after its own
work, and says where jars are missing. Databricks, and spark-submit onto a cluster that
provides Delta and S3A, need none of it (docs/deploy.md).

\b
Examples:
  dlq-pipeline setup
  dlq-pipeline setup --delta
  dlq-pipeline setup --config prod.toml --profile local
"""


def _jvm_reader() -> None:
    from dlq_pipeline.ingest import jvm_reader

    found = jvm_reader.existing()
    if found:
        err(f"JVM reader: {found}")
        return
    err("JVM reader: compiling with javac (about 5 s) ...")
    try:
        err(f"JVM reader: {jvm_reader.build()}")
    except (RuntimeError, OSError) as exc:
        err(f"JVM reader: not built, ingest reads dumps with its Python reader: {str(exc).splitlines()[0]}")


def _jars(what: str, package: str, folder, cached: list[str], repositories: str | None, option: str) -> bool:
    """Fetch one package's jars unless they are there; False when the fetch failed."""
    from dlq_pipeline.engine import jars

    if cached:
        err(f"{what}: {len(cached)} jars in {folder}")
        return True
    err(f"{what}: fetching {package} from {'Maven Central' if not repositories else repositories} into {folder} ...")
    try:
        found = jars.fetch(package, folder, repositories=repositories)
    except jars.JarsError as exc:
        detail = str(exc).splitlines()
        err(
            f"error: {what}: could not fetch {package}: is this machine offline? It needs Maven Central "
            f"(or a mirror: --repositories URL) once; run `dlq-pipeline setup {option}` again where it is reachable"
        )
        for line in detail[1:]:
            err(f"  {line}")
        return False
    err(f"{what}: {len(found)} jars in {folder}")
    return True


def _class_archive(storage_format: str, s3a: bool, force: bool) -> None:
    from dlq_pipeline.engine import class_archive
    from dlq_pipeline.engine.session import local_classpath

    name = {"parquet": "Parquet", "delta": "Delta"}[storage_format] + (" on S3" if s3a else "")
    path = class_archive.archive_path(local_classpath({"format": storage_format, "s3a": s3a}))
    if path is None:
        raise DlqPipelineError("no java found (JAVA_HOME, PATH): Spark needs Java 17 or later")
    if path.is_file() and not force:
        err(f"class archive for {name}: {path}")
        return
    err(f"class archive for {name}: building from a small pipeline run (about 40 s) ...")
    try:
        (built,) = class_archive.build(force=force, targets=[(storage_format, s3a)])
    except (RuntimeError, OSError) as exc:
        raise DlqPipelineError(f"class archive for {name}: not built, local Spark starts without it: {exc}") from None
    err(f"class archive for {name}: {built} ({built.stat().st_size // 2**20} MiB)")


@click.command("setup", cls=Command, help=_HELP)
@click.option("--delta", is_flag=True, help="Fetch Delta Lake's jars (also when storage.format is delta).")
@click.option("--s3a", "s3a_jars", is_flag=True, help="Fetch Hadoop's S3A connector (also for a warehouse on S3).")
@click.option("--repositories", default=None, help="Extra Maven repositories (comma-separated URLs), e.g. a mirror.")
@click.option("--force", is_flag=True, help="Build the class archive again even when it exists.")
@config_options
def setup_cmd(config, delta, s3a_jars, repositories, force):
    from dlq_pipeline.engine import delta as delta_jars
    from dlq_pipeline.engine import s3a

    if os.environ.get("DATABRICKS_RUNTIME_VERSION"):
        err("setup: nothing to do on Databricks: its runtime has Delta, S3 and its own JVMs")
        return
    storage_format = config.get("storage", "format")
    delta = delta or storage_format == "delta"
    on_s3 = s3a_jars or s3a.uses_s3([config.get("storage", "path")])
    _jvm_reader()
    fetched = True
    if delta:
        package = delta_jars.package_for()
        fetched &= _jars(
            "Delta Lake's jars", package, delta_jars.jar_dir(), delta_jars.cached_jars(), repositories, "--delta"
        )
    if on_s3:
        fetched &= _jars(
            "Hadoop's S3A connector", s3a.package(), s3a.jar_dir(), s3a.cached_jars(), repositories, "--s3a"
        )
    formats = ["delta"] if delta and delta_jars.cached_jars() else []
    if storage_format == "parquet" or not formats:
        formats.insert(0, "parquet")
    for each in formats:
        _class_archive(each, bool(on_s3 and s3a.cached_jars()), force)
    if not fetched:
        raise DlqPipelineError("setup: some jars are missing (above); the rest is set up")
    err("setup: done")
