"""Micro-benchmark: MQDLH decode, scalar loop vs `decode_dlh_batch`, on a realistic mix.

Not a test. Run: .venv/bin/python benchmarks/bench_decode_batch.py [count] [batch_size]
The mix: Linux little-endian ASCII headers (most), z/OS big-endian EBCDIC headers, messages
without an MQDLH, a few chained (MQXMIT) headers and an unknown CCSID; batch_size mirrors the
Arrow batches the Spark UDF sees (~10k rows).
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import replace

from dlq_pipeline.mq.dlh_arrow_decoder import decode_dlh_batch
from dlq_pipeline.mq.dlh_decoder import decode_dlh, to_columns
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.mq.structures import DeadLetterHeader, TransmissionQueueHeader, encode_dlh, encode_xqh


def sample(count: int, seed: int = 7):
    rng = random.Random(seed)
    xqh = encode_xqh(TransmissionQueueHeader("REMOTE.Q", "QM9", MQMD(format="MQSTR")), 546, 819)
    rows = []
    for i in range(count):
        pick = rng.random()
        dlh = DeadLetterHeader(
            reason=rng.choice([2053, 2051, 2085, 2035, 265]),
            dest_q=f"APP.Q{i % 97}",
            dest_qmgr="QM1",
            encoding=546,
            ccsid=1208,
            format="MQSTR",
            put_appl_type=7,
            put_appl_name="QM1",
            put_date="20260101",
            put_time="12000000",
        )
        body = b"x" * rng.randint(0, 600)
        if pick < 0.70:
            rows.append((encode_dlh(dlh, 546, 819) + body, 546, 819, "MQDEAD  "))
        elif pick < 0.88:
            rows.append((encode_dlh(dlh, 785, 500) + body, 785, 500, "MQDEAD  "))
        elif pick < 0.96:
            rows.append((b'{"order": %d}' % i + body, 546, 1208, "MQSTR   "))
        elif pick < 0.99:
            chained = encode_dlh(replace(dlh, format="MQXMIT"), 546, 819)
            rows.append((chained + xqh + body, 546, 819, "MQDEAD  "))
        else:
            rows.append((encode_dlh(dlh, 546, 819) + body, 546, 4711, "MQDEAD  "))
    return rows


def main(count: int = 100_000, batch_size: int = 10_000) -> None:
    rows = sample(count)
    start = time.perf_counter()
    scalar = [to_columns(decode_dlh(*row)) for row in rows]
    scalar_seconds = time.perf_counter() - start

    start = time.perf_counter()
    batches = []
    for first in range(0, count, batch_size):
        chunk = rows[first : first + batch_size]
        batches.append(decode_dlh_batch(*(list(column) for column in zip(*chunk))))
    batch_seconds = time.perf_counter() - start

    agree = all(batches[i // batch_size]["dlh_dest_q"][i % batch_size] == scalar[i]["dlh_dest_q"] for i in range(count))
    print(f"{count} headers, batches of {batch_size}")
    print(f"scalar loop: {scalar_seconds:.3f} s ({count / scalar_seconds:,.0f} headers/s)")
    print(f"batch:       {batch_seconds:.3f} s ({count / batch_seconds:,.0f} headers/s)")
    print(f"ratio:       {scalar_seconds / batch_seconds:.1f}x  (results agree: {agree})")


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:3]))
