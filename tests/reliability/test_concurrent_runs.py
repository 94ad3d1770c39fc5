"""Two writers on ONE Delta warehouse: every message is delivered exactly once.

Two ``dlq-pipeline run`` processes are started at the same moment on the same Delta
warehouse (by path, a local directory) with the same dump and a ``dir:`` target:

- ``storage.lock`` at its default: the file lock refuses the second at once (exit 1, naming
  the holder) before it starts Spark;
- ``storage.lock = false``, as where no file lock exists (``hdfs://``, ``s3a://``): only the
  Delta writer lease protects. With ``lease_wait = 0`` the second is refused (exit 1, naming
  the holder and its lease); with a ``lease_wait`` it waits, then runs and replays nothing.

And a lease holder killed with -9 in the middle of replay: the next run (started at once,
waiting for the lease) takes over when the lease expires (its lease clock moved past the
expiry once it waits: `dlq_pipeline.runtime.testhooks`), or at once when the dead holder's file lock
is seen released, and finishes with nothing lost and nothing sent twice.

Afterwards the messages are counted in the output folder (the dmpmqmsg files) and in the
ledger: each forwarded message exactly once in both.
"""

from __future__ import annotations

import json
import re
import socket
from collections import Counter
from pathlib import Path

import pytest

from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.runtime.testhooks import CLOCK_SHIFT_ENV

from .harness import kill_run, markers, start_run, wait_for
from .test_crash import expectation, published_keys

pytestmark = [pytest.mark.spark, pytest.mark.delta, pytest.mark.slow]

RULES = "ACTION(FWD) FWDQ(REPLAYED) HEADER(YES)\n"
COUNT, BATCH = 40, 5
# Far above a renewal MERGE on a busy machine: a waiter never takes over from a live run, and
# a dead holder's lease expires only when the waiter's lease clock is moved past it.
HELD_SECONDS = 600


@pytest.fixture(scope="module")
def dlq(tmp_path_factory):
    root = tmp_path_factory.mktemp("concurrent-inputs")
    [dump] = write_generated(root, COUNT, seed=21, files=1, max_size=2048)
    rules = root / "fwd.rules"
    rules.write_text(RULES)
    table = parse_rules(RULES, str(rules))
    _messages, _errors, puts = expectation([str(dump)], table)
    assert len(puts) > 2 * BATCH
    return str(dump), rules, Counter(p[4] for p in puts)


def config(tmp_path: Path, *, lock: bool, wait: float, lease: float = HELD_SECONDS) -> Path:
    path = tmp_path / f"run-{lock}-{wait}.toml"
    path.write_text(
        f'[storage]\npath = "{tmp_path / "wh"}"\nformat = "delta"\nlock = {str(lock).lower()}\n'
        f"lease_seconds = {lease}\nlease_wait = {wait}\n"
        f'[spark]\nmaster = "local[2]"\nconf = {{"spark.sql.shuffle.partitions" = "2"}}\n'
        f"[replay]\nbatch_size = {BATCH}\nmax_connections = 1\n"
    )
    return path


def start(
    tmp_path: Path,
    name: str,
    conf: Path,
    dump: str,
    rules: Path,
    *,
    crash_at: str | None = None,
    extra_env: dict | None = None,
):
    cwd = tmp_path / name
    cwd.mkdir()
    proc = start_run(
        [
            "run",
            "--config",
            str(conf),
            "--rules",
            str(rules),
            "--target",
            f"dir:{tmp_path / 'out'}",
            "--run-id",
            name,
            "--json",
            "--input",
            dump,
        ],
        crash_at=crash_at,
        marker_dir=cwd / "markers",
        cwd=cwd,
        extra_env=extra_env,
    )
    return proc, cwd


def finish(proc, cwd: Path, timeout: float = 1200) -> tuple[int, str, dict | None]:
    """(exit status, the run's output, its JSON summary or None)."""
    try:
        proc.wait(timeout=timeout)
    except Exception:
        kill_run(proc)
        raise
    out = (cwd / "run.log").read_text(errors="replace")
    summaries = [json.loads(line) for line in out.splitlines() if line.startswith("{") and '"run_id"' in line]
    return proc.returncode, out, summaries[-1] if summaries else None


def ledger_delivered(warehouse: Path) -> Counter:
    """Delivered rows per message in the Delta ledger, read without Spark (delta-rs)."""
    import deltalake

    rows = deltalake.DeltaTable(str(warehouse / "ledger")).to_pyarrow_table(columns=["message_key", "outcome"])
    return Counter(k for k, o in zip(rows["message_key"].to_pylist(), rows["outcome"].to_pylist()) if o == "delivered")


def assert_exactly_once(tmp_path: Path, forwarded: Counter) -> None:
    assert Counter(published_keys(tmp_path / "out")) == forwarded  # each message in the output folder once
    assert ledger_delivered(tmp_path / "wh") == forwarded  # and once in the ledger
    assert [p for p in (tmp_path / "out").rglob("*") if p.name.startswith(".")] == []  # no staging left


