"""The writer lease of a Delta warehouse (`dlq_pipeline.warehouse.lease`): claimed when free,
refused (naming the holder) while another holds it, renewed, taken over once expired or
once its holder's file lock is seen released, released at the end; concurrent claims have
one winner; a holder that lost it is fenced (driver check, tasks' fence file, fenced commits)."""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import threading

import pytest

from dlq_pipeline.config.settings import StorageSettings
from dlq_pipeline.runtime.clock import iso_z, utc_now
from dlq_pipeline.warehouse import lease as lease_module
from dlq_pipeline.warehouse.lease import (
    Holder,
    Lease,
    LeaseFence,
    LeaseHeld,
    LeaseLost,
    check_lease,
    fenced,
    held_lease,
    lost_message,
    may_take,
    writer_lease,
)
from dlq_pipeline.warehouse.locks import WarehouseLocked
from dlq_pipeline.warehouse.storage import open_storage

from ..conftest import make_storage, require_delta, storage_settings

pytestmark = [pytest.mark.spark, pytest.mark.delta]

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def delta(spark):
    require_delta(spark)
    return spark


def later(seconds: float):
    """A clock ``seconds`` ahead of now (another host's view, or the future)."""
    return lambda: utc_now() + dt.timedelta(seconds=seconds)


def holder(token="a", expires=T0, flock=None) -> Holder:
    return Holder(
        token=token,
        run_id="R",
        command="run",
        host="h",
        pid=1,
        flock=flock,
        acquired_at=T0,
        renewed_at=T0,
        expires_at=expires,
    )


def test_who_may_take_the_lease():
    live = holder(expires=T0 + dt.timedelta(seconds=60), flock="h:/wh/_locks/warehouse.lock")
    assert may_take(None, token="b", now=T0, flock=None)
    assert not may_take(live, token="b", now=T0, flock=None)
    assert may_take(live, token="a", now=T0, flock=None)  # already mine
    assert may_take(live, token="b", now=T0 + dt.timedelta(seconds=60), flock=None)  # expired
    assert may_take(live, token="b", now=T0, flock="h:/wh/_locks/warehouse.lock")  # its holder's flock is mine: dead
    assert not may_take(live, token="b", now=T0, flock="h:/other/_locks/warehouse.lock")
    assert not may_take(holder(), token="b", now=T0 - dt.timedelta(seconds=1), flock=None)


def test_a_lost_lease_is_found_in_the_error_a_task_sends_back():
    inner = RuntimeError(
        "Py4JJavaError: ... org.apache.spark.api.python.PythonException: Traceback ...\n"
        "dlq_pipeline.warehouse.lease.LeaseLost: the writer lease 1a2b ran out at 2026-03-01T12:00:00Z\n"
        "  at ..."
    )
    outer = RuntimeError("replay failed")
    outer.__cause__ = inner
    assert lost_message(outer) == "the writer lease 1a2b ran out at 2026-03-01T12:00:00Z"
    assert lost_message(LeaseLost("gone")) == "gone"
    assert lost_message(RuntimeError("something else")) is None


