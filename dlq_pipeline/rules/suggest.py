"""`rules suggest`: a rules table drafted from what the messages show, and its effect.

Pure functions, no Spark and no I/O. The messages arrive as `Seen` groups (messages that look
the same to a draft, with their count and arrival window): ``cli/rules_suggest.py`` builds
them from dumps with `seen_groups`, ``triage/spark.py`` from a warehouse with Spark. The draft
follows IBM's advice on rules tables and the report's findings (docs/rules-reference.md,
"Drafting a table"):

- a RETRY rule per reason that clears by itself (`RETRY_COUNTS`), RETRYINT paced by the
  longest queue-full storm, and a rule of its own, with attempts for as long again as the
  storm lasted, for each queue that was full in a storm (the report's ``queue_full`` advice);
- a FWD rule with HEADER(YES) to a holding queue per reason that cannot succeed as it stands
  (`HOLD_QUEUES`) when at least ``min_messages`` messages show it, the catch-all taking the
  rarer ones;
- last, a catch-all FWD with HEADER(YES): nothing is left to an implicit IGNORE, nothing is
  discarded.

Each rule's evidence (how many messages it takes, from which queue managers and
applications, when) is counted by deciding the groups with the draft itself, so it says
what `rules test` will show.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dlq_pipeline.dumps.describe import printable
from dlq_pipeline.errors import UsageError
from dlq_pipeline.mq import reasons
from dlq_pipeline.mq.constants import MQFB, MQRC
from dlq_pipeline.report.advice import advise
from dlq_pipeline.report.arrivals import NO_DLH, UNKNOWN, timeline
from dlq_pipeline.rules.matcher import decide
from dlq_pipeline.rules.model import COMPARED, Decision, Rule, RulesTable
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.rules.printer import format_value, named_items, wrap_entry
from dlq_pipeline.rules.whatif import SHOWN_ACTIONS

# Reasons that clear by themselves (mq.reasons.TRANSIENT), with their RETRY counts: a full
# queue or page set usually drains within the hour at the default RETRYINT(300); a queue
# put-inhibited by an operator, a cluster still resolving, a queue manager restarting get fewer.
RETRY_COUNTS = {code: 6 for code in reasons.TRANSIENT} | {
    reasons.MQRC_Q_FULL: 12,
    reasons.MQRC_Q_SPACE_NOT_AVAILABLE: 12,
}
# Reasons that cannot succeed as the message stands -> the holding queue's last qualifier.
HOLD_QUEUES = {
    **dict.fromkeys(
        (
            reasons.MQRC_UNKNOWN_OBJECT_NAME,
            reasons.MQRC_UNKNOWN_REMOTE_Q_MGR,
            reasons.MQRC_UNKNOWN_ALIAS_BASE_Q,
            reasons.MQRC_UNKNOWN_XMIT_Q,
            reasons.MQRC_Q_DELETED,
        ),
        "ADDRESS",
    ),
    **dict.fromkeys((reasons.MQRC_NOT_AUTHORIZED, reasons.MQRC_SECURITY_ERROR), "SECURITY"),
    **dict.fromkeys(
        (
            MQRC["MQRC_FORMAT_ERROR"],
            MQRC["MQRC_NOT_CONVERTED"],
            MQRC["MQRC_CONVERTED_MSG_TOO_BIG"],
            MQRC["MQRC_SOURCE_CCSID_ERROR"],
            MQRC["MQRC_TARGET_CCSID_ERROR"],
            MQFB["MQFB_DATA_LENGTH_NEGATIVE"],
            MQFB["MQFB_DATA_LENGTH_TOO_BIG"],
            MQFB["MQFB_DATA_LENGTH_ZERO"],
        ),
        "FORMAT",
    ),
    **dict.fromkeys(
        (
            reasons.MQRC_MSG_TOO_BIG_FOR_Q,
            reasons.MQRC_MSG_TOO_BIG_FOR_Q_MGR,
            reasons.MQRC_MSG_TOO_BIG_FOR_CHANNEL,
            reasons.MQRC_PERSISTENT_NOT_ALLOWED,
        ),
        "LIMIT",
    ),
    **dict.fromkeys((MQFB["MQFB_APPL_CANNOT_BE_STARTED"], MQFB["MQFB_APPL_TYPE_ERROR"]), "TRIGGER"),
    reasons.MQRC_BACKOUT_THRESHOLD_REACHED: "BACKOUT",
}
WHY_HELD = {
    "ADDRESS": "the destination does not resolve: someone fixes a definition or the sender",
    "SECURITY": "the putter may not use the destination: the security team decides",
    "FORMAT": "the data cannot be converted or read as its format says",
    "LIMIT": "the destination cannot take the message as it is (its size or persistence)",
    "TRIGGER": "the triggered application could not be started",
    "BACKOUT": "the getting application backed it out again and again (a poison message)",
}
MIN_MESSAGES = 10  # a holding rule of its own for a reason at least this many messages show
RETRYINT = 300  # seconds, without a storm (IBM's default is 60; a scheduled run is rarer)
MAX_RETRYINT = 3600
MAX_STORM_RETRY = 96
TOP = 3  # queue managers and applications named per rule
WIDTH = 72  # IBM's line limit, kept by comments too
_MQ_NAME = re.compile(r"[A-Za-z0-9._/%]{1,48}")  # the characters of an MQ object name


@dataclass(frozen=True, slots=True)
class Seen:
    """Messages that look the same to a draft: whether they have an MQDLH (and all their
    data), its Reason and destination (trailing blanks removed), the queue manager they came
    from (`report.arrivals.UNKNOWN` when not named), the putting application and the hour
    they reached the DLQ in, with their count and when the first and last of them arrived
    (None when not known)."""

    has_dlh: bool
    truncated: bool
    reason: int | None
    dest_q: str
    dest_qmgr: str
    origin: str
    appl: str
    hour: dt.datetime | None
    count: int
    first: dt.datetime | None = None
    last: dt.datetime | None = None

    def view(self) -> dict[str, Any]:
        """The match view the draft's patterns read (REASON, DESTQ, DESTQM)."""
        return {
            "has_dlh": self.has_dlh,
            "truncated": self.truncated,
            "dlh_reason": self.reason,
            "dlh_dest_q": self.dest_q,
            "dlh_dest_qmgr": self.dest_qmgr,
        }


