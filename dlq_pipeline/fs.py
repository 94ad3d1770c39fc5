"""The one filesystem layer of the pipeline's Python code, on the driver and on executors.

Ingest's driver lists inputs and plans splits, and the executors' Python workers read their
byte ranges; replay's checkpoints, the writer lease's fence file and the ``dir:`` target's
dmpmqmsg files are written through it too (see "Writing" below). Every place a file can be:

==========================================  ===================================================
``/data/x``, ``file:/data/x``, ``dbfs:/x``,  Python's own files (``dbfs:/x`` through the
``/Volumes/...``                             ``/dbfs`` mount): what every node mounts
``hdfs://nn[:port]/x``                       WebHDFS at the NameNode's HTTP address
                                             (``hdfs.webhdfs``, default ``http://nn:9870``)
``webhdfs://nn:httpport/x``, ``swebhdfs://`` WebHDFS (Hadoop's own URI for it; https for swebhdfs)
``s3a://b/x`` (``s3://``, ``s3n://``)        ``pyarrow.fs.S3FileSystem``
``gs://b/x``                                 ``pyarrow.fs.GcsFileSystem``
``abfss://container@account.dfs.../x``       ``pyarrow.fs.AzureFileSystem``
==========================================  ===================================================

Why not one of the other routes (docs/deploy.md "Inputs"):

- Hadoop's FileSystem through the JVM reaches everything Spark is configured for, but only
  the driver's Python has a JVM gateway; an executor's Python worker has none, so the bytes
  would have to be read by Spark's JVM (``binaryFile`` holds a whole file in memory; ``text``
  loses byte offsets and non-UTF-8 bytes), giving up the streaming, bounded-memory reader.
- ``pyarrow.fs.HadoopFileSystem`` needs ``libhdfs.so`` and a Hadoop CLASSPATH on every
  executor; pip's pyspark and pyarrow ship neither, so it is not used for ``hdfs://``.
  WebHDFS is plain HTTP: NameNode for metadata, redirected to a DataNode for the bytes,
  read from any offset, streaming.
- ``pyarrow.fs`` has S3, GCS and Azure built in (pyarrow is already a dependency), so the
  object stores need nothing more. Their credentials come from each node's environment (the
  standard AWS/Google/Azure variables, profiles, instance roles, managed identities); for S3
  Spark's S3A connector is given the same chain, endpoint and region
  (`dlq_pipeline.engine.s3a`). ``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``) points S3 at
  another endpoint.

A file is read through a 1 MiB buffer over a seekable stream (one HTTP request per sequential
run for WebHDFS, ranged reads for object stores), so memory stays what it is for local files.
Anything that goes wrong reaching a remote path is an `InputUnreachable` naming that path.

**Writing** (`write_new`, `write_file`, `rename`, `read_bytes`, `list_names`, `delete`,
`is_dir`): small immutable objects and whole files, published so that a reader never sees
half of one:

- local: written under a hidden temporary name in the same directory, fsynced, then
  ``link``-ed (create-exclusive) or renamed into place; directories made owner-only. A
  local file the caller hands over (`write_file` ``move``) on the same filesystem is
  fsynced and linked into place itself: a 20 GB dump is not copied;
- HDFS (WebHDFS): ``CREATE`` (``overwrite=false``, ``permission=``) of a hidden temporary
  name, then ``RENAME`` (which never replaces an existing file); ``LISTSTATUS``, ``DELETE``;
- object stores (``pyarrow.fs``): one PUT (a multipart upload appears only when it
  completes). An object store has no create-exclusive: `write_new` checks first and then
  puts, which is exclusive only because the names written are unique to their writer (a run
  id, a partition, a sequence number) and the warehouse has one writer at a time (the lease).
  Permissions do not apply there (the bucket's policy decides).

Unit tests reach the object-store code with any ``pyarrow.fs`` filesystem (`mount`); the
``s3`` tier runs it against an S3 server (tests/s3/).
"""

