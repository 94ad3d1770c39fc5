"""The rules-table language front end: docs/rules-reference.md, as dlq-pipeline accepts it.

Most tests compare the whole result (every Rule, every diagnostic with its line and column);
the golden files under tests/golden/rules/ are exercised through the CLI in test_rules_cli.py.
"""

from __future__ import annotations

import dataclasses
import signal
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq_pipeline.rules.lexer import split_entries, tokenize
from dlq_pipeline.rules.model import PATTERN_FIELDS, ControlData, Rule, RulesTable
from dlq_pipeline.rules.parser import ALL_KEYWORDS, parse_rules, read_rules, subsumes
from dlq_pipeline.rules.printer import format_table, format_value, wrap_entry
from tests.profiles import examples

CATCH_ALL = "ACTION(FWD) FWDQ(REALLY.DEAD.QUEUE)\n"


def found(text: str) -> list[tuple[int, int, str, str]]:
    """Every diagnostic as (line, col, severity, code), in report order."""
    return [(d.line, d.col, d.severity, d.code) for d in parse_rules(text).diagnostics]


def rules_of(text: str) -> list[Rule]:
    """The rules of a table that must be free of diagnostics (a catch-all is appended)."""
    table = parse_rules(text + "\n" + CATCH_ALL)
    assert [str(d) for d in table.diagnostics] == []
    return list(table.rules[:-1])


def one_rule(text: str) -> Rule:
    (rule,) = rules_of(text)
    return rule


def pattern(text: str) -> dict:
    return one_rule(text).patterns


