"""`replay.expiry.remaining_expiry`: the Expiry a message has left when it is put, counted
down from when its MQMD was recorded and cut to whole tenths of a second; None once it has
run out."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from dlq_pipeline.replay.expiry import MQEI_UNLIMITED, elapsed_micros, remaining_expiry
from dlq_pipeline.runtime.clock import UTC
from tests.profiles import examples

RECORDED = dt.datetime(2026, 9, 22, 2, 34, 33, tzinfo=UTC)


def at(seconds: float) -> dt.datetime:
    return RECORDED + dt.timedelta(seconds=seconds)


def test_what_is_left_is_cut_to_whole_tenths():
    assert remaining_expiry(600, RECORDED, at(0)) == 600
    assert remaining_expiry(600, RECORDED, at(0.000001)) == 599  # never lengthened: less than 600 is left
    assert remaining_expiry(600, RECORDED, at(0.1)) == 599
    assert remaining_expiry(600, RECORDED, at(12.34)) == 476
    assert remaining_expiry(600, RECORDED, at(59.9)) == 1  # the last tenth left
    assert remaining_expiry(600, RECORDED, at(59.95)) == 1  # half a tenth: the least MQ takes


def test_a_lifetime_that_has_run_out_is_none():
    assert remaining_expiry(600, RECORDED, at(60)) is None
    assert remaining_expiry(600, RECORDED, at(86_400 * 3)) is None
    assert remaining_expiry(1, RECORDED, at(0.1)) is None


def test_nothing_to_count_down_leaves_the_expiry_as_it_is():
    later = at(86_400)
    assert remaining_expiry(MQEI_UNLIMITED, RECORDED, later) == -1
    assert remaining_expiry(0, RECORDED, later) == 0
    assert remaining_expiry(-7, RECORDED, later) == -7
    assert remaining_expiry(None, RECORDED, later) is None
    assert remaining_expiry(600, None, later) == 600  # landed before recorded_at existed


def test_a_recorded_time_in_the_future_elapses_nothing():
    assert remaining_expiry(600, at(30), RECORDED) == 600
    assert elapsed_micros(at(30), RECORDED) == 0


def test_naive_datetimes_are_utc_and_zones_do_not_matter():
    berlin = dt.timezone(dt.timedelta(hours=2))
    naive = RECORDED.replace(tzinfo=None)
    assert remaining_expiry(600, naive, at(10)) == 500
    assert remaining_expiry(600, RECORDED.astimezone(berlin), at(10).replace(tzinfo=None)) == 500


instants = st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2100, 1, 1), timezones=st.just(UTC))
offsets = st.timedeltas(min_value=dt.timedelta(hours=-14), max_value=dt.timedelta(hours=14))


@settings(max_examples=examples(300))
@given(
    expiry=st.integers(-(2**31), 2**31 - 1),
    recorded=instants,
    elapsed=st.timedeltas(min_value=dt.timedelta(days=-3), max_value=dt.timedelta(days=400)),
    shift=offsets,
)
def test_the_remaining_expiry_is_the_recorded_one_less_the_elapsed_tenths(expiry, recorded, elapsed, shift):
    now = recorded + elapsed
    got = remaining_expiry(expiry, recorded, now)
    left = expiry * 100_000 - max(elapsed // dt.timedelta(microseconds=1), 0)
    if expiry <= 0:
        assert got == expiry
    elif left <= 0:
        assert got is None
    else:
        assert got == max(left // 100_000, 1) and 1 <= got <= expiry and (got - 1) * 100_000 < left
    # the same instants in another zone, or naive in UTC, give the same answer
    zone = dt.timezone(shift)
    assert remaining_expiry(expiry, recorded.astimezone(zone), now.replace(tzinfo=None)) == got


@settings(max_examples=examples(200))
@given(expiry=st.integers(1, 2**31 - 1), recorded=instants, first=st.integers(0, 10**12), more=st.integers(0, 10**12))
def test_a_later_put_never_has_more_left(expiry, recorded, first, more):
    sooner = recorded + dt.timedelta(microseconds=first)
    later = sooner + dt.timedelta(microseconds=more)
    before, after = remaining_expiry(expiry, recorded, sooner), remaining_expiry(expiry, recorded, later)
    if before is None:
        assert after is None
    elif after is not None:
        assert after <= before
