"""Rules decided per distinct value: §5 and §8 for a batch of messages at a cost that does
not grow with the table.

A rule matches when each pattern it tests matches its column, and each pattern reads one
column. So for every distinct value of a column, the set of rules whose pattern on that
column matches (or that do not test it) is computed once, as a bit set, and a message's
matching rules are the AND of its columns' sets. In a DLQ queue names, reasons and
applications repeat enormously: a batch has few distinct values per column and fewer
distinct combinations, and only those are decided (§8's cumulative RETRY over the set's
rules in table order, exactly `matcher.decide`); the messages take their combination's
result. Values are matched with the reference matcher's own functions (an exact pattern
through a dict, a prefix through a dict per length, anything else by `glob_match`).

`RuleIndex.choices` gives, per message, the chosen rule's index, ``EXHAUSTED`` (rules
matched, each has used its attempts) or ``NO_MATCH``; the Spark stage turns that into the
decision columns (``rules.spark``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Literal, TypeVar, cast

import numpy as np

from dlq_pipeline.rules.matcher import BLANK, MatchView, glob_match
from dlq_pipeline.rules.model import PATTERN_FIELDS, RulesTable

EXHAUSTED = -1  # rules matched, but every one of them has used its attempts
NO_MATCH = -2  # no rule matched, or the message has no usable MQDLH (not eligible)

_WILD = frozenset("*?")
# Entries a cache keeps before it starts afresh: values unique to each message (an APPLIDAT
# the rules test) must not grow a task's memory without bound.
CACHE_LIMIT = 65_536

Value = str | int | None  # a tested column's value: a string, a number, or null
_H = TypeVar("_H", bound=Hashable)


class _ColumnIndex:
    """The rules' patterns on one column, and value -> bit set of the rules it satisfies."""

    def __init__(self, kind: Literal["str", "int"], tests: list[tuple[int, str | int]], untested: int):
        self.kind = kind
        self.untested = untested  # rules that do not test this column: always satisfied
        self.exact: dict[str | int, int] = {}  # int value, or pattern without wildcards (blanks cut) -> bits
        self.prefixes: dict[int, dict[str, int]] = {}  # "ABC*" by prefix length -> bits
        self.general: list[tuple[str, int]] = []  # (pattern, bit) for glob_match
        self.cache: dict[Value, int] = {}
        for index, wanted in tests:
            bit = 1 << index
            if kind == "int":
                self.exact[wanted] = self.exact.get(wanted, 0) | bit
                continue
            pattern = str(wanted)
            if not _WILD & set(pattern):
                key = pattern.rstrip(BLANK)
                self.exact[key] = self.exact.get(key, 0) | bit
            elif pattern.endswith("*") and not (_WILD | {BLANK}) & set(pattern[:-1]):
                head = pattern[:-1]
                group = self.prefixes.setdefault(len(head), {})
                group[head] = group.get(head, 0) | bit
            else:
                self.general.append((pattern, bit))

    def bits(self, value: Value) -> int:
        found = self.cache.get(value)
        if found is None:
            if len(self.cache) >= CACHE_LIMIT:
                self.cache.clear()
            found = self.cache[value] = self.untested | self._matching(value)
        return found

    def _matching(self, value: Value) -> int:
        if self.kind == "int":  # a null never equals a number
            return self.exact.get(value, 0) if value is not None else 0
        # a missing character field reads as blank; a "str" column's values are strings
        text = "" if value is None else cast(str, value)
        trimmed = text.rstrip(BLANK)
        bits = self.exact.get(trimmed, 0)
        for length, group in self.prefixes.items():
            bits |= group.get(trimmed[:length], 0) if len(trimmed) >= length else 0
        for pattern, bit in self.general:
            if glob_match(pattern, text):
                bits |= bit
        return bits


