"""Placing target queues on replay connections by size (`dlq_pipeline.replay.placement`)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from dlq_pipeline.replay.placement import place_queues, slot_values, spark_int_hash


def test_spark_int_hash_is_sparks_murmur3():
    # Spark 4.2's answer to SELECT hash(0), hash(1), hash(42), hash(-1), hash(2147483647), hash(-2147483648)
    # (tests/spark/test_replay.py checks the partitions themselves on the Spark installed)
    assert [spark_int_hash(v) for v in (0, 1, 42, -1, 2**31 - 1, -(2**31))] == [
        933211791,
        -559580957,
        29417773,
        -1604776387,
        133916647,
        723455942,
    ]


def test_slot_values_hash_to_their_own_partition():
    for n in (1, 2, 3, 4, 8, 16, 64):
        slots = slot_values(n)
        assert [spark_int_hash(v) % n for v in slots] == list(range(n))
        assert len(set(slots)) == n


def test_large_queues_get_connections_of_their_own():
    # the benchmark's shape: a few large queues of the local queue manager, many small ones
    puts = {("", "ADDRESS"): 1012, ("", "REALLY.DEAD"): 754, ("ORDQM01", "ORDERS.IN"): 654, ("", "SECURITY"): 369}
    puts.update({("", f"SMALL.{i}"): 5 for i in range(40)})
    placed = place_queues(puts, 4, 4)
    big = [placed[k] for k in (("", "ADDRESS"), ("", "REALLY.DEAD"), ("ORDQM01", "ORDERS.IN"), ("", "SECURITY"))]
    assert sorted(big) == [0, 1, 2, 3]
    load = Counter()
    for key, p in placed.items():
        load[p] += puts[key]
    assert max(load.values()) == 1012  # the largest queue alone bounds it


def test_one_queue_manager_uses_at_most_per_qmgr_connections():
    puts = {("", f"Q{i}"): 100 - i for i in range(20)} | {("OTHER", f"R{i}"): 10 for i in range(5)}
    placed = place_queues(puts, 8, 3)
    assert len({p for (m, _), p in placed.items() if m == ""}) == 3
    assert len({p for (m, _), p in placed.items() if m == "OTHER"}) <= 3


@given(
    st.dictionaries(
        st.tuples(st.sampled_from(["", "QM1", "QM2"]), st.text(max_size=4)), st.integers(0, 1000), max_size=30
    ),
    st.integers(1, 8),
    st.integers(1, 8),
)
def test_placement_is_a_deterministic_function_of_the_counts(puts, partitions, per_qmgr):
    placed = place_queues(puts, partitions, per_qmgr)
    assert set(placed) == set(puts)
    assert all(0 <= p < partitions for p in placed.values())
    for qmgr in {m for m, _ in puts}:
        assert len({p for (m, _), p in placed.items() if m == qmgr}) <= min(per_qmgr, partitions)
    assert place_queues(dict(reversed(list(puts.items()))), partitions, per_qmgr) == placed
    # largest-first greedy: no partition holds more than the mean plus the largest queue
    if per_qmgr >= partitions and puts:
        load = Counter()
        for key, p in placed.items():
            load[p] += puts[key]
        assert max(load.values()) <= sum(puts.values()) / partitions + max(puts.values())
