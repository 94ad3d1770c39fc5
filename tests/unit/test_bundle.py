"""The Databricks bundle (databricks.yml + resources/*.yml) against the rules the Databricks
CLI enforces at `bundle validate`/`deploy` (no CLI or workspace here), and against this
package: every wheel task's package and entry point are in the built wheel, every file a
task reads is in the repository, serverless tasks use an environment and nothing a
serverless job cannot have (environment variables, JARs, clusters)."""

from __future__ import annotations

import configparser
import copy
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

from dlq_pipeline import jobs
from dlq_pipeline.config import OPTIONS
from tests.support import REPO

ROOT = REPO / "databricks.yml"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
TOP_LEVEL = {
    "bundle",
    "variables",
    "artifacts",
    "sync",
    "resources",
    "targets",
    "include",
    "workspace",
    "permissions",
    "run_as",
    "presets",
    "experimental",
}
SERVERLESS_STAGES = {"ingest", "classify", "report"}  # DataFrame API only: no RDDs, no MQ client


def load_bundle(root: Path = ROOT) -> tuple[dict, dict[str, Path]]:
    """The bundle as the CLI assembles it: databricks.yml plus every `include` file's
    resources, and for each job the file it was defined in (relative paths resolve there)."""
    bundle = yaml.safe_load(root.read_text())
    where = {name: root for name in bundle.get("resources", {}).get("jobs", {})}
    for pattern in bundle.get("include", []):
        for path in sorted(root.parent.glob(pattern)):
            part = yaml.safe_load(path.read_text())
            assert set(part) == {"resources"}, f"{path.name}: only resources belong in an included file"
            for name, job in part["resources"].get("jobs", {}).items():
                assert name not in where, f"job {name} defined twice"
                bundle.setdefault("resources", {}).setdefault("jobs", {})[name] = job
                where[name] = path
    return bundle, where


BUNDLE, DEFINED_IN = load_bundle()
JOBS = BUNDLE["resources"]["jobs"]


def production_problems(bundle: dict) -> list[str]:
    """The CLI's rule for `mode: production`: an explicit workspace.root_path (at the top or
    in the target), or a run_as identity, so that one copy is deployed per target."""
    problems = []
    for name, target in bundle.get("targets", {}).items():
        if target.get("mode") != "production":
            continue
        root_path = (target.get("workspace") or {}).get("root_path") or (bundle.get("workspace") or {}).get("root_path")
        run_as = target.get("run_as") or bundle.get("run_as")
        if not root_path and not run_as:
            problems.append(f"target {name}: mode: production needs workspace.root_path or run_as")
    return problems


def all_yaml_text() -> str:
    return "\n".join(p.read_text() for p in {ROOT, *DEFINED_IN.values()})


def wheel_tasks():
    for job_name, job in JOBS.items():
        for task in job["tasks"]:
            yield job_name, task


# --- structure ------------------------------------------------------------------------


def test_settings_in_databricks_yml_and_every_job_in_resources():
    assert set(BUNDLE) <= TOP_LEVEL and BUNDLE["bundle"]["name"] == "dlq-pipeline"
    assert "resources" not in yaml.safe_load(ROOT.read_text())
    assert {p.relative_to(REPO).as_posix() for p in DEFINED_IN.values()} == {
        "resources/dlq_pipeline.job.yml",
        "resources/dlq_pipeline_serverless.job.yml",
    }
    assert set(JOBS) == {"dlq_pipeline", "dlq_pipeline_serverless"}


def test_targets_and_production_mode_is_valid():
    targets = BUNDLE["targets"]
    assert set(targets) == {"dev", "prod"}
    assert targets["dev"]["mode"] == "development" and targets["dev"]["default"] is True
    assert targets["prod"]["mode"] == "production" and "default" not in targets["prod"]
    assert production_problems(BUNDLE) == []
    assert set(targets["prod"]["resources"]["jobs"]) <= set(JOBS)  # overrides name real jobs
    assert "schedule" in targets["prod"]["resources"]["jobs"]["dlq_pipeline"]


