"""The replay writer against the simulated queue manager: every outcome, batches, backout,
circuit breakers, reconnects, rate limit, depth check and checkpoints."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from dlq_pipeline.config.settings import ReplaySettings
from dlq_pipeline.mq.interface import MQError
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.mq.structures import DeadLetterHeader, encode_dlh
from dlq_pipeline.replay import writer
from dlq_pipeline.replay.checkpoints import Checkpoint
from dlq_pipeline.replay.rebuild import rebuild
from dlq_pipeline.replay.targets import DryRunConnection
from dlq_pipeline.replay.writer import TokenBucket, WorkItem, replay_partition, utc_from_epoch
from dlq_pipeline.tables import LEDGER_COLUMNS

START = 1_767_225_600.0  # 2026-01-01T00:00:00Z
NOW = utc_from_epoch(START)


class FakeClock:
    def __init__(self):
        self.t = START
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds


def dead_letter(n: int, dest_q: str = "APP.IN", payload: bytes | None = None, **md_changes) -> tuple[MQMD, bytes]:
    md = MQMD(
        version=2,
        encoding=546,
        ccsid=819,
        format="MQDEAD  ",
        persistence=1,
        priority=5,
        msg_id=b"M" + n.to_bytes(4, "big") + b"\x00" * 19,
        correl_id=b"C" + n.to_bytes(4, "big") + b"\x00" * 19,
        backout_count=1,
        user_id="ALICE       ",
        put_appl_name="orders".ljust(28),
        put_date="20260101",
        put_time="01020304",
        reply_to_q="REPLY.Q".ljust(48),
        reply_to_qmgr=" " * 48,
    ).replace(**md_changes)
    dlh = DeadLetterHeader(
        reason=2053,
        dest_q=dest_q.ljust(48),
        dest_qmgr="QM1".ljust(48),
        encoding=273,
        ccsid=500,
        format="MQSTR   ",
        put_appl_type=7,
        put_appl_name="QM1".ljust(28),
    )
    return md, encode_dlh(dlh, 546, 819) + (payload if payload is not None else b"payload-%d" % n)


def item(n: int, action: str = "RETRY", target_q: str | None = "APP.IN", **kw) -> WorkItem:
    md, data = dead_letter(n, kw.pop("dest_q", "APP.IN"), kw.pop("payload", None), **kw.pop("md", {}))
    header = kw.pop("header", True if action == "FWD" else None)
    return WorkItem(
        message_key=f"k{n:03d}",
        action=action,
        md=md,
        data=data,
        rule_line=10 + n % 3,
        attempt=1,
        target_q=target_q if action in ("RETRY", "FWD") else None,
        target_qmgr="",
        header=header,
        putaut=kw.pop("putaut", "DEF") if action in ("RETRY", "FWD") else None,
        **kw,
    )


@pytest.fixture
def qm():
    q = SimQueueManager(":memory:", "QM1")
    yield q
    q.close()


def run(items, connect, clock=None, checkpoint=None, on_commit=None, **settings):
    clock = clock or FakeClock()
    return list(
        replay_partition(
            items,
            connect,
            ReplaySettings(**settings),
            run_id="R1",
            partition_id=3,
            checkpoint=checkpoint,
            clock=clock,
            sleep=clock.sleep,
            now=NOW,
            on_commit=on_commit,
        )
    )


def outcomes(rows):
    return {r["message_key"]: (r["outcome"], r["reason_code"]) for r in rows}


def sent(qm, queue=None):
    return [(r.queue, r.md, r.data) for r in qm.put_log(queue)]


def test_every_action_and_flag(qm):
    qm.configure({"queues": {"CTX.Q": {"authority": {"dlqpipe": ["altusr"], "ALICE": ["put", "setall"]}}}})
    later = NOW + dt.timedelta(minutes=5)
    items = [
        item(1, "DISCARD"),
        item(2, "IGNORE"),
        item(3, "RETRY"),
        item(4, "FWD", "FWD.Q", header=True),
        item(5, "FWD", "FWD.Q", header=False),
        item(6, "RETRY", "CTX.Q", putaut="CTX"),
        item(7, "RETRY", truncated=True),
        item(8, "RETRY", not_before=later),
        item(9, "FWD", "  "),
        WorkItem("k010", "RETRY", md=MQMD(format="MQSTR   "), data=b"no header here", target_q="APP.IN"),
        WorkItem("k011", "RETRY", target_q="APP.IN"),  # decision without a message
        item(12, "RETRY", not_before=NOW),  # due now: sent
    ]
    rows = run(items, qm.connect)
    assert [r["message_key"] for r in rows if r["outcome"] != "delivered"] == [
        "k001",
        "k002",
        "k007",
        "k008",
        "k009",
        "k010",
        "k011",
    ]
    assert outcomes(rows) == {
        "k001": ("discarded", None),
        "k002": ("ignored", None),
        "k003": ("delivered", 0),
        "k004": ("delivered", 0),
        "k005": ("delivered", 0),
        "k006": ("delivered", 0),
        "k007": ("ignored", None),
        "k008": ("deferred", None),
        "k009": ("failed", None),
        "k010": ("failed", None),
        "k011": ("failed", None),
        "k012": ("delivered", 0),
    }
    texts = {r["message_key"]: r["error_text"] for r in rows}
    assert "truncated" in texts["k007"] and "RETRYINT" in texts["k008"] and "blank" in texts["k009"]
    assert "no usable MQDLH" in texts["k010"] and "not in the messages table" in texts["k011"]
    for r in rows:
        assert tuple(r) == LEDGER_COLUMNS
        assert (r["run_id"], r["partition_id"], r["finished_at"]) == ("R1", 3, NOW)
        assert r["batch_id"] == (0 if r["outcome"] == "delivered" else None)
    by_key = {r["message_key"]: r for r in rows}
    assert by_key["k001"]["target_q"] is None and by_key["k005"]["target_q"] == "FWD.Q"

    # what the queue manager received, byte for byte, in DLQ order
    expected = [
        ("APP.IN", *rebuild(*dead_letter(3), items[2])),
        ("FWD.Q", *dead_letter(4)),
        ("FWD.Q", *rebuild(*dead_letter(5), items[4])),
        ("CTX.Q", *rebuild(*dead_letter(6), items[5])),
        ("APP.IN", *rebuild(*dead_letter(12), items[11])),
    ]
    assert sent(qm) == expected
    stripped_md, stripped = expected[0][1], expected[0][2]
    assert stripped == b"payload-3" and (stripped_md.format, stripped_md.encoding, stripped_md.ccsid) == (
        "MQSTR   ",
        273,
        500,
    )
    assert expected[1][1].format == "MQDEAD  " and expected[1][2][:4] == b"DLH "
    assert [r.user for r in qm.put_log()] == ["dlqpipe", "dlqpipe", "dlqpipe", "ALICE", "dlqpipe"]


def test_batches_commit_every_batch_size_and_checkpoint_each(qm, tmp_path):
    commits = []
    cp = Checkpoint.for_partition(tmp_path, "R1", 3)
    rows = run(
        [item(n) for n in range(7)],
        qm.connect,
        checkpoint=cp,
        batch_size=3,
        on_commit=lambda b: commits.append((b, len(qm.put_log()))),
    )
    assert commits == [(1, 3), (2, 6), (3, 7)]
    assert [r["batch_id"] for r in rows] == [0, 0, 0, 1, 1, 1, 2]
    records = sorted(Path(cp.path).iterdir())  # one immutable object per commit, then the end of the partition
    assert [r.name for r in records] == ["00000000.json", "00000001.json", "00000002.json", "00000003.json"]
    assert [len(json.loads(r.read_bytes())["rows"]) for r in records] == [3, 3, 1, 0]
    assert {oct(r.stat().st_mode & 0o777) for r in records} == {"0o600"}


def test_a_batch_ends_once_it_holds_batch_bytes_of_data(qm, monkeypatch):
    """A batch is held in memory until committed (to be put again after a connection
    failure): with messages of MQ's maximum size it ends at SYNCPOINT_BATCH_BYTES, not batch_size."""
    monkeypatch.setattr(writer, "SYNCPOINT_BATCH_BYTES", 1000)
    rows = run([item(n, payload=b"x" * 400) for n in range(7)], qm.connect, batch_size=200)
    assert [r["batch_id"] for r in rows] == [0, 0, 0, 1, 1, 1, 2]  # 400 + 400 + 400 >= 1000
    assert [len(d) for *_, d in sent(qm)] == [400] * 7


