"""The run a class archive is made from (`dlq_pipeline.engine.class_archive.build` starts it
in a child process, ``python -m dlq_pipeline.class_archive_dump FORMAT [--s3a]
[--force]``, and so does a command that found none, detached, with ``--claim``): a small
pipeline on a generated DLQ, stored in FORMAT, loads the classes of ingest, decode,
classify, the table writes and replay; then the JVM exits and writes every class it loaded
to the archive of a local session's class path in that format (with Hadoop's S3A jars for
``--s3a``). Prints the archive's path (an archive already there is kept, unless
``--force``)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
from pathlib import Path

from dlq_pipeline.engine.class_archive import BUILD_TIMEOUT_S, QUIET, Claim, archive_path


def dump(storage_format: str, force: bool, s3a: bool = False) -> Path | None:
    from pyspark import SparkContext

    from dlq_pipeline.config.settings import RunSettings, StorageSettings
    from dlq_pipeline.dumps.generator import write_generated
    from dlq_pipeline.engine.session import get_spark, local_classpath
    from dlq_pipeline.pipeline import run_pipeline
    from dlq_pipeline.rules.parser import load_rules
    from dlq_pipeline.rules.shipped import STARTER, shipped_path

    settings = {"master": "local[2]", "app_name": "dlq-pipeline-class-archive", "format": storage_format, "s3a": s3a}
    path = archive_path(local_classpath(settings))
    if path is None or (path.is_file() and not force):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        with tempfile.TemporaryDirectory(prefix="dlq-class-archive-") as work:
            dumps = write_generated(Path(work) / "dumps", 300, seed=1)
            spark = get_spark(
                {
                    **settings,
                    "spark_conf": {
                        "spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={shlex.quote(str(partial))} {QUIET}"
                    },
                }
            )
            storage = StorageSettings(path=str(Path(work) / "warehouse"), format=storage_format)
            run_pipeline(
                spark,
                RunSettings(storage=storage),
                load_rules(str(shipped_path(STARTER))),
                inputs=[str(p) for p in dumps],
                target="dry-run",
                run_id="class-archive",
            )
            gateway = SparkContext._gateway
            spark.stop()
            # the JVM exits (and writes the archive) when its stdin closes: wait for it
            proc = getattr(gateway, "proc", None)
            if proc is not None:
                proc.stdin.close()
                proc.wait(timeout=BUILD_TIMEOUT_S)
        if not partial.is_file() or partial.stat().st_size == 0:
            raise SystemExit(f"the JVM wrote no archive to {partial}")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dlq_pipeline.class_archive_dump")
    parser.add_argument("format", choices=["parquet", "delta"])
    parser.add_argument("--s3a", action="store_true", help="with Hadoop's S3A jars on the class path")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--claim", help="the claim of a command that found no archive (class_archive.claim)")
    args = parser.parse_args(argv)
    if args.claim is None:
        print(dump(args.format, args.force, args.s3a))
        return 0
    # for the next run, after a command's own work: behind whatever runs in the foreground
    os.nice(10)
    claim = Claim.at(Path(args.claim))
    try:
        made = dump(args.format, False, args.s3a)
    except BaseException as exc:
        claim.failed(f"{type(exc).__name__}: {exc}")
        raise
    if made != claim.archive:  # another class path than the command's: keep the claim, say why
        claim.failed(f"built {made}, not the claimed {claim.archive}")
        return 1
    claim.done()
    return 0


if __name__ == "__main__":
    sys.exit(main())
