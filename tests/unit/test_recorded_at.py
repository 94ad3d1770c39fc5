"""When a dumped message was recorded (``messages.recorded_at``), without Spark: a dmpmqmsg
header's ``Created:`` stamp read as C's ``ctime()`` in a named zone (`dmpmqmsg.created_time`),
the header above each message in a file of several dumps concatenated, the file's
modification time where there is no stamp (`dumps.spark.recorded_micros`), and a split
dump's work items, which with `ingest.spark.header_bases` give every message what a whole
read gives it."""

from __future__ import annotations

import datetime as dt
import io
import os
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq_pipeline.dumps.dmpmqmsg import created_time
from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
from dlq_pipeline.dumps.plan import plan_work
from dlq_pipeline.dumps.records import DumpedMessage, DumpHeader
from dlq_pipeline.dumps.spark import read_item, recorded_micros
from dlq_pipeline.ingest.spark import header_bases
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.runtime.clock import UTC, epoch_micros, time_zone
from tests.profiles import examples

from .test_dumpfile import BAD_RECORDS, NOISE, dump_bytes

BERLIN = ZoneInfo("Europe/Berlin")


def utc(*fields) -> dt.datetime:
    return dt.datetime(*fields, tzinfo=UTC)


# --- the stamp --------------------------------------------------------------------------------


def test_a_ctime_stamp_is_the_wall_clock_time_of_the_zone_named():
    assert created_time("Tue Sep 22 02:34:33 2026", UTC) == utc(2026, 9, 22, 2, 34, 33)
    assert created_time("Tue Sep 22 02:34:33 2026", BERLIN) == utc(2026, 9, 22, 0, 34, 33)  # CEST, +2
    assert created_time("Tue Dec 22 02:34:33 2026", BERLIN) == utc(2026, 12, 22, 1, 34, 33)  # CET, +1
    assert created_time("Tue Sep 22 02:34:33 2026", ZoneInfo("America/New_York")) == utc(2026, 9, 22, 6, 34, 33)
    assert created_time("Tue Sep 22 02:34:33 2026", ZoneInfo("Asia/Kolkata")) == utc(2026, 9, 21, 21, 4, 33)


def test_the_day_is_space_padded_as_ctime_writes_it():
    assert created_time("Wed Sep  2 09:05:07 2026", UTC) == utc(2026, 9, 2, 9, 5, 7)
    assert created_time("Wed Sep 2 09:05:07 2026", UTC) == utc(2026, 9, 2, 9, 5, 7)
    assert created_time("Mon Mar  2 09:05:07 2026", UTC) == utc(2026, 3, 2, 9, 5, 7)


def test_a_time_in_a_daylight_saving_change_takes_the_offset_before_it():
    assert created_time("Sun Mar 29 02:30:00 2026", BERLIN) == utc(2026, 3, 29, 1, 30)  # the gap: still +1
    assert created_time("Sun Oct 25 02:30:00 2026", BERLIN) == utc(2026, 10, 25, 0, 30)  # twice: the first, +2


@pytest.mark.parametrize(
    "stamp",
    [
        "",
        "x",
        "2026-01-01 00:00:00",  # not ctime()'s
        "Tue Sep 22 02:34:33",  # no year
        "tue sep 22 02:34:33 2026",  # ctime() writes the names capitalised
        "Tue Sep 22 2:34:33 2026",
        "Mon Feb 30 00:00:00 2026",  # no such day
        "Mon Feb 29 00:00:00 2025",
        "Tue Sep 22 24:00:00 2026",
        "Tue Sep 22 02:60:00 2026",
        "Tue Sep 22 02:34:60 2026",  # a leap second: not a time datetime holds
        "Sat Jan  1 00:00:00 0000",
        "Tue Sep 22 02:34:33 2026 CEST",  # nothing may follow
        "Tue Sep 22 02:34:33 ２０２６",  # digits other than ASCII's
    ],
)
def test_a_stamp_that_is_not_a_ctime_time_names_no_instant(stamp):
    assert created_time(stamp, UTC) is None


def test_the_weekday_is_not_checked_against_the_date():
    assert created_time("Mon Sep 22 02:34:33 2026", UTC) == utc(2026, 9, 22, 2, 34, 33)