def test_a_failed_put_backs_out_only_its_batch_and_the_rest_is_sent_once(qm):
    qm.configure({"queues": {"APP.IN": {"maxmsgl": 100}}})
    items = [item(n) for n in range(6)]
    items[2] = item(2, payload=b"x" * 101)  # 2030 when put, after two puts in the batch
    commits = []
    rows = run(items, qm.connect, batch_size=4, on_commit=lambda b: commits.append(len(qm.put_log())))
    assert outcomes(rows)["k002"] == ("failed", 2030)
    assert "MQRC_MSG_TOO_BIG_FOR_Q" in {r["message_key"]: r["error_text"] for r in rows}["k002"]
    assert [r.md.msg_id for r in qm.put_log()] == [dead_letter(n)[0].msg_id for n in (0, 1, 3, 4, 5)]
    assert commits == [4, 5]
    assert sorted(r["message_key"] for r in rows) == [f"k{n:03d}" for n in range(6)]


def test_open_failures_need_no_backout_and_permanent_failures_leave_other_queues_alone(qm):
    qm.configure({"queues": {"GONE": {"exists": False}}})
    items = [
        item(0),
        item(1, "FWD", "GONE"),
        item(2),
        item(3, "FWD", "GONE"),
        item(4, "FWD", "GONE"),
        item(5, "FWD", "GONE"),
        item(6, "FWD", "GONE"),
        item(7, "FWD", "GONE"),
        item(8),
    ]
    rows = run(items, qm.connect, batch_size=100, breaker_threshold=2)
    assert [outcomes(rows)[f"k{n:03d}"] for n in range(9)] == [
        ("delivered", 0),
        *[("failed", 2085)] * 1,
        ("delivered", 0),
        *[("failed", 2085)] * 5,
        ("delivered", 0),
    ]
    assert [r.queue for r in qm.put_log()] == ["APP.IN"] * 3


