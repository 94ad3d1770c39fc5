"""What the wheel asks of an environment: ranges, not pins; pyspark only in the `spark` extra.

- pyproject declares ranges, and every Spark tier's constraints file (constraints/*.txt) pins
  versions inside them and resolves with pip, `[spark,delta]` included;
- the built wheel installed into an environment shaped like a Databricks 17.3 runtime
  (pyspark 4.0 and that runtime's pandas/numpy/pyarrow) replaces none of them;
- without any pyspark, `inspect`, `generate` and `rules` work and every Spark command exits 2
  with one line saying what to install, touching nothing.

The environments are real venvs, cached outside the repository (tests/venvs.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from dlq_pipeline import __version__
from dlq_pipeline.cli.common import NO_PYSPARK
from dlq_pipeline.rules.parser import parse_rules
from tests.support import REPO, locked

from ..venvs import CONSTRAINTS, RUNTIME_PACKAGES, clean_env, environment, installed, pip

pytestmark = [pytest.mark.deploy, pytest.mark.slow]

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
TIERS = {"spark-4.2.txt": ("4.2.", "4.4."), "spark-4.0.txt": ("4.0.", "4.0."), "spark-3.5.txt": ("3.5.", "3.3.")}


def pins(path: Path) -> dict[str, str]:
    """name -> version of a constraints file (comments and blank lines skipped)."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            [spec] = req.specifier
            assert spec.operator == "==", f"{path.name}: {line} is not a pin"
            out[req.name.lower().replace("_", "-")] = spec.version
    return out


def declared() -> list[Requirement]:
    project = PYPROJECT["project"]
    extras = project["optional-dependencies"]
    return [Requirement(r) for r in [*project["dependencies"], *extras["spark"], *extras["delta"]]]


def test_pyproject_declares_ranges_and_keeps_pyspark_in_an_extra():
    project = PYPROJECT["project"]
    every = [r for rs in [project["dependencies"], *project["optional-dependencies"].values()] for r in rs]
    assert [r for r in every if "==" in r] == []
    assert not any(Requirement(r).name == "pyspark" for r in project["dependencies"])
    assert [Requirement(r).name for r in project["optional-dependencies"]["spark"]] == ["pyspark"]


@pytest.mark.parametrize("name", sorted(TIERS))
def test_each_tier_pins_versions_inside_the_declared_ranges(name):
    pinned = pins(CONSTRAINTS / name)
    spark, delta = TIERS[name]
    assert pinned["pyspark"].startswith(spark) and pinned["delta-spark"].startswith(delta)
    for req in declared():
        assert req.name in pinned, f"{name} does not pin {req.name}"
        assert req.specifier.contains(pinned[req.name]), f"{name}: {req.name}=={pinned[req.name]} not in {req}"


