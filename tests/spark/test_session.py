"""The session factory: reuse what exists, otherwise sensible local defaults; Delta only when it can work."""

from __future__ import annotations

import os
import sys

import pytest

from dlq_pipeline.engine import session as session_module
from dlq_pipeline.engine.delta import DeltaJarsError, cached_jars, jar_dir, package_for
from dlq_pipeline.engine.jars import JARS_ENV, spark_provided
from dlq_pipeline.engine.session import (
    BASE_CONF,
    DELTA_CATALOG,
    DELTA_EXTENSION,
    connect_conf,
    delta_available,
    delta_missing,
    get_spark,
    is_connect,
    remote_url,
    session_conf,
)


def test_get_spark_returns_the_active_session(spark):
    assert get_spark() is spark
    assert get_spark({"master": "local[1]", "app_name": "ignored"}) is spark


def test_the_built_session_has_the_defaults(spark):
    conf = spark.conf
    assert conf.get("spark.sql.session.timeZone") == "UTC"
    assert conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert conf.get("spark.sql.shuffle.partitions") == "4"
    assert conf.get("spark.sql.codegen.hugeMethodLimit") == "8000"
    assert spark.sparkContext.getConf().get("spark.ui.enabled") == "false"
    assert spark.sparkContext.getConf().get("spark.ui.showConsoleProgress") == "false"
    assert spark.sparkContext.master == "local[2]"
    assert spark.sparkContext.appName == "dlq-pipeline-tests"
    assert os.environ["PYSPARK_PYTHON"]
    assert os.environ["PYSPARK_DRIVER_PYTHON"]


def test_spark_conf_is_applied_to_the_active_session_when_modifiable(spark):
    before = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        get_spark({"spark_conf": {"spark.sql.shuffle.partitions": "3", "spark.ui.enabled": "true"}})
        assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
        # a static setting of a running session is left alone, not an error
        assert spark.sparkContext.getConf().get("spark.ui.enabled") == "false"
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)


def test_session_conf_defaults_and_overrides():
    conf = session_conf(
        {
            "master": "local[3]",
            "app_name": "x",
            "spark_conf": {"spark.sql.shuffle.partitions": 16, "spark.executor.memory": "2g"},
        }
    )
    assert conf["spark.master"] == "local[3]"
    assert conf["spark.app.name"] == "x"
    assert conf["spark.sql.shuffle.partitions"] == "16"  # the user's setting wins, as a string
    assert conf["spark.executor.memory"] == "2g"
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.sql.session.timeZone"] == "UTC"
    defaults = session_conf(None)
    assert defaults["spark.master"] == "local[*]"
    assert defaults["spark.app.name"] == "dlq-pipeline"
    assert session_conf({"spark_conf": {"spark.ui.enabled": "true"}})["spark.ui.enabled"] == "true"


def test_a_local_session_gets_a_heap_sized_to_the_machine():
    assert session_module.local_driver_memory(24 * 2**30) == "6g"
    assert session_module.local_driver_memory(2 * 2**30) == "1g"
    assert session_module.local_driver_memory(256 * 2**30) == "8g"
    assert session_conf({"master": "local[2]"})["spark.driver.memory"] == session_module.local_driver_memory()
    assert (
        session_conf({"master": "local[2]", "spark_conf": {"spark.driver.memory": "3g"}})["spark.driver.memory"] == "3g"
    )
    assert "spark.driver.memory" not in session_conf({"master": "spark://host:7077"})
    # spark-submit started the JVM already: what it was told stands
    assert "spark.driver.memory" not in session_conf({"master": "local[2]"}, {"spark.master": "local[2]"})


def test_a_small_command_starts_a_jvm_that_compiles_with_c1_only():
    small, large = {"master": "local[2]", "work_bytes": 2**30}, {"master": "local[2]", "work_bytes": 2**30 + 1}
    assert session_module.QUICK_JIT_BYTES == 2**30
    assert session_conf(small)["spark.driver.extraJavaOptions"] == "-XX:TieredStopAtLevel=1"
    assert session_conf({**small, "work_bytes": 0})["spark.driver.extraJavaOptions"] == "-XX:TieredStopAtLevel=1"
    assert "spark.driver.extraJavaOptions" not in session_conf(large)
    assert "spark.driver.extraJavaOptions" not in session_conf({"master": "local[2]"})  # size unknown (a live DLQ)
    assert "spark.driver.extraJavaOptions" not in session_conf({**small, "quick_jit_bytes": 0})  # never
    assert (
        session_conf({**large, "quick_jit_bytes": 2 * 2**30})["spark.driver.extraJavaOptions"]
        == "-XX:TieredStopAtLevel=1"
    )
    mine = {**small, "spark_conf": {"spark.driver.extraJavaOptions": "-Dx=1"}}
    assert session_conf(mine)["spark.driver.extraJavaOptions"] == "-Dx=1"  # the user's options replace it
    # a JVM this process does not start (a cluster's driver, spark-submit) is left as it is
    assert "spark.driver.extraJavaOptions" not in session_conf({**small, "master": "spark://host:7077"})
    assert "spark.driver.extraJavaOptions" not in session_conf(small, {"spark.master": "local[2]"})


