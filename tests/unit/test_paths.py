"""The one answer to "can Python open this path, and where": ingest, locks, replay, storage."""

from pathlib import Path

import pytest

from dlq_pipeline.runtime.paths import PathError, default_fs_problem, local_dir, local_path, plain_path


@pytest.mark.parametrize(
    "given, expected",
    [
        ("dbfs:/mnt/dumps/x.dmp", "/dbfs/mnt/dumps/x.dmp"),
        ("dbfs://mnt/dumps/x.dmp", "/dbfs/mnt/dumps/x.dmp"),
        ("dbfs:///mnt/dumps/x.dmp", "/dbfs/mnt/dumps/x.dmp"),
        ("/dbfs/mnt/dumps/x.dmp", "/dbfs/mnt/dumps/x.dmp"),
        ("/Volumes/main/dlq/dumps/x.dmp", "/Volumes/main/dlq/dumps/x.dmp"),
        ("file:/data/x.dmp", "/data/x.dmp"),
        ("file:///data/x.dmp", "/data/x.dmp"),
        ("file://localhost/data/x.dmp", "/data/x.dmp"),
        ("relative/x.dmp", "relative/x.dmp"),
        ("C:\\dumps\\x.dmp", "C:\\dumps\\x.dmp"),
    ],
)
def test_local_path(given, expected):
    assert local_path(given) == expected


@pytest.mark.parametrize(
    "uri",
    [
        "s3a://bucket/dumps",
        "abfss://c@acct.dfs.core.windows.net/d",
        "hdfs:///data/dumps",
        "gs://bucket/d",
        "file://otherhost/data/x.dmp",
    ],
)
def test_uris_only_hadoop_opens_are_a_path_error_naming_the_path_and_the_need(uri):
    with pytest.raises(PathError) as err:
        local_path(uri, needed_for="the warehouse lock")
    assert repr(uri) in str(err.value) and "the warehouse lock" in str(err.value)
    assert isinstance(err.value, ValueError)


def test_plain_path_leaves_dbfs_to_hadoop():
    assert plain_path("/tmp/wh") == "/tmp/wh"
    assert plain_path("file:/tmp/wh") == "/tmp/wh"
    assert plain_path("dbfs:/wh") is None
    assert plain_path("s3a://b/wh") is None


def test_local_dir_is_the_absolute_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert local_dir("wh") == tmp_path / "wh"
    assert local_dir("dbfs:/wh") == Path("/dbfs/wh")
    with pytest.raises(PathError, match="the warehouse lock"):
        local_dir("s3a://b/wh", needed_for="the warehouse lock")


def test_a_scheme_less_warehouse_on_an_hdfs_default_fs_is_refused_naming_both_places(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    problem = default_fs_problem("./warehouse", "hdfs://nn:8020", "hdfs://nn:8020/user/dlq/warehouse")
    local = (tmp_path / "warehouse").as_posix()
    assert problem == (
        "storage.path './warehouse' has no scheme and Spark's default file system (fs.defaultFS) is hdfs://nn:8020: "
        "Spark would keep the tables in hdfs://nn:8020/user/dlq/warehouse while the lock, replay's checkpoints and "
        f"the run summaries would use the local directory {local}. Write the full URI: "
        'storage.path = "hdfs://nn:8020/user/dlq/warehouse" (on HDFS: storage.format = "delta", storage.lock = '
        f'false) or "file://{local}" (a directory every node mounts)'
    )


@pytest.mark.parametrize(
    "path, default_fs",
    [
        ("./warehouse", "file:///"),
        ("/data/wh", "file:///"),
        ("/data/wh", ""),  # local: one place
        ("hdfs://nn/wh", "hdfs://nn"),
        ("file:///data/wh", "hdfs://nn"),
        ("dbfs:/wh", "hdfs://nn"),  # a full URI
    ],
)
def test_a_full_uri_or_a_local_default_fs_is_no_problem(path, default_fs):
    assert default_fs_problem(path, default_fs, "whatever") is None
