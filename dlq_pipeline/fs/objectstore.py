"""S3, GCS and Azure through ``pyarrow.fs``: paths inside are ``bucket/key``. A write is one
PUT (a multipart upload appears only when it completes); there is no create-exclusive, so a
write checks first (the names written are unique to their writer, and the lease keeps one
writer per warehouse). Credentials, endpoint and region come from each node's environment
(`dlq_pipeline.engine.s3a` gives Spark's S3A the same)."""

from __future__ import annotations

import datetime as dt
import io
import os
import urllib.parse
from typing import BinaryIO

from dlq_pipeline.fs.base import BUFFER, Entry, InputUnreachable, Source, copy_source

OBJECT_STORES = {"s3a": "s3", "s3": "s3", "s3n": "s3", "gs": "gcs", "gcs": "gcs", "abfss": "abfs", "abfs": "abfs"}
MOUNTS: dict = {}  # scheme -> pyarrow filesystem that replaces the built-in one (`mount`)


def mount(scheme: str, filesystem) -> None:
    """Serve ``scheme://root/key`` in this process from the pyarrow ``filesystem`` (path
    ``root/key`` in it) instead of the cloud store (None: unmount). For tests: the object
    store's code path on a `pyarrow.fs.SubTreeFileSystem` over a local directory."""
    if filesystem is None:
        MOUNTS.pop(scheme, None)
    else:
        MOUNTS[scheme] = filesystem


def _entry(uri: str, info) -> Entry:
    """An `Entry` of a ``pyarrow.fs.FileInfo`` (which gives no ETag or version id: a rewritten
    object is known by its size and modification time, which every PUT sets)."""
    import pyarrow.fs as pafs

    if info.type == pafs.FileType.Directory:
        return Entry(uri, True, 0)
    modified = info.mtime
    if modified is not None and modified.tzinfo is None:
        modified = modified.replace(tzinfo=dt.UTC)
    return Entry(uri, False, info.size or 0, modified)


class ObjectStoreFiles:
    """S3, GCS and Azure through ``pyarrow.fs``; paths inside are ``bucket/key``."""

    def __init__(self, uri: str):
        import pyarrow.fs as pafs

        parsed = urllib.parse.urlparse(uri)
        kind = OBJECT_STORES.get(parsed.scheme)
        self.prefix = f"{parsed.scheme}://{parsed.netloc}"
        if parsed.scheme in MOUNTS:
            self.fs = MOUNTS[parsed.scheme]
            self.root = parsed.netloc
        elif kind == "s3":
            endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None
            self.fs = pafs.S3FileSystem(
                endpoint_override=endpoint,
                connect_timeout=10,
                request_timeout=60,
                retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=3),
            )
            self.root = parsed.netloc
        elif kind == "gcs":
            self.fs = pafs.GcsFileSystem()
            self.root = parsed.netloc
        else:
            container, _, host = parsed.netloc.partition("@")
            if not container or not host:
                raise InputUnreachable(f"{uri!r}: an ABFS URI is abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH")
            self.fs = pafs.AzureFileSystem(account_name=host.split(".")[0])
            self.root = container

    def _path(self, uri: str) -> str:
        return (self.root + "/" + urllib.parse.urlparse(uri).path.lstrip("/")).rstrip("/")

    def _call(self, uri: str, what, *args):
        import pyarrow as pa

        try:
            return what(*args)
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException) as exc:  # Azure's credential errors are plain ArrowExceptions
            raise InputUnreachable(f"{uri!r} cannot be reached: {exc}") from None

    def info(self, uri: str) -> Entry | None:
        import pyarrow.fs as pafs

        found = self._call(uri, self.fs.get_file_info, self._path(uri))
        if found.type == pafs.FileType.NotFound:
            return None
        return _entry(uri.rstrip("/"), found)

    def children(self, uri: str) -> list[Entry]:
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self._path(uri), recursive=False, allow_not_found=True)
        found = self._call(uri, self.fs.get_file_info, selector)
        parent = uri.rstrip("/")
        return [_entry(f"{parent}/{f.base_name}", f) for f in found]

    def open(self, uri: str) -> BinaryIO:
        native = self._call(uri, self.fs.open_input_file, self._path(uri))
        return io.BufferedReader(ArrowRaw(native), BUFFER)

    def put(self, uri: str, source: Source, mode: int, replace: bool, dir_mode: int) -> bool:
        if not replace and self.info(uri) is not None:
            return False
        path = self._path(uri)
        self._call(uri, self.fs.create_dir, path.rpartition("/")[0])

        def upload():
            with self.fs.open_output_stream(path) as out:  # one PUT (or a multipart upload completed at close)
                copy_source(source, out)

        self._call(uri, upload)
        return True

    def rename(self, src: str, dst: str, dir_mode: int) -> bool:
        if self.info(dst) is not None:
            return False
        self._call(dst, self.fs.create_dir, self._path(dst).rpartition("/")[0])
        self._call(src, self.fs.move, self._path(src), self._path(dst))  # S3: copy, then delete
        return True

    def read(self, uri: str) -> bytes | None:
        def whole():
            with self.fs.open_input_stream(self._path(uri)) as f:
                return f.read()

        try:
            return self._call(uri, whole)
        except FileNotFoundError:
            return None

    def names(self, uri: str) -> list[str]:
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self._path(uri), recursive=False, allow_not_found=True)
        return sorted(f.base_name for f in self._call(uri, self.fs.get_file_info, selector))

    def make_dirs(self, uri: str, mode: int) -> None:
        # a marker object, as Hadoop's S3A makes one; no permissions here (the bucket's policy decides)
        if self.info(uri) is None:
            self._call(uri, self.fs.create_dir, self._path(uri))

    def delete(self, uri: str) -> bool:
        found = self.info(uri)
        if found is None:
            return False
        path = self._path(uri)
        self._call(uri, self.fs.delete_dir if found.is_dir else self.fs.delete_file, path)
        return True

    def remove_empty(self, uri: str) -> None:
        pass  # an object store's directories are the keys' prefixes: none is left without its objects

    def probe(self, uri: str) -> None:
        import pyarrow.fs as pafs

        found = self._call(uri, self.fs.get_file_info, self.root)
        if found.type == pafs.FileType.NotFound:
            raise InputUnreachable(f"{uri!r} cannot be reached: there is no bucket {self.root!r}")


class ArrowRaw(io.RawIOBase):
    def __init__(self, native):
        self.native = native

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.native.tell()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self.native.seek(offset, whence)

    def readinto(self, buffer) -> int:
        data = self.native.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.native.close()
        super().close()