def test_a_local_jvm_maps_the_class_archive_it_is_given():
    quiet = "-Xlog:cds=off -Xlog:cds+dynamic=off"
    archive = {"master": "local[2]", "class_archive": "/cache/cds/spark.jsa"}
    assert (
        session_conf(archive)["spark.driver.extraJavaOptions"] == f"-XX:SharedArchiveFile=/cache/cds/spark.jsa {quiet}"
    )
    both = session_conf({**archive, "work_bytes": 2**20})["spark.driver.extraJavaOptions"]
    assert both == f"-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile=/cache/cds/spark.jsa {quiet}"
    spaced = session_conf({**archive, "class_archive": "/my cache/a.jsa"})["spark.driver.extraJavaOptions"]
    assert spaced == f"-XX:SharedArchiveFile='/my cache/a.jsa' {quiet}"  # Spark splits the options like a shell
    mine = {**archive, "spark_conf": {"spark.driver.extraJavaOptions": "-Dx=1"}}
    assert session_conf(mine)["spark.driver.extraJavaOptions"] == "-Dx=1"  # the user's options replace it
    assert "spark.driver.extraJavaOptions" not in session_conf({**archive, "class_archive": None})
    # a JVM this process does not start is left as it is
    assert "spark.driver.extraJavaOptions" not in session_conf({**archive, "master": "spark://host:7077"})
    assert "spark.driver.extraJavaOptions" not in session_conf(archive, {"spark.master": "local[2]"})


def test_session_conf_rejects_unknown_settings():
    with pytest.raises(ValueError, match="unknown settings"):
        session_conf({"mastr": "local[1]"})


def test_delta_confs_only_when_delta_can_be_loaded(monkeypatch):
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    monkeypatch.setattr(session_module, "cached_jars", lambda: [])
    monkeypatch.setattr(session_module.jvm_reader, "existing", lambda: None)  # its own test below
    without = session_conf({"format": "delta"})
    assert "spark.sql.catalog.spark_catalog" not in without  # would break every query
    assert DELTA_EXTENSION not in without.get("spark.sql.extensions", "")

    with_jars = session_conf(
        {
            "format": "delta",
            "spark_conf": {"spark.jars.packages": "io.delta:delta-spark_2.13:4.0.0", "spark.sql.extensions": "my.Ext"},
        }
    )
    assert with_jars["spark.sql.extensions"] == f"my.Ext,{DELTA_EXTENSION}"
    assert with_jars["spark.sql.catalog.spark_catalog"] == DELTA_CATALOG

    cached = ["/c/io.delta_delta-spark_4.2_2.13-4.4.0.jar", "/c/io.delta_delta-storage-4.4.0.jar"]
    monkeypatch.setattr(session_module, "cached_jars", lambda: cached)
    from_cache = session_conf({"format": "delta", "spark_conf": {"spark.driver.extraClassPath": "/x/mine.jar"}})
    assert from_cache["spark.driver.extraClassPath"] == os.pathsep.join(["/x/mine.jar", *cached])  # a local JVM
    assert from_cache["spark.sql.catalog.spark_catalog"] == DELTA_CATALOG
    assert from_cache["spark.sql.extensions"] == DELTA_EXTENSION
    on_a_cluster = session_conf(
        {"format": "delta", "master": "spark://host:7077", "spark_conf": {"spark.jars": "/x/mine.jar"}}
    )
    assert on_a_cluster["spark.jars"] == ",".join(["/x/mine.jar", *cached])  # shipped to the executors
    assert "spark.driver.extraClassPath" not in on_a_cluster

    parquet = session_conf({"format": "parquet"})
    assert "spark.sql.catalog.spark_catalog" not in parquet and "spark.jars" not in parquet
    assert "spark.driver.extraClassPath" not in parquet


