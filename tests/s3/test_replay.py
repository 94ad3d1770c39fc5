"""Replay's guarantees with everything on S3: the Delta warehouse with its checkpoints and the
writer lease's fence, and the ``dir:`` target's files, in one bucket (the local file lock does
not apply there: only the lease guards the warehouse). 40 messages, all forwarded, in batches
of 5:

- ``run`` killed with -9 in the middle of replay (its task stopped right after it recorded the
  publish of its dmpmqmsg files in the bucket, nothing copied into place yet), then run again:
  the rerun waits for the dead run's lease until it expires (its lease clock moved past the
  expiry once it waits: `dlq_pipeline.runtime.testhooks`), then each forwarded message is in
  the ``dir:`` files and in the ledger exactly once;
- two runs started at the same moment on the same S3 warehouse: together they deliver each
  message exactly once (the second is refused by the lease, or finds nothing left to do).
"""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from pathlib import Path

import pytest

from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.runtime.testhooks import CLOCK_SHIFT_ENV
from dlq_pipeline.warehouse.storage import Storage
from tests.cluster.runs import write_config
from tests.reliability.harness import kill_run, markers, start_run, wait_for
from tests.reliability.test_crash import expectation, published_keys

RULES = "ACTION(FWD) FWDQ(REPLAYED) HEADER(YES)\n"
COUNT, BATCH = 40, 5
LEASE_SECONDS = 600  # outlasts any run here: a lease expires only when the waiter's clock is moved
BUCKET = "replay"


@pytest.fixture(scope="module")
def dlq(s3, tmp_path_factory):
    """The dump in the bucket, the rules, and how many times each message key must be delivered (once)."""
    root = tmp_path_factory.mktemp("s3-replay-inputs")
    write_generated(root / "dumps", COUNT, seed=31, files=1, max_size=2048)
    rules = root / "fwd.rules"
    rules.write_text(RULES)
    _messages, _errors, puts = expectation([str(p) for p in (root / "dumps").iterdir()], parse_rules(RULES, str(rules)))
    assert len(puts) > 2 * BATCH
    s3.client().create_bucket(Bucket=BUCKET)
    return s3.upload(root / "dumps", BUCKET, "dumps"), rules, Counter(p[4] for p in puts)


def _start(
    tmp_path: Path,
    s3,
    name: str,
    dump: str,
    rules: Path,
    *,
    wait: float = 0,
    crash_at: str | None = None,
    extra_env: dict | None = None,
):
    cwd = tmp_path / name
    cwd.mkdir()
    config = write_config(
        tmp_path / f"{name}.toml",
        {
            "spark": {"master": "local[1]"},
            "storage": {
                "format": "delta",
                "path": f"s3a://{BUCKET}/{tmp_path.name}/wh",
                "lease_seconds": LEASE_SECONDS,
                "lease_wait": wait,
            },
            "replay": {"batch_size": BATCH, "max_connections": 1},
        },
    )
    env = {k: v for k, v in s3.env().items() if k.startswith("AWS_")}
    env.update(extra_env or {})
    args = ["run", "--config", str(config), "--rules", str(rules), "--run-id", name, "--json"]
    args += ["--target", f"dir:s3a://{BUCKET}/{tmp_path.name}/out", "--input", dump]
    proc = start_run(args, crash_at=crash_at, marker_dir=cwd / "markers", cwd=cwd, extra_env=env)
    return proc, cwd


def _finish(proc, cwd: Path) -> int:
    """The run's exit status, 3 (attention) as 0."""
    try:
        proc.wait(timeout=900)
    except Exception:
        kill_run(proc)
        raise
    return 0 if proc.returncode == 3 else proc.returncode


def _delivered(s3, spark, tmp_path: Path) -> tuple[Counter, Counter]:
    """(message keys in the dir: files in the bucket, message keys the ledger says were delivered)."""
    out = s3.download(BUCKET, f"{tmp_path.name}/out", tmp_path / "downloaded-out")
    warehouse = s3.download(BUCKET, f"{tmp_path.name}/wh", tmp_path / "downloaded-wh")
    ledger = Storage(spark, format="delta", path=str(warehouse)).read("ledger")
    return (
        Counter(published_keys(out)),
        Counter(r["message_key"] for r in ledger.where("outcome = 'delivered'").collect()),
    )


def test_a_run_killed_mid_replay_then_run_again_delivers_each_message_once(s3, dlq, tmp_path, spark):
    """About a minute and a half: two `run` processes with their warehouse and target in the
    bucket; the first is killed once its replay task has recorded a publish. The processes,
    the kill and the rerun are the subject, so they cannot share the suite's session."""
    dump, rules, expected = dlq
    proc, cwd = _start(tmp_path, s3, "killed", dump, rules, crash_at="dir-publish-recorded")
    try:
        wait_for(proc, lambda: markers(cwd / "markers"), "the replay task's publish record", cwd)
    finally:
        stopped = [int(p.name) for p in (cwd / "markers").iterdir() if p.name.isdigit()]
        kill_run(proc)  # the driver and what it started
        for pid in stopped:  # the Python worker, stopped at the crash point
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert markers(cwd / "markers") == ["dir-publish-recorded"]
    records = [k for k in s3.keys(BUCKET, f"{tmp_path.name}/wh/_checkpoints/killed/") if not k.endswith("/")]
    assert records and all("/partition-00000/" in key for key in records)  # the checkpoint is in the bucket

    shift = tmp_path / "clock-shift"
    rerun, cwd2 = _start(tmp_path, s3, "rerun", dump, rules, wait=900, extra_env={CLOCK_SHIFT_ENV: str(shift)})
    waiting = "for the writer lease held by run (pid"
    wait_for(rerun, lambda: waiting in (cwd2 / "run.log").read_text(errors="replace"), "the rerun waiting", cwd2)
    shift.write_text(f"{LEASE_SECONDS + 1}")  # the dead run's lease has expired for the rerun
    assert _finish(rerun, cwd2) == 0, (cwd2 / "run.log").read_text()[-4000:]
    in_files, in_ledger = _delivered(s3, spark, tmp_path)
    assert in_files == expected and in_ledger == expected  # every message once, none twice
    summary = json.loads([line for line in (cwd2 / "run.log").read_text().splitlines() if line.startswith("{")][-1])
    assert summary["outcomes"].get("delivered", 0) == 0  # the dead run's publish, recovered, was everything


def test_two_concurrent_runs_on_one_s3_warehouse_deliver_each_message_once(s3, dlq, tmp_path, spark):
    """About a minute: two `run` processes at once on one warehouse in the bucket, kept apart
    by the Delta writer lease."""
    dump, rules, expected = dlq
    first = _start(tmp_path, s3, "first", dump, rules)
    second = _start(tmp_path, s3, "second", dump, rules)
    codes = [_finish(*first), _finish(*second)]
    logs = [(cwd / "run.log").read_text() for _, cwd in (first, second)]
    assert sorted(codes) in ([0, 0], [0, 1]), logs
    if 1 in codes:
        assert "lease" in logs[codes.index(1)], logs  # refused by the writer lease, naming it
    in_files, in_ledger = _delivered(s3, spark, tmp_path)
    assert in_files == expected and in_ledger == expected