def _resolve(*args: str) -> dict[str, str]:
    """What `pip install --dry-run` would install from scratch: name -> version."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--disable-pip-version-check",
            "--report",
            "-",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=clean_env(),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    return {i["metadata"]["name"].lower().replace("_", "-"): i["metadata"]["version"] for i in report["install"]}


@pytest.mark.parametrize("name", sorted(TIERS))
def test_the_wheel_with_spark_and_delta_resolves_in_every_tier(built_wheel, name):
    got = _resolve("-c", str(CONSTRAINTS / name), f"{built_wheel}[spark,delta]")
    pinned = pins(CONSTRAINTS / name)
    assert {k: got[k] for k in (*RUNTIME_PACKAGES, "delta-spark")} == {
        k: pinned[k] for k in (*RUNTIME_PACKAGES, "delta-spark")
    }


def test_the_delta_extra_resolves_without_constraints(built_wheel):
    """`pip install 'dlq-pipeline[delta]'`: pip finds a delta-spark and a pyspark that agree."""
    got = _resolve(f"{built_wheel}[delta]")
    assert got["dlq-pipeline"] == __version__
    delta_wants = SpecifierSet(
        ",".join(
            str(Requirement(r).specifier)
            for r in _requires_dist("delta-spark", got["delta-spark"])
            if r.startswith("pyspark")
        )
    )
    assert delta_wants.contains(got["pyspark"])


def _requires_dist(name: str, version: str) -> list[str]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
            "--report",
            "-",
            f"{name}=={version}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_env(),
        check=True,
    )
    [item] = json.loads(done.stdout)["install"]
    return item["metadata"].get("requires_dist", [])


def test_the_wheel_on_a_databricks_17_3_like_runtime_replaces_none_of_its_packages(built_wheel):
    # a Databricks runtime ships plotly too (the report's charts)
    runtime = environment("runtime-spark-4.0-plotly")
    with locked(runtime):
        before = installed(runtime)
        try:
            pip(runtime, "install", "--quiet", str(built_wheel))
            after = installed(runtime)
            helped = subprocess.run(
                [str(runtime / "bin" / "dlq-pipeline"), "--version"],
                env=clean_env(),
                capture_output=True,
                text=True,
                timeout=120,
            )
        finally:  # the runtime as it was, for the next run
            pip(runtime, "uninstall", "--yes", *(set(installed(runtime)) - set(before)))
    assert {k: after[k] for k in before} == before  # nothing replaced
    # nothing added but the wheel and the one dependency a runtime may lack (the terminal's progress bar)
    assert set(after) - set(before) == {"dlq-pipeline", "tqdm"} and after["dlq-pipeline"] == __version__
    assert {k: before[k] for k in RUNTIME_PACKAGES} == {
        k: pins(CONSTRAINTS / "spark-4.0.txt")[k] for k in RUNTIME_PACKAGES
    }
    assert (helped.returncode, helped.stdout) == (0, f"dlq-pipeline, version {__version__}\n")


@pytest.fixture(scope="module")
def no_spark(built_wheel) -> Path:
    """A venv with the wheel and its own dependencies, and no pyspark at all."""
    root = environment("no-pyspark")
    with locked(root):
        pip(root, "install", "--quiet", "--no-deps", "--force-reinstall", str(built_wheel))
    return root


def test_without_pyspark_the_spark_free_commands_work(no_spark, tmp_path):
    def run(*args):
        return subprocess.run(
            [str(no_spark / "bin" / "dlq-pipeline"), *args],
            cwd=tmp_path,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )

    probe = subprocess.run(
        [str(no_spark / "bin" / "python"), "-c", "import pyspark"], capture_output=True, env=clean_env()
    )
    assert probe.returncode == 1  # really no pyspark
    generated = run("generate", "--out", "dumps", "--count", "30", "--seed", "3")
    assert generated.returncode == 0, generated.stderr
    inspected = run("inspect", "--summary", "dumps/dlq-0000.dmp")
    assert inspected.returncode == 0 and "MQRC_" in inspected.stdout, inspected.stderr
    example = run("rules", "example", "starter")
    assert example.returncode == 0 and example.stdout.startswith("****")
    (tmp_path / "my.rules").write_text(example.stdout)
    checked = run("rules", "check", "--strict", "my.rules")
    rules = len(parse_rules(example.stdout).rules)
    assert (checked.returncode, checked.stderr) == (0, f"my.rules: valid, {rules} rules (0 errors, 0 warnings)\n")
    tried = run("rules", "test", "my.rules", "--input", "dumps", "--json")
    assert tried.returncode in (0, 3) and tried.stdout.count("\n") == 30, tried.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["dlq-pipeline", "ingest", "dumps", "--warehouse", "wh"],
        ["dlq-pipeline", "classify", "--rules", "my.rules", "--warehouse", "wh"],
        ["dlq-pipeline", "run", "--input", "dumps", "--rules", "my.rules", "--warehouse", "wh"],
        ["dlq-pipeline", "report", "--warehouse", "wh"],
        ["dlq-pipeline", "demo", "--out", "wh", "--count", "10"],
        ["dlq-pipeline-run", "--input", "dumps", "--rules", "my.rules", "--warehouse", "wh"],
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_without_pyspark_spark_commands_exit_2_with_one_line_and_touch_nothing(no_spark, tmp_path, command):
    subprocess.run(
        [str(no_spark / "bin" / "dlq-pipeline"), "generate", "--out", "dumps", "--count", "5", "--seed", "1"],
        cwd=tmp_path,
        env=clean_env(),
        check=True,
        capture_output=True,
    )
    (tmp_path / "my.rules").write_text((REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules").read_text())
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    done = subprocess.run(
        [str(no_spark / "bin" / command[0]), *command[1:]],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (done.returncode, done.stdout, done.stderr) == (2, "", NO_PYSPARK + "\n")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
