"""Files Python opens itself: local paths, ``file:``, ``dbfs:`` (through ``/dbfs``) and
``/Volumes``. Writes are published whole: a hidden temporary file, fsynced, then linked
(create-exclusive) or renamed into place; directories made owner-only."""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from typing import BinaryIO

from dlq_pipeline.fs.base import BUFFER, Entry, Source, copy_source, utc_from_seconds
from dlq_pipeline.runtime.paths import local_path
from dlq_pipeline.runtime.permissions import private_dirs


def _entry(path: str, status: os.stat_result) -> Entry:
    # no version: inode numbers are not stable on every mount a cluster uses (FUSE, NFS)
    return Entry(path, False, status.st_size, utc_from_seconds(status.st_mtime_ns / 1e9))


class LocalFiles:
    """A local file or directory tree (see the module doc)."""

    def __init__(self, uri: str):
        self.path = local_path(uri)

    def info(self, uri: str) -> Entry | None:
        path = os.path.abspath(local_path(uri))
        try:
            status = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISDIR(status.st_mode):
            return Entry(path, True, 0)
        return _entry(path, status)

    def children(self, uri: str) -> list[Entry]:
        """What is directly in the directory ``uri`` ([] when there is none), each stat-ed
        once; an entry that vanishes while listed is left out."""
        found = []
        try:
            with os.scandir(local_path(uri)) as entries:
                for e in entries:
                    try:
                        found.append(Entry(e.path, True, 0) if e.is_dir() else _entry(e.path, e.stat()))
                    except FileNotFoundError:
                        continue
        except (FileNotFoundError, NotADirectoryError):
            return []
        return found

    def walk(self, uri: str) -> list[Entry]:
        """The files below ``uri`` as `os.walk` finds them (hidden and ``_`` names skipped),
        each stat-ed once; a file that vanishes while walked is left out."""
        found = []
        for root, dirs, files in os.walk(local_path(uri)):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
            for name in sorted(f for f in files if not f.startswith((".", "_"))):
                path = os.path.join(root, name)
                try:
                    found.append(_entry(path, os.stat(path)))
                except FileNotFoundError:
                    continue
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
                copy_source(source, f)
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

    def make_dirs(self, uri: str, mode: int) -> None:
        private_dirs(local_path(uri), mode)

    def delete(self, uri: str) -> bool:
        path = local_path(uri)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)
        else:
            return False
        return True

    def remove_empty(self, uri: str) -> None:
        try:
            os.rmdir(local_path(uri))
        except OSError:
            pass
