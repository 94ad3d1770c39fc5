"""Format sniffing and dispatch: every known kind of file goes to its reader, and anything
else becomes one clear RecordError rather than an exception."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq_pipeline.dumps.amqsbcg import read_amqsbcg
from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
from dlq_pipeline.dumps.records import DumpedMessage, RecordError
from dlq_pipeline.dumps.sources import SNIFF_BYTES, read_source, sniff
from tests.profiles import examples
from tests.support import REPO

FIXTURES = REPO / "tests" / "fixtures"


def write(tmp_path: Path, content: bytes, name: str = "f.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


@pytest.mark.parametrize(
    ("fixture", "kind"),
    [
        ("dmpmqmsg-options.dmp", "dmpmqmsg"),
        ("dmpmqmsg-age-listing.txt", "dmpmqmsg"),
        ("dmpmqmsg-summary.txt", "dmpmqmsg"),
        ("amqsbcg-old.txt", "amqsbcg"),
        ("amqsbcg-94.txt", "amqsbcg"),
    ],
)
def test_sniff_hand_made_fixtures(fixture, kind):
    assert sniff(FIXTURES / fixture) == kind


def test_sniff_real_dump_with_stdout_banner(real_fixtures):
    assert sniff(real_fixtures / "mq10-dmpmqmsg-stdout.dmp") == "dmpmqmsg"


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        (b"A VER 2\nX 00\n", "dmpmqmsg"),  # -dH: no header
        (b"\r\n\r\nN\r\nX 00\r\n", "dmpmqmsg"),
        (
            b" MQGET of message number 7, CompCode:0 Reason:0\n****Message descriptor****\n",
            "amqsbcg",
        ),  # a listing whose start was trimmed off
        (b"****Message descriptor****\n", "amqsbcg"),
        (b"", None),
        (b"   \n\n", None),
        (b"\x00\x01\x02DLH \x01\x00\x00\x00", None),
        (b"id,queue,reason\n1,DLQ,2053\n", None),
        (b"hello\nA VER 2\nX 00\n", None),  # an A line is only a start when it comes first
    ],
)
def test_sniff_content(tmp_path, content, kind):
    assert sniff(write(tmp_path, content)) == kind


def test_sniff_looks_only_at_the_start(tmp_path):
    content = b"x" * SNIFF_BYTES + b"\n* DMPMQMSG Version:9.4.0.0\n"
    assert sniff(write(tmp_path, content)) is None


def test_read_source_dispatches_to_the_right_reader(real_fixtures, tmp_path):
    for path, reader in [
        (real_fixtures / "mq10-dmpmqmsg-stdout.dmp", read_dump),
        (FIXTURES / "dmpmqmsg-options.dmp", read_dump),
        (FIXTURES / "amqsbcg-old.txt", read_amqsbcg),
        (FIXTURES / "amqsbcg-94.txt", read_amqsbcg),
    ]:
        assert list(read_source(path)) == list(reader(path)), path
        assert list(read_source(path, name="x")) == list(reader(path, name="x")), path


def test_read_source_rejects_listing_outputs_of_dmpmqmsg():
    [error] = read_source(FIXTURES / "dmpmqmsg-age-listing.txt")
    assert error.code == "not_a_message_dump"


def test_read_source_splits_dumps_and_reads_listings_whole():
    dump = FIXTURES / "dmpmqmsg-options.dmp"
    size = dump.stat().st_size
    halves = list(read_source(dump, end=size // 2)) + list(read_source(dump, start=size // 2))
    assert [r.md for r in halves] == [r.md for r in read_dump(dump)]
    listing = FIXTURES / "amqsbcg-94.txt"
    assert list(read_source(listing, end=10)) == list(read_amqsbcg(listing))
    assert list(read_source(listing, start=10)) == []


def test_empty_file_is_one_record_error(tmp_path):
    for content in (b"", b" \n\t\n"):
        path = write(tmp_path, content)
        assert list(read_source(path, name="in/empty.dmp")) == [
            RecordError(
                "in/empty.dmp", 1, 0, "empty_file", "the file is empty: neither a dmpmqmsg dump nor an amqsbcg listing"
            )
        ]
        assert list(read_source(path, start=5)) == []


def test_binary_garbage_is_one_record_error(tmp_path):
    path = write(tmp_path, bytes(range(256)) * 4)
    [error] = read_source(path)
    assert (error.file, error.line, error.offset, error.code) == (str(path), 1, 0, "unknown_format")
    assert "binary" in error.message
    assert error.snippet == bytes(range(32)).hex(" ")


def test_other_text_is_one_record_error_pointing_at_its_first_line(tmp_path):
    path = write(tmp_path, b"\n\n  queue,reason\n1,2053\n")
    [error] = read_source(path)
    assert (error.line, error.offset, error.code, error.snippet) == (3, 2, "unknown_format", "  queue,reason")


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.binary(max_size=600)
    | st.sampled_from(
        [
            (FIXTURES / "dmpmqmsg-options.dmp").read_bytes(),
            (FIXTURES / "amqsbcg-94.txt").read_bytes(),
        ]
    ).flatmap(
        lambda b: st.tuples(st.just(b), st.integers(0, len(b)), st.binary(max_size=8)).map(
            lambda t: t[0][: t[1]] + t[2] + t[0][t[1] :]
        )
    )
)
def test_any_bytes_give_records_never_exceptions(tmp_path, content):
    path = write(tmp_path, content, "fuzz.bin")
    records = list(read_source(path))
    assert all(isinstance(r, (DumpedMessage, RecordError)) for r in records)
    if sniff(path) is None:
        assert len(records) == 1 and records[0].code in ("empty_file", "unknown_format")


def test_path_like_and_str_paths(tmp_path):
    path = tmp_path / "copy.dmp"
    shutil.copy(FIXTURES / "dmpmqmsg-options.dmp", path)
    assert list(read_source(str(path))) == list(read_source(path))