@contextmanager
def time_limit(seconds: float):
    """Fail instead of hanging: the parser must finish on any input."""

    def expired(signum, frame):
        raise TimeoutError(f"parser still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ------------------------------------------------------------------------------ 1. Structure


IBM_DISTRIBUTED = """\
inputqm(' ') inputq(' ')
REASON(MQRC_Q_FULL) ACTION(RETRY) RETRY(5)
REASON(MQRC_PUT_INHIBITED) ACTION(RETRY) RETRY(5)
MSGTYPE(MQMT_REQUEST) REPLYQM(AAAA.*) +
ACTION(FWD) FWDQ(DEADQ) FWDQM(&REPLYQM)
DESTQM(bbbb.1) +
action(fwd) fwdq(&DESTQ) fwdqm(bbbb.2) header(no)
REPLYQM(CCCC.*) +
ACTION(FWD) FWDQ(ALARM) FWDQM(CCCC.SYSTEM)
PERSIST(MQPER_NOT_PERSISTENT) ACTION(DISCARD)
REPLYQM('?*') +
ACTION(FWD) FWDQ(DEADQ.MANUAL.INTERVENTION) FWDQM(&REPLYQM)
ACTION(FWD) FWDQ(DEADQ.MANUAL.INTERVENTION)
"""


def test_ibm_distributed_example_parses_to_the_documented_rules():
    table = parse_rules(IBM_DISTRIBUTED, "ibm.rules")
    assert table.diagnostics == []
    assert table.control == ControlData(inputq=None, inputqm=None, retryint=60, wait="YES", line=1)
    assert list(table.rules) == [
        Rule(2, 0, {"REASON": 2053}, "RETRY", retry=5),
        Rule(3, 1, {"REASON": 2051}, "RETRY", retry=5),
        Rule(4, 2, {"MSGTYPE": 1, "REPLYQM": "AAAA.*"}, "FWD", fwdq="DEADQ", fwdqm="&REPLYQM"),
        Rule(6, 3, {"DESTQM": "BBBB.1"}, "FWD", fwdq="&DESTQ", fwdqm="BBBB.2", header=False),
        Rule(8, 4, {"REPLYQM": "CCCC.*"}, "FWD", fwdq="ALARM", fwdqm="CCCC.SYSTEM"),
        Rule(10, 5, {"PERSIST": 0}, "DISCARD"),
        Rule(11, 6, {"REPLYQM": "?*"}, "FWD", fwdq="DEADQ.MANUAL.INTERVENTION", fwdqm="&REPLYQM"),
        Rule(13, 7, {}, "FWD", fwdq="DEADQ.MANUAL.INTERVENTION"),
    ]


def test_control_data_is_optional_and_defaults_apply():
    table = parse_rules(CATCH_ALL)
    assert table.control == ControlData()
    assert table.control.line is None


def test_control_data_values():
    table = parse_rules("INPUTQ(my.dlq) INPUTQM('QM1') RETRYINT(0) WAIT(NO)\n" + CATCH_ALL)
    assert table.control == ControlData("MY.DLQ", "QM1", 0, "NO", 1)
    table = parse_rules("WAIT(300) retryint(999999999)\n" + CATCH_ALL)
    assert table.control == ControlData(None, None, 999_999_999, 300, 1)


def test_control_keywords_outside_the_first_entry_are_errors():
    assert found(CATCH_ALL + "INPUTQ(X)\n") == [(2, 1, "error", "control_keyword_in_rule")]
    assert found("INPUTQ(X) ACTION(DISCARD)\n") == [(1, 1, "error", "control_keyword_in_rule")]
    assert found("DESTQ(A) ACTION(DISCARD) RETRYINT(5)\n" + CATCH_ALL) == [(1, 26, "error", "control_keyword_in_rule")]


def test_a_table_needs_at_least_one_rule():
    assert found("") == [(1, 1, "error", "no_rules")]
    assert found("* comment only\n\n") == [(1, 1, "error", "no_rules")]
    assert found("INPUTQM(QM1)\n") == [(1, 1, "error", "no_rules")]


def test_keywords_are_case_insensitive_and_in_any_order():
    a = one_rule("REASON(MQRC_Q_FULL) ACTION(RETRY) RETRY(5)")
    b = one_rule("retry(5) Action(RETRY) reason(mqrc_q_full)")
    assert dataclasses.replace(b, patterns=dict(sorted(b.patterns.items()))) == a


def test_keywords_have_no_abbreviations_and_unknown_ones_get_a_suggestion():
    table = parse_rules("REASON(MQRC_Q_FULL) ACT(RETRY) RETRIES(5) DESTQMGR(X)\n" + CATCH_ALL)
    assert [(d.col, d.code, d.message) for d in table.diagnostics] == [
        (1, "missing_action", "this rule has no ACTION: write ACTION(DISCARD|IGNORE|RETRY|FWD)"),
        (21, "unknown_keyword", "unknown keyword 'ACT' (did you mean ACTION?); keywords are written in full"),
        (32, "unknown_keyword", "unknown keyword 'RETRIES' (did you mean RETRY?); keywords are written in full"),
        (43, "unknown_keyword", "unknown keyword 'DESTQMGR' (did you mean DESTQM?); keywords are written in full"),
    ]


def test_a_keyword_appears_once_per_entry():
    table = parse_rules("DESTQ(A) ACTION(DISCARD) destq(B)\n" + CATCH_ALL)
    assert [(d.line, d.col, d.code, d.message) for d in table.diagnostics] == [
        (1, 26, "duplicate_keyword", "DESTQ is written twice in this entry (first at line 1, column 1)")
    ]


def test_items_are_separated_by_blanks_or_commas():
    expected = Rule(1, 0, {"DESTQ": "A", "USERID": "B"}, "DISCARD")
    assert one_rule("DESTQ(A),USERID(B),ACTION(DISCARD)") == expected
    assert one_rule(",DESTQ(A) ,, USERID(B)\t,ACTION(DISCARD),") == expected
    assert found("DESTQ(A)USERID(B) ACTION(DISCARD)\n" + CATCH_ALL) == [(1, 9, "error", "missing_separator")]


def test_blanks_between_keyword_parentheses_and_value():
    assert one_rule("ACTION (RETRY) RETRY ( 3 ) DESTQ(  A.B  )") == Rule(1, 0, {"DESTQ": "A.B"}, "RETRY", retry=3)


# ---------------------------------------------------------------- 2. Lines, 3. Items and separators


def test_comment_lines_anywhere():
    text = "* heading\n   * indented comment\nDESTQ(A) +\n* a comment inside the entry\n   ACTION(DISCARD)\n"
    assert rules_of(text) == [Rule(3, 0, {"DESTQ": "A"}, "DISCARD")]


def test_an_indented_star_inside_a_continuation_is_data():
    assert pattern("REPLYQM(AAAA.+\n        *) ACTION(IGNORE)") == {"REPLYQM": "AAAA.*"}


def test_blank_lines_are_ignored_also_inside_a_continuation():
    assert rules_of("\n\n  \t \nDESTQ(A) +\n\n   \nACTION(DISCARD)\n\n") == [Rule(4, 0, {"DESTQ": "A"}, "DISCARD")]


def test_plus_continues_from_the_first_non_blank_of_the_next_line():
    assert pattern("APPLNAME('ABC+\n   D') ACTION(IGNORE)") == {"APPLNAME": "ABCD"}


def test_minus_continues_from_column_one():
    assert pattern("APPLNAME('ABC-\n   D') ACTION(IGNORE)") == {"APPLNAME": "ABC   D"}


def test_blanks_before_the_continuation_character_are_kept_and_after_it_dropped():
    assert pattern("APPLNAME('AB  +   \n  C') ACTION(IGNORE)") == {"APPLNAME": "AB  C"}
    assert pattern("APPLNAME('AB -\t \nC') ACTION(IGNORE)") == {"APPLNAME": "AB C"}


def test_continuation_may_split_a_keyword_and_keeps_physical_positions():
    rule = one_rule("DEST+\n   QM(QM2) ACT-\nION(FWD) FWDQ(X)")
    assert rule == Rule(1, 0, {"DESTQM": "QM2"}, "FWD", fwdq="X")
    text = "DESTQ(A) +\n   ACTION(DISCARD) RETRYY(2) +\n      USERID('far too long a user')\n"
    assert found(text + CATCH_ALL) == [(2, 20, "error", "unknown_keyword"), (3, 14, "error", "value_too_long")]


def test_continuation_at_end_of_file_is_an_error():
    assert found("ACTION(DISCARD) +") == [(1, 17, "error", "continuation_at_eof")]
    assert found("ACTION(DISCARD) -\n* comment\n\n") == [(1, 17, "error", "continuation_at_eof")]


def test_lines_longer_than_72_significant_characters_warn():
    exactly_72 = "DESTQ(A) APPLNAME('" + "x" * 26 + "') " + "ACTION(DISCARD)"
    exactly_72 += " " * (72 - len(exactly_72))
    assert len(exactly_72) == 72
    assert found(exactly_72 + "\t  \n" + CATCH_ALL) == []
    long_line = exactly_72 + "X(1)"
    assert (1, 73, "warning", "line_too_long") in found(long_line + "\n" + CATCH_ALL)
    assert found("* " + "c" * 100 + "\n" + CATCH_ALL) == []


def test_tabs_are_blanks_between_items_but_kept_inside_quotes():
    assert one_rule("\tDESTQ\t(A)\tACTION(\tDISCARD\t)") == Rule(1, 0, {"DESTQ": "A"}, "DISCARD")
    assert pattern("APPLNAME('a\tb') ACTION(IGNORE)") == {"APPLNAME": "a\tb"}


def test_crlf_and_lf_read_the_same_and_a_bom_is_ignored():
    lf = parse_rules(IBM_DISTRIBUTED)
    assert parse_rules(IBM_DISTRIBUTED.replace("\n", "\r\n")) == lf
    assert parse_rules("\ufeff" + IBM_DISTRIBUTED) == lf


def test_no_inline_comments():
    assert found("ACTION(DISCARD) * keep it\n" + CATCH_ALL) == [(1, 17, "error", "unexpected_text")]


# --------------------------------------------------------------------------------------- 4. Values


def test_quotes_and_doubled_quotes():
    assert pattern("USERID('o''brien') ACTION(IGNORE)") == {"USERID": "o'brien"}
    assert pattern("APPLIDAT('''') ACTION(IGNORE)") == {"APPLIDAT": "'"}
    assert pattern('APPLNAME("abc") ACTION(IGNORE)') == {"APPLNAME": '"ABC"'}


def test_unquoted_values_fold_ascii_letters_only():
    assert pattern("DESTQM(bbbb.1) ACTION(IGNORE)") == {"DESTQM": "BBBB.1"}
    assert pattern("APPLNAME('amqsput') ACTION(IGNORE)") == {"APPLNAME": "amqsput"}
    assert pattern("APPLNAME(straße) ACTION(IGNORE)") == {"APPLNAME": "STRAßE"}


def test_every_value_needs_a_significant_character():
    for empty in ("FORMAT()", "FORMAT( )", "FORMAT('')"):
        assert found(f"{empty} ACTION(DISCARD)\n" + CATCH_ALL) == [
            (1, 8 if empty != "FORMAT( )" else 9, "error", "empty_value")
        ]
    assert found("FORMAT ACTION(DISCARD)\n" + CATCH_ALL) == [(1, 1, "error", "missing_value")]
    assert pattern("FORMAT(' ') ACTION(IGNORE)") == {"FORMAT": " "}


@pytest.mark.parametrize("keyword", [k for k, (_, kind, _) in PATTERN_FIELDS.items() if kind == "str"])
def test_string_length_limit_without_counting_stars(keyword):
    limit = PATTERN_FIELDS[keyword][2]
    assert pattern(f"{keyword}({'A' * limit}) ACTION(IGNORE)") == {keyword: "A" * limit}
    stars = "*".join("A" * limit)  # an indented '*' continuing an entry is data, not a comment
    assert pattern(f"{keyword}('{stars[:40]}+\n  {stars[40:]}') +\n ACTION(IGNORE)") == {keyword: stars}
    text = f"{keyword}({'A' * (limit + 1)}) +\n ACTION(DISCARD)\n"
    assert found(text + CATCH_ALL) == [(1, len(keyword) + 2, "error", "value_too_long")]


def test_ibm_length_example_counts_five():
    assert pattern("FORMAT('A*C*E*G*I') ACTION(IGNORE)") == {"FORMAT": "A*C*E*G*I"}


def test_numbers_range_and_forms():
    assert pattern("REASON(0) ACTION(IGNORE)") == {"REASON": 0}
    assert pattern("FEEDBACK(999999999) ACTION(IGNORE)") == {"FEEDBACK": 999_999_999}
    assert pattern("MSGTYPE(0008) ACTION(IGNORE)") == {"MSGTYPE": 8}
    assert pattern("MSGTYPE('8') ACTION(IGNORE)") == {"MSGTYPE": 8}
    assert pattern("PERSIST(*) ACTION(RETRY)") == {"PERSIST": "*"}
    for bad, code in [
        ("1000000000", "number_out_of_range"),
        ("-1", "number_out_of_range"),
        ("9" * 40, "number_out_of_range"),
        ("'2*'", "wildcard_not_allowed"),
        ("?", "wildcard_not_allowed"),
        ("2?", "wildcard_not_allowed"),
        ("12AB", "bad_number"),
        ("+5", "bad_number"),
        ("1.5", "bad_number"),
        ("' 1'", "bad_number"),
    ]:
        assert found(f"MSGTYPE({bad}) ACTION(DISCARD)\n" + CATCH_ALL) == [(1, 9, "error", code)], bad
    digits = "+\n".join(["9" * 40] * 126)  # 5040 digits: more than int() converts by default
    assert found(f"ACTION(DISCARD) MSGTYPE({digits})\n" + CATCH_ALL) == [(1, 25, "error", "number_out_of_range")]


def test_symbolic_names_resolve_case_insensitively_including_negative_constants():
    assert pattern("REASON(mqrc_q_full) FEEDBACK(MQFB_APPL_CANNOT_BE_STARTED) +\n ACTION(IGNORE)") == {
        "REASON": 2053,
        "FEEDBACK": 265,
    }
    assert pattern("REASON(MQFB_APPL_CANNOT_BE_STARTED) ACTION(IGNORE)") == {"REASON": 265}
    assert pattern("APPLTYPE(MQAT_UNKNOWN) PERSIST(MQPER_PERSISTENCE_AS_PARENT) +\n ACTION(IGNORE)") == {
        "APPLTYPE": -1,
        "PERSIST": -1,
    }
    assert pattern("MSGTYPE(MQMT_DATAGRAM) ACTION(IGNORE)") == {"MSGTYPE": 8}


def test_unknown_names_are_errors_that_suggest_and_wrong_families_warn():
    table = parse_rules("REASON(MQRC_Q_FUL) ACTION(DISCARD)\nMSGTYPE(MQPER_PERSISTENT) ACTION(IGNORE)\n" + CATCH_ALL)
    assert [(d.line, d.col, d.severity, d.code, d.message) for d in table.diagnostics] == [
        (1, 8, "error", "unknown_symbol", "unknown symbolic name MQRC_Q_FUL (did you mean MQRC_Q_FULL?)"),
        (
            2,
            9,
            "warning",
            "symbol_family_mismatch",
            "MSGTYPE normally takes MQMT_ names; MQPER_PERSISTENT (value 1) belongs to MQPER_",
        ),
    ]


def test_format_takes_the_literal_format_name():
    assert pattern("FORMAT(MQSTR) ACTION(IGNORE)") == {"FORMAT": "MQSTR"}
    (diagnostic,) = parse_rules("FORMAT(MQFMT_STRING) ACTION(DISCARD)\n" + CATCH_ALL).diagnostics
    assert (diagnostic.col, diagnostic.code) == (8, "value_too_long")
    assert diagnostic.message.endswith("FORMAT takes the format name itself: MQFMT_STRING is FORMAT(MQSTR)")


def test_unquoted_values_with_blanks_commas_or_quotes_are_errors():
    for text, col in [("DESTQ(MY Q)", 7), ("DESTQ(A,B)", 7), ("APPLNAME(O'BRIEN)", 10), ("USERID('bob'x)", 13)]:
        assert found(f"{text} ACTION(DISCARD)\n" + CATCH_ALL) == [(1, col, "error", "bad_value")], text


def test_unterminated_quote_and_unclosed_parenthesis():
    assert found("DESTQ('ABC) ACTION(DISCARD)\n" + CATCH_ALL) == [(1, 7, "error", "unterminated_quote")]
    assert found("DESTQ(ABC ACTION(DISCARD)\n" + CATCH_ALL) == [(1, 6, "error", "unclosed_paren")]
    assert found("DESTQ('ABC' ACTION(DISCARD)\n" + CATCH_ALL) == [(1, 6, "error", "unclosed_paren")]
    assert found("ACTION(DISCARD) DESTQ(\n" + CATCH_ALL) == [(1, 22, "error", "unclosed_paren")]


def test_stray_parentheses_and_quotes():
    assert found("ACTION(DISCARD) ) 'x'\n" + CATCH_ALL) == [
        (1, 17, "error", "unexpected_text"),
        (1, 19, "error", "unexpected_text"),
    ]


# ------------------------------------------------------------------------------ 7. Action keywords


def test_action_keywords_and_defaults():
    assert one_rule("ACTION(fwd) FWDQ(q) FWDQM(qm) HEADER(no) PUTAUT(ctx) RETRY(7)") == Rule(
        1, 0, {}, "FWD", retry=7, fwdq="Q", fwdqm="QM", header=False, putaut="CTX"
    )
    assert one_rule("ACTION(FWD) FWDQ(Q) FWDQM(' ')") == Rule(1, 0, {}, "FWD", fwdq="Q", fwdqm=" ")
    assert one_rule("ACTION(RETRY)") == Rule(1, 0, {}, "RETRY", retry=1, putaut="DEF")
    assert one_rule("ACTION('retry') RETRY(999999999)").retry == 999_999_999


def test_substitution_tokens_are_the_four_case_insensitive_ones():
    rule = one_rule("ACTION(FWD) FWDQ('&replyq') FWDQM(&ReplyQM)")
    assert (rule.fwdq, rule.fwdqm) == ("&REPLYQ", "&REPLYQM")
    rule = one_rule("ACTION(FWD) FWDQ(&destq) FWDQM('&DESTQM')")
    assert (rule.fwdq, rule.fwdqm) == ("&DESTQ", "&DESTQM")
    for text in ("FWDQ(&DESTQM)", "FWDQ(&REPLYQM)", "FWDQ(&QUEUE)", "FWDQ(X) FWDQM(&DESTQ)", "FWDQ(X) FWDQM(&)"):
        errors = found(f"ACTION(FWD) {text}\n" + CATCH_ALL)
        assert [e[3] for e in errors] == ["bad_substitution"], text


@pytest.mark.parametrize(
    "item", ["ACTION(*)", "ACTION(FW?)", "FWDQ(Q*)", "FWDQM(QM?)", "HEADER(*)", "PUTAUT(D*)", "RETRY(*)", "RETRY(1?)"]
)
def test_wildcards_are_invalid_in_action_keywords(item):
    text = (
        f"ACTION(FWD) FWDQ(X) {item}"
        if not item.startswith(("ACTION", "FWDQ("))
        else (f"{item} ACTION(FWD)" if item.startswith("FWDQ(") else f"{item} FWDQ(X)")
    )
    codes = [code for *_, code in found(text + "\n" + CATCH_ALL)]
    assert "wildcard_not_allowed" in codes and all(c in ("wildcard_not_allowed", "duplicate_keyword") for c in codes), (
        text,
        codes,
    )


def test_fwdq_blank_is_invalid():
    assert found("ACTION(FWD) FWDQ(' ')\n" + CATCH_ALL) == [(1, 18, "error", "blank_name")]
    assert found("ACTION(FWD) FWDQ('   ')\n" + CATCH_ALL) == [(1, 18, "error", "blank_name")]


def test_invalid_combinations():
    assert found("ACTION(FWD)\n" + CATCH_ALL) == [(1, 1, "error", "fwd_without_fwdq")]
    assert found("DESTQ(A) ACTION(RETRY) FWDQ(X) FWDQM(Y) HEADER(NO)\n" + CATCH_ALL) == [
        (1, 24, "error", "fwd_only_keyword"),
        (1, 32, "error", "fwd_only_keyword"),
        (1, 41, "error", "fwd_only_keyword"),
    ]
    assert found("DESTQ(A)\n" + CATCH_ALL) == [(1, 1, "error", "missing_action")]
    assert found("ACTION(FORWARD) FWDQ(X)\n" + CATCH_ALL) == [(1, 8, "error", "bad_choice")]
    assert found("ACTION(FWD) FWDQ(X) HEADER(MAYBE) PUTAUT(ME)\n" + CATCH_ALL) == [
        (1, 28, "error", "bad_choice"),
        (1, 42, "error", "bad_choice"),
    ]
    assert found("ACTION(RETRY) RETRY(0)\n" + CATCH_ALL) == [(1, 21, "error", "number_out_of_range")]


def test_retry_on_ignore_or_discard_has_no_effect():
    assert found(
        "DESTQ(A) ACTION(IGNORE) RETRY(3)\nDESTQ(B) ACTION(DISCARD) RETRY(1)\n"
        "DESTQ(C) ACTION(RETRY) RETRY(3)\n" + CATCH_ALL
    ) == [(1, 25, "warning", "retry_has_no_effect"), (2, 26, "warning", "retry_has_no_effect")]


def test_every_error_is_reported_at_once_in_file_order():
    text = (
        "INPUTQ(A*) WAIT(SOMETIMES)\nACTION(FWD)\nREASON(FOO) ACTION(DISCARD)\n"
        "DESTQ(A) DESTQ(B)\n" + CATCH_ALL + "INPUTQM(X)\n"
    )
    assert found(text) == [
        (1, 8, "error", "wildcard_not_allowed"),
        (1, 17, "error", "bad_choice"),
        (2, 1, "error", "fwd_without_fwdq"),
        (3, 8, "error", "unknown_symbol"),
        (4, 1, "error", "missing_action"),
        (4, 10, "error", "duplicate_keyword"),
        (6, 1, "error", "control_keyword_in_rule"),
    ]


def test_invalid_rules_are_left_out_and_the_table_is_not_ok():
    table = parse_rules("DESTQ(A) ACTION(DISCARD)\nDESTQ(B) ACTION(NONE)\n" + CATCH_ALL)
    assert not table.ok
    assert [r.line for r in table.rules] == [1, 3]


# ----------------------------------------------------------------------------- warnings


@pytest.mark.parametrize(
    "last, is_catch_all",
    [
        ("ACTION(FWD) FWDQ(REALLY.DEAD.QUEUE) HEADER(YES)", True),
        ("ACTION(FWD) FWDQ(REALLY.DEAD.QUEUE) FWDQM(QM2)", True),
        ("ACTION(FWD) FWDQ(REALLY.DEAD.QUEUE) FWDQM(' ')", True),
        ("DESTQ(*) ACTION(DISCARD)", True),
        ("ACTION(IGNORE)", False),
        ("ACTION(RETRY)", False),
        ("ACTION(FWD) FWDQ(&REPLYQ)", False),
        ("ACTION(FWD) FWDQ(X) FWDQM(&DESTQM)", False),
        ("REPLYQM(?*) ACTION(FWD) FWDQ(X)", False),
    ],
)
def test_no_catch_all_warning(last, is_catch_all):
    expected = [] if is_catch_all else [(2, 1, "warning", "no_catch_all")]
    assert found("REASON(MQRC_Q_FULL) ACTION(RETRY) RETRY(5)\n" + last + "\n") == expected


@pytest.mark.parametrize(
    "earlier, later, shadowed",
    [
        ("ACTION(IGNORE)", "DESTQ(A) ACTION(RETRY)", True),
        ("DESTQ(APP.*) ACTION(DISCARD)", "DESTQ(APP.IN) REASON(2053) ACTION(RETRY)", True),
        ("DESTQ(APP.*) ACTION(IGNORE)", "DESTQ(APP.*) ACTION(RETRY)", True),
        ("DESTQ(APP.*) ACTION(IGNORE)", "DESTQ(APP.I*) ACTION(RETRY)", False),  # conservative
        ("DESTQ(APP.*) ACTION(IGNORE)", "REASON(2053) ACTION(RETRY)", False),
        ("DESTQ(APP.*) ACTION(IGNORE)", "DESTQ(OTHER) ACTION(RETRY)", False),
        ("DESTQ('APP ') ACTION(IGNORE)", "DESTQ(APP) ACTION(RETRY)", True),
        ("REASON(2053) ACTION(DISCARD)", "REASON(MQRC_Q_FULL) DESTQ(X) ACTION(RETRY)", True),
        ("REASON(2053) ACTION(DISCARD)", "REASON(2051) ACTION(RETRY)", False),
        ("DESTQ(*) ACTION(IGNORE)", "REASON(2051) ACTION(RETRY)", True),
        ("ACTION(FWD) FWDQ(X)", "DESTQ(A) ACTION(RETRY)", False),  # FWD can fail
        ("ACTION(RETRY) RETRY(9)", "DESTQ(A) ACTION(DISCARD)", False),
        ("APPLNAME('amq*') ACTION(IGNORE)", "APPLNAME(AMQSPUT) ACTION(RETRY)", False),  # case
    ],
)
def test_shadowed_rules(earlier, later, shadowed):
    text = f"{earlier}\n{later}\n{CATCH_ALL}"
    diagnostics = [(d.line, d.code) for d in parse_rules(text).diagnostics if d.line == 2]
    assert diagnostics == ([(2, "shadowed_rule")] if shadowed else [])


def test_shadowed_rule_names_the_rule_that_wins():
    table = parse_rules("ACTION(IGNORE)\nDESTQ(A) ACTION(RETRY)\n")
    assert [str(d) for d in table.diagnostics] == [
        "<string>:2:1: warning: this rule can never be chosen: the rule at line 1 (ACTION(IGNORE))"
        " takes every message it matches [shadowed_rule]",
        "<string>:2:1: warning: the last rule is not a catch-all, so messages no rule takes stay on"
        " the DLQ; end the table with a rule such as ACTION(FWD) FWDQ(REALLY.DEAD.QUEUE)"
        " HEADER(YES) [no_catch_all]",
    ]


def test_subsumes_is_reflexive_and_general_rules_subsume_specific_ones():
    specific = Rule(1, 0, {"DESTQ": "APP.IN", "REASON": 2053}, "RETRY")
    assert subsumes(specific, specific)
    assert subsumes(Rule(1, 0, {}, "IGNORE"), specific)
    assert subsumes(Rule(1, 0, {"DESTQ": "APP.*", "USERID": "*"}, "IGNORE"), specific)
    assert not subsumes(specific, Rule(1, 0, {}, "IGNORE"))


# ----------------------------------------------------------------------------- files


def test_load_rules_reads_utf8_and_reports_non_text_with_the_byte_offset(tmp_path):
    good = tmp_path / "good.rules"
    good.write_bytes("\ufeffAPPLNAME('café') ACTION(IGNORE)\r\n".encode() + CATCH_ALL.encode())
    table = read_rules(good)
    assert table.path == str(good) and table.ok
    assert table.rules[0].patterns == {"APPLNAME": "café"}

    latin1 = tmp_path / "latin1.rules"
    latin1.write_bytes(b"ACTION(DISCARD)\nAPPLNAME('caf\xe9') ACTION(IGNORE)\n")
    assert [str(d) for d in read_rules(latin1).diagnostics] == [
        f"{latin1}:2:14: error: not UTF-8 or ASCII text: byte 0xE9 at byte offset 29 [not_text]"
    ]

    binary = tmp_path / "binary.rules"
    binary.write_bytes(b"\x00\x01\x02ACTION(DISCARD)\n")
    assert [str(d) for d in read_rules(binary).diagnostics] == [
        f"{binary}:1:1: error: not a text file: NUL byte at byte offset 0 [not_text]"
    ]


def test_parse_rules_rejects_nul_characters():
    assert found("ACTION(DISCARD)\nDESTQ(A\x00)\n") == [(2, 8, "error", "not_text")]


# ----------------------------------------------------------------------------- canonical text


def test_format_value_quotes_only_when_reading_back_needs_it():
    assert [format_value(v) for v in ["ABC.1", "A*?", "&DESTQ", "abc", " ", "O'B", "A B", "A-B"]] == [
        "ABC.1",
        "A*?",
        "&DESTQ",
        "'abc'",
        "' '",
        "'O''B'",
        "'A B'",
        "'A-B'",
    ]


def test_format_table_is_canonical_and_wraps_at_72():
    table = parse_rules(IBM_DISTRIBUTED)
    assert format_table(table) == (
        "INPUTQ(' ') INPUTQM(' ') RETRYINT(60) WAIT(YES)\n"
        "REASON(2053) ACTION(RETRY) RETRY(5)\n"
        "REASON(2051) ACTION(RETRY) RETRY(5)\n"
        "MSGTYPE(1) REPLYQM(AAAA.*) ACTION(FWD) FWDQ(DEADQ) FWDQM(&REPLYQM) +\n"
        "  HEADER(YES)\n"
        "DESTQM(BBBB.1) ACTION(FWD) FWDQ(&DESTQ) FWDQM(BBBB.2) HEADER(NO)\n"
        "REPLYQM(CCCC.*) ACTION(FWD) FWDQ(ALARM) FWDQM(CCCC.SYSTEM) HEADER(YES)\n"
        "PERSIST(0) ACTION(DISCARD)\n"
        "REPLYQM(?*) ACTION(FWD) FWDQ(DEADQ.MANUAL.INTERVENTION) +\n"
        "  FWDQM(&REPLYQM) HEADER(YES)\n"
        "ACTION(FWD) FWDQ(DEADQ.MANUAL.INTERVENTION) HEADER(YES)\n"
    )


def test_negative_values_are_written_by_name():
    table = parse_rules("APPLTYPE(MQAT_UNKNOWN) ACTION(IGNORE)\n" + CATCH_ALL)
    assert format_table(table).splitlines()[0] == "APPLTYPE(MQAT_UNKNOWN) ACTION(IGNORE)"


def test_wrap_entry_cuts_long_items_before_a_non_blank_character():
    value = "'" * 18 + " " * 30  # 48 characters, written as 36 quotes and 30 blanks
    lines = wrap_entry(["ACTION(IGNORE)", f"DESTQ({format_value(value)})"])
    assert lines == [  # '+' would drop the blanks, so the cut comes before them
        "ACTION(IGNORE) +",
        "  DESTQ('" + "'" * 35 + "+",
        "  '" + " " * 30 + "')",
    ]
    table = parse_rules("\n".join(lines) + "\n")
    assert table.rules[0].patterns == {"DESTQ": value}


# ----------------------------------------------------------------------------- lexer pieces


def test_split_entries_keeps_the_physical_position_of_every_character():
    (entry,), problems = split_entries("* c\nAB+\n   CD-\n  E\n")
    assert problems == []
    assert entry.text == "ABCD  E"
    assert entry.positions == ((2, 1), (2, 2), (3, 4), (3, 5), (4, 1), (4, 2), (4, 3))
    items, problems = tokenize(entry)
    assert [(i.keyword, i.keyword_at, i.value) for i in items] == [("ABCD", (2, 1), None), ("E", (4, 3), None)]


# ----------------------------------------------------------------------------- properties


def _without_lines(table: RulesTable):
    return ([dataclasses.replace(r, line=0) for r in table.rules], dataclasses.replace(table.control, line=None))


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=600))
def test_the_parser_never_crashes_or_hangs_on_any_text(text):
    with time_limit(5):
        table = parse_rules(text)
    assert all(d.line >= 1 and d.col >= 1 for d in table.diagnostics)
    assert table.ok == (not table.errors)