def test_an_instant_outside_the_years_a_datetime_holds_names_none():
    plus_nine, minus_five = ZoneInfo("Etc/GMT-9"), ZoneInfo("Etc/GMT+5")  # POSIX signs: UTC+9, UTC-5
    assert created_time("Mon Jan  1 00:30:00 0001", plus_nine) is None  # before year 1 in UTC
    assert created_time("Mon Jan  1 12:00:00 0001", plus_nine) == utc(1, 1, 1, 3, 0)
    assert created_time("Fri Dec 31 23:30:00 9999", minus_five) is None


def test_a_zone_is_an_iana_name():
    assert time_zone("Europe/Berlin") == BERLIN
    for bad in ("", "Mars/Olympus", "Europe", "+02:00", "utc ", "../etc/passwd"):
        with pytest.raises(ValueError, match="is not an IANA time zone name"):
            time_zone(bad)


def test_without_a_stamp_a_message_was_recorded_when_its_file_was_modified():
    modified = 1_790_000_000_123_456
    assert recorded_micros(None, UTC, modified) == modified  # a listing, a -dH dump
    assert recorded_micros(DumpHeader(0, ""), UTC, modified) == modified  # a header without Created:
    assert recorded_micros(DumpHeader(0, "2026-01-01 00:00:00"), UTC, modified) == modified
    assert recorded_micros(DumpHeader(0, "Tue Sep 22 02:34:33 2026"), BERLIN, modified) == epoch_micros(
        utc(2026, 9, 22, 0, 34, 33)
    )
    assert recorded_micros(None, UTC, None) is None  # a store that lists no times


# --- the header above each message ------------------------------------------------------------

STAMPS = ["Tue Sep 22 02:34:33 2026", "Wed Sep  2 09:05:07 2026", "Sun Mar 29 02:30:00 2026", "x", ""]


def header_line(stamp: str, tool: str = "DMPMQMSG") -> bytes:
    return f"* {tool} Version:9.4.0.0 Created:{stamp}\n".encode() if stamp else f"* {tool} Version:8.0\n".encode()


@st.composite
def concatenated_dumps(draw) -> bytes:
    """The output of several dmpmqmsg runs in one file: each run's header (stamps of every
    kind), its messages, bad records, noise; headers also before the first message and
    back to back; CRLF; a first run written without a header (-dH)."""
    parts = []
    if draw(st.booleans()):
        parts.append(header_line(draw(st.sampled_from(STAMPS)), draw(st.sampled_from(["DMPMQMSG", "QLOAD"]))))
        parts.append(b"* Qmgr  = QM1\n\n")
    for _ in range(draw(st.integers(0, 8))):
        choice = draw(st.integers(0, 5))
        if choice == 0:
            parts.append(draw(st.sampled_from(BAD_RECORDS)))
        elif choice == 1:
            parts.append(header_line(draw(st.sampled_from(STAMPS))) + draw(st.sampled_from([b"", b"\n"])))
        else:
            md = MQMD(priority=draw(st.integers(0, 9)))
            text = dump_bytes([(md, draw(st.binary(max_size=30)))], hex_width=draw(st.integers(2, 12)))
            parts.append(text.split(b"\n\n", 1)[1])  # the message without its header
        if draw(st.booleans()):
            parts.append(draw(st.sampled_from(NOISE)) + b"\n")
    content = b"".join(parts)
    if draw(st.booleans()):
        content = content.replace(b"\n", b"\r\n")
    return content


