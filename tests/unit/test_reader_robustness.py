"""The readers against hostile numbers and lines: numbers out of range, the size limit's
error naming the line that crosses it, `inspect` applying the limit. Property tests: no
reader raises, whatever number or garbage line a file holds."""

from __future__ import annotations

import io
import json
import re

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq_pipeline.cli import cli
from dlq_pipeline.dumps.amqsbcg import read_amqsbcg
from dlq_pipeline.dumps.dmpmqmsg_reader import mqlong, read_dump
from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.dumps.records import DumpedMessage, RecordError
from dlq_pipeline.mq.mqmd import MQMD
from tests.profiles import examples
from tests.unit.test_amqsbcg import FIXTURES, Browsed, listing

LISTINGS = {
    name: (FIXTURES / name).read_bytes()
    for name in (
        "amqsbcg-old.txt",
        "amqsbcg-94.txt",
        "amqsbcg-field-aix-trigger-cut.txt",
        "amqsbcg-field-mq91-rfh2.txt",
    )
}
DUMP = (FIXTURES / "dmpmqmsg-options.dmp").read_bytes()
NUMBERS = (st.integers(-(2**31), 2**31 - 1) | st.integers(2**31, 2**80) | st.integers(-(2**80), -(2**31) - 1)).map(
    str
) | st.sampled_from(["2147483648", "-2147483649", "16777216", "+0000000000000000001", "9" * 5000])
GARBAGE = st.binary(max_size=60).map(lambda b: b.replace(b"\n", b" ")) | st.sampled_from(
    [b"   ", b"****", b" 00000000:", b"X'", b"'", b" : ", b"length - 9", b"A VER", b"X 0", b'S "', b"N", b"T"]
)


def _never_raises(records: list) -> None:
    assert all(isinstance(r, (DumpedMessage, RecordError)) for r in records)
    for r in records:
        if isinstance(r, RecordError):
            assert r.code and r.message and r.line >= 1 and r.offset >= 0


# --- numbers out of range ---------------------------------------------------------------------


def test_mqlong_never_converts_thousands_of_digits():
    assert [mqlong(b"2147483647"), mqlong(b"-2147483648"), mqlong(b"+00000000000042")] == [2**31 - 1, -(2**31), 42]
    assert [mqlong(b"2147483648"), mqlong(b"-2147483649"), mqlong(b"9" * 5000)] == [None, None, None]


def test_out_of_range_dead_letter_block_is_a_record_error_and_the_rest_is_read():
    """The probe's listing: 'CodedCharSetId : 2147483648' in the 9.4 Dead Letter Header block
    of a byte-swapped header crashed the reader with struct.error."""
    content = LISTINGS["amqsbcg-94.txt"]
    at = content.index(b"Version : 16777216")
    damaged = content[:at] + content[at:].replace(b"CodedCharSetId : ", b"CodedCharSetId : 2147483648", 1)
    records = list(read_amqsbcg(io.BytesIO(damaged), name="l.txt"))
    codes = [r.code if isinstance(r, RecordError) else "message" for r in records]
    assert codes == ["message", "number_out_of_range", "message", "message", "listing_get_failed"]
    error = records[1]
    assert error.message.startswith("CodedCharSetId value 2147483648") and "MQLONG" in error.message
    assert error.snippet.lstrip().startswith("Encoding : ")