@dataclass(frozen=True, slots=True)
class SuggestOptions:
    """What the draft cannot know from the messages: queue names, and the count that earns a
    holding rule of its own. ``inputq``/``inputqm`` None: as the messages' source says."""

    hold_prefix: str = "DLQ.HOLD"
    catch_all: str = "DLQ.UNMATCHED"
    inputq: str | None = None
    inputqm: str | None = None
    min_messages: int = MIN_MESSAGES

    def __post_init__(self) -> None:
        problems = [
            f"{what} {name!r} is not an MQ queue name (up to 48 of A-Z a-z 0-9 . / _ %)"
            for what, name in (
                ("--hold-prefix", f"{self.hold_prefix}.ADDRESS"),
                ("--catch-all", self.catch_all),
                ("--inputq", self.inputq),
                ("--inputqm", self.inputqm),
            )
            if name is not None and not _MQ_NAME.fullmatch(name)
        ]
        if self.min_messages < 1:
            problems.append(f"--min-messages must be at least 1, not {self.min_messages}")
        if problems:
            raise UsageError("; ".join(problems))


# --------------------------------------------------------------------------- the messages


def arrival(view: Mapping[str, Any]) -> dt.datetime | None:
    """When a message reached the DLQ: the MQDLH put time, else the MQMD's (GMT), as the
    report reads it; None when neither is a valid date and time."""
    for date, time in (("dlh_put_date", "dlh_put_time"), ("put_date", "put_time")):
        text = f"{view.get(date) or ''}{(view.get(time) or '')[:6]}"
        try:
            return dt.datetime.strptime(text, "%Y%m%d%H%M%S")
        except ValueError:
            continue
    return None


def _name(value: object) -> str:
    return str(value or "").rstrip(" ")


