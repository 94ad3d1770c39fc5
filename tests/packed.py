"""What `make package` builds (``tools/package.py`` with the tested constraints: the wheel, the
packed environment spark-submit ships to executors with ``--archives``, the JVM reader's
jar), built once for the suite and kept under ``~/.cache/dlq-pipeline/packed-env/<key>/``
(next to the jar cache), keyed by a hash of what goes into it: the package's sources,
pyproject.toml, the constraints, the packaging script and the Python. test_package checks it
and the cluster tier ships it: one build of about 2 minutes, not one each, made by ``make
test`` before pytest starts (``python -m tests.packed``: set-up) when the key has changed.
Older keys are removed (the archive is ~130 MB)."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dlq_pipeline.engine.jars import cache_root
from tests.conftest import REPO
from tests.venvs import clean_env

CONSTRAINTS = REPO / "constraints" / "spark-4.2.txt"


def cache_dir() -> Path:
    return cache_root().parent / "packed-env"


def source_key() -> str:
    """A hash of every input of the archive (pure but for reading the files)."""
    inputs = [
        REPO / "pyproject.toml",
        CONSTRAINTS,
        REPO / "tools" / "package.py",
        REPO / "tools" / "build_backend.py",
        *(p for p in (REPO / "dlq_pipeline").rglob("*") if "__pycache__" not in p.parts),
    ]
    digest = hashlib.sha256(sys.version.encode())
    for path in sorted(p for p in inputs if p.is_file()):
        digest.update(path.relative_to(REPO).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def packed_dist() -> Path:
    """The ``dist/`` of `make package` for this checkout (built when missing, in `clean_env`).
    A file lock keeps two test processes from building it at once."""
    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    key = source_key()
    done = root / key
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_dir():
            staging = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
            try:
                subprocess.run(
                    [
                        sys.executable,
                        str(REPO / "tools" / "package.py"),
                        "--dist",
                        str(staging),
                        "--constraints",
                        str(CONSTRAINTS),
                        "--compress-level",
                        "1",
                    ],
                    env=clean_env(),
                    check=True,
                    capture_output=True,
                    text=True,
                    timeout=1800,
                )
            except subprocess.CalledProcessError as exc:
                shutil.rmtree(staging, ignore_errors=True)
                raise RuntimeError(f"tools/package.py failed:\n{exc.stderr[-3000:]}") from None
            staging.rename(done)
            for old in root.iterdir():
                if old.is_dir() and old != done:
                    shutil.rmtree(old, ignore_errors=True)
    return done


def packed_env() -> Path:
    """``dlq-pipeline-env-<version>.tar.gz`` of `packed_dist`."""
    [archive] = packed_dist().glob("dlq-pipeline-env-*.tar.gz")
    return archive


if __name__ == "__main__":
    print(packed_dist())
