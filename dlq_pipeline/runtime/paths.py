"""Where a path given by a user can be opened: the one answer for ingest, the warehouse lock,
replay's checkpoints and storage.

Python code on the driver and the executors opens local paths, ``file:`` URIs, and ``dbfs:``
paths through Databricks' ``/dbfs`` mount (``/Volumes/...`` is already a path). Anything else
(``hdfs://``, ``s3a://``, ``abfss://``, ``gs://``) is only reachable through Hadoop's FileSystem.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from dlq_pipeline.errors import UsageError


class PathError(UsageError, ValueError):
    """A path that Python cannot open where the caller needs it."""


def _is_drive(scheme: str) -> bool:
    return len(scheme) == 1  # C:\dumps: a Windows drive letter, not a URI scheme


def plain_path(path: str) -> str | None:
    """The OS path for a local path or ``file:`` URI, else None (a URI for Hadoop)."""
    parsed = urlparse(path)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return parsed.path
    if parsed.scheme == "" or _is_drive(parsed.scheme):
        return path
    return None


def local_path(path: str, *, needed_for: str = "this") -> str:
    """The OS path Python opens for ``path``: ``dbfs:/x`` (or ``dbfs://x``) is ``/dbfs/x``.

    PathError, saying what it was ``needed_for``, for a URI only Hadoop can open."""
    plain = plain_path(path)
    if plain is not None:
        return plain
    parsed = urlparse(path)
    if parsed.scheme == "dbfs":
        return "/dbfs/" + (parsed.netloc + parsed.path).lstrip("/")
    raise PathError(
        f"{path!r} is not on a file system every node mounts (local, NFS, /dbfs/..., /Volumes/...), "
        f"which {needed_for} needs"
    )


def local_dir(path: str, *, needed_for: str = "this") -> Path:
    """`local_path` as an absolute `Path`: the warehouse directory the lock, replay's
    checkpoints and the simulated queue managers live in."""
    return Path(local_path(path, needed_for=needed_for)).absolute()


def default_fs_problem(path: str, default_fs: str, qualified: str) -> str | None:
    """Why a scheme-less ``path`` cannot be the warehouse when Spark's default file system
    (``fs.defaultFS``) is not the local one, or None (pure).

    Spark would resolve it there (``qualified``) while the lock, replay's checkpoints and the
    run summaries would open the local directory of that name: two warehouses. The fix is one
    full URI, not a guess at which one was meant."""
    if urlparse(path).scheme or urlparse(default_fs).scheme in ("", "file"):
        return None
    local = Path(path).absolute().as_posix()
    return (
        f"storage.path {path!r} has no scheme and Spark's default file system (fs.defaultFS) is {default_fs}: "
        f"Spark would keep the tables in {qualified} while the lock, replay's checkpoints and the run "
        f"summaries would use the local directory {local}. Write the full URI: storage.path = "
        f'"{qualified}" (on HDFS: storage.format = "delta", storage.lock = false) or '
        f'"file://{local}" (a directory every node mounts)'
    )
