"""The public API (`dlq_pipeline/__init__.py`, docs/api.md) and the one error hierarchy
(`dlq_pipeline/errors.py`): the names resolve to the code that defines them without importing
pyspark, every error the package raises on purpose carries its exit status and is importable
from `dlq_pipeline.errors` and the package, and docs/api.md's tree of errors says the same as
the code."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import subprocess
import sys

import pytest

import dlq_pipeline
import dlq_pipeline.errors
from dlq_pipeline import DlqPipelineError, UsageError, exitcodes
from dlq_pipeline.cli.common import exit_status
from dlq_pipeline.config.settings import RunSettings
from dlq_pipeline.rules.model import RulesError
from dlq_pipeline.rules.parser import load_rules, read_rules
from tests.support import REPO
from tests.unit.test_layering import REACHES_SPARK

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


def _doc_section(heading: str) -> str:
    lines = (REPO / "docs" / "api.md").read_text().splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end])


# An item of docs/api.md's tree of errors: "- `Name` (exit N; also `Base`, ...): when raised"
TREE_ITEM = re.compile(r"^(?P<indent> *)- `(?P<name>\w+)` \(exit (?P<exit>\d)(?:; also (?P<also>[^)]*))?\): ", re.M)


def _documented_tree(text: str) -> dict[str, tuple[int, str | None, list[str]]]:
    """Name -> (exit status, the class it is listed under or None, the other bases it names)
    of each item of a tree of errors in ``text``."""
    found: dict[str, tuple[int, str | None, list[str]]] = {}
    above: list[tuple[int, str]] = []  # (indent, name) of the items this one may be listed under
    for item in TREE_ITEM.finditer(text):
        indent = len(item["indent"])
        while above and above[-1][0] >= indent:
            above.pop()
        also = re.findall(r"`(\w+)`", item["also"] or "")
        found[item["name"]] = (int(item["exit"]), above[-1][1] if above else None, also)
        above.append((indent, item["name"]))
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
    assert set(dlq_pipeline.__all__) == set(lazy) | {"__version__"}
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


def test_every_error_class_is_importable_from_errors_and_from_the_package():
    errors = _error_classes()
    assert sorted(dlq_pipeline.errors.__all__) == sorted(errors)
    assert set(errors) <= set(dlq_pipeline.__all__)
    for name, cls in errors.items():
        assert getattr(dlq_pipeline.errors, name) is cls, name
        assert getattr(dlq_pipeline, name) is cls, name
    elsewhere = {name: cls.__module__ for name, cls in errors.items() if cls.__module__ != "dlq_pipeline.errors"}
    assert dlq_pipeline.errors.DEFINED_IN == elsewhere
    assert set(dlq_pipeline.errors.__all__) <= set(dir(dlq_pipeline.errors))
    with pytest.raises(AttributeError, match="no attribute 'NoSuchError'"):
        dlq_pipeline.errors.NoSuchError  # noqa: B018


def test_the_errors_of_pure_modules_import_no_pyspark_and_the_doc_names_the_others():
    spark = sorted(name for name, module in dlq_pipeline.errors.DEFINED_IN.items() if module in REACHES_SPARK)
    pure = sorted(set(dlq_pipeline.errors.__all__) - set(spark))
    code = (
        "import sys, dlq_pipeline.errors\n"
        "print(sorted(m for m in sys.modules if m.startswith('dlq_pipeline.')))\n"
        f"from dlq_pipeline.errors import {', '.join(pure)}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "['dlq_pipeline.errors', 'dlq_pipeline.exitcodes']",
        "[]",
    ]
    said = re.search(r"the ones of the Spark modules\s+\(([^)]*)\) import pyspark", _doc_section("## Errors"))
    assert said is not None
    assert sorted(re.findall(r"`(\w+)`", said[1])) == spark


def test_the_api_doc_draws_the_tree_of_errors_with_each_exit_status():
    documented = _documented_tree(_doc_section("## Errors"))
    errors = _error_classes()
    assert sorted(documented) == sorted(errors)
    for name, (status, parent, also) in documented.items():
        cls = errors[name]
        first, *others = cls.__bases__
        assert status == cls.exit_code, name
        assert parent == (first.__name__ if issubclass(first, DlqPipelineError) else None), name
        assert also == [base.__name__ for base in others], name


def test_the_tree_reader_reads_nesting_and_other_bases():
    text = (
        "- `A` (exit 1): a\n  - `B` (exit 2; also `C`, `ValueError`): b\n    - `E` (exit 2): e\n  - `D` (exit 1): d\n"
    )
    assert _documented_tree(text) == {
        "A": (1, None, []),
        "B": (2, "A", ["C", "ValueError"]),
        "E": (2, "B", []),
        "D": (1, "A", []),
    }


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
    def command():
        raise error

    assert exit_status(command) == status
    assert capsys.readouterr().err.splitlines() == lines


def test_a_rules_error_prints_its_diagnostics_as_rules_check_does(capsys, tmp_path):
    path = tmp_path / "no-action.rules"
    path.write_text(NO_ACTION)

    def command():
        load_rules(path)

    assert exit_status(command) == exitcodes.USAGE
    diagnostic = str(read_rules(path).errors[0])
    assert capsys.readouterr().err.splitlines() == [f"error: {path}: rules table is invalid (1 error)", diagnostic]