from __future__ import annotations

import fnmatch
import getpass
import http.client
import io
import json
import os
import re
import secrets
import shutil
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import BinaryIO, Literal, cast, overload

from dlq_pipeline.errors import DlqPipelineError
from dlq_pipeline.runtime.paths import local_path, plain_path
from dlq_pipeline.runtime.permissions import DIR_MODE, FILE_MODE, private_dirs

__all__ = [
    "InputUnreachable",
    "InputNotFound",
    "open_input",
    "file_size",
    "list_files",
    "is_local",
    "reading_url",
    "files_uri",
    "write_file",
    "rename",
    "read_bytes",
    "list_names",
    "delete",
    "remove_empty_dir",
    "is_dir",
    "exists",
    "join",
    "mount",
    "probe",
]

BUFFER = 1 << 20
WEBHDFS_PORT = 9870  # the NameNode's HTTP port since Hadoop 3
TIMEOUT = 60  # seconds for one HTTP request
_GLOB_CHARS = re.compile(r"[*?\[]")
_ARROW = {"s3a": "s3", "s3": "s3", "s3n": "s3", "gs": "gcs", "gcs": "gcs", "abfss": "abfs", "abfs": "abfs"}
_WEBHDFS = {"webhdfs": "http", "swebhdfs": "https"}


class InputUnreachable(DlqPipelineError, OSError):
    """A remote input that cannot be listed or read (no credentials, no bucket, no network)."""


class InputNotFound(DlqPipelineError, FileNotFoundError):
    """Nothing is at an input path (it was reached: the file or directory is not there)."""


def is_local(path: str) -> bool:
    """Whether Python opens ``path`` as a file of its own (local, ``file:``, ``dbfs:``)."""
    return urllib.parse.urlparse(path).scheme == "dbfs" or plain_path(path) is not None


def reading_url(uri: str, webhdfs: str = "") -> str:
    """The URL executors open for ``uri``: ``hdfs://nn/x`` becomes ``webhdfs://nn:9870/x`` (or
    the ``webhdfs`` base URL given, ``http[s]://host:port``); everything else stays as it is."""
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme != "hdfs":
        return uri
    if webhdfs:
        base = urllib.parse.urlparse(webhdfs)
        scheme = {"http": "webhdfs", "https": "swebhdfs"}.get(base.scheme)
        if scheme is None or not base.netloc:
            raise ValueError(f"hdfs.webhdfs must be http://HOST:PORT or https://HOST:PORT, not {webhdfs!r}")
        return f"{scheme}://{base.netloc}{parsed.path}"
    if not parsed.hostname:
        raise InputUnreachable(
            f"{uri!r} names no NameNode (hdfs:///path): write hdfs://NAMENODE/path or set "
            "hdfs.webhdfs to the NameNode's HTTP address"
        )
    return f"webhdfs://{parsed.hostname}:{WEBHDFS_PORT}{parsed.path}"


@dataclass(frozen=True)
class Entry:
    uri: str
    is_dir: bool
    size: int


# --- the stores ----------------------------------------------------------------------------


