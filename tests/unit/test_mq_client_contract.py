"""The MQ adapter (`dlq_pipeline.mq.client`) through the real Python layers of ``ibmmq`` and
``pymqi``, with only their C extensions (``ibmmq.ibmmqc``, ``pymqi.pymqe``) stood in for.

IBM's MQ client library is not on this machine, so neither extension can load. Each stand-in
has the real extension's functions, argument checks (types, the structure sizes its C code
checks) and return tuples (ibmmqc.c of ibmmq 2.x, pymqe.c of pymqi 1.12), and answers as a queue
manager does (`QueueManagerDouble`: units of work, browse cursors, MsgId/CorrelId matching,
2080 for a short buffer, context kept only under SET_ALL_CONTEXT). Every structure the layer
packs is decoded here with the C layout of IBM's headers (`Layout`, checked against the
lengths IBM's own constants give), independently of how either layer packs it; MQMDs go
through the pipeline's own byte codec (`dlq_pipeline.mq.structures`). So a renamed argument,
a field the layer does not pack, a wrong version or length fails here, not at a user's queue
manager.

The packages and their versions: tests/mq_layers.py (ibmmq from the venv, pymqi's Python
package from its sdist, both at the floors of pyproject's ``mq`` and ``mq-legacy`` extras).
"""

from __future__ import annotations

import ctypes
import itertools
import struct
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dlq_pipeline.errors import UsageError
from dlq_pipeline.mq import constants
from dlq_pipeline.mq.client import ClientConnection
from dlq_pipeline.mq.interface import AsyncPutStatus, Message, MQError
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.mq.structures import MQMD_V2_LENGTH, decode_mqmd, encode_mqmd
from tests import mq_layers

# --- IBM's values (cmqc.h, cmqxc.h), checked against the ibmmq wheel's by the first test ---------

CMQC_VALUES = {
    "MQOO_INPUT_AS_Q_DEF": 0x1,
    "MQOO_INPUT_SHARED": 0x2,
    "MQOO_INPUT_EXCLUSIVE": 0x4,
    "MQOO_BROWSE": 0x8,
    "MQOO_OUTPUT": 0x10,
    "MQOO_INQUIRE": 0x20,
    "MQOO_SAVE_ALL_CONTEXT": 0x80,
    "MQOO_SET_ALL_CONTEXT": 0x800,
    "MQOO_ALTERNATE_USER_AUTHORITY": 0x1000,
    "MQOO_FAIL_IF_QUIESCING": 0x2000,
    "MQPMO_SYNCPOINT": 0x2,
    "MQPMO_NO_SYNCPOINT": 0x4,
    "MQPMO_SET_ALL_CONTEXT": 0x800,
    "MQPMO_FAIL_IF_QUIESCING": 0x2000,
    "MQPMO_ASYNC_RESPONSE": 0x10000,
    "MQGMO_SYNCPOINT": 0x2,
    "MQGMO_BROWSE_FIRST": 0x10,
    "MQGMO_BROWSE_NEXT": 0x20,
    "MQGMO_ACCEPT_TRUNCATED_MSG": 0x40,
    "MQGMO_FAIL_IF_QUIESCING": 0x2000,
    "MQGMO_CONVERT": 0x4000,
    "MQMO_MATCH_MSG_ID": 0x1,
    "MQMO_MATCH_CORREL_ID": 0x2,
    "MQCNO_HANDLE_SHARE_BLOCK": 0x40,
    "MQCNO_CLIENT_BINDING": 0x800,
    "MQCSP_AUTH_NONE": 0,
    "MQCSP_AUTH_USER_ID_AND_PWD": 1,
    "MQOT_Q": 1,
    "MQOT_Q_MGR": 5,
    "MQIA_CURRENT_Q_DEPTH": 3,
    "MQIA_MAX_Q_DEPTH": 15,
    "MQIA_FIRST": 1,
    "MQIA_LAST": 2000,
    "MQCA_DEAD_LETTER_Q_NAME": 2006,
    "MQ_Q_NAME_LENGTH": 48,
    "MQSTAT_TYPE_ASYNC_ERROR": 0,
    "MQENC_NATIVE": 546,
    "MQCC_OK": 0,
    "MQCC_WARNING": 1,
    "MQCC_FAILED": 2,
    "MQHC_UNUSABLE_HCONN": -1,
    "MQHO_UNUSABLE_HOBJ": -1,
}
CMQXC_VALUES = {"MQCHT_CLNTCONN": 6, "MQXPT_TCP": 2}
C = types.SimpleNamespace(**CMQC_VALUES, **CMQXC_VALUES)
RC = types.SimpleNamespace(**{name.removeprefix("MQRC_"): value for name, value in constants.MQRC.items()})
MD_CCSID = 1208  # the MQMD's own character fields: ASCII here, read as UTF-8 like the adapter does


# --- the C layouts -------------------------------------------------------------------------------

_SIZE = {"l": 4, "p": 8, "q": 8, "c": 1, "b": 1}  # MQLONG, pointer, MQINT64/MQHMSG, MQCHAR, MQBYTE (LP64)
_FORMAT = {"l": "=i", "p": "=Q", "q": "=q"}


def mq_chars(raw: bytes) -> str:
    """An MQCHAR field as the MQI reads a name: up to a NUL, trailing blanks not significant."""
    return raw.split(b"\0", 1)[0].decode("ascii").rstrip(" ")


