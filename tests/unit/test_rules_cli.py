"""`dlq-pipeline rules check` and `rules show`, against the golden files in tests/golden/rules/.

errors/*.rules and warnings/*.rules each have a .expected file holding exactly what
`rules check` prints on stderr; valid/*.show.json hold the whole `rules show --json` output
of the shipped example tables (dlq_pipeline/data/rules/) and of valid/syntax-tour.rules.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from dlq_pipeline.cli import cli
from dlq_pipeline.cli import rules as rules_cli
from dlq_pipeline.rules.parser import parse_rules
from tests.support import REPO

GOLDEN = REPO / "tests" / "golden" / "rules"
SHIPPED_RULES = REPO / "dlq_pipeline" / "data" / "rules"


def run(*args: str):
    return CliRunner().invoke(cli, ["rules", *args])


def golden_tables(kind: str) -> list[Path]:
    return sorted((GOLDEN / kind).glob("*.rules"))


@pytest.mark.parametrize("table", golden_tables("errors"), ids=lambda p: p.name)
def test_broken_tables_list_every_error_exactly(table, monkeypatch):
    monkeypatch.chdir(table.parent)
    result = run("check", table.name)
    assert result.exit_code == 2  # a bad rules table is bad usage, as in every command
    assert result.stdout == ""
    assert result.stderr == table.with_suffix(".expected").read_text()


def test_the_broken_tables_cover_every_error_code():
    codes = set()
    for expected in (GOLDEN / "errors").glob("*.expected"):
        codes |= {
            line.rsplit("[", 1)[1].rstrip("]") for line in expected.read_text().splitlines() if line.endswith("]")
        }
    assert codes >= {
        "not_text",
        "continuation_at_eof",
        "unterminated_quote",
        "unclosed_paren",
        "unexpected_text",
        "missing_separator",
        "bad_value",
        "unknown_keyword",
        "missing_value",
        "duplicate_keyword",
        "control_keyword_in_rule",
        "empty_value",
        "value_too_long",
        "bad_number",
        "number_out_of_range",
        "unknown_symbol",
        "wildcard_not_allowed",
        "bad_choice",
        "bad_substitution",
        "blank_name",
        "missing_action",
        "fwd_without_fwdq",
        "fwd_only_keyword",
        "no_rules",
        "line_too_long",
    }


def test_warnings_pass_unless_strict(monkeypatch):
    monkeypatch.chdir(GOLDEN / "warnings")
    expected = Path("warnings.expected").read_text()
    result = run("check", "warnings.rules")
    assert (result.exit_code, result.stderr) == (0, expected)
    strict = run("check", "--strict", "warnings.rules")
    assert strict.exit_code == 2
    assert strict.stderr == expected.replace(
        "warnings.rules: valid, 5 rules (0 errors, 5 warnings)",
        "warnings.rules: rejected under --strict (0 errors, 5 warnings)",
    )
    codes = [line.rsplit("[", 1)[1].rstrip("]") for line in expected.splitlines()[:-1]]
    assert codes == ["symbol_family_mismatch", "retry_has_no_effect", "shadowed_rule", "line_too_long", "no_catch_all"]


def test_check_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("t.rules").write_text("DESTQ(A) ACTION(IGNORE) RETRY(2)\nDESTQ(B)\n")
    result = run("check", "--json", "t.rules")
    assert result.exit_code == 2  # a bad rules table is bad usage, as in every command
    assert result.stderr == ""
    assert json.loads(result.stdout) == {
        "file": "t.rules",
        "valid": False,
        "strict": False,
        "rules": 1,
        "errors": [
            {
                "line": 2,
                "col": 1,
                "severity": "error",
                "code": "missing_action",
                "message": "this rule has no ACTION: write ACTION(DISCARD|IGNORE|RETRY|FWD)",
            }
        ],
        "warnings": [
            {
                "line": 1,
                "col": 25,
                "severity": "warning",
                "code": "retry_has_no_effect",
                "message": "RETRY has no effect with ACTION(IGNORE), which cannot fail",
            }
        ],
    }
    Path("t.rules").write_text("DESTQ(A) ACTION(IGNORE) RETRY(2)\nACTION(DISCARD)\n")
    assert json.loads(run("check", "--json", "t.rules").stdout)["valid"] is True
    strict = run("check", "--json", "--strict", "t.rules")
    assert strict.exit_code == 2
    assert json.loads(strict.stdout)["valid"] is False


@pytest.mark.parametrize("table", sorted(SHIPPED_RULES.glob("*.rules")), ids=lambda p: p.name)
def test_shipped_tables_pass_strict_check(table):
    result = run("check", "--strict", str(table))
    assert result.exit_code == 0, result.stderr
    assert (
        result.stderr == f"{table}: valid, {len(parse_rules(table.read_text()).rules)} rules (0 errors, 0 warnings)\n"
    )


def test_every_shipped_table_has_a_golden_show_output():
    shipped = {p.stem for p in SHIPPED_RULES.glob("*.rules")}
    assert shipped == {"ibm-distributed-example", "ibm-zos-example", "starter"}
    assert shipped <= {p.name.removesuffix(".show.json") for p in (GOLDEN / "valid").glob("*.show.json")}


def test_rules_example_lists_the_shipped_tables_and_prints_one_byte_for_byte():
    listed = run("example")
    assert (listed.exit_code, listed.stderr) == (0, "")
    assert listed.stdout == "".join(
        f"{name}\t{SHIPPED_RULES / (name + '.rules')}\n"
        for name in ("ibm-distributed-example", "ibm-zos-example", "starter")
    )
    starter = run("example", "starter")
    assert (starter.exit_code, starter.stdout) == (0, (SHIPPED_RULES / "starter.rules").read_text())


def test_rules_example_of_an_unknown_name_exits_2_naming_the_shipped_ones():
    result = run("example", "nope")
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "error: no shipped rules table 'nope' (shipped: ibm-distributed-example, ibm-zos-example, starter)\n"
    )


SHOWN = [(SHIPPED_RULES, name) for name in ("ibm-distributed-example", "ibm-zos-example", "starter")]
SHOWN.append((GOLDEN / "valid", "syntax-tour"))


@pytest.mark.parametrize("folder, name", SHOWN, ids=[name for _, name in SHOWN])
def test_show_json_matches_the_golden_normalized_table(folder, name, monkeypatch):
    monkeypatch.chdir(folder)
    result = run("show", "--json", f"{name}.rules")
    assert (result.exit_code, result.stderr) == (0, "")
    assert json.loads(result.stdout) == json.loads((GOLDEN / "valid" / f"{name}.show.json").read_text())


@pytest.mark.parametrize("folder, name", SHOWN, ids=[name for _, name in SHOWN])
def test_show_text_reads_back_to_the_same_rules(folder, name, monkeypatch):
    monkeypatch.chdir(folder)
    shown = run("show", f"{name}.rules").stdout
    original = parse_rules(Path(f"{name}.rules").read_text(), f"{name}.rules")
    again = parse_rules(shown, f"{name}.rules")
    assert again.diagnostics == []
    assert [(r.index, r.patterns, r.action, r.retry, r.fwdq, r.fwdqm, r.header, r.putaut) for r in again.rules] == [
        (r.index, r.patterns, r.action, r.retry, r.fwdq, r.fwdqm, r.header, r.putaut) for r in original.rules
    ]


def test_syntax_tour_reads_the_same_with_crlf_line_ends(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = (GOLDEN / "valid" / "syntax-tour.rules").read_bytes()
    Path("syntax-tour.rules").write_bytes(source.replace(b"\n", b"\r\n"))
    result = run("show", "--json", "syntax-tour.rules")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == json.loads((GOLDEN / "valid" / "syntax-tour.show.json").read_text())


def test_show_text(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("t.rules").write_text(
        "* my table\ninputqm(qm1)\n\nreason(mqrc_q_full) action(retry) +\n"
        "  retry(3)\nACTION(FWD) FWDQ(dead.q) header(no)\n"
    )
    result = run("show", "t.rules")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (
        "* t.rules: 2 rules\n"
        "* control data (line 2)\n"
        "INPUTQ(' ') INPUTQM(QM1) RETRYINT(60) WAIT(YES)\n"
        "* rule 1 (line 4)\n"
        "REASON(2053) ACTION(RETRY) RETRY(3)\n"
        "* rule 2 (line 6)\n"
        "ACTION(FWD) FWDQ(DEAD.Q) HEADER(NO)\n"
    )


def test_show_prints_warnings_on_stderr_and_the_table_on_stdout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("t.rules").write_text("ACTION(IGNORE)\n")
    result = run("show", "--json", "t.rules")
    assert result.exit_code == 0
    assert result.stderr.endswith("[no_catch_all]\n")
    assert json.loads(result.stdout)["rules"] == [
        {
            "index": 0,
            "line": 1,
            "pattern": {},
            "action": "IGNORE",
            "retry": 1,
            "fwdq": None,
            "fwdqm": None,
            "header": True,
            "putaut": "DEF",
        }
    ]


def test_show_refuses_an_invalid_table(monkeypatch):
    monkeypatch.chdir(GOLDEN / "errors")
    result = run("show", "actions.rules")
    assert result.exit_code == 2  # a bad rules table is bad usage, as in every command
    assert result.stdout == ""
    assert result.stderr == Path("actions.expected").read_text()


def test_a_missing_file_is_a_usage_error(tmp_path):
    result = run("check", str(tmp_path / "nope.rules"))
    assert result.exit_code == 2
    assert "does not exist" in result.stderr


@pytest.mark.parametrize("args", [["--help"], ["check", "--help"], ["show", "--help"]])
def test_help_teaches_with_examples(args):
    result = run(*args)
    assert result.exit_code == 0
    assert "Examples:" in result.stdout and "dlq-pipeline rules " in result.stdout


def test_rules_test_is_attached():
    import dlq_pipeline.cli.rules_test as module

    assert rules_cli.rules_group.commands["test"] is module.rules_test_cmd
