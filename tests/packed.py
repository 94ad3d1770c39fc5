"""What `make package` builds (``tools/package.py`` with the tested constraints: the wheel, the
packed environment spark-submit ships to executors with ``--archives``, the JVM reader's
jar), built once for the suite and kept under ``~/.cache/dlq-pipeline/packed-env/<key>/dist/``
(next to the jar cache), keyed by a hash of what goes into it: the package's sources,
pyproject.toml, the constraints, the packaging script and the Python. test_package checks it
and the cluster tier ships it: one build of about 2 minutes, not one each, made by ``make
test`` before pytest starts (``python -m tests.packed``: set-up) when the key has changed.
Older keys are removed (the archive is ~130 MB)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dlq_pipeline.engine.jars import cache_root
from tests.support import REPO, cached_build, digest
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
    files = sorted(p for p in inputs if p.is_file())
    return digest(
        [
            sys.version.encode(),
            *(p.relative_to(REPO).as_posix().encode() + b"\0" + p.read_bytes() + b"\0" for p in files),
        ],
        16,
    )


def _package(root: Path) -> None:
    try:
        subprocess.run(
            [
                sys.executable,
                str(REPO / "tools" / "package.py"),
                "--dist",
                str(root / "dist"),
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
        raise RuntimeError(f"tools/package.py failed:\n{exc.stderr[-3000:]}") from None


def packed_dist() -> Path:
    """The ``dist/`` of `make package` for this checkout (built when missing, in `clean_env`).
    One lock for the whole cache keeps two test processes from building at once, and from
    removing a build another one is making."""
    root = cache_dir()
    return cached_build(root / source_key(), _package, lock=root / ".lock", prune=True) / "dist"


def packed_env() -> Path:
    """``dlq-pipeline-env-<version>.tar.gz`` of `packed_dist`."""
    [archive] = packed_dist().glob("dlq-pipeline-env-*.tar.gz")
    return archive


if __name__ == "__main__":
    print(packed_dist())
