"""docs/api.md's examples run as written, in a directory prepared as the page says, with the
suite's session as the reader's ``spark``."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from click.testing import CliRunner

from dlq_pipeline import exitcodes
from dlq_pipeline.cli import cli
from dlq_pipeline.config.settings import StorageSettings
from dlq_pipeline.rules.shipped import STARTER, shipped_path
from dlq_pipeline.warehouse.storage import open_storage
from tests.support import REPO

pytestmark = pytest.mark.spark


def _examples() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", (REPO / "docs" / "api.md").read_text(), re.MULTILINE | re.DOTALL)


WHOLE_RUN, DATA_SOURCE, SQL, STREAM, ERRORS = range(5)


def test_the_page_has_its_five_examples():
    assert len(_examples()) == 5


def _prepared(tmp_path, monkeypatch):
    """The directory the page's examples run in: a generated DLQ and the starter rules."""
    monkeypatch.chdir(tmp_path)
    generated = CliRunner().invoke(cli, ["generate", "--out", "dumps", "--count", "200", "--seed", "7"])
    assert generated.exit_code == 0, generated.output
    (tmp_path / "dlq.rules").write_bytes(shipped_path(STARTER).read_bytes())


def _run(spark, example: int, given: dict | None = None) -> tuple[dict, str]:
    shown = io.StringIO()
    names: dict = {"spark": spark, **(given or {})}
    with contextlib.redirect_stdout(shown):
        exec(_examples()[example], names)
    return names, shown.getvalue()


def test_a_whole_run_as_the_page_shows_it_equals_the_run_command(spark, tmp_path, monkeypatch):
    _prepared(tmp_path, monkeypatch)
    names, shown = _run(spark, WHOLE_RUN)
    summary = names["summary"]
    assert summary.messages_landed == 200 and sum(summary.decisions.values()) == 200
    assert f"200 messages landed; decisions {summary.decisions}" in shown
    assert "|action|count|" in shown

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


def test_the_data_source_example_decides_as_the_run_command(spark, tmp_path, monkeypatch):
    """The page's three lines: each message of the dumps read by the data source gets the
    decision `run` stores for it."""
    _prepared(tmp_path, monkeypatch)
    names, shown = _run(spark, DATA_SOURCE)
    assert "|              reason|action|count|" in shown
    ran = CliRunner().invoke(
        cli, ["run", "--input", "dumps", "--rules", "dlq.rules", "--warehouse", "wh", "--target", "dry-run"]
    )
    assert ran.exit_code in (exitcodes.OK, exitcodes.ATTENTION), ran.output
    columns = ["message_key", "action", "rule_line", "target_q", "target_qmgr", "ignore_reason"]
    stored = open_storage(spark, StorageSettings(path=str(tmp_path / "wh"))).read("decisions").select(columns)
    decided = names["decided"].select(columns)
    assert decided.count() == 200 and sorted(decided.collect()) == sorted(stored.collect())


def test_the_sql_example_runs(spark, tmp_path, monkeypatch):
    _prepared(tmp_path, monkeypatch)
    names, shown = _run(spark, SQL, {"dumps": str(tmp_path / "dumps")})  # as the example before it leaves it
    assert "|          dlh_dest_q|  n|" in shown and "|source_index|dlh_reason|" in shown
    assert names["headers"].count() == 200


def test_the_stream_example_lands_what_a_batch_ingest_lands(spark, tmp_path, monkeypatch):
    """The stream lands the dumps once (a restart lands nothing new), with the messages and
    files rows a batch ingest of the same dumps gives, and the run after it decides them."""
    _prepared(tmp_path, monkeypatch)
    names, shown = _run(spark, STREAM)
    assert "200 messages decided" in shown
    _, again = _run(spark, STREAM)  # restarted: nothing new lands; a dry run left all 200 pending
    assert "200 messages decided" in again
    ran = CliRunner().invoke(cli, ["ingest", "dumps", "--warehouse", "batch"])
    assert ran.exit_code in (exitcodes.OK, exitcodes.ATTENTION), ran.output
    streamed = open_storage(spark, names["settings"].storage)
    batch = open_storage(spark, StorageSettings(path=str(tmp_path / "batch")))
    columns = ["message_key", "source_file", "source_index", "data"]
    assert sorted(streamed.read("messages").select(columns).collect()) == sorted(
        batch.read("messages").select(columns).collect()
    )
    files = ["path", "size", "messages", "quarantined"]
    assert sorted(streamed.read("files").select(files).collect()) == sorted(batch.read("files").select(files).collect())
    assert streamed.read("messages").count() == 200


def test_the_errors_example_exits_as_the_command_would(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "missing-action.rules").write_text("REASON(MQRC_Q_FULL)\n")
    names: dict = {}
    exec(_examples()[ERRORS], names)
    assert names["exit_code"] == exitcodes.USAGE
    assert "missing-action.rules: rules table is invalid (1 error)" in capsys.readouterr().err
