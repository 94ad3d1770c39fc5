"""The run a class archive is made from (`dlq_pipeline.engine.class_archive.build` starts it
in a child process, ``python -m dlq_pipeline.engine.class_archive_dump FORMAT [--force]``):
a small pipeline on a generated DLQ, stored in FORMAT, loads the classes of ingest, decode,
classify, the table writes and replay; then the JVM exits and writes every class it loaded
to the archive of a local session's class path in that format. Prints the archive's path
(an archive already there is kept, unless ``--force``)."""

from __future__ import annotations

import os
import shlex
import sys
import tempfile
from pathlib import Path

from dlq_pipeline.engine.class_archive import BUILD_TIMEOUT_S, QUIET, archive_path


def dump(storage_format: str, force: bool) -> Path | None:
    from pyspark import SparkContext

    from dlq_pipeline.config.settings import RunSettings, StorageSettings
    from dlq_pipeline.dumps.generator import write_generated
    from dlq_pipeline.engine.session import get_spark, local_classpath
    from dlq_pipeline.pipeline import run_pipeline
    from dlq_pipeline.rules.parser import load_rules
    from dlq_pipeline.rules.shipped import STARTER, shipped_path

    settings = {"master": "local[2]", "app_name": "dlq-pipeline-class-archive", "format": storage_format}
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


if __name__ == "__main__":
    print(dump(sys.argv[1], "--force" in sys.argv[2:]))