class _Local:
    def __init__(self, uri: str):
        self.path = local_path(uri)

    def info(self, uri: str) -> Entry | None:
        path = local_path(uri)
        if os.path.isfile(path):
            return Entry(os.path.abspath(path), False, os.path.getsize(path))
        if os.path.isdir(path):
            return Entry(os.path.abspath(path), True, 0)
        return None

    def walk(self, uri: str) -> list[str]:
        found = []
        for root, dirs, files in os.walk(local_path(uri)):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
            found += [os.path.join(root, f) for f in sorted(files) if not f.startswith((".", "_"))]
        return found

    def open(self, uri: str) -> BinaryIO:
        return open(local_path(uri), "rb", buffering=BUFFER)

    def put(self, uri: str, source: Source, mode: int, replace: bool, dir_mode: int) -> bool:
        path = local_path(uri)
        directory = private_dirs(os.path.dirname(os.path.abspath(path)), dir_mode)
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            os.fchmod(fd, mode)  # the umask may have masked the mode given
            with os.fdopen(fd, "wb") as f:
                _copy(source, f)
                f.flush()
                os.fsync(f.fileno())
            if replace:
                os.replace(tmp, path)
                return True
            try:
                os.link(tmp, path)  # create-exclusive, with the whole content
            except FileExistsError:
                return False
            except OSError:  # no hard links here (some FUSE mounts): check, then rename
                if os.path.exists(path):
                    return False
                os.replace(tmp, path)
            return True
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def link_in(self, uri: str, source: str, mode: int, dir_mode: int) -> bool | None:
        """Publish the local file ``source`` at ``uri`` by a hard link, create-exclusive;
        None where it cannot be linked (another filesystem, no hard links): copy it."""
        path = local_path(uri)
        if os.path.exists(path):
            return False  # (the link below is the create-exclusive test; this keeps ``source``'s mode)
        private_dirs(os.path.dirname(os.path.abspath(path)), dir_mode)
        with open(source, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(source, mode)  # before it is visible under its final name
        try:
            os.link(source, path)
        except FileExistsError:
            return False
        except OSError:
            return None
        return True

    def rename(self, src: str, dst: str, dir_mode: int) -> bool:
        dst = local_path(dst)
        if os.path.exists(dst):
            return False
        private_dirs(os.path.dirname(os.path.abspath(dst)), dir_mode)
        os.replace(local_path(src), dst)
        return True

    def read(self, uri: str) -> bytes | None:
        try:
            with open(local_path(uri), "rb") as f:
                return f.read()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def names(self, uri: str) -> list[str]:
        try:
            return sorted(os.listdir(local_path(uri)))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def delete(self, uri: str) -> None:
        path = local_path(uri)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)

    def remove_empty(self, uri: str) -> None:
        try:
            os.rmdir(local_path(uri))
        except OSError:
            pass


