"""What the tests' helpers share: the repository's root, the environment of a subprocess that
runs this checkout's code, and builds made once into a cache that pytest processes share
(venvs, `make package`'s dist/), each keyed by a digest of what goes into it."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMPLETE = ".complete"  # in a cached build's folder once its build has finished


def repo_env(base: Mapping[str, str] | None = None, *, keep_path: bool = True, **extra: str) -> dict[str, str]:
    """``base`` (this process's environment when None) with the repository on PYTHONPATH, then
    ``extra``: the repository ahead of ``base``'s own PYTHONPATH when ``keep_path`` (joined even
    when that is empty, which puts the child's working directory on its path too), else alone."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]) if keep_path else str(REPO)
    env.update(extra)
    return env


def digest(parts: Iterable[bytes], length: int) -> str:
    """The first ``length`` hex digits of the SHA-256 of ``parts``, in order: a cache key."""
    hashed = hashlib.sha256()
    for part in parts:
        hashed.update(part)
    return hashed.hexdigest()[:length]


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of the file ``path`` (created with its folder when missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def locked(root: Path) -> contextlib.AbstractContextManager[None]:
    """Hold the lock of the cached build ``root`` (``<root>.lock``, beside it): its build and
    every change made to it afterwards happen under it."""
    return file_lock(Path(f"{root}.lock"))


def cached_build(root: Path, build: Callable[[Path], object], *, lock: Path | None = None, prune: bool = False) -> Path:
    """``root``, built by ``build`` into it (an empty folder) unless a finished build is there,
    under ``lock`` (``root``'s own, `locked`, when None). A build that raises is removed; one
    cut short has no `COMPLETE` file and is built again. ``prune`` removes the other folders
    beside ``root`` once it is built: the builds of older keys, which nothing asks for."""
    with file_lock(lock or Path(f"{root}.lock")):
        if not (root / COMPLETE).exists():
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir(parents=True)
            try:
                build(root)
            except BaseException:
                shutil.rmtree(root, ignore_errors=True)
                raise
            (root / COMPLETE).touch()
            if prune:
                for other in root.parent.iterdir():
                    if other.is_dir() and other != root:
                        shutil.rmtree(other, ignore_errors=True)
    return root
