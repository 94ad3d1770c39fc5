"""`dlq-pipeline rules`: check a rules table and show how it was understood.

No Spark, no MQ: parsing a table is pure Python, so these commands start instantly.
"""

from __future__ import annotations

import json

import click

from dlq_pipeline import exitcodes
from dlq_pipeline.cli.common import FILE, Group, plural, summary_line
from dlq_pipeline.cli.rules_suggest import rules_suggest_cmd
from dlq_pipeline.cli.rules_test import rules_test_cmd
from dlq_pipeline.errors import UsageError
from dlq_pipeline.rules.model import RulesTable
from dlq_pipeline.rules.parser import read_rules
from dlq_pipeline.rules.printer import diagnostic_as_dict, format_table, table_as_dict


def passes(table: RulesTable, *, strict: bool) -> bool:
    return table.ok and not (strict and table.warnings)


@click.group("rules", cls=Group)
def rules_group() -> None:
    """Check, show and try runmqdlq rules tables.

    \b
    The rules-table language is IBM's (runmqdlq, CSQUDLQH, STRMQMDLQ); an existing
    table works unchanged. See docs/rules-reference.md for every rule of the language.

    \b
    Examples:
      dlq-pipeline rules example starter > my.rules
      dlq-pipeline rules check my.rules
      dlq-pipeline rules check --strict --json my.rules | jq .errors
      dlq-pipeline rules show my.rules
      dlq-pipeline rules test my.rules --input dlq.dmp --attempts 2
      dlq-pipeline rules suggest --input dlq.dmp --explain > draft.rules
    """


@rules_group.command("check")
@click.argument("file", type=FILE)
@click.option(
    "--strict", is_flag=True, help="Fail on warnings too (lines over 72 characters, shadowed rules, no catch-all...)."
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print {file, valid, strict, rules, errors, warnings} as JSON on stdout."
)
def check_cmd(file: str, strict: bool, as_json: bool) -> int:
    """Validate FILE as a whole and list every problem at once.

    Each problem is printed on stderr as FILE:LINE:COL: error|warning: message [code];
    LINE and COL point at the physical line and column where the offending item starts
    (continuation lines included). The codes are stable, so scripts can test for them.

    \b
    Exit status: 0 valid (warnings allowed unless --strict), 2 invalid, or
    warnings under --strict (as for every command given a bad rules table).

    \b
    Examples:
      dlq-pipeline rules check my.rules
      my.rules:12:1: error: this rule has no ACTION: write ACTION(...) [missing_action]
      my.rules:15:21: error: unknown keyword 'RETRIES' (did you mean RETRY?)... [unknown_keyword]
      my.rules: invalid (2 errors, 0 warnings)
    \b
      dlq-pipeline rules check --strict my.rules && deploy my.rules
    """
    table = read_rules(file)
    ok = passes(table, strict=strict)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "file": table.path,
                    "valid": ok,
                    "strict": strict,
                    "rules": len(table.rules),
                    "errors": [diagnostic_as_dict(d) for d in table.errors],
                    "warnings": [diagnostic_as_dict(d) for d in table.warnings],
                },
                indent=2,
            )
        )
    else:
        for diagnostic in table.diagnostics:
            click.echo(str(diagnostic), err=True)
        click.echo(summary_line(table, strict=strict), err=True)
    return exitcodes.OK if ok else exitcodes.USAGE


@rules_group.command("show")
@click.argument("file", type=FILE)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the normalized table as JSON: control data, then per rule its line,"
    " pattern, action, retry, fwdq, fwdqm, header and putaut.",
)
def show_cmd(file: str, as_json: bool) -> int:
    """Print FILE as dlq-pipeline understood it.

    The text form is the table in canonical rules-table syntax, which reads back to the
    same rules: keywords in upper case and in a fixed order, unquoted values folded,
    symbolic names replaced by their numbers, defaults written out for FWD (HEADER) and
    control data, continuation with '+' to stay within 72 characters. A comment line
    before each rule gives its number and the line it came from.

    An invalid table is not shown: its problems are printed on stderr (exit 2).
    Warnings are printed on stderr and do not stop the output.

    \b
    Examples:
      dlq-pipeline rules example ibm-distributed-example > ibm.rules
      dlq-pipeline rules show ibm.rules
      dlq-pipeline rules show --json my.rules | jq '.rules[] | {line, action}'
    """
    table = read_rules(file)
    for diagnostic in table.diagnostics:
        click.echo(str(diagnostic), err=True)
    if not table.ok:
        click.echo(summary_line(table), err=True)
        return exitcodes.USAGE
    if as_json:
        click.echo(json.dumps(table_as_dict(table), indent=2))
    else:
        click.echo(f"* {table.path}: {plural(len(table.rules), 'rule')}")
        click.echo(format_table(table, annotate=True), nl=False)
    return exitcodes.OK


@rules_group.command("example")
@click.argument("name", required=False)
def example_cmd(name: str | None) -> None:
    """Print the shipped rules table NAME, to copy and edit; without NAME, list them.

    The tables ship inside the package (dlq_pipeline/data/rules/): `starter` is the
    production-style table `demo` uses, the `ibm-*-example` ones are IBM's documented
    examples. Exit 2 for a NAME that is not shipped.

    \b
    Examples:
      dlq-pipeline rules example
      dlq-pipeline rules example starter > my.rules
    """
    from dlq_pipeline.rules.shipped import shipped_names, shipped_path

    if name is None:
        for known in shipped_names():
            click.echo(f"{known}\t{shipped_path(known)}")
        return
    try:
        path = shipped_path(name)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    click.echo(path.read_text(encoding="utf-8"), nl=False)


rules_group.add_command(rules_test_cmd)  # `rules test` and `rules suggest` live in their own modules
rules_group.add_command(rules_suggest_cmd)
