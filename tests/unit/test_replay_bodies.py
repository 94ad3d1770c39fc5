"""Replay's reader of bodies where they lie (`dlq_pipeline.replay.bodies`): windows of work
items cut by their bodies' sizes, and each body read from the data file and row group that
hold it, over files of many row groups, more files than the reader keeps open, and nulls."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dlq_pipeline.replay import bodies
from dlq_pipeline.replay.bodies import Bodies, BodyNotFound, file_uri, windows


@given(st.lists(st.one_of(st.none(), st.integers(0, 300))), st.integers(1, 500))
def test_windows_cover_every_item_once_in_order_within_the_limit(lengths, limit):
    cut = list(windows(lengths, limit))
    assert [i for start, stop in cut for i in range(start, stop)] == list(range(len(lengths)))
    for start, stop in cut:
        sizes = [n or 0 for n in lengths[start:stop]]
        assert stop > start and (sum(sizes) <= limit or stop - start == 1)
    for (start, stop), _ in zip(cut, cut[1:]):  # a window ends only where the next body would not fit
        assert sum(n or 0 for n in lengths[start : stop + 1]) > limit


def write_table(path, keys, datas, row_group_size):
    table = pa.table({"message_key": keys, "data": pa.array(datas, pa.binary()), "n": list(range(len(keys)))})
    pq.write_table(table, path, row_group_size=row_group_size)
    return f"file:{path}"


@pytest.mark.parametrize("batch_rows", [1, 4, 1024])
def test_bodies_come_from_their_files_and_row_groups(tmp_path, monkeypatch, batch_rows):
    """Asked for in any order, across windows going back and forth in a file, over batches
    of one row, of four and of whole row groups."""
    monkeypatch.setattr(bodies, "OPEN_FILES", 2)  # three files: each index dropped and read again
    monkeypatch.setattr(bodies, "READ_BATCH_ROWS", batch_rows)
    files, expected = [], {}
    for f in range(3):
        keys = [f"k{f}-{i}" for i in range(40)]
        datas = [None if i == 7 else bytes([f, i]) * (i * 13 % 50) for i in range(40)]
        files.append(write_table(tmp_path / f"part {f}.parquet", keys, datas, row_group_size=6))
        expected.update({(files[-1], k): d for k, d in zip(keys, datas)})
    assert pq.ParquetFile(tmp_path / "part 0.parquet").num_row_groups == 7
    reader = Bodies()
    asked = [(files[(i * 7) % 3], f"k{(i * 7) % 3}-{(i * 11) % 40}") for i in range(90)]
    body_files = [None if i % 5 == 0 else f for i, (f, _) in enumerate(asked)]
    for window in (slice(0, 30), slice(30, 31), slice(31, 90), slice(0, 90), slice(45, 60), slice(2, 20)):
        got = reader.read(body_files[window], [k for _, k in asked[window]])
        assert got == [None if f is None else expected[(f, k)] for f, (_, k) in zip(body_files, asked)][window]
    # a scan's file path is percent-encoded, as Hadoop writes it
    encoded = files[1].replace(" ", "%20")
    assert reader.read([encoded], ["k1-3"]) == [expected[(files[1], "k1-3")]]


def test_a_message_not_in_its_file_names_the_file(tmp_path):
    path = write_table(tmp_path / "part.parquet", ["a", "b"], [b"1", b"2"], 1)
    with pytest.raises(BodyNotFound, match=r"message c is not in .*part\.parquet"):
        Bodies().read([path, path], ["a", "c"])


def test_file_uris_are_the_fs_layers():
    assert file_uri("file:/w/messages/part%20a.parquet") == "/w/messages/part a.parquet"
    assert file_uri("dbfs:/w/messages/p.parquet") == "/dbfs/w/messages/p.parquet"  # Databricks' mount
    assert file_uri("hdfs://nn:8020/w/m/p.parquet", "http://nn:9870") == "webhdfs://nn:9870/w/m/p.parquet"
    assert file_uri("s3a://bucket/w/m/p.parquet") == "s3a://bucket/w/m/p.parquet"


def test_reading_a_file_of_large_messages_holds_a_batch_not_the_file(tmp_path):
    """Bodies read in file order keep Arrow's memory to what a batch holds: a reader that
    kept every row group it had read would hold the whole file (a Python worker of 21 GB
    over 100 messages of 100 MB)."""
    size, count = 4 * 1024 * 1024, 16
    keys = [f"k{i:02d}" for i in range(count)]
    datas = [random.Random(i).randbytes(size) for i in range(count)]  # as incompressible as payloads are
    path = tmp_path / "large.parquet"
    # as `messages` is: a struct column (the MQMD's fields) before `data`, a row group a message
    md = pa.array([{"priority": i, "persistence": 1} for i in range(count)])
    table = pa.table({"message_key": keys, "md": md, "data": pa.array(datas, pa.binary())})
    pq.write_table(table, path, row_group_size=1)
    reader, peak = Bodies(), 0
    before = pa.total_allocated_bytes()
    for key, data in zip(keys, datas):
        [body] = reader.read([str(path)], [key])
        assert body == data
        del body
        peak = max(peak, pa.total_allocated_bytes() - before)
    assert peak < 6 * size, f"{peak / size:.1f} messages' worth held by Arrow"
