"""The MQMD Expiry a message has left when it is put again (docs/replay.md, "Expiry").

MQ counts ``Expiry`` (tenths of a second) down while a message sits on any queue, the DLQ
included. A dump or a drain records the remaining lifetime at one moment, the message's
``messages.recorded_at``; by the time replay puts it, that much less is left. `remaining_expiry`
is that arithmetic, pure: the recorded Expiry less the time elapsed since it was recorded, or
None when nothing is left (MQ would have discarded the message).
"""

from __future__ import annotations

import datetime as dt

from dlq_pipeline.runtime.clock import as_utc

MQEI_UNLIMITED = -1  # IBM's cmqc.h: the message never expires
_TENTH_US = 100_000  # microseconds in a tenth of a second, MQ's unit of Expiry
_MICROSECOND = dt.timedelta(microseconds=1)


def elapsed_micros(recorded_at: dt.datetime, now: dt.datetime) -> int:
    """Microseconds from ``recorded_at`` to ``now``; 0 when ``recorded_at`` is later than
    ``now`` (clocks that disagree). Naive datetimes are UTC."""
    return max((as_utc(now) - as_utc(recorded_at)) // _MICROSECOND, 0)


def remaining_expiry(expiry: int | None, recorded_at: dt.datetime | None, now: dt.datetime) -> int | None:
    """The MQMD Expiry to put at ``now`` for a message whose Expiry was ``expiry`` when it was
    recorded at ``recorded_at``, or None when its lifetime has run out by then: the message is
    expired and must not be put.

    ``expiry`` comes back unchanged when there is nothing to count down: None, -1
    (MQEI_UNLIMITED) or any other value <= 0, or no ``recorded_at`` (a row landed before the
    column existed). Otherwise the result is what is left, cut to whole tenths, so a lifetime
    is never lengthened, and 1, the least MQ takes, while less than a tenth is left. Naive
    datetimes are UTC (`dlq_pipeline.runtime.clock.as_utc`)."""
    if expiry is None or expiry <= 0 or recorded_at is None:
        return expiry
    left = expiry * _TENTH_US - elapsed_micros(recorded_at, now)
    return max(left // _TENTH_US, 1) if left > 0 else None
