"""docs/api.md's examples run as written, in a directory prepared as the page says, with the
suite's session as the reader's ``spark``."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from click.testing import CliRunner

from dlq_pipeline.cli import cli
from dlq_pipeline.rules.shipped import STARTER, shipped_path
from dlq_pipeline.runtime import exitcodes
from dlq_pipeline.warehouse.storage import open_storage

from ..conftest import REPO

pytestmark = pytest.mark.spark


def _examples() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", (REPO / "docs" / "api.md").read_text(), re.MULTILINE | re.DOTALL)


def test_the_page_has_its_two_examples():
    assert len(_examples()) == 2


def test_a_whole_run_as_the_page_shows_it_equals_the_run_command(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    generated = CliRunner().invoke(cli, ["generate", "--out", "dumps", "--count", "200", "--seed", "7"])
    assert generated.exit_code == 0, generated.output
    (tmp_path / "dlq.rules").write_bytes(shipped_path(STARTER).read_bytes())
    shown = io.StringIO()
    names: dict = {"spark": spark}
    with contextlib.redirect_stdout(shown):
        exec(_examples()[0], names)
    summary = names["summary"]
    assert summary.messages_landed == 200 and sum(summary.decisions.values()) == 200
    assert f"200 messages landed; decisions {summary.decisions}" in shown.getvalue()
    assert "|action|count|" in shown.getvalue()

    # the same dumps through the command line: the same decisions
    settings = names["settings"]
    ran = CliRunner().invoke(
        cli,
        ["run", "--input", "dumps", "--rules", "dlq.rules", "--warehouse", "cli-warehouse", "--target", "dry-run"],
    )
    assert ran.exit_code in (exitcodes.OK, exitcodes.ATTENTION), ran.output
    columns = ["message_key", "action", "rule_line", "target_q", "target_qmgr", "ignore_reason"]
    api = names["decisions"].select(columns)
    command = open_storage(spark, type(settings.storage)(path=str(tmp_path / "cli-warehouse"))).read("decisions")
    assert sorted(api.collect()) == sorted(command.select(columns).collect())


def test_the_errors_example_exits_as_the_command_would(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "missing-action.rules").write_text("REASON(MQRC_Q_FULL)\n")
    names: dict = {}
    exec(_examples()[1], names)
    assert names["exit_code"] == exitcodes.USAGE
    assert "missing-action.rules: rules table is invalid (1 error)" in capsys.readouterr().err