class Spy:
    """Counts put calls per queue on the connections the writer opens."""

    def __init__(self, connect):
        self.connect_fn, self.puts = connect, {}

    def __call__(self):
        conn = self.connect_fn()
        original = conn.put

        def put(handle, md, data, *, syncpoint=True, asynchronous=False):
            self.puts[handle.queue] = self.puts.get(handle.queue, 0) + 1
            return original(handle, md, data, syncpoint=syncpoint, asynchronous=asynchronous)

        conn.put = put
        return conn


@pytest.mark.parametrize("async_put", [False, True])
def test_circuit_breaker_stops_sending_to_a_full_queue(qm, async_put):
    qm.configure({"queues": {"FULL": {"maxdepth": 0}}})
    items = [item(n, "FWD", "FULL" if n % 2 else "OK") for n in range(20)]
    spy = Spy(qm.connect)
    rows = run(items, spy, batch_size=4, breaker_threshold=3, async_put=async_put)
    full = [outcomes(rows)[f"k{n:03d}"] for n in range(1, 20, 2)]
    assert full == [("failed", 2053)] * 3 + [("deferred", None)] * 7
    # never more than breaker_threshold synchronous attempts per run; asynchronously, the
    # first batch's two FULL messages were tried once more before it was put again synchronously
    assert spy.puts["FULL"] == (3 + 2 if async_put else 3)
    assert all(outcomes(rows)[f"k{n:03d}"] == ("delivered", 0) for n in range(0, 20, 2))
    assert [r.queue for r in qm.put_log()] == ["OK"] * 10
    deferred = next(r for r in rows if r["outcome"] == "deferred")
    assert "circuit breaker open for FULL" in deferred["error_text"] and "MQRC_Q_FULL" in deferred["error_text"]