PIECES = (
    [k for k in ALL_KEYWORDS]
    + [k.lower() for k in ALL_KEYWORDS]
    + [
        "(",
        ")",
        "'",
        "''",
        " ",
        "  ",
        ",",
        "\t",
        "\n",
        "\r\n",
        " +\n",
        "-\n",
        "+\n  ",
        "*",
        "?",
        "*\n",
        "\n*",
        "&DESTQ",
        "&replyqm",
        "&X",
        "MQRC_Q_FULL",
        "mqmt_request",
        "MQAT_UNKNOWN",
        "MQFMT_STRING",
        "123",
        "0",
        "-1",
        "999999999",
        "1000000000",
        "abc",
        "A.B.*",
        "'a b'",
        "FWD",
        "RETRY",
        "DISCARD",
        "IGNORE",
        "YES",
        "no",
        "CTX",
        "ACTION(FWD)",
        "FWDQ(X)",
        "ACTION(DISCARD)",
        "REPLYQ(?*)",
        "' '",
        "x" * 80,
        "\ufeff",
        "é",
    ]
)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), max_size=60))
def test_token_soup_never_crashes(pieces):
    with time_limit(5):
        table = parse_rules("".join(pieces))
    assert table.ok == (not table.errors)


# Values by keyword, mostly valid, so that many generated tables are valid.
SOUP_VALUES = {
    "str": ["A.B", "app.*", "'amq sput'", "?*", "'?*'", "*", "'o''b'", "X", "' '", "'a\tb'", "A?C"],
    "int": ["2053", "MQRC_Q_FULL", "*", "0", "mqmt_request", "MQFB_NONE", "'8'", "007"],
    "ACTION": ["FWD", "discard", "IGNORE", "retry", "'fwd'"],
    "FWDQ": ["Q1", "&DESTQ", "'lower'", "&replyq"],
    "FWDQM": ["QM2", "' '", "&replyqm", "&DESTQM"],
    "HEADER": ["YES", "no"],
    "PUTAUT": ["DEF", "ctx"],
    "RETRY": ["1", "5", "999999999"],
    "INPUTQ": ["DLQ", "' '"],
    "INPUTQM": ["qm1", "' '"],
    "RETRYINT": ["0", "60"],
    "WAIT": ["YES", "no", "30"],
}
SOUP_SEPARATORS = [" ", ",", " , ", "\t", "  ", " +\n   ", ",+\n", "-\n ", " -\n", " +\n* comment\n  "]


