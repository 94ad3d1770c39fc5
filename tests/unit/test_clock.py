"""`clock.epoch_micros`: exactly the inverse of `from_epoch_micros` (what Spark's
``unix_micros`` gives), a naive value taken as UTC whatever the host's time zone."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from dlq_pipeline.runtime.clock import UTC, epoch_micros, from_epoch_micros

micros = st.integers(min_value=-30_610_224_000 * 10**6, max_value=221_845_392_000 * 10**6)  # years 1000-9000


@given(micros)
def test_epoch_micros_inverts_from_epoch_micros_exactly(us):
    when = from_epoch_micros(us)
    assert epoch_micros(when) == us
    assert epoch_micros(when.replace(tzinfo=None)) == us  # naive: UTC
    assert epoch_micros(when.astimezone(dt.timezone(dt.timedelta(hours=-5)))) == us  # the same instant


def test_epoch_micros_of_a_known_instant():
    assert epoch_micros(dt.datetime(2026, 3, 1, 12, 0, 3, 250000, tzinfo=UTC)) == 1_772_366_403_250_000
