"""`dlq-pipeline demo`: a generated DLQ through the whole pipeline, with the options every
command takes (in this process, on the suite's session)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dlq_pipeline.cli import cli

pytestmark = pytest.mark.spark


def test_demo_runs_the_pipeline_under_out_and_takes_the_shared_options(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "my.toml"
    config.write_text("[replay]\nbatch_size = 7\n[report]\ntop = 3\n")
    done = CliRunner().invoke(
        cli, ["demo", "--out", "out", "--count", "40", "--config", str(config), "--set", "replay.max_connections=2"]
    )
    assert done.exit_code in (0, 3), done.output
    assert (tmp_path / "out" / "report.html").is_file()
    tables = {p.name for p in (tmp_path / "out" / "warehouse").iterdir()}
    assert {"messages", "decisions", "ledger"} <= tables  # no bad record: no quarantine table
    assert "warehouse:   out/warehouse\n" in done.output

    # a warehouse named on the command line is used even when it is the default path
    elsewhere = CliRunner().invoke(cli, ["demo", "--out", "out2", "--count", "20", "--warehouse", "./warehouse"])
    assert elsewhere.exit_code in (0, 3), elsewhere.output
    assert (tmp_path / "warehouse" / "messages").is_dir() and not (tmp_path / "out2" / "warehouse").exists()
    runs = list((tmp_path / "warehouse" / "_runs").glob("*.json"))
    assert len(runs) == 1 and json.loads(runs[0].read_text())["messages_landed"] == 20


def test_demo_with_a_bad_setting_is_exit_2_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(cli, ["demo", "--out", "out", "--set", "replay.max_connections=0"])
    assert done.exit_code == 2 and "'replay.max_connections' must be at least 1" in done.output
    assert not (tmp_path / "out").exists()