class _WebHdfs:
    """WebHDFS's REST API (Hadoop's ``FileSystem`` over HTTP): metadata from the NameNode, data
    from the DataNode it redirects to. The user is ``HADOOP_USER_NAME`` or the OS user."""

    def __init__(self, uri: str):
        parsed = urllib.parse.urlparse(uri)
        self.scheme = parsed.scheme
        self.base = f"{_WEBHDFS[parsed.scheme]}://{parsed.netloc}"
        self.prefix = f"{parsed.scheme}://{parsed.netloc}"
        self.user = os.environ.get("HADOOP_USER_NAME") or getpass.getuser()

    def url(self, uri: str, op: str, **params) -> str:
        path = urllib.parse.urlparse(uri).path or "/"
        query = urllib.parse.urlencode({"op": op, "user.name": self.user, **params})
        return f"{self.base}/webhdfs/v1{urllib.parse.quote(path)}?{query}"

    def info(self, uri: str) -> Entry | None:
        found = self._call(uri, "GET", "GETFILESTATUS", missing_ok=True)
        if found is None:
            return None
        status = found["FileStatus"]
        return Entry(uri.rstrip("/") or uri, status["type"] == "DIRECTORY", int(status["length"]))

    def children(self, uri: str) -> list[Entry]:
        found = self._call(uri, "GET", "LISTSTATUS", missing_ok=True) or {"FileStatuses": {"FileStatus": []}}
        parent = uri.rstrip("/")
        return [
            Entry(f"{parent}/{s['pathSuffix']}", s["type"] == "DIRECTORY", int(s["length"]))
            for s in found["FileStatuses"]["FileStatus"]
        ]

    def open(self, uri: str) -> BinaryIO:
        size = self.info(uri)
        if size is None:
            raise FileNotFoundError(f"no such file: {uri!r}")
        return io.BufferedReader(_HttpRanges(self, uri, size.size), BUFFER)

    @overload
    def _call(self, uri: str, method: str, op: str, *, missing_ok: Literal[False] = False, **params) -> dict: ...
    @overload
    def _call(self, uri: str, method: str, op: str, *, missing_ok: bool, **params) -> dict | None: ...
    def _call(self, uri: str, method: str, op: str, *, missing_ok: bool = False, **params) -> dict | None:
        """One WebHDFS call's JSON answer ({} when it has no body; None: 404 and ``missing_ok``)."""
        body = self._fetch(uri, method, op, missing_ok=missing_ok, **params)
        return None if body is None else json.loads(body) if body.strip() else {}

    def _fetch(self, uri: str, method: str, op: str, *, missing_ok: bool = False, **params) -> bytes | None:
        """One WebHDFS call's body (None: 404 and ``missing_ok``); any failure names ``uri``."""
        request = urllib.request.Request(self.url(uri, op, **params), method=method)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404 and missing_ok:
                return None
            raise InputUnreachable(
                f"{uri!r}: WebHDFS {op} at {self.base} failed: HTTP {exc.code} {_remote_message(exc)}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            raise InputUnreachable(
                f"{uri!r}: WebHDFS at {self.base} cannot be reached: {getattr(exc, 'reason', exc)}"
            ) from None

    def _create(self, uri: str, source: Source, mode: int) -> None:
        """CREATE (never overwriting): the NameNode names a DataNode, the bytes go there."""
        location = self._call(uri, "PUT", "CREATE", overwrite="false", permission=f"{mode:o}", noredirect="true")[
            "Location"
        ]
        data = source if isinstance(source, (bytes, bytearray)) else None
        size = len(data) if data is not None else os.path.getsize(source)
        with open(source, "rb") if data is None else io.BytesIO(data) as body:
            request = urllib.request.Request(
                location,
                data=body,
                method="PUT",
                headers={"Content-Type": "application/octet-stream", "Content-Length": str(size)},
            )
            try:
                urllib.request.urlopen(request, timeout=TIMEOUT).read()
            except (urllib.error.URLError, OSError) as exc:
                raise InputUnreachable(
                    f"{uri!r}: WebHDFS CREATE at a DataNode failed: {getattr(exc, 'reason', exc)}"
                ) from None

    def put(self, uri: str, source: Source, mode: int, replace: bool, dir_mode: int) -> bool:
        parent, _, name = uri.rstrip("/").rpartition("/")
        self._call(parent, "PUT", "MKDIRS", permission=f"{dir_mode:o}")
        tmp = f"{parent}/.{name}.{secrets.token_hex(4)}.tmp"
        self._create(tmp, source, mode)
        if replace:
            self._call(uri, "DELETE", "DELETE", missing_ok=True)
        if self._move(tmp, uri):  # the parent was made above
            return True
        self.delete(tmp)
        return False

    def rename(self, src: str, dst: str, dir_mode: int) -> bool:
        self._call(dst.rstrip("/").rpartition("/")[0], "PUT", "MKDIRS", permission=f"{dir_mode:o}")
        return self._move(src, dst)

    def _move(self, src: str, dst: str) -> bool:
        """RENAME, which refuses (false) when ``dst`` exists: never overwrites."""
        found = self._call(src, "PUT", "RENAME", destination=urllib.parse.urlparse(dst).path)
        return bool(found.get("boolean"))

    def read(self, uri: str) -> bytes | None:
        return self._fetch(uri, "GET", "OPEN", missing_ok=True)

    def names(self, uri: str) -> list[str]:
        found = self._call(uri, "GET", "LISTSTATUS", missing_ok=True)
        return sorted(s["pathSuffix"] for s in found["FileStatuses"]["FileStatus"]) if found else []

    def delete(self, uri: str) -> None:
        self._call(uri, "DELETE", "DELETE", missing_ok=True, recursive="true")

    def remove_empty(self, uri: str) -> None:
        try:
            self._call(uri, "DELETE", "DELETE", missing_ok=True, recursive="false")  # refused when not empty
        except InputUnreachable:
            pass


