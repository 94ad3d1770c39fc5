"""The parsed rules table: what the parser produces and the matchers consume."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Literal

from dlq_pipeline.errors import UsageError

# keyword -> (match-view column, kind, maximum length of a string value)
PATTERN_FIELDS: dict[str, tuple[str, Literal["str", "int"], int | None]] = {
    "APPLIDAT": ("appl_identity_data", "str", 32),
    "APPLNAME": ("put_appl_name", "str", 28),
    "APPLTYPE": ("put_appl_type", "int", None),
    "DESTQ": ("dlh_dest_q", "str", 48),
    "DESTQM": ("dlh_dest_qmgr", "str", 48),
    "FEEDBACK": ("feedback", "int", None),
    "FORMAT": ("dlh_format", "str", 8),
    "MSGTYPE": ("msg_type", "int", None),
    "PERSIST": ("persistence", "int", None),
    "REASON": ("dlh_reason", "int", None),
    "REPLYQ": ("reply_to_q", "str", 48),
    "REPLYQM": ("reply_to_qmgr", "str", 48),
    "USERID": ("user_id", "str", 12),
}
ACTION_KEYWORDS = ("ACTION", "FWDQ", "FWDQM", "HEADER", "PUTAUT", "RETRY")
CONTROL_KEYWORDS = ("INPUTQ", "INPUTQM", "RETRYINT", "WAIT")
ACTIONS = ("DISCARD", "IGNORE", "RETRY", "FWD")
# The actions that put a message somewhere, and so count as attempts.
PUT_ACTIONS = ("RETRY", "FWD")
SUBSTITUTIONS = ("&DESTQ", "&DESTQM", "&REPLYQ", "&REPLYQM")

# A pattern value of "*" alone means "not tested".
WILDCARD_ALL = "*"


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule. ``patterns`` holds only the keywords written, values as resolved: ints for
    numeric keywords (symbolic names resolved), strings as folded (unquoted → upper case),
    or ``"*"`` when written as ``*`` alone. ``fwdq``/``fwdqm`` may be an ``&`` token in
    upper case (``"&DESTQ"``); ``fwdqm`` None means not written (local name resolution)."""

    line: int
    index: int
    patterns: dict[str, str | int]
    action: str
    retry: int = 1
    fwdq: str | None = None
    fwdqm: str | None = None
    header: bool = True
    putaut: str = "DEF"

    def tested_patterns(self) -> dict[str, str | int]:
        return {k: v for k, v in self.patterns.items() if v != WILDCARD_ALL}


@dataclass(frozen=True, slots=True)
class ControlData:
    """The optional first entry. ``None`` for INPUTQ/INPUTQM means not written (blank)."""

    inputq: str | None = None
    inputqm: str | None = None
    retryint: int = 60
    wait: str | int = "YES"
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem found in a table; ``code`` is stable so scripts can test for it."""

    file: str
    line: int
    col: int
    severity: Literal["error", "warning"]
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.severity}: {self.message} [{self.code}]"


@dataclass(slots=True)
class RulesTable:
    path: str
    control: ControlData = field(default_factory=ControlData)
    rules: tuple[Rule, ...] = ()
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors


class RulesError(UsageError):
    """A rules table with errors: its path, then each diagnostic (``file:line:col: ...``)."""

    def __init__(self, table: RulesTable):
        self.table = table
        count = len(table.errors)
        lines = [f"{table.path}: rules table is invalid ({count} error{'' if count == 1 else 's'})"]
        super().__init__("\n".join([*lines, *map(str, table.diagnostics)]))

    def lines(self) -> list[str]:
        head, *diagnostics = str(self).splitlines()
        return [f"error: {head}", *diagnostics]


@dataclass(frozen=True, slots=True)
class Decision:
    """What the rules decide for one message; field names match the ``decisions`` table.

    ``target_q``/``target_qmgr`` are resolved (``&`` tokens substituted, trailing blanks
    removed) and None unless the action is RETRY or FWD; a resolved blank target is ``""``
    and makes the attempt fail at replay. ``header`` is None unless FWD; ``putaut`` is None
    unless RETRY/FWD. ``ignore_reason`` is set only for IGNORE: None when a rule chose
    IGNORE explicitly, else ``no_dlh``, ``no_match``, ``retries_exhausted`` or ``truncated``.
    """

    action: str
    rule_line: int | None = None
    rule_index: int | None = None
    target_q: str | None = None
    target_qmgr: str | None = None
    header: bool | None = None
    putaut: str | None = None
    ignore_reason: str | None = None


# The decision columns of the `decisions` table and of the Spark classifier, in this order.
DECISION_COLUMNS = tuple(f.name for f in fields(Decision))
# What makes two decisions for the same message different (the rule line is not: adding a
# rule at the top of a table renumbers every rule after it without changing what they do).
COMPARED = ("action", "target_q", "target_qmgr", "header", "ignore_reason")
