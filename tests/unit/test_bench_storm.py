"""The Q_FULL storm benchmark's pure helpers and its input (benchmarks/storm.py): the dump is
mostly the storm and averages the payload asked for, the sample is spread over it, the rules
retry the storm to its queue, the disk plan and the extrapolation say what they should."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

from benchmarks.common import SIZES, Sizes, with_overrides
from benchmarks.report import storm_lines
from benchmarks.storm import (
    DUMP_HEX_FACTOR,
    DUMP_MESSAGE_BYTES,
    INGEST_DISK_FACTOR,
    REPLAY_DISK_FACTOR,
    STORM,
    STORM_RULES,
    disk_plan,
    extrapolated,
    sample_positions,
    sized,
    storm_dump,
    storm_queues,
)
from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
from dlq_pipeline.mq.dlh_decoder import decode_dlh
from dlq_pipeline.mq.structures import DLH_LENGTH
from dlq_pipeline.rules.matcher import decide
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.rules.view import match_view


def test_sized_cuts_or_grows_by_repeating_the_body_and_keeps_the_headers():
    head, body = b"H" * 8, b"abc"
    assert sized(head + body, 20, head=8) == head + b"abcabcabcabc"
    assert sized(head + body, 9, head=8) == head + b"a"
    assert sized(head + body, 4, head=8) == head  # never into the headers
    assert sized(head + body, 4, head=8, cut=False) == head + body  # only ever grown
    assert sized(b"xy", 5) == b"xyxyx"
    assert sized(b"", 3) == b"   "
    assert len(sized(b"z" * 10, 10_000, head=2)) == 10_000


def test_the_sample_is_spread_evenly_over_the_whole_dlq():
    assert sample_positions(10, 5) == [0, 2, 4, 6, 8]
    assert sample_positions(1_000_000, 5_000)[-1] == 999_800
    assert sample_positions(3, 10) == [0, 1, 2]
    picks = sample_positions(20_000, 2_000)
    assert len(set(picks)) == 2_000 and picks == sorted(picks)


def test_the_storms_queue_has_room_for_a_share_of_the_storm():
    assert storm_queues(170) == {"ORDQM01:ORDERS.IN": {"maxdepth": 85}}
    assert storm_queues(850_000)["ORDQM01:ORDERS.IN"]["maxdepth"] == 425_000
    assert storm_queues(1, room=0.1)["ORDQM01:ORDERS.IN"]["maxdepth"] == 1  # a queue holds at least one


def test_the_rules_retry_the_storm_to_its_queue_and_forward_or_ignore_the_rest():
    from dlq_pipeline.dumps.generator import generate

    table = parse_rules(STORM_RULES, "<storm>")
    assert table.ok and [r.action for r in table.rules] == ["RETRY", "IGNORE", "FWD"]
    assert all(len(line) <= 72 for line in STORM_RULES.splitlines())
    seen = set()
    for g in generate(600, seed=5, max_size=4096, storms=(STORM,)):
        d = decide(table, match_view(g.message.md, g.message.data))
        if g.storm:
            assert (d.action, d.target_q, d.target_qmgr) == ("RETRY", "ORDERS.IN", "ORDQM01")
        seen.add(d.action)
    assert seen == {"RETRY", "IGNORE", "FWD"}


def test_the_storm_dump_is_mostly_the_storm_averages_the_payload_and_is_reused(tmp_path):
    made = storm_dump(tmp_path / "in", 400, 2048, 40, seed=3)
    assert not made["cached"] and made["messages"] == 400 and made["sample_messages"] == 40
    assert abs(made["storm_messages"] - 340) < 4 * 340**0.5
    dump = list(read_dump(made["dump"]))
    assert len(dump) == 400
    lengths = [len(m.data) for m in dump]
    assert made["mean_payload_bytes"] == round(statistics.mean(lengths))
    assert abs(statistics.mean(lengths) - 2048) < 0.1 * 2048
    assert max(lengths) <= 3 * 2048 // 2 + 4096  # grown to at most 1.5x, or a header chain's own size
    storm = [m for m in dump if m.data[:4] in (b"DLH ", b"\xc4\xd3\xc8\x40")]
    assert decode_dlh(storm[0].data[:DLH_LENGTH], storm[0].md.encoding, storm[0].md.ccsid, storm[0].md.format)
    # the sample: the same messages, spread over the dump
    sample = list(read_dump(made["sample"]))
    assert [m.md.msg_id for m in sample] == [dump[i].md.msg_id for i in sample_positions(400, 40)]
    assert [m.data for m in sample] == [dump[i].data for i in sample_positions(400, 40)]
    retried = [decide(parse_rules(STORM_RULES), match_view(m.md, m.data)) for m in sample]
    to_storm = sum((d.action, d.target_q, d.target_qmgr) == ("RETRY", "ORDERS.IN", "ORDQM01") for d in retried)
    assert 25 <= made["sample_storm_messages"] <= to_storm  # the trickle may have a few for that queue too
    # made once: the next run reuses it; other sizes make it again
    again = storm_dump(tmp_path / "in", 400, 2048, 40, seed=3)
    assert again["cached"] and {**again, "cached": False} == made
    assert not storm_dump(tmp_path / "in", 300, 2048, 40, seed=3)["cached"]


def test_the_dump_is_kept_when_dump_and_run_fit_else_deleted_once_landed_else_not_run():
    n, payload = 1_000_000, 2048
    dump = round(n * (DUMP_HEX_FACTOR * payload + DUMP_MESSAGE_BYTES))
    keep = dump + round(REPLAY_DISK_FACTOR * n * payload)
    least = max(dump + round(INGEST_DISK_FACTOR * n * payload), round(REPLAY_DISK_FACTOR * n * payload))
    plan = disk_plan(keep, n, payload, dump_present=False)
    assert (plan["run"], plan["delete_dump_when_landed"], plan["need_bytes"]) == (True, False, keep)
    plan = disk_plan(least, n, payload, dump_present=False)
    assert (plan["run"], plan["delete_dump_when_landed"], plan["need_bytes"]) == (True, True, least)
    plan = disk_plan(least - 1, n, payload, dump_present=False)
    assert (plan["run"], plan["need_bytes"]) == (False, least)
    # a dump already made already takes its room
    plan = disk_plan(keep - dump, n, payload, dump_present=True)
    assert (plan["run"], plan["delete_dump_when_landed"], plan["dump_to_write_bytes"]) == (True, False, 0)


def test_the_reference_is_extrapolated_linearly_from_its_sample():
    got = extrapolated(12.5, 5_000, 1_000_000)
    assert got == {
        "s_per_message": 0.0025,
        "extrapolated_s": 2500.0,
        "extrapolated_from": 5_000,
        "extrapolated_to": 1_000_000,
    }


def test_the_storm_sizes_of_each_mode_and_their_defaults():
    assert [(SIZES[m].storm_messages, SIZES[m].storm_payload_bytes) for m in ("tiny", "quick", "full")] == [
        (200, 2048),
        (20_000, 2048),
        (1_000_000, 2048),
    ]
    assert SIZES["full"].storm_reference_messages == 5_000
    bare = Sizes("x", 1, 1, 1, 2048, 1, 1, (2,), 1, 1, (1,), (1,), 1, 1, 1, 1)  # no storm: not run
    assert (bare.storm_messages, bare.storm_payload_bytes) == (0, 2048)
    assert with_overrides(SIZES["tiny"], ["storm_messages=50"]).storm_messages == 50


def _doc(**run) -> dict:
    return {
        "messages": 200,
        "heap": "2g",
        "latency_ms": {"put": 0.2},
        "storm": {"reason": 2053, "queue": "ORDERS.IN", "qmgr": "ORDQM01", "room": 0.5, "maxdepth": 85},
        "input": {"storm_messages": 170, "mean_payload_bytes": 2070, "dump_bytes": 1_010_041, "generated_per_s": 4153},
        "reference": {
            "messages": 100,
            "storm_messages": 85,
            "maxdepth": 42,
            "run_s": 0.25,
            "outcomes": {"RETRY": 42, "failed": 43},
            **extrapolated(0.25, 100, 200),
        },
        "run": run,
        "reference_over_run": 0.02,
    }


def test_the_report_gives_the_ratio_the_time_the_peak_and_the_outcomes():
    run = {
        "wall_s": 22.8,
        "seconds": 14.9,
        "landed": 200,
        "durations": {"ingest": 6.1, "replay": 3.6},
        "outcomes": {"delivered": 107, "failed": 85, "ignored": 8},
        "peak_rss_mb": {"jvm": 1389.2, "python_workers": 376.7},  # the JVM counted twice once
        "peak_hwm_one_process_mb": {"jvm": 694.6, "python_workers": 164.9},
        "storm_queue": {
            "outcomes": {"delivered": 85, "failed": 85},
            "failed_q_full": 85,
            "deferred_by_breaker": 0,
            "depth": 85,
            "maxdepth": 85,
        },
    }
    text = "\n".join(storm_lines(_doc(**run)))
    assert "| `run`, fresh process, 2g heap | 200 | 22.80 |" in text
    assert "**extrapolated** linearly from 100 evenly spread messages" in text
    assert "**0.02x** the run's time" in text and "**694.60 MB**" in text
    assert "add up to the 200 messages landed" in text
    failed = "\n".join(storm_lines(_doc(error="java.lang.OutOfMemoryError: Java heap space")))
    assert "`run` **failed**: java.lang.OutOfMemoryError" in failed and "sequential reference, sample" in failed


@pytest.mark.parametrize("share", [0.0, 1.0])
def test_any_storm_share_is_a_valid_generator_option(share):
    from dlq_pipeline.dumps.generator import generate

    storm = dataclasses.replace(STORM, share=share)
    made = [g.storm for g in generate(200, seed=1, max_size=2048, storms=(storm,))]
    assert made.count("q_full") == (0 if share == 0 else 200)