def _remote_message(exc: urllib.error.HTTPError) -> str:
    try:
        return json.loads(exc.read())["RemoteException"]["message"]
    except Exception:  # noqa: BLE001 - the status line is message enough
        return exc.reason


class _HttpRanges(io.RawIOBase):
    """A seekable raw file over WebHDFS OPEN: a sequential read is one streamed response; a
    seek elsewhere drops it and the next read opens one at the new offset."""

    def __init__(self, store: _WebHdfs, uri: str, size: int):
        self.store, self.uri, self.size = store, uri, size
        self.pos = 0
        self.response: http.client.HTTPResponse | None = None
        self.response_pos = -1

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buffer) -> int:
        if self.pos >= self.size:
            return 0
        if self.response is None or self.response_pos != self.pos:
            self._drop()
            try:
                self.response = urllib.request.urlopen(
                    self.store.url(self.uri, "OPEN", offset=self.pos), timeout=TIMEOUT
                )
            except (urllib.error.URLError, OSError) as exc:
                raise InputUnreachable(
                    f"{self.uri!r}: WebHDFS OPEN at byte {self.pos} failed: {getattr(exc, 'reason', exc)}"
                ) from None
            self.response_pos = self.pos
        n = self.response.readinto(buffer)
        self.pos += n
        self.response_pos = self.pos
        return n

    def _drop(self) -> None:
        if self.response is not None:
            self.response.close()
            self.response = None

    def close(self) -> None:
        self._drop()
        super().close()


class _Arrow:
    """S3, GCS and Azure through ``pyarrow.fs``; paths inside are ``bucket/key``."""

    def __init__(self, uri: str):
        import pyarrow.fs as pafs

        parsed = urllib.parse.urlparse(uri)
        kind = _ARROW.get(parsed.scheme)
        self.prefix = f"{parsed.scheme}://{parsed.netloc}"
        if parsed.scheme in _MOUNTS:
            self.fs = _MOUNTS[parsed.scheme]
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
        return Entry(uri.rstrip("/"), found.type == pafs.FileType.Directory, found.size or 0)

    def children(self, uri: str) -> list[Entry]:
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self._path(uri), recursive=False)
        found = self._call(uri, self.fs.get_file_info, selector)
        parent = uri.rstrip("/")
        return [Entry(f"{parent}/{f.base_name}", f.type == pafs.FileType.Directory, f.size or 0) for f in found]

    def open(self, uri: str) -> BinaryIO:
        native = self._call(uri, self.fs.open_input_file, self._path(uri))
        return io.BufferedReader(_ArrowRaw(native), BUFFER)

    def put(self, uri: str, source: Source, mode: int, replace: bool, dir_mode: int) -> bool:
        if not replace and self.info(uri) is not None:
            return False
        path = self._path(uri)
        self._call(uri, self.fs.create_dir, path.rpartition("/")[0])

        def upload():
            with self.fs.open_output_stream(path) as out:  # one PUT (or a multipart upload completed at close)
                _copy(source, out)

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

    def delete(self, uri: str) -> None:
        found = self.info(uri)
        if found is None:
            return
        path = self._path(uri)
        self._call(uri, self.fs.delete_dir if found.is_dir else self.fs.delete_file, path)

    def remove_empty(self, uri: str) -> None:
        pass  # an object store's directories are the keys' prefixes: none is left without its objects

    def probe(self, uri: str) -> None:
        import pyarrow.fs as pafs

        found = self._call(uri, self.fs.get_file_info, self.root)
        if found.type == pafs.FileType.NotFound:
            raise InputUnreachable(f"{uri!r} cannot be reached: there is no bucket {self.root!r}")


class _ArrowRaw(io.RawIOBase):
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