class Layout:
    """An MQI structure as a C compiler lays it out on LP64 (fields in the order of IBM's header,
    each aligned to its size): per version, the fields it adds. ``V`` is an MQCHARV (its five
    fields). ``length[v]`` is sizeof at version ``v`` (IBM's MQxx_LENGTH_v); ``fields_end[v]``
    is where the last field of version ``v`` ends (what a buffer of that version must hold)."""

    def __init__(self, name: str, versions: dict[int, list[tuple[str, str, int]]]):
        self.name = name
        self.fields: dict[str, tuple[str, int, int]] = {}
        self.length: dict[int, int] = {}
        self.fields_end: dict[int, int] = {}
        offset, align = 0, 1
        for version, spec in sorted(versions.items()):
            for field, kind, count in spec:
                parts = [(field, kind, count)]
                if kind == "V":
                    parts = [(field + "VSPtr", "p", 1)] + [(field + s, "l", 1) for s in ("VSOffset", "VSBufSize")]
                    parts += [(field + s, "l", 1) for s in ("VSLength", "VSCCSID")]
                for part, part_kind, part_count in parts:
                    size = _SIZE[part_kind]
                    offset = -(-offset // size) * size
                    align = max(align, size)
                    self.fields[part] = (part_kind, offset, part_count)
                    offset += size * part_count
            self.fields_end[version] = offset
            self.length[version] = -(-offset // align) * align
        self.size = self.length[max(self.length)]

    def decode(self, raw: bytes) -> dict[str, Any]:
        raw = bytes(raw).ljust(self.size, b"\0")
        out: dict[str, Any] = {}
        for field, (kind, offset, count) in self.fields.items():
            if kind == "c":
                out[field] = mq_chars(raw[offset : offset + count])
            elif kind == "b":
                out[field] = raw[offset : offset + count]
            else:
                values = [struct.unpack_from(_FORMAT[kind], raw, offset + i * _SIZE[kind])[0] for i in range(count)]
                out[field] = values if count > 1 else values[0]
        return out

    def encode(self, raw: bytes, **values: Any) -> bytes:
        """``raw`` with ``values`` written over it (MQLONGs and blank-padded MQCHARs)."""
        out = bytearray(bytes(raw).ljust(self.size, b"\0"))
        for field, value in values.items():
            kind, offset, count = self.fields[field]
            if kind == "l":
                struct.pack_into("=i", out, offset, value)
            else:
                out[offset : offset + count] = value.encode("ascii").ljust(count, b" ")
        return bytes(out)


def _chars(*names_and_lengths: tuple[str, int]) -> list[tuple[str, str, int]]:
    return [(name, "c", length) for name, length in names_and_lengths]


def _longs(*names: str) -> list[tuple[str, str, int]]:
    return [(name, "l", 1) for name in names]


def _ptrs(*names: str) -> list[tuple[str, str, int]]:
    return [(name, "p", 1) for name in names]


_HEAD = [("StrucId", "c", 4), ("Version", "l", 1)]
MQOD = Layout(
    "MQOD",
    {
        1: _HEAD
        + _longs("ObjectType")
        + _chars(("ObjectName", 48), ("ObjectQMgrName", 48), ("DynamicQName", 48), ("AlternateUserId", 12)),
        2: _longs(
            "RecsPresent",
            "KnownDestCount",
            "UnknownDestCount",
            "InvalidDestCount",
            "ObjectRecOffset",
            "ResponseRecOffset",
        )
        + _ptrs("ObjectRecPtr", "ResponseRecPtr"),
        3: [("AlternateSecurityId", "b", 40)] + _chars(("ResolvedQName", 48), ("ResolvedQMgrName", 48)),
        4: [("ObjectString", "V", 1), ("SelectionString", "V", 1), ("ResObjectString", "V", 1)]
        + _longs("ResolvedType"),
    },
)
MQPMO = Layout(
    "MQPMO",
    {
        1: _HEAD
        + _longs("Options", "Timeout", "Context", "KnownDestCount", "UnknownDestCount", "InvalidDestCount")
        + _chars(("ResolvedQName", 48), ("ResolvedQMgrName", 48)),
        2: _longs("RecsPresent", "PutMsgRecFields", "PutMsgRecOffset", "ResponseRecOffset")
        + _ptrs("PutMsgRecPtr", "ResponseRecPtr"),
        3: [("OriginalMsgHandle", "q", 1), ("NewMsgHandle", "q", 1)] + _longs("Action", "PubLevel"),
    },
)
MQGMO = Layout(
    "MQGMO",
    {
        1: _HEAD + _longs("Options", "WaitInterval", "Signal1", "Signal2") + _chars(("ResolvedQName", 48)),
        2: _longs("MatchOptions")
        + [("GroupStatus", "b", 1), ("SegmentStatus", "b", 1), ("Segmentation", "b", 1), ("Reserved1", "b", 1)],
        3: [("MsgToken", "b", 16)] + _longs("ReturnedLength"),
        4: _longs("Reserved2") + [("MsgHandle", "q", 1)],
    },
)
MQSTS = Layout(
    "MQSTS",
    {
        1: _HEAD
        + _longs("CompCode", "Reason", "PutSuccessCount", "PutWarningCount", "PutFailureCount", "ObjectType")
        + _chars(("ObjectName", 48), ("ObjectQMgrName", 48), ("ResolvedObjectName", 48), ("ResolvedQMgrName", 48)),
        2: [("ObjectString", "V", 1), ("SubName", "V", 1)] + _longs("OpenOptions", "SubOptions"),
    },
)
MQCNO = Layout(
    "MQCNO",
    {
        1: _HEAD + _longs("Options"),
        2: _longs("ClientConnOffset") + _ptrs("ClientConnPtr"),
        3: [("ConnTag", "b", 128)],
        4: _ptrs("SSLConfigPtr") + _longs("SSLConfigOffset"),
        5: [("ConnectionId", "b", 24)] + _longs("SecurityParmsOffset") + _ptrs("SecurityParmsPtr"),
        6: _ptrs("CCDTUrlPtr") + _longs("CCDTUrlOffset", "CCDTUrlLength") + [("Reserved", "b", 8)],
        7: _chars(("ApplName", 28)) + [("Reserved2", "b", 4)],
        8: _ptrs("BalanceParmsPtr") + _longs("BalanceParmsOffset") + [("Reserved3", "b", 4)],
    },
)


def _string_ref(name: str, reserved: str | None) -> list[tuple[str, str, int]]:
    """A pointer, offset and length to a string (MQCSP, MQSCO), after an 8-byte reserved field."""
    return ([(reserved, "b", 8)] if reserved else []) + _ptrs(name + "Ptr") + _longs(name + "Offset", name + "Length")


MQCSP = Layout(
    "MQCSP",
    {
        1: _HEAD
        + _longs("AuthenticationType")
        + [("Reserved1", "b", 4)]
        + _string_ref("CSPUserId", None)
        + _string_ref("CSPPassword", "Reserved2"),
        2: _string_ref("InitialKey", "Reserved3"),
        3: _string_ref("Token", "Reserved4"),
    },
)
MQSCO = Layout(
    "MQSCO",
    {
        1: _HEAD
        + _chars(("KeyRepository", 256), ("CryptoHardware", 256))
        + _longs("AuthInfoRecCount", "AuthInfoRecOffset")
        + _ptrs("AuthInfoRecPtr"),
        2: _longs("KeyResetCount", "FipsRequired"),
        3: [("EncryptionPolicySuiteB", "l", 4)],
        4: _longs("CertificateValPolicy"),
        5: _chars(("CertificateLabel", 64)),
        6: _string_ref("KeyRepoPassword", None),
        7: _longs("HTTPSCertValidation", "HTTPSCertRevocation") + _string_ref("HTTPSKeyStore", None),
    },
)
_EXIT = 128  # MQ_EXIT_NAME_LENGTH on Unix
MQCD = Layout(
    "MQCD",
    {
        1: _chars(("ChannelName", 20))
        + _longs("Version", "ChannelType", "TransportType")
        + _chars(("Desc", 64), ("QMgrName", 48), ("XmitQName", 48), ("ShortConnectionName", 20), ("MCAName", 20))
        + _chars(("ModeName", 8), ("TpName", 64))
        + _longs("BatchSize", "DiscInterval", "ShortRetryCount", "ShortRetryInterval")
        + _longs("LongRetryCount", "LongRetryInterval")
        + _chars(("SecurityExit", _EXIT), ("MsgExit", _EXIT), ("SendExit", _EXIT), ("ReceiveExit", _EXIT))
        + _longs("SeqNumberWrap", "MaxMsgLength", "PutAuthority", "DataConversion")
        + _chars(("SecurityUserData", 32), ("MsgUserData", 32), ("SendUserData", 32), ("ReceiveUserData", 32)),
        2: _chars(("UserIdentifier", 12), ("Password", 12), ("MCAUserIdentifier", 12))
        + _longs("MCAType")
        + _chars(("ConnectionName", 264), ("RemoteUserIdentifier", 12), ("RemotePassword", 12)),
        3: _chars(("MsgRetryExit", _EXIT), ("MsgRetryUserData", 32)) + _longs("MsgRetryCount", "MsgRetryInterval"),
        4: _longs("HeartbeatInterval", "BatchInterval", "NonPersistentMsgSpeed", "StrucLength")
        + _longs("ExitNameLength", "ExitDataLength", "MsgExitsDefined", "SendExitsDefined", "ReceiveExitsDefined")
        + _ptrs("MsgExitPtr", "MsgUserDataPtr", "SendExitPtr", "SendUserDataPtr")
        + _ptrs("ReceiveExitPtr", "ReceiveUserDataPtr"),
        5: _ptrs("ClusterPtr") + _longs("ClustersDefined", "NetworkPriority"),
        6: _longs("LongMCAUserIdLength", "LongRemoteUserIdLength")
        + _ptrs("LongMCAUserIdPtr", "LongRemoteUserIdPtr")
        + [("MCASecurityId", "b", 40), ("RemoteSecurityId", "b", 40)],
        7: _chars(("SSLCipherSpec", 32))
        + _ptrs("SSLPeerNamePtr")
        + _longs("SSLPeerNameLength", "SSLClientAuth", "KeepAliveInterval")
        + _chars(("LocalAddress", 48))
        + _longs("BatchHeartbeat"),
        8: [("HdrCompList", "l", 2), ("MsgCompList", "l", 16)]
        + _longs("CLWLChannelRank", "CLWLChannelPriority", "CLWLChannelWeight", "ChannelMonitoring")
        + _longs("ChannelStatistics"),
        9: _longs("SharingConversations", "PropertyControl", "MaxInstances", "MaxInstancesPerClient")
        + _longs("ClientChannelWeight", "ConnectionAffinity"),
        10: _longs("BatchDataLimit", "UseDLQ", "DefReconnect"),
        11: _chars(("CertificateLabel", 64)),
        12: _longs("SPLProtection"),
    },
)
LAYOUTS = (MQOD, MQPMO, MQGMO, MQSTS, MQCNO, MQCSP, MQSCO, MQCD)


def pointed(pointer: int, length: int) -> bytes | None:
    """The bytes an MQCSP/MQSCO pointer field points at (read during the call, as the MQI does)."""
    return ctypes.string_at(pointer, length) if pointer else None


# --- a queue manager over the MQI ---------------------------------------------------------------

HANDLES = itertools.count(1001)  # every handle unique, so a call on a stale one is told apart


@dataclass
class Stored:
    seq: int
    md: MQMD
    data: bytes
    state: str = "ready"  # "put": put in the unit of work; "got": got in it


@dataclass
class Opened:
    name: str  # the queue ("APP.IN", "QM2/APP.OUT" for a remote one) or the queue manager
    options: int
    queue: list[Stored] | None  # None: the queue manager object


QMGR_CONTEXT = {  # what the queue manager puts in a message put without SET_ALL_CONTEXT
    "user_id": "mqm".ljust(12),
    "accounting_token": b"\x16" * 32,
    "appl_identity_data": " " * 32,
    "put_appl_type": 6,
    "put_appl_name": "dlq-double".ljust(28),
    "put_date": "20260101",
    "put_time": "00000000",
    "appl_origin_data": " " * 4,
}


class QueueManagerDouble:
    """What a queue manager answers over the MQI, for the stand-in extensions: one client
    connection, named queues with a maximum depth, units of work (syncpoint puts and gets stay
    invisible or held until MQCMIT; MQBACK undoes them and counts a backout on the got ones),
    browse cursors per handle, MsgId/CorrelId matching, 2080 for a short buffer (nothing moves),
    a remote queue manager's queue for any other ObjectQMgrName, asynchronous put outcomes
    for MQSTAT. ``calls`` records each MQI call on its connection, decoded."""

    def __init__(self, name: str = "QM1", *, password: str = "s3cret-pw", queues: dict[str, int] | None = None):
        self.name = name
        self.password = password.encode()
        self.max_depth = dict(queues or {"APP.IN": 5000, "FULL.Q": 0})
        self.queues: dict[str, list[Stored]] = {q: [] for q in self.max_depth}
        self.dead_letter_queue = "SYSTEM.DEAD.LETTER.QUEUE"
        self.calls: list[tuple[Any, ...]] = []
        self.hconn: int | None = None
        self.objects: dict[int, Opened] = {}
        self.cursors: dict[int, int] = {}
        self.seq = itertools.count(1)
        self.async_status = self._no_async()

    @staticmethod
    def _no_async() -> dict[str, int]:
        return {"CompCode": 0, "Reason": 0, "PutSuccessCount": 0, "PutWarningCount": 0, "PutFailureCount": 0}

    def _object(self, hconn: int, hobj: int | None = None) -> Opened | int:
        """The open object, or the reason the call fails (a stale handle is not recorded)."""
        if hconn != self.hconn or self.hconn is None:
            return RC.HCONN_ERROR
        if hobj is None:
            return Opened(self.name, 0, None)
        return self.objects.get(hobj, RC.HOBJ_ERROR)

    def connect(self, qmgr: str, summary: dict[str, Any]) -> tuple[int, int, int]:
        self.calls.append(("MQCONNX", qmgr, summary))
        if qmgr != self.name:
            return C.MQHC_UNUSABLE_HCONN, C.MQCC_FAILED, RC.Q_MGR_NAME_ERROR
        if not summary["Options"] & C.MQCNO_CLIENT_BINDING or not summary["ChannelName"]:
            return C.MQHC_UNUSABLE_HCONN, C.MQCC_FAILED, RC.CD_ERROR
        if summary["Password"] != self.password:
            return C.MQHC_UNUSABLE_HCONN, C.MQCC_FAILED, RC.NOT_AUTHORIZED
        self.hconn = next(HANDLES)
        return self.hconn, C.MQCC_OK, RC.NONE

    def open(self, hconn: int, od: dict[str, Any], options: int) -> tuple[int, int, int]:
        if hconn != self.hconn or self.hconn is None:
            return C.MQHO_UNUSABLE_HOBJ, C.MQCC_FAILED, RC.HCONN_ERROR
        names = ("ObjectType", "ObjectName", "ObjectQMgrName", "AlternateUserId")
        self.calls.append(("MQOPEN", {k: od[k] for k in names}, options))
        if od["ObjectType"] == C.MQOT_Q_MGR:
            opened = Opened(self.name, options, None)
        elif od["ObjectQMgrName"] in ("", self.name):
            if od["ObjectName"] not in self.queues:
                return C.MQHO_UNUSABLE_HOBJ, C.MQCC_FAILED, RC.UNKNOWN_OBJECT_NAME
            opened = Opened(od["ObjectName"], options, self.queues[od["ObjectName"]])
        else:
            remote = f"{od['ObjectQMgrName']}/{od['ObjectName']}"
            self.max_depth.setdefault(remote, 5000)
            opened = Opened(remote, options, self.queues.setdefault(remote, []))
        hobj = next(HANDLES)
        self.objects[hobj] = opened
        return hobj, C.MQCC_OK, RC.NONE

    def put(self, hconn: int, hobj: int, md_raw: bytes, pmo: dict[str, Any], data: bytes) -> tuple[int, int]:
        target = self._object(hconn, hobj)
        if isinstance(target, int):
            return C.MQCC_FAILED, target
        md = decode_mqmd(md_raw, C.MQENC_NATIVE, MD_CCSID)
        options = pmo["Options"]
        self.calls.append(("MQPUT", target.name, md, options, data))
        if not target.options & C.MQOO_OUTPUT:
            return C.MQCC_FAILED, RC.NOT_OPEN_FOR_OUTPUT
        if options & C.MQPMO_SET_ALL_CONTEXT and not target.options & C.MQOO_SET_ALL_CONTEXT:
            return C.MQCC_FAILED, RC.OPTIONS_ERROR
        if not options & C.MQPMO_SET_ALL_CONTEXT:
            md = md.replace(**QMGR_CONTEXT)
        asynchronous = bool(options & C.MQPMO_ASYNC_RESPONSE)
        assert target.queue is not None
        if len(target.queue) >= self.max_depth[target.name]:
            if not asynchronous:
                return C.MQCC_FAILED, RC.Q_FULL
            self.async_status["PutFailureCount"] += 1
            if not self.async_status["Reason"]:
                self.async_status.update(CompCode=C.MQCC_FAILED, Reason=RC.Q_FULL)
            return C.MQCC_OK, RC.NONE
        state = "put" if options & C.MQPMO_SYNCPOINT else "ready"
        target.queue.append(Stored(next(self.seq), md.replace(backout_count=0), bytes(data), state))
        if asynchronous:
            self.async_status["PutSuccessCount"] += 1
        return C.MQCC_OK, RC.NONE

    def get(
        self, hconn: int, hobj: int, md_raw: bytes, gmo: dict[str, Any], length: int
    ) -> tuple[bytes, bytes, int, int, int]:
        """(data, MQMD, the message's length, CompCode, Reason)."""
        target = self._object(hconn, hobj)
        if isinstance(target, int):
            return b"", md_raw, 0, C.MQCC_FAILED, target
        asked = decode_mqmd(md_raw, C.MQENC_NATIVE, MD_CCSID)
        options = gmo["Options"]
        match = gmo["MatchOptions"] if gmo["Version"] >= 2 else C.MQMO_MATCH_MSG_ID | C.MQMO_MATCH_CORREL_ID
        entry = {
            "GMO": {"Version": gmo["Version"], "Options": options, "MatchOptions": gmo["MatchOptions"]},
            "MD": {"Version": asked.version, "MsgId": asked.msg_id, "CorrelId": asked.correl_id},
            "BufferLength": length,
        }

        def answer(data: bytes, md: bytes, data_length: int, cc: int, rc: int) -> tuple[bytes, bytes, int, int, int]:
            self.calls.append(("MQGET", target.name, entry, rc))
            return data, md, data_length, cc, rc

        browse = options & (C.MQGMO_BROWSE_FIRST | C.MQGMO_BROWSE_NEXT)
        if browse and not target.options & C.MQOO_BROWSE:
            return answer(b"", md_raw, 0, C.MQCC_FAILED, RC.NOT_OPEN_FOR_BROWSE)
        inputs = C.MQOO_INPUT_AS_Q_DEF | C.MQOO_INPUT_SHARED | C.MQOO_INPUT_EXCLUSIVE
        if not browse and not target.options & inputs:
            return answer(b"", md_raw, 0, C.MQCC_FAILED, RC.NOT_OPEN_FOR_INPUT)
        after = self.cursors.get(hobj, 0) if options & C.MQGMO_BROWSE_NEXT else 0
        assert target.queue is not None
        found = [
            m
            for m in target.queue
            if m.state == "ready"
            and m.seq > after
            and (not match & C.MQMO_MATCH_MSG_ID or m.md.msg_id == asked.msg_id)
            and (not match & C.MQMO_MATCH_CORREL_ID or m.md.correl_id == asked.correl_id)
        ]
        if not found:
            return answer(b"", md_raw, 0, C.MQCC_FAILED, RC.NO_MSG_AVAILABLE)
        message = found[0]
        returned = encode_mqmd(message.md.replace(version=asked.version), C.MQENC_NATIVE, MD_CCSID)
        returned += md_raw[len(returned) :]
        if len(message.data) > length and not options & C.MQGMO_ACCEPT_TRUNCATED_MSG:
            return answer(message.data[:length], returned, len(message.data), C.MQCC_FAILED, RC.TRUNCATED_MSG_FAILED)
        if browse:
            self.cursors[hobj] = message.seq
        elif options & C.MQGMO_SYNCPOINT:
            message.state = "got"
        else:
            target.queue.remove(message)
        return answer(message.data, returned, len(message.data), C.MQCC_OK, RC.NONE)

    def inquire(self, hconn: int, hobj: int, selectors: list[int]) -> tuple[list[int], bytes, int, int]:
        target = self._object(hconn, hobj)
        if isinstance(target, int):
            return [], b"", C.MQCC_FAILED, target
        self.calls.append(("MQINQ", target.name, list(selectors)))
        if not target.options & C.MQOO_INQUIRE:
            return [], b"", C.MQCC_FAILED, RC.NOT_OPEN_FOR_INQUIRE
        ints: list[int] = []
        chars = b""
        for selector in selectors:
            if target.queue is not None and selector == C.MQIA_CURRENT_Q_DEPTH:
                ints.append(len(target.queue))
            elif target.queue is not None and selector == C.MQIA_MAX_Q_DEPTH:
                ints.append(self.max_depth[target.name])
            elif target.queue is None and selector == C.MQCA_DEAD_LETTER_Q_NAME:
                chars += self.dead_letter_queue.encode().ljust(C.MQ_Q_NAME_LENGTH)
            else:
                return [], b"", C.MQCC_FAILED, RC.SELECTOR_ERROR
        return ints, chars, C.MQCC_OK, RC.NONE

    def stat(self, hconn: int, kind: int) -> tuple[dict[str, int], int, int]:
        target = self._object(hconn)
        if isinstance(target, int):
            return {}, C.MQCC_FAILED, target
        self.calls.append(("MQSTAT", kind))
        if kind != C.MQSTAT_TYPE_ASYNC_ERROR:
            return {}, C.MQCC_FAILED, RC.STAT_TYPE_ERROR
        status, self.async_status = self.async_status, self._no_async()
        return status, C.MQCC_OK, RC.NONE

    def _end_unit(self, verb: str, hconn: int) -> tuple[int, int]:
        target = self._object(hconn)
        if isinstance(target, int):
            return C.MQCC_FAILED, target
        self.calls.append((verb,))
        for queue in self.queues.values():
            for message in list(queue):
                if (message.state, verb) in (("got", "MQCMIT"), ("put", "MQBACK")):
                    queue.remove(message)
                elif message.state == "got":
                    message.md = message.md.replace(backout_count=message.md.backout_count + 1)
                message.state = "ready"
        return C.MQCC_OK, RC.NONE

    def commit(self, hconn: int) -> tuple[int, int]:
        return self._end_unit("MQCMIT", hconn)

    def backout(self, hconn: int) -> tuple[int, int]:
        return self._end_unit("MQBACK", hconn)

    def close(self, hconn: int, hobj: int, options: int) -> tuple[int, int]:
        target = self._object(hconn, hobj)
        if isinstance(target, int):
            return C.MQCC_FAILED, target
        self.calls.append(("MQCLOSE", target.name, options))
        del self.objects[hobj]
        self.cursors.pop(hobj, None)
        return C.MQCC_OK, RC.NONE

    def disconnect(self, hconn: int) -> tuple[int, int]:
        target = self._object(hconn)
        if isinstance(target, int):
            return C.MQCC_FAILED, target
        self.calls.append(("MQDISC",))
        self.hconn = None
        self.objects.clear()
        return C.MQCC_OK, RC.NONE

    def messages(self, queue: str) -> list[tuple[MQMD, bytes, str]]:
        return [(m.md, m.data, m.state) for m in self.queues[queue]]


# --- the stand-in C extensions --------------------------------------------------------------------


class StandInError(Exception):
    """What the real extension raises for an argument of the wrong type or size
    (``ibmmqc.error``, ``pymqe.error``, or PyArg_ParseTuple's TypeError)."""


def _arg(value: Any, kinds: type | tuple[type, ...], what: str) -> Any:
    if not isinstance(value, kinds):
        raise StandInError(f"{what} is {type(value).__name__}")
    return value


def _sized(buffer: Any, layout_size: int, what: str) -> bytes:
    """A structure the C code checks with checkArgSize: exactly sizeof of the current version."""
    _arg(buffer, bytes, what)
    if len(buffer) != layout_size:
        raise StandInError(f"{what} wrong size. Given: {len(buffer)}, expected {layout_size}")
    return bytes(buffer)


def _covering(layout: Layout, buffer: bytes, what: str) -> dict[str, Any]:
    """A structure the C code passes on unchecked: it must hold every field of its Version (and
    start with its StrucId: "OD  " for MQOD ...; MQCD has none)."""
    fields = layout.decode(buffer)
    if fields.get("StrucId", layout.name[2:]) != layout.name[2:]:
        raise StandInError(f"{what}: StrucId {fields['StrucId']!r}")
    version = fields.get("Version", 0)
    if version not in layout.fields_end or len(buffer) < layout.fields_end[version]:
        raise StandInError(f"{what}: Version {version} in {len(buffer)} bytes")
    return fields


def connect_summary(cd: bytes | None, **fields: Any) -> dict[str, Any]:
    """What MQCONNX is given, decoded; the same keys for both extensions."""
    channel = _covering(MQCD, cd, "MQCD") if cd is not None else {}
    return {
        "Options": fields["Options"],
        "CD.Version": channel.get("Version"),
        **{k: channel.get(k) for k in ("ChannelName", "ConnectionName", "ChannelType", "TransportType")},
        "SSLCipherSpec": channel.get("SSLCipherSpec"),
        **{k: fields[k] for k in ("AuthenticationType", "UserId", "Password", "KeyRepository", "KeyRepoPassword")},
    }


class StandIn(types.ModuleType):
    """The calls both extensions make alike (ibmmqc.c and pymqe.c have the same MQOPEN, MQPUT,
    MQGET, MQCMIT, MQBACK, MQCLOSE and MQDISC), answered by ``qm``."""

    def __init__(self, name: str):
        super().__init__(name)
        self.qm = QueueManagerDouble()

    def MQOPEN(self, hconn: int, od: bytes, options: int) -> tuple[int, bytes, int, int]:
        _arg(hconn, int, "hConn"), _arg(options, int, "Options")
        od = _sized(od, MQOD.size, "MQOD")
        hobj, cc, rc = self.qm.open(hconn, _covering(MQOD, od, "MQOD"), options)
        return hobj, od, cc, rc

    def MQPUT(self, hconn: int, hobj: int, md: bytes, pmo: bytes, msg: bytes) -> tuple[bytes, bytes, int, int]:
        _arg(hconn, int, "hConn"), _arg(hobj, int, "hObj"), _arg(msg, bytes, "message")
        md, pmo = _sized(md, MQMD_V2_LENGTH, "MQMD"), _sized(pmo, MQPMO.size, "MQPMO")
        cc, rc = self.qm.put(hconn, hobj, md, _covering(MQPMO, pmo, "MQPMO"), msg)
        return md, pmo, cc, rc

    def MQGET(self, hconn: int, hobj: int, md: bytes, gmo: bytes, length: int) -> tuple[Any, ...]:
        _arg(hconn, int, "hConn"), _arg(hobj, int, "hObj"), _arg(length, int, "maxlen")
        md, gmo = _sized(md, MQMD_V2_LENGTH, "MQMD"), _sized(gmo, MQGMO.size, "MQGMO")
        data, md_out, data_length, cc, rc = self.qm.get(hconn, hobj, md, _covering(MQGMO, gmo, "MQGMO"), length)
        return data, md_out, gmo, data_length, cc, rc

    def MQCMIT(self, hconn: int) -> tuple[int, int]:
        return self.qm.commit(_arg(hconn, int, "hConn"))

    def MQBACK(self, hconn: int) -> tuple[int, int]:
        return self.qm.backout(_arg(hconn, int, "hConn"))

    def MQCLOSE(self, hconn: int, hobj: int, options: int) -> tuple[int, int]:
        return self.qm.close(_arg(hconn, int, "hConn"), _arg(hobj, int, "hObj"), _arg(options, int, "Options"))

    def MQDISC(self, hconn: int) -> tuple[int, int]:
        return self.qm.disconnect(_arg(hconn, int, "hConn"))


class IbmmqcStandIn(StandIn):
    """``ibmmq.ibmmqc`` of ibmmq 2.x: MQCONNX takes packed MQCNO, MQCD, MQCSP, MQSCO and MQBNO
    (strings by pointer in MQCSP and MQSCO); MQINQ takes selector lists; MQSTAT exists."""

    def __init__(self, version: str):
        super().__init__("ibmmq.ibmmqc")
        self.__version__ = version  # ibmmq refuses a C layer of another version
        self.__mqbuild__ = "common"
        self.__strucversions__: dict[str, int] = {}  # set from IBM's constants once they are imported
        self.__cmdlevel__ = 0

    def MQCBINIT(self, callback: Callable[..., Any]) -> None:
        assert callable(callback)

    def MQLOGCF(self, level: int, filename: str | None = None) -> tuple[int]:
        return (0,)

    def MQCONNX(self, name: bytes, cno: bytes, cd: bytes | None, csp: bytes | None, sco: bytes | None, bno: Any):
        _arg(name, bytes, "QMgrName")
        for buffer, what in ((cno, "MQCNO"), (cd, "MQCD"), (csp, "MQCSP"), (sco, "MQSCO"), (bno, "MQBNO")):
            _arg(buffer, (bytes, type(None)), what)
        options = _covering(MQCNO, cno, "MQCNO")["Options"]
        security = _covering(MQCSP, csp, "MQCSP") if csp is not None else None
        tls = _covering(MQSCO, sco, "MQSCO") if sco is not None else None
        # ibmmqc.c raises the MQSCO's Version to 6 when KeyRepoPasswordPtr is set
        stash = pointed(tls["KeyRepoPasswordPtr"], tls["KeyRepoPasswordLength"]) if tls else None
        summary = connect_summary(
            cd,
            Options=options,
            AuthenticationType=security["AuthenticationType"] if security else C.MQCSP_AUTH_NONE,
            UserId=pointed(security["CSPUserIdPtr"], security["CSPUserIdLength"]) if security else None,
            Password=pointed(security["CSPPasswordPtr"], security["CSPPasswordLength"]) if security else None,
            KeyRepository=tls["KeyRepository"] if tls else None,
            KeyRepoPassword=stash,
        )
        return self.qm.connect(name.decode(), summary)

    def MQINQ(self, hconn: int, hobj: int, selectors: list[int], int_attrs: list[int], *counts: int):
        _arg(selectors, list, "selectors"), _arg(int_attrs, list, "intAttrs")
        int_count, char_count, char_length = counts
        ints, chars, cc, rc = self.qm.inquire(hconn, hobj, selectors)
        if cc == C.MQCC_OK:
            if (int_count, char_length) != (len(ints), len(chars)):
                raise StandInError(f"MQINQ asked for {int_count} ints and {char_length} chars")
            int_attrs.extend(ints)
        return int_attrs, chars.ljust(char_length, b"\0"), cc, rc

    def MQSTAT(self, hconn: int, kind: int, sts: bytes) -> tuple[bytes, int, int]:
        _arg(hconn, int, "hConn"), _arg(kind, int, "StatusType")
        sts = _sized(sts, MQSTS.size, "MQSTS")
        status, cc, rc = self.qm.stat(hconn, kind)
        return MQSTS.encode(sts, **status), cc, rc


class PymqeStandIn(StandIn):
    """``pymqi.pymqe`` of pymqi 1.12 (a client build, SSL on): MQCONNX takes the options, the
    packed MQCD, a dict of user and password (pymqe.c builds the MQCSP) and the packed MQSCO;
    MQINQ takes one selector and answers one value."""

    def __init__(self, version: str):
        super().__init__("pymqi.pymqe")
        self.__version__ = version
        self.__mqlevels__ = ("5.0", "5.1", "5.2", "5.3", "6.0", "7.0", "7.1", "7.5", "8.0.0", "8.0.1")
        self.__mqbuild__ = "client"

    def MQCONNX(self, name: bytes, options: int, cd: bytes | None, user_password: dict[str, bytes], sco=None):
        _arg(name, bytes, "QMgrName"), _arg(options, int, "Options"), _arg(cd, (bytes, type(None)), "MQCD")
        _arg(user_password, dict, "user_password"), _arg(sco, (bytes, type(None)), "MQSCO")
        tls = _covering(MQSCO, sco, "MQSCO") if sco is not None else None
        summary = connect_summary(
            cd,
            Options=options,
            AuthenticationType=C.MQCSP_AUTH_USER_ID_AND_PWD if user_password else C.MQCSP_AUTH_NONE,
            UserId=user_password.get("user"),
            Password=user_password.get("password"),
            KeyRepository=tls["KeyRepository"] if tls else None,
            # read only where the MQSCO's Version has the field, as the MQI does
            KeyRepoPassword=pointed(tls["KeyRepoPasswordPtr"], tls["KeyRepoPasswordLength"])
            if tls and tls["Version"] >= 6
            else None,
        )
        return self.qm.connect(name.decode(), summary)

    def MQINQ(self, hconn: int, hobj: int, selector: int) -> tuple[int | bytes, int, int]:
        _arg(selector, int, "selector")
        ints, chars, cc, rc = self.qm.inquire(hconn, hobj, [selector])
        if C.MQIA_FIRST <= selector <= C.MQIA_LAST:
            return (ints[0] if ints else 0), cc, rc
        return chars.split(b"\0", 1)[0], cc, rc  # pymqe.c returns the NUL-terminated buffer


# --- the layers ----------------------------------------------------------------------------------

# ibmmqc.c's __strucversions__: each structure's MQxx_CURRENT_VERSION in the headers it was built
# with, which are the headers the wheel's CMQC/CMQXC were generated from
STRUCTURE_VERSIONS = (
    "bno cd cfh cmho cno csp cbc cbd cih ctlo dlh gmo iih impo md mde od pd pmo sco sd smpo dmpo dmho sro sts tm xqh"
).split()


@dataclass
class Layer:
    name: str  # "ibmmq" or "pymqi"
    lib: types.ModuleType  # the real package
    extension: StandIn

    @property
    def qm(self) -> QueueManagerDouble:
        return self.extension.qm


@pytest.fixture(scope="module")
def layer_roots() -> dict[str, Path]:
    """Where each package is imported from; pymqi is fetched into the cache when missing."""
    return mq_layers.roots()


@pytest.fixture(scope="module")
def layer(request, layer_roots):
    """One real package over its stand-in extension (indirect parameter: "ibmmq" or "pymqi")."""
    name = request.param
    version = mq_layers.tested_version(name)
    extension = IbmmqcStandIn(version) if name == "ibmmq" else PymqeStandIn(version)
    with mq_layers.imported_layer(name, layer_roots[name], extension) as lib:
        if isinstance(extension, IbmmqcStandIn):
            headers = (lib.CMQC, lib.CMQXC, lib.CMQCFC)
            for key in STRUCTURE_VERSIONS:
                constant = f"MQ{key.upper()}_CURRENT_VERSION"
                extension.__strucversions__[key] = next(getattr(h, constant) for h in headers if hasattr(h, constant))
            extension.__strucversions__["tmc"] = 2
            extension.__cmdlevel__ = lib.CMQC.MQCMDL_CURRENT_LEVEL
        yield Layer(name, lib, extension)


@pytest.fixture
def qm(layer, monkeypatch) -> QueueManagerDouble:
    """A fresh queue manager behind the layer's extension; the password in the environment.
    The client loads the layer by name (`load_library`): ibmmq first, so a pymqi run hides it."""
    monkeypatch.setenv("CONTRACT_MQ_PASSWORD", "s3cret-pw")
    monkeypatch.setenv("CONTRACT_MQ_STASH", "stash-pw")
    if layer.name == "pymqi":
        monkeypatch.setitem(sys.modules, "ibmmq", None)
    layer.extension.qm = QueueManagerDouble()
    yield layer.qm
    layer.extension.qm = QueueManagerDouble()  # late calls (finalizers) go to an idle one


BOTH = pytest.mark.parametrize("layer", ["ibmmq", "pymqi"], indirect=True)
IBMMQ = pytest.mark.parametrize("layer", ["ibmmq"], indirect=True)

SETTINGS = {
    "channel": "DLQ.SVRCONN",
    "conn_name": "mq1.example.com(1414),mq2.example.com(1414)",
    "cipher_spec": "ANY_TLS13_OR_HIGHER",
    "key_repository": "/etc/dlq-pipeline/keys/client",
    "user": "dlqapp",
    "password_env": "CONTRACT_MQ_PASSWORD",
}


def connected(layer: Layer, settings: dict[str, str] | None = None) -> dict[str, Any]:
    """The MQCONNX each layer makes for ``settings``: its CNO options (ibmmq adds handle sharing)
    and MQCD version (ibmmq's default 11, pymqi's 6 raised to 7 for TLS) are its own."""
    settings = settings or SETTINGS
    return {
        "Options": C.MQCNO_CLIENT_BINDING | (C.MQCNO_HANDLE_SHARE_BLOCK if layer.name == "ibmmq" else 0),
        "CD.Version": 11 if layer.name == "ibmmq" else 7,
        "ChannelName": "DLQ.SVRCONN",
        "ConnectionName": "mq1.example.com(1414),mq2.example.com(1414)",
        "ChannelType": C.MQCHT_CLNTCONN,
        "TransportType": C.MQXPT_TCP,
        "SSLCipherSpec": "ANY_TLS13_OR_HIGHER",
        "AuthenticationType": C.MQCSP_AUTH_USER_ID_AND_PWD,
        "UserId": b"dlqapp",
        "Password": b"s3cret-pw",
        "KeyRepository": "/etc/dlq-pipeline/keys/client",
        "KeyRepoPassword": b"stash-pw" if settings.get("key_stash_password_env") else None,
    }


def od(name: str, qmgr: str = "", alternate_user: str = "", object_type: int = C.MQOT_Q) -> dict[str, Any]:
    return {"ObjectType": object_type, "ObjectName": name, "ObjectQMgrName": qmgr, "AlternateUserId": alternate_user}


NO_ID = b"\0" * 24


def got(options: int, length: int, rc: int, match: int = 0, msg_id: bytes = NO_ID, correl_id: bytes = NO_ID):
    """An MQGET on APP.IN: version-2 GMO and MQMD, every call."""
    gmo = {"Version": 2, "Options": options, "MatchOptions": match}
    md = {"Version": 2, "MsgId": msg_id, "CorrelId": correl_id}
    return ("MQGET", "APP.IN", {"GMO": gmo, "MD": md, "BufferLength": length}, rc)


def descriptor(n: int, **changes: Any) -> MQMD:
    """A version-2 MQMD with every field set (character fields padded as the MQI returns them)."""
    return MQMD(
        version=2,
        report=0x0100,  # MQRO_EXCEPTION
        msg_type=8,
        expiry=-1,
        feedback=0,
        encoding=273,  # the data's: big-endian, as a z/OS sender wrote it
        ccsid=500,
        format="MQSTR   ",
        priority=4,
        persistence=1,
        msg_id=bytes([n]) * 24,
        correl_id=bytes([0x40 + n]) * 24,
        backout_count=0,
        reply_to_q="REPLY.Q".ljust(48),
        reply_to_qmgr="QMR".ljust(48),
        user_id="alice".ljust(12),
        accounting_token=bytes(range(n, n + 32)),
        appl_identity_data=f"order {n}".ljust(32),
        put_appl_type=6,
        put_appl_name="payments/app.py".ljust(28),
        put_date="20260301",
        put_time=f"1234{n:02d}00",
        appl_origin_data="EU  ",
        group_id=bytes([0x80 + n]) * 24,
        msg_seq_number=n,
        offset=0,
        msg_flags=0x08,  # MQMF_MSG_IN_GROUP
        original_length=-1,
    ).replace(**changes)


# --- the tests -----------------------------------------------------------------------------------


@IBMMQ
def test_ibms_constants_and_the_decoders_layouts(layer):
    """The values the double and the decoders use are IBM's, and each layout's length at every
    version is IBM's MQxx_LENGTH_n (the wheel's CMQC/CMQXC, generated from IBM's headers)."""
    cmqc, cmqxc = layer.lib.CMQC, layer.lib.CMQXC
    assert {name: getattr(cmqc, name) for name in CMQC_VALUES} == CMQC_VALUES
    assert {name: getattr(cmqxc, name) for name in CMQXC_VALUES} == CMQXC_VALUES
    for layout in LAYOUTS:
        headers = cmqxc if layout is MQCD else cmqc
        prefix = layout.name + "_LENGTH_"
        ibm = {v: getattr(headers, f"{prefix}{v}") for v in layout.length if hasattr(headers, f"{prefix}{v}")}
        assert ibm == layout.length, layout.name
    # the structures the extensions size-check are their current versions
    assert [MQOD.size, MQPMO.size, MQGMO.size, MQSTS.size, MQMD_V2_LENGTH] == [
        cmqc.MQOD_CURRENT_LENGTH,
        cmqc.MQPMO_CURRENT_LENGTH,
        cmqc.MQGMO_CURRENT_LENGTH,
        cmqc.MQSTS_CURRENT_LENGTH,
        cmqc.MQMD_CURRENT_LENGTH,
    ]


@BOTH
def test_the_layers_are_the_tested_releases(layer, layer_roots):
    """The pins in pyproject are what runs here: ibmmq from the venv, pymqi from its sdist."""
    folder = Path(layer.lib.__file__).resolve().parent
    assert folder == (layer_roots[layer.name] / layer.name).resolve()
    if layer.name == "ibmmq":
        assert layer.lib.__version__ == mq_layers.tested_version("ibmmq")
    else:
        assert folder.parent.name == f"pymqi-{mq_layers.tested_version('pymqi')}"


@BOTH
def test_a_whole_conversation(layer, qm):
    """Connect over a TLS client channel with a user, put in syncpoint with set-all-context and an
    alternate user, commit, browse (a short buffer grows on 2080), get by MsgId+CorrelId in
    syncpoint, back out, get again, commit, inquire depth and DEADQ, disconnect: every MQI call
    with its decoded structures, and every answer, through the real layer."""
    first, second, elsewhere = descriptor(1), descriptor(2), descriptor(3)
    big = bytes(range(256)) * 12  # 3,072 bytes: more than the browse's first buffer

    conn = ClientConnection("QM1", SETTINGS)  # the layer loaded by name, as in production
    assert conn._lib is layer.lib
    assert conn.async_put is (layer.name == "ibmmq")  # MQSTAT: QueueManager.stat in ibmmq only
    local = conn.open_for_put("APP.IN", alternate_user="alice")
    conn.put(local, first, b"first")
    conn.put(local, second, big)
    remote = conn.open_for_put("APP.OUT", "QM2", set_all_context=False)
    conn.put(remote, elsewhere, b"elsewhere")
    assert qm.messages("APP.IN") == [(first, b"first", "put"), (second, big, "put")]  # not yet visible
    conn.commit()

    assert list(conn.browse("APP.IN", buffer_size=1024)) == [Message(first, b"first"), Message(second, big)]
    assert conn.get("APP.IN", msg_id=second.msg_id, correl_id=second.correl_id) == Message(second, big)
    conn.backout()
    again = conn.get("APP.IN", msg_id=second.msg_id, correl_id=second.correl_id)
    assert again == Message(second.replace(backout_count=1), big)  # the queue manager counted the backout
    conn.commit()
    assert conn.inquire_depth("APP.IN") == (1, 5000)
    assert conn.dead_letter_queue() == "SYSTEM.DEAD.LETTER.QUEUE"
    conn.disconnect()

    # what MQ holds: the original context under SET_ALL_CONTEXT, the queue manager's without it
    assert qm.messages("APP.IN") == [(first, b"first", "ready")]
    assert qm.messages("QM2/APP.OUT") == [(elsewhere.replace(**QMGR_CONTEXT), b"elsewhere", "ready")]
    put_options = C.MQPMO_SYNCPOINT | C.MQPMO_FAIL_IF_QUIESCING
    browse = C.MQGMO_FAIL_IF_QUIESCING  # NO_WAIT (0), no CONVERT, no ACCEPT_TRUNCATED_MSG
    get_options = C.MQGMO_SYNCPOINT | C.MQGMO_FAIL_IF_QUIESCING
    ids = {"match": C.MQMO_MATCH_MSG_ID | C.MQMO_MATCH_CORREL_ID, "msg_id": second.msg_id}
    ids["correl_id"] = second.correl_id
    # ibmmq opens the queue manager object with an empty ObjectQMgrName, pymqi with its name
    qmgr_object = od("", "" if layer.name == "ibmmq" else "QM1", object_type=C.MQOT_Q_MGR)
    calls = [
        ("MQCONNX", "QM1", connected(layer)),
        (
            "MQOPEN",
            od("APP.IN", alternate_user="alice"),
            C.MQOO_OUTPUT | C.MQOO_SET_ALL_CONTEXT | C.MQOO_ALTERNATE_USER_AUTHORITY | C.MQOO_FAIL_IF_QUIESCING,
        ),
        ("MQPUT", "APP.IN", first, put_options | C.MQPMO_SET_ALL_CONTEXT, b"first"),
        ("MQPUT", "APP.IN", second, put_options | C.MQPMO_SET_ALL_CONTEXT, big),
        ("MQOPEN", od("APP.OUT", "QM2"), C.MQOO_OUTPUT | C.MQOO_FAIL_IF_QUIESCING),
        ("MQPUT", "QM2/APP.OUT", elsewhere, put_options, b"elsewhere"),
        ("MQCMIT",),
        ("MQOPEN", od("APP.IN"), C.MQOO_BROWSE | C.MQOO_INPUT_AS_Q_DEF | C.MQOO_FAIL_IF_QUIESCING),
        got(browse | C.MQGMO_BROWSE_FIRST, 1024, RC.NONE),
        got(browse | C.MQGMO_BROWSE_NEXT, 1024, RC.TRUNCATED_MSG_FAILED),
        got(browse | C.MQGMO_BROWSE_NEXT, len(big), RC.NONE),  # the same message, whole
        got(browse | C.MQGMO_BROWSE_NEXT, 1024, RC.NO_MSG_AVAILABLE),
        ("MQOPEN", od("APP.IN"), C.MQOO_INPUT_AS_Q_DEF | C.MQOO_SAVE_ALL_CONTEXT | C.MQOO_FAIL_IF_QUIESCING),
        got(get_options, 64 * 1024, RC.NONE, **ids),
        ("MQBACK",),
        got(get_options, 64 * 1024, RC.NONE, **ids),
        ("MQCMIT",),
        ("MQOPEN", od("APP.IN"), C.MQOO_INQUIRE | C.MQOO_FAIL_IF_QUIESCING),
        ("MQINQ", "APP.IN", [C.MQIA_CURRENT_Q_DEPTH]),
        ("MQINQ", "APP.IN", [C.MQIA_MAX_Q_DEPTH]),
        ("MQOPEN", qmgr_object, C.MQOO_INQUIRE),
        ("MQINQ", "QM1", [C.MQCA_DEAD_LETTER_Q_NAME]),
        *[("MQCLOSE", name, 0) for name in ("APP.IN", "QM2/APP.OUT", "APP.IN", "APP.IN", "APP.IN")],
        ("MQDISC",),
    ]
    assert qm.calls == calls


@BOTH
def test_asynchronous_puts_report_through_mqstat_where_the_layer_has_it(layer, qm):
    """ibmmq: MQPMO_ASYNC_RESPONSE puts, and MQSTAT's MQSTS read back field by field (one put
    to a full queue failed without an exception). pymqi has no MQSTAT: the same puts wait for
    their answer, and the full queue's is an MQError at once."""
    conn = ClientConnection("QM1", SETTINGS)
    ok, full = conn.open_for_put("APP.IN"), conn.open_for_put("FULL.Q")
    sync_options = C.MQPMO_SYNCPOINT | C.MQPMO_SET_ALL_CONTEXT | C.MQPMO_FAIL_IF_QUIESCING
    if layer.name == "ibmmq":
        for handle, n in ((ok, 1), (full, 2), (ok, 3)):
            conn.put(handle, descriptor(n), b"m%d" % n, asynchronous=True)
        assert conn.async_status() == AsyncPutStatus(succeeded=2, warned=0, failed=1, reason=RC.Q_FULL)
        assert conn.async_status() == AsyncPutStatus()  # counted since the last MQSTAT
        options = sync_options | C.MQPMO_ASYNC_RESPONSE
        tail = [("MQSTAT", C.MQSTAT_TYPE_ASYNC_ERROR)] * 2
    else:
        conn.put(ok, descriptor(1), b"m1", asynchronous=True)
        with pytest.raises(MQError) as failed:
            conn.put(full, descriptor(2), b"m2", asynchronous=True)
        assert failed.value.reason == RC.Q_FULL and failed.value.transient
        conn.put(ok, descriptor(3), b"m3", asynchronous=True)
        options = sync_options
        tail = []
    conn.commit()
    conn.disconnect()
    assert [(c[1], c[2].msg_id, c[3]) for c in qm.calls if c[0] == "MQPUT"] == [
        ("APP.IN", descriptor(1).msg_id, options),
        ("FULL.Q", descriptor(2).msg_id, options),
        ("APP.IN", descriptor(3).msg_id, options),
    ]
    assert [c for c in qm.calls if c[0] in ("MQSTAT", "MQCMIT")] == [*tail, ("MQCMIT",)]
    assert qm.messages("APP.IN") == [(descriptor(1), b"m1", "ready"), (descriptor(3), b"m3", "ready")]


@BOTH
def test_mqi_failures_are_mqerrors_with_their_reason_and_no_secret(layer, qm):
    """The layer's MQMIError (its class and its ``reason``) becomes an MQError: a refused
    password (2035) names the channel and never the password, an unknown queue is 2085."""
    qm.password = b"another"
    with pytest.raises(MQError) as refused:
        ClientConnection("QM1", SETTINGS)
    assert refused.value.reason == RC.NOT_AUTHORIZED and refused.value.__cause__ is None
    assert "DLQ.SVRCONN" in str(refused.value) and "s3cret" not in str(refused.value)

    qm.password = b"s3cret-pw"
    conn = ClientConnection("QM1", SETTINGS)
    with pytest.raises(MQError) as unknown:
        conn.open_for_put("NO.SUCH.Q")
    assert unknown.value.reason == RC.UNKNOWN_OBJECT_NAME and "opening NO.SUCH.Q for output" in str(unknown.value)
    with pytest.raises(MQError) as unknown:
        list(conn.browse("NO.SUCH.Q"))
    assert unknown.value.reason == RC.UNKNOWN_OBJECT_NAME
    conn.disconnect()
    assert [c[0] for c in qm.calls] == ["MQCONNX", "MQCONNX", "MQOPEN", "MQOPEN", "MQDISC"]


@BOTH
def test_a_key_repository_password_reaches_the_mqsco_or_is_refused_before_connecting(layer, qm):
    """ibmmq passes ``key_stash_password_env``'s value as MQSCO.KeyRepoPassword (MQSCO version 6).
    pymqi's MQSCO stops at version 5, with no such field: the connection is refused before any
    MQI call, saying what to install, rather than connecting without the password."""
    settings = dict(SETTINGS, key_stash_password_env="CONTRACT_MQ_STASH")
    if layer.name == "ibmmq":
        ClientConnection("QM1", settings).disconnect()
        assert qm.calls == [("MQCONNX", "QM1", connected(layer, settings)), ("MQDISC",)]
    else:
        with pytest.raises(UsageError) as refused:
            ClientConnection("QM1", settings)
        text = str(refused.value)
        assert "key_stash_password_env" in text and "ibmmq" in text and "stash-pw" not in text
        assert qm.calls == []