class RuleIndex:
    """A rules table indexed by column, for deciding many messages at once."""

    def __init__(self, table: RulesTable):
        self.rules = tuple(table.rules)
        everything = (1 << len(self.rules)) - 1
        columns: dict[str, tuple[Literal["str", "int"], list[tuple[int, str | int]]]] = {}
        for position, rule in enumerate(self.rules):
            for keyword, wanted in rule.tested_patterns().items():
                column, kind, _ = PATTERN_FIELDS[keyword]
                columns.setdefault(column, (kind, []))[1].append((position, wanted))
        self.columns = {
            column: _ColumnIndex(kind, tests, everything & ~sum(1 << p for p in {p for p, _ in tests}))
            for column, (kind, tests) in sorted(columns.items(), key=lambda c: _ORDER[c[0]])
        }
        self.everything = everything
        self._ignore = [r.action == "IGNORE" for r in self.rules]
        self._retry = [r.retry for r in self.rules]
        self._chosen: dict[tuple[int, int], int] = {}

    def choose(self, matching: int, attempts: int) -> int:
        """§8 over the rules in bit set ``matching``: the first IGNORE, or the first rule at
        which the running total of RETRY exceeds ``attempts``; else EXHAUSTED or NO_MATCH."""
        key = (matching, attempts)
        found = self._chosen.get(key)
        if found is None:
            if len(self._chosen) >= CACHE_LIMIT:
                self._chosen.clear()
            found = self._chosen[key] = self._choose(matching, attempts)
        return found

    def _choose(self, matching: int, attempts: int) -> int:
        total, rest = 0, matching
        while rest:
            low = rest & -rest
            i = low.bit_length() - 1
            if self._ignore[i]:
                return i
            total += self._retry[i]
            if total > attempts:
                return i
            rest ^= low
        return EXHAUSTED if matching else NO_MATCH

    def decide_one(self, view: MatchView, attempts: int = 0) -> int:
        """The choice for one message's match view (``decide``'s rule, as a code)."""
        if not view.get("has_dlh") or view.get("truncated"):
            return NO_MATCH
        matching = self.everything
        for column, index in self.columns.items():
            matching &= index.bits(view.get(column))
        return self.choose(matching, attempts)

    def choices(
        self, values: Mapping[str, Sequence[Value]], eligible: Sequence[bool], attempts: Sequence[int]
    ) -> np.ndarray:
        """Per message (int64): the chosen rule's position in the table, EXHAUSTED or
        NO_MATCH. ``values`` holds a sequence per column in `columns` (None: null),
        ``eligible`` whether the message has a usable, untruncated MQDLH, ``attempts``
        the attempts already made (None: 0).

        Messages are grouped by their combination of values and attempts; each distinct
        combination is decided once."""
        n = len(eligible)
        eligible_list = [bool(e) for e in (eligible.to_pylist() if hasattr(eligible, "to_pylist") else eligible)]
        attempts_list = [a or 0 for a in (attempts.to_pylist() if hasattr(attempts, "to_pylist") else attempts)]
        codes = [_codes(eligible_list, n), _codes(attempts_list, n)]
        levels: list[list[Value] | None] = [None, None]  # the eligibility and attempts codes have no levels
        for column in self.columns:
            level, code = _factorize(values[column], n)
            codes.append(code)
            levels.append(level)
        key = np.zeros(n, dtype=np.int64)
        for code, size in ((c, int(c.max()) + 1 if n else 1) for c in codes):
            if key.max(initial=0) >= (1 << 62) // max(size, 1):  # keep the mixed radix in 63 bits
                key = np.unique(key, return_inverse=True)[1].reshape(n).astype(np.int64)
            key = key * size + code
        distinct, inverse = np.unique(key, return_inverse=True)
        inverse = inverse.reshape(n)
        first = np.zeros(distinct.size, dtype=np.int64)
        first[inverse[::-1]] = np.arange(n - 1, -1, -1)
        out = np.empty(distinct.size, dtype=np.int64)
        indexes = list(self.columns.values())
        for k, row in enumerate(first.tolist()):
            if not eligible_list[row]:
                out[k] = NO_MATCH
                continue
            matching = self.everything
            for index, level, code in zip(indexes, cast("list[list[Value]]", levels[2:]), codes[2:]):  # columns' levels
                matching &= index.bits(level[code[row]])
            out[k] = self.choose(matching, attempts_list[row])
        return out[inverse]


_ORDER = {column: position for position, (column, _k, _n) in enumerate(PATTERN_FIELDS.values())}


def _codes(values: Sequence[Hashable], n: int) -> np.ndarray:
    return _factorize(values, n)[1]


def _factorize(values: Sequence[_H], n: int) -> tuple[list[_H], np.ndarray]:
    """(distinct values, per value its position among them); None is a value of its own.
    An Arrow array is dictionary-encoded by Arrow, without a Python object per value."""
    if hasattr(values, "dictionary_encode"):
        encoded = values.dictionary_encode(null_encoding="encode")
        return encoded.dictionary.to_pylist(), encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    positions: dict[_H, int] = {}
    code = np.fromiter((positions.setdefault(v, len(positions)) for v in values), dtype=np.int64, count=n)
    return list(positions), code
