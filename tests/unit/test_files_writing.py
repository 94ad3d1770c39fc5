"""fs, writing: the same behaviour on a local directory, on WebHDFS (an in-process
fake, `webhdfs_fake`; tests/cluster runs the pipeline on a real HDFS) and on the object-store
code path (pyarrow's filesystem over a local directory mounted as ``s3a://``, as no S3 server
runs here): create-exclusive, atomic publish, never-replacing rename, listing, reading,
deleting; permissions where the filesystem has them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from dlq_pipeline import fs as files

sys.path.insert(0, str(Path(__file__).parent))
from webhdfs_fake import FakeWebHdfs  # noqa: E402


@pytest.fixture(params=["local", "webhdfs", "object-store"])
def place(request, tmp_path):
    """(the base URI to write under, the local directory that holds what is written there,
    whether the filesystem keeps permissions)."""
    root = tmp_path / "root"
    root.mkdir()
    if request.param == "local":
        yield str(root), root, True
    elif request.param == "webhdfs":
        with FakeWebHdfs(root) as fake:
            yield f"{fake.uri}/", root, True
    else:
        files.mount("s3a", pafs.SubTreeFileSystem(str(root), pafs.LocalFileSystem()))
        try:
            yield "s3a://bucket", root / "bucket", False
        finally:
            files.mount("s3a", None)


def _visible(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_write_file_is_create_exclusive_and_publishes_whole(place, tmp_path):
    base, root, has_modes = place
    uri = files.join(base, "ckpt", "run", "00000000.json")
    assert files.write_file(uri, b'{"a": 1}')
    assert not files.write_file(uri, b'{"a": 2}')  # exists: nothing written
    assert files.read_bytes(uri) == b'{"a": 1}'
    assert files.write_file(uri, b'{"a": 3}', replace=True)
    assert files.read_bytes(uri) == b'{"a": 3}'
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(3 << 20))  # from a local file, streamed
    assert files.write_file(files.join(base, "out", "big.dmp"), str(big), mode=0o640, dir_mode=0o750)
    assert _visible(root) == {"ckpt/run/00000000.json": b'{"a": 3}', "out/big.dmp": big.read_bytes()}  # no temp left
    if has_modes:
        assert oct((root / "ckpt/run/00000000.json").stat().st_mode & 0o777) == "0o600"  # owner-only by default
        assert oct((root / "ckpt").stat().st_mode & 0o777) == "0o700"
        assert oct((root / "out/big.dmp").stat().st_mode & 0o777) == "0o640"
        assert oct((root / "out").stat().st_mode & 0o777) == "0o750"


def test_write_file_move_links_a_local_file_and_copies_it_elsewhere(place, tmp_path, monkeypatch):
    base, root, has_modes = place
    source = tmp_path / "scratch.dmp"
    source.write_bytes(b"dump " * 1000)
    inode = source.stat().st_ino
    uri = files.join(base, "staging", "000000.dmp")
    assert files.write_file(uri, str(source), mode=0o640, dir_mode=0o750, move=True)
    assert not files.write_file(uri, str(source), move=True)  # create-exclusive: exists, nothing written
    assert _visible(root) == {"staging/000000.dmp": b"dump " * 1000}
    if base == str(root):  # the same local filesystem: the very file, not a copy
        assert (root / "staging/000000.dmp").stat().st_ino == inode
        assert oct((root / "staging/000000.dmp").stat().st_mode & 0o777) == "0o640"
        assert oct((root / "staging").stat().st_mode & 0o777) == "0o750"

        def cross_device(src, dst):
            raise OSError(18, "Invalid cross-device link")

        monkeypatch.setattr(os, "link", cross_device)  # another filesystem: copied (create-exclusive by rename)
        assert files.write_file(files.join(base, "other.dmp"), str(source), move=True)
        assert (root / "other.dmp").read_bytes() == source.read_bytes()
        assert (root / "other.dmp").stat().st_ino != inode


def test_rename_never_replaces_and_listing_reading_deleting(place):
    base, root, _ = place
    a, b = files.join(base, "d", ".staging", "a"), files.join(base, "d", "q", "b")
    files.write_file(a, b"A")
    files.write_file(files.join(base, "d", "q", "c"), b"C")
    assert files.rename(a, b) and files.read_bytes(b) == b"A" and not files.exists(a)
    files.write_file(a, b"A2")
    assert not files.rename(a, b)  # b exists: refused, both kept
    assert (files.read_bytes(a), files.read_bytes(b)) == (b"A2", b"A")
    assert files.list_names(files.join(base, "d", "q")) == ["b", "c"]
    assert files.list_names(files.join(base, "nothing")) == [] and files.read_bytes(files.join(base, "no")) is None
    assert files.is_dir(files.join(base, "d")) and not files.is_dir(b)
    files.remove_empty_dir(files.join(base, "d", "q"))  # not empty: left alone
    assert files.list_names(files.join(base, "d", "q")) == ["b", "c"]
    files.delete(files.join(base, "d", "q"))
    files.delete(files.join(base, "d", "q"))  # gone already: nothing
    assert not files.exists(b) and files.list_names(files.join(base, "d")) == [".staging"]


def test_make_dirs_list_sizes_and_delete_say_what_is_there(place):
    base, root, has_modes = place
    table = files.join(base, "wh", "files")
    assert files.list_sizes(table) == {}  # no such directory
    files.make_dirs(table)
    assert files.is_dir(table) and files.list_sizes(table) == {}
    files.write_file(files.join(table, "part-0.parquet"), b"12345")
    files.write_file(files.join(table, "part-1.parquet"), b"")
    files.write_file(files.join(table, "sub", "deeper.parquet"), b"1")
    assert files.list_sizes(table) == {"part-0.parquet": 5, "part-1.parquet": 0}  # its files, not below
    if has_modes:
        assert [oct((root / d).stat().st_mode & 0o777) for d in ("wh", "wh/files")] == ["0o700", "0o700"]
        os.chmod(root / "wh", 0o755)
        files.make_dirs(files.join(base, "wh", "other", "deeper"), mode=0o750)
        assert oct((root / "wh").stat().st_mode & 0o777) == "0o755"  # an existing directory is left as it is
        assert oct((root / "wh/other").stat().st_mode & 0o777) == "0o750"
        assert oct((root / "wh/other/deeper").stat().st_mode & 0o777) == "0o750"
    assert files.delete(files.join(table, "part-1.parquet"))
    assert files.delete(table)  # the tree
    assert not files.delete(table) and not files.exists(table)  # nothing there: False


def test_files_uri_names_the_warehouse_as_the_layer_reaches_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert files.files_uri("wh") == str(tmp_path / "wh")
    assert files.files_uri("hdfs://nn:8020/dlq/wh", "http://nn:50070") == "webhdfs://nn:50070/dlq/wh"
    assert files.files_uri("s3a://bucket/wh") == "s3a://bucket/wh"
    assert files.files_uri("dbfs:/mnt/wh") == "dbfs:/mnt/wh"
