"""The rules-table parser and validator (docs/rules-reference.md); `rules.printer` is its
inverse, the canonical text and JSON forms that ``rules show`` prints.

``parse_rules`` never raises for table content: every problem becomes a ``Diagnostic`` with
the physical line and column where the offending item starts and a stable code, and all of
them are reported at once. Only rules without errors are put in ``RulesTable.rules``; a
table with any error must not be used (``RulesTable.ok``).
"""

from __future__ import annotations

import difflib
import re
import string
from pathlib import Path
from typing import Literal, Protocol, cast

from dlq_pipeline.mq import constants
from dlq_pipeline.rules.lexer import Entry, Item, Position, split_entries, tokenize
from dlq_pipeline.rules.matcher import glob_match
from dlq_pipeline.rules.model import (
    ACTION_KEYWORDS,
    ACTIONS,
    CONTROL_KEYWORDS,
    PATTERN_FIELDS,
    SUBSTITUTIONS,
    WILDCARD_ALL,
    ControlData,
    Diagnostic,
    Rule,
    RulesError,
    RulesTable,
)

ALL_KEYWORDS = tuple(PATTERN_FIELDS) + ACTION_KEYWORDS + CONTROL_KEYWORDS
RULE_KEYWORDS = tuple(PATTERN_FIELDS) + ACTION_KEYWORDS
FWD_ONLY_KEYWORDS = ("FWDQ", "FWDQM", "HEADER")
MAX_NUMBER = 999_999_999
NAME_LENGTH = 48  # MQ_Q_NAME_LENGTH and MQ_Q_MGR_NAME_LENGTH

# Symbolic names each numeric pattern keyword takes (docs/rules-reference.md, "4. Values"). The MQDLH Reason
# holds an MQRC_ or an MQFB_ value, so REASON and FEEDBACK take both families.
SYMBOL_FAMILIES: dict[str, tuple[str, ...]] = {
    "REASON": ("MQRC", "MQFB"),
    "FEEDBACK": ("MQFB", "MQRC"),
    "MSGTYPE": ("MQMT",),
    "PERSIST": ("MQPER",),
    "APPLTYPE": ("MQAT",),
}
QUEUE_SUBSTITUTIONS = {"FWDQ": ("&DESTQ", "&REPLYQ"), "FWDQM": ("&DESTQM", "&REPLYQM")}
CHOICES = {"ACTION": ACTIONS, "HEADER": ("YES", "NO"), "PUTAUT": ("DEF", "CTX")}
CATCH_ALL_EXAMPLE = "ACTION(FWD) FWDQ(REALLY.DEAD.QUEUE) HEADER(YES)"

_DIGITS = re.compile(r"[0-9]+")
_NEGATIVE = re.compile(r"-[0-9]+")
_SYMBOL = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_ASCII_UPPER = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)


def fold(text: str) -> str:
    """Upper-case ASCII letters only: IBM folds in the table's code page, and Python's
    str.upper() would change lengths ('ß' -> 'SS')."""
    return text.translate(_ASCII_UPPER)


