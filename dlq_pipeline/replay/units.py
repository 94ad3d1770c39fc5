"""Logical messages as units: which messages replay puts together, in what order, or holds.

A group, or a message in segments (`dlq_pipeline.mq.groups`), reaches a DLQ one message at
a time and can sit in a dump out of order, or only in part. A getter waiting with
``MQGMO_ALL_MSGS_AVAILABLE`` waits forever on part of a group, and one without it processes a
part, so replay puts a unit whole or not at all: every member present, every member decided
to the same put (action, target queue and queue manager), in ``MsgSeqNumber`` and ``Offset``
order inside one syncpoint (docs/replay.md, "Groups and segments").

`plan_units` is that judgement, pure: the members of the run's decisions (`Member`) in, one
`Placement` per member out, saying which unit it is in, where the unit sits in DLQ order (its
first member's place), its position inside the unit, and, for a unit not put, why
(`Placement.hold`). Each member is still decided as IBM's handler decides it; only the put is
per unit. A unit none of whose members is a put is left to the per-message path: discarding or
ignoring part of a group leaves nothing partial at a destination.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from dlq_pipeline.mq.groups import Part, in_unit, label, segmented, unit_name, unit_problem
from dlq_pipeline.rules.model import PUT_ACTIONS


@dataclass(frozen=True, slots=True)
class Member:
    """One message of a unit (``part``) with its decision and its place in the DLQ."""

    part: Part
    action: str
    target_q: str | None = None
    target_qmgr: str | None = None
    rule_line: int | None = None
    source_file: str | None = None
    source_index: int | None = None

    @property
    def key(self) -> str:
        return self.part.key

    def decision(self) -> tuple[str, str, str]:
        return self.action, (self.target_q or "").rstrip(" "), (self.target_qmgr or "").rstrip(" ")

    def describe_decision(self) -> str:
        where = ""
        if self.action in PUT_ACTIONS:
            _, queue, qmgr = self.decision()
            where = f" to {queue}" + (f" on {qmgr}" if qmgr else "")
        rule = f" by rule line {self.rule_line}" if self.rule_line is not None else ""
        return f"{self.action}{where}{rule}"

    def dlq_order(self) -> tuple:
        """Spark's ascending order, nulls first: the order replay's partitions are sorted in."""
        f, i = self.source_file, self.source_index
        return (f is not None, f or "", i is not None, i or 0, self.key)


@dataclass(frozen=True, slots=True)
class Placement:
    """A member's place: its ``unit`` (`groups.unit_name`), the unit's first member in DLQ
    order (``first_file``, ``first_index``: every member sorts there), its ``position`` in put
    order, and ``hold``: why the unit is not put (None: put whole)."""

    unit: str
    first_file: str | None
    first_index: int | None
    position: int
    hold: str | None = None


def split_decisions(members: list[Member]) -> str | None:
    """Which decisions a unit's members got (in put order), when they are not all the same."""
    by_decision: dict[tuple, list[Member]] = defaultdict(list)
    for m in members:
        by_decision[m.decision()].append(m)
    if len(by_decision) == 1:
        return None
    in_segments = segmented(m.part for m in members)
    parts = [
        f"MsgSeqNumber {', '.join(label(m.part, in_segments) for m in group)} {group[0].describe_decision()}"
        for group in by_decision.values()
    ]
    return "decided differently: " + "; ".join(parts)


def plan_units(members: Iterable[Member]) -> dict[str, Placement]:
    """The `Placement` of every member of a unit at least one of whose members is a put
    (message key -> placement), pure. A unit is put whole (``hold`` None) when it is complete,
    consistent, and all its members are decided to the same put; otherwise every member is
    held, with one reason naming the unit."""
    units: dict[bytes, list[Member]] = defaultdict(list)
    for m in members:
        if in_unit(m.part.flags):
            units[m.part.group_id].append(m)
    placed: dict[str, Placement] = {}
    for group_id, unit in sorted(units.items()):
        if not any(m.action in PUT_ACTIONS for m in unit):
            continue
        unit.sort(key=lambda m: (m.part.position, m.key))
        first = min(unit, key=Member.dlq_order)
        why = "; ".join(r for r in (split_decisions(unit), unit_problem([m.part for m in unit])) if r)
        hold = None
        if why:
            count = f"{len(unit)} message{'' if len(unit) == 1 else 's'} here"
            hold = f"group {unit_name(group_id)} ({count}) {why}; none of it is put"
        for position, m in enumerate(unit):
            placed[m.key] = Placement(unit_name(group_id), first.source_file, first.source_index, position, hold)
    return placed
