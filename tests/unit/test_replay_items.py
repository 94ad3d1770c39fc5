"""A replay task's work items read a column at a time (`replay.spark.batch_items`, through
`arrow_items`) are those of reading its rows one by one (`row_to_item`), whatever the rows
hold: no message, null MQMD fields (MQMD defaults), exact bytes of character fields that are
not UTF-8 (`md_char_bytes`, and targets resolved from them), and pieces across batches."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from dlq_pipeline.mq.mqmd import MQMD_CHAR_LENGTHS
from dlq_pipeline.replay.spark import _MD_PLAN, PIECE_COLUMN, arrow_items, row_to_item
from dlq_pipeline.tables import CHAR_BYTES_COLUMN
from dlq_pipeline.warehouse.schemas import arrow_schema
from tests.profiles import examples

_DECISION = arrow_schema("decisions")
_MESSAGE = arrow_schema("messages")
# the columns `work_items` selects, typed as the tables type them
SCHEMA = pa.schema(
    [
        _DECISION.field(c)
        for c in (
            "message_key",
            "action",
            "rule_line",
            "attempt",
            "target_q",
            "target_qmgr",
            "header",
            "putaut",
            "source_file",
            "source_index",
        )
    ]
    + [pa.field("not_before_us", pa.int64())]
    + [_MESSAGE.field(column) for _, column, _ in _MD_PLAN]
    + [
        _MESSAGE.field(CHAR_BYTES_COLUMN),
        pa.field("data", pa.binary()),
        pa.field("truncated", pa.bool_()),
        pa.field("has_message", pa.bool_()),
        pa.field("unit", pa.string()),
        pa.field("unit_hold", pa.string()),
        pa.field("recorded_at_us", pa.int64()),
    ]
)

NOT_UTF8 = b"R\xc9PLY.Q"  # Latin-1: stored as U+FFFD, kept exactly in md_char_bytes


def md_value(column: str, default):
    """A stored MQMD column's value: null (the MQMD default is meant), or one of its type."""
    if isinstance(default, bool) or isinstance(default, int):
        return st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1))
    if isinstance(default, bytes):
        return st.one_of(st.none(), st.binary(min_size=len(default), max_size=len(default)))
    return st.one_of(st.none(), st.text(max_size=8).map(lambda t: t.ljust(len(default))))


@st.composite
def joined_rows(draw, index: int) -> dict:
    has = draw(st.booleans())
    row = {
        "message_key": f"key{index:04d}",
        "action": draw(st.sampled_from(["RETRY", "FWD", "DISCARD", "IGNORE"])),
        "rule_line": draw(st.one_of(st.none(), st.integers(1, 500))),
        "attempt": draw(st.one_of(st.none(), st.integers(1, 9))),
        "target_q": draw(st.sampled_from([None, "APP.Q"])),
        "target_qmgr": draw(st.sampled_from([None, "", "QMB"])),
        "header": draw(st.sampled_from([None, True, False])),
        "putaut": draw(st.sampled_from([None, "DEF", "CTX"])),
        "source_file": "f.dmp",
        "source_index": index,
        "not_before_us": draw(st.one_of(st.none(), st.integers(0, 2**52))),
        "data": draw(st.one_of(st.none(), st.binary(max_size=64))) if has else None,
        "truncated": draw(st.sampled_from([None, False, True])) if has else None,
        "has_message": has,
        CHAR_BYTES_COLUMN: None,
        "unit": draw(st.sampled_from([None, "414D5120"])),
        "unit_hold": draw(st.sampled_from([None, "group 414D5120 (2 messages here) incomplete"])),
        "recorded_at_us": draw(st.one_of(st.none(), st.integers(0, 2**52))) if has else None,
    }
    for _, column, default in _MD_PLAN:
        row[column] = draw(md_value(column, default)) if has else None
    if has and draw(st.booleans()):
        names = draw(st.lists(st.sampled_from(sorted(MQMD_CHAR_LENGTHS)), min_size=1, max_size=3, unique=True))
        row[CHAR_BYTES_COLUMN] = {n: NOT_UTF8.ljust(MQMD_CHAR_LENGTHS[n]) for n in names}
        if "reply_to_q" in names:  # FWDQ(&REPLYQ): the decided name is the field's stored text, resolved
            row["reply_to_q"] = NOT_UTF8.decode("utf-8", "replace").ljust(48)
            row["target_q"] = row["reply_to_q"].rstrip(" ")
    return row


@st.composite
def partitions(draw) -> tuple[list[dict], list[int]]:
    count = draw(st.integers(0, 12))
    rows = [draw(joined_rows(n)) for n in range(count)]
    cuts = sorted(draw(st.lists(st.integers(0, count), max_size=3)))
    return rows, cuts


def batches(rows: list[dict], cuts: list[int], schema: pa.Schema = SCHEMA) -> list[pa.RecordBatch]:
    """``rows`` as Arrow batches cut at ``cuts`` (empty batches included, as Spark may send)."""
    bounds = [0, *cuts, len(rows)]
    return [pa.RecordBatch.from_pylist(rows[a:b], schema=schema) for a, b in zip(bounds, bounds[1:])]


@settings(max_examples=examples(200), deadline=None)
@given(partitions())
def test_items_read_a_column_at_a_time_are_those_read_row_by_row(case):
    rows, cuts = case
    expected = [row_to_item(row) for row in rows]
    assert list(arrow_items(batches(rows, cuts))) == expected
    assert any(item.md is not None for item in expected) or not any(r["has_message"] for r in rows)


def message_to_put(index: int, data: bytes) -> dict:
    row = {column: None for column in SCHEMA.names}
    row.update(
        message_key=f"key{index:04d}",
        action="FWD",
        target_q="APP.Q",
        target_qmgr="",
        header=True,
        putaut="DEF",
        source_file="f.dmp",
        source_index=index,
        data=data,
        truncated=False,
        has_message=True,
        msg_id=bytes([index]) * 24,
        reply_to_q="REPLY".ljust(48),
    )
    return row


def test_a_message_whose_pieces_span_batches_is_one_item():
    rows = [message_to_put(n, data) for n, data in enumerate((b"abcdefgh", b"ij", b"klmnop"))]
    schema = SCHEMA.append(pa.field(PIECE_COLUMN, pa.int32()))
    cut = [
        {**row, "data": row["data"][k : k + 3], PIECE_COLUMN: k // 3}
        for row in rows
        for k in range(0, len(row["data"]), 3)
    ]
    assert len(cut) == 3 + 1 + 2
    items = list(arrow_items(batches(cut, [2, 4], schema)))  # the first message spans two batches
    assert items == [row_to_item(row) for row in rows]
    assert [item.data for item in items] == [b"abcdefgh", b"ij", b"klmnop"]


def test_no_batches_no_items():
    assert list(arrow_items(iter([]))) == []
