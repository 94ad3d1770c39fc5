"""HDFS through WebHDFS, Hadoop's REST API: plain HTTP to the NameNode for metadata, then to
the DataNode it redirects to for the bytes, read from any offset and streamed. Writes are a
``CREATE`` with ``overwrite=false`` of a hidden temporary name, then a ``RENAME``, which never
replaces an existing file (docs/deploy.md says why no library does this here)."""

from __future__ import annotations

import getpass
import http.client
import io
import json
import os
import secrets
import urllib.error
import urllib.parse
import urllib.request
from typing import BinaryIO, Literal, overload

from dlq_pipeline.fs.base import BUFFER, Entry, InputUnreachable, Source, utc_from_seconds

WEBHDFS_PORT = 9870  # the NameNode's HTTP port since Hadoop 3
TIMEOUT = 60  # seconds for one HTTP request
WEBHDFS_SCHEMES = {"webhdfs": "http", "swebhdfs": "https"}


def _entry(uri: str, status: dict) -> Entry:
    """An `Entry` of a WebHDFS ``FileStatus``: its ``fileId`` is the version (a file created
    again under the same name gets a new one)."""
    if status["type"] == "DIRECTORY":
        return Entry(uri, True, 0)
    modified = status.get("modificationTime")
    file_id = status.get("fileId")
    return Entry(
        uri,
        False,
        int(status["length"]),
        utc_from_seconds(modified / 1000) if modified is not None else None,
        str(file_id) if file_id is not None else None,
    )


class WebHdfsFiles:
    """WebHDFS's REST API (Hadoop's ``FileSystem`` over HTTP): metadata from the NameNode, data
    from the DataNode it redirects to. The user is ``HADOOP_USER_NAME`` or the OS user."""

    def __init__(self, uri: str):
        parsed = urllib.parse.urlparse(uri)
        self.scheme = parsed.scheme
        self.base = f"{WEBHDFS_SCHEMES[parsed.scheme]}://{parsed.netloc}"
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
        return _entry(uri.rstrip("/") or uri, found["FileStatus"])

    def children(self, uri: str) -> list[Entry]:
        found = self._call(uri, "GET", "LISTSTATUS", missing_ok=True) or {"FileStatuses": {"FileStatus": []}}
        parent = uri.rstrip("/")
        return [_entry(f"{parent}/{s['pathSuffix']}", s) for s in found["FileStatuses"]["FileStatus"]]

    def open(self, uri: str) -> BinaryIO:
        size = self.info(uri)
        if size is None:
            raise FileNotFoundError(f"no such file: {uri!r}")
        return io.BufferedReader(HttpRanges(self, uri, size.size), BUFFER)

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
                f"{uri!r}: WebHDFS {op} at {self.base} failed: HTTP {exc.code} {remote_message(exc)}"
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

    def make_dirs(self, uri: str, mode: int) -> None:
        self._call(uri, "PUT", "MKDIRS", permission=f"{mode:o}")  # existing directories keep theirs

    def delete(self, uri: str) -> bool:
        found = self._call(uri, "DELETE", "DELETE", missing_ok=True, recursive="true")
        return bool(found and found.get("boolean"))  # false: nothing was there

    def remove_empty(self, uri: str) -> None:
        try:
            self._call(uri, "DELETE", "DELETE", missing_ok=True, recursive="false")  # refused when not empty
        except InputUnreachable:
            pass


def remote_message(exc: urllib.error.HTTPError) -> str:
    try:
        return json.loads(exc.read())["RemoteException"]["message"]
    except Exception:  # noqa: BLE001 - the status line is message enough
        return exc.reason


class HttpRanges(io.RawIOBase):
    """A seekable raw file over WebHDFS OPEN: a sequential read is one streamed response; a
    seek elsewhere drops it and the next read opens one at the new offset."""

    def __init__(self, store: WebHdfsFiles, uri: str, size: int):
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