Source = bytes | str  # what a write copies: the bytes, or a local file's path

_MOUNTS: dict = {}  # scheme -> pyarrow filesystem that replaces the built-in one (`mount`)


def _copy(source: Source, out) -> None:
    if isinstance(source, (bytes, bytearray)):
        out.write(source)
        return
    with open(source, "rb") as f:
        while chunk := f.read(BUFFER):
            out.write(chunk)


def mount(scheme: str, filesystem) -> None:
    """Serve ``scheme://root/key`` in this process from the pyarrow ``filesystem`` (path
    ``root/key`` in it) instead of the cloud store (None: unmount). For tests: the object
    store's code path on a `pyarrow.fs.SubTreeFileSystem` over a local directory."""
    if filesystem is None:
        _MOUNTS.pop(scheme, None)
    else:
        _MOUNTS[scheme] = filesystem


def _store(uri: str):
    scheme = urllib.parse.urlparse(uri).scheme
    if is_local(uri):
        return _Local(uri)
    if scheme in _WEBHDFS:
        return _WebHdfs(uri)
    if scheme in _ARROW or scheme in _MOUNTS:
        return _Arrow(uri)
    if scheme == "hdfs":
        return _WebHdfs(reading_url(uri))
    raise InputUnreachable(
        f"{uri!r}: no filesystem for '{scheme}:' here (local, dbfs:, /Volumes, hdfs:, webhdfs:, s3a:, gs:, abfss:)"
    )


# --- the functions the readers use ---------------------------------------------------------


def probe(uri: str) -> None:
    """`InputUnreachable` naming ``uri`` and the cause when the object store that would hold
    it cannot be reached: no or wrong credentials, no such bucket, no endpoint (the path itself
    need not exist yet). Other file systems are not probed."""
    store = _store(uri)
    if isinstance(store, _Arrow):
        store.probe(uri)


def open_input(uri) -> BinaryIO:
    """``uri`` opened for reading: binary, buffered, seekable, streamed."""
    return _store(os.fspath(uri)).open(os.fspath(uri))


def file_size(uri) -> int:
    uri = os.fspath(uri)
    if is_local(uri):
        return os.path.getsize(local_path(uri))
    found = _store(uri).info(uri)
    if found is None:
        raise FileNotFoundError(f"no such file: {uri!r}")
    return found.size


def list_files(given: str, webhdfs: str = "") -> list[tuple[str, str]]:
    """The files ``given`` names, as (name, reading URL) pairs: a file as it is, a directory
    searched recursively, a glob expanded (hidden names and names starting with ``_`` inside
    directories skipped, each directory sorted). Local names are absolute paths; remote ones
    keep the URI given. FileNotFoundError when nothing is there."""
    url = reading_url(given, webhdfs)
    store = _store(url)
    name_of = (
        os.path.abspath if is_local(url) else (lambda u: u) if url == given else (lambda u: _renamed(u, url, given))
    )
    found = store.info(url)
    if found is not None:
        files = [found.uri] if not found.is_dir else _walk(store, found.uri)
    elif _GLOB_CHARS.search(url):
        files = _glob(store, url)
        if not files:
            raise InputNotFound(f"no file matches {given!r}")
    else:
        raise InputNotFound(f"no such file or directory: {given!r}")
    return [(name_of(f), f) for f in files]


def _renamed(url: str, base_url: str, base_name: str) -> str:
    """``url`` under ``base_url`` named the way the user named ``base_url``."""
    return base_name.rstrip("/") + url[len(base_url.rstrip("/")) :]


def _walk(store, uri: str) -> list[str]:
    """The files below ``uri`` in ``os.walk``'s order: a directory's files, then each
    subdirectory's, by name; hidden and ``_`` names skipped."""
    if isinstance(store, _Local):
        return store.walk(uri)
    entries = sorted(
        (e for e in store.children(uri) if not e.uri.rsplit("/", 1)[-1].startswith((".", "_"))), key=lambda e: e.uri
    )
    found = [e.uri for e in entries if not e.is_dir]
    for sub in (e for e in entries if e.is_dir):
        found += _walk(store, sub.uri)
    return found


