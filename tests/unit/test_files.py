"""fs, the filesystem layer for inputs: URI mapping, the seekable stream adapter the
remote stores read through, and the error for an object store that cannot be reached (here
without network: an endpoint on localhost that refuses). WebHDFS itself is tested against a
real HDFS in tests/cluster."""

from __future__ import annotations

import io
import os
import socket

import pyarrow.fs as pafs
import pytest

from dlq_pipeline.dumps.dmpmqmsg_reader import plan_splits, read_dump
from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.dumps.plan import input_bytes, plan_work
from dlq_pipeline.dumps.sources import expand_paths
from dlq_pipeline.fs import InputNotFound, InputUnreachable, is_local, list_files, reading_url
from dlq_pipeline.fs.objectstore import ArrowRaw


@pytest.mark.parametrize(
    "uri, webhdfs, url",
    [
        ("hdfs://nn:8020/data/dumps", "", "webhdfs://nn:9870/data/dumps"),
        ("hdfs://nn/data/x.dmp", "http://gateway:50070", "webhdfs://gateway:50070/data/x.dmp"),
        ("hdfs://nn/data/x.dmp", "https://nn:9871", "swebhdfs://nn:9871/data/x.dmp"),
        ("s3a://bucket/dumps", "http://ignored:1", "s3a://bucket/dumps"),
        ("/data/dumps", "", "/data/dumps"),
    ],
)
def test_reading_url_maps_hdfs_to_webhdfs_and_leaves_the_rest(uri, webhdfs, url):
    assert reading_url(uri, webhdfs) == url


def test_reading_url_rejects_what_cannot_name_a_namenode():
    with pytest.raises(ValueError, match="hdfs.webhdfs must be"):
        reading_url("hdfs://nn/x", "nn:9870")
    with pytest.raises(InputUnreachable, match="hdfs:///data"):
        reading_url("hdfs:///data/x", "")


@pytest.mark.parametrize(
    "path, local",
    [
        ("/data/x", True),
        ("relative/x", True),
        ("file:/data/x", True),
        ("dbfs:/x", True),
        ("/Volumes/cat/sch/vol/x", True),
        ("hdfs://nn/x", False),
        ("s3a://b/x", False),
        ("gs://b/x", False),
        ("abfss://c@a.dfs.core.windows.net/x", False),
        ("webhdfs://nn:9870/x", False),
    ],
)
def test_is_local(path, local):
    assert is_local(path) is local


def test_local_listing_names_absolute_paths_in_walk_order(tmp_path, monkeypatch):
    for name in ["b/2.dmp", "b/1.dmp", "a.dmp", "c/_skip.dmp", ".hidden/x.dmp", "c/d/3.dmp", "z.dmp"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    monkeypatch.chdir(tmp_path)
    expected = [str(tmp_path / n) for n in ["a.dmp", "z.dmp", "b/1.dmp", "b/2.dmp", "c/d/3.dmp"]]
    assert [name for name, _ in list_files(".")] == expected
    assert [url for _, url in list_files(".")] == expected
    assert expand_paths(["b/*.dmp", "a.dmp", "b/1.dmp"]) == expected[2:4] + expected[:1]
    with pytest.raises(InputNotFound, match="no file matches 'q\\*'"):
        list_files("q*")
    with pytest.raises(InputNotFound, match="no such file or directory: 'nothing'"):
        list_files("nothing")


def test_a_dump_read_through_the_stream_adapter_splits_as_the_local_file(tmp_path):
    """What the object stores hand the readers: a pyarrow file behind a 1 MiB buffer. Every
    split of a dump read through it gives the records of the same split read from the file."""
    [dump] = write_generated(tmp_path, 30, seed=5)
    local = pafs.LocalFileSystem()
    for start, end in plan_splits(dump, 3000):
        expected = list(read_dump(dump, name="d", start=start, end=end))
        with io.BufferedReader(ArrowRaw(local.open_input_file(str(dump))), 1 << 20) as f:
            assert list(read_dump(f, name="d", start=start, end=end)) == expected
    assert len(plan_splits(dump, 3000)) > 3


def _refusing_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # closed again: connections are refused


def test_an_unreachable_bucket_is_an_error_naming_the_path(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", _refusing_endpoint())
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(InputUnreachable) as caught:
        plan_work(["s3a://no-such-bucket/dumps"])
    message = str(caught.value)
    assert message.startswith("'s3a://no-such-bucket/dumps' cannot be reached: ")
    assert "does not exist" not in message and "connect" in message.lower()


def test_an_abfss_container_without_a_credential_is_an_error_naming_the_path(monkeypatch):
    """No Azure credential anywhere (the managed identity endpoint on localhost refuses): one
    error naming the input and the credential, not "does not exist"."""
    for var in [v for v in os.environ if v.startswith(("AZURE_", "IDENTITY_", "MSI_", "IMDS_"))]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("MSI_ENDPOINT", _refusing_endpoint() + "/token")  # not 169.254.169.254
    monkeypatch.setenv("PATH", "/nonexistent")  # no `az` CLI to ask
    uri = "abfss://dumps@nosuchaccount.dfs.core.windows.net/dlq"
    with pytest.raises(InputUnreachable) as caught:
        plan_work([uri])
    message = str(caught.value)
    assert message.startswith(f"{uri!r} cannot be reached: ")
    assert "does not exist" not in message and "DefaultAzureCredential" in message


def test_an_abfss_uri_without_an_account_is_an_error_naming_it():
    with pytest.raises(InputUnreachable, match="'abfss://dumps/x': an ABFS URI is abfss://CONTAINER@ACCOUNT"):
        list_files("abfss://dumps/x")


def test_an_unknown_scheme_is_an_error_naming_it():
    with pytest.raises(InputUnreachable, match="'ftp://host/x': no filesystem for 'ftp:'"):
        list_files("ftp://host/x")


def test_input_bytes_sums_the_files_the_inputs_name(tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "a.dmp").write_bytes(b"x" * 100)
    (tmp_path / "d" / "sub" / "b.dmp").write_bytes(b"y" * 23)
    (tmp_path / "c.dmp").write_bytes(b"z" * 7)
    assert input_bytes([str(tmp_path / "d"), str(tmp_path / "c.dmp")]) == 130
    assert input_bytes([]) == 0
    # a path that is not there is ingest's to report; the size is just unknown
    assert input_bytes([str(tmp_path / "c.dmp"), str(tmp_path / "missing")]) is None


def test_a_header_naming_its_queue_in_bytes_that_are_not_utf8_plans_readable_text(tmp_path):
    """The header's queue manager and queue are stored as the tables store text (U+FFFD for a
    byte that is not UTF-8): they went into every row of the file, and a lone surrogate there
    failed the ingest job when Arrow encoded the rows (found by tests/spark/test_jvm_reader.py)."""
    [dump] = write_generated(tmp_path, 2, seed=5, files=1)
    text = dump.read_bytes()
    dump.write_bytes(
        text.replace(b"* Qmgr  = QMHUB01", b"* Qmgr  = QM\xfbHUB", 1).replace(
            b"SYSTEM.DEAD.LETTER.QUEUE", b"SYSTEM.DEAD.LET\xfbER.QUEUE", 1
        )
    )
    [item] = plan_work([str(dump)])
    assert (item.qmgr, item.queue) == ("QM\ufffdHUB", "SYSTEM.DEAD.LET\ufffdER.QUEUE")