def header_lines(content: bytes) -> list[tuple[int, bytes]]:
    """(offset, line) of each line of ``content`` that is a dmpmqmsg header line."""
    found, offset = [], 0
    for line in content.split(b"\n"):
        if line.startswith((b"* DMPMQMSG Version:", b"* QLOAD Version:")):
            found.append((offset, line))
        offset += len(line) + 1
    return found


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(concatenated_dumps())
def test_each_message_is_under_the_last_header_line_before_it(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("headers") / "d.dmp"
    path.write_bytes(content)
    passed: list[DumpHeader] = []
    messages = [r for r in read_dump(path, max_line_length=120, headers=passed) if isinstance(r, DumpedMessage)]
    lines = header_lines(content)
    assert [h.offset for h in passed] == [o for o, _ in lines][: len(passed)]  # in file order, as read
    if messages:
        assert {o for o, _ in lines if o < messages[-1].offset} <= {h.offset for h in passed}
    for m in messages:
        above = [(o, line) for o, line in lines if o < m.offset]
        if not above:
            assert m.header is None
            continue
        offset, line = above[-1]
        assert m.header is not None and m.header.offset == offset
        stamp = line.rstrip(b"\r").partition(b" Created:")[2].strip().decode()
        assert m.header.created == stamp


def test_a_dump_without_a_header_has_no_header_above_its_messages():
    content = dump_bytes([(MQMD(), b"a"), (MQMD(), b"b")]).split(b"\n\n", 1)[1]
    assert [r.header for r in read_dump(io.BytesIO(content))] == [None, None]


def test_two_headers_before_the_first_message_leave_it_under_the_second(tmp_path):
    path = tmp_path / "d.dmp"
    body = dump_bytes([(MQMD(), b"a")]).split(b"\n\n", 1)[1]
    path.write_bytes(header_line(STAMPS[0]) + b"\n" + header_line(STAMPS[1]) + b"\n" + body)
    [message] = read_dump(path)
    assert message.header == DumpHeader(len(header_line(STAMPS[0])) + 1, STAMPS[1])


# --- split work items ---------------------------------------------------------------------------


def resolved(rows_by_item: dict[int, list[dict]]) -> dict[int, int | None]:
    """Each message's recorded_at (by offset) as ingest gives it: its task's value, or the
    header an earlier range passed (`header_bases`), by the rule `ingest.spark._positioned`
    applies in Spark."""
    summary = [
        {**row, "recorded": row["recorded_at"]}
        for rows in rows_by_item.values()
        for row in rows
        if row["rec"] == "split"
    ]
    bases = header_bases(summary)
    out = {}
    for item, rows in rows_by_item.items():
        for row in rows:
            if row["rec"] != "message":
                continue
            later = bases.get(item)
            under_later = later is not None and later[0] > (
                row["header_offset"] if row["header_offset"] is not None else -1
            )
            out[row["source_offset"]] = later[1] if under_later and later else row["recorded_at"]
    return out


def item_rows(path, split_bytes: int, zone: str) -> dict[int, list[dict]]:
    return {
        number: list(read_item(item, number=number, max_line_length=120, dump_time_zone=zone))
        for number, item in enumerate(plan_work([str(path)], split_bytes))
    }


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(concatenated_dumps(), st.integers(1, 400), st.sampled_from(["UTC", "Europe/Berlin", "Asia/Kolkata"]))
def test_a_split_dump_records_every_message_as_a_whole_read_does(tmp_path_factory, content, split, zone):
    path = tmp_path_factory.mktemp("splits") / "d.dmp"
    path.write_bytes(content)
    os.utime(path, ns=(1_790_000_000_123_456_000, 1_790_000_000_123_456_000))
    whole = resolved(item_rows(path, 1 << 30, zone))
    assert resolved(item_rows(path, split, zone)) == whole
    zone_info = ZoneInfo(zone)
    for m in read_dump(path, max_line_length=120):
        if isinstance(m, DumpedMessage):
            stamp = created_time(m.header.created, zone_info) if m.header else None
            assert whole[m.offset] == (epoch_micros(stamp) if stamp else 1_790_000_000_123_456)


def report(split: int, item: int, header_offset: int | None, recorded: int | None, path: str = "f") -> dict:
    return {
        "rec": "split",
        "source_file": path,
        "split": split,
        "splits": 3,
        "item": item,
        "header_offset": header_offset,
        "recorded": recorded,
    }


def test_a_range_is_put_under_the_latest_header_the_ranges_before_it_passed():
    """A second run's header at byte 900, read by the first range; the ranges after it know
    only the prologue's (byte 0), so their records before a header of their own are under it."""
    summary = [report(0, 4, 900, 2), report(1, 5, 0, 1), report(2, 6, 0, 1)]
    assert header_bases(summary) == {5: (900, 2), 6: (900, 2)}
    assert header_bases(list(reversed(summary))) == {5: (900, 2), 6: (900, 2)}  # file order, not row order
    # a later range with a header of its own puts the ranges after it under that one
    assert header_bases([report(0, 0, 0, 1), report(1, 1, 700, None), report(2, 2, 0, 1)]) == {
        1: (0, 1),
        2: (700, None),  # a stamp that names no time, in a file of unknown modification time
    }


def test_a_file_whose_ranges_know_one_header_needs_nothing_put_right():
    assert header_bases([report(0, 0, 0, 1), report(1, 1, 0, 1), report(2, 2, 0, 1)]) == {}
    assert header_bases([report(0, 0, None, None), report(1, 1, None, None), report(2, 2, None, None)]) == {}
    whole = {**report(0, 3, 0, 1, "g"), "splits": 1}  # a file read whole needs no base
    assert header_bases([whole]) == {}
