"""The real Python layers of IBM MQ's client packages, for tests/unit/test_mq_client_contract.py.

Both packages are Python over a C extension that needs IBM's MQ client library, which is not on
PyPI and not on this machine:

- ``ibmmq`` (over ``ibmmq.ibmmqc``) is a `test` dependency, installed by `make venv` at the
  version constraints/spark-4.2.txt pins, which is the floor of pyproject's ``mq`` extra;
- ``pymqi`` (over ``pymqi.pymqe``) is a source distribution whose build needs MQ's headers:
  its pure-Python package is taken out of the sdist of the floor of the ``mq-legacy`` extra,
  fetched once with pip into ``~/.cache/dlq-pipeline/mq-layers/`` (or
  ``$DLQ_PIPELINE_TEST_CACHE/mq-layers``), outside the repository. ``make check`` and
  ``make test`` fetch it before pytest starts (``python -m tests.mq_layers``, a no-op when it
  is there); the contract test fetches it itself when run alone on a fresh machine.

`imported_layer` imports one of them with a stand-in module in place of its C extension, then
takes out again every module it imported from the package's folder (ibmmq imports its own files
as top-level modules too) and restores ``sys.path``, so no other test sees them.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import importlib.util
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import types
from collections.abc import Iterator
from pathlib import Path

from packaging.requirements import Requirement

from tests.support import REPO, locked
from tests.venvs import CACHE as VENV_CACHE
from tests.venvs import clean_env

CACHE = VENV_CACHE.parent / "mq-layers"
# the extra that installs each package, whose floor is the version the contract test runs
EXTRAS = {"ibmmq": "mq", "pymqi": "mq-legacy"}


def tested_version(package: str) -> str:
    """The floor of the extra's requirement (``ibmmq>=2.1.2,<3`` -> 2.1.2)."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    [requirement] = [Requirement(r) for r in extras[EXTRAS[package]]]
    assert requirement.name == package, requirement
    [floor] = [s.version for s in requirement.specifier if s.operator == ">="]
    return floor


def ibmmq_root() -> Path:
    """The folder ``ibmmq`` is imported from (the venv's site-packages), after checking that the
    installed release is the tested one."""
    want = tested_version("ibmmq")
    try:
        have = importlib.metadata.version("ibmmq")
    except importlib.metadata.PackageNotFoundError:
        have = None
    if have != want:
        raise RuntimeError(
            f"the venv has ibmmq {have}, the contract test runs {want} (pyproject's `mq` extra): run `make venv`"
        )
    spec = importlib.util.find_spec("ibmmq")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))).parent


def pymqi_root() -> Path:
    """A folder holding pymqi's Python package (``pymqi/``) from its sdist, fetched if missing."""
    version = tested_version("pymqi")
    root = CACHE / f"pymqi-{version}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with locked(root):
        if not (root / "pymqi" / "__init__.py").exists():
            _fetch_pymqi(version, root)
    return root


def _fetch_pymqi(version: str, root: Path) -> None:
    with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
        # The sdist only: building it needs MQ's headers. Its metadata is prepared with the
        # venv's setuptools (pymqi declares no build system), without an isolated build env.
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--quiet", "--no-deps"]
            + ["--no-binary", ":all:", "--no-build-isolation", "-d", scratch, f"pymqi=={version}"],
            env=clean_env(),
            check=True,
            timeout=600,
        )
        [sdist] = Path(scratch).glob("pymqi-*.tar.gz")
        prefix = f"pymqi-{version}/code/pymqi/"
        staged = Path(scratch) / "layer"
        with tarfile.open(sdist) as archive:
            members = [m for m in archive.getmembers() if m.name.startswith(prefix) and m.name.endswith(".py")]
            archive.extractall(staged, members=members, filter="data")
        shutil.rmtree(root, ignore_errors=True)
        (staged / prefix).rename(staged / "pymqi")
        root.mkdir(parents=True)
        (staged / "pymqi").rename(root / "pymqi")
    importlib.invalidate_caches()


def roots() -> dict[str, Path]:
    """package -> the folder it is imported from, fetching what is missing."""
    return {"ibmmq": ibmmq_root(), "pymqi": pymqi_root()}


@contextlib.contextmanager
def imported_layer(package: str, root: Path, extension: types.ModuleType) -> Iterator[types.ModuleType]:
    """``package`` imported from ``root`` with ``extension`` as its C extension
    (``package.<extension's last name>``): the real extension is never loaded."""
    folder = (root / package).resolve()
    saved_path = list(sys.path)
    before = set(sys.modules)
    assert package not in sys.modules, f"{package} is already imported"
    sys.path.insert(0, str(root))
    sys.modules[extension.__name__] = extension
    try:
        yield importlib.import_module(package)
    finally:
        for name in set(sys.modules) - before:
            origin = getattr(sys.modules[name], "__file__", None)
            ours = bool(origin) and Path(origin).resolve().is_relative_to(folder)
            if ours or name == package or name.startswith(package + "."):
                del sys.modules[name]
        sys.modules.pop(extension.__name__, None)
        sys.path[:] = saved_path


if __name__ == "__main__":
    for name, where in roots().items():
        print(f"{name} {tested_version(name)}: {where}")