def test_the_production_rule_rejects_a_target_without_root_path_or_run_as():
    broken = copy.deepcopy(BUNDLE)
    del broken["targets"]["prod"]["workspace"]
    assert production_problems(broken) == ["target prod: mode: production needs workspace.root_path or run_as"]
    broken["targets"]["prod"]["run_as"] = {"service_principal_name": "00000000-0000-0000-0000-000000000000"}
    assert production_problems(broken) == []


def test_every_variable_used_is_declared_with_a_description_and_default():
    declared = BUNDLE["variables"]
    assert {"catalog", "schema"} <= set(declared)
    assert all(set(v) == {"description", "default"} for v in declared.values())
    used = set(re.findall(r"\$\{var\.([a-z_]+)\}", all_yaml_text()))
    assert used == set(declared)
    for target in BUNDLE["targets"].values():
        assert set(target.get("variables", {})) <= set(declared)


# --- wheel tasks ------------------------------------------------------------------------


def test_the_wheel_artifact_builds_into_dist():
    [artifact] = [a for a in BUNDLE["artifacts"].values() if a["type"] == "whl"]
    assert artifact["path"] == "." and artifact["build"] == "python -m build --wheel"


def test_the_jvm_reader_artifact_is_the_jar_its_command_copies_into_dist(tmp_path):
    """The bundle builds the JVM reader's jar with the module's own command; the classic
    job's tasks install what that command writes."""
    from dlq_pipeline.ingest import jvm_reader

    [artifact] = [a for a in BUNDLE["artifacts"].values() if a["type"] == "jar"]
    assert artifact["build"] == "python -m dlq_pipeline.ingest.jvm_reader --copy-to dist"
    assert artifact["files"] == [{"source": f"dist/{jvm_reader.DIST_NAME}"}]
    done = subprocess.run(
        [sys.executable, "-m", "dlq_pipeline.ingest.jvm_reader", "--copy-to", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / jvm_reader.DIST_NAME).read_bytes() == jvm_reader.jar_path().read_bytes()


def _local_wheel_paths(job_name: str, job: dict) -> list[str]:
    paths = [lib["whl"] for task in job["tasks"] for lib in task.get("libraries", []) if "whl" in lib]
    paths += [dep for env in job.get("environments", []) for dep in env["spec"].get("dependencies", [])]
    return paths


@pytest.mark.parametrize("job_name", sorted(JOBS))
def test_the_wheel_each_job_installs_is_the_built_artifact(job_name):
    """Local paths resolve against the file that names them; `python -m build --wheel` in
    the bundle root writes dist/*.whl."""
    job = JOBS[job_name]
    paths = _local_wheel_paths(job_name, job)
    assert paths
    for path in paths:
        resolved = (DEFINED_IN[job_name].parent / path).resolve()
        assert (resolved.parent, resolved.name) == (REPO / "dist", "*.whl"), path


def test_each_task_runs_a_console_script_of_the_built_wheel(built_wheel):
    with zipfile.ZipFile(built_wheel) as wheel:
        [dist_info] = {n.split("/")[0] for n in wheel.namelist() if n.split("/")[0].endswith(".dist-info")}
        entry_points = configparser.ConfigParser()
        entry_points.read_string(wheel.read(f"{dist_info}/entry_points.txt").decode())
        packages = {n.split("/")[0] for n in wheel.namelist() if n.endswith("/__init__.py")}
    scripts = dict(entry_points["console_scripts"])
    for job_name, task in wheel_tasks():
        wheel_task = task["python_wheel_task"]
        assert wheel_task["package_name"] in packages, (job_name, task["task_key"])
        assert scripts[wheel_task["entry_point"]] == f"dlq_pipeline.jobs:{task['task_key']}"
        assert task["task_key"] in jobs.STAGES


def test_parameters_not_named_parameters_and_every_setting_is_a_real_option():
    for job_name, task in wheel_tasks():
        wheel_task = task["python_wheel_task"]
        assert set(wheel_task) == {"package_name", "entry_point", "parameters"}, (job_name, task["task_key"])
        params = wheel_task["parameters"]
        assert params[:2] == ["--config", "${workspace.file_path}/conf/dlq-pipeline.toml"]
        settings = [params[i + 1] for i, p in enumerate(params) if p == "--set"]
        # Delta tables by catalog name in every job
        assert {"storage.catalog=${var.catalog}", "storage.schema=${var.schema}"} <= set(settings)
        for setting in settings:
            section, key = setting.split("=", 1)[0].split(".")
            assert key in OPTIONS[section], setting


def test_every_file_a_task_reads_is_in_the_repository_and_synced():
    referenced = set(re.findall(r"\$\{workspace\.file_path\}/([^\"',\s\]]+)", all_yaml_text()))
    assert referenced == {"conf/dlq-pipeline.toml", "dlq_pipeline/data/rules/starter.rules"}
    tracked = subprocess.run(
        ["git", "ls-files", "--error-unmatch", *sorted(referenced)], cwd=REPO, capture_output=True, text=True
    )
    assert tracked.returncode == 0, tracked.stderr  # in git, so `bundle deploy` syncs it


def test_stages_run_in_pipeline_order_one_run_at_a_time():
    for job in JOBS.values():
        keys = [t["task_key"] for t in job["tasks"]]
        assert keys == [s for s in jobs.STAGES if s in keys]
        assert job["max_concurrent_runs"] == 1
        previous = None
        for task in job["tasks"]:
            assert task.get("depends_on", []) == ([{"task_key": previous}] if previous else [])
            previous = task["task_key"]
    assert [t["task_key"] for t in JOBS["dlq_pipeline"]["tasks"]] == ["ingest", "classify", "replay", "report"]


# --- classic and serverless -------------------------------------------------------------


def test_classic_job_tasks_run_on_its_cluster_with_the_wheel_as_a_library():
    job = JOBS["dlq_pipeline"]
    clusters = {c["job_cluster_key"] for c in job["job_clusters"]}
    for task in job["tasks"]:
        assert task["job_cluster_key"] in clusters
        assert task["libraries"] == [{"whl": "../dist/*.whl"}, {"jar": "../dist/dlq-pipeline-reader.jar"}]
        assert "environment_key" not in task


def test_serverless_job_uses_an_environment_and_nothing_serverless_cannot_have():
    job = JOBS["dlq_pipeline_serverless"]
    environments = {e["environment_key"]: e["spec"] for e in job["environments"]}
    assert not {"job_clusters", "tasks_clusters"} & set(job)
    for spec in environments.values():
        assert spec.get("environment_version") or spec.get("client")
        assert not any(d.endswith(".jar") for d in spec.get("dependencies", []))
    for task in job["tasks"]:
        assert task["environment_key"] in environments
        assert not {"job_cluster_key", "new_cluster", "existing_cluster_id", "libraries"} & set(task)
        params = task["python_wheel_task"]["parameters"]
        assert params[2:4] == ["--profile", "databricks"]  # no DLQ_PIPELINE_PROFILE on serverless
    assert {t["task_key"] for t in job["tasks"]} == SERVERLESS_STAGES
    text = DEFINED_IN["dlq_pipeline_serverless"].read_text()
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "spark_env_vars" not in body and "spark_conf" not in body and ".jar" not in body


def test_secrets_come_from_a_secret_scope_and_the_profile_is_databricks():
    [cluster] = JOBS["dlq_pipeline"]["job_clusters"]
    env = cluster["new_cluster"]["spark_env_vars"]
    assert env["DLQ_MQ_PASSWORD"] == "{{secrets/${var.secret_scope}/mq-password}}"
    assert env["DLQ_PIPELINE_PROFILE"] == "databricks"
    conf = tomllib.loads((REPO / "conf" / "dlq-pipeline.toml").read_text())
    databricks = conf["profiles"]["databricks"]
    assert databricks["storage"]["format"] == "delta"
    assert {qm["password_env"] for qm in databricks["mq"]["qmgrs"].values()} == {"DLQ_MQ_PASSWORD"}
    values = [
        line.split(":", 1)[1]
        for line in all_yaml_text().lower().splitlines()
        if re.match(r"\s*[a-z_]*(password|token)[a-z_]*:", line)
    ]
    assert values == [' "{{secrets/${var.secret_scope}/mq-password}}"']  # a secret reference, never a value
