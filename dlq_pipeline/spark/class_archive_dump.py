"""The run a class archive is made from (`dlq_pipeline.spark.class_archive.build` starts it
in a child process): a small pipeline on a generated DLQ loads the classes of ingest,
decode, classify, the table writes and replay; then the JVM exits and writes every class it
loaded to the file named on the command line."""

from __future__ import annotations

import shlex
import sys
import tempfile
from pathlib import Path

from dlq_pipeline.spark.class_archive import BUILD_TIMEOUT_S, QUIET


def dump(target: str) -> None:
    from pyspark import SparkContext

    from dlq_pipeline.dumps.generator import write_generated
    from dlq_pipeline.rules.parser import load_rules
    from dlq_pipeline.rules.shipped import STARTER, shipped_path
    from dlq_pipeline.settings import RunSettings, StorageSettings
    from dlq_pipeline.spark.run import run_pipeline
    from dlq_pipeline.spark.session import get_spark

    with tempfile.TemporaryDirectory(prefix="dlq-class-archive-") as work:
        dumps = write_generated(Path(work) / "dumps", 300, seed=1)
        spark = get_spark({"master": "local[2]", "app_name": "dlq-pipeline-class-archive",
                           "spark_conf": {"spark.driver.extraJavaOptions":
                                          f"-XX:ArchiveClassesAtExit={shlex.quote(target)} {QUIET}"}})
        run_pipeline(spark, RunSettings(storage=StorageSettings(path=str(Path(work) / "warehouse"))),
                     load_rules(str(shipped_path(STARTER))), inputs=[str(p) for p in dumps], target="dry-run",
                     run_id="class-archive")
        gateway = SparkContext._gateway
        spark.stop()
        # the JVM exits (and writes the archive) when its stdin closes: wait for it
        proc = getattr(gateway, "proc", None)
        if proc is not None:
            proc.stdin.close()
            proc.wait(timeout=BUILD_TIMEOUT_S)


if __name__ == "__main__":
    dump(sys.argv[1])