@pytest.mark.parametrize("async_put", [False, True])
def test_a_queue_that_fills_within_a_batch_opens_its_breaker(qm, async_put):
    """A queue with room for three: its fourth put in a batch fails and backs the batch out;
    the three put again succeed but are not committed yet, so they do not close the count:
    after ``breaker_threshold`` failures the breaker opens and the rest is deferred, where
    a put that succeeded in a batch later backed out would keep it closed for ever (every
    failed message costing a backout and the batch's puts again)."""
    qm.configure({"queues": {"FULL": {"maxdepth": 3}}})
    items = [item(n, "FWD", "FULL" if n % 4 else "OK") for n in range(80)]
    spy = Spy(qm.connect)
    rows = run(items, spy, batch_size=10, breaker_threshold=3, async_put=async_put)
    full = [outcomes(rows)[f"k{n:03d}"] for n in range(80) if n % 4]
    assert full == [("delivered", 0)] * 3 + [("failed", 2053)] * 3 + [("deferred", None)] * 54
    assert len(qm.messages("FULL")) == 3 and len(qm.messages("OK")) == 20
    # the three, then each failure after the batch's three put again; asynchronously, the first
    # batch's seven FULL puts were made once more before it was put again synchronously
    assert spy.puts["FULL"] == 3 + 3 * (1 + 3) + (7 if async_put else 0)


def test_the_breaker_counts_consecutive_failures_only(qm):
    # the faults count put calls: synchronous puts, so that each fault meets the message it names
    qm.configure(
        {
            "faults": [
                {"op": "put", "queue": "FLAKY", "reason": 2051, "after": 0, "times": 2},
                {"op": "put", "queue": "FLAKY", "reason": 2051, "after": 4, "times": 2},
            ]
        }
    )
    rows = run(
        [item(n, "FWD", "FLAKY") for n in range(8)], qm.connect, batch_size=1, breaker_threshold=3, async_put=False
    )
    assert sorted(o for o, _ in outcomes(rows).values()) == ["delivered"] * 4 + ["failed"] * 4


def test_reconnect_with_backoff_resends_the_backed_out_batch_once(qm):
    qm.configure({"faults": [{"op": "put", "reason": 2009, "after": 5, "times": 1}]})
    clock = FakeClock()
    rows = run([item(n) for n in range(10)], qm.connect, clock=clock, batch_size=4, backoff_initial=2.0)
    assert clock.sleeps == [2.0]
    assert set(outcomes(rows).values()) == {("delivered", 0)}
    assert [r.md.msg_id for r in qm.put_log()] == [dead_letter(n)[0].msg_id for n in range(10)]


def test_giving_up_after_reconnect_attempts_defers_the_rest(qm):
    qm.configure({"faults": [{"op": "put", "reason": 2009, "after": 2}, {"op": "connect", "reason": 2059, "after": 2}]})
    clock = FakeClock()
    rows = run(
        [item(n) for n in range(6)],
        qm.connect,
        clock=clock,
        batch_size=2,
        reconnect_attempts=3,
        backoff_initial=1.0,
        backoff_max=3.0,
    )
    assert clock.sleeps == [1.0, 2.0, 3.0]
    assert [outcomes(rows)[f"k{n:03d}"] for n in range(6)] == [("delivered", 0)] * 2 + [("deferred", None)] * 4
    assert "no connection to the queue manager" in rows[-1]["error_text"]
    assert len(qm.put_log()) == 2


