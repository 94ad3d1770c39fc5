"""The simulated queue manager behaves like MQ where replay and drain depend on it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlq_pipeline.mq import reasons, sim
from dlq_pipeline.mq.interface import Message, MQError, read_whole
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.mq.sim import SimQueueManager, normalize_config
from tests.profiles import examples


def md(n: int, **changes) -> MQMD:
    base = MQMD(
        version=2,
        msg_id=b"MSG" + n.to_bytes(4, "big") + b"\x01" * 17,
        correl_id=b"COR" + n.to_bytes(4, "big") + b"\x02" * 17,
        format="MQSTR   ",
        encoding=273,
        ccsid=500,
        persistence=1,
        priority=4,
        user_id="ALICE       ",
        put_appl_name="orders.exe".ljust(28),
        put_date="20260105",
        put_time="10111213",
        appl_identity_data="ident".ljust(32),
        appl_origin_data="ORIG",
        accounting_token=b"\x16" + b"\x07" * 31,
    )
    return base.replace(**changes)


@pytest.fixture
def qm():
    q = SimQueueManager(":memory:", "QM1")
    yield q
    q.close()


def put(conn, queue, n, data=None, **open_kw):
    handle = conn.open_for_put(queue, **open_kw)
    conn.put(handle, md(n), data if data is not None else b"body-%d" % n)


def test_fifo_browse_and_destructive_get(qm):
    c = qm.connect()
    for n in range(3):
        put(c, "Q1", n)
    c.commit()
    browsed = list(c.browse("Q1"))
    assert [m.data for m in browsed] == [b"body-0", b"body-1", b"body-2"]
    assert [m.data for m in c.browse("Q1")] == [b"body-0", b"body-1", b"body-2"]  # browse removes nothing
    first = c.get("Q1")
    assert first.data == b"body-0" and first.md.msg_id == md(0).msg_id
    c.commit()
    assert [m.data for m in qm.messages("Q1")] == [b"body-1", b"body-2"]
    with pytest.raises(MQError) as end:
        c.get("Q1", msg_id=md(0).msg_id)
    assert end.value.reason == reasons.MQRC_NO_MSG_AVAILABLE


def test_get_by_msg_id_takes_the_oldest_match_on_that_queue_only(qm):
    """Through the MsgId index (not the queue's): still the queue's first match in put order,
    never another queue's message with the same MsgId, nor one already got."""
    c = qm.connect()
    same = md(7).msg_id
    for n, queue in [(0, "Q2"), (1, "Q1"), (2, "Q1"), (3, "Q1"), (4, "Q1")]:
        handle = c.open_for_put(queue)
        c.put(handle, md(n, msg_id=same) if n != 2 else md(n), b"body-%d" % n)
    c.commit()
    assert [c.get("Q1", msg_id=same).data for _ in range(3)] == [b"body-1", b"body-3", b"body-4"]
    with pytest.raises(MQError) as end:
        c.get("Q1", msg_id=same)
    assert end.value.reason == reasons.MQRC_NO_MSG_AVAILABLE
    c.commit()
    assert [m.data for m in qm.messages("Q1")] == [b"body-2"]
    assert [m.data for m in qm.messages("Q2")] == [b"body-0"]


def test_get_matches_msg_id_and_correl_id(qm):
    c = qm.connect()
    for n in range(3):
        put(c, "Q1", n)
    c.commit()
    got = c.get("Q1", msg_id=md(2).msg_id, correl_id=md(2).correl_id)
    assert got.data == b"body-2"
    with pytest.raises(MQError) as nomatch:
        c.get("Q1", msg_id=md(1).msg_id, correl_id=md(0).correl_id)
    assert nomatch.value.reason == 2033
    c.commit()
    assert [m.data for m in qm.messages("Q1")] == [b"body-0", b"body-1"]


def test_messages_keep_the_descriptor_and_bytes_as_put(qm):
    c = qm.connect()
    data = bytes(range(256)) * 3
    put(c, "Q1", 7, data)
    c.commit()
    (stored,) = qm.messages("Q1")
    assert stored.data == data
    assert stored.md == md(7)  # version 2, BackoutCount 0: everything else as put
    (record,) = qm.put_log()
    assert (record.queue, record.qmgr, record.md, record.data, record.user) == ("Q1", "QM1", md(7), data, "dlqpipe")


def test_units_of_work_are_invisible_until_commit_and_undone_by_backout(qm):
    writer, reader = qm.connect(), qm.connect()
    put(writer, "Q1", 1)
    assert list(writer.browse("Q1")) == []  # not even to its own connection
    assert qm.messages("Q1") == [] and qm.put_log() == []
    writer.backout()
    assert reader.inquire_depth("Q1") == (0, 5000)
    put(writer, "Q1", 2)
    writer.commit()
    assert [m.data for m in reader.browse("Q1")] == [b"body-2"]
    assert [r.md.msg_id for r in qm.put_log()] == [md(2).msg_id]


def test_backout_of_a_get_restores_the_message_and_counts_it(qm):
    c = qm.connect()
    put(c, "Q1", 1)
    c.commit()
    got = c.get("Q1")
    assert got.md.backout_count == 0
    with pytest.raises(MQError) as gone:
        c.get("Q1")  # got in the open unit of work: not available again
    assert gone.value.reason == 2033
    c.backout()
    again = c.get("Q1")
    assert again.md.backout_count == 1 and again.data == b"body-1"
    c.backout()
    assert qm.messages("Q1")[0].md.backout_count == 2


def test_disconnect_commits_like_mqdisc(qm):
    c = qm.connect()
    put(c, "Q1", 1)
    c.disconnect()
    assert [m.data for m in qm.messages("Q1")] == [b"body-1"]


def test_maxdepth_maxmsgl_and_inhibit(qm):
    qm.configure(
        {
            "queues": {"SMALL": {"maxdepth": 2, "maxmsgl": 10}, "SHUT": {"put_inhibited": True, "get_inhibited": True}},
            "qmgr_maxmsgl": 20,
        }
    )
    c = qm.connect()
    put(c, "SMALL", 1, b"x")
    put(c, "SMALL", 2, b"y")  # uncommitted puts count towards CURDEPTH, as in MQ
    for queue, data, reason in [
        ("SMALL", b"z", 2053),
        ("SMALL", b"z" * 11, 2030),
        ("BIG", b"z" * 21, 2031),
        ("SHUT", b"z", 2051),
    ]:
        with pytest.raises(MQError) as err:
            put(c, queue, 3, data)
        assert err.value.reason == reason
    c.commit()  # the failed puts did not spoil the unit of work
    assert [m.data for m in qm.messages("SMALL")] == [b"x", b"y"]
    with pytest.raises(MQError) as err:
        c.get("SHUT")
    assert err.value.reason == 2016
    assert c.inquire_depth("SMALL") == (2, 2)


def _counted(qm, queue):
    """CURDEPTH as MQ defines it, counted row by row: every message on the queue, including
    puts and gets of open units of work."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(qm.path)) as db:
        return db.execute("SELECT COUNT(*) FROM messages WHERE qmgr=? AND queue=?", (qm.name, queue)).fetchone()[0]


def test_depth_follows_puts_gets_commits_and_backouts(qm):
    c, other = qm.connect(), qm.connect()
    seen = []

    def depth():
        seen.append((other.inquire_depth("Q1")[0], _counted(qm, "Q1")))  # both see committed work only
        return c.inquire_depth("Q1")[0]

    for n in range(3):
        put(c, "Q1", n)
    assert depth() == 3  # uncommitted puts count
    c.backout()
    assert depth() == 0
    for n in range(3):
        put(c, "Q1", n)
    c.commit()
    c.get("Q1")
    assert depth() == 3  # a message got in an open unit of work still counts
    c.backout()
    assert depth() == 3
    c.get("Q1")
    c.commit()
    assert depth() == 2
    c.get("Q1", syncpoint=False)
    assert depth() == 1
    assert all(kept == counted for kept, counted in seen)


def test_a_file_made_before_depths_were_kept_gets_them_counted(tmp_path):
    import sqlite3
    from contextlib import closing

    path = tmp_path / "OLD.sqlite"
    c = SimQueueManager(path, "OLD").connect()
    for n in range(4):
        put(c, "Q1", n)
    c.commit()
    c.disconnect()
    with closing(sqlite3.connect(path)) as db:  # as an earlier version left it
        db.executescript("DROP TRIGGER depth_out; DROP TABLE depths;")
    reopened = SimQueueManager(path, "OLD").connect()
    assert reopened.inquire_depth("Q1")[0] == 4
    put(reopened, "Q1", 9)
    reopened.commit()
    assert reopened.inquire_depth("Q1")[0] == 5
    reopened.disconnect()


def test_a_body_is_stored_once_and_a_file_made_before_keeps_its_messages(tmp_path):
    import dataclasses
    import json
    import sqlite3
    from contextlib import closing

    path = tmp_path / "OLD.sqlite"
    c = SimQueueManager(path, "OLD").connect()
    put(c, "Q1", 0)
    put(c, "Q1", 1, set_all_context=False)  # the stored descriptor is not the given one
    c.commit()
    c.disconnect()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT count(*) FROM messages WHERE length(data) > 0").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM put_log WHERE length(data) > 0").fetchone() == (2,)
        assert db.execute("PRAGMA page_size").fetchone() == (16384,)  # a new file's (see SimQueueManager._open)
        # as an earlier version left it: bodies and descriptors (JSON objects) in the message
        # rows, no log_seq, CURDEPTH counted by a trigger per inserted row
        db.executescript(
            "DELETE FROM messages; ALTER TABLE messages DROP COLUMN log_seq; "
            "ALTER TABLE get_log DROP COLUMN log_seq; "
            "CREATE TRIGGER depth_in AFTER INSERT ON messages BEGIN INSERT INTO depths "
            "VALUES (NEW.qmgr, NEW.queue, 1) ON CONFLICT (qmgr, queue) DO UPDATE SET depth = depth + 1; END"
        )
        db.executemany(
            "INSERT INTO messages (qmgr, queue, md, data, msg_id, correl_id, state) VALUES (?,?,?,?,?,?,0)",
            [
                (
                    "OLD",
                    "Q1",
                    json.dumps(
                        {k: v.hex() if isinstance(v, bytes) else v for k, v in dataclasses.asdict(md(n)).items()}
                    ),
                    b"old-%d" % n,
                    md(n).msg_id,
                    md(n).correl_id,
                )
                for n in (5, 6)
            ],
        )
        db.commit()
    qm = SimQueueManager(path, "OLD")
    c = qm.connect()
    assert c.inquire_depth("Q1")[0] == 2
    put(c, "Q1", 7)
    c.commit()
    assert c.inquire_depth("Q1")[0] == 3  # counted once: the per-row trigger is gone
    assert [(m.md.msg_id, m.data) for m in qm.messages("Q1")] == [
        (md(5).msg_id, b"old-5"),
        (md(6).msg_id, b"old-6"),
        (md(7).msg_id, b"body-7"),
    ]
    got = c.get("Q1", msg_id=md(6).msg_id)
    c.commit()
    assert (got.md.replace(version=2), got.data) == (md(6), b"old-6")
    assert [(m.md, m.data) for m in c.browse("Q1")] == [(md(5), b"old-5"), (md(7), b"body-7")]
    c.get("Q1", msg_id=md(7).msg_id, syncpoint=False)
    assert [(m.md, m.data) for m in qm.get_log("Q1")] == [(md(6), b"old-6"), (md(7), b"body-7")]
    c.disconnect()


def test_unknown_queues_and_queue_managers(qm):
    qm.configure({"queues": {"GONE": {"exists": False}}, "remote_qmgrs": ["QM2"]})
    c = qm.connect()
    for call in (
        lambda: c.open_for_put("GONE"),
        lambda: c.get("NEVER.PUT"),
        lambda: list(c.browse("NEVER.PUT")),
        lambda: c.inquire_depth("NEVER.PUT"),
    ):
        with pytest.raises(MQError) as err:
            call()
        assert err.value.reason == 2085
    put(c, "AUTO", 1)  # auto-defined on first put
    with pytest.raises(MQError) as err:
        c.open_for_put("Q", "QM9")
    assert err.value.reason == 2087
    h = c.open_for_put("REMOTE.Q", "QM2")
    c.put(h, md(5), b"far")
    own = c.open_for_put("LOCAL.Q", "QM1")  # its own name is local
    c.put(own, md(6), b"near")
    c.commit()
    assert [m.data for m in qm.messages("REMOTE.Q", "QM2")] == [b"far"]
    assert qm.messages("REMOTE.Q") == []
    assert [(r.qmgr, r.queue) for r in qm.put_log()] == [("QM1", "AUTO"), ("QM2", "REMOTE.Q"), ("QM1", "LOCAL.Q")]

    qm.configure({"remote_qmgrs": ["*"]})
    anywhere = qm.connect()
    anywhere.put(anywhere.open_for_put("Q", "ANY.QM"), md(8), b"any")
    anywhere.commit()
    assert [m.data for m in qm.messages("Q", "ANY.QM")] == [b"any"]

    qm.configure({"auto_define": False})
    with pytest.raises(MQError) as err:
        qm.connect().open_for_put("ANOTHER")
    assert err.value.reason == 2085


def test_authority_is_checked_at_open(qm):
    qm.configure(
        {
            "queues": {
                "NOSET": {"authority": {"dlqpipe": ["put"]}},
                "CTX": {"authority": {"dlqpipe": ["altusr"], "ALICE": ["put", "setall"]}},
                "NOALT": {"authority": {"*": ["put", "setall"]}},
                "NOPUT": {"authority": {"*": ["browse"]}},
            }
        }
    )
    c = qm.connect()
    cases = [
        ("NOSET", {}),
        ("NOALT", {"alternate_user": "ALICE"}),
        ("NOPUT", {"set_all_context": False}),
        ("CTX", {"alternate_user": "BOB"}),
        ("CTX", {}),
    ]
    for queue, kw in cases:
        with pytest.raises(MQError) as err:
            c.open_for_put(queue, **kw)
        assert err.value.reason == reasons.MQRC_NOT_AUTHORIZED, (queue, kw)
    c.open_for_put("NOSET", set_all_context=False)  # default context needs no setall
    put(c, "CTX", 1, alternate_user="ALICE")
    c.commit()
    assert [(r.queue, r.user) for r in qm.put_log()] == [("CTX", "ALICE")]


def test_default_context_and_generated_msg_id(qm):
    c = qm.connect(user="batch")
    h = c.open_for_put("Q1", set_all_context=False)
    c.put(h, md(1, msg_id=b"\x00" * 24), b"d")
    c.commit()
    (stored,) = qm.messages("Q1")
    assert stored.md.msg_id != b"\x00" * 24 and len(stored.md.msg_id) == 24
    assert stored.md.user_id == "batch       " and stored.md.put_appl_name.startswith("dlq_pipeline.mq.sim")
    assert stored.md.correl_id == md(1).correl_id and stored.md.format == "MQSTR   "
    assert qm.put_log()[0].md == md(1, msg_id=b"\x00" * 24)  # the log keeps what was passed


def test_truncation_is_refused_and_browse_grows_the_buffer(qm):
    c = qm.connect()
    bodies = [b"a" * 10, b"b" * 5000, b"c" * 3]
    for n, body in enumerate(bodies):
        put(c, "Q1", n, body)
    c.commit()
    with pytest.raises(MQError) as err:
        c.mqget("Q1", max_length=9, browse="first")
    assert err.value.reason == 2080 and err.value.data_length == 10
    assert c.mqget("Q1", max_length=10, browse="first").data == bodies[0]
    with pytest.raises(MQError) as err:
        c.mqget("Q1", max_length=100, browse="next")
    assert err.value.data_length == 5000
    assert c.mqget("Q1", max_length=5000, browse="next").data == bodies[1]  # the cursor did not move
    assert [m.data for m in c.browse("Q1", buffer_size=4)] == bodies
    assert c.get("Q1", buffer_size=1).data == bodies[0]


def test_read_whole_grows_to_the_reported_length_and_passes_other_errors():
    calls = []

    def attempt(length):
        calls.append(length)
        if length < 70000:
            raise MQError(2080, data_length=70000 if len(calls) == 1 else None)
        return Message(MQMD(), b"x")

    assert read_whole(attempt, 100).data == b"x"
    assert calls == [100, 70000]
    calls.clear()

    def unreported(length):
        calls.append(length)
        if length < 800:
            raise MQError(2080)
        return Message(MQMD(), b"y")

    read_whole(unreported, 100)
    assert calls == [100, 200, 400, 800]
    with pytest.raises(MQError) as err:
        read_whole(lambda n: (_ for _ in ()).throw(MQError(2033)))
    assert err.value.reason == 2033


def test_connection_broken_backs_out_and_stays_broken(qm):
    qm.configure({"faults": [{"op": "put", "reason": 2009, "after": 2, "times": 1}]})
    c = qm.connect()
    put(c, "Q1", 1)
    put(c, "Q1", 2)
    with pytest.raises(MQError) as err:
        put(c, "Q1", 3)
    assert err.value.reason == 2009 and err.value.connection_failure
    with pytest.raises(MQError) as err:
        c.commit()
    assert err.value.reason == 2009
    assert qm.messages("Q1") == [] and qm.put_log() == []
    fresh = qm.connect()  # the fault fired its one time, counted across connections
    put(fresh, "Q1", 4)
    fresh.commit()
    assert [m.data for m in qm.messages("Q1")] == [b"body-4"]


def test_faults_by_queue_probability_delay_and_commit(qm):
    qm.configure(
        {
            "seed": 7,
            "faults": [
                {"op": "put", "queue": "FLAKY", "reason": 2053, "probability": 0.5},
                {"op": "put", "queue": "SLOW", "delay": 0.05},
                {"op": "commit", "reason": 2003, "after": 1, "times": 1},
            ],
        }
    )
    c = qm.connect()
    outcomes = []
    for n in range(40):
        try:
            put(c, "FLAKY", n)
            outcomes.append(True)
        except MQError as exc:
            assert exc.reason == 2053
            outcomes.append(False)
    assert 5 < outcomes.count(False) < 35
    c.backout()
    qm.configure(qm.config())  # resets the shared fault counts
    again = qm.connect()  # the same seed gives the same sequence on a new connection
    repeat = []
    for n in range(40):
        try:
            put(again, "FLAKY", n)
            repeat.append(True)
        except MQError:
            repeat.append(False)
    assert repeat == outcomes
    again.backout()

    started = time.monotonic()
    put(c, "SLOW", 1)
    assert time.monotonic() - started >= 0.05
    c.commit()  # the first commit passes (after=1)
    put(c, "SLOW", 2)
    with pytest.raises(MQError) as err:
        c.commit()
    assert err.value.reason == 2003
    assert [m.data for m in qm.messages("SLOW")] == [b"body-1"]  # the failed commit backed out


def test_unconditional_faults_keep_no_shared_counts(qm):
    """A fault without `after`/`times` (e.g. a delay standing for latency) needs no counts,
    so it costs no database transactions per call; counted faults still count."""
    import sqlite3

    qm.configure(
        {
            "faults": [
                {"op": "put", "delay": 0.0001},
                {"op": "commit", "delay": 0.0001},
                {"op": "put", "queue": "LIMITED", "reason": 2053, "after": 2},
            ]
        }
    )
    c = qm.connect()
    for n in range(3):
        put(c, "Q1", n)
    c.commit()
    with sqlite3.connect(qm.faults_path) as db:
        assert db.execute("SELECT COUNT(*) FROM counts").fetchone()[0] == 0
    put(c, "LIMITED", 1)
    put(c, "LIMITED", 2)
    with pytest.raises(MQError) as err:
        put(c, "LIMITED", 3)
    assert err.value.reason == 2053
    with sqlite3.connect(qm.faults_path) as db:
        assert db.execute("SELECT fault, seen, fired FROM counts").fetchall() == [(2, 3, 1)]
    assert len(qm.messages("Q1")) == 3


def test_a_fault_that_fires_with_a_reason_is_counted_even_without_after(qm):
    """Soak tests prove that chance faults really fired by reading these counts."""
    import sqlite3

    qm.configure({"seed": 1, "faults": [{"op": "put", "queue": "FLAKY", "reason": 2053, "probability": 0.5}]})
    outcomes = []
    c = qm.connect()
    for n in range(40):
        try:
            put(c, "FLAKY", n)
            outcomes.append("ok")
        except MQError as err:
            assert err.reason == 2053
            outcomes.append("broken")
    assert 0 < outcomes.count("broken") < 40
    with sqlite3.connect(qm.faults_path) as db:
        assert db.execute("SELECT fault, seen, fired FROM counts").fetchall() == [(0, 0, outcomes.count("broken"))]


def test_in_doubt_commit_commits_then_reports_a_broken_connection(qm):
    qm.configure({"faults": [{"op": "commit", "reason": 2009, "committed": True, "times": 1}]})
    c = qm.connect()
    put(c, "Q1", 1)
    with pytest.raises(MQError) as err:
        c.commit()
    assert err.value.reason == 2009
    assert [m.data for m in qm.messages("Q1")] == [b"body-1"]


def test_connect_fault(qm):
    qm.configure({"faults": [{"op": "connect", "reason": 2059, "times": 1}]})
    with pytest.raises(MQError) as err:
        qm.connect()
    assert err.value.reason == 2059
    qm.connect().disconnect()


def test_configuration_is_validated():
    with pytest.raises(ValueError) as err:
        normalize_config(
            {
                "queus": {},
                "queues": {"Q": {"maxdeph": 1, "authority": {"u": ["fly"]}}},
                "faults": [{"op": "jump"}, {"reason": 2053, "probability": 2}],
            }
        )
    text = str(err.value)
    for fragment in ("'queus'", "'maxdeph'", "'fly'", "op must be one of", "needs a reason code", "probability"):
        assert fragment in text


SCRIPT = textwrap.dedent("""
    import sys, time
    from dlq_pipeline.mq.mqmd import MQMD
    from dlq_pipeline.mq.sim import SimQueueManager
    qm = SimQueueManager(sys.argv[1], "QM1")
    c = qm.connect()
    h = c.open_for_put("Q1")
    c.put(h, MQMD(msg_id=b"A" * 24), b"committed")
    c.commit()
    c.put(h, MQMD(msg_id=b"B" * 24), b"in flight")
    print("ready", flush=True)
    time.sleep(60)
""")


def test_state_is_shared_between_processes_and_kill_9_backs_out(tmp_path):
    path = tmp_path / "QM1.sqlite"
    qm = SimQueueManager(path, "QM1", busy_timeout=10)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", SCRIPT, str(path)], stdout=subprocess.PIPE, env=env)
    try:
        assert child.stdout.readline().strip() == b"ready"
        assert [m.data for m in qm.messages("Q1")] == [b"committed"]
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    c = qm.connect()  # the dead process's write lock is gone with it
    c.put(c.open_for_put("Q1"), MQMD(msg_id=b"C" * 24), b"after")
    c.commit()
    assert [m.data for m in qm.messages("Q1")] == [b"committed", b"after"]
    assert [r.data for r in SimQueueManager(path, "QM1").put_log()] == [b"committed", b"after"]
    with pytest.raises(ValueError):
        SimQueueManager(path, "OTHER")


def test_latency_inside_a_unit_of_work_is_slept_after_it_without_holding_the_database(qm):
    """Two connections with slow puts and commits overlap their latency, as two connections
    to a real queue manager do: the delays fall after each unit of work's transaction."""
    import threading

    qm.configure({"faults": [{"op": "put", "delay": 0.05}, {"op": "commit", "delay": 0.2}]})
    first, second = qm.connect(), qm.connect()
    put(first, "Q1", 1)  # no unit of work open yet: slept at once
    began = time.monotonic()
    put(first, "Q1", 2)
    assert time.monotonic() - began < 0.05  # inside the unit of work: owed ...
    began = time.monotonic()
    first.commit()
    assert time.monotonic() - began >= 0.25  # ... and paid with the commit's own delay

    def put_and_commit(conn, n):
        put(conn, "Q1", n)  # opens the unit of work: slept at once, before the database is held
        conn.commit()  # the database is held only while committing, then the latency is slept

    began = time.monotonic()
    threads = [threading.Thread(target=put_and_commit, args=(c, n)) for n, c in ((3, first), (4, second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert time.monotonic() - began < 0.4  # one after the other they take 0.5 s: the latency overlapped
    assert sorted(m.data for m in qm.messages("Q1")) == [b"body-1", b"body-2", b"body-3", b"body-4"]


def test_a_unit_of_work_sees_its_own_puts_and_others_commits_between_units(qm):
    """A unit's puts are inserted at its commit: the depth it checks and reports still counts
    them, per queue, and what other connections committed before the unit began."""
    qm.configure({"queues": {"SMALL": {"maxdepth": 3}}})
    c, other = qm.connect(), qm.connect()
    put(c, "SMALL", 1)
    put(c, "OTHER.Q", 2)
    assert c.inquire_depth("SMALL") == (1, 3) and c.inquire_depth("OTHER.Q")[0] == 1
    with pytest.raises(MQError) as none:
        c.get("SMALL")  # a unit's own puts are not available to it before the commit
    assert none.value.reason == reasons.MQRC_NO_MSG_AVAILABLE
    c.commit()
    put(other, "SMALL", 3)
    other.commit()
    put(c, "SMALL", 4)  # a new unit: the other connection's commit counts
    assert c.inquire_depth("SMALL") == (3, 3)
    with pytest.raises(MQError) as full:
        put(c, "SMALL", 5)
    assert full.value.reason == reasons.MQRC_Q_FULL
    c.backout()
    assert c.inquire_depth("SMALL") == (2, 3)
    put(c, "SMALL", 6)
    c.commit()
    assert [m.md.msg_id for m in qm.messages("SMALL")] == [md(1).msg_id, md(3).msg_id, md(6).msg_id]


def test_put_log_and_fifo_follow_the_order_of_the_puts_across_queues_and_connections(qm):
    c, other = qm.connect(), qm.connect()
    for queue, n in [("A", 1), ("B", 2), ("A", 3)]:
        put(c, queue, n)
    c.commit()
    assert c.get("A").data == b"body-1"  # a get in the unit, then puts: removed and added at its commit
    put(c, "B", 4)
    c.commit()
    other.put(other.open_for_put("A"), md(5), b"body-5", syncpoint=False)
    put(other, "A", 6)
    other.commit()
    log = qm.put_log()
    assert [(r.queue, r.md.msg_id) for r in log] == [
        (q, md(n).msg_id) for q, n in [("A", 1), ("B", 2), ("A", 3), ("B", 4), ("A", 5), ("A", 6)]
    ]
    assert [r.connection for r in log] == [c.id] * 4 + [other.id] * 2
    assert [m.data for m in qm.messages("A")] == [b"body-3", b"body-5", b"body-6"]
    assert [m.data for m in qm.messages("B")] == [b"body-2", b"body-4"]


def test_units_of_puts_on_two_connections_do_not_wait_for_each_other(tmp_path):
    """A unit of puts takes SQLite's write lock only at its commit: another connection puts
    and commits meanwhile (with the lock held from the first put this would wait out the busy
    timeout). Its rows go in at its commit, so a queue holds them in commit order."""
    qm = SimQueueManager(tmp_path / "QM.sqlite", "QM1", busy_timeout=0.5)
    c, other = qm.connect(), qm.connect()
    put(c, "A", 1)
    began = time.monotonic()
    put(other, "A", 2)
    put(other, "B", 3)
    other.commit()
    assert time.monotonic() - began < 0.4
    assert c.inquire_depth("A") == (1, 5000)  # its own put and what was committed before its unit
    put(c, "B", 4)
    c.commit()
    assert [(r.queue, r.md.msg_id) for r in qm.put_log()] == [
        ("A", md(2).msg_id),
        ("B", md(3).msg_id),
        ("A", md(1).msg_id),
        ("B", md(4).msg_id),
    ]
    assert [m.data for m in qm.messages("A")] == [b"body-2", b"body-1"]
    c.disconnect()
    other.disconnect()


def test_a_defined_queue_is_opened_and_put_to_while_another_connection_holds_the_write_lock(tmp_path):
    """MQOPEN and a unit's first put to a queue read its definition and depth as committed,
    without the write lock: a connection whose unit holds it (a get under syncpoint) keeps
    nobody else from opening and putting; only the commit waits for the lock. A queue not yet
    defined still takes the lock to be defined."""
    qm = SimQueueManager(tmp_path / "QM.sqlite", "QM1", busy_timeout=0.2)
    holder, other = qm.connect(), qm.connect()
    put(holder, "A", 1)
    put(holder, "B", 2)
    holder.commit()
    assert holder.get("A").data == b"body-1"  # the holder's unit now holds the write lock
    put(other, "B", 3)  # did not wait out the busy timeout
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        other.commit()  # the commit does
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        other.open_for_put("NEW.QUEUE")  # defining a queue does
    holder.commit()
    other.commit()  # its unit was still open: the put goes in now
    assert [m.data for m in qm.messages("B")] == [b"body-2", b"body-3"]
    assert [m.data for m in qm.messages("A")] == []
    holder.disconnect()
    other.disconnect()


def test_the_write_lock_is_taken_once_released_and_the_busy_timeout_stays_the_connections(tmp_path):
    """`_write_lock` asks for the lock again every millisecond or sooner (SQLite's busy
    handler sleeps up to 100 ms between attempts) until the connection's busy timeout, which
    it leaves as it found it."""
    path = tmp_path / "lock.sqlite"
    holder = sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)
    holder.execute("PRAGMA journal_mode=WAL")
    waiter = sqlite3.connect(path, timeout=0.3, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        sim._write_lock(waiter)
    assert waiter.execute("PRAGMA busy_timeout").fetchone()[0] == 300
    release = threading.Timer(0.05, lambda: holder.execute("COMMIT"))
    release.start()
    sim._write_lock(waiter)  # waits for the holder's commit, then has the lock
    release.join()
    assert waiter.in_transaction
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        holder.execute("BEGIN IMMEDIATE")
    waiter.execute("COMMIT")
    assert waiter.execute("PRAGMA busy_timeout").fetchone()[0] == 300
    holder.close()
    waiter.close()


def test_a_unit_whose_queue_filled_up_before_its_commit_is_backed_out(qm):
    """Two units put to a queue at once: each checked MAXDEPTH when it put, but only one can
    still fit at its commit. The later commit fails with 2003 and its puts are gone."""
    qm.configure({"queues": {"SMALL": {"maxdepth": 2}}})
    c, other = qm.connect(), qm.connect()
    put(c, "SMALL", 1)
    put(c, "OTHER.Q", 2)
    put(other, "SMALL", 3)
    put(other, "SMALL", 4)
    other.commit()
    with pytest.raises(MQError) as backed_out:
        c.commit()
    assert backed_out.value.reason == reasons.MQRC_BACKED_OUT
    assert [m.data for m in qm.messages("SMALL")] == [b"body-3", b"body-4"] and qm.messages("OTHER.Q") == []
    assert [r.md.msg_id for r in qm.put_log()] == [md(3).msg_id, md(4).msg_id]
    put(c, "OTHER.Q", 5)  # the connection goes on with a new unit
    c.commit()
    assert [m.data for m in qm.messages("OTHER.Q")] == [b"body-5"]


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_md_json_is_the_json_array_of_every_field_by_sorted_name_and_reads_back(data):
    """md_to_json writes json.dumps of the field values in the order of their sorted names, for
    any text (non-ASCII, lone surrogates as surrogateescape makes them) and for odd int-like
    values; md_from_json reads that back, and the JSON object an earlier simulator stored."""
    import enum
    import json
    from dataclasses import fields as dc_fields

    from dlq_pipeline.mq.mqmd import MQMD_BYTE_LENGTHS
    from dlq_pipeline.mq.sim import md_from_json, md_to_json

    class Kind(enum.IntEnum):
        DATAGRAM = 8

    values = {}
    odd = data.draw(st.booleans())  # half the examples all plain ints (the template), half with odd ones
    ints = st.integers(-(2**31), 2**31 - 1)
    for f in dc_fields(MQMD):
        default = getattr(MQMD(), f.name)
        if f.name in MQMD_BYTE_LENGTHS:
            values[f.name] = data.draw(st.binary(min_size=0, max_size=MQMD_BYTE_LENGTHS[f.name]))
        elif isinstance(default, str):
            values[f.name] = data.draw(st.text(max_size=48))
        else:
            values[f.name] = data.draw(st.one_of(ints, st.booleans(), st.just(Kind.DATAGRAM)) if odd else ints)
    descriptor = MQMD(**values)
    stored = {k: v.hex() if k in MQMD_BYTE_LENGTHS else v for k, v in values.items()}
    expected = json.dumps([stored[k] for k in sorted(stored)], separators=(",", ":"))
    assert md_to_json(descriptor) == expected
    assert md_from_json(md_to_json(descriptor)) == descriptor
    assert md_from_json(json.dumps(stored, sort_keys=True)) == descriptor  # a file made before
    with pytest.raises(ValueError, match="fields, not the"):
        md_from_json(json.dumps(list(stored.values())[:-1]))


def test_an_asynchronous_put_reports_its_failure_through_async_status_and_waits_for_nothing(qm):
    qm.configure(
        {
            "queues": {"FULL": {"maxdepth": 0}},
            "faults": [{"op": "put", "delay": 5.0}, {"op": "stat", "reason": 2009, "after": 1}],
        }
    )
    c = qm.connect()
    ok, full = c.open_for_put("Q1"), c.open_for_put("FULL")
    began = time.monotonic()
    c.put(ok, md(1), b"one", asynchronous=True)
    c.put(full, md(2), b"two", asynchronous=True)  # MQRC_Q_FULL, not raised
    c.put(ok, md(3), b"three", asynchronous=True)
    assert time.monotonic() - began < 5.0  # the 5 s put latency is a round trip nobody waited for
    status = c.async_status()
    assert (status.succeeded, status.warned, status.failed, status.reason) == (2, 0, 1, reasons.MQRC_Q_FULL)
    c.commit()
    assert [m.data for m in qm.messages("Q1")] == [b"one", b"three"] and qm.messages("FULL") == []
    with pytest.raises(MQError) as broken:  # the second MQSTAT meets a broken connection: raised
        c.async_status()
    assert broken.value.connection_failure
    with pytest.raises(MQError) as again:  # and so does any call after it, an asynchronous put too
        c.put(ok, md(4), b"four", asynchronous=True)
    assert again.value.connection_failure


def test_async_status_counts_since_the_last_call(qm):
    c = qm.connect()
    handle = c.open_for_put("Q1")
    c.put(handle, md(1), b"a", asynchronous=True)
    assert c.async_status().succeeded == 1
    assert c.async_status() == type(c.async_status())()  # reset: nothing since
    c.put(handle, md(2), b"b")  # a synchronous put is not counted
    assert c.async_status().succeeded == 0
