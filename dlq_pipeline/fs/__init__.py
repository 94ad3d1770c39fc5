"""The one filesystem layer of the pipeline's Python code, on the driver and on executors.

Ingest's driver lists inputs and plans splits, and the executors' Python workers read their
byte ranges; replay's checkpoints, the writer lease's fence file, the ``dir:`` target's
dmpmqmsg files and the warehouse's own files (`dlq_pipeline.warehouse.storage`: its
directories, a Parquet table's data files listed, read and deleted, a Delta table's first
commit, the run summaries) go through it too (see "Writing" below). Every place a file can be:

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
  the driver's Python has a JVM gateway, and only on classic Spark (a Spark Connect client
  has none); an executor's Python worker has none, so the bytes would have to be read by
  Spark's JVM (``binaryFile`` holds a whole file in memory; ``text`` loses byte offsets and
  non-UTF-8 bytes), giving up the streaming, bounded-memory reader.
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

**Writing** (`write_file`, `rename`, `read_bytes`, `list_names`, `list_sizes`, `make_dirs`,
`delete`, `is_dir`): small immutable objects and whole files, published so that a reader
never sees half of one:

- local: written under a hidden temporary name in the same directory, fsynced, then
  ``link``-ed (create-exclusive) or renamed into place; directories made owner-only. A
  local file the caller hands over (`write_file` ``move``) on the same filesystem is
  fsynced and linked into place itself: a 20 GB dump is not copied;
- HDFS (WebHDFS): ``CREATE`` (``overwrite=false``, ``permission=``) of a hidden temporary
  name, then ``RENAME`` (which never replaces an existing file); ``LISTSTATUS``, ``MKDIRS``
  (``permission=``), ``DELETE``;
- object stores (``pyarrow.fs``): one PUT (a multipart upload appears only when it
  completes). An object store has no create-exclusive: `write_file` checks first and then
  puts, which is exclusive only because the names written are unique to their writer (a run
  id, a partition, a sequence number) and the warehouse has one writer at a time (the lease).
  Permissions do not apply there (the bucket's policy decides).

Unit tests reach the object-store code with any ``pyarrow.fs`` filesystem (`mount`); the
``s3`` tier runs it against an S3 server (tests/s3/).
"""

from __future__ import annotations

import fnmatch
import os
import re
import urllib.parse
from typing import BinaryIO, cast

from dlq_pipeline.fs.base import Entry, InputNotFound, InputUnreachable, Source, Store
from dlq_pipeline.fs.local import LocalFiles
from dlq_pipeline.fs.objectstore import MOUNTS, OBJECT_STORES, ObjectStoreFiles, mount
from dlq_pipeline.fs.webhdfs import WEBHDFS_PORT, WEBHDFS_SCHEMES, WebHdfsFiles
from dlq_pipeline.runtime.paths import local_path, plain_path
from dlq_pipeline.runtime.permissions import DIR_MODE, FILE_MODE

__all__ = [
    "InputUnreachable",
    "InputNotFound",
    "open_input",
    "file_size",
    "list_files",
    "list_entries",
    "stat",
    "Entry",
    "is_local",
    "reading_url",
    "files_uri",
    "write_file",
    "rename",
    "read_bytes",
    "list_names",
    "list_sizes",
    "make_dirs",
    "delete",
    "remove_empty_dir",
    "is_dir",
    "exists",
    "join",
    "mount",
    "probe",
]

_GLOB_CHARS = re.compile(r"[*?\[]")


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


def _store(uri: str) -> Store:
    scheme = urllib.parse.urlparse(uri).scheme
    if is_local(uri):
        return LocalFiles(uri)
    if scheme in WEBHDFS_SCHEMES:
        return WebHdfsFiles(uri)
    if scheme in OBJECT_STORES or scheme in MOUNTS:
        return ObjectStoreFiles(uri)
    if scheme == "hdfs":
        return WebHdfsFiles(reading_url(uri))
    raise InputUnreachable(
        f"{uri!r}: no filesystem for '{scheme}:' here (local, dbfs:, /Volumes, hdfs:, webhdfs:, s3a:, gs:, abfss:)"
    )


# --- the functions the readers use ---------------------------------------------------------


