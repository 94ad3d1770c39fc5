"""Time: every timestamp the pipeline writes is an instant in UTC, whatever the host's time zone.

PySpark turns a *naive* ``datetime`` into a Spark timestamp with the Python process's local
time zone (``time.mktime``), and turns a timestamp it reads back into a naive datetime in
that same local zone. On a host whose ``TZ`` is not UTC, naive "UTC" datetimes would be
stored hours off. So the pipeline only hands Spark *aware* UTC datetimes (converted with
``calendar.timegm``: no local zone involved), and brings stored timestamps back to Python as
epoch microseconds (``unix_micros``), never as Spark's naive local datetimes.

Naive datetimes given to the library (``now=``, ``landed_at=``) are taken as UTC.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import overload

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


def utc_now() -> dt.datetime:
    """Now, aware, in UTC."""
    return dt.datetime.now(UTC)


@overload
def as_utc(value: dt.datetime) -> dt.datetime: ...
@overload
def as_utc(value: None) -> None: ...
def as_utc(value: dt.datetime | None) -> dt.datetime | None:
    """``value`` as an aware UTC datetime; a naive one is taken as UTC. None stays None."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def from_epoch(seconds: float) -> dt.datetime:
    """Aware UTC datetime of a ``time.time()`` value."""
    return dt.datetime.fromtimestamp(seconds, UTC)


def from_epoch_micros(micros: int | None) -> dt.datetime | None:
    """Aware UTC datetime of Spark's ``unix_micros(timestamp)`` (exact, no local zone)."""
    return None if micros is None else EPOCH + dt.timedelta(microseconds=int(micros))


def epoch_micros(value: dt.datetime) -> int:
    """Epoch microseconds of ``value`` (a naive value is UTC), exactly: the inverse of
    `from_epoch_micros`, what Spark's ``unix_micros`` gives for the same instant."""
    return (as_utc(value) - EPOCH) // _MICROSECOND


_MICROSECOND = dt.timedelta(microseconds=1)


def time_zone(name: str) -> dt.tzinfo:
    """The IANA time zone ``name`` (``"Europe/Berlin"``, ``"UTC"``), for wall-clock times that
    name no zone of their own; ValueError naming ``name`` when there is no such zone."""
    try:
        return zoneinfo.ZoneInfo(name)
    except (KeyError, ValueError, OSError):  # not found, not a zone key, a directory of zones
        raise ValueError(f"{name!r} is not an IANA time zone name such as 'Europe/Berlin' or 'UTC'") from None


def iso_z(value: dt.datetime) -> str:
    """``2026-03-01T12:00:03.250000Z``: ISO 8601 in UTC with a Z (a naive value is UTC)."""
    return as_utc(value).replace(tzinfo=None).isoformat() + "Z"