def _glob(store, pattern: str) -> list[str]:
    if isinstance(store, _Local):
        import glob

        matches = []
        for hit in sorted(glob.glob(store.path, recursive=True)):
            matches += [hit] if os.path.isfile(hit) else store.walk(hit) if os.path.isdir(hit) else []
        return matches
    # remote: list below the part before the first glob character, keep what the pattern matches
    first_glob = cast(re.Match[str], _GLOB_CHARS.search(pattern))  # `list_files` globs only a pattern that has one
    fixed = pattern[: first_glob.start()].rsplit("/", 1)[0]
    top = store.info(fixed)
    if top is None or not top.is_dir:
        return []
    matches = []
    for uri in _walk(store, fixed):
        parts = uri.split("/")
        if any(fnmatch.fnmatchcase("/".join(parts[:k]), pattern) for k in range(len(parts), 0, -1)):
            matches.append(uri)
    return matches


# --- writing (see the module doc) -----------------------------------------------------------


def join(uri: str, *names: str) -> str:
    """``uri`` with ``names`` appended as path components (local paths and URIs alike)."""
    return "/".join([uri.rstrip("/"), *names]) if names else uri


def write_file(
    uri: str,
    source: Source,
    *,
    mode: int = FILE_MODE,
    replace: bool = False,
    dir_mode: int = DIR_MODE,
    move: bool = False,
) -> bool:
    """Publish ``source`` (bytes, or a local file's path) whole at ``uri``: readers see all of
    it or nothing. Create-exclusive unless ``replace``: False (nothing written) when ``uri``
    exists. ``mode``: the file's permissions, ``dir_mode`` those of directories made for it
    (local and HDFS; owner-only by default). ``move``: the caller is done with the local file
    ``source`` (and removes it after): on the same local filesystem it is linked into
    place, not copied, and takes ``mode``."""
    store = _store(uri)
    if move and not replace and isinstance(store, _Local) and isinstance(source, str):
        linked = store.link_in(uri, source, mode, dir_mode)
        if linked is not None:
            return linked
    return store.put(uri, source, mode, replace, dir_mode)


def rename(src: str, dst: str, *, dir_mode: int = DIR_MODE) -> bool:
    """Move ``src`` to ``dst`` (same filesystem), never replacing: False when ``dst`` exists.
    Missing directories of ``dst`` are made with ``dir_mode``."""
    return _store(src).rename(src, dst, dir_mode)


def read_bytes(uri: str) -> bytes | None:
    """The whole content of the file ``uri``, or None when there is none."""
    return _store(uri).read(uri)


def list_names(uri: str) -> list[str]:
    """The names in the directory ``uri``, sorted ([] when there is no such directory)."""
    return _store(uri).names(uri)


def delete(uri: str) -> None:
    """Remove the file or directory tree ``uri``; nothing when it is not there."""
    _store(uri).delete(uri)


def remove_empty_dir(uri: str) -> None:
    """Remove the directory ``uri`` if it is empty; nothing otherwise (never races a writer)."""
    _store(uri).remove_empty(uri)


def is_dir(uri: str) -> bool:
    found = _store(uri).info(uri)
    return found is not None and found.is_dir


def exists(uri: str) -> bool:
    return _store(uri).info(uri) is not None


def files_uri(path: str, webhdfs: str = "") -> str:
    """The URI this layer writes ``path`` through (as `reading_url`: ``hdfs://`` becomes the
    NameNode's WebHDFS address, ``hdfs.webhdfs``); a local path stays as it is, absolute."""
    plain = plain_path(path)
    return os.path.abspath(plain) if plain is not None else reading_url(path, webhdfs)
