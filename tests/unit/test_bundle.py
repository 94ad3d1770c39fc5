"""databricks.yml against the structure docs/deploy.md documents (no Databricks CLI here):
targets, variables, the wheel artifact, and every task's entry point being a console script
of this package that runs the stage of the same name."""

from __future__ import annotations

import re
import tomllib

import yaml

from dlq_pipeline import jobs
from dlq_pipeline.config import OPTIONS

from ..conftest import REPO

BUNDLE = yaml.safe_load((REPO / "databricks.yml").read_text())
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
TOP_LEVEL = {"bundle", "variables", "artifacts", "sync", "resources", "targets", "include", "workspace", "permissions"}


def tasks():
    [job] = BUNDLE["resources"]["jobs"].values()
    return job, job["tasks"]


def test_top_level_and_targets():
    assert set(BUNDLE) <= TOP_LEVEL and BUNDLE["bundle"]["name"] == "dlq-pipeline"
    targets = BUNDLE["targets"]
    assert set(targets) == {"dev", "prod"}
    assert targets["dev"]["mode"] == "development" and targets["dev"]["default"] is True
    assert targets["prod"]["mode"] == "production" and "default" not in targets["prod"]
    assert "schedule" in targets["prod"]["resources"]["jobs"]["dlq_pipeline"]


def test_every_variable_used_is_declared_with_a_description_and_default():
    declared = BUNDLE["variables"]
    assert {"catalog", "schema"} <= set(declared)
    assert all(set(v) == {"description", "default"} for v in declared.values())
    used = set(re.findall(r"\$\{var\.([a-z_]+)\}", (REPO / "databricks.yml").read_text()))
    assert used == set(declared)
    for target in BUNDLE["targets"].values():
        assert set(target.get("variables", {})) <= set(declared)


def test_the_wheel_artifact_is_what_the_tasks_install():
    [artifact] = BUNDLE["artifacts"].values()
    assert artifact["type"] == "whl" and artifact["path"] == "." and "build --wheel" in artifact["build"]
    _, all_tasks = tasks()
    assert all(t["libraries"] == [{"whl": "./dist/*.whl"}] for t in all_tasks)


def test_each_task_runs_a_console_script_of_this_package_in_pipeline_order():
    scripts = PYPROJECT["project"]["scripts"]
    job, all_tasks = tasks()
    keys = [t["task_key"] for t in all_tasks]
    assert keys == ["ingest", "classify", "replay", "report"]
    assert job["max_concurrent_runs"] == 1
    previous = None
    for task in all_tasks:
        wheel = task["python_wheel_task"]
        assert wheel["package_name"] == PYPROJECT["project"]["name"].replace("-", "_")
        assert scripts[wheel["entry_point"]] == f"dlq_pipeline.jobs:{task['task_key']}"
        assert task["task_key"] in jobs.STAGES
        assert task.get("depends_on", []) == ([{"task_key": previous}] if previous else [])
        previous = task["task_key"]
        params = wheel["parameters"]
        assert params[:2] == ["--config", "${workspace.file_path}/conf/dlq-pipeline.toml"]
        settings = [params[i + 1] for i, p in enumerate(params) if p == "--set"]
        assert {"storage.catalog=${var.catalog}", "storage.schema=${var.schema}"} <= set(settings)
        for setting in settings:  # every --set names a real option
            section, key = setting.split("=", 1)[0].split(".")
            assert key in OPTIONS[section]


def test_secrets_come_from_a_secret_scope_and_the_profile_is_databricks():
    job, _ = tasks()
    [cluster] = job["job_clusters"]
    env = cluster["new_cluster"]["spark_env_vars"]
    assert env["DLQ_MQ_PASSWORD"] == "{{secrets/${var.secret_scope}/mq-password}}"
    assert env["DLQ_PIPELINE_PROFILE"] == "databricks"
    conf = tomllib.loads((REPO / "conf" / "dlq-pipeline.toml").read_text())
    databricks = conf["profiles"]["databricks"]
    assert databricks["storage"]["format"] == "delta"
    assert {qm["password_env"] for qm in databricks["mq"]["qmgrs"].values()} == {"DLQ_MQ_PASSWORD"}
    values = [line.split(":", 1)[1] for line in (REPO / "databricks.yml").read_text().lower().splitlines()
              if re.match(r"\s*[a-z_]*(password|token)[a-z_]*:", line)]
    assert values == [' "{{secrets/${var.secret_scope}/mq-password}}"']  # a secret reference, never a value
