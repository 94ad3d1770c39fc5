"""The one answer to "can Python open this path, and where": ingest, locks, replay, storage."""

from pathlib import Path

import pytest

from dlq_pipeline.paths import PathError, local_dir, local_path, plain_path


@pytest.mark.parametrize("given, expected", [
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
])
def test_local_path(given, expected):
    assert local_path(given) == expected


@pytest.mark.parametrize("uri", ["s3a://bucket/dumps", "abfss://c@acct.dfs.core.windows.net/d", "hdfs:///data/dumps",
                                 "gs://bucket/d", "file://otherhost/data/x.dmp"])
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