REFUSED = re.compile(
    r"^error: warehouse (?P<wh>\S+) is being written by run \(pid (?P<pid>\d+) on (?P<host>\S+), "
    r"run (?P<run>[AB]), since [^,)]+(?P<lease>, lease expires [^)]+\) \(lease [^)]+)?\).*?; nothing "
    r"was touched\. Only one command writes a warehouse at a time",
    re.M,
)


@pytest.mark.parametrize("lock, wait", [(True, 0), (False, 0), (False, 900)], ids=["flock", "lease", "lease-wait"])
def test_two_runs_at_once_deliver_every_message_exactly_once(tmp_path, dlq, lock, wait):
    """Up to a minute: two `run` processes (a JVM each) at once on one warehouse; with a
    wait, the second runs after the first, so their times add up."""
    dump, rules, forwarded = dlq
    conf = config(tmp_path, lock=lock, wait=wait)
    runs = {name: start(tmp_path, name, conf, dump, rules) for name in ("A", "B")}
    results = {name: finish(proc, cwd) for name, (proc, cwd) in runs.items()}

    assert_exactly_once(tmp_path, forwarded)
    ran = {name: r for name, r in results.items() if r[0] in (0, 3)}
    refused = {name: r for name, r in results.items() if r[0] == 1}
    assert len(ran) + len(refused) == 2, {n: r[:2] for n, r in results.items()}
    if wait:
        assert len(ran) == 2, {n: r[1][-3000:] for n, r in results.items()}
        first, second = sorted(ran.values(), key=lambda r: -r[2]["outcomes"].get("delivered", 0))
        assert first[2]["outcomes"]["delivered"] == sum(forwarded.values())
        assert second[2]["messages_landed"] == 0 and second[2]["outcomes"].get("delivered", 0) == 0  # nothing twice
        assert "waiting up to" in second[1] and "for the writer lease held by run" in second[1]
        return
    assert len(ran) == 1 and len(refused) == 1, {n: r[1][-3000:] for n, r in results.items()}
    [(winner, won)] = ran.items()
    [(loser, lost)] = refused.items()
    assert won[2]["outcomes"]["delivered"] == sum(forwarded.values())
    said = REFUSED.search(lost[1])
    assert said, lost[1][-3000:]
    assert (said["wh"], said["run"], int(said["pid"]), said["host"]) == (
        str(tmp_path / "wh"),
        winner,
        runs[winner][0].pid,
        socket.gethostname(),
    )
    # the file lock refuses before Spark starts; without it, the lease names its expiry and table
    assert bool(said["lease"]) == (not lock)
    assert "Traceback" not in lost[1]


@pytest.mark.parametrize("lock", [False, True], ids=["lease-expires", "flock-released"])
def test_a_killed_lease_holder_is_taken_over_and_nothing_is_lost_or_sent_twice(tmp_path, dlq, lock):
    """About a minute: run A (a process with its own JVM) is killed after replay batch 2,
    run B waits for its lock or lease, then takes over; the lease's expiry passes through
    the project's clock (`testhooks.lease_clock`), not in real time."""
    dump, rules, forwarded = dlq
    conf = config(tmp_path, lock=lock, wait=900)
    proc, cwd = start(tmp_path, "A", conf, dump, rules, crash_at="replay-batch:2")
    try:
        wait_for(proc, lambda: markers(cwd / "markers"), "replay batch 2 committed", cwd, timeout=1200)
    finally:
        kill_run(proc)

    shift = tmp_path / "clock-shift"  # B's lease clock: now, until the test moves it
    proc, cwd = start(tmp_path, "B", conf, dump, rules, extra_env={CLOCK_SHIFT_ENV: str(shift)})
    if not lock:
        waiting = "for the writer lease held by run (pid"
        wait_for(
            proc,
            lambda: waiting in (cwd / "run.log").read_text(errors="replace"),
            "B waiting for A's lease",
            cwd,
            timeout=1200,
        )
        shift.write_text(f"{HELD_SECONDS + 1}")  # A's lease, never renewed since the kill, has expired for B
    code, out, summary = finish(proc, cwd)
    assert code in (0, 3), out[-4000:]
    assert_exactly_once(tmp_path, forwarded)
    # a dir: partition publishes when it ends: the dead run's staged batches were cleared, and sent again
    assert summary["outcomes"]["delivered"] == sum(forwarded.values())
    assert not list((tmp_path / "out" / "A").rglob("*.dmp"))
    assert "took over the writer lease of run (pid" in out  # A's token revoked: a late commit of A's is fenced
    if lock:
        assert "took the writer lease of run (pid" in out  # its file lock was free: the holder had died
        assert "waiting up to" not in out
    else:
        assert "waiting up to" in out and "took the writer lease of run (pid" not in out  # expired, not freed