SeenKey = tuple[bool, bool, "int | None", str, str, str, str, "dt.datetime | None"]


def seen_key(view: Mapping[str, Any], when: dt.datetime | None) -> SeenKey:
    """The fields of a message's match view, and the hour of its arrival, that make its
    `Seen` group."""
    has_dlh = bool(view.get("has_dlh"))
    return (
        has_dlh,
        bool(view.get("truncated")),
        view.get("dlh_reason") if has_dlh else None,
        _name(view.get("dlh_dest_q")) if has_dlh else "",
        _name(view.get("dlh_dest_qmgr")) if has_dlh else "",
        _name(view.get("reply_to_qmgr")).rstrip("\x00 ") or UNKNOWN,
        _name(view.get("put_appl_name")).rstrip("\x00 "),
        when.replace(minute=0, second=0, microsecond=0) if when else None,
    )


def seen_groups(views: Iterable[Mapping[str, Any]]) -> list[Seen]:
    """Group match views (`rules.view.match_view`) into `Seen` rows, in a fixed order."""
    counts: Counter[SeenKey] = Counter()
    windows: dict[SeenKey, tuple[dt.datetime, dt.datetime]] = {}
    for view in views:
        when = arrival(view)
        key = seen_key(view, when)
        counts[key] += 1
        if when is not None:
            low, high = windows.get(key, (when, when))
            windows[key] = (min(low, when), max(high, when))
    rows = [Seen(*key, n, *windows.get(key, (None, None))) for key, n in counts.items()]
    return sorted(rows, key=order)


def order(seen: Seen) -> tuple:
    """The order `seen_groups` gives (a fixed one, so that a draft is deterministic)."""
    return (
        not seen.has_dlh,
        seen.truncated,
        seen.reason or 0,
        seen.dest_q,
        seen.dest_qmgr,
        seen.origin,
        seen.appl,
        seen.hour or dt.datetime.min,
    )


# --------------------------------------------------------------------------- the draft


@dataclass(frozen=True)
class Suggested:
    """One drafted rule: the rule, why it is there, and the advice it follows (a report
    advice code and its action, when a finding led to it)."""

    rule: Rule
    why: str
    advice: tuple[str, str] | None = None


@dataclass
class _Taken:
    """What one rule takes of the messages (filled by deciding the groups with the draft)."""

    messages: int = 0
    origins: Counter[str] = field(default_factory=Counter)
    appls: Counter[str] = field(default_factory=Counter)
    reasons: Counter[int] = field(default_factory=Counter)
    first: dt.datetime | None = None
    last: dt.datetime | None = None

    def add(self, seen: Seen) -> None:
        self.messages += seen.count
        self.origins[seen.origin] += seen.count
        self.appls[seen.appl or "(blank)"] += seen.count
        if seen.reason is not None:
            self.reasons[seen.reason] += seen.count
        if seen.first is not None and seen.last is not None:
            self.first = min(self.first or seen.first, seen.first)
            self.last = max(self.last or seen.last, seen.last)


@dataclass(frozen=True)
class Draft:
    """A drafted table: its text (what `rules suggest` prints) and the parsed table."""

    text: str
    table: RulesTable


def _rule(index: int, action: str, patterns: dict[str, str | int], **actions: Any) -> Rule:
    return Rule(line=0, index=index, patterns=patterns, action=action, **actions)


def _burst_advice(seen: list[Seen]) -> list[dict]:
    """The report's advice on these messages' arrivals (``queue_full``,
    ``unknown_destination_burst``, ``burst`` items)."""
    rows = [
        {
            "at": s.hour,
            "reason": reasons.name(s.reason) if s.reason is not None else NO_DLH,
            "qmgr": s.origin,
            "dest": f"{s.dest_qmgr}/{s.dest_q}" if s.dest_q else "",
            "count": s.count,
        }
        for s in seen
    ]
    return advise({"arrivals": timeline(rows)})


def _cited(item: dict | None) -> tuple[str, str] | None:
    """An advice item as a rule's comment cites it: its code and what it found."""
    return (item["code"], item["title"]) if item else None


