"""The wheel is the same whoever builds it, and runs where it is installed.

A plain ``pip wheel`` of the repository's files (what a clean clone holds) builds the wheel
through the package's build backend (tools/build_backend.py), which compiles the JVM reader
into it. Installed into a virtual environment with the `spark` extra's packages and nothing of
this checkout, its ``dlq-pipeline run`` on a generated DLQ, started from a directory outside
the repository, reads the dumps with the JVM reader, decides exactly what a run of this
checkout decides; its ``demo`` runs there too; and both leave the installed package's files
as they were (nothing is compiled or written into it at run time).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dlq_pipeline import __version__
from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import RunSettings
from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.engine.jars import JARS_ENV, cache_root
from dlq_pipeline.ingest import jvm_reader
from dlq_pipeline.pipeline import run_pipeline
from dlq_pipeline.rules.parser import load_rules
from dlq_pipeline.warehouse.storage import Storage
from tests.support import REPO, locked
from tests.venvs import clean_env, environment, pip

pytestmark = [pytest.mark.deploy, pytest.mark.spark]

STARTER = REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules"
COUNT = 60


def package_files(root: Path) -> dict[str, str]:
    """Every file of an installed package but Python's bytecode cache, with its digest."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def decisions(spark, warehouse: Path) -> list[tuple]:
    """What was decided for each message, without the run's id and times."""
    rows = Storage(spark, path=str(warehouse)).read("decisions").collect()
    return sorted(
        (r["message_key"], r["action"], r["rule_line"], r["target_q"], r["target_qmgr"], r["ignore_reason"])
        for r in rows
    )


def test_a_plain_pip_wheel_carries_the_jvm_reader_and_runs_installed(spark, tmp_path):
    """About two and a half minutes: a wheel build in pip's isolated build environment
    (pyspark installed there for javac), the install, `dlq-pipeline setup` (the class archive
    built for the wheel's pyspark, about 40 s), and a `run` and a `demo` in fresh processes:
    the installed package is the subject."""
    clone = tmp_path / "clone"  # the repository's files, without anything a build left in the checkout
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        if (REPO / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, clone / name)
    assert not list((clone / "dlq_pipeline" / "ingest" / "jvm").glob("*.jar"))

    # the build environment's packages at the tested tier's versions (pip's cache has them)
    build_env = {**clean_env(), "PIP_CONSTRAINT": str(REPO / "constraints" / "spark-4.2.txt")}
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path / "dist"), str(clone)],
        env=build_env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = (tmp_path / "dist").glob("*.whl")
    assert wheel.name == f"dlq_pipeline-{__version__}-py3-none-any.whl"

    root = environment("runtime-spark-4.2")
    site = root / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    work = tmp_path / "elsewhere"  # not the repository: only the installed package can be imported
    work.mkdir()
    write_generated(work / "dumps", COUNT, seed=21, files=2, max_size=4096)
    shutil.copy2(STARTER, work / "my.rules")
    cache = tmp_path / "cache"  # the wheel user's cache: the jars as fetched, no class archive yet
    cache.mkdir()
    (cache / "jars").symlink_to(cache_root(), target_is_directory=True)
    env = {
        **clean_env(),
        "PYSPARK_PYTHON": str(root / "bin" / "python"),
        "PYSPARK_DRIVER_PYTHON": "",
        JARS_ENV: str(cache / "jars"),
    }
    with locked(root):
        pip(root, "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel))
        installed = site / "dlq_pipeline"
        jars = sorted(p.name for p in (installed / "ingest" / "jvm").glob("*.jar"))
        assert jars == [jvm_reader.jar_path().name]  # built from these sources
        before = package_files(installed)
        setup = subprocess.run(
            [str(root / "bin" / "dlq-pipeline"), "setup"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        done = subprocess.run(
            [str(root / "bin" / "dlq-pipeline"), "-v", "run", "--input", "dumps", "--rules", "my.rules"]
            + ["--warehouse", "wh", "--target", "dry-run", "--json"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        demo = subprocess.run(
            [str(root / "bin" / "dlq-pipeline"), "demo", "--out", "demo", "--count", "200"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        after = package_files(installed)
    assert setup.returncode == 0, setup.stderr[-3000:]
    [archive] = (cache / "cds").glob("*.jsa")  # under the user's cache, nothing in the package (below)
    assert setup.stderr.splitlines() == [
        f"JVM reader: {installed / 'ingest' / 'jvm' / jvm_reader.jar_path().name}",
        "class archive for Parquet: building from a small pipeline run (about 40 s) ...",
        f"class archive for Parquet: {archive} ({archive.stat().st_size // 2**20} MiB)",
        "setup: done",
    ]
    assert done.returncode in (0, 3), done.stderr[-3000:]
    assert "ingest: 2 of 2 work items read by the JVM reader" in done.stderr
    assert demo.returncode in (0, 3), demo.stderr[-3000:]
    assert (work / "demo" / "report.html").is_file() and "HTML report: demo/report.html" in demo.stdout
    assert after == before

    checkout = tmp_path / "checkout-wh"
    config = load_config(overrides={"storage": {"path": str(checkout)}})
    run_pipeline(
        spark, RunSettings.from_config(config), load_rules(str(STARTER)), inputs=[str(work / "dumps")], target="dry-run"
    )
    mine = decisions(spark, checkout)
    assert len(mine) == COUNT and mine == decisions(spark, work / "wh")