@pytest.mark.parametrize("kind", ["delta", "delta-name"])
def test_claim_refuse_renew_release(delta, tmp_path, kind):
    storage = make_storage(delta, kind, tmp_path / "wh")
    first = Lease(storage, command="run", run_id="R1", seconds=600)
    first.claim()
    row = first.current()
    assert (row.token, row.run_id, row.command, row.host, row.pid) == (
        first.token,
        "R1",
        "run",
        socket.gethostname(),
        os.getpid(),
    )
    assert row.expires_at == row.acquired_at + dt.timedelta(seconds=600)

    second = Lease(storage, command="ingest", run_id="R2", seconds=600)
    with pytest.raises(LeaseHeld) as refused:
        second.claim()
    where = f"{storage.catalog}.{storage.schema}" if kind == "delta-name" else storage.path
    assert str(refused.value) == (
        f"warehouse {where} is being written by run (pid {os.getpid()} on {socket.gethostname()}, run R1, since "
        f"{iso_z(row.acquired_at)}, lease expires {iso_z(row.expires_at)}) (lease {storage.location('leases')}); "
        "nothing was touched. Only one command writes a warehouse at a time: wait for it to end, or schedule runs "
        "so they do not overlap (a holder that died frees the lease when it expires)"
    )
    assert isinstance(refused.value, WarehouseLocked)  # what the file lock's refusal is, too

    first.renew()
    renewed = first.current()
    assert renewed.token == first.token and renewed.acquired_at == row.acquired_at
    assert renewed.expires_at > row.expires_at
    first.check()

    first.release()
    released = first.current()
    assert released.token == first.token and released.expires_at <= utc_now()
    second.claim()  # free now
    assert second.current().token == second.token and second.current().command == "ingest"
    assert storage.read("leases").count() == 1  # one row per warehouse, ever


def test_an_expired_lease_is_taken_over_and_its_old_holder_is_fenced(delta, tmp_path, monkeypatch):
    monkeypatch.setattr(lease_module, "REVOKE_GRACE", 0.0)
    storage = make_storage(delta, "delta", tmp_path / "wh")
    old = Lease(storage, command="run", run_id="OLD", seconds=600, fence_dir=tmp_path / "fence")
    old.claim()
    fence = old.fence()
    fence.check()  # valid while held
    assert json.loads(open(fence.path).read()) == {"token": old.token, "state": "held"}

    new = Lease(storage, command="run", run_id="NEW", seconds=600, clock=later(601), fence_dir=tmp_path / "fence")
    new.claim()  # old has expired by then
    assert new.current().token == new.token and new.current().run_id == "NEW"

    with pytest.raises(LeaseLost, match="taken over by run .*run NEW"):
        fence.check()  # the old holder's tasks stop: its fence was revoked
    with pytest.raises(LeaseLost, match="was taken by run .*run NEW"):
        old.renew()
    with pytest.raises(LeaseLost):
        old.check()
    old.release()  # no-op: not ours any more
    assert new.current().token == new.token
    new.fence().check()


def test_a_late_renewal_does_not_stop_a_holder_nobody_took_over_from(delta, tmp_path):
    """Fencing is by token: a renewal slower than the lease (a busy machine) costs nothing
    while no other writer claims the warehouse."""
    storage = make_storage(delta, "delta", tmp_path / "wh")
    lease = Lease(storage, command="run", run_id="SLOW", seconds=1, fence_dir=tmp_path / "fence")
    lease.claim()
    threading.Event().wait(1.5)
    assert lease.current().expires_at < utc_now()  # expired, but nobody took it
    lease.check()
    lease.fence().check()
    lease.renew()
    assert lease.current().token == lease.token and lease.current().expires_at > lease.current().renewed_at
    lease.release()


def test_tasks_stop_committing_once_the_fence_is_revoked(tmp_path):
    path = tmp_path / "lease-t.json"
    commits = []

    class Conn:
        dry_run = False

        def commit(self):
            commits.append(1)

    connect = fenced(Conn, LeaseFence(str(path), "t"))
    path.write_text(json.dumps({"token": "t", "state": "held"}))
    conn = connect()
    conn.commit()
    assert commits == [1] and conn.dry_run is False  # everything else is the connection's own
    path.write_text(json.dumps({"token": "t", "state": "revoked", "taken_by": "run B", "taken_at": "then"}))
    with pytest.raises(LeaseLost, match="taken over by run B at then"):
        conn.commit()
    path.write_text(json.dumps({"token": "other", "state": "held"}))
    with pytest.raises(LeaseLost):
        conn.commit()
    path.unlink()
    with pytest.raises(LeaseLost, match="no longer held"):
        conn.commit()
    assert commits == [1]
    assert fenced(Conn, None) is Conn


