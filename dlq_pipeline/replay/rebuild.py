"""What is put for a RETRY or FWD (docs/replay.md, "What is put"), and nothing more.

- FWD with HEADER(YES): the message exactly as it is on the DLQ, MQDLH included; the MQMD
  keeps Format ``MQDEAD``.
- RETRY, and FWD with HEADER(NO): the first 172 bytes (the MQDLH) are removed and the MQMD's
  Format, Encoding and CodedCharSetId are restored from the MQDLH's, which describe the data
  that follows it. Format keeps its 8 characters (blank padded).

Every other MQMD field is the original one (MsgId, CorrelId, identity and origin context,
Persistence, Priority, Expiry, Report, reply-to, group and segment fields). The data after the
MQDLH is never touched.

The MQMD's character fields are put back byte for byte: the ``messages`` table shows bytes
that are not UTF-8 as U+FFFD and keeps the exact ones beside (`tables.exact_md`), and a target
the rules took from such a field (``&REPLYQ``, ``&REPLYQM``) is opened by its exact name
(`exact_target`).

One refinement: an MQDLH CodedCharSetId of MQCCSI_INHERIT (-2) means "the same character set
as this header", i.e. the MQMD's CodedCharSetId; the queue manager itself replaces -2 with
that value when the message is put, so the restored MQMD carries the real CCSID.
"""

from __future__ import annotations

from typing import Protocol, cast

from dlq_pipeline.errors import DlqPipelineError
from dlq_pipeline.mq.dlh_decoder import dlh_restore_fields
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.mq.structures import DLH_LENGTH, MQCCSI_INHERIT
from dlq_pipeline.rules.matcher import resolve_name
from dlq_pipeline.rules.model import PUT_ACTIONS


class RebuildError(DlqPipelineError, ValueError):
    """The message cannot be put as the rules say (no usable MQDLH to strip)."""


class PutDecision(Protocol):
    """What `rebuild` reads of a decision: a `Decision` or a replay work item."""

    @property
    def action(self) -> str: ...

    @property
    def header(self) -> bool | None: ...


def keeps_header(decision: PutDecision) -> bool:
    """True when the message goes out with its MQDLH: FWD with HEADER(YES) (the default)."""
    return decision.action == "FWD" and decision.header is not False


def rebuild(md: MQMD, data: bytes, decision: PutDecision) -> tuple[MQMD, bytes]:
    """The (MQMD, data) to put for ``decision`` (anything with ``action`` and ``header``:
    a `Decision` or a replay work item). Raises RebuildError when an MQDLH must be removed
    but the data does not start with a usable one, and ValueError for DISCARD/IGNORE."""
    if decision.action not in PUT_ACTIONS:
        raise ValueError(f"{decision.action} puts nothing")
    data = bytes(data)
    if keeps_header(decision):
        return md, data
    problem, fields = dlh_restore_fields(data, md.encoding, md.ccsid)
    if problem:
        raise RebuildError(f"cannot remove the MQDLH: the data has no usable MQDLH ({problem})")
    dlh_format, dlh_encoding, dlh_ccsid = cast(tuple[str, int, int], fields)  # no problem: the fields were read
    ccsid = md.ccsid if dlh_ccsid == MQCCSI_INHERIT else dlh_ccsid
    restored = md.replace(format=dlh_format.ljust(8)[:8], encoding=dlh_encoding, ccsid=ccsid)
    return restored, data[DLH_LENGTH:]


def exact_target(decided: str | None, shown: str | None, exact: str | None) -> str | None:
    """The name to open for a ``decided`` target name: when the rules resolved it from a
    message field whose stored text (``shown``) differs from its exact bytes (``exact``:
    bytes that are not UTF-8, shown as U+FFFD), the same name resolved from those bytes.
    Decisions and the ledger hold names as Spark strings, readable; MQ must get the bytes
    the message carried (FWDQ(&REPLYQ) of a Latin-1 ReplyToQ). U+FFFD stands for bytes
    that are not known; the only ones known to show as that name are the field's."""
    if decided is None or shown is None or exact is None or shown == exact:
        return decided
    if decided == resolve_name(shown):
        return resolve_name(exact)
    return decided