def test_a_refused_login_is_not_retried(qm):
    qm.configure({"faults": [{"op": "connect", "reason": 2035}]})
    clock = FakeClock()
    rows = run([item(0), item(1, "DISCARD")], qm.connect, clock=clock)
    assert clock.sleeps == [] and outcomes(rows) == {"k000": ("deferred", None), "k001": ("discarded", None)}


def test_connection_lost_during_commit_is_sent_again_at_least_once(qm):
    """The one window MQ leaves: the commit happened but its answer was lost."""
    qm.configure({"faults": [{"op": "commit", "reason": 2009, "committed": True, "times": 1}]})
    rows = run([item(n) for n in range(3)], qm.connect, batch_size=2)
    assert set(outcomes(rows).values()) == {("delivered", 0)} and len(rows) == 3
    ids = [r.md.msg_id for r in qm.put_log()]
    first_two = [dead_letter(n)[0].msg_id for n in (0, 1)]
    assert ids == first_two + first_two + [dead_letter(2)[0].msg_id]


def test_a_commit_refused_without_losing_the_connection_fails_the_batch(qm):
    qm.configure({"faults": [{"op": "commit", "reason": 2003, "times": 1}]})
    rows = run([item(n) for n in range(3)], qm.connect, batch_size=2)
    assert [outcomes(rows)[f"k{n:03d}"] for n in range(3)] == [("failed", 2003)] * 2 + [("delivered", 0)]
    assert [r.md.msg_id for r in qm.put_log()] == [dead_letter(2)[0].msg_id]


def test_rate_limit_on_a_fake_clock(qm):
    clock = FakeClock()
    rows = run([item(n) for n in range(25)], qm.connect, clock=clock, rate_limit=10)
    assert len(rows) == 25
    assert sum(clock.sleeps) == pytest.approx(2.4)  # the first put goes at once, then one per 0.1 s
    started = sorted(r["started_at"] for r in rows)
    assert (started[-1] - started[0]).total_seconds() == pytest.approx(2.4, abs=1e-4)


def test_token_bucket_refills_with_time():
    clock = FakeClock()
    bucket = TokenBucket(4, clock, clock.sleep, burst=2)
    for _ in range(2):
        bucket.take()
    assert clock.sleeps == []
    bucket.take()
    assert clock.sleeps == [pytest.approx(0.25)]
    clock.t += 10  # idle time refills only up to the burst
    bucket.take(), bucket.take()
    assert len(clock.sleeps) == 1
    TokenBucket(0, clock, clock.sleep).take()  # 0 = unlimited


def test_depth_check_holds_back_above_the_headroom(qm):
    qm.configure({"queues": {"ALMOST": {"maxdepth": 10}, "ROOMY": {"maxdepth": 10}}})
    c = qm.connect()
    h = c.open_for_put("ALMOST")
    for n in range(9):
        c.put(h, MQMD(msg_id=bytes([n + 1]) * 24), b"old")
    c.commit()
    items = [item(n, "FWD", "ALMOST" if n < 2 else "ROOMY") for n in range(10)]
    rows = run(items, qm.connect, depth_check=True, depth_headroom=0.5, batch_size=3)
    got = [outcomes(rows)[f"k{n:03d}"][0] for n in range(10)]
    assert got == ["deferred"] * 2 + ["delivered"] * 5 + ["deferred"] * 3  # ROOMY: 5 of 10 allowed
    assert "above the 50% headroom" in rows[0]["error_text"]


def test_dry_run_puts_nothing_and_records_what_would_happen():
    rows = run([item(0), item(1, "FWD", " "), item(2, "DISCARD"), item(3, truncated=True)], DryRunConnection)
    assert outcomes(rows) == {
        "k000": ("dry_run", None),
        "k001": ("dry_run", None),
        "k002": ("dry_run", None),
        "k003": ("ignored", None),
    }
    assert rows[0]["error_text"] is None and "would fail" in rows[1]["error_text"]
    assert rows[2]["error_text"] == "would discard"  # a dry run ends nothing, so settle removes nothing