def test_dump_attribute_with_thousands_of_digits_is_number_out_of_range():
    """int() of more than 4300 digits raises ValueError: the dump reader crashed on it."""
    content = b"* DMPMQMSG Version:9.4.0.0\nA VER " + b"9" * 5000 + b"\nX 41\nN\nX 42\n"
    first, second = read_dump(io.BytesIO(content), name="d")
    assert (first.code, first.line) == ("number_out_of_range", 2)
    assert first.message.startswith("line at byte 27: VER value 999999999999999999999999... (5000 characters)")
    assert second.data == b"B"


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_listings_never_raise_on_any_number(data):
    """Up to four printed integers of a listing replaced by any number."""
    name = data.draw(st.sampled_from(sorted(LISTINGS)))
    content = LISTINGS[name]
    numbers = list(re.finditer(rb"(?<=: )'?(-?\d+)'?(?=\s|$)", content, re.M))
    chosen = sorted(
        data.draw(st.lists(st.sampled_from(numbers), min_size=1, max_size=4, unique_by=lambda m: m.start())),
        key=lambda m: m.start(),
        reverse=True,
    )
    for match in chosen:
        content = content[: match.start(1)] + data.draw(NUMBERS).encode() + content[match.end(1) :]
    _never_raises(list(read_amqsbcg(io.BytesIO(content), name=name)))


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_readers_never_raise_on_garbage_lines(data):
    """Lines inserted anywhere, or replaced, in listings and dumps."""
    name = data.draw(st.sampled_from(sorted(LISTINGS) + ["dump"]))
    lines = (DUMP if name == "dump" else LISTINGS[name]).split(b"\n")
    for _ in range(data.draw(st.integers(1, 5))):
        at = data.draw(st.integers(0, len(lines) - 1))
        garbage = data.draw(GARBAGE)
        if data.draw(st.booleans()):
            lines.insert(at, garbage)
        else:
            lines[at] = lines[at][: data.draw(st.integers(0, len(lines[at])))] + garbage
    content = b"\n".join(lines)
    reader = read_dump if name == "dump" else read_amqsbcg
    _never_raises(list(reader(io.BytesIO(content), name=name)))


@settings(max_examples=examples(100), deadline=None)
@given(
    st.sampled_from(
        ["VER", "RPT", "MST", "EXP", "FDB", "ENC", "CCS", "PRI", "PER", "BOC", "PAT", "MSQ", "OFF", "MSF", "ORL"]
    ),
    NUMBERS,
)
def test_dump_attributes_take_any_number(code, number):
    content = b"* DMPMQMSG Version:9.4.0.0\nA %s %s\nX 41\n" % (code.encode(), number.encode())
    [record] = read_dump(io.BytesIO(content), name="d")
    if mqlong(number.encode()) is None:
        assert record.code == "number_out_of_range"
    else:
        assert isinstance(record, DumpedMessage) and record.data == b"A"


# --- the size limit ----------------------------------------------------------------------------


def _dump(messages, **options) -> bytes:
    out = io.BytesIO()
    write_dump(messages, out, **options)
    return out.getvalue()


def _crossing_line(content: bytes, first_line: bytes, limit: int, size_of) -> tuple[int, bytes, int]:
    """(offset, line, size reached) of the data line of the message starting at ``first_line``
    that takes its data past ``limit``, found by walking the lines."""
    size = 0
    offset = content.index(first_line)
    for line in content[offset:].split(b"\n"):
        grows = size_of(line)
        if grows is not None:
            size += grows
            if size > limit:
                return offset, line, size
        offset += len(line) + 1
    raise AssertionError("no line crosses the limit")


def _x_size(line: bytes):
    return (len(line) - 2) // 2 if line.startswith(b"X ") else None


def test_message_too_large_names_the_line_that_crosses_the_limit():
    big = DumpedMessage(MQMD(msg_id=b"B" * 24), bytes(range(256)) * 8)
    small = DumpedMessage(MQMD(), b"small\n")
    for style, size_of in (("hex", _x_size), ("lines", None)):
        content = _dump([small, big, small], data_style=style)
        first, error, last = read_dump(io.BytesIO(content), name="d", max_message_bytes=1000)
        assert (first.data, last.data) == (b"small\n", b"small\n")
        if size_of is None:  # 'lines': S/T/X mixed; the snippet locates the line
            offset = int(error.message.split("at the line at byte ")[1].split(",")[0])
            line = content[offset : content.index(b"\n", offset)]
            assert error.snippet == line[:80].decode("utf-8", "surrogateescape")
            assert offset > content.index(b"A MSI " + (b"42" * 24))
            continue
        offset, line, reached = _crossing_line(content, b"A MSI " + (b"42" * 24), 1000, size_of)
        assert error.code == "message_too_large"
        assert error.message == (
            f"the message data reaches byte {reached} at the line at byte {offset}, more than the 1000-byte "
            "limit (ingest.max_message_bytes); the message was skipped"
        )
        assert error.snippet == line[:80].decode()


