"""The ``dir:`` target is exactly-once across a killed replay and its rerun, wherever the
kill lands: while partitions stage, after the files are written but before they are
recorded, after the publish record but before any rename, between two renames, after the
renames but before the ledger. A replay task's own code runs in a subprocess
(`dir_replay_job.py`, no Spark: seconds per kill) that is SIGKILLed at the crash point; the
test then plays the next run: replay's recovery (`checkpointed_rows`), then a replay of what
the recovered rows did not end. Every message must be in the output folder exactly once,
the ledger must agree, each publish record must say what its file holds, and no staging
file may be left. The same through Spark and ``dlq-pipeline run``:
test_crash.py::test_dir_target_killed_mid_replay_then_rerun_writes_each_message_once.
"""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from pathlib import Path

import pytest

from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
from dlq_pipeline.dumps.records import DumpedMessage
from dlq_pipeline.replay.checkpoints import Checkpoint
from dlq_pipeline.tables import ENDED_OUTCOMES
from dlq_pipeline.tables.identity import data_digest, message_key
from dlq_pipeline.warehouse.ledger import CHECKPOINTS_DIR, checkpointed_rows

from .dir_replay_job import BATCH, replay_partitions, work
from .harness import LOCAL_DIRS, kill_run, markers, start_run, wait_for

COUNT, SEED = 100, 11
# point -> dmpmqmsg files in place when the run is killed (partition 0 has two, partition 1 one)
POINTS = {
    "replay-batch:7": 2,  # partition 0 published, partition 1 stopped after 7 of its 9 batches
    "dir-files-written": 0,  # partition 0's files written in its staging directory, not recorded
    "dir-publish-recorded": 0,  # its publish record on disk, nothing renamed
    "dir-file-renamed:1": 1,  # one of its two files renamed
    "dir-published": 2,  # both renamed, staging removed; no ledger append
}


def published(out: Path) -> list[Path]:
    """The dmpmqmsg files in the output folder (staging directories are hidden)."""
    return sorted(p for p in out.rglob("*.dmp") if not any(part.startswith(".") for part in p.relative_to(out).parts))


def keys_in(path: Path) -> list[str]:
    records = list(read_dump(str(path)))
    assert all(isinstance(r, DumpedMessage) for r in records), records
    return [message_key(r.md, data_digest(r.data)) for r in records]


def publish_records(warehouse: Path) -> list[dict]:
    return [
        entry
        for path in sorted((warehouse / CHECKPOINTS_DIR).glob("*/partition-*"))
        for entry in Checkpoint(path).load().published
    ]


@pytest.mark.parametrize("point", list(POINTS))
def test_dir_replay_killed_at_any_point_then_rerun_writes_each_message_once(tmp_path, point):
    out, warehouse, marker_dir = tmp_path / "out", tmp_path / "wh", tmp_path / "markers"
    partitions = work(COUNT, SEED)
    everything = Counter(r["message_key"] for rows in partitions for r in rows)
    forwarded = Counter(r["message_key"] for rows in partitions for r in rows if r["action"] == "FWD")
    assert len(everything) == COUNT and [len(rows) for rows in partitions] == [40, 60]
    assert [sum(r["action"] == "FWD" for r in rows) // BATCH for rows in partitions] == [6, 9]

    scratch = tmp_path / LOCAL_DIRS  # Spark's local directory: a killed task's scratch dumps stay here
    proc = start_run(
        [str(out), str(warehouse), "KILLED", str(COUNT), str(SEED)],
        crash_at=point,
        marker_dir=marker_dir,
        cwd=tmp_path,
        module="tests.reliability.dir_replay_job",
    )
    try:
        wait_for(proc, lambda: markers(marker_dir), f"crash point {point}", tmp_path, timeout=120)
    finally:
        kill_run(proc)
    assert markers(marker_dir) == [point.replace(":", " ")]
    assert len(published(out)) == POINTS[point]
    staged_before = list(out.glob("*/.staging-*"))
    # a partition's messages wait in the executor's scratch directory; its staging directory on the
    # target holds the finished files from when they are written until they are all renamed
    assert bool(staged_before) == (point in ("dir-files-written", "dir-publish-recorded", "dir-file-renamed:1"))
    # the killed task's scratch is where Spark removes it (here tmp_path), until the partition is done
    assert bool(list(scratch.glob("dlq-dir-*"))) == (point != "dir-published")
    # a partition stopped mid-way has its committed messages there as dmpmqmsg records; once
    # written, its files are linked into staging and their scratch names removed
    assert bool(list(scratch.glob("dlq-dir-*/*.dmp"))) == (point == "replay-batch:7")
    recorded = publish_records(warehouse)

    # the next run: recovery (publish what was recorded, clear staging), then what is left
    recovered = checkpointed_rows(sorted((warehouse / CHECKPOINTS_DIR).iterdir()), appended=set())
    shutil.rmtree(warehouse / CHECKPOINTS_DIR)  # as recover_checkpoints does once the rows are in the ledger
    ended = {r["message_key"] for r in recovered if r["outcome"] in ENDED_OUTCOMES}
    rerun = replay_partitions(
        out, warehouse, "RERUN", [[r for r in rows if r["message_key"] not in ended] for rows in partitions]
    )
    recorded += publish_records(warehouse)
    ledger = recovered + rerun

    in_output = Counter(key for path in published(out) for key in keys_in(path))
    assert in_output == forwarded  # every forwarded message in the output folder exactly once
    assert Counter(r["message_key"] for r in ledger if r["outcome"] == "delivered") == forwarded  # the ledger agrees
    assert Counter(r["message_key"] for r in ledger) == everything  # every decision recorded once
    assert [p for p in out.rglob("*") if p.name.startswith(".")] == []  # no staging or temporary file left
    for entry in recorded:  # each publish record says what its file holds
        path = Path(entry["file"])
        assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"]
        assert keys_in(path) == entry["keys"] and entry["messages"] == len(entry["keys"])
    assert sorted(Path(e["file"]) for e in recorded) == published(out)
