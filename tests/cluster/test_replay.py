"""Replay's guarantees on the test bed, with the warehouse (Delta, its checkpoints, the lease's
fence file) and the ``dir:`` output on HDFS and ``storage.lock = false`` (no flock there: only
the writer lease guards the warehouse). 40 messages, all forwarded, in batches of 5:

- ``run`` killed with -9 in the middle of replay (its task stopped right after it recorded the
  publish of its dmpmqmsg files on HDFS, nothing renamed yet; the driver and the task killed),
  then run again: the rerun waits for the dead run's lease until it expires (its lease clock
  moved past the expiry once it waits: `dlq_pipeline.runtime.testhooks`), then each forwarded message
  is in the ``dir:`` files on HDFS and in the ledger exactly once;
- two runs started at the same moment on the same HDFS warehouse: together they deliver each
  message exactly once (the second is refused by the lease, or finds nothing left to do).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.runtime.testhooks import CRASH_AT_ENV, MARKER_ENV
from dlq_pipeline.warehouse.storage import Storage
from tests.cluster.runs import write_config
from tests.conftest import require_delta
from tests.reliability.harness import start_run
from tests.reliability.replay_scenarios import killed_mid_replay_then_rerun, two_runs_at_once
from tests.reliability.test_crash import expectation, published_keys

RULES = "ACTION(FWD) FWDQ(REPLAYED) HEADER(YES)\n"
COUNT, BATCH = 40, 5
LEASE_SECONDS = 600  # outlasts any run here: a lease expires only when the waiter's clock is moved


@pytest.fixture(scope="module")
def dlq(bed, tmp_path_factory):
    """The dump on HDFS, the rules, and how many times each message key must be delivered (once)."""
    root = tmp_path_factory.mktemp("replay-inputs")
    [dump] = write_generated(root, COUNT, seed=31, files=1, max_size=2048)
    rules = root / "fwd.rules"
    rules.write_text(RULES)
    _messages, _errors, puts = expectation([str(dump)], parse_rules(RULES, str(rules)))
    assert len(puts) > 2 * BATCH
    [uri] = bed.hdfs.upload(Path(dump), f"/replay/dumps/{Path(dump).name}")
    return uri, rules, Counter(p[4] for p in puts)


def _config(tmp_path: Path, bed, name: str, *, wait: float, crash_at: str | None = None) -> Path:
    # one core each: two runs at once both get an executor of the bed's two-core worker and
    # really run side by side (with every core, the second would wait for the first to end)
    conf = {**bed.spark_conf(), "spark.cores.max": "1"}
    if crash_at:  # the crash point is reached in an executor's Python worker: it needs the variables
        conf.update(
            {
                f"spark.executorEnv.{CRASH_AT_ENV}": crash_at,
                f"spark.executorEnv.{MARKER_ENV}": str(tmp_path / name / "markers"),
            }
        )
    return write_config(
        tmp_path / f"{name}.toml",
        {
            "spark": {"master": bed.master, "conf": conf},
            "storage": {
                "format": "delta",
                "path": f"{bed.hdfs.uri}/replay/{tmp_path.name}/wh",
                "lock": False,
                "lease_seconds": LEASE_SECONDS,
                "lease_wait": wait,
            },
            "hdfs": {"webhdfs": bed.hdfs.http},
            "replay": {"batch_size": BATCH, "max_connections": 1},
        },
    )


def _start(
    tmp_path: Path,
    bed,
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
    conf = _config(tmp_path, bed, name, wait=wait, crash_at=crash_at)
    env = {k: v for k, v in bed.spark_env().items() if k in ("SPARK_LOCAL_IP", "PYSPARK_DRIVER_PYTHON")}
    env.update(extra_env or {})
    proc = start_run(
        [
            "run",
            "--config",
            str(conf),
            "--rules",
            str(rules),
            "--run-id",
            name,
            "--json",
            "--target",
            f"dir:{bed.hdfs.uri}/replay/{tmp_path.name}/out",
            "--input",
            dump,
        ],
        crash_at=crash_at,
        marker_dir=cwd / "markers",
        cwd=cwd,
        extra_env=env,
    )
    return proc, cwd


def _delivered(bed, spark, tmp_path: Path) -> tuple[Counter, Counter]:
    """(message keys in the dir: files on HDFS, message keys the ledger says were delivered)."""
    out = tmp_path / "downloaded"
    _download(bed.hdfs, f"/replay/{tmp_path.name}/out", out)
    warehouse = f"{bed.hdfs.uri}/replay/{tmp_path.name}/wh"
    ledger = Storage(spark, format="delta", path=warehouse, webhdfs=bed.hdfs.http).read("ledger")
    return (
        Counter(published_keys(out)),
        Counter(r["message_key"] for r in ledger.where("outcome = 'delivered'").collect()),
    )


def _download(hdfs, path: str, local: Path) -> None:
    local.mkdir(parents=True, exist_ok=True)
    for status in hdfs.list(path):
        child = f"{path}/{status['pathSuffix']}"
        if status["type"] == "DIRECTORY":
            _download(hdfs, child, local / status["pathSuffix"])
        else:
            (local / status["pathSuffix"]).write_bytes(hdfs.read(child))


def test_a_run_killed_mid_replay_then_run_again_delivers_each_message_once(bed, dlq, tmp_path, spark):
    """About a minute and a half: two `run` processes on the bed, each a driver JVM with
    executors in JVMs of their own on the standalone worker and Delta tables on HDFS; the
    first is killed once its replay task has recorded a publish. The processes, the kill and
    the rerun are the subject, so they cannot share the suite's session."""
    require_delta(spark)
    dump, rules, expected = dlq

    def checkpoints(run: str) -> list[str]:
        return [r["pathSuffix"] for r in bed.hdfs.list(f"/replay/{tmp_path.name}/wh/_checkpoints/{run}")]

    killed_mid_replay_then_rerun(
        lambda name, **how: _start(tmp_path, bed, name, dump, rules, **how),
        lambda: _delivered(bed, spark, tmp_path),
        checkpoints,
        expected,
        LEASE_SECONDS,
        tmp_path,
    )


def test_two_concurrent_runs_on_one_hdfs_warehouse_deliver_each_message_once(bed, dlq, tmp_path, spark):
    """About a minute: two `run` processes at once on the bed (each a driver JVM with its
    own executors), kept apart by the Delta writer lease on HDFS."""
    require_delta(spark)
    dump, rules, expected = dlq
    two_runs_at_once(
        lambda name, **how: _start(tmp_path, bed, name, dump, rules, **how),
        lambda: _delivered(bed, spark, tmp_path),
        expected,
    )