def _retryint(storms: list[dict]) -> int:
    """RETRYINT: `RETRYINT`, or a longer interval when a queue was full for hours, so that
    the reason's RETRY count spans the storm (rounded up to a minute, at most an hour)."""
    hours = max((item["evidence"]["hours"] for item in storms), default=0)
    per_attempt = hours * 3600 / RETRY_COUNTS[reasons.MQRC_Q_FULL]
    return int(min(MAX_RETRYINT, max(RETRYINT, math.ceil(per_attempt / 60) * 60)))


def draft_rules(seen: list[Seen], options: SuggestOptions) -> tuple[list[Suggested], int]:
    """The drafted rules in table order, and the RETRYINT they are paced by."""
    dlh = [s for s in seen if s.has_dlh and not s.truncated]
    by_reason: Counter[int] = Counter()
    for s in dlh:
        by_reason[s.reason or 0] += s.count
    ranked = sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0]))
    found = _burst_advice(dlh)
    storms = [item for item in found if item["code"] == "queue_full"]
    unknown = {
        item["evidence"]["reasons"][0]["reason"]: item for item in found if item["code"] == "unknown_destination_burst"
    }
    retryint = _retryint(storms)
    rules: list[Suggested] = []

    def add(action: str, patterns: dict[str, str | int], why: str, advice=None, **actions: Any) -> None:
        rules.append(Suggested(_rule(len(rules), action, patterns, **actions), why, advice))

    full = reasons.MQRC_Q_FULL
    for item in sorted(storms, key=lambda i: (-i["evidence"]["messages"], i["evidence"]["from"])):
        qmgr, _, queue = item["evidence"]["destinations"][0]["dest"].partition("/")
        if not (_MQ_NAME.fullmatch(queue) and (not qmgr or _MQ_NAME.fullmatch(qmgr))):
            continue
        retry = min(MAX_STORM_RETRY, math.ceil(2 * item["evidence"]["hours"] * 3600 / retryint))
        span = (retry + RETRY_COUNTS[full]) * retryint / 3600
        add(
            "RETRY",
            {"DESTQ": queue, **({"DESTQM": qmgr} if qmgr else {}), "REASON": full},
            f"RETRY: {item['title']}. With the MQRC_Q_FULL rule below, up to "
            f"{retry + RETRY_COUNTS[full]} attempts over about {span:g} hours: twice as long as it "
            "was full, and the reason's own attempts after that, for it to drain.",
            (item["code"], item["action"]),
            retry=retry,
        )
    for reason, _ in ranked:
        if reason in RETRY_COUNTS:
            count = RETRY_COUNTS[reason]
            add(
                "RETRY",
                {"REASON": reason},
                f"RETRY: {reasons.name(reason)} clears by itself once the destination drains "
                f"or comes back: {count} attempts, {count * retryint / 3600:g} hours at RETRYINT({retryint}), "
                "then the catch-all takes what is left.",
                retry=count,
            )
    for reason, messages in ranked:
        hold = HOLD_QUEUES.get(reason)
        if hold is not None and messages >= options.min_messages:
            add(
                "FWD",
                {"REASON": reason},
                f"FWD to a holding queue: {reasons.name(reason)} cannot succeed as the message stands; "
                f"{WHY_HELD[hold]}. HEADER(YES) keeps the reason with the message.",
                _cited(unknown.get(reasons.name(reason))),
                fwdq=f"{options.hold_prefix}.{hold}",
                header=True,
            )
    add(
        "FWD",
        {},
        "The catch-all: whatever no rule above takes, or takes and fails, goes to a queue people "
        "read, dead-letter header kept, so that nothing stays on the DLQ (IBM: without it such "
        "messages stay there indefinitely).",
        ("no_catch_all", "a table without a catch-all leaves what no rule matches on the DLQ, unseen"),
        fwdq=options.catch_all,
        header=True,
    )
    return rules, retryint


