"""Owner-only files and directories: message bodies may hold personal data.

Everything the pipeline writes that holds messages (dumps, the ``dir:`` target's output,
replay checkpoints, the simulated queue manager's database, reports) is created 0600 in
directories created 0700. Directories that already exist are left as they are (the
operator chose them). No umask is changed: modes are given at creation and fixed with
``chmod`` where the umask could have masked them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dirs(path: str | os.PathLike, mode: int = DIR_MODE) -> Path:
    """Create ``path`` and its missing parents owner-only (0700, or ``mode``); return it."""
    path = Path(path).absolute()
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, mode)
        except FileExistsError:
            continue
        os.chmod(directory, mode)  # mkdir's mode is masked by the umask
    return path


def private_file(path: str | os.PathLike) -> Path:
    """Make sure ``path`` exists as an owner-only (0600) file, creating its directory
    owner-only; an existing file keeps its content and is narrowed to 0600."""
    path = Path(path)
    private_dirs(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return path


def open_private(path: str | os.PathLike, mode: str = "wb", **kwargs):
    """``open(path, mode)`` for writing, creating the file 0600 (and its directory 0700)."""
    path = Path(path)
    private_dirs(path.parent)
    flags = os.O_WRONLY | os.O_CREAT
    if "a" in mode:
        flags |= os.O_APPEND
    elif "x" in mode:
        flags |= os.O_EXCL
    else:
        flags |= os.O_TRUNC
    fd = os.open(path, flags, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        return os.fdopen(fd, mode.replace("x", "w"), **kwargs)
    except BaseException:
        os.close(fd)
        raise


def directory_problem(path: str | os.PathLike) -> str | None:
    """Why this process could not create and write the directory ``path`` (it or a parent is
    a file, or the nearest existing parent refuses a new entry), or None. Checked by making
    and removing a probe directory in the nearest existing parent: permission bits say
    nothing for root or for file systems like /proc. Leaves nothing behind."""
    path = Path(path).absolute()
    probe = path
    while not probe.exists():
        if probe.is_symlink():
            return f"{probe} is a broken symbolic link"
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        return f"{probe} is not a directory" if probe == path else f"{probe} is a file, so {path} cannot be made"
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".dlq-pipeline-probe-", dir=probe))
    except OSError as exc:
        return f"cannot write in {probe}: {exc.strerror or exc}"
    return None