def test_a_message_exactly_at_the_limit_lands():
    msg = DumpedMessage(MQMD(), bytes(range(256)) * 4)
    [got] = read_dump(io.BytesIO(_dump([msg])), name="d", max_message_bytes=1024)
    assert got.data == msg.data


def test_inspect_applies_the_configured_size_limit(tmp_path):
    path = tmp_path / "d.dmp"
    path.write_bytes(_dump([DumpedMessage(MQMD(), b"x" * 500), DumpedMessage(MQMD(), b"tiny")]))
    conf = tmp_path / "c.toml"
    conf.write_text("[ingest]\nmax_message_bytes = 100\n")
    result = CliRunner().invoke(cli, ["inspect", "--json", "--config", str(conf), str(path)])
    assert result.exit_code == 3
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line.get("error", {}).get("code") for line in lines] == ["message_too_large", None]
    assert lines[1]["data_length"] == 4
    assert result.stderr.startswith(f"{path}:3: message_too_large: the message data reaches byte ")
    assert CliRunner().invoke(cli, ["inspect", str(path)]).exit_code == 0  # the 100 MB default
    bad = tmp_path / "bad.toml"
    bad.write_text("[ingest]\nmax_message_bytes = 'big'\n")
    result = CliRunner().invoke(cli, ["inspect", "--config", str(bad), str(path)])
    assert result.exit_code == 2 and result.stderr.startswith("error: ")


def test_a_listing_over_the_limit_is_message_too_large_too(tmp_path):
    path = tmp_path / "l.txt"
    path.write_bytes(listing([Browsed(MQMD(format="MQSTR   "), b"y" * 300)], layout="old"))
    conf = tmp_path / "c.toml"
    conf.write_text("[ingest]\nmax_message_bytes = 100\n")
    result = CliRunner().invoke(cli, ["inspect", "--config", str(conf), str(path)])
    assert result.exit_code == 3 and ": message_too_large: the message has 300 bytes of data" in result.stderr


# --- dumps people make: several runs in one file, EBCDIC transferred in binary -----------------


def test_dumps_of_several_runs_concatenated_read_whole(tmp_path):
    """`dmpmqmsg -f stdout` twice into one file: the second run's banner ('5724-H72 (C)
    Copyright IBM Corp.', 'IBM MQ Queue Load/Unload Utility') comes right after the first
    run's last X line; it used to make that message 'unexpected_line'."""
    one = DUMP.replace(b"\n", b"\r\n")  # written on Windows
    path = tmp_path / "two-runs.dmp"
    path.write_bytes(one + one)
    single = list(read_dump(io.BytesIO(one), name="d"))
    assert len(single) == 5 and all(isinstance(r, DumpedMessage) for r in single)
    both = list(read_dump(str(path)))
    assert [(r.md, r.data, r.notes) for r in both] == [(r.md, r.data, r.notes) for r in single] * 2
    assert [r.index for r in both] == list(range(10))
    assert [(r.offset, r.line) for r in both[5:]] == [(len(one) + r.offset, one.count(b"\n") + r.line) for r in single]
    for cut in (len(one) - 5, len(one) + 3, len(one) + 60):
        parts = list(read_dump(str(path), end=cut)) + list(read_dump(str(path), start=cut))
        assert [(r.md, r.data, r.offset) for r in parts] == [(r.md, r.data, r.offset) for r in both]


def test_ebcdic_files_transferred_in_binary_get_a_clear_error(tmp_path):
    from dlq_pipeline.dumps.sources import read_source
    from dlq_pipeline.mq import codepages

    for name, text, kind in (
        ("d.dmp", DUMP, "dmpmqmsg dump"),
        ("l.txt", LISTINGS["amqsbcg-old.txt"], "amqsbcg listing"),
    ):
        for newline in (b"\x15", b"\x25"):  # z/OS NL, or LF as some converters write it
            path = tmp_path / name
            path.write_bytes(codepages.encode(text.decode("latin-1"), 1047).replace(b"\x25", newline))
            [error] = read_source(path)
            assert (error.code, error.line, error.offset) == ("unknown_format", 1, 0)
            assert error.message.startswith(
                f"this is a {kind} in EBCDIC (a z/OS text file transferred in "
                "binary), which is not read: transfer it as text (FTP ASCII mode)"
            )
