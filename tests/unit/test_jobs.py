"""The job dispatcher behind jobs/*.py and the dlq-pipeline-<stage> console scripts (no Spark)."""

from __future__ import annotations

import ast
import tomllib

import pytest

from dlq_pipeline import jobs
from dlq_pipeline.cli.common import parse_setting
from tests.support import REPO


def script_stage(path) -> str:
    """The stage a jobs/*.py script hands to jobs.main."""
    tree = ast.parse(path.read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "main"]
    [call] = calls
    return call.args[0].value


def test_every_job_script_runs_its_own_stage():
    scripts = sorted((REPO / "jobs").glob("*.py"))
    assert {p.stem: script_stage(p) for p in scripts} == {s: s for s in jobs.STAGES}


def test_console_scripts_are_one_per_stage_through_the_dispatcher():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    stage_scripts = {k: v for k, v in scripts.items() if k != "dlq-pipeline"}
    assert stage_scripts == {f"dlq-pipeline-{s}": f"dlq_pipeline.jobs:{s}" for s in jobs.STAGES}
    assert all(callable(getattr(jobs, s)) for s in jobs.STAGES)


def test_help_names_the_job(capsys):
    with pytest.raises(SystemExit) as exit_info:
        jobs.main("ingest", ["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("Usage: dlq-pipeline-ingest [OPTIONS] PATHS...")
    assert "--config" in out and "--set SECTION.KEY=VALUE" in out


def test_a_stage_this_version_lacks_exits_2_before_anything(monkeypatch, capsys):
    monkeypatch.setattr(jobs, "command_for", lambda stage: None if stage == "drain" else object())
    with pytest.raises(SystemExit) as exit_info:
        jobs.main("drain", [])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: this dlq-pipeline has no 'drain' stage (available: ingest, classify, replay,")


def test_bad_configuration_exits_2_with_every_problem(tmp_path, capsys):
    conf = tmp_path / "c.toml"
    conf.write_text('[log]\nformat = "xml"\n')
    with pytest.raises(SystemExit) as exit_info:
        jobs.main("run", ["--config", str(conf), "--set", "replay.batchsize=5", "--set", "nodot"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: --set 'nodot': use SECTION.KEY=VALUE, e.g. storage.catalog=main",
        "error: command line: unknown key 'replay.batchsize' (did you mean 'batch_size'?)",
        f"error: {conf}: 'log.format' must be text or json, not 'xml'",
    ]


@pytest.mark.parametrize(
    "item, expected",
    [
        ("storage.catalog=main", ("storage", "catalog", "main")),
        ("replay.batch_size=50", ("replay", "batch_size", 50)),
        ("replay.depth_check=true", ("replay", "depth_check", True)),
        ('pipeline.inputs=["/a", "/b"]', ("pipeline", "inputs", ["/a", "/b"])),
        ('metrics.textfile="/var/lib/x y.prom"', ("metrics", "textfile", "/var/lib/x y.prom")),
        ("pipeline.target=mq:QM1", ("pipeline", "target", "mq:QM1")),
        ("storage.path=", ("storage", "path", "")),
    ],
)
def test_parse_setting(item, expected):
    assert parse_setting(item) == expected


@pytest.mark.parametrize("item", ["storage", "catalog=main", ".x=1", "storage.=1"])
def test_parse_setting_rejects(item):
    with pytest.raises(ValueError, match="use SECTION.KEY=VALUE"):
        parse_setting(item)


def test_what_spark_submit_was_given_wins_over_defaults_and_the_file():
    from dlq_pipeline.engine.session import BASE_CONF, session_conf

    settings = {"master": "local[*]", "app_name": "dlq-pipeline", "spark_conf": {"spark.sql.shuffle.partitions": "8"}}
    launcher = {
        "spark.master": "yarn",
        "spark.app.name": "dlq-nightly",
        "spark.sql.shuffle.partitions": "200",
        "spark.submit.deployMode": "cluster",
    }
    assert session_conf(settings, launcher) == {**BASE_CONF, **launcher}
    assert session_conf(settings)["spark.master"] == "local[*]"  # no launcher: the configuration decides


def test_shipped_files_maps_names_of_local_files_given_to_spark_submit():
    assert jobs.shipped_files("file:/etc/dlq/prod.toml, /etc/dlq/prod.rules,hdfs://nn/x/remote.toml,") == {
        "prod.toml": "/etc/dlq/prod.toml",
        "prod.rules": "/etc/dlq/prod.rules",
    }
    assert jobs.shipped_files("") == {}


def test_a_bare_config_or_rules_name_missing_here_is_the_shipped_file_client_mode():
    shipped = {"prod.toml": "/etc/dlq/prod.toml", "prod.rules": "/etc/dlq/prod.rules"}
    args = ["--config", "prod.toml", "--profile", "cluster", "--rules=prod.rules", "--target", "prod.toml"]
    assert jobs.with_shipped_files(args, shipped, exists=lambda p: False) == [
        "--config",
        "/etc/dlq/prod.toml",
        "--profile",
        "cluster",
        "--rules=/etc/dlq/prod.rules",
        "--target",
        "prod.toml",
    ]


def test_a_name_found_here_or_a_path_or_an_unshipped_name_is_left_alone():
    shipped = {"prod.toml": "/etc/dlq/prod.toml"}
    here = ["--config", "prod.toml"]  # cluster mode: Spark put the file in the driver's directory
    assert jobs.with_shipped_files(here, shipped, exists=lambda p: True) == here
    for args in (["--config", "conf/prod.toml"], ["--config", "other.toml"], ["--config"]):
        assert jobs.with_shipped_files(args, shipped, exists=lambda p: False) == args
