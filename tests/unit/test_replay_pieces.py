"""`replay.spark.whole_messages`: a replay task joins the pieces of each large message again."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dlq_pipeline.replay.spark import PIECE_COLUMN, whole_messages

messages = st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=40)), st.booleans()), max_size=12)


@given(messages, st.integers(min_value=1, max_value=9))
def test_the_pieces_of_each_message_join_back_into_its_row(cases, size):
    rows = [{"message_key": f"k{n}", "data": data, "has_message": flag} for n, (data, flag) in enumerate(cases)]
    cut = []
    for row in rows:
        data = row["data"]
        count = max(1, -(-len(data) // size)) if data is not None else 1
        for k in range(count):
            piece = data[k * size : (k + 1) * size] if data is not None else None
            cut.append({**row, "data": piece, PIECE_COLUMN: k})
    assert list(whole_messages(iter(cut))) == rows


def test_rows_without_pieces_pass_as_they_are():
    rows = [{"message_key": "a", "data": b"x"}, {"message_key": "a", "data": b"y"}]
    assert list(whole_messages(iter(rows))) == rows