@st.composite
def _soup_item(draw, keyword: str, values: list[str] | None = None):
    kind = PATTERN_FIELDS[keyword][1] if keyword in PATTERN_FIELDS else keyword
    written = draw(st.sampled_from([keyword, keyword.lower(), keyword.capitalize()]))
    inside = draw(st.sampled_from(["", " ", "  "]))
    value = draw(st.sampled_from(values or SOUP_VALUES[kind]))
    return f"{written}{draw(st.sampled_from(['', ' ']))}({inside}{value}{inside})"


@st.composite
def _soup_entry(draw, control: bool):
    action = None
    if control:
        keywords = draw(
            st.lists(st.sampled_from(["INPUTQ", "INPUTQM", "RETRYINT", "WAIT"]), min_size=1, max_size=4, unique=True)
        )
    else:
        keywords = draw(st.lists(st.sampled_from(list(PATTERN_FIELDS)), max_size=4, unique=True))
        action = draw(st.sampled_from(["FWD", "DISCARD", "IGNORE", "RETRY"]))
        keywords.append("ACTION")
        if action == "FWD":
            keywords += ["FWDQ"] + draw(st.lists(st.sampled_from(["FWDQM", "HEADER"]), unique=True))
        keywords += draw(st.lists(st.sampled_from(["PUTAUT", "RETRY"]), max_size=1))
    items = [
        draw(_soup_item(k, [action, action.lower(), f"'{action.lower()}'"] if k == "ACTION" else None))
        for k in draw(st.permutations(keywords))
    ]
    text = items[0]
    for item in items[1:]:
        text += draw(st.sampled_from(SOUP_SEPARATORS)) + item
    return text