def test_the_jvm_readers_jar_joins_the_classpath_of_sessions_this_process_starts(monkeypatch):
    monkeypatch.setattr(session_module, "cached_jars", lambda: [])
    monkeypatch.setattr(session_module.jvm_reader, "existing", lambda: "/p/dlq-pipeline-reader-abc.jar")
    assert session_conf({})["spark.driver.extraClassPath"] == "/p/dlq-pipeline-reader-abc.jar"
    assert session_module.local_classpath({}) == ["/p/dlq-pipeline-reader-abc.jar"]
    mine = session_conf(
        {"spark_conf": {"spark.driver.extraClassPath": f"/x/mine.jar{os.pathsep}/p/dlq-pipeline-reader-abc.jar"}}
    )
    assert mine["spark.driver.extraClassPath"] == f"/x/mine.jar{os.pathsep}/p/dlq-pipeline-reader-abc.jar"  # once
    cluster = session_conf({"master": "spark://host:7077", "spark_conf": {"spark.jars": "/x/mine.jar"}})
    assert cluster["spark.jars"] == "/x/mine.jar,/p/dlq-pipeline-reader-abc.jar"
    # spark-submit started the JVM: its --jars say what is on the classpath
    launched = session_conf({}, {"spark.master": "yarn"})
    assert "spark.jars" not in launched and "spark.driver.extraClassPath" not in launched
    monkeypatch.setattr(session_module.jvm_reader, "existing", lambda: None)
    assert "spark.jars" not in session_conf({}) and "spark.driver.extraClassPath" not in session_conf({})


def test_the_suite_session_has_delta_from_the_jar_cache(spark, monkeypatch):
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    assert delta_available(spark) is True  # `make delta-jars` fetched them; Parquet runs on it too
    classpath = spark.sparkContext.getConf().get("spark.driver.extraClassPath").split(os.pathsep)
    assert set(cached_jars()) <= set(classpath)


def test_delta_release_per_spark_version_and_the_cache_layout(tmp_path, monkeypatch):
    monkeypatch.setenv(JARS_ENV, str(tmp_path))
    assert package_for("4.2.1") == "io.delta:delta-spark_4.2_2.13:4.4.0"
    assert package_for("4.0.1") == "io.delta:delta-spark_4.0_2.13:4.4.0"
    assert package_for("3.5.7") == "io.delta:delta-spark_2.12:3.3.2"
    with pytest.raises(DeltaJarsError, match="no Delta Lake release is known for Spark 9.1"):
        package_for("9.1.0")
    assert jar_dir("4.2.1") == tmp_path / "delta-4.4.0-spark4.2"
    assert cached_jars("4.2.1") == []  # nothing fetched
    folder = jar_dir("4.2.1")
    folder.mkdir()
    (folder / "a.jar").write_bytes(b"PK")
    assert cached_jars("4.2.1") == []  # no manifest: an interrupted fetch
    (folder / "jars.txt").write_text("a.jar\n")
    assert cached_jars("4.2.1") == [str(folder / "a.jar")]
    (folder / "jars.txt").write_text("a.jar\nb.jar\n")
    assert cached_jars("4.2.1") == []  # a listed jar is missing
    assert cached_jars("9.1.0") == []


def test_delta_is_not_missing_where_the_active_session_has_it(spark):
    assert delta_missing({"format": "delta", "spark_conf": {}}) is False
    assert delta_missing({"format": "parquet"}) is False


def test_only_the_jars_spark_does_not_ship_are_kept():
    resolved = [
        "io.delta_delta-spark_4.2_2.13-4.4.0.jar",
        "io.delta_delta-storage-4.4.0.jar",
        "com.fasterxml.jackson.core_jackson-core-2.13.5.jar",
        "com.github.luben_zstd-jni-1.5.7-3.jar",
        "org.apache.hadoop_hadoop-client-api-3.4.2.jar",
        "org.roaringbitmap_shims-0.9.25.jar",
    ]
    shipped = [
        "jackson-core-2.21.2.jar",
        "zstd-jni-1.5.7-7.jar",
        "hadoop-client-api-3.5.0.jar",
        "spark-core_2.13-4.2.1.jar",
        "RoaringBitmap-1.6.10.jar",
    ]
    assert spark_provided(resolved, shipped) == {
        "com.fasterxml.jackson.core_jackson-core-2.13.5.jar",
        "com.github.luben_zstd-jni-1.5.7-3.jar",
        "org.apache.hadoop_hadoop-client-api-3.4.2.jar",
    }


