"""What each work item of a split dump reports for its rows' positions (`dumps.spark.read_item`,
no Spark): the newlines from the item's start up to each row, and in all its byte range, as
counting the file's bytes gives them, for dumps intact and damaged, split anywhere."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq_pipeline.dumps.plan import plan_work
from dlq_pipeline.dumps.spark import read_item
from tests.profiles import examples

from .test_dumpfile import FIXTURES, corrupted, dump_files


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dump_files() | corrupted((FIXTURES / "dmpmqmsg-options.dmp").read_bytes()), st.integers(1, 400))
def test_each_split_counts_the_newlines_before_every_row_and_in_its_range(tmp_path_factory, content, split):
    path = tmp_path_factory.mktemp("positions") / "d.dmp"
    path.write_bytes(content)
    assert_positions(content, plan_work([str(path)], split))


def test_the_options_fixture_split_in_many_places_positions_every_row():
    content = (FIXTURES / "dmpmqmsg-options.dmp").read_bytes()
    for split in (13, 64, 500):
        items = plan_work([str(FIXTURES / "dmpmqmsg-options.dmp")], split)
        assert len(items) > 1
        assert assert_positions(content, items) >= 3, split


def assert_positions(content: bytes, items) -> int:
    """Checks every row of ``items``; the number of rows with a position in a split file."""
    rows = 0
    for number, item in enumerate(items):
        for row in read_item(item, number=number, max_line_length=200):
            if item.splits == 1:
                assert row.get("newlines") is None  # a file read whole has its lines from the reader
            elif row["rec"] == "split":
                end = item.end if item.end is not None else len(content)
                assert row["newlines"] == content[item.start : end].count(b"\n")
            else:
                assert row["newlines"] == content[item.start : row["source_offset"]].count(b"\n"), row
                rows += 1
    return rows
