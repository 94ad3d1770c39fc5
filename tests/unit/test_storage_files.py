"""Storage's own files (directories, a Parquet table's data files listed and read as a small
table, a Delta table's first commit looked for, the run summaries) through `dlq_pipeline.fs`,
the same on a local directory, on HDFS (``hdfs://`` reached at the ``webhdfs`` address: the
in-process fake, `webhdfs_fake`) and on an object store (pyarrow's filesystem over a local
directory mounted as ``s3a://``), with no Spark session: none of it needs a JVM, so a Spark
Connect client does the same. Spark's own reads and writes of the tables: tests/spark,
tests/cluster, tests/s3."""

from __future__ import annotations

import datetime as dt
import io
import json
import stat
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from dlq_pipeline import fs as files
from dlq_pipeline.warehouse.schemas import arrow_schema
from dlq_pipeline.warehouse.storage import Storage, local_table

sys.path.insert(0, str(Path(__file__).parent))
from webhdfs_fake import FakeWebHdfs  # noqa: E402

NO_SESSION = object()  # what Storage's own files are handled with: no SparkContext, no JVM gateway
AT = dt.datetime(2026, 12, 6, 22, 47, 50, 110569, tzinfo=dt.UTC)


@pytest.fixture(params=["local", "hdfs", "object-store"])
def warehouse(request, tmp_path):
    """(a Storage of a Parquet warehouse there, the local directory that holds it, whether the
    filesystem keeps permissions)."""
    root = tmp_path / "root"
    root.mkdir()
    if request.param == "local":
        yield Storage(NO_SESSION, path=str(root / "wh")), root / "wh", True
    elif request.param == "hdfs":
        with FakeWebHdfs(root) as fake:
            http = fake.uri.replace("webhdfs://", "http://")
            yield Storage(NO_SESSION, path="hdfs://namenode:8020/wh", webhdfs=http), root / "wh", True
    else:
        files.mount("s3a", pafs.SubTreeFileSystem(str(root), pafs.LocalFileSystem()))
        try:
            yield Storage(NO_SESSION, path="s3a://bucket/wh"), root / "bucket" / "wh", False
        finally:
            files.mount("s3a", None)


def _parquet(rows: list[tuple], table: str) -> bytes:
    schema = arrow_schema(table)
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema), out)
    return out.getvalue()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_run_summaries_are_written_owner_only_rewritten_and_read_back(warehouse):
    storage, root, has_modes = warehouse
    assert storage.read_summary("r1") is None
    path = storage.write_summary("r1", {"run_id": "r1", "finished_at": AT})
    assert path == f"{storage.path}/_runs/r1.json"
    assert storage.read_summary("r1") == {"run_id": "r1", "finished_at": "2026-12-06 22:47:50.110569+00:00"}
    storage.write_summary("r1", {"run_id": "again"})  # replaced whole, nothing left beside it
    assert storage.read_summary("r1") == {"run_id": "again"}
    assert json.loads((root / "_runs" / "r1.json").read_text()) == {"run_id": "again"}
    assert sorted(p.name for p in (root / "_runs").iterdir()) == ["r1.json"]
    assert storage.read_summary("../r1") is None  # a run id that names no file: no such run
    if has_modes:
        assert (_mode(root), _mode(root / "_runs"), _mode(root / "_runs" / "r1.json")) == (0o700, 0o700, 0o600)


def test_a_parquet_table_s_data_files_are_listed_and_read_as_a_small_table(warehouse):
    storage, root, _ = warehouse
    assert not storage.exists("landings") and storage.data_files("landings") == []
    assert storage.small_table("landings").num_rows == 0
    assert not root.exists()  # looking creates nothing
    table = root / "landings"
    table.mkdir(parents=True)
    assert not storage.exists("landings")  # an empty directory holds no table
    (table / "part-00001-a.snappy.parquet").write_bytes(_parquet([("r2", "stored", AT, ["m-1.parquet"])], "landings"))
    (table / "part-00000-b.snappy.parquet").write_bytes(_parquet([("r1", "landed", AT, None)], "landings"))
    for skipped in ("_SUCCESS", ".part-00000-b.snappy.parquet.crc", "_committed_1"):
        (table / skipped).write_bytes(b"")
    assert storage.exists("landings")
    assert storage.data_files("landings") == ["part-00000-b.snappy.parquet", "part-00001-a.snappy.parquet"]
    small = storage.small_table("landings")
    assert small.schema == arrow_schema("landings")
    assert small.to_pylist() == [
        {"run_id": "r1", "event": "landed", "at": AT, "files": None},
        {"run_id": "r2", "event": "stored", "at": AT, "files": ["m-1.parquet"]},
    ]


def test_a_delta_table_at_a_path_exists_once_its_first_commit_is_there(warehouse):
    storage, root, _ = warehouse
    delta = Storage(NO_SESSION, format="delta", path=storage.path, webhdfs=storage.webhdfs)
    log = root / "ledger" / "_delta_log"
    log.mkdir(parents=True)
    assert not delta.exists("ledger")  # a CREATE under way: its log, no commit yet
    (log / "00000000000000000000.json").write_text("{}\n")
    assert delta.exists("ledger")


def test_the_local_files_table_is_read_before_a_session_starts(tmp_path):
    where = str(tmp_path / "wh")
    table = tmp_path / "wh" / "files"
    table.mkdir(parents=True)
    assert local_table(where, "files") is None  # no rows
    row = ("/d/a.dmp", 10, AT, None, "r1", AT, 3, 0)
    (table / "part-0.parquet").write_bytes(_parquet([row], "files"))
    assert [tuple(r.values()) for r in local_table(where, "files").to_pylist()] == [row]
    assert local_table(where, "landings") is None  # no such table
    (table / "part-1.parquet").write_bytes(b"not parquet")
    assert local_table(where, "files") is None  # a file that cannot be read
    assert local_table("hdfs://namenode/wh", "files") is None  # not local: left to Spark
