"""How fast dmpmqmsg dumps parse, against the floor of just reading their lines.

    .venv/bin/python benchmarks/bench_dump_parse.py [--mb 64] [--style hex|text] [--splits 8]

Writes a dump of realistic dead letters (an MQDLH plus a 200 B - 4 KB body each) to a
temporary directory, then times, on the same file:

- ``lines``: ``for line in file`` in binary mode, the cost of touching every line;
- ``read_dump``: a full streaming parse into DumpedMessage records;
- ``splits``: the same file read as ``--splits`` byte ranges one after another (what Spark
  tasks do in parallel), showing the cost of aligning and looking back at each boundary.

Numbers depend on the machine; run it alone, not next to the test suite.
"""

from __future__ import annotations

import argparse
import os
import random
import struct
import tempfile
import time
from pathlib import Path

from dlq_pipeline.dumps.dmpmqmsg_reader import plan_splits, read_dump
from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.mq.mqmd import MQMD


def dead_letters(target_bytes: int, seed: int = 7):
    """Messages until about ``target_bytes`` of payload: MQDLH + JSON-ish body."""
    rng = random.Random(seed)
    written = 0
    n = 0
    while written < target_bytes:
        dest = b"APP.ORDERS.%03d" % rng.randrange(50)
        dlh = (
            b"DLH "
            + struct.pack("<ii", 1, rng.choice([2053, 2051, 2085, 2035]))
            + dest.ljust(48)
            + b"QM1".ljust(48)
            + struct.pack("<ii", 546, 1208)
            + b"MQSTR   "
            + struct.pack("<i", 7)
            + b"QM1".ljust(28)
            + b"2026092202342828"
        )
        body = (b'{"order":%d,"lines":[' % n) + b'{"sku":"A-1","qty":2},' * rng.randrange(8, 180) + b"]}"
        md = MQMD(
            version=2,
            format="MQDEAD  ",
            ccsid=1208,
            persistence=1,
            msg_id=rng.randbytes(24),
            put_appl_name="orders-service".ljust(28),
            put_date="20260922",
            put_time="02342828",
        )
        written += len(dlh) + len(body)
        n += 1
        yield md, dlh + body


def timed(label: str, size: int, work) -> None:
    began = time.perf_counter()
    count = work()
    seconds = time.perf_counter() - began
    print(f"{label:>10}: {size / seconds / 1e6:8.1f} MB/s  {seconds:6.2f} s  ({count} records)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64, help="approximate dump size in MB")
    parser.add_argument("--style", choices=["hex", "text"], default="hex")
    parser.add_argument("--splits", type=int, default=8)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.dmp"
        # hex doubles the bytes, and the A lines add ~1.3 KB per message
        count = write_dump(
            dead_letters(args.mb * 1_000_000 // 2), path, queue="DLQ", data_style=args.style, created="bench"
        )
        size = path.stat().st_size
        print(f"{path.name}: {size / 1e6:.1f} MB, {count} messages, style {args.style}")

        def lines():
            n = 0
            with open(path, "rb", buffering=1 << 20) as f:
                for _ in f:
                    n += 1
            return n

        def full():
            return sum(1 for _ in read_dump(path))

        def splits():
            ranges = plan_splits(path, max(size // args.splits, 1))
            return sum(1 for s, e in ranges for _ in read_dump(path, start=s, end=e))

        timed("lines", size, lines)
        timed("read_dump", size, full)
        timed("splits", size, splits)
        print(f"cpus: {os.cpu_count()}")


if __name__ == "__main__":
    main()
