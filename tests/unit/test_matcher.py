"""The reference matcher against the rules of docs/rules-semantics.md (§5 matching, §8 choosing a
rule) and the actions of docs/rules-reference.md, clause by clause."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlq_pipeline.rules.matcher import decide, glob_match, resolve_name
from dlq_pipeline.rules.model import Decision, Rule, RulesTable
from tests.profiles import examples


def reference_glob(pattern: str, value: str) -> bool:
    """Exponential but literal reading of §5: the field padded with blanks, ``?`` never on
    the trailing blanks, ``*`` any run, and only blanks left when the pattern is used up."""
    significant = len(value.rstrip(" "))
    field = value + " " * (len(pattern) + 1)

    def match(i: int, j: int) -> bool:
        if i == len(pattern):
            return field[j:].strip(" ") == ""
        if pattern[i] == "*":
            return any(match(i + 1, k) for k in range(j, len(field) + 1))
        if j >= len(field):
            return False
        if pattern[i] == "?":
            return j < significant and match(i + 1, j + 1)
        return field[j] == pattern[i] and match(i + 1, j + 1)

    return match(0, 0)


# --- glob_match: examples from the rules -------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("MY.Q", "MY.Q" + " " * 44, True),  # the field is blank padded
        ("MY.Q   ", "MY.Q", True),  # trailing blanks in the pattern do not matter either
        ("MY.Q", "MY.QQ", False),
        ("MY.Q", "my.q", False),  # case-sensitive
        ("my.q", "my.q", True),
        ("MY.Q", "MY.Q" + "\x00" * 44, False),  # APAR IT31856: NUL is not a blank
        ("MY.Q*", "MY.Q" + "\x00" * 44, True),
        ("MY.Q?", "MY.Q\x00" + " " * 43, True),  # ? takes a NUL
        ("?*", "X" + " " * 47, True),  # REPLYQ(?*): not blank
        ("?*", " " * 48, False),
        ("?*", "", False),
        ("?*", " X", True),  # a leading blank is not a trailing blank
        ("AAAA.*", "AAAA.QM1", True),  # prefix match
        ("AAAA.*", "AAAA.", True),
        ("AAAA.*", "AAAA", False),
        ("AAAA.*", "AAAB.QM1", False),
        (" ", " " * 8, True),  # FORMAT(' ') matches a blank format
        (" ", "", True),
        (" ", "MQSTR   ", False),
        ("MQSTR", "MQSTR   ", True),
        ("MQSTR", " MQSTR  ", False),  # leading blanks matter
        (" MQSTR", " MQSTR  ", True),
        ("A B", "A B     ", True),  # embedded blanks matter
        ("A B", "AB      ", False),
        ("A?", "A       ", False),  # ? never takes a trailing blank
        ("A?", "AB      ", True),
        ("A??", "AB      ", False),
        ("A *", "A       ", True),  # a literal blank may take padding
        ("A *", "AB", False),
        ("A*B*C", "AXXBYYC ", True),
        ("A*B*C", "AXXBYYCD", False),
        ("*A*A*A*A*A*A*A*A*A*A*A*A*B", "A" * 48, False),  # no exponential blow-up
        ("*", "", True),
        ("**", "anything", True),
        ("", "", True),
        ("", "  ", True),
    ],
)
def test_glob_examples(pattern, value, expected):
    assert glob_match(pattern, value) is expected
    if len(pattern) + len(value) <= 20:  # the reference is exponential
        assert reference_glob(pattern, value) is expected


PATTERN_CHARS = st.sampled_from(["A", "B", "a", " ", "\x00", "?", "*", "é"])
VALUE_CHARS = st.sampled_from(["A", "B", "a", " ", "\x00", "é", "?", "*"])


@settings(max_examples=examples(400), deadline=None)
@given(st.text(PATTERN_CHARS, max_size=7), st.text(VALUE_CHARS, max_size=8))
def test_glob_agrees_with_exponential_reference(pattern, value):
    assert glob_match(pattern, value) == reference_glob(pattern, value)


@settings(max_examples=examples(200), deadline=None)
@given(st.text(PATTERN_CHARS, max_size=7), st.text(VALUE_CHARS, max_size=8), st.integers(0, 3), st.integers(0, 3))
def test_trailing_blanks_never_matter(pattern, value, extra_p, extra_v):
    assert glob_match(pattern + " " * extra_p, value + " " * extra_v) == glob_match(pattern, value)


@settings(max_examples=examples(200), deadline=None)
@given(st.text(VALUE_CHARS.filter(lambda c: c not in "?*"), max_size=8))
def test_a_literal_pattern_matches_itself_only_up_to_trailing_blanks(value):
    assert glob_match(value, value)
    assert glob_match(value, value + "   ")
    assert not glob_match(value + "Z", value)


# --- decide --------------------------------------------------------------------------


def view(**changes) -> dict:
    """A message with a usable MQDLH; field values as decoded (fixed length, blank padded)."""
    base = {
        "has_dlh": True,
        "dlh_problem": None,
        "truncated": False,
        "dlh_reason": 2053,
        "dlh_dest_q": "APP.IN".ljust(48),
        "dlh_dest_qmgr": "QM1".ljust(48),
        "dlh_format": "MQSTR   ",
        "reply_to_q": "APP.REPLY".ljust(48),
        "reply_to_qmgr": "QM2".ljust(48),
        "user_id": "app".ljust(12),
        "appl_identity_data": " " * 32,
        "put_appl_name": "amqsput".ljust(28),
        "put_appl_type": 6,
        "msg_type": 8,
        "persistence": 1,
        "feedback": 0,
    }
    base.update(changes)
    return base


def rule(index: int, action: str = "DISCARD", line: int | None = None, **kw) -> Rule:
    patterns = kw.pop("patterns", {})
    return Rule(line=line if line is not None else 10 + index, index=index, patterns=patterns, action=action, **kw)


def table(*rules: Rule) -> RulesTable:
    return RulesTable(path="t.rules", rules=tuple(rules))


def test_no_usable_dlh_is_ignored_before_anything_else():
    t = table(rule(0, "DISCARD"))
    expected = Decision("IGNORE", ignore_reason="no_dlh")
    assert decide(t, view(has_dlh=False, dlh_problem="bad_strucid")) == expected
    assert decide(t, view(has_dlh=False, truncated=True)) == expected
    assert decide(t, {"has_dlh": None}) == expected


def test_truncated_message_is_never_acted_on():
    t = table(rule(0, "DISCARD"))
    assert decide(t, view(truncated=True)) == Decision("IGNORE", ignore_reason="truncated")


def test_nothing_matches_is_no_match():
    t = table(rule(0, "DISCARD", patterns={"REASON": 2035}), rule(1, "DISCARD", patterns={"DESTQ": "OTHER.*"}))
    assert decide(t, view()) == Decision("IGNORE", ignore_reason="no_match")
    assert decide(table(), view()) == Decision("IGNORE", ignore_reason="no_match")


def test_cumulative_retry_chain_from_the_spec():
    a = rule(0, "RETRY", retry=3)
    b = rule(1, "FWD", retry=1, fwdq="DEAD.Q", fwdqm="QMX")
    t = table(a, b)
    got = [decide(t, view(), attempts=n) for n in range(6)]
    a_decision = Decision("RETRY", 10, 0, "APP.IN", "QM1", None, "DEF")
    b_decision = Decision("FWD", 11, 1, "DEAD.Q", "QMX", True, "DEF")
    exhausted = Decision("IGNORE", ignore_reason="retries_exhausted")
    assert got == [a_decision, a_decision, a_decision, b_decision, exhausted, exhausted]


def test_rules_that_do_not_match_add_nothing_to_the_total():
    t = table(
        rule(0, "RETRY", retry=5, patterns={"REASON": 2035}),
        rule(1, "RETRY", retry=2),
        rule(2, "DISCARD", retry=1, patterns={"PERSIST": 0}),
        rule(3, "DISCARD", retry=1),
    )
    assert [decide(t, view(), n).rule_index for n in range(4)] == [1, 1, 3, None]
    assert decide(t, view(), 3).ignore_reason == "retries_exhausted"


def test_ignore_is_chosen_at_once_whatever_the_count():
    t = table(rule(0, "RETRY", retry=2), rule(1, "IGNORE", retry=7), rule(2, "DISCARD"))
    assert decide(t, view(), 0).action == "RETRY"
    for attempts in (2, 3, 8, 10**9):
        assert decide(t, view(), attempts) == Decision("IGNORE", 11, 1)
    assert decide(table(rule(0, "IGNORE", retry=1)), view(), 50) == Decision("IGNORE", 10, 0)


def test_every_specified_pattern_must_match():
    r = rule(0, "DISCARD", patterns={"REASON": 2053, "DESTQ": "APP.*", "USERID": "app", "PERSIST": 1})
    assert decide(table(r), view()).action == "DISCARD"
    for change in [
        {"dlh_reason": 2054},
        {"dlh_dest_q": "APX.IN"},
        {"user_id": "APP"},
        {"persistence": 0},
    ]:
        assert decide(table(r), view(**change)).ignore_reason == "no_match", change


def test_star_alone_is_not_tested():
    r = rule(0, "DISCARD", patterns={"REASON": "*", "DESTQ": "*", "APPLIDAT": "*"})
    assert decide(table(r), view(dlh_dest_q=None, appl_identity_data=None)).action == "DISCARD"


@pytest.mark.parametrize(
    ("keyword", "column", "value", "other"),
    [
        ("APPLTYPE", "put_appl_type", -1, 6),
        ("FEEDBACK", "feedback", 265, 0),
        ("MSGTYPE", "msg_type", 1, 8),
        ("PERSIST", "persistence", 0, 1),
        ("REASON", "dlh_reason", 999_999_999, 2053),
    ],
)
def test_integers_match_by_exact_equality(keyword, column, value, other):
    t = table(rule(0, "DISCARD", patterns={keyword: value}))
    assert decide(t, view(**{column: value})).action == "DISCARD"
    assert decide(t, view(**{column: other})).ignore_reason == "no_match"


@pytest.mark.parametrize(
    ("keyword", "column"),
    [
        ("APPLIDAT", "appl_identity_data"),
        ("APPLNAME", "put_appl_name"),
        ("DESTQ", "dlh_dest_q"),
        ("DESTQM", "dlh_dest_qmgr"),
        ("FORMAT", "dlh_format"),
        ("REPLYQ", "reply_to_q"),
        ("REPLYQM", "reply_to_qmgr"),
        ("USERID", "user_id"),
    ],
)
def test_each_string_keyword_tests_its_own_column(keyword, column):
    t = table(rule(0, "DISCARD", patterns={keyword: "X?Z*"}))
    assert decide(t, view(**{column: "XyZ" + " " * 5})).action == "DISCARD"
    assert decide(t, view(**{column: "XZ" + " " * 6})).ignore_reason == "no_match"


def test_apar_it31856_nul_padded_dest_q():
    padded = "MY.Q" + "\x00" * 44
    t = table(rule(0, "DISCARD", patterns={"DESTQ": "MY.Q"}), rule(1, "IGNORE", patterns={"DESTQ": "MY.Q*"}))
    assert decide(t, view(dlh_dest_q=padded)) == Decision("IGNORE", 11, 1)
    assert decide(t, view(dlh_dest_q="MY.Q".ljust(48))) == Decision("DISCARD", 10, 0)


def test_replyq_not_blank_idiom():
    t = table(rule(0, "FWD", patterns={"REPLYQ": "?*"}, fwdq="&REPLYQ", fwdqm="&REPLYQM"))
    assert decide(t, view()) == Decision("FWD", 10, 0, "APP.REPLY", "QM2", True, "DEF")
    assert decide(t, view(reply_to_q=" " * 48)).ignore_reason == "no_match"
    assert decide(t, view(reply_to_q="")).ignore_reason == "no_match"


def test_format_blank_and_leading_blanks():
    t = table(rule(0, "DISCARD", patterns={"FORMAT": " "}))
    assert decide(t, view(dlh_format=" " * 8)).action == "DISCARD"
    assert decide(t, view(dlh_format="MQSTR   ")).ignore_reason == "no_match"
    lead = table(rule(0, "DISCARD", patterns={"APPLNAME": "amqsput"}))
    assert decide(lead, view(put_appl_name=" amqsput".ljust(28))).ignore_reason == "no_match"


def test_retry_targets_the_original_destination_from_the_dlh():
    t = table(rule(0, "RETRY", putaut="CTX", retry=5))
    d = decide(t, view(dlh_dest_q="APP.IN\x00\x00 junk".ljust(48), dlh_dest_qmgr=" " * 48), attempts=4)
    assert d == Decision("RETRY", 10, 0, "APP.IN", "", None, "CTX")


def test_fwd_substitutions_and_defaults():
    cases = [
        (("&DESTQ", "&DESTQM"), ("APP.IN", "QM1")),
        (("&REPLYQ", "&REPLYQM"), ("APP.REPLY", "QM2")),
        (("&destq", None), ("APP.IN", "")),  # no FWDQM: local name resolution
        (("DEADQ", " "), ("DEADQ", "")),
        (("DEADQ", "&REPLYQM"), ("DEADQ", "QM2")),
    ]
    for (fwdq, fwdqm), (target_q, target_qmgr) in cases:
        t = table(rule(0, "FWD", fwdq=fwdq, fwdqm=fwdqm, header=False))
        assert decide(t, view()) == Decision("FWD", 10, 0, target_q, target_qmgr, False, "DEF"), (fwdq, fwdqm)


def test_blank_resolved_target_is_empty_and_still_chosen():
    t = table(rule(0, "FWD", fwdq="&REPLYQ", fwdqm="&REPLYQM"))
    assert decide(t, view(reply_to_q=" " * 48, reply_to_qmgr="\x00" * 48)) == Decision(
        "FWD", 10, 0, "", "", True, "DEF"
    )


def test_discard_and_ignore_carry_no_target_header_or_putaut():
    t = table(rule(0, "DISCARD", putaut="CTX", header=False))
    assert decide(t, view()) == Decision("DISCARD", 10, 0)
    t = table(rule(0, "IGNORE", putaut="CTX"))
    assert decide(t, view()) == Decision("IGNORE", 10, 0)


def test_resolve_name():
    assert resolve_name("Q1   ") == "Q1"
    assert resolve_name("Q1\x00 X") == "Q1"
    assert resolve_name("Q1 \x00") == "Q1"
    assert resolve_name(" Q1 ") == " Q1"  # leading blanks stay: MQ will refuse the name
    assert resolve_name("\x00Q1") == ""
    assert resolve_name(None) == ""


def test_ibm_published_example_table():
    """IBM's published distributed example (docs/rules-reference.md), as the parser resolves it
    (constants as numbers, values folded)."""
    ibm = table(
        rule(0, "RETRY", line=2, patterns={"REASON": 2053}, retry=5),
        rule(1, "RETRY", line=3, patterns={"REASON": 2051}, retry=5),
        rule(2, "FWD", line=4, patterns={"MSGTYPE": 1, "REPLYQM": "AAAA.*"}, fwdq="DEADQ", fwdqm="&REPLYQM"),
        rule(3, "FWD", line=6, patterns={"DESTQM": "BBBB.1"}, fwdq="&DESTQ", fwdqm="BBBB.2", header=False),
        rule(4, "FWD", line=8, patterns={"REPLYQM": "CCCC.*"}, fwdq="ALARM", fwdqm="CCCC.SYSTEM"),
        rule(5, "DISCARD", line=9, patterns={"PERSIST": 0}),
        rule(6, "FWD", line=10, patterns={"REPLYQM": "?*"}, fwdq="DEADQ.MANUAL.INTERVENTION", fwdqm="&REPLYQM"),
        rule(7, "FWD", line=11, fwdq="DEADQ.MANUAL.INTERVENTION"),
    )
    q_full = view(dlh_reason=2053, reply_to_qmgr="AAAA.QM".ljust(48), msg_type=1)
    assert [decide(ibm, q_full, n).rule_line for n in (0, 4, 5, 6)] == [2, 2, 4, 10]
    assert decide(ibm, q_full, 7) == Decision("FWD", 11, 7, "DEADQ.MANUAL.INTERVENTION", "", True, "DEF")
    assert decide(ibm, q_full, 8).ignore_reason == "retries_exhausted"
    bbbb = view(dlh_reason=2035, dlh_dest_qmgr="BBBB.1".ljust(48))
    assert decide(ibm, bbbb) == Decision("FWD", 6, 3, "APP.IN", "BBBB.2", False, "DEF")
    lower = view(dlh_reason=2035, dlh_dest_qmgr="bbbb.1".ljust(48), reply_to_qmgr=" " * 48, persistence=0)
    assert decide(ibm, lower) == Decision("DISCARD", 9, 5)
    blank_reply = view(dlh_reason=2035, reply_to_qmgr=" " * 48)
    assert decide(ibm, blank_reply) == Decision("FWD", 11, 7, "DEADQ.MANUAL.INTERVENTION", "", True, "DEF")
