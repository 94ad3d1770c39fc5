"""The real MQ client layer, without an MQ client: the clear error when it is missing, the
option and descriptor computation (pure), and the wiring over a stand-in library."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types

import pytest

from dlq_pipeline.mq import client
from dlq_pipeline.mq.client import (
    ClientConnection,
    MQClientMissing,
    browse_options,
    client_settings,
    get_options,
    md_fields,
    md_from_fields,
    object_descriptor,
    put_open_options,
    put_options,
)
from dlq_pipeline.mq.interface import MQError
from dlq_pipeline.mq.mqmd import MQMD

SETTINGS = {"channel": "APP.SVRCONN", "conn_name": "mq1(1414),mq2(1414)", "user": "app", "password_env": "TEST_MQ_PW"}


@pytest.fixture
def no_client(monkeypatch):
    for name in ("ibmmq", "pymqi"):
        monkeypatch.setitem(sys.modules, name, None)  # import fails as if not installed


def test_missing_client_is_one_clear_error(no_client):
    with pytest.raises(MQClientMissing) as err:
        ClientConnection("QM1", SETTINGS)
    text = str(err.value)
    assert "pip install 'dlq-pipeline[mq]'" in text and "redistributable client" in text
    assert "docs/operations.md" in text and "ibmmq:" in text and "pymqi:" in text


def test_importing_the_package_never_imports_an_mq_client():
    code = textwrap.dedent("""
        import sys
        import dlq_pipeline, dlq_pipeline.mq.client, dlq_pipeline.mq.sim, dlq_pipeline.replay.targets
        import dlq_pipeline.replay.writer
        print(sorted(m for m in ("ibmmq", "pymqi") if m in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_open_and_put_options_are_ibms_values():
    # cmqc.h: OUTPUT 0x10, SET_ALL_CONTEXT 0x800, ALTERNATE_USER_AUTHORITY 0x1000, FAIL_IF_QUIESCING 0x2000
    assert put_open_options(set_all_context=True, alternate_user=None) == 0x2810
    assert put_open_options(set_all_context=True, alternate_user="ALICE") == 0x3810
    assert put_open_options(set_all_context=False, alternate_user=None) == 0x2010
    # PMO: SYNCPOINT 0x2, NO_SYNCPOINT 0x4, SET_ALL_CONTEXT 0x800, FAIL_IF_QUIESCING 0x2000; never NEW_MSG_ID 0x40
    assert put_options(syncpoint=True, set_all_context=True) == 0x2802
    assert put_options(syncpoint=False, set_all_context=True) == 0x2804
    assert put_options(syncpoint=True, set_all_context=False) == 0x2002
    for sync in (True, False):
        for setall in (True, False):
            assert put_options(syncpoint=sync, set_all_context=setall) & (0x40 | 0x80) == 0
    # ASYNC_RESPONSE 0x10000
    assert put_options(syncpoint=True, set_all_context=True, asynchronous=True) == 0x12802


def test_get_and_browse_options():
    assert browse_options(True) == (0x2010, 0)  # BROWSE_FIRST | FAIL_IF_QUIESCING, NO_WAIT, MQMO_NONE
    assert browse_options(False) == (0x2020, 0)
    assert get_options(syncpoint=True, msg_id=b"x" * 24, correl_id=b"y" * 24) == (0x2002, 0x3)
    assert get_options(syncpoint=False, msg_id=b"x" * 24, correl_id=None) == (0x2004, 0x1)
    for options, _ in (browse_options(True), get_options(syncpoint=True, msg_id=None, correl_id=None)):
        assert options & 0x4000 == 0 and options & 0x40 == 0  # never CONVERT, never ACCEPT_TRUNCATED
    assert client.browse_open_options() == 0x2009 and client.inquire_open_options() == 0x2020


def test_object_descriptor():
    assert object_descriptor("APP.IN  ") == {"ObjectName": b"APP.IN", "ObjectQMgrName": b""}
    assert object_descriptor("Q", "QM2", "alice") == {
        "ObjectName": b"Q",
        "ObjectQMgrName": b"QM2",
        "AlternateUserId": b"alice",
    }
    with pytest.raises(ValueError):
        object_descriptor("Q" * 49)


def full_md() -> MQMD:
    return MQMD(
        version=1,
        report=5,
        msg_type=1,
        expiry=100,
        feedback=2,
        encoding=785,
        ccsid=500,
        format="MQSTR   ",
        priority=3,
        persistence=1,
        msg_id=b"\x01" * 24,
        correl_id=b"\x02" * 24,
        backout_count=4,
        reply_to_q="R".ljust(48),
        reply_to_qmgr="QMR".ljust(48),
        user_id="alice",
        accounting_token=b"\x03" * 32,
        appl_identity_data="id".ljust(32),
        put_appl_type=6,
        put_appl_name="app",
        put_date="20260101",
        put_time="12345678",
        appl_origin_data="O",
        group_id=b"\x04" * 24,
        msg_seq_number=9,
        offset=10,
        msg_flags=8,
        original_length=77,
    )


def test_md_fields_are_version_2_and_blank_padded():
    fields = md_fields(full_md())
    assert fields["Version"] == 2
    assert fields["UserIdentifier"] == b"alice       " and fields["PutApplName"] == b"app".ljust(28)
    assert fields["ApplOriginData"] == b"O   " and fields["Format"] == b"MQSTR   "
    assert fields["MsgId"] == b"\x01" * 24 and fields["OriginalLength"] == 77 and fields["CodedCharSetId"] == 500
    assert len(fields) == 28
    back = md_from_fields(fields)
    assert back == full_md().replace(
        version=2, user_id="alice       ", put_appl_name="app".ljust(28), appl_origin_data="O   "
    )
    with pytest.raises(ValueError):
        md_fields(full_md().replace(user_id="x" * 13))
    with pytest.raises(ValueError):
        md_fields(full_md().replace(msg_id=b"short"))


def test_client_settings_are_checked():
    assert client_settings("QM1", SETTINGS).channel == "APP.SVRCONN"
    with pytest.raises(ValueError, match="channel and conn_name"):
        client_settings("QM1", {})
    with pytest.raises(ValueError, match="password_env"):
        client_settings("QM1", {"channel": "C", "conn_name": "h(1)", "user": "u"})


# --- wiring over a stand-in library --------------------------------------------------------


def fake_library(calls: list, fail: dict):
    lib = types.ModuleType("fake_mq")

    class MQMIError(Exception):
        def __init__(self, comp, reason, **kw):
            super().__init__(f"MQI Error. Comp: {comp}, Reason {reason}")
            self.comp, self.reason = comp, reason
            for k, v in kw.items():
                setattr(self, k, v)

    class Struct:
        def __init__(self, **kw):
            self.__dict__.update(kw)

        def __getitem__(self, name):
            return self.__dict__[name]

    class QueueManager:
        def __init__(self, name):
            assert name is None

        def connect_with_options(self, name, **kw):
            calls.append(("connect", name, kw))
            if "connect" in fail:
                raise MQMIError(2, fail["connect"])

        def commit(self):
            calls.append(("commit",))

        def backout(self):
            calls.append(("backout",))

        def disconnect(self):
            calls.append(("disconnect",))

        def inquire(self, selector):
            calls.append(("inquire qmgr", selector))
            return fail.get("deadq", b"SYSTEM.DEAD.LETTER.QUEUE".ljust(48, b" "))

    class Queue:
        def __init__(self, qm, od, options):
            calls.append(("open", od.__dict__, options))
            self.od = od

        def put(self, data, md, pmo):
            calls.append(("put", data, dict(md.__dict__), pmo.Options))
            if "put" in fail:
                raise MQMIError(2, fail["put"])

        def get(self, length, md, gmo):
            calls.append(("get", length, gmo.Options, gmo.MatchOptions))
            message = fail.get("queue", [])
            if not message:
                raise MQMIError(2, 2033)
            if len(message[0]) > length:
                raise MQMIError(2, 2080, original_length=len(message[0]))
            fields = md_fields(MQMD(msg_id=b"\x05" * 24))
            md.__dict__.update(fields)
            return message.pop(0)

        def inquire(self, selector):
            return {3: 7, 15: 5000}[selector]

        def close(self):
            calls.append(("close", self.od.ObjectName))

    lib.MQMIError, lib.QueueManager, lib.Queue = MQMIError, QueueManager, Queue
    lib.CD = lib.SCO = lib.MD = lib.PMO = lib.GMO = lib.OD = Struct
    return lib


def test_connection_wiring_over_a_stand_in_library(monkeypatch):
    monkeypatch.setenv("TEST_MQ_PW", "s3cret-pw")
    calls: list = []
    settings = dict(SETTINGS, cipher_spec="ANY_TLS13_OR_HIGHER", key_repository="/keys/client")
    conn = ClientConnection("QM1", settings, library=fake_library(calls, {"queue": [b"x" * 5000]}))
    ((_, name, kw),) = calls
    assert name == b"QM1" and kw["opts"] == 0x800 and kw["user"] == b"app" and kw["password"] == b"s3cret-pw"
    cd = kw["cd"]
    assert (cd.ChannelName, cd.ConnectionName, cd.ChannelType, cd.TransportType, cd.SSLCipherSpec) == (
        b"APP.SVRCONN",
        b"mq1(1414),mq2(1414)",
        6,
        2,
        b"ANY_TLS13_OR_HIGHER",
    )
    assert kw["sco"].KeyRepository == b"/keys/client"

    handle = conn.open_for_put("APP.IN", "", alternate_user="alice")
    conn.put(handle, full_md(), b"data")
    conn.put(handle, full_md(), b"more")
    conn.commit()
    opens = [c for c in calls if c[0] == "open"]
    assert opens == [("open", {"ObjectName": b"APP.IN", "ObjectQMgrName": b"", "AlternateUserId": b"alice"}, 0x3810)]
    puts = [c for c in calls if c[0] == "put"]
    assert [p[1] for p in puts] == [b"data", b"more"]
    assert puts[0][2] == md_fields(full_md()) and puts[0][3] == 0x2802

    got = list(conn.browse("DLQ", buffer_size=100))
    assert [len(m.data) for m in got] == [5000] and got[0].md.msg_id == b"\x05" * 24
    assert [c[1] for c in calls if c[0] == "get"] == [100, 5000, 100]  # grown on 2080, then 2033 ends
    assert conn.inquire_depth("APP.IN") == (7, 5000)
    conn.disconnect()
    assert calls[-1] == ("disconnect",)


def test_errors_carry_the_reason_and_never_the_password(monkeypatch):
    monkeypatch.setenv("TEST_MQ_PW", "s3cret-pw")
    with pytest.raises(MQError) as err:
        ClientConnection("QM1", SETTINGS, library=fake_library([], {"connect": 2035}))
    assert err.value.reason == 2035 and "s3cret" not in str(err.value) and err.value.__cause__ is None
    assert "APP.SVRCONN" in str(err.value)
    conn = ClientConnection("QM1", SETTINGS, library=fake_library([], {"put": 2053}))
    with pytest.raises(MQError) as err:
        conn.put(conn.open_for_put("FULL"), full_md(), b"x")
    assert err.value.reason == 2053 and err.value.transient
    with pytest.raises(MQError) as err:
        conn.put(conn.open_for_put("Q"), full_md().replace(put_appl_name="x" * 29), b"x")
    assert err.value.reason == 2026


def test_missing_password_variable_names_the_setting_never_the_variable(monkeypatch):
    """The variable's name may be a pasted password: the error names the setting."""
    monkeypatch.delenv("TEST_MQ_PW", raising=False)
    from dlq_pipeline.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        ClientConnection("QM1", SETTINGS, library=fake_library([], {}))
    assert "'mq.qmgrs.QM1.password_env'" in str(caught.value) and "TEST_MQ_PW" not in str(caught.value)


def test_the_dead_letter_queue_is_inquired_on_the_queue_manager(monkeypatch):
    monkeypatch.setenv("TEST_MQ_PW", "s3cret-pw")
    calls: list = []
    conn = ClientConnection("QM1", SETTINGS, library=fake_library(calls, {}))
    assert conn.dead_letter_queue() == "SYSTEM.DEAD.LETTER.QUEUE"
    assert calls[-1] == ("inquire qmgr", 2006)  # MQCA_DEAD_LETTER_Q_NAME
    conn = ClientConnection("QM1", SETTINGS, library=fake_library(calls, {"deadq": b" " * 48}))
    assert conn.dead_letter_queue() == ""  # none defined: drain asks for --queue


def test_asynchronous_puts_and_mqstat_where_the_library_has_them(monkeypatch):
    monkeypatch.setenv("TEST_MQ_PW", "s3cret-pw")
    calls: list = []
    lib = fake_library(calls, {})

    def stat(self, kind):
        calls.append(("stat", kind))
        return lib.STS(PutSuccessCount=3, PutWarningCount=1, PutFailureCount=2, Reason=2053, CompCode=2)

    lib.STS = lib.CD
    conn = ClientConnection("QM1", SETTINGS, library=lib)
    assert conn.async_put is False  # the stand-in has no MQSTAT (as pymqi): puts wait
    conn.put(conn.open_for_put("Q"), full_md(), b"x", asynchronous=True)
    assert [c[3] for c in calls if c[0] == "put"] == [0x2802]

    lib.QueueManager.stat = stat  # as ibmmq's QueueManager.stat
    conn = ClientConnection("QM1", SETTINGS, library=lib)
    assert conn.async_put is True
    conn.put(conn.open_for_put("Q"), full_md(), b"y", asynchronous=True)
    assert [c[3] for c in calls if c[0] == "put"] == [0x2802, 0x12802]
    status = conn.async_status()
    assert calls[-1] == ("stat", 0)  # MQSTAT_TYPE_ASYNC_ERROR
    assert (status.succeeded, status.warned, status.failed, status.reason) == (3, 1, 2, 2053)