@st.composite
def _soup_table(draw):
    entries = [draw(_soup_entry(control=True))] if draw(st.booleans()) else []
    entries += [draw(_soup_entry(control=False)) for _ in range(draw(st.integers(1, 5)))]
    between = st.sampled_from(["\n", "\n\n", "\n* comment\n", "\r\n", "\n   * indented\n"])
    return "".join(entry + draw(between) for entry in entries)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_soup_table())
def test_valid_tables_read_back_from_their_canonical_text(text):
    with time_limit(5):
        table = parse_rules(text)
    if table.ok:
        again = parse_rules(format_table(table))
        assert again.errors == []
        assert _without_lines(again) == _without_lines(table)


_VALUE_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\x00")


@st.composite
def _string_value(draw, max_length: int):
    value = draw(st.text(_VALUE_CHARS, min_size=1, max_size=max_length + 6))
    if len(value) - value.count("*") > max_length:
        value = value[:max_length]
    return value


@st.composite
def _name(draw):
    name = draw(st.text(_VALUE_CHARS.filter(lambda c: c not in "*?"), min_size=1, max_size=48))
    if not name.strip(" ") or name.startswith("&"):
        name = "Q" + name[:47]
    return name


@st.composite
def _rule(draw, index: int):
    patterns: dict = {}
    for keyword in draw(st.lists(st.sampled_from(list(PATTERN_FIELDS)), unique=True)):
        _, kind, max_length = PATTERN_FIELDS[keyword]
        if kind == "str":
            patterns[keyword] = draw(_string_value(max_length))
        else:
            negative = {"APPLTYPE": [-1], "PERSIST": [-1]}.get(keyword, [])
            patterns[keyword] = draw(
                st.one_of(st.just("*"), st.integers(0, 999_999_999), st.sampled_from(negative or [0]))
            )
    action = draw(st.sampled_from(["DISCARD", "IGNORE", "RETRY", "FWD"]))
    fwd = action == "FWD"
    return Rule(
        line=0,
        index=index,
        patterns=patterns,
        action=action,
        retry=draw(st.integers(1, 999_999_999)),
        fwdq=draw(st.one_of(_name(), st.sampled_from(["&DESTQ", "&REPLYQ"]))) if fwd else None,
        fwdqm=draw(st.one_of(st.none(), st.just(" "), _name(), st.sampled_from(["&DESTQM", "&REPLYQM"])))
        if fwd
        else None,
        header=draw(st.booleans()) if fwd else True,
        putaut=draw(st.sampled_from(["DEF", "CTX"])),
    )


@st.composite
def _table(draw):
    count = draw(st.integers(1, 6))
    rules = tuple(draw(_rule(i)) for i in range(count))
    control = draw(
        st.one_of(
            st.just(ControlData()),
            st.builds(
                ControlData,
                inputq=st.one_of(st.none(), _name()),
                inputqm=st.one_of(st.none(), _name()),
                retryint=st.integers(0, 999_999_999),
                wait=st.one_of(st.sampled_from(["YES", "NO"]), st.integers(0, 999_999_999)),
                line=st.just(1),
            ),
        )
    )
    return RulesTable("generated.rules", control, rules)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_table())
def test_canonical_text_reads_back_to_the_same_table(table):
    text = format_table(table)
    assert all(len(line) <= 72 for line in text.splitlines())
    again = parse_rules(text)
    assert again.errors == []
    assert "line_too_long" not in {d.code for d in again.warnings}
    assert _without_lines(again) == _without_lines(table)
    assert format_table(again) == text
