"""`observed_counts`: the decisions' counts from the aggregates their write observed, or None
when those do not add up (then classify counts with a job: the counts stay exact)."""

from __future__ import annotations

from dlq_pipeline.classify.spark import DecisionCounts, observed_counts


def _metrics(**values) -> dict:
    base = {
        "total": 0,
        "action_DISCARD": 0,
        "action_IGNORE": 0,
        "action_RETRY": 0,
        "action_FWD": 0,
        "ignored_with_reason": 0,
        "reason_no_dlh": 0,
        "reason_truncated": 0,
        "reason_no_match": 0,
        "reason_retries_exhausted": 0,
    }
    return {**base, **values}


def test_the_counts_are_the_actions_and_reasons_present():
    got = observed_counts(
        _metrics(
            total=10,
            action_FWD=4,
            action_IGNORE=5,
            action_DISCARD=1,
            ignored_with_reason=3,
            reason_no_dlh=2,
            reason_no_match=1,
        )
    )
    assert got == DecisionCounts(10, {"DISCARD": 1, "FWD": 4, "IGNORE": 5}, {"no_dlh": 2, "no_match": 1})
    assert got.puts_per_queue is None  # replay counts them itself where it needs them


def test_no_decisions_count_as_nothing():
    assert observed_counts(_metrics()) == DecisionCounts(0, {}, {})
    assert observed_counts(_metrics(total=None, ignored_with_reason=None)) == DecisionCounts(
        0, {}, {}
    )  # sums of no rows


def test_an_action_or_a_reason_outside_the_known_ones_leaves_the_count_to_a_job():
    assert observed_counts(_metrics(total=3, action_FWD=2)) is None
    assert observed_counts(_metrics(total=2, action_IGNORE=2, ignored_with_reason=2, reason_no_dlh=1)) is None
