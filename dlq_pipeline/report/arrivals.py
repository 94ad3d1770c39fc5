"""When messages reached the dead-letter queue: a timeline in hour or day buckets, with
bursts flagged (pure, no Spark: `dlq_pipeline.report.spark` counts, this module shapes).

The failure this product exists for is a storm: a full queue fills the DLQ, channels
retry, the machine drowns. On a table of counts a storm is invisible; on a timeline it is
a burst. The burst rule is deliberately simple and robust to the burst itself (a mean and
standard deviation would be dragged up by the storm they should find):

    over every bucket from the first arrival to the last (empty buckets count as 0),
    m = median count, d = median absolute deviation from m;
    a bucket is a burst when its count >= max(MIN_BURST, 3 * m, m + 4 * d).

Adjacent burst buckets form one burst. Buckets are hours when the arrivals span at most
`HOURLY_SPAN`, else days.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable

HOURLY_SPAN = dt.timedelta(days=16)  # at most 384 hourly buckets; longer spans are shown by day
MIN_BURST = 10  # a bucket with fewer messages is never a burst, however quiet the rest
BURST_FACTOR = 3  # ... times the median
BURST_MADS = 4  # ... median absolute deviations above the median
TOP = 3  # reasons, queue managers and queues named per burst
WIDTHS = {"hour": dt.timedelta(hours=1), "day": dt.timedelta(days=1)}
RULE = (
    f"a bucket is a burst when its count >= max({MIN_BURST}, {BURST_FACTOR} x median, "
    f"median + {BURST_MADS} x MAD) over all buckets from first to last arrival (empty ones as 0)"
)
NO_DLH = "(no MQDLH)"  # the reason label of messages without a dead-letter header
UNKNOWN = "(unknown)"  # an origin queue manager that the message does not name


def bucket_width(first: dt.datetime, last: dt.datetime) -> str:
    """``"hour"`` when ``last - first`` is at most `HOURLY_SPAN`, else ``"day"``."""
    return "hour" if last - first <= HOURLY_SPAN else "day"


def bucket_start(when: dt.datetime, width: str) -> dt.datetime:
    """The start of the bucket holding ``when``."""
    if width == "hour":
        return when.replace(minute=0, second=0, microsecond=0)
    return when.replace(hour=0, minute=0, second=0, microsecond=0)


def threshold(counts: list[int]) -> tuple[float, float, float]:
    """(median, MAD, burst threshold) of the bucket counts (see the module's rule)."""
    if not counts:
        return 0.0, 0.0, float(MIN_BURST)
    m = float(statistics.median(counts))
    d = float(statistics.median(abs(c - m) for c in counts))
    return m, d, max(float(MIN_BURST), BURST_FACTOR * m, m + BURST_MADS * d)


def _iso(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _top(counter: Counter, key: str, limit: int = TOP) -> list[dict]:
    ranked = sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))[:limit]
    return [{key: k, "count": n} for k, n in ranked]


def timeline(rows: Iterable[dict], width: str | None = None) -> dict:
    """The arrivals section of the report from grouped counts.

    ``rows``: dicts with ``at`` (bucket or arrival time, naive UTC), ``reason`` (a name,
    `NO_DLH` for messages without a header), ``qmgr`` (originating queue manager),
    ``dest`` (``"QMGR/QUEUE"`` the message was meant for) and ``count``. ``width``: forced
    bucket width, else chosen from the span. Returns ``{"bucket", "rule", "median", "mad",
    "threshold", "series": [{start, count, by_reason, by_qmgr, burst}], "bursts": [...]}``.
    """
    rows = [r for r in rows if r.get("at") is not None and r.get("count")]
    if not rows:
        return {
            "bucket": width or "hour",
            "rule": RULE,
            "median": 0.0,
            "mad": 0.0,
            "threshold": float(MIN_BURST),
            "series": [],
            "bursts": [],
        }
    first, last = min(r["at"] for r in rows), max(r["at"] for r in rows)
    width = width or bucket_width(first, last)
    step = WIDTHS[width]
    totals: Counter = Counter()
    reasons: dict[dt.datetime, Counter] = defaultdict(Counter)
    qmgrs: dict[dt.datetime, Counter] = defaultdict(Counter)
    dests: dict[dt.datetime, Counter] = defaultdict(Counter)
    for r in rows:
        start = bucket_start(r["at"], width)
        totals[start] += r["count"]
        reasons[start][r["reason"]] += r["count"]
        qmgrs[start][r["qmgr"] or UNKNOWN] += r["count"]
        dests[start][r.get("dest") or ""] += r["count"]
    starts, at = [], bucket_start(first, width)
    while at <= last:
        starts.append(at)
        at += step
    counts = [totals.get(s, 0) for s in starts]
    median, mad, limit = threshold(counts)
    series = [
        {
            "start": _iso(s),
            "count": c,
            "by_reason": dict(sorted(reasons[s].items())),
            "by_qmgr": dict(sorted(qmgrs[s].items())),
            "burst": c >= limit,
        }
        for s, c in zip(starts, counts)
    ]
    bursts, run = [], []
    for s, c in zip(starts + [None], counts + [0]):
        if s is not None and c >= limit:
            run.append(s)
            continue
        if run:
            bursts.append(_burst(run, step, totals, reasons, qmgrs, dests, median))
            run = []
    return {
        "bucket": width,
        "rule": RULE,
        "median": median,
        "mad": mad,
        "threshold": limit,
        "series": series,
        "bursts": bursts,
    }


def _burst(starts, step, totals, reasons, qmgrs, dests, median) -> dict:
    why: Counter[str] = Counter()
    who: Counter[str] = Counter()
    where: Counter[str] = Counter()
    for s in starts:
        why.update(reasons[s])
        who.update(qmgrs[s])
        where.update(dests[s])
    count = sum(totals[s] for s in starts)
    return {
        "start": _iso(starts[0]),
        "end": _iso(starts[-1] + step),
        "buckets": len(starts),
        "hours": round(len(starts) * step.total_seconds() / 3600, 1),
        "count": count,
        "baseline_per_bucket": median,
        "peak": max(totals[s] for s in starts),
        "reasons": _top(why, "reason"),
        "qmgrs": _top(who, "qmgr"),
        "destinations": [{"dest": d["dest"], "count": d["count"]} for d in _top(where, "dest") if d["dest"]],
    }
