"""Replay's guarantees with everything on S3: the Delta warehouse with its checkpoints and the
writer lease's fence, and the ``dir:`` target's files, in one bucket (the local file lock does
not apply there: only the lease guards the warehouse). 40 messages, all forwarded, in batches
of 5:

- ``run`` killed with -9 in the middle of replay (its task stopped right after it recorded the
  publish of its dmpmqmsg files in the bucket, nothing copied into place yet), then run again:
  the rerun waits for the dead run's lease until it expires (its lease clock moved past the
  expiry once it waits: `dlq_pipeline.runtime.testhooks`), then each forwarded message is in
  the ``dir:`` files and in the ledger exactly once;
- the same to a ``sim:`` target (its database in a local ``replay.sim_dir``), killed once two
  batches are committed and checkpointed: the rerun puts the rest, each message once;
- two runs started at the same moment on the same S3 warehouse: together they deliver each
  message exactly once (the second is refused by the lease, or finds nothing left to do).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.warehouse.storage import Storage
from tests.cluster.runs import write_config
from tests.reliability.harness import start_run
from tests.reliability.replay_scenarios import killed_mid_replay_then_rerun, two_runs_at_once
from tests.reliability.test_crash import expectation, published_keys

RULES = "ACTION(FWD) FWDQ(REPLAYED) HEADER(YES)\n"
COUNT, BATCH = 40, 5
LEASE_SECONDS = 600  # outlasts any run here: a lease expires only when the waiter's clock is moved
BUCKET = "replay"


@pytest.fixture(scope="module")
def dlq(s3, tmp_path_factory):
    """The dump in the bucket, the rules, how many times each message key must be delivered
    (once), and the message key of a put (by its MsgId and data, both as put: HEADER(YES))."""
    root = tmp_path_factory.mktemp("s3-replay-inputs")
    write_generated(root / "dumps", COUNT, seed=31, files=1, max_size=2048)
    rules = root / "fwd.rules"
    rules.write_text(RULES)
    _messages, _errors, puts = expectation([str(p) for p in (root / "dumps").iterdir()], parse_rules(RULES, str(rules)))
    assert len(puts) > 2 * BATCH
    s3.client().create_bucket(Bucket=BUCKET)
    by_bytes = {(msg_id, data): key for _qmgr, _queue, msg_id, data, key in puts}  # a put's message key
    return s3.upload(root / "dumps", BUCKET, "dumps"), rules, Counter(p[4] for p in puts), by_bytes


def _start(tmp_path: Path, s3, name: str, dump: str, rules: Path, **how):
    """`run` with run id ``name`` on the bucket's warehouse; ``how`` as in
    tests/reliability/replay_scenarios.py (``wait``, ``crash_at``, ``extra_env``), and
    ``target`` (default: a ``dir:`` folder in the bucket)."""
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
                "lease_wait": how.get("wait", 0),
            },
            "replay": {"batch_size": BATCH, "max_connections": 1, "sim_dir": str(tmp_path / "sim")},
        },
    )
    env = {k: v for k, v in s3.env().items() if k.startswith("AWS_")}
    env.update(how.get("extra_env") or {})
    args = ["run", "--config", str(config), "--rules", str(rules), "--run-id", name, "--json"]
    target = how.get("target") or f"dir:s3a://{BUCKET}/{tmp_path.name}/out"
    args += ["--target", target, "--input", dump]
    proc = start_run(args, crash_at=how.get("crash_at"), marker_dir=cwd / "markers", cwd=cwd, extra_env=env)
    return proc, cwd


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
    dump, rules, expected, _by_bytes = dlq

    def checkpoints(run: str) -> list[str]:
        prefix = f"{tmp_path.name}/wh/_checkpoints/{run}/"
        return sorted({k[len(prefix) :].split("/")[0] for k in s3.keys(BUCKET, prefix) if not k.endswith("/")})

    killed_mid_replay_then_rerun(
        lambda name, **how: _start(tmp_path, s3, name, dump, rules, **how),
        lambda: _delivered(s3, spark, tmp_path),
        checkpoints,
        expected,
        LEASE_SECONDS,
        tmp_path,
    )


def test_a_run_to_a_sim_killed_mid_replay_then_run_again_puts_each_message_once(s3, dlq, tmp_path, spark):
    """About a minute and a half: two `run` processes replaying to the simulated queue manager
    with their warehouse (and so the checkpoints) in the bucket; the first is killed once two
    batches are committed and checkpointed."""
    dump, rules, expected, by_bytes = dlq
    sim = SimQueueManager(tmp_path / "sim" / "SIM.sqlite", "SIM")

    def checkpoints(run: str) -> list[str]:
        prefix = f"{tmp_path.name}/wh/_checkpoints/{run}/"
        return sorted({k[len(prefix) :].split("/")[0] for k in s3.keys(BUCKET, prefix) if not k.endswith("/")})

    def delivered() -> tuple[Counter, Counter]:
        warehouse = s3.download(BUCKET, f"{tmp_path.name}/wh", tmp_path / "downloaded-wh")
        ledger = Storage(spark, format="delta", path=str(warehouse)).read("ledger")
        put = Counter(by_bytes[(r.md.msg_id.hex(), r.data.hex())] for r in sim.put_log("REPLAYED"))
        return put, Counter(r["message_key"] for r in ledger.where("outcome = 'delivered'").collect())

    summary = killed_mid_replay_then_rerun(
        lambda name, **how: _start(tmp_path, s3, name, dump, rules, target="sim:SIM", **how),
        delivered,
        checkpoints,
        expected,
        LEASE_SECONDS,
        tmp_path,
        crash_at="replay-batch:2",
    )
    assert summary["outcomes"]["delivered"] == sum(expected.values()) - 2 * BATCH  # the rest, and only the rest


def test_two_concurrent_runs_on_one_s3_warehouse_deliver_each_message_once(s3, dlq, tmp_path, spark):
    """About a minute: two `run` processes at once on one warehouse in the bucket, kept apart
    by the Delta writer lease."""
    dump, rules, expected, _by_bytes = dlq
    two_runs_at_once(
        lambda name, **how: _start(tmp_path, s3, name, dump, rules, **how),
        lambda: _delivered(s3, spark, tmp_path),
        expected,
    )
