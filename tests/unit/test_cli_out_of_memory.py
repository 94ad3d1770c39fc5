"""Spark running out of memory ends a command with one ``error:`` line naming the setting to
raise, exit 1 (50 MB + 100 MB messages with a 2 GB heap, for one, not a screen of py4j
tracebacks). No JVM here: the failure is raised where Spark would raise it."""

from __future__ import annotations

from click.testing import CliRunner

from dlq_pipeline.cli import cli
from dlq_pipeline.cli import stages as pipeline_cli
from dlq_pipeline.cli.common import out_of_memory
from dlq_pipeline.warehouse.locks import WarehouseLock
from tests.support import REPO

STARTER = str(REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules")
JAVA_TEXT = (
    "An error occurred while calling o412.parquet.\n"
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 7.0 failed 1 times, "
    "most recent failure: Lost task 0.0 in stage 7.0 (TID 9): java.lang.OutOfMemoryError: Java heap space\n"
    "\tat java.base/java.util.Arrays.copyOf(Arrays.java:3537)\n"
)


class FakePy4JJavaError(Exception):
    """What py4j raises: the Java exception's text is in the Python exception's."""


def test_out_of_memory_is_found_in_the_exception_or_what_it_came_from():
    assert out_of_memory(FakePy4JJavaError(JAVA_TEXT)) == "java.lang.OutOfMemoryError: Java heap space"
    try:
        try:
            raise FakePy4JJavaError("java.lang.OutOfMemoryError\r\n\tat x")
        except FakePy4JJavaError as inner:
            raise RuntimeError("stage failed") from inner
    except RuntimeError as outer:
        assert out_of_memory(outer) == "java.lang.OutOfMemoryError"
    assert out_of_memory(FakePy4JJavaError("java.io.IOException: No space left on device")) is None
    assert out_of_memory(ValueError("OutOfMemory in a message body")) is None


def test_an_out_of_memory_run_is_one_error_line_naming_the_setting(tmp_path, monkeypatch):
    import dlq_pipeline.pipeline as spark_run

    def run_pipeline(*args, **kwargs):
        raise FakePy4JJavaError(JAVA_TEXT)

    started = []  # what the session was told the run reads (its JIT: dlq_pipeline.engine.session.quick_jit)
    monkeypatch.setattr(
        pipeline_cli,
        "start_spark",
        lambda config, classic_for="", inputs=None, reread=False: started.append(inputs) or object(),
    )
    monkeypatch.setattr(spark_run, "run_pipeline", run_pipeline)
    dump = tmp_path / "in.dmp"
    dump.write_bytes(b"* never read\n")
    wh = tmp_path / "wh"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "--input",
            str(dump),
            "--rules",
            STARTER,
            "--target",
            "dry-run",
            "--warehouse",
            str(wh),
            "--set",
            'spark.conf={"spark.driver.memory"="2g"}',
        ],
    )
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert started == [[str(dump)]]
    assert [line for line in result.stderr.splitlines() if line.strip()] == [
        "error: Spark ran out of memory (java.lang.OutOfMemoryError: Java heap space): raise spark.driver.memory "
        '(now 2g), e.g. --set \'spark.conf={"spark.driver.memory"="8g"}\' or [spark] conf in the configuration; '
        "under spark-submit pass --driver-memory (and --executor-memory on a cluster). See docs/configuration.md"
    ]
    with WarehouseLock(wh, command="test"):  # the run let go of the warehouse
        pass

    monkeypatch.setattr(spark_run, "run_pipeline", lambda *a, **k: (_ for _ in ()).throw(KeyError("other")))
    result = CliRunner().invoke(
        cli, ["run", "--input", str(dump), "--rules", STARTER, "--target", "dry-run", "--warehouse", str(wh)]
    )
    assert isinstance(result.exception, KeyError)  # anything else is not dressed up as memory