def test_python_env_points_workers_at_this_interpreter(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    session_module._python_env()
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    assert os.environ["PYSPARK_DRIVER_PYTHON"] == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/other/python")
    session_module._python_env()
    assert os.environ["PYSPARK_PYTHON"] == "/opt/other/python"  # never overridden


def test_spark_connect_url_from_the_setting_else_spark_remote(monkeypatch):
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert remote_url({}) == "" and remote_url(None) == ""
    monkeypatch.setenv("SPARK_REMOTE", "sc://env:15002")
    assert remote_url({}) == "sc://env:15002"
    assert remote_url({"remote": "sc://set:1"}) == "sc://set:1"


def test_a_connect_session_gets_the_url_and_runtime_sql_settings_only(monkeypatch):
    """Master, heap, jars and Delta's extension are the server's: fixed when it started."""
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    conf = connect_conf(
        {
            "remote": "sc://h:1",
            "master": "local[2]",
            "format": "delta",
            "spark_conf": {"spark.sql.shuffle.partitions": "8", "spark.driver.memory": "3g"},
        }
    )
    assert conf == {
        **{k: v for k, v in BASE_CONF.items() if k.startswith("spark.sql.")},
        "spark.sql.shuffle.partitions": "8",
        "spark.remote": "sc://h:1",
    }
    assert delta_missing({"format": "delta", "remote": "sc://h:1"}) is False  # the server has its classpath


def test_tasks_that_fit_asks_the_session_s_executors(spark):
    """The suite's local session: one executor whose managed memory (well under 1 TB) holds
    one task of 1 TB, not two; a task of one byte fits every slot."""
    from dlq_pipeline.engine.session import storage_memory_bytes, tasks_that_fit

    slots = spark.sparkContext.defaultParallelism
    assert slots > 1 and 0 < storage_memory_bytes(spark) < 2**40
    assert tasks_that_fit(spark, 2**40) == 1
    assert tasks_that_fit(spark, 1) is None


def test_the_suite_session_is_classic(spark):
    assert is_connect(spark) is False


def test_start_spark_tells_the_session_what_the_command_reads(tmp_path, monkeypatch):
    import dlq_pipeline.cli.common as common
    from dlq_pipeline.config import load_config

    seen = []
    monkeypatch.setattr(session_module, "get_spark", lambda settings: seen.append(settings) or object())
    monkeypatch.setattr(session_module, "is_connect", lambda spark: False)
    monkeypatch.setattr(common, "_check_default_fs", lambda spark, path: None)
    (tmp_path / "a.dmp").write_bytes(b"x" * 1000)
    config = load_config()
    common.start_spark(config, inputs=[str(tmp_path / "a.dmp")])
    common.start_spark(config)  # a command that reads the warehouse, or a live DLQ: size unknown
    assert [s["work_bytes"] for s in seen] == [1000, None]
    assert [session_module.quick_jit(s) for s in seen] == [True, False]
    assert not session_module.quick_jit({**seen[0], "quick_jit_bytes": 999})


@pytest.mark.parametrize("command", ["ingest", "run"])
def test_the_lease_of_a_delta_warehouse_starts_spark_told_what_the_command_reads(tmp_path, monkeypatch, command):
    """The writer lease starts the session before the command's own `start_spark`, which then
    gets it back: the lease's start must name the inputs, or the JVM misses its quick JIT."""
    from click.testing import CliRunner

    from dlq_pipeline.cli import cli

    class Started(Exception):
        pass

    seen = []
    monkeypatch.setattr(session_module, "delta_missing", lambda settings: False)
    monkeypatch.setattr(session_module, "get_spark", lambda settings: seen.append(settings) or _raise(Started()))
    dump = tmp_path / "a.dmp"
    dump.write_bytes(b"x" * 1000)
    rules = tmp_path / "r.rules"
    rules.write_text("ACTION(DISCARD)\n")
    args = {
        "ingest": ["ingest", str(dump)],
        "run": ["run", "--input", str(dump), "--rules", str(rules), "--target", "dry-run"],
    }[command]
    CliRunner().invoke(cli, [*args, "--warehouse", str(tmp_path / "wh"), "--format", "delta"])
    assert [s["work_bytes"] for s in seen] == [1000]


def _raise(exc: Exception):
    raise exc
