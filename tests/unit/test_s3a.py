"""`dlq_pipeline.engine.s3a`: which paths are on S3, and the S3A settings a local session gets
from the AWS SDKs' standard variables (the ones pyarrow reads too), never a credential."""

from __future__ import annotations

import pytest

from dlq_pipeline.engine import s3a
from dlq_pipeline.engine.session import CLASSPATH, s3a_missing, session_conf

KEY = "AKIAEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def test_paths_on_s3_are_s3a_s3_and_s3n_targets_included():
    assert s3a.uses_s3(["./wh", "s3a://b/dumps"]) and s3a.uses_s3(["dir:s3://b/out"]) and s3a.uses_s3(["s3n://b/x"])
    assert not s3a.uses_s3(["./wh", "hdfs://nn/x", "gs://b/x", "dir:/out", "", "dry-run"])


def test_the_settings_follow_the_standard_variables_and_carry_no_credential():
    env = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET,
    }
    conf = s3a.spark_conf(env)
    assert conf == {
        "spark.hadoop.fs.s3a.aws.credentials.provider": s3a.CREDENTIALS_PROVIDER,
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.executorEnv.AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000",
        "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1",
        "spark.executorEnv.AWS_REGION": "eu-west-1",
    }
    assert KEY not in str(conf) and SECRET not in str(conf)
    # the S3-specific variable wins, as in the AWS SDKs; with nothing set, AWS and the SDK's chain
    assert s3a.spark_conf({**env, "AWS_ENDPOINT_URL_S3": "http://s3.local"})["spark.hadoop.fs.s3a.endpoint"] == (
        "http://s3.local"
    )
    assert s3a.spark_conf({}) == {"spark.hadoop.fs.s3a.aws.credentials.provider": s3a.CREDENTIALS_PROVIDER}


def test_the_configuration_sets_the_variables_every_client_reads():
    assert s3a.environment("http://minio:9000", "us-east-1") == {
        "AWS_ENDPOINT_URL_S3": "http://minio:9000",
        "AWS_REGION": "us-east-1",
    }
    assert s3a.environment() == {}


def test_the_connector_matches_the_hadoop_inside_pyspark():
    version = s3a.hadoop_version()
    assert version[0].isdigit() and s3a.package() == f"org.apache.hadoop:hadoop-aws:{version}"
    assert s3a.jar_dir().name == f"s3a-hadoop{version}"


@pytest.fixture
def fetched(tmp_path, monkeypatch):
    """A jar cache holding the S3A jars (names only: nothing here starts a JVM)."""
    monkeypatch.setenv("DLQ_PIPELINE_JARS", str(tmp_path))
    folder = s3a.jar_dir()
    folder.mkdir(parents=True)
    names = ["org.apache.hadoop_hadoop-aws-x.jar", "software.amazon.awssdk_bundle-x.jar"]
    for name in names:
        (folder / name).write_bytes(b"")
    (folder / "jars.txt").write_text("\n".join(names) + "\n")
    return [str(folder / n) for n in names]


def test_a_local_session_on_s3_gets_the_jars_and_the_settings_and_the_users_own_win(fetched, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")
    conf = session_conf({"s3a": True, "spark_conf": {"spark.hadoop.fs.s3a.path.style.access": "false"}})
    assert all(jar in conf[CLASSPATH].split(":") for jar in fetched)
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "false"  # the user's setting
    plain = session_conf({})
    assert "fs.s3a" not in " ".join(plain) and not any(j in plain.get(CLASSPATH, "") for j in fetched)
    assert not s3a_missing({"s3a": True})


def test_without_the_jars_a_session_on_s3_is_known_to_miss_the_connector(tmp_path, monkeypatch):
    from pyspark.sql import SparkSession

    # no session in this process yet (a worker of the suite may have one: it would be judged instead)
    monkeypatch.setattr(SparkSession, "getActiveSession", staticmethod(lambda: None))
    monkeypatch.setenv("DLQ_PIPELINE_JARS", str(tmp_path))
    assert s3a.cached_jars() == []
    assert s3a_missing({"s3a": True}) and not s3a_missing({})
    # named on the command line (spark-submit --packages): present
    assert not s3a_missing({"s3a": True, "spark_conf": {"spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.5.0"}})