class _Report:
    """Collects diagnostics for one file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.diagnostics: list[Diagnostic] = []

    def add(self, at: Position, severity: Literal["error", "warning"], code: str, message: str) -> None:
        self.diagnostics.append(Diagnostic(self.path, at[0], at[1], severity, code, message))

    def error(self, at: Position, code: str, message: str) -> None:
        self.add(at, "error", code, message)

    def warning(self, at: Position, code: str, message: str) -> None:
        self.add(at, "warning", code, message)

    def error_count(self) -> int:
        return sum(d.severity == "error" for d in self.diagnostics)

    def in_order(self) -> list[Diagnostic]:
        return sorted(self.diagnostics, key=lambda d: (d.line, d.col))


# ----------------------------------------------------------------------------- entry points


def load_rules(path: str | Path) -> RulesTable:
    """A valid rules table from a file, or `RulesError` listing every diagnostic (the
    library's entry point: a table with errors decides nothing). Warnings stay on the table."""
    table = read_rules(path)
    if not table.ok:
        raise RulesError(table)
    return table


def read_rules(path: str | Path) -> RulesTable:
    """Read a rules table file, errors and all (``rules check`` shows them). A file that is
    not UTF-8/ASCII text (or holds NUL bytes) gives a single ``not_text`` error naming the
    byte offset. OSError is the caller's."""
    name = str(path)
    data = Path(path).read_bytes()
    problem = _not_text(data)
    if problem is not None:
        offset, message = problem
        line, col = _byte_position(data, offset)
        return RulesTable(name, diagnostics=[Diagnostic(name, line, col, "error", "not_text", message)])
    return parse_rules(data.decode("utf-8"), name)


def parse_rules(text: str, path: str = "<string>") -> RulesTable:
    """Parse and validate a whole table (see the module docstring)."""
    report = _Report(path)
    text = text.removeprefix("\ufeff")
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        col = nul - (text.rfind("\n", 0, nul) + 1) + 1
        report.error((line, col), "not_text", f"NUL character at offset {nul}: a rules table is text")
        return RulesTable(path, diagnostics=report.in_order())

    entries, problems = split_entries(text)
    for problem in problems:
        report.add(problem.position, problem.severity, problem.code, problem.message)

    control = ControlData()
    rules: list[Rule] = []
    rule_starts: dict[int, Position] = {}
    last_rule_valid = False
    rule_entries = 0
    for number, entry in enumerate(entries):
        items, lexical = tokenize(entry)
        errors_before = report.error_count()
        for problem in lexical:
            report.add(problem.position, problem.severity, problem.code, problem.message)
        if not items:
            continue
        if number == 0 and _is_control_entry(items):
            parsed_control = _control(entry, items, report)
            if report.error_count() == errors_before:
                control = parsed_control
            continue
        rule_entries += 1
        rule = _rule(entry, items, len(rules), report, lexically_sound=not lexical)
        last_rule_valid = rule is not None and report.error_count() == errors_before
        if rule is not None and last_rule_valid:
            rules.append(rule)
            rule_starts[rule.index] = entry.position(0)

    if rule_entries == 0:
        report.error((1, 1), "no_rules", "the table has no rules: it needs at least one")
    _warn_shadowed(rules, rule_starts, report)
    if last_rule_valid and not _is_catch_all(rules[-1]):
        report.warning(
            rule_starts[rules[-1].index],
            "no_catch_all",
            "the last rule is not a catch-all, so messages no rule takes stay on the DLQ;"
            f" end the table with a rule such as {CATCH_ALL_EXAMPLE}",
        )
    return RulesTable(path, control, tuple(rules), report.in_order())


def _not_text(data: bytes) -> tuple[int, str] | None:
    """(byte offset, message) of the first thing that makes ``data`` not a text file."""
    problems = []
    nul = data.find(b"\x00")
    if nul >= 0:
        problems.append((nul, f"not a text file: NUL byte at byte offset {nul}"))
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(
            (exc.start, f"not UTF-8 or ASCII text: byte 0x{data[exc.start]:02X} at byte offset {exc.start}")
        )
    return min(problems) if problems else None


def _byte_position(data: bytes, offset: int) -> Position:
    line_start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", errors="replace")) + 1
    return data.count(b"\n", 0, offset) + 1, column


# ----------------------------------------------------------------------------- entries


def _is_control_entry(items: list[Item]) -> bool:
    """The first entry is control data when every keyword it names is a control keyword."""
    known = [fold(item.keyword) for item in items if fold(item.keyword) in ALL_KEYWORDS]
    return bool(known) and all(keyword in CONTROL_KEYWORDS for keyword in known)


class _Valued(Protocol):
    """An `Item` that has a value, as `_keywords` returns them (the lexer sets ``value_at``
    whenever it sets ``value``)."""

    @property
    def keyword(self) -> str: ...
    @property
    def keyword_at(self) -> Position: ...
    @property
    def value(self) -> str: ...
    @property
    def quoted(self) -> bool: ...
    @property
    def value_at(self) -> Position: ...


def _keywords(items: list[Item], allowed: tuple[str, ...], report: _Report, misplaced: str) -> dict[str, _Valued]:
    """The usable items of an entry by keyword; unknown, duplicated, misplaced keywords and
    keywords without a value are reported here."""
    seen: dict[str, Item] = {}
    for item in items:
        keyword = fold(item.keyword)
        if keyword not in ALL_KEYWORDS:
            report.error(item.keyword_at, "unknown_keyword", _unknown_keyword_message(item.keyword, allowed))
            continue
        if keyword in seen:
            line, col = seen[keyword].keyword_at
            report.error(
                item.keyword_at,
                "duplicate_keyword",
                f"{keyword} is written twice in this entry (first at line {line}, column {col})",
            )
            continue
        seen[keyword] = item
        if keyword not in allowed:
            report.error(item.keyword_at, "control_keyword_in_rule", misplaced.format(keyword))
        elif item.value is None:
            report.error(item.keyword_at, "missing_value", f"{keyword} needs a value in parentheses: {keyword}(value)")
    return {
        k: cast(_Valued, item)
        for k, item in seen.items()
        if k in allowed and item.value is not None and not item.broken
    }


def _unknown_keyword_message(written: str, allowed: tuple[str, ...]) -> str:
    """Suggest the nearest keyword valid in this entry (so RETRIES gives RETRY in a rule,
    not RETRYINT), else the nearest of all."""
    guess = difflib.get_close_matches(fold(written), allowed, n=1, cutoff=0.6) or difflib.get_close_matches(
        fold(written), ALL_KEYWORDS, n=1, cutoff=0.6
    )
    hint = f" (did you mean {guess[0]}?)" if guess else ""
    return f"unknown keyword {written!r}{hint}; keywords are written in full"


def _control(entry: Entry, items: list[Item], report: _Report) -> ControlData:
    present = _keywords(items, CONTROL_KEYWORDS, report, "{} belongs in a rule, not in the control data")
    values = {keyword: _control_value(keyword, item, report) for keyword, item in present.items()}
    default = ControlData()
    retryint, wait = values.get("RETRYINT"), values.get("WAIT")
    return ControlData(  # INPUTQ and INPUTQM are names or None, RETRYINT a number (`_control_value`)
        inputq=cast("str | None", values.get("INPUTQ")),
        inputqm=cast("str | None", values.get("INPUTQM")),
        retryint=default.retryint if retryint is None else cast(int, retryint),
        wait=default.wait if wait is None else wait,
        line=entry.position(0)[0],
    )


def _rule(entry: Entry, items: list[Item], index: int, report: _Report, lexically_sound: bool = True) -> Rule | None:
    """A Rule, or None when the entry cannot make one (its errors are reported).

    ``missing_action`` is not reported for an entry with lexical errors: an unclosed quote
    or parenthesis may have swallowed the ACTION, and the error already points there."""
    written = {fold(item.keyword): item for item in reversed(items)}
    only_control = all(k in CONTROL_KEYWORDS for k in written if k in ALL_KEYWORDS)
    misplaced = (
        "{} is control data: it may appear only in the first entry, on its own"
        if only_control
        else "{} is control data: it may not appear in a rule"
    )
    present = _keywords(items, RULE_KEYWORDS, report, misplaced)
    values: dict[str, str | int | None] = {}
    for keyword, item in present.items():
        values[keyword] = _rule_value(keyword, item, report)

    if "ACTION" not in written:
        if lexically_sound and not (only_control and any(k in CONTROL_KEYWORDS for k in written)):
            report.error(
                entry.position(0), "missing_action", "this rule has no ACTION: write ACTION(DISCARD|IGNORE|RETRY|FWD)"
            )
        return None
    action = cast("str | None", values.get("ACTION"))  # one of ACTIONS (`_choice`)
    if action is None:
        return None
    if action == "FWD" and "FWDQ" not in written:
        report.error(
            written["ACTION"].keyword_at,
            "fwd_without_fwdq",
            "ACTION(FWD) needs FWDQ(queue) to say where to forward the message",
        )
    if action != "FWD":
        for keyword in FWD_ONLY_KEYWORDS:
            if keyword in written:
                report.error(
                    written[keyword].keyword_at,
                    "fwd_only_keyword",
                    f"{keyword} is valid only with ACTION(FWD); this rule's action is {action}",
                )
    if action in ("IGNORE", "DISCARD") and "RETRY" in present:
        report.warning(
            present["RETRY"].keyword_at,
            "retry_has_no_effect",
            f"RETRY has no effect with ACTION({action}), which cannot fail",
        )
    if any(v is None for v in values.values()):
        return None
    # no value is None now; each keyword's value has the type its `_rule_value` branch gives
    return Rule(
        line=entry.position(0)[0],
        index=index,
        patterns={k: cast("str | int", v) for k, v in values.items() if k in PATTERN_FIELDS},
        action=action,
        retry=cast(int, values.get("RETRY", 1)),
        fwdq=cast("str | None", values.get("FWDQ")),
        fwdqm=cast("str | None", values.get("FWDQM")),
        header=values.get("HEADER", "YES") == "YES",
        putaut=cast(str, values.get("PUTAUT", "DEF")),
    )


# ----------------------------------------------------------------------------- values


def _control_value(keyword: str, item: _Valued, report: _Report) -> str | int | None:
    if not _has_value(keyword, item, report):
        return None
    if keyword in ("INPUTQ", "INPUTQM"):
        return _queue_name(keyword, item, report)
    if keyword == "RETRYINT":
        return _count(keyword, item, 0, report)
    wait = fold(item.value)
    if wait in ("YES", "NO"):
        return wait
    if _DIGITS.fullmatch(wait) or _NEGATIVE.fullmatch(wait) or _has_wildcard(wait):
        return _count(keyword, item, 0, report)
    report.error(item.value_at, "bad_choice", f"WAIT takes YES, NO or a number of seconds, not {item.value!r}")
    return None


def _rule_value(keyword: str, item: _Valued, report: _Report) -> str | int | None:
    if not _has_value(keyword, item, report):
        return None
    if keyword in PATTERN_FIELDS:
        _, kind, max_length = PATTERN_FIELDS[keyword]
        if kind == "int":
            return _pattern_number(keyword, item, report)
        return _pattern_string(keyword, item, cast(int, max_length), report)  # every "str" keyword has one
    if keyword in CHOICES:
        return _choice(keyword, item, report)
    if keyword == "RETRY":
        return _count(keyword, item, 1, report)
    return _queue_name(keyword, item, report)


def _has_value(keyword: str, item: _Valued, report: _Report) -> bool:
    if item.value == "":
        hint = "; * alone means any value" if keyword in PATTERN_FIELDS else ""
        report.error(
            item.value_at,
            "empty_value",
            f"{keyword} has an empty value: a value needs at least one significant character (' ' is one blank){hint}",
        )
        return False
    return True


def _written(item: _Valued) -> str:
    """The value as the table means it: unquoted values fold to upper case."""
    return item.value if item.quoted else fold(item.value)


def _has_wildcard(text: str) -> bool:
    return "*" in text or "?" in text


def _pattern_string(keyword: str, item: _Valued, max_length: int, report: _Report) -> str | None:
    value = _written(item)
    if value == WILDCARD_ALL:
        return value
    length = len(value) - value.count("*")
    if length > max_length:
        hint = ""
        found = constants.lookup(value) if _SYMBOL.fullmatch(value) else None
        if keyword == "FORMAT" and found is not None and found[0] == "MQFMT":
            hint = f"; FORMAT takes the format name itself: {value} is FORMAT({str(found[1]).rstrip()})"
        report.error(
            item.value_at,
            "value_too_long",
            f"{keyword} value is {length} characters long (not counting '*'); the field holds {max_length}{hint}",
        )
        return None
    return value


def _pattern_number(keyword: str, item: _Valued, report: _Report) -> int | str | None:
    text = _written(item)
    if text == WILDCARD_ALL:
        return text
    if _has_wildcard(text):
        report.error(
            item.value_at,
            "wildcard_not_allowed",
            f"{keyword} takes a number, a symbolic name or * alone; wildcards cannot"
            f" be part of a number ({item.value!r})",
        )
        return None
    if _DIGITS.fullmatch(text) or _NEGATIVE.fullmatch(text):
        return _in_range(keyword, item, text, 0, report)
    if not _SYMBOL.fullmatch(text):
        report.error(
            item.value_at, "bad_number", f"{keyword} takes a number, a symbolic name or * alone, not {item.value!r}"
        )
        return None
    families = SYMBOL_FAMILIES[keyword]
    found = constants.lookup(text)
    if found is None:
        suggestions = constants.suggest(text, families, limit=1)
        hint = f" (did you mean {suggestions[0]}?)" if suggestions else ""
        report.error(item.value_at, "unknown_symbol", f"unknown symbolic name {text}{hint}")
        return None
    family, value = found
    if not isinstance(value, int):
        report.error(
            item.value_at, "bad_number", f"{keyword} takes a number; {text} is not a numeric constant ({value!r})"
        )
        return None
    if family not in families:
        expected = " or ".join(f"{f}_" for f in families)
        report.warning(
            item.value_at,
            "symbol_family_mismatch",
            f"{keyword} normally takes {expected} names; {text} (value {value}) belongs to {family}_",
        )
    return value


def _in_range(keyword: str, item: _Valued, text: str, low: int, report: _Report) -> int | None:
    """``text`` is digits, or ``-`` and digits (always out of range: no negative literals)."""
    negative = text.startswith("-")
    digits = text.lstrip("-").lstrip("0") or "0"
    if not negative and len(digits) <= 9 and int(digits) >= low:
        return int(digits)
    hint = (
        " (negative values only through their names, such as MQAT_UNKNOWN)"
        if negative and keyword in PATTERN_FIELDS
        else ""
    )
    report.error(
        item.value_at, "number_out_of_range", f"{keyword}({item.value}) is out of range: {low} to 999 999 999{hint}"
    )
    return None


def _count(keyword: str, item: _Valued, low: int, report: _Report) -> int | None:
    text = fold(item.value)
    if _has_wildcard(text):
        report.error(
            item.value_at, "wildcard_not_allowed", f"wildcards are not allowed in {keyword}: it takes a whole number"
        )
        return None
    if _DIGITS.fullmatch(text) or _NEGATIVE.fullmatch(text):
        return _in_range(keyword, item, text, low, report)
    report.error(
        item.value_at, "bad_number", f"{keyword} takes a whole number from {low} to 999 999 999, not {item.value!r}"
    )
    return None


def _choice(keyword: str, item: _Valued, report: _Report) -> str | None:
    """[choice] Enumerated values (ACTION, HEADER, PUTAUT) are case-insensitive, quoted or not."""
    choices = CHOICES[keyword]
    value = fold(item.value)
    if value in choices:
        return value
    if _has_wildcard(value):
        report.error(item.value_at, "wildcard_not_allowed", f"wildcards are not allowed in {keyword}")
        return None
    guess = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
    hint = f" (did you mean {guess[0]}?)" if guess else ""
    report.error(item.value_at, "bad_choice", f"{keyword} takes {', '.join(choices)}, not {item.value!r}{hint}")
    return None


def _queue_name(keyword: str, item: _Valued, report: _Report) -> str | None:
    """FWDQ, FWDQM, INPUTQ, INPUTQM: one object name, an ``&`` token where allowed, or a
    blank where allowed (FWDQM(' ') is stored as ' ', INPUTQ(' ') as None)."""
    value = _written(item)
    tokens = QUEUE_SUBSTITUTIONS.get(keyword, ())
    if value.startswith("&"):
        token = fold(value)
        if token in tokens:
            return token
        if tokens:
            if token in ("&DESTQM", "&REPLYQM"):
                why = f"{token} names a queue manager"
            elif token in SUBSTITUTIONS:
                why = f"{token} names a queue"
            else:
                why = f"{value} is not one of {', '.join(SUBSTITUTIONS)}"
            message = f"{keyword} takes a name, {' or '.join(tokens)}; {why}"
        else:
            message = f"{keyword} takes a name: & substitutions are only for FWDQ and FWDQM"
        report.error(item.value_at, "bad_substitution", message)
        return None
    if _has_wildcard(value):
        report.error(
            item.value_at, "wildcard_not_allowed", f"wildcards are not allowed in {keyword}: it names one object"
        )
        return None
    if not value.strip(" "):
        if keyword == "FWDQ":
            report.error(item.value_at, "blank_name", "FWDQ(' ') is not valid: name the queue to forward to")
            return None
        return " " if keyword == "FWDQM" else None
    if len(value) > NAME_LENGTH:
        report.error(
            item.value_at,
            "value_too_long",
            f"{keyword} value is {len(value)} characters long; names hold {NAME_LENGTH}",
        )
        return None
    return value


# ----------------------------------------------------------------------------- table checks


def _is_substitution(name: str | None) -> bool:
    return name is not None and name.startswith("&")


def _is_catch_all(rule: Rule) -> bool:
    """A last rule that takes every message and ends its processing for good: no tested
    pattern, and DISCARD, or FWD to names written in the table (an ``&`` token may resolve
    to a blank name, and then every attempt fails)."""
    if rule.tested_patterns():
        return False
    if rule.action == "DISCARD":
        return True
    return rule.action == "FWD" and not _is_substitution(rule.fwdq) and not _is_substitution(rule.fwdqm)


def subsumes(general: Rule, specific: Rule) -> bool:
    """True when every message ``specific`` matches is also matched by ``general``.

    Conservative: each keyword ``general`` tests must be tested by ``specific`` too, with an
    equal number, a wildcard-free string that ``general``'s pattern matches, or (when
    ``specific``'s string has wildcards) the identical pattern.
    """
    wanted = specific.tested_patterns()
    for keyword, pattern in general.tested_patterns().items():
        if keyword not in wanted:
            return False
        value = wanted[keyword]
        if isinstance(pattern, int) or isinstance(value, int) or _has_wildcard(value):
            if pattern != value:
                return False
        elif not glob_match(pattern, value):
            return False
    return True


SHADOW_CHECK_BUDGET = 2_000_000  # subsumes() calls; bounds the check on huge tables


def _literal_key(keyword: str, value: str | int) -> tuple[str, str | int] | None:
    """The index key of a wildcard-free pattern (a number, or a string without * or ?)."""
    if isinstance(value, int):
        return keyword, value
    if _has_wildcard(value):
        return None
    return keyword, value.rstrip(" ")


def _warn_shadowed(rules: list[Rule], starts: dict[int, Position], report: _Report) -> None:
    """A rule is shadowed when an earlier IGNORE or DISCARD rule (they cannot fail, so they
    are always chosen when they match) matches every message it matches; the warning names
    the first such rule.

    Only unshadowed IGNORE/DISCARD rules can be that first rule (`subsumes` is transitive),
    and one that tests a wildcard-free value can only take rules that test the same value, so
    candidates are indexed by their first such value: a table of 100,000 rules is checked in
    about linear time. An adversarial table (very many wildcard-only IGNORE rules) stops the
    check after ``SHADOW_CHECK_BUDGET`` comparisons, with a warning saying so."""
    general: list[tuple[int, Rule]] = []
    by_value: dict[tuple[str, str | int], list[tuple[int, Rule]]] = {}
    budget = SHADOW_CHECK_BUDGET
    for position, later in enumerate(rules):
        wanted = later.tested_patterns()
        pool = list(general)
        for keyword, value in wanted.items():
            key = _literal_key(keyword, value)
            if key is not None:
                pool += by_value.get(key, ())
        pool.sort(key=lambda candidate: candidate[0])
        winner = None
        for _, earlier in pool:
            budget -= 1
            if budget < 0:
                report.warning(
                    starts[later.index],
                    "shadow_check_incomplete",
                    f"too many rules to look for shadowed rules (more than {SHADOW_CHECK_BUDGET} "
                    "comparisons): this rule and the ones after it were not checked",
                )
                return
            if subsumes(earlier, later):
                winner = earlier
                break
        if winner is not None:
            report.warning(
                starts[later.index],
                "shadowed_rule",
                f"this rule can never be chosen: the rule at line {winner.line}"
                f" (ACTION({winner.action})) takes every message it matches",
            )
        elif later.action in ("IGNORE", "DISCARD"):
            key = next((k for k in (_literal_key(kw, v) for kw, v in wanted.items()) if k is not None), None)
            (by_value.setdefault(key, []) if key is not None else general).append((position, later))
