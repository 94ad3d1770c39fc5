"""Large messages land, decode and replay byte for byte. CI: a 20 MiB and a 1 MiB dead
letter; ``DLQ_SOAK=long``: MQ's maximum, 104,857,600 bytes, and 50 MB. Memory is measured
and printed (``-s``), never asserted: the structural bound on the reader is asserted in
test_hostile_input.py (its peak does not grow with a message over the size limit).
"""

from __future__ import annotations

import hashlib
import os
import resource

import pytest

from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import RunSettings, StorageSettings
from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.pipeline import run_pipeline
from dlq_pipeline.replay.rebuild import rebuild
from dlq_pipeline.rules.model import Decision
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.warehouse.storage import open_storage
from tests.spark.replay_retry_job import dead_letter

pytestmark = pytest.mark.spark
MQ_MAX = 104_857_600
SIZES = [MQ_MAX, 50_000_000] if os.environ.get("DLQ_SOAK") == "long" else [20 * 1024 * 1024, 1024 * 1024]


def body(n: int, size: int) -> bytes:
    """``size`` bytes that are not all alike (every 4 KiB block differs)."""
    block = hashlib.sha256(b"%d" % n).digest() * 128
    return b"".join(block[i % 4096 :] + block[: i % 4096] for i in range(0, size, 4096))[:size]


def test_large_messages_land_decode_and_replay_byte_for_byte(spark, tmp_path):
    originals = []
    for n, size in enumerate(SIZES):
        md, head = dead_letter(n, "BIG.IN")
        originals.append((md, head + body(n, size - len(head))))
    dump = tmp_path / "big.dmp"
    write_dump(originals, dump)
    warehouse = tmp_path / "wh"
    SimQueueManager(warehouse / "_sim" / "SIM.sqlite", "SIM", {"maxmsgl": MQ_MAX, "qmgr_maxmsgl": MQ_MAX})
    config = load_config(overrides={"storage": {"path": str(warehouse)}, "replay": {"batch_size": 1}})
    table = parse_rules("ACTION(FWD) FWDQ(BIG.OUT) HEADER(NO)\n", "big.rules")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    summary = run_pipeline(
        spark, RunSettings.from_config(config), table, inputs=[str(dump)], target="sim:", run_id="BIG"
    )
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"driver peak RSS {before / 1024:.0f} -> {after / 1024:.0f} MiB for messages of {SIZES} bytes")

    assert summary.messages_landed == len(SIZES) and summary.quarantined == 0
    assert summary.outcomes == {"delivered": len(SIZES)}
    stored = open_storage(spark, StorageSettings.from_config(config)).read("messages").orderBy("source_index").collect()
    assert [(r["data_length"], r["truncated"], r["data_digest"]) for r in stored] == [
        (len(d), False, hashlib.sha256(d).hexdigest()) for _md, d in originals
    ]
    assert [bytes(r["data"]) == d for r, (_md, d) in zip(stored, originals)] == [True] * len(SIZES)
    sim = SimQueueManager(warehouse / "_sim" / "SIM.sqlite", "SIM")
    got = sorted(((r.md, r.data) for r in sim.put_log()), key=lambda p: len(p[1]), reverse=True)
    assert got == [rebuild(md, d, Decision("FWD", header=False)) for md, d in originals]