def _control_items(seen_inputq: str | None, seen_inputqm: str | None, options: SuggestOptions, retryint: int):
    inputqm = options.inputqm if options.inputqm is not None else seen_inputqm
    inputq = options.inputq if options.inputq is not None else seen_inputq
    items = [f"INPUTQM({format_value(inputqm)})"] if inputqm else []
    items += [f"INPUTQ({format_value(inputq)})"] if inputq else []
    return [*items, f"RETRYINT({retryint})", "WAIT(NO)"]


def _comment(text: str, indent: str = "") -> list[str]:
    first = "* " + indent
    rest = "* " + " " * len(indent)
    return textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False)


def _top(counter: Counter) -> str:
    ranked = sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))
    shown = [f"{printable(str(k))} ({n:,})" for k, n in ranked[:TOP]]
    others = sum(n for _, n in ranked[TOP:])
    return ", ".join(shown) + (f" and {others:,} more from {len(ranked) - TOP} others" if others else "")


def _stamp(when: dt.datetime | None) -> str:
    return when.strftime("%Y-%m-%dT%H:%MZ") if when else "?"


def _evidence(taken: _Taken, total: int, catch_all: bool) -> list[str]:
    if not taken.messages:
        return ["takes none of these messages: it is there for what arrives later."]
    share = f"{100 * taken.messages / total:.1f}%" if total else "-"
    lines = [
        f"takes {taken.messages:,} messages ({share}) from {_top(taken.origins)};",
        f"applications {_top(taken.appls)};",
        f"arrived {_stamp(taken.first)} to {_stamp(taken.last)}.",
    ]
    if catch_all and taken.reasons:
        named = Counter({reasons.name(r): n for r, n in taken.reasons.items()})
        lines.append(f"Reasons: {_top(named)}.")
    return lines


def suggest(
    seen: list[Seen],
    options: SuggestOptions | None = None,
    *,
    inputq: str | None = None,
    inputqm: str | None = None,
    source: str = "",
) -> Draft:
    """The drafted table for these messages (deterministic: the same groups, the same text).
    ``inputq``/``inputqm``: the DLQ and queue manager the messages came from, when one of
    each; ``source`` says where they were read, for the heading."""
    options = options or SuggestOptions()
    suggested, retryint = draft_rules(seen, options)
    table = RulesTable("<draft>", rules=tuple(s.rule for s in suggested))
    taken = [_Taken() for _ in suggested]
    decidable = [s for s in seen if s.has_dlh and not s.truncated]
    for s in decidable:
        index = decide(table, s.view()).rule_index
        if index is not None:
            taken[index].add(s)
    total = sum(s.count for s in seen)
    with_dlh = sum(s.count for s in decidable)
    first = min((s.first for s in seen if s.first), default=None)
    last = max((s.last for s in seen if s.last), default=None)
    lines = ["*" * WIDTH]
    lines += _comment(
        f"A rules table drafted by `dlq-pipeline rules suggest` from {total:,} messages{source}, "
        f"{with_dlh:,} of them with a dead-letter header, arrived {_stamp(first)} to {_stamp(last)}."
    )
    lines += _comment(
        "A draft for a person to read, not a table to deploy unread: check each rule's evidence, "
        "rename the queues to your conventions and define them, then run "
        "`dlq-pipeline rules check --strict` and `dlq-pipeline rules test` on it."
    )
    without = sum(s.count for s in seen if not s.has_dlh)
    if without:
        lines += _comment(
            f"{without:,} messages have no dead-letter header: no rule can act on them and they stay "
            "on the DLQ (the report's no_dlh_stays advice): find who puts them there and move them by hand."
        )
    cut = sum(s.count for s in seen if s.has_dlh and s.truncated)
    if cut:
        lines += _comment(f"{cut:,} messages were read only in part (truncated): they are never replayed.")
    lines += ["*" * WIDTH, "", *wrap_entry(_control_items(inputq, inputqm, options, retryint))]
    for number, (rule, took) in enumerate(zip(suggested, taken), start=1):
        mark = f"{number}. "
        lines += ["", *_comment(rule.why, mark)]
        under = " " * len(mark)
        evidence = _evidence(took, with_dlh, not rule.rule.patterns)
        lines += [line for text in evidence for line in _comment(text, under)]
        if rule.advice:
            lines += _comment(f"Advice {rule.advice[0]}: {rule.advice[1]}", under)
        lines += wrap_entry(named_items(rule.rule))
    text = "\n".join(lines) + "\n"
    return Draft(text, parse_rules(text, "<draft>"))


