"""Fuzz targets for the readers (dmpmqmsg, amqsbcg, the sniffer that picks one) and the rules
parser, run for a fixed time budget in the normal suite.

The corpus is every sample in ``tests/fixtures`` (and the rules tables in ``dlq_pipeline/data/rules`` and
``tests/golden/rules``) plus the few extra seeds in ``tests/fixtures/fuzz-corpus`` (see its
README): each seed goes through its targets as it is, then a seeded mutator (byte flips, cuts,
spliced bytes, duplicated or dropped lines, CRLF, a second copy appended) feeds them variants
until the budget is spent. A finding fails with the seed, the iteration and a file holding the
input; add that file to ``fuzz-corpus`` with the fix. Budget: ``DLQ_FUZZ_SECONDS`` per target
(default 3; 1 in the quick profile of ``make check``, tests/profiles.py; 60 with
``DLQ_SOAK=long``); the mutator's seed: ``DLQ_FUZZ_SEED`` (default 18).
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from dlq_pipeline.dumps.amqsbcg import read_amqsbcg
from dlq_pipeline.dumps.describe import describe, format_message
from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
from dlq_pipeline.dumps.records import DumpedMessage, RecordError
from dlq_pipeline.dumps.sources import read_source, sniff
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.rules.printer import format_table
from tests.profiles import PROFILE
from tests.support import REPO

FIXTURES = REPO / "tests" / "fixtures"
CORPUS = FIXTURES / "fuzz-corpus"
LONG = os.environ.get("DLQ_SOAK") == "long"
SECONDS = float(os.environ.get("DLQ_FUZZ_SECONDS") or (60 if LONG else 3 if PROFILE == "full" else 1))
SEED = int(os.environ.get("DLQ_FUZZ_SEED") or 18)


def seeds(kind: str) -> list[tuple[str, bytes]]:
    """(name, bytes) of the corpus for ``kind``: "dump" (dumps and listings) or "rules"."""
    if kind == "rules":
        paths = [
            *sorted((REPO / "dlq_pipeline" / "data" / "rules").glob("*.rules")),
            *sorted((REPO / "tests" / "golden" / "rules").rglob("*.rules")),
            *sorted(CORPUS.glob("*.rules")),
        ]
    else:
        paths = [
            p
            for p in sorted(FIXTURES.glob("*")) + sorted(CORPUS.glob("*"))
            if p.is_file() and p.suffix in (".dmp", ".txt") and p.name != "README.md"
        ]
    return [(str(p.relative_to(REPO)), p.read_bytes()) for p in paths]


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        kind = rng.choice(["flip", "cut", "splice", "dup", "drop", "crlf", "twice"])
        at = rng.randrange(len(out) + 1)
        if kind == "flip" and out:
            out[min(at, len(out) - 1)] = rng.randrange(256)
        elif kind == "cut":
            del out[at:]
        elif kind == "splice":
            out[at:at] = rng.choice(
                [
                    bytes(rng.randrange(256) for _ in range(rng.randint(1, 32))),
                    b"\n",
                    b" ",
                    b"'",
                    b"+\n",
                    b"(",
                    b")",
                    b"\x00",
                    b"\xff",
                    b"A VER 2\n",
                    b"X 00\n",
                    b" length - 9999999999 bytes\n",
                    b"2147483648",
                ]
            )
        elif kind == "crlf":
            out = bytearray(bytes(out).replace(b"\n", b"\r\n"))
        elif kind == "twice":
            out = out + bytes(out)
        else:
            lines = bytes(out).split(b"\n")
            i = rng.randrange(len(lines))
            lines[i : i + 1] = [lines[i]] * 2 if kind == "dup" else []
            out = bytearray(b"\n".join(lines))
    return bytes(out[: 256 * 1024])


# --- the targets: each checks what must hold for any input -------------------------------------


def check_records(records, path: str) -> None:
    for record in records:
        if isinstance(record, RecordError):
            assert record.file == path and record.code and record.offset >= 0 and record.line >= -1
            assert isinstance(record.message, str) and record.message
        else:
            assert isinstance(record, DumpedMessage) and isinstance(record.data, bytes)
            format_message(describe(record, path))  # what inspect shows never fails either


def target_readers(path: Path, _content: bytes, rng: random.Random) -> None:
    """sniff picks a reader or none; read_source (as ingest and inspect read) never raises,
    and a dump read in two byte ranges gives the records of one whole read."""
    kind = sniff(path)
    assert kind in ("dmpmqmsg", "amqsbcg", None)
    whole = list(
        read_source(str(path), max_line_length=rng.choice([80, 4096]), max_message_bytes=rng.choice([None, 64]))
    )
    check_records(whole, str(path))
    size = path.stat().st_size
    if kind == "dmpmqmsg" and size > 1:
        split = rng.randrange(1, size)  # splits are never empty (plan_splits)
        options = {"max_line_length": 4096}
        first = list(read_source(str(path), end=split, **options))
        whole = list(read_source(str(path), **options))
        parts = first + list(read_source(str(path), start=split, **options))
        assert [(type(r), r.offset) for r in parts] == [(type(r), r.offset) for r in whole]


def target_each_reader(path: Path, _content: bytes, _rng: random.Random) -> None:
    """Either reader on any file, whatever the sniffer says: records, never an exception."""
    check_records(list(read_dump(str(path), name=str(path))), str(path))
    check_records(list(read_amqsbcg(str(path), name=str(path))), str(path))


def target_rules(_path: Path, content: bytes, _rng: random.Random) -> None:
    """The parser never raises, places every diagnostic inside the text, and a valid table
    written back by `rules show` reads as the same rules."""
    text = content.decode("utf-8", "replace")
    table = parse_rules(text, "fuzz.rules")
    lines = text.count("\n") + 1
    for d in table.diagnostics:
        assert 1 <= d.line <= lines and d.code and d.message
    if table.ok:
        canonical = format_table(table)
        again = parse_rules(canonical, "again.rules")
        assert again.ok and format_table(again) == canonical
        assert [(r.action, r.patterns, r.retry, r.fwdq, r.fwdqm, r.header, r.putaut) for r in again.rules] == [
            (r.action, r.patterns, r.retry, r.fwdq, r.fwdqm, r.header, r.putaut) for r in table.rules
        ]


TARGETS = {
    "readers": ("dump", target_readers),
    "each_reader": ("dump", target_each_reader),
    "rules": ("rules", target_rules),
}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz_target_finds_nothing(name, tmp_path):
    kind, target = TARGETS[name]
    corpus = seeds(kind)
    assert len(corpus) >= 5, "the corpus lost its seeds"
    rng = random.Random(f"{SEED}:{name}")
    path = tmp_path / "input"

    def run(content: bytes, what: str) -> None:
        path.write_bytes(content)
        try:
            target(path, content, rng)
        except BaseException as exc:
            finding = tmp_path / f"finding-{name}"
            finding.write_bytes(content)
            raise AssertionError(
                f"fuzz target {name}: {what}: {type(exc).__name__}: {exc}; input kept in {finding}"
            ) from exc

    for seed_name, content in corpus:  # every seed as it is
        run(content, f"seed {seed_name}")
    deadline, n = time.monotonic() + SECONDS, 0
    while time.monotonic() < deadline:
        seed_name, content = corpus[rng.randrange(len(corpus))]
        n += 1
        run(mutate(rng, content), f"iteration {n} (DLQ_FUZZ_SEED={SEED}) from {seed_name}")
    assert n > 0
