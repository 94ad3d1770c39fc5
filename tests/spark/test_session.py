"""The session factory: reuse what exists, otherwise sensible local defaults; Delta only when it can work."""

from __future__ import annotations

import os
import sys

import pytest

from dlq_pipeline.spark import session as session_module
from dlq_pipeline.spark.session import DELTA_CATALOG, DELTA_EXTENSION, delta_available, get_spark, session_conf


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
    conf = session_conf({"master": "local[3]", "app_name": "x",
                         "spark_conf": {"spark.sql.shuffle.partitions": 16, "spark.executor.memory": "2g"}})
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
    assert session_conf({"master": "local[2]", "spark_conf": {"spark.driver.memory": "3g"}})["spark.driver.memory"] == "3g"
    assert "spark.driver.memory" not in session_conf({"master": "spark://host:7077"})
    # spark-submit started the JVM already: what it was told stands
    assert "spark.driver.memory" not in session_conf({"master": "local[2]"}, {"spark.master": "local[2]"})


def test_session_conf_rejects_unknown_settings():
    with pytest.raises(ValueError, match="unknown settings"):
        session_conf({"mastr": "local[1]"})


def test_delta_confs_only_when_delta_can_be_loaded(monkeypatch):
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    monkeypatch.setattr(session_module, "_delta_package", lambda: None)
    without = session_conf({"format": "delta"})
    assert "spark.sql.catalog.spark_catalog" not in without  # would break every query
    assert DELTA_EXTENSION not in without.get("spark.sql.extensions", "")

    with_jars = session_conf({"format": "delta", "spark_conf": {
        "spark.jars.packages": "io.delta:delta-spark_2.13:4.0.0", "spark.sql.extensions": "my.Ext"}})
    assert with_jars["spark.sql.extensions"] == f"my.Ext,{DELTA_EXTENSION}"
    assert with_jars["spark.sql.catalog.spark_catalog"] == DELTA_CATALOG

    monkeypatch.setattr(session_module, "_delta_package", lambda: "io.delta:delta-spark_4.3_2.13:9.9.9")
    from_pip = session_conf({"format": "delta"})
    assert from_pip["spark.jars.packages"] == "io.delta:delta-spark_4.3_2.13:9.9.9"
    assert from_pip["spark.sql.catalog.spark_catalog"] == DELTA_CATALOG

    parquet = session_conf({"format": "parquet"})
    assert "spark.sql.catalog.spark_catalog" not in parquet and "spark.jars.packages" not in parquet


def test_delta_is_not_on_this_classpath(spark, monkeypatch):
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    assert delta_available(spark) is False  # no Maven here: the Parquet path is what runs


def test_python_env_points_workers_at_this_interpreter(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    session_module._python_env()
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    assert os.environ["PYSPARK_DRIVER_PYTHON"] == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/other/python")
    session_module._python_env()
    assert os.environ["PYSPARK_PYTHON"] == "/opt/other/python"  # never overridden