# --------------------------------------------------------------------------- its effect


def label(decision: Decision, table: RulesTable) -> str:
    """A decision in a few words: ``FWD DLQ.HOLD.ADDRESS``, ``RETRY``, ``IGNORE (no_match)``;
    a forward to ``&REPLYQ`` (one queue per message) as the rule writes it."""
    if decision.action == "FWD":
        fwdq = table.rules[decision.rule_index].fwdq if decision.rule_index is not None else None
        return f"FWD {fwdq if fwdq and fwdq.startswith('&') else decision.target_q}"
    if decision.action == "IGNORE" and decision.ignore_reason:
        return f"IGNORE ({decision.ignore_reason})"
    return decision.action


def changed(current: Decision, draft: Decision) -> bool:
    """Whether two decisions for a message differ in what they do (the rule number alone does not)."""
    return any(getattr(current, name) != getattr(draft, name) for name in COMPARED)


EXAMPLES = 3  # messages shown per kind of change
SHOWN_TRANSITIONS = 20


@dataclass
class Effect:
    """What a draft decides for a set of messages, and what changes against the table in use."""

    table: RulesTable
    against: RulesTable | None = None
    messages: int = 0
    actions: Counter[str] = field(default_factory=Counter)
    chosen: Counter[int] = field(default_factory=Counter)
    implicit: Counter[str] = field(default_factory=Counter)
    transitions: Counter[tuple[str, str]] = field(default_factory=Counter)
    examples: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    unchanged: int = 0

    def add(self, draft: Decision, current: Decision | None = None, count: int = 1, example: str = "") -> None:
        self.messages += count
        self.actions[draft.action] += count
        if draft.rule_index is None:
            self.implicit[draft.ignore_reason or ""] += count
        else:
            self.chosen[draft.rule_index] += count
        if current is None:
            return
        if not changed(current, draft):
            self.unchanged += count
            return
        key = (label(current, self.against or self.table), label(draft, self.table))
        self.transitions[key] += count
        shown = self.examples.setdefault(key, [])
        if example and len(shown) < EXAMPLES:
            shown.append(example)

    def lines(self, against_name: str = "") -> list[str]:
        """The effect as comment lines, so that a draft followed by them is still a table."""
        out = [f"* Effect on the {self.messages:,} messages (no prior attempts):"]
        out.append("*   " + ", ".join(f"{a} {self.actions[a]:,}" for a in SHOWN_ACTIONS))
        out.append(f"*   {'rule':>4} {'line':>5} {'action':<7} {'messages':>9}")
        for rule in self.table.rules:
            out.append(f"*   {rule.index + 1:>4} {rule.line:>5} {rule.action:<7} {self.chosen[rule.index]:>9,}")
        implicit = ", ".join(f"{r} {n:,}" for r, n in sorted(self.implicit.items()))
        out.append(f"*   left on the DLQ by no rule (implicit IGNORE): {implicit or 'none'}")
        if self.against is not None:
            out.append(
                f"* Against {against_name or 'the table in use'}: {self.unchanged:,} unchanged, "
                f"{sum(self.transitions.values()):,} change"
            )
            ranked = sorted(self.transitions.items(), key=lambda kv: (-kv[1], kv[0]))
            for key, n in ranked[:SHOWN_TRANSITIONS]:
                out.append(f"*   {n:>9,}  {printable(key[0])} -> {printable(key[1])}")
                for example in self.examples.get(key, []):
                    out.append(f"*              e.g. {printable(example)}")
            if len(ranked) > SHOWN_TRANSITIONS:
                rest = sum(n for _, n in ranked[SHOWN_TRANSITIONS:])
                out.append(f"*   {rest:>9,}  in {len(ranked) - SHOWN_TRANSITIONS} more kinds of change")
        return out
