"""The public API (`dlq_pipeline/__init__.py`, docs/api.md) and the one error hierarchy
(`dlq_pipeline/errors.py`): the names resolve to the code that defines them without importing
pyspark, every error the package raises on purpose carries its exit status, and docs/api.md's
table of errors says the same as the code."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import subprocess
import sys

import pytest

import dlq_pipeline
from dlq_pipeline import DlqPipelineError, UsageError
from dlq_pipeline.cli import command_errors
from dlq_pipeline.config.settings import RunSettings
from dlq_pipeline.rules.model import RulesError
from dlq_pipeline.rules.parser import load_rules, read_rules
from dlq_pipeline.runtime import exitcodes

from ..conftest import REPO

NO_ACTION = "* a rule without an action\nREASON(MQRC_Q_FULL)\n"


def _package_modules():
    for info in pkgutil.walk_packages(dlq_pipeline.__path__, "dlq_pipeline."):
        yield importlib.import_module(info.name)


def _error_classes() -> dict[str, type]:
    """Every public exception class the package defines, by name."""
    found = {}
    for module in _package_modules():
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[name] = value
    return found


def test_importing_the_package_and_its_pure_names_imports_no_pyspark():
    code = (
        "import sys, dlq_pipeline\n"
        "dlq_pipeline.load_config, dlq_pipeline.load_rules, dlq_pipeline.RulesError, dlq_pipeline.RunSettings\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_public_name_is_the_object_its_module_defines():
    lazy = {name: module for name, module in vars(dlq_pipeline)["_PUBLIC"].items()}
    assert set(dlq_pipeline.__all__) == set(lazy) | {"DlqPipelineError", "UsageError", "__version__"}
    for name, module in lazy.items():
        assert getattr(dlq_pipeline, name) is getattr(importlib.import_module(module), name), name
    assert set(dlq_pipeline.__all__) <= set(dir(dlq_pipeline))
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        dlq_pipeline.no_such_name  # noqa: B018


def test_every_error_the_package_defines_carries_an_exit_status():
    errors = _error_classes()
    assert {"ConfigError", "RulesError", "TargetError", "WarehouseLocked", "InputNotFound"} <= set(errors)
    outside = sorted(name for name, cls in errors.items() if not issubclass(cls, DlqPipelineError))
    assert outside == []
    codes = {cls.exit_code for cls in errors.values()}
    assert codes == {exitcodes.FAILURE, exitcodes.USAGE}


def test_the_api_doc_lists_every_error_with_its_exit_status():
    text = (REPO / "docs" / "api.md").read_text()
    rows = re.findall(r"^\| ((?:`\w+`(?:, )?)+) \| (\d) \|", text, re.MULTILINE)
    documented = {name: int(code) for names, code in rows for name in re.findall(r"`(\w+)`", names)}
    errors = _error_classes()
    assert set(documented) == set(errors)
    assert {name: errors[name].exit_code for name in documented} == documented


def test_load_rules_raises_with_every_diagnostic_and_read_rules_returns_them(tmp_path):
    path = tmp_path / "no-action.rules"
    path.write_text(NO_ACTION)
    table = read_rules(path)
    assert not table.ok and [d.code for d in table.errors] == ["missing_action"]
    with pytest.raises(RulesError) as raised:
        load_rules(path)
    assert raised.value.exit_code == exitcodes.USAGE and raised.value.table.diagnostics == table.diagnostics
    assert str(raised.value).splitlines() == [f"{path}: rules table is invalid (1 error)", str(table.errors[0])]
    good = tmp_path / "good.rules"
    good.write_text("ACTION(DISCARD)\n")
    assert load_rules(good).ok


def test_run_pipeline_refuses_a_table_with_errors_before_it_touches_anything(tmp_path):
    from dlq_pipeline.pipeline import run_pipeline

    path = tmp_path / "no-action.rules"
    path.write_text(NO_ACTION)
    with pytest.raises(RulesError):
        run_pipeline(None, RunSettings(), read_rules(path), inputs=[], target="dry-run")  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize(
    ("error", "status", "lines"),
    [
        (UsageError("bad --set"), 2, ["error: bad --set"]),
        (
            DlqPipelineError("the queue manager went away\nreason 2009"),
            1,
            ["error: the queue manager went away", "error: reason 2009"],
        ),
    ],
)
def test_a_command_ends_on_an_error_with_its_lines_and_status(capsys, error, status, lines):
    with pytest.raises(SystemExit) as exited, command_errors():
        raise error
    assert exited.value.code == status
    assert capsys.readouterr().err.splitlines() == lines


def test_a_rules_error_prints_its_diagnostics_as_rules_check_does(capsys, tmp_path):
    path = tmp_path / "no-action.rules"
    path.write_text(NO_ACTION)
    with pytest.raises(SystemExit) as exited, command_errors():
        load_rules(path)
    assert exited.value.code == exitcodes.USAGE
    diagnostic = str(read_rules(path).errors[0])
    assert capsys.readouterr().err.splitlines() == [f"error: {path}: rules table is invalid (1 error)", diagnostic]