def test_a_crashed_partition_resumes_from_its_checkpoint_without_sending_twice(qm, tmp_path):
    items = [item(n) for n in range(10)] + [item(10, "DISCARD")]
    cp = Checkpoint.for_partition(tmp_path, "R1", 3)

    def crash_after_two(batches):
        if batches == 2:
            raise RuntimeError("executor lost")

    first = []
    with pytest.raises(RuntimeError):
        for row in replay_partition(
            items,
            qm.connect,
            ReplaySettings(batch_size=3),
            run_id="R1",
            partition_id=3,
            checkpoint=cp,
            clock=FakeClock(),
            sleep=lambda s: None,
            now=NOW,
            on_commit=crash_after_two,
        ):
            first.append(row)
    assert len(qm.put_log()) == 6 and len(first) == 3  # the second batch's rows never reached Spark

    second = run(items, qm.connect, checkpoint=cp, batch_size=3)
    assert [r.md.msg_id for r in qm.put_log()] == [dead_letter(n)[0].msg_id for n in range(10)]
    assert sorted(r["message_key"] for r in second) == [f"k{n:03d}" for n in range(11)]
    assert second[:3] == first  # re-emitted exactly as first written
    batches = {r["message_key"]: r["batch_id"] for r in second}
    assert [batches[f"k{n:03d}"] for n in range(11)] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, None]
    assert second[-2]["message_key"] == "k010"  # rows come as settled: the last batch after the discard

    third = run(items, qm.connect, checkpoint=cp, batch_size=3)  # a third evaluation changes nothing
    key = lambda r: r["message_key"]  # noqa: E731
    assert sorted(third, key=key) == sorted(second, key=key) and len(qm.put_log()) == 10


def test_checkpoint_ignores_a_record_torn_by_a_crash_and_keeps_breakers(qm, tmp_path):
    qm.configure({"queues": {"FULL": {"maxdepth": 0}}})
    cp = Checkpoint.for_partition(tmp_path, "R1", 0)
    items = [item(n, "FWD", "FULL" if n < 2 else "OK") for n in range(4)]
    rows = run(items, qm.connect, checkpoint=cp, batch_size=1, breaker_threshold=2)
    # a crash mid-write leaves only a hidden temporary object, never a record
    (Path(cp.path) / ".00000005.json.1a2b3c4d.tmp").write_bytes(b'{"next_batch": 99, "rows": [')
    state = cp.load()
    assert state.next_batch == 2 and sorted(state.rows) == ["k000", "k001", "k002", "k003"]
    assert state.breakers == [["", "FULL", 2, True, 2053], ["", "OK", 0, False, None]]
    more = run(items + [item(9, "FWD", "FULL")], qm.connect, checkpoint=cp, batch_size=1, breaker_threshold=2)
    assert more[:4] == rows and more[4]["outcome"] == "deferred"  # the breaker stays open on resume
    with pytest.raises(ValueError):
        Checkpoint.for_partition(tmp_path, "../escape", 0)


def test_a_repeated_key_is_processed_once(qm):
    rows = run([item(1), item(1)], qm.connect)
    assert len(rows) == 1 and len(qm.put_log()) == 1


def test_settings_from_config():
    from dlq_pipeline.config import load_config

    config = load_config(overrides={"replay": {"batch_size": 7, "rate_limit": 2, "depth_check": True}})
    s = ReplaySettings.from_config(config)
    assert (s.batch_size, s.rate_limit, s.depth_check, s.breaker_threshold, s.reconnect_attempts) == (
        7,
        2.0,
        True,
        5,
        3,
    )


def test_errors_other_than_mq_propagate_after_backing_out(qm):
    calls = []

    class Boom(Exception):
        pass

    def connect():
        conn = qm.connect()
        original = conn.put

        def put(handle, md, data, *, syncpoint=True, asynchronous=False):
            calls.append(md.msg_id)
            if len(calls) == 2:
                raise Boom()
            original(handle, md, data, syncpoint=syncpoint, asynchronous=asynchronous)

        conn.put = put
        return conn

    with pytest.raises(Boom):
        run([item(0), item(1)], connect)
    assert qm.put_log() == [] and qm.messages("APP.IN") == []
    assert isinstance(MQError(2053), Exception)


