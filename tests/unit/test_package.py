"""`make package`: the wheel and the packed environment for spark-submit --archives.

Builds both for real, as `make package` does (tests/packed.py: once for the suite, which the
cluster tier ships; pip may fetch numpy/pandas/pyarrow/click from PyPI or its cache), unpacks
the environment the way YARN/Kubernetes unpack an --archives file, and runs the installed
console scripts from it with nothing of the source tree on the path.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from dlq_pipeline import __version__
from dlq_pipeline.cli import cli
from dlq_pipeline.ingest import jvm_reader
from tests.support import REPO

from ..packed import packed_dist
from ..venvs import clean_env

sys.path.insert(0, str(REPO / "tools"))
import package  # noqa: E402

pytestmark = [pytest.mark.deploy, pytest.mark.slow]


def test_make_package_runs_the_packaging_tool():
    # --no-print-directory: under `make test` this is a sub-make, which would add "Leaving directory"
    dry = subprocess.run(
        ["make", "--no-print-directory", "-n", "package", f"VENV={Path(sys.executable).parents[1]}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert dry.stdout.splitlines()[-1].strip() == (
        f"{sys.executable} tools/package.py --dist dist --constraints constraints/spark-4.2.txt"
    )


def test_runtime_requirements_leave_spark_to_the_cluster():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    deps, extras = pyproject["project"]["dependencies"], pyproject["project"]["optional-dependencies"]
    assert not any(package._name(d) in package.LEFT_OUT for d in deps)
    assert package.runtime_requirements(pyproject, []) == deps
    assert package.runtime_requirements(pyproject, ["mq"], with_pyspark=True) == [
        *deps,
        *extras["mq"],
        *extras["spark"],
    ]


def test_wheel_and_packed_environment_run_their_entry_points(tmp_path, monkeypatch):
    dist = packed_dist()  # what `make package` builds, built once for the suite (the cluster tier ships it)
    clean = clean_env()
    wheel = dist / f"dlq_pipeline-{__version__}-py3-none-any.whl"
    archive = dist / f"dlq-pipeline-env-{__version__}.tar.gz"
    jar = jvm_reader.jar_path().name  # the JVM reader, for spark-submit --jars and cluster libraries
    assert sorted(p.name for p in dist.iterdir()) == sorted([wheel.name, archive.name, jvm_reader.DIST_NAME])
    assert (dist / jvm_reader.DIST_NAME).read_bytes() == jvm_reader.jar_path().read_bytes()

    names = set(zipfile.ZipFile(wheel).namelist())
    tables = ["decisions", "decoded", "ledger", "messages", "quarantine"]
    assert {f"dlq_pipeline/data/schemas/{t}.json" for t in tables} <= names
    rules = ["starter", "ibm-distributed-example", "ibm-zos-example"]
    assert {f"dlq_pipeline/data/rules/{r}.rules" for r in rules} <= names
    assert {"dlq_pipeline/data/mq_constants.json", "dlq_pipeline/jobs.py"} <= names
    assert {
        f"dlq_pipeline/ingest/jvm/{jar}",
        "dlq_pipeline/ingest/jvm/ItemReader.java",
    } <= names  # its digest checks out
    assert not any(n.startswith(("tests/", "jobs/")) for n in names)

    env = tmp_path / "environment"  # what `--archives dlq-pipeline-env.tar.gz#environment` unpacks
    with tarfile.open(archive) as tar:
        tar.extractall(env, filter="tar")
    python = str(env / "bin" / "python")
    work = tmp_path / "work"
    work.mkdir()

    def run(*args):
        return subprocess.run([python, *args], cwd=work, env=clean, capture_output=True, text=True, timeout=300)

    where = run(
        "-c",
        "import dlq_pipeline, importlib.util; print(dlq_pipeline.__file__); "
        "print(importlib.util.find_spec('pyspark') is None)",
    )
    assert where.stdout.splitlines() == [
        str(env / "lib" / "python3.11" / "site-packages" / "dlq_pipeline" / "__init__.py"),
        "True",
    ]  # the installed wheel; Spark's own pyspark is used on a cluster

    for stage in ("ingest", "classify", "report", "run"):
        helped = run(str(env / "bin" / f"dlq-pipeline-{stage}"), "--help")
        assert helped.returncode == 0, helped.stderr
        assert helped.stdout.startswith(f"Usage: dlq-pipeline-{stage} [OPTIONS]")

    generated = run(str(env / "bin" / "dlq-pipeline"), "generate", "--out", "dumps", "--count", "40", "--seed", "9")
    assert generated.returncode == 0, generated.stderr
    packaged = run(str(env / "bin" / "dlq-pipeline"), "inspect", "--summary", "dumps/dlq-0000.dmp")
    monkeypatch.chdir(work)
    here = CliRunner().invoke(cli, ["inspect", "--summary", "dumps/dlq-0000.dmp"])
    assert (packaged.returncode, packaged.stdout) == (here.exit_code, here.stdout)
    assert "MQRC_" in packaged.stdout  # reason names come from the packaged mq_constants.json
