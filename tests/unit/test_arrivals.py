"""The arrivals timeline: bucket width from the span, dense buckets, the burst rule."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from dlq_pipeline.report.arrivals import MIN_BURST, RULE, bucket_width, threshold, timeline

T0 = dt.datetime(2026, 10, 1, tzinfo=dt.UTC)


def row(hours: float, count: int, reason="MQRC_Q_FULL", qmgr="CSQ1", dest="ORDQM01/ORDERS.IN"):
    return {"at": T0 + dt.timedelta(hours=hours), "reason": reason, "qmgr": qmgr, "dest": dest, "count": count}


def test_width_is_hours_up_to_sixteen_days_then_days():
    assert bucket_width(T0, T0 + dt.timedelta(days=16)) == "hour"
    assert bucket_width(T0, T0 + dt.timedelta(days=16, seconds=1)) == "day"


def test_threshold_is_the_strictest_of_floor_factor_and_mads():
    assert threshold([]) == (0.0, 0.0, MIN_BURST)
    assert threshold([0, 0, 0, 40]) == (0.0, 0.0, MIN_BURST)
    assert threshold([10, 10, 10, 10]) == (10.0, 0.0, 30.0)  # 3 x median
    assert threshold([10, 20, 30, 40, 50]) == (30.0, 10.0, 90.0)  # 3 x 30 = 90 > 30 + 4 x 10


def test_a_storm_on_a_trickle_is_one_burst_with_its_reason_origin_and_queue():
    rows = [row(h + 0.5, 5, reason="MQRC_UNKNOWN_OBJECT_NAME", qmgr="QMAIX01", dest="QM1/ORDRES.IN") for h in range(48)]
    rows += [row(20.2, 200), row(21.7, 300), row(22.1, 100, qmgr="QMAIX01")]
    found = timeline(rows)
    assert (found["bucket"], found["median"], found["threshold"], found["rule"]) == ("hour", 5.0, 15.0, RULE)
    assert len(found["series"]) == 48 and [s["start"] for s in found["series"][:2]] == [
        "2026-10-01T00:00:00Z",
        "2026-10-01T01:00:00Z",
    ]
    assert [s["start"] for s in found["series"] if s["burst"]] == [
        "2026-10-01T20:00:00Z",
        "2026-10-01T21:00:00Z",
        "2026-10-01T22:00:00Z",
    ]
    assert found["series"][21]["by_reason"] == {"MQRC_Q_FULL": 300, "MQRC_UNKNOWN_OBJECT_NAME": 5}
    assert found["bursts"] == [
        {
            "start": "2026-10-01T20:00:00Z",
            "end": "2026-10-01T23:00:00Z",
            "buckets": 3,
            "hours": 3.0,
            "count": 615,
            "baseline_per_bucket": 5.0,
            "peak": 305,
            "reasons": [{"reason": "MQRC_Q_FULL", "count": 600}, {"reason": "MQRC_UNKNOWN_OBJECT_NAME", "count": 15}],
            "qmgrs": [{"qmgr": "CSQ1", "count": 500}, {"qmgr": "QMAIX01", "count": 115}],
            "destinations": [{"dest": "ORDQM01/ORDERS.IN", "count": 600}, {"dest": "QM1/ORDRES.IN", "count": 15}],
        }
    ]


def test_empty_hours_count_as_zero_and_a_lone_small_bucket_is_no_burst():
    found = timeline([row(0, 3), row(30, MIN_BURST - 1)])
    assert [s["count"] for s in found["series"]] == [3] + [0] * 29 + [MIN_BURST - 1]
    assert found["bursts"] == [] and found["median"] == 0.0


def test_nothing_to_show():
    assert timeline([])["series"] == [] and timeline([])["bursts"] == []


def test_days_when_the_span_is_long():
    found = timeline([row(0, 1), row(24 * 40, 1)])
    assert found["bucket"] == "day" and len(found["series"]) == 41


@given(st.lists(st.tuples(st.integers(0, 24 * 20), st.integers(1, 50)), min_size=1, max_size=60))
def test_buckets_keep_every_message_and_bursts_are_the_flagged_buckets(points):
    found = timeline([row(h, n) for h, n in points])
    assert sum(s["count"] for s in found["series"]) == sum(n for _, n in points)
    assert all(s["burst"] == (s["count"] >= found["threshold"]) for s in found["series"])
    assert sum(b["buckets"] for b in found["bursts"]) == sum(s["burst"] for s in found["series"])
    assert sum(b["count"] for b in found["bursts"]) == sum(s["count"] for s in found["series"] if s["burst"])