def test_a_lease_whose_holder_held_the_file_lock_this_process_holds_now_is_taken_at_once(delta, tmp_path):
    storage = make_storage(delta, "delta", tmp_path / "wh")
    lock_id = f"{socket.gethostname()}:{tmp_path / 'wh' / '_locks' / 'warehouse.lock'}"
    dead = Lease(storage, command="run", run_id="DEAD", seconds=600, flock=lock_id)
    dead.claim()  # then "killed": never released
    with pytest.raises(LeaseHeld):
        Lease(storage, command="run", run_id="OTHER", seconds=600, flock=f"{socket.gethostname()}:/elsewhere").claim()
    heir = Lease(storage, command="run", run_id="HEIR", seconds=600, flock=lock_id)
    heir.claim()
    assert heir.current().run_id == "HEIR"


def test_concurrent_claims_have_exactly_one_winner(delta, tmp_path):
    storage = make_storage(delta, "delta", tmp_path / "wh")
    leases = [Lease(storage, command="run", run_id=f"R{i}", seconds=600) for i in range(2)]
    start = threading.Barrier(len(leases))
    results: dict[int, object] = {}

    def claim(i):
        start.wait()
        try:
            results[i] = leases[i].try_claim()
        except Exception as exc:  # noqa: BLE001 - reported below
            results[i] = exc

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(leases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(isinstance(r, Exception) for r in results.values()), results
    winners = [i for i, r in results.items() if r is None]
    assert len(winners) == 1, results
    assert leases[0].current().token == leases[winners[0]].token
    for i, r in results.items():
        if i != winners[0]:
            assert r.token == leases[winners[0]].token  # each loser was told who won
    assert storage.read("leases").count() == 1


def test_writer_lease_is_reentrant_and_known_to_the_stages(delta, tmp_path):
    settings = StorageSettings(**storage_settings("delta", tmp_path / "wh"), lease_seconds=600)
    storage = open_storage(delta, settings)
    assert held_lease(storage) is None
    with writer_lease(delta, settings, command="run", run_id="R") as lease:
        assert held_lease(storage) is lease and lease.fence().path.startswith(str(tmp_path / "wh" / "_locks"))
        with writer_lease(delta, settings, command="run", run_id="R") as inner:
            assert inner is lease
        check_lease(storage)  # still held after the inner block
        with pytest.raises(LeaseHeld):
            Lease(storage, command="ingest").claim()  # what another process gets
    assert held_lease(storage) is None
    assert lease.current().expires_at <= utc_now()  # released
    parquet = StorageSettings(**storage_settings("parquet", tmp_path / "pq"))
    with writer_lease(delta, parquet, command="run") as none:
        assert none is None


def test_a_second_writer_waits_for_the_lease_then_gets_it(delta, tmp_path):
    storage = make_storage(delta, "delta", tmp_path / "wh")
    first = Lease(storage, command="run", run_id="FIRST", seconds=600)
    first.claim()
    timer = threading.Timer(1.0, first.release)
    timer.start()
    second = Lease(storage, command="run", run_id="SECOND", seconds=600)
    second.claim(wait=120, poll=0.5)
    timer.join()
    assert second.current().run_id == "SECOND"


def test_the_heartbeat_keeps_the_lease(delta, tmp_path):
    storage = make_storage(delta, "delta", tmp_path / "wh")
    lease = Lease(storage, command="run", seconds=600, fence_dir=tmp_path / "locks")
    lease.claim()
    lease.beat = 0.5  # renew as often as a MERGE allows
    first = lease.current().expires_at
    lease.start_heartbeat()
    try:
        deadline = utc_now() + dt.timedelta(seconds=600)
        while lease.current().expires_at == first and utc_now() < deadline:
            threading.Event().wait(0.5)
        assert lease.current().expires_at > first
        lease.check()
        lease.fence().check()
    finally:
        lease.release()
    with pytest.raises(LeaseLost):
        LeaseFence(str(tmp_path / "locks" / f"lease-{lease.token}.json"), lease.token).check()  # released: gone
