"""Lexical layer of the rules-table language (docs/rules-reference.md, sections 1-4).

Two steps, both pure: ``split_entries`` turns physical lines into logical entries (comments,
blank lines and ``+``/``-`` continuations resolved) while remembering the physical line and
column of every character, so that errors can point into the file the user edits;
``tokenize`` turns one entry into ``KEYWORD(value)`` items. Neither step knows which keywords
exist: that is the parser's business.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

BLANKS = " \t"  # tabs count as blanks (docs/rules-reference.md, "2. Lines")
SEPARATORS = BLANKS + ","
MAX_LINE = 72  # IBM: the significant length of a line must not exceed 72 characters

Position = tuple[int, int]  # (physical line, 1-based column)


@dataclass(frozen=True, slots=True)
class Problem:
    """A lexical problem; the parser turns it into a Diagnostic."""

    position: Position
    severity: Literal["error", "warning"]
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Entry:
    """One logical entry: its text with continuations joined, and where each character sits."""

    text: str
    positions: tuple[Position, ...]  # one per character of text
    end: Position  # just after the last character: where "missing ..." errors point

    def position(self, index: int) -> Position:
        return self.positions[index] if index < len(self.positions) else self.end


@dataclass(frozen=True, slots=True)
class Item:
    """``KEYWORD(value)`` as written. ``value`` is None when no parenthesised value follows;
    quotes are removed and ``''`` undone. ``broken`` items already produced a lexical error
    and must not be validated further (that would only repeat the error)."""

    keyword: str
    keyword_at: Position
    value: str | None = None
    quoted: bool = False
    value_at: Position | None = None
    broken: bool = False


def _is_blank(line: str) -> bool:
    return not line.strip(BLANKS)


def split_entries(text: str) -> tuple[list[Entry], list[Problem]]:
    """Join continuation lines into entries, skipping comments and blank lines.

    A line is a comment when its first character is ``*``, or [choice] when its first
    non-blank character is ``*`` and it does not continue an entry (inside a continuation an
    indented ``*`` is data, as in ``REPLYQM(AAAA.+`` / ``   *)``). Blank and comment lines
    inside a continuation are skipped. Comment lines are not length-checked: IBM's own z/OS
    example has 79-character comment lines.
    """
    entries: list[Entry] = []
    problems: list[Problem] = []
    chars: list[str] = []
    positions: list[Position] = []
    continuation: str | None = None  # "+" or "-" while an entry continues
    continued_at: Position = (1, 1)
    last_end: Position = (1, 1)

    def flush() -> None:
        if chars:
            entries.append(Entry("".join(chars), tuple(positions), last_end))
        chars.clear()
        positions.clear()

    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if _is_blank(line):
            continue
        first = len(line) - len(line.lstrip(BLANKS))
        if line.startswith("*") or (continuation is None and line[first] == "*"):
            continue
        significant = line.rstrip(BLANKS)
        if len(significant) > MAX_LINE:
            problems.append(
                Problem(
                    (number, MAX_LINE + 1),
                    "warning",
                    "line_too_long",
                    f"line is {len(significant)} characters long; IBM's limit is {MAX_LINE}"
                    " (continue the entry with '+' on the next line)",
                )
            )
        start = 0 if continuation == "-" else first
        stop = len(significant)
        if significant[-1] in "+-":
            continuation = significant[-1]
            continued_at = (number, stop)
            stop -= 1
        else:
            continuation = None
        for column in range(start, stop):
            chars.append(line[column])
            positions.append((number, column + 1))
        last_end = (number, stop + 1)
        if continuation is None:
            flush()
    if continuation is not None:
        problems.append(
            Problem(
                continued_at,
                "error",
                "continuation_at_eof",
                f"the entry continues ('{continuation}') but the file ends",
            )
        )
        flush()
    return entries, problems


def _skip(text: str, index: int, characters: str) -> int:
    while index < len(text) and text[index] in characters:
        index += 1
    return index


def _find_any(text: str, index: int, characters: str) -> int:
    """Index of the first of ``characters`` at or after ``index``, or len(text)."""
    while index < len(text) and text[index] not in characters:
        index += 1
    return index


def tokenize(entry: Entry) -> tuple[list[Item], list[Problem]]:
    """Split an entry into items; every malformed piece becomes a Problem and scanning goes
    on from a sensible place, so that all errors of an entry are reported at once."""
    text = entry.text
    items: list[Item] = []
    problems: list[Problem] = []

    def problem(index: int, code: str, message: str) -> None:
        problems.append(Problem(entry.position(index), "error", code, message))

    index = 0
    separated = True
    while index < len(text):
        char = text[index]
        if char in SEPARATORS:
            index = _skip(text, index, SEPARATORS)
            separated = True
            continue
        if char == "*":
            problem(
                index,
                "unexpected_text",
                "'*' does not start a keyword: there are no inline comments; a comment"
                " is a line of its own starting with '*'",
            )
            break
        if char in "()'":
            problem(index, "unexpected_text", f"unexpected {char!r}: expected a keyword")
            index = _skip_junk(text, index)
            separated = False
            continue
        if not separated:
            problem(index, "missing_separator", "items must be separated by a blank or a comma")
        separated = False
        end = _find_any(text, index, SEPARATORS + "()'")
        keyword, keyword_at = text[index:end], entry.position(index)
        after = _skip(text, end, BLANKS)
        if after >= len(text) or text[after] != "(":
            items.append(Item(keyword, keyword_at))
            index = end
            continue
        item, index, value_problems = _value(entry, after)
        items.append(Item(keyword, keyword_at, *item))
        problems.extend(value_problems)
    return items, problems


def _skip_junk(text: str, index: int) -> int:
    """Resynchronise after unexpected text: skip to the next separator, over quoted text."""
    while index < len(text) and text[index] not in SEPARATORS:
        if text[index] == "'":
            close = text.find("'", index + 1)
            index = len(text) if close < 0 else close + 1
        else:
            index += 1
    return index


def _value(entry: Entry, open_paren: int) -> tuple[tuple[str, bool, Position, bool], int, list[Problem]]:
    """Read ``( value )`` from the ``(`` at ``open_paren``.

    Returns ((value, quoted, value_at, broken), index after the item, problems).
    """
    text = entry.text
    problems: list[Problem] = []

    def problem(index: int, code: str, message: str) -> None:
        problems.append(Problem(entry.position(index), "error", code, message))

    start = _skip(text, open_paren + 1, BLANKS)
    if start < len(text) and text[start] == "'":
        value, close = _quoted(text, start)
        if close is None:
            problem(start, "unterminated_quote", "this quote is never closed")
            return (value, True, entry.position(start), True), len(text), problems
        after = _skip(text, close + 1, BLANKS)
        if after < len(text) and text[after] == ")":
            return (value, True, entry.position(start), False), after + 1, problems
        if after == close + 1 and after < len(text) and text[after] not in SEPARATORS:
            problem(after, "bad_value", "text after the closing quote: quote the whole value")
            resume = text.find(")", after)
            resume = len(text) if resume < 0 else resume + 1
            return (value, True, entry.position(start), True), resume, problems
        problem(open_paren, "unclosed_paren", "this '(' is never closed")
        return (value, True, entry.position(start), True), close + 1, problems

    stop = _find_any(text, start, "()'")
    raw = text[start:stop].rstrip(BLANKS)
    value_at = entry.position(start)
    if stop < len(text) and text[stop] == ")":
        bad = _find_any(raw, 0, SEPARATORS)
        if bad < len(raw):
            what = "a comma" if raw[bad] == "," else "a blank"
            problem(start, "bad_value", f"unquoted value {raw!r} contains {what}: quote it ('{raw}')")
            return (raw, False, value_at, True), stop + 1, problems
        return (raw, False, value_at, False), stop + 1, problems
    if stop < len(text) and text[stop] == "'":
        problem(
            start,
            "bad_value",
            "a quote inside an unquoted value: quote the whole value and double the inner quote ('O''BRIEN')",
        )
        resume = text.find(")", stop)
        return (raw, False, value_at, True), len(text) if resume < 0 else resume + 1, problems
    problem(open_paren, "unclosed_paren", "this '(' is never closed")
    resume = min(_find_any(text, start, SEPARATORS), stop)
    return (text[start:resume], False, value_at, True), max(resume, start), problems


def _quoted(text: str, quote: int) -> tuple[str, int | None]:
    """The value of the quoted string opening at ``quote`` and the index of its closing
    quote (None when unterminated). ``''`` inside stands for one quote."""
    value: list[str] = []
    index = quote + 1
    while index < len(text):
        if text[index] == "'":
            if index + 1 < len(text) and text[index + 1] == "'":
                value.append("'")
                index += 2
                continue
            return "".join(value), index
        value.append(text[index])
        index += 1
    return "".join(value), None