def probe(uri: str) -> None:
    """`InputUnreachable` naming ``uri`` and the cause when the object store that would hold
    it cannot be reached: no or wrong credentials, no such bucket, no endpoint (the path itself
    need not exist yet). Other file systems are not probed."""
    store = _store(uri)
    if isinstance(store, ObjectStoreFiles):
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
    return [(name, entry.uri) for name, entry in list_entries(given, webhdfs)]


def list_entries(given: str, webhdfs: str = "") -> list[tuple[str, Entry]]:
    """`list_files` with each file's `Entry` as the listing saw it (its ``uri`` the reading
    URL, with its size, modification time and version): one listing call per directory, no
    call per file where the store lists sizes and times with names (all of them do)."""
    url = reading_url(given, webhdfs)
    store = _store(url)
    name_of = (
        os.path.abspath if is_local(url) else (lambda u: u) if url == given else (lambda u: _renamed(u, url, given))
    )
    found = store.info(url)
    if found is not None:
        files = [found] if not found.is_dir else _walk(store, found.uri)
    elif _GLOB_CHARS.search(url):
        files = _glob(store, url)
        if not files:
            raise InputNotFound(f"no file matches {given!r}")
    else:
        raise InputNotFound(f"no such file or directory: {given!r}")
    return [(name_of(f.uri), f) for f in files]


def stat(uri: str) -> Entry | None:
    """``uri``'s `Entry` now (size, modification time, version), None when nothing is there."""
    return _store(os.fspath(uri)).info(os.fspath(uri))


def _renamed(url: str, base_url: str, base_name: str) -> str:
    """``url`` under ``base_url`` named the way the user named ``base_url``."""
    return base_name.rstrip("/") + url[len(base_url.rstrip("/")) :]


def _walk(store, uri: str) -> list[Entry]:
    """The files below ``uri`` in ``os.walk``'s order: a directory's files, then each
    subdirectory's, by name; hidden and ``_`` names skipped."""
    if isinstance(store, LocalFiles):
        return store.walk(uri)
    entries = sorted(
        (e for e in store.children(uri) if not e.uri.rsplit("/", 1)[-1].startswith((".", "_"))), key=lambda e: e.uri
    )
    found = [e for e in entries if not e.is_dir]
    for sub in (e for e in entries if e.is_dir):
        found += _walk(store, sub.uri)
    return found


def _glob(store, pattern: str) -> list[Entry]:
    if isinstance(store, LocalFiles):
        import glob

        matches: list[Entry] = []
        for hit in sorted(glob.glob(store.path, recursive=True)):
            found = store.info(hit)
            matches += [] if found is None else [found] if not found.is_dir else store.walk(hit)
        return matches
    # remote: list below the part before the first glob character, keep what the pattern matches
    first_glob = cast(re.Match[str], _GLOB_CHARS.search(pattern))  # `list_files` globs only a pattern that has one
    fixed = pattern[: first_glob.start()].rsplit("/", 1)[0]
    top = store.info(fixed)
    if top is None or not top.is_dir:
        return []
    matches = []
    for entry in _walk(store, fixed):
        parts = entry.uri.split("/")
        if any(fnmatch.fnmatchcase("/".join(parts[:k]), pattern) for k in range(len(parts), 0, -1)):
            matches.append(entry)
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
    if move and not replace and isinstance(store, LocalFiles) and isinstance(source, str):
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


def list_sizes(uri: str) -> dict[str, int]:
    """The files directly in the directory ``uri`` (not its subdirectories) by name, with their
    sizes in bytes, from one listing ({} when there is no such directory)."""
    return {e.uri.rstrip("/").rsplit("/", 1)[-1]: e.size for e in _store(uri).children(uri) if not e.is_dir}


def make_dirs(uri: str, *, mode: int = DIR_MODE) -> None:
    """Create the directory ``uri`` and its missing parents with ``mode`` (owner-only by
    default; local and HDFS); directories that exist are left as they are."""
    _store(uri).make_dirs(uri, mode)


def delete(uri: str) -> bool:
    """Remove the file or directory tree ``uri``; False (nothing done) when it is not there."""
    return _store(uri).delete(uri)


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