def _mixed_run(async_put: bool, batch_size: int):
    """A partition meeting every kind of refusal a queue gives, on a fresh queue manager."""
    qm = SimQueueManager(":memory:", "QM1")
    try:
        qm.configure(
            {
                "queues": {
                    "FULL": {"maxdepth": 2},
                    "SHUT": {"put_inhibited": True},
                    "SMALL": {"maxmsgl": 40},
                    "GONE": {"exists": False},
                }
            }
        )
        queues = ["APP.IN", "FULL", "APP.IN", "SHUT", "SMALL", "APP.IN", "GONE", "FULL", "OTHER", "FULL"]
        items = [item(n, "FWD", queues[n % len(queues)], payload=b"x" * (n % 7) * 10) for n in range(37)]
        spy = Spy(qm.connect)
        rows = run(items, spy, batch_size=batch_size, breaker_threshold=4, async_put=async_put)
        settled = {r["message_key"]: (r["outcome"], r["reason_code"], r["batch_id"], r["error_text"]) for r in rows}
        return settled, sent(qm), spy.puts
    finally:
        qm.close()


@pytest.mark.parametrize("batch_size", [1, 3, 8, 200])
def test_asynchronous_puts_settle_every_message_as_synchronous_puts_do(batch_size):
    synchronous, sync_sent, sync_calls = _mixed_run(False, batch_size)
    asynchronous, async_sent, async_calls = _mixed_run(True, batch_size)
    assert asynchronous == synchronous  # outcome, reason, batch and text of every message
    assert async_sent == sync_sent  # the same messages put, in the same order
    assert {o for o, *_ in synchronous.values()} == {"delivered", "failed", "deferred"}
    # batches with a refused put were tried asynchronously first, then again synchronously
    assert sum(async_calls.values()) > sum(sync_calls.values())


def test_a_batch_whose_asynchronous_puts_all_succeed_is_put_once(qm):
    spy = Spy(qm.connect)
    rows = run([item(n) for n in range(10)], spy, batch_size=4)
    assert set(outcomes(rows).values()) == {("delivered", 0)}
    assert spy.puts == {"APP.IN": 10}
    assert [r["batch_id"] for r in rows] == [0] * 4 + [1] * 4 + [2] * 2


def test_a_connection_that_cannot_put_asynchronously_puts_synchronously(qm):
    calls = []

    def connect():
        conn = qm.connect()
        conn.async_put = False  # e.g. pymqi, which has no MQSTAT
        original = conn.put

        def put(handle, md, data, *, syncpoint=True, asynchronous=False):
            calls.append(asynchronous)
            original(handle, md, data, syncpoint=syncpoint, asynchronous=asynchronous)

        conn.put = put
        return conn

    rows = run([item(n) for n in range(5)], connect, batch_size=2)
    assert set(outcomes(rows).values()) == {("delivered", 0)} and calls == [False] * 5
    calls.clear()
    run([item(n) for n in range(5, 8)], qm.connect, batch_size=2, async_put=False)
    assert calls == []  # (the plain sim connection: the setting alone keeps puts synchronous)
    assert len(qm.put_log()) == 8


def test_mqstat_refused_puts_the_batch_again_synchronously(qm):
    qm.configure({"faults": [{"op": "stat", "reason": 2195, "times": 1}]})  # MQRC_UNEXPECTED_ERROR once
    spy = Spy(qm.connect)
    rows = run([item(n) for n in range(4)], spy, batch_size=4)
    assert set(outcomes(rows).values()) == {("delivered", 0)} and spy.puts == {"APP.IN": 8}
    assert [r.md.msg_id for r in qm.put_log()] == [dead_letter(n)[0].msg_id for n in range(4)]
