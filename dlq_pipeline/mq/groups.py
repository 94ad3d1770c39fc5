"""Message groups and segments (MQMD version 2): which physical messages make one unit, and
whether a set of them is the whole unit.

A *group* is messages sharing a ``GroupId``, ``MsgSeqNumber`` 1..N, ``MQMF_MSG_IN_GROUP`` on
each and ``MQMF_LAST_MSG_IN_GROUP`` on member N. A message in *segments* is messages sharing a
``GroupId`` and a ``MsgSeqNumber``, each carrying the logical message's bytes from ``Offset``
on, ``MQMF_SEGMENT`` on each and ``MQMF_LAST_SEGMENT`` on the last. A group may hold segmented
messages; a segmented message outside a group has ``MsgSeqNumber`` 1. Replay
(`dlq_pipeline.replay.units`) and the simulated queue manager (`dlq_pipeline.mq.sim`) judge
units with the same functions (pure).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# MQMF_* (IBM's cmqc.h). MQMF_SEGMENTATION_ALLOWED gives a message a GroupId too, but by
# itself it is one whole message.
MQMF_SEGMENTATION_ALLOWED = 0x01
MQMF_SEGMENT = 0x02
MQMF_LAST_SEGMENT = 0x04
MQMF_MSG_IN_GROUP = 0x08
MQMF_LAST_MSG_IN_GROUP = 0x10
GROUP_FLAGS = MQMF_MSG_IN_GROUP | MQMF_LAST_MSG_IN_GROUP
SEGMENT_FLAGS = MQMF_SEGMENT | MQMF_LAST_SEGMENT
UNIT_FLAGS = GROUP_FLAGS | SEGMENT_FLAGS
GROUP_ID_LENGTH = 24  # MQ_GROUP_ID_LENGTH


def in_unit(msg_flags: int | None) -> bool:
    """Whether a message with these MsgFlags is a member of a group or a segment."""
    return bool((msg_flags or 0) & UNIT_FLAGS)


def unit_name(group_id: bytes) -> str:
    """How a unit is named in ledger rows, reports and logs: its GroupId in hex."""
    return group_id.hex().upper()


@dataclass(frozen=True, slots=True)
class Part:
    """One physical message of a unit. ``length``: the bytes of the logical message it carries
    (what ``Offset`` counts: its data less an MQDLH a DLQ added); ``key`` names it in reasons."""

    key: str
    group_id: bytes
    seq: int
    offset: int
    flags: int
    length: int

    @property
    def position(self) -> tuple[int, int]:
        return self.seq, self.offset


def segmented(parts: Iterable[Part]) -> bool:
    return any(p.flags & SEGMENT_FLAGS for p in parts)


def label(part: Part, in_segments: bool) -> str:
    """``3`` for MsgSeqNumber 3, ``3@4096`` for its segment at Offset 4096."""
    return f"{part.seq}@{part.offset}" if in_segments else str(part.seq)


def numbers(values: Iterable[int]) -> str:
    """1, 2, 3, 5 as ``1-3, 5``."""
    spans: list[list[int]] = []
    for v in sorted(set(values)):
        if spans and v == spans[-1][1] + 1:
            spans[-1][1] = v
        else:
            spans.append([v, v])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def unit_problem(parts: Sequence[Part]) -> str | None:
    """Why ``parts`` (one GroupId's messages, any order) are not one whole unit, or None.
    ``incomplete: ...`` when members are missing (a later landing can bring them),
    ``contradictory: ...`` when they cannot all be one unit (twins, overlaps, two lasts)."""
    ordered = sorted(parts, key=lambda p: (p.position, p.key))
    short = [p for p in ordered if len(p.group_id) != GROUP_ID_LENGTH]
    if short:
        return (
            f"contradictory: GroupId of {len(short[0].group_id)} bytes, not {GROUP_ID_LENGTH} (message {short[0].key})"
        )
    in_segments = segmented(ordered)
    seen: dict[tuple[int, int], Part] = {}
    for p in ordered:
        twin = seen.get(p.position)
        if twin is not None:
            return f"contradictory: MsgSeqNumber {label(p, in_segments)} twice (messages {twin.key} and {p.key})"
        seen[p.position] = p
    logical: dict[int, list[Part]] = defaultdict(list)
    for p in ordered:
        logical[p.seq].append(p)
    if any(p.flags & GROUP_FLAGS for p in ordered):
        lasts = sorted({p.seq for p in ordered if p.flags & MQMF_LAST_MSG_IN_GROUP})
        if len(lasts) > 1:
            return f"contradictory: MsgSeqNumber {numbers(lasts)} are each flagged the last in the group"
        if not lasts:
            return (
                "incomplete: the last message of the group (MQMF_LAST_MSG_IN_GROUP) is not landed "
                f"(have MsgSeqNumber {numbers(logical)})"
            )
        last = lasts[0]
        beyond = [s for s in logical if s > last]
        if beyond:
            return f"contradictory: MsgSeqNumber {numbers(beyond)} after the last ({last})"
        missing = set(range(1, last + 1)) - set(logical)
        if missing:
            return f"incomplete: MsgSeqNumber {numbers(missing)} of 1-{last} not landed"
    elif sorted(logical) != [1]:
        return f"contradictory: a message in segments, not in a group, with MsgSeqNumber {numbers(logical)}"
    for seq, pieces in sorted(logical.items()):
        if not segmented(pieces):
            continue  # a whole message of the group (one: the twin check above)
        if any(not p.flags & SEGMENT_FLAGS for p in pieces):
            return f"contradictory: MsgSeqNumber {seq} is both a whole message and segments"
        ends = [p for p in pieces if p.flags & MQMF_LAST_SEGMENT]
        if len(ends) > 1:
            return f"contradictory: MsgSeqNumber {seq} has {len(ends)} segments flagged the last"
        expected = 0
        for p in pieces:  # in Offset order
            if p.offset > expected:
                return (
                    f"incomplete: bytes {expected}-{p.offset - 1} of MsgSeqNumber {seq} "
                    f"(a segment at Offset {expected}) not landed"
                )
            if p.offset < expected:
                return (
                    f"contradictory: the segment of MsgSeqNumber {seq} at Offset {p.offset} overlaps "
                    f"the one before it, which ends at {expected}"
                )
            expected = p.offset + p.length
        if not ends:
            return (
                f"incomplete: the last segment of MsgSeqNumber {seq} (MQMF_LAST_SEGMENT, from Offset "
                f"{expected}) not landed"
            )
        if ends[0] is not pieces[-1]:
            return (
                f"contradictory: the segment of MsgSeqNumber {seq} at Offset {pieces[-1].offset} comes "
                "after the one flagged last"
            )
    return None


def order_problem(parts_as_put: Sequence[Part]) -> str | None:
    """Where ``parts_as_put`` (one unit's messages in the order they were put) leave
    ``MsgSeqNumber``/``Offset`` order, or None."""
    in_segments = segmented(parts_as_put)
    for before, after in zip(parts_as_put, parts_as_put[1:]):
        if after.position < before.position:
            return f"MsgSeqNumber {label(after, in_segments)} put after {label(before, in_segments)}"
    return None
