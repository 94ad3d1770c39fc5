"""An in-process WebHDFS (the REST calls `dlq_pipeline.fs` makes) over a local
directory, for the filesystem layer's unit tests; the cluster tier runs against a real HDFS.
It answers as Hadoop does where the layer depends on it: CREATE with ``overwrite=false``
refuses an existing file, RENAME answers false (never replaces) when the destination exists,
DELETE without ``recursive`` refuses a non-empty directory, ``permission=`` is applied."""

from __future__ import annotations

import json
import os
import shutil
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _Handler(BaseHTTPRequestHandler):
    root: Path

    def log_message(self, *args):  # quiet
        pass

    def _reply(self, code: int, doc=None, body: bytes | None = None) -> None:
        data = body if body is not None else json.dumps(doc).encode() if doc is not None else b""
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, code: int, name: str, message: str) -> None:
        self._reply(code, {"RemoteException": {"exception": name, "message": message}})

    def _parse(self):
        url = urllib.parse.urlparse(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        hdfs_path = urllib.parse.unquote(url.path)
        if hdfs_path.startswith("/webhdfs/v1"):
            hdfs_path = hdfs_path[len("/webhdfs/v1") :] or "/"
        return url.path, hdfs_path, query, self.server.root / hdfs_path.lstrip("/")

    def do_GET(self):
        _, hdfs_path, q, local = self._parse()
        if not local.exists():
            return self._error(404, "FileNotFoundException", f"File does not exist: {hdfs_path}")
        op = q.get("op")
        if op == "GETFILESTATUS":
            return self._reply(200, {"FileStatus": _status(local)})
        if op == "LISTSTATUS":
            entries = [dict(_status(c), pathSuffix=c.name) for c in sorted(local.iterdir())] if local.is_dir() else []
            return self._reply(200, {"FileStatuses": {"FileStatus": entries}})
        if op == "OPEN":
            return self._reply(200, body=local.read_bytes()[int(q.get("offset", 0)) :])
        return self._error(400, "IllegalArgumentException", f"op {op}")

    def do_PUT(self):
        url_path, hdfs_path, q, local = self._parse()
        if url_path == "/datanode":  # the second step of CREATE
            target = self.server.root / q["path"].lstrip("/")
            data = self.rfile.read(int(self.headers["Content-Length"]))
            if target.exists():
                return self._error(403, "FileAlreadyExistsException", f"{q['path']} already exists")
            target.write_bytes(data)
            os.chmod(target, int(q["permission"], 8))
            return self._reply(201)
        op = q.get("op")
        if op == "MKDIRS":
            missing = [p for p in [local, *local.parents] if not p.exists()]
            for directory in reversed(missing):
                directory.mkdir()
                os.chmod(directory, int(q.get("permission", "755"), 8))
            return self._reply(200, {"boolean": True})
        if op == "CREATE":
            if q.get("overwrite") != "false" or q.get("noredirect") != "true":
                return self._error(400, "IllegalArgumentException", "the fake wants overwrite=false&noredirect=true")
            if local.exists():
                return self._error(403, "FileAlreadyExistsException", f"{hdfs_path} already exists")
            if not local.parent.is_dir():
                return self._error(404, "FileNotFoundException", f"no parent for {hdfs_path}")
            host, port = self.server.server_address[:2]
            query = urllib.parse.urlencode({"path": hdfs_path, "permission": q.get("permission", "644")})
            return self._reply(200, {"Location": f"http://{host}:{port}/datanode?{query}"})
        if op == "RENAME":
            target = self.server.root / q["destination"].lstrip("/")
            if not local.exists() or target.exists() or not target.parent.is_dir():
                return self._reply(200, {"boolean": False})
            os.rename(local, target)
            return self._reply(200, {"boolean": True})
        return self._error(400, "IllegalArgumentException", f"op {op}")

    def do_DELETE(self):
        _, hdfs_path, q, local = self._parse()
        if not local.exists():
            return self._reply(200, {"boolean": False})
        if local.is_dir():
            if any(local.iterdir()) and q.get("recursive") != "true":
                return self._error(403, "PathIsNotEmptyDirectoryException", f"{hdfs_path} is non empty")
            shutil.rmtree(local)
        else:
            local.unlink()
        return self._reply(200, {"boolean": True})


def _status(path: Path) -> dict:
    return {
        "type": "DIRECTORY" if path.is_dir() else "FILE",
        "length": 0 if path.is_dir() else path.stat().st_size,
        "permission": f"{path.stat().st_mode & 0o777:o}",
    }


class FakeWebHdfs:
    """``with FakeWebHdfs(root) as fake:`` serves ``root`` at ``fake.uri`` (``webhdfs://...``)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.root = self.root
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def uri(self) -> str:
        return f"webhdfs://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeWebHdfs:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
