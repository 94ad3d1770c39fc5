"""How every command ends (`dlq_pipeline.cli.common.exit_status`): with the status it returns,
or with an error's ``error:`` lines and exit status, through click, so ``dlq-pipeline``, a
per-stage script and a caller of ``cli.main(..., standalone_mode=False)`` get the same status;
no module of the command line exits by itself. No Spark."""

from __future__ import annotations

import ast

import click
import pytest
from click.testing import CliRunner

from dlq_pipeline import exitcodes, jobs
from dlq_pipeline.cli import cli
from dlq_pipeline.cli.common import NO_PYSPARK, Command, Group, exit_status
from tests.support import REPO


def _commands(group: click.Group, path: tuple[str, ...] = ()):
    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))


def test_every_command_and_group_ends_through_exit_status():
    found = dict(_commands(cli))
    assert {("rules", "check"), ("rules", "test"), ("run",), ("inspect",), ("setup",)} <= set(found)
    assert isinstance(cli, Group)
    wrong = [
        " ".join(path)
        for path, command in found.items()
        if not isinstance(command, Group if isinstance(command, click.Group) else Command)
    ]
    assert wrong == []


def test_no_module_of_the_command_line_exits_by_itself():
    calls = []
    for path in sorted((REPO / "dlq_pipeline" / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "exit"
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
            ):
                calls.append(f"{path.name}:{node.lineno}")
    assert calls == []


@pytest.mark.parametrize(("returned", "status"), [(None, 0), (0, 0), (2, 2), (3, 3)])
def test_a_command_ends_with_the_status_it_returns(capsys, returned, status):
    assert exit_status(lambda: returned) == status
    assert capsys.readouterr().err == ""


def test_a_missing_pyspark_is_one_line_and_exit_2(capsys):
    def command():
        raise ModuleNotFoundError("No module named 'pyspark.sql'", name="pyspark.sql")

    assert exit_status(command) == exitcodes.USAGE
    assert capsys.readouterr().err == NO_PYSPARK + "\n"


def test_any_other_missing_module_goes_on():
    def command():
        raise ModuleNotFoundError("No module named 'yaml'", name="yaml")

    with pytest.raises(ModuleNotFoundError, match="yaml"):
        exit_status(command)


def test_the_command_line_and_a_caller_without_standalone_mode_get_the_same_status(tmp_path):
    bad = tmp_path / "bad.rules"
    bad.write_text("REASON(MQRC_Q_FULL)\n")
    good = tmp_path / "good.rules"
    good.write_text("ACTION(DISCARD)\n")
    runner = CliRunner()
    cases = [(["rules", "check", str(good)], 0), (["rules", "check", str(bad)], 2), (["rules", "example", "nope"], 2)]
    for args, status in cases:
        assert runner.invoke(cli, args).exit_code == status, args
        assert cli.main(args, prog_name="dlq-pipeline", standalone_mode=False) == status, args
    unknown = runner.invoke(cli, ["rules", "example", "nope"])
    assert unknown.stdout == ""
    assert unknown.stderr.startswith("error: no shipped rules table 'nope' (shipped: ")


def test_a_per_stage_script_ends_with_the_status_of_its_command(tmp_path, capsys):
    conf = tmp_path / "c.toml"
    conf.write_text("[pipeline]\n")
    with pytest.raises(SystemExit) as exited:
        jobs.main("classify", ["--config", str(conf)])
    assert exited.value.code == exitcodes.USAGE
    assert capsys.readouterr().err == "error: no rules given (use --rules or pipeline.rules in the configuration)\n"
