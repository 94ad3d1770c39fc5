"""The real queue manager connection: a thin layer over ``ibmmq`` (first) or ``pymqi``.

Both are C extensions over IBM's MQ client library, which is not on PyPI; the package is
imported only when a connection is made, and a missing client raises `MQClientMissing`
with what to install, never a traceback at ``import dlq_pipeline``.

Everything that does not need the library is a pure function here and tested without it:
open/put/get options, the object descriptor, MQMD <-> fields (version 2, character fields
blank padded), connection settings. Choices (docs/operations.md, "The IBM MQ client" and
"MQ authorities"):

- puts: ``MQOO_OUTPUT | MQOO_SET_ALL_CONTEXT`` + ``MQPMO_SET_ALL_CONTEXT`` so MsgId, CorrelId
  and all identity/origin context are the original ones; PUTAUT(CTX) adds
  ``MQOO_ALTERNATE_USER_AUTHORITY`` with ``OD.AlternateUserId`` = MQMD.UserIdentifier;
  a blank target queue manager is an empty ObjectQMgrName (normal name resolution);
- syncpoint always explicit (``SYNCPOINT`` or ``NO_SYNCPOINT``), ``FAIL_IF_QUIESCING`` always;
- browse: ``BROWSE_FIRST``/``BROWSE_NEXT``, ``NO_WAIT``, a fresh version-2 MQMD and
  ``MQMO_NONE`` on every call, no ``CONVERT``; 2080 grows the buffer and repeats;
- passwords come from the environment variable the configuration names, only at connect time,
  and appear in no error text.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dlq_pipeline.errors import UsageError
from dlq_pipeline.mq import reasons
from dlq_pipeline.mq.interface import DEFAULT_BUFFER, AsyncPutStatus, Message, MQError, PutHandle, read_whole
from dlq_pipeline.mq.mqmd import MQMD, MQMD_BYTE_LENGTHS, MQMD_CHAR_LENGTHS, bytes_to_text, text_to_bytes
from dlq_pipeline.runtime.secrets import secret

LIBRARIES = ("ibmmq", "pymqi")
INSTALL_HINT = (
    "no IBM MQ client for Python: install it with  pip install 'dlq-pipeline[mq]'  (ibmmq; "
    "'dlq-pipeline[mq-legacy]' for pymqi) and install IBM's MQ redistributable client library "
    "(libmqic), which is not on PyPI; see docs/operations.md"
)

# Values from IBM's cmqc.h (identical in ibmmq and pymqi).
MQOO_INPUT_AS_Q_DEF = 0x00000001
MQOO_BROWSE = 0x00000008
MQOO_OUTPUT = 0x00000010
MQOO_INQUIRE = 0x00000020
MQOO_SAVE_ALL_CONTEXT = 0x00000080
MQOO_SET_ALL_CONTEXT = 0x00000800
MQOO_ALTERNATE_USER_AUTHORITY = 0x00001000
MQOO_FAIL_IF_QUIESCING = 0x00002000
MQPMO_SYNCPOINT = 0x00000002
MQPMO_NO_SYNCPOINT = 0x00000004
MQPMO_SET_ALL_CONTEXT = 0x00000800
MQPMO_FAIL_IF_QUIESCING = 0x00002000
MQPMO_ASYNC_RESPONSE = 0x00010000
MQSTAT_TYPE_ASYNC_ERROR = 0
MQGMO_NO_WAIT = 0x00000000
MQGMO_SYNCPOINT = 0x00000002
MQGMO_NO_SYNCPOINT = 0x00000004
MQGMO_BROWSE_FIRST = 0x00000010
MQGMO_BROWSE_NEXT = 0x00000020
MQGMO_FAIL_IF_QUIESCING = 0x00002000
MQGMO_VERSION_2 = 2
MQMO_NONE = 0x00000000
MQMO_MATCH_MSG_ID = 0x00000001
MQMO_MATCH_CORREL_ID = 0x00000002
MQIA_CURRENT_Q_DEPTH = 3
MQIA_MAX_Q_DEPTH = 15
MQCA_DEAD_LETTER_Q_NAME = 2006
MQCNO_CLIENT_BINDING = 0x00000800
MQCHT_CLNTCONN = 6
MQXPT_TCP = 2
MQMD_VERSION_2 = 2

# snake_case MQMD attribute -> MQI field name
MD_FIELD_NAMES = {
    "version": "Version",
    "report": "Report",
    "msg_type": "MsgType",
    "expiry": "Expiry",
    "feedback": "Feedback",
    "encoding": "Encoding",
    "ccsid": "CodedCharSetId",
    "format": "Format",
    "priority": "Priority",
    "persistence": "Persistence",
    "msg_id": "MsgId",
    "correl_id": "CorrelId",
    "backout_count": "BackoutCount",
    "reply_to_q": "ReplyToQ",
    "reply_to_qmgr": "ReplyToQMgr",
    "user_id": "UserIdentifier",
    "accounting_token": "AccountingToken",
    "appl_identity_data": "ApplIdentityData",
    "put_appl_type": "PutApplType",
    "put_appl_name": "PutApplName",
    "put_date": "PutDate",
    "put_time": "PutTime",
    "appl_origin_data": "ApplOriginData",
    "group_id": "GroupId",
    "msg_seq_number": "MsgSeqNumber",
    "offset": "Offset",
    "msg_flags": "MsgFlags",
    "original_length": "OriginalLength",
}


class MQClientMissing(UsageError, RuntimeError):
    """Neither ibmmq nor pymqi (or IBM's C client under them) can be loaded."""


def load_library():
    """The MQ module to use: ibmmq, else pymqi; `MQClientMissing` says what to install."""
    problems = []
    for name in LIBRARIES:
        try:
            return importlib.import_module(name)
        except (ImportError, OSError) as exc:
            problems.append(f"{name}: {exc}")
    raise MQClientMissing(f"{INSTALL_HINT} ({'; '.join(problems)})")


# --- pure: options and descriptors ---------------------------------------------------------


def put_open_options(*, set_all_context: bool, alternate_user: str | None) -> int:
    options = MQOO_OUTPUT | MQOO_FAIL_IF_QUIESCING
    if set_all_context:
        options |= MQOO_SET_ALL_CONTEXT
    if alternate_user:
        options |= MQOO_ALTERNATE_USER_AUTHORITY
    return options


def put_options(*, syncpoint: bool, set_all_context: bool, asynchronous: bool = False) -> int:
    """Never MQPMO_NEW_MSG_ID/NEW_CORREL_ID: the original ids are kept."""
    options = (MQPMO_SYNCPOINT if syncpoint else MQPMO_NO_SYNCPOINT) | MQPMO_FAIL_IF_QUIESCING
    if set_all_context:
        options |= MQPMO_SET_ALL_CONTEXT
    if asynchronous:
        options |= MQPMO_ASYNC_RESPONSE
    return options


def async_put_status(sts) -> AsyncPutStatus:
    """The library's MQSTS (from MQSTAT) as an `AsyncPutStatus`."""
    return AsyncPutStatus(
        succeeded=int(sts.PutSuccessCount),
        warned=int(sts.PutWarningCount),
        failed=int(sts.PutFailureCount),
        reason=int(sts.Reason),
    )


def browse_open_options() -> int:
    return MQOO_BROWSE | MQOO_INPUT_AS_Q_DEF | MQOO_FAIL_IF_QUIESCING


def get_open_options() -> int:
    return MQOO_INPUT_AS_Q_DEF | MQOO_SAVE_ALL_CONTEXT | MQOO_FAIL_IF_QUIESCING


def inquire_open_options() -> int:
    return MQOO_INQUIRE | MQOO_FAIL_IF_QUIESCING


def browse_options(first: bool) -> tuple[int, int]:
    """(GMO Options, MatchOptions) for one browse step: no wait, no conversion, no matching."""
    return (MQGMO_BROWSE_FIRST if first else MQGMO_BROWSE_NEXT) | MQGMO_NO_WAIT | MQGMO_FAIL_IF_QUIESCING, MQMO_NONE


def get_options(*, syncpoint: bool, msg_id: bytes | None, correl_id: bytes | None) -> tuple[int, int]:
    """(GMO Options, MatchOptions) for a destructive get of one specific message."""
    options = (MQGMO_SYNCPOINT if syncpoint else MQGMO_NO_SYNCPOINT) | MQGMO_NO_WAIT | MQGMO_FAIL_IF_QUIESCING
    match = (MQMO_MATCH_MSG_ID if msg_id is not None else 0) | (MQMO_MATCH_CORREL_ID if correl_id is not None else 0)
    return options, match


def _name(value: str, length: int, what: str) -> bytes:
    raw = text_to_bytes(value.rstrip(" "))
    if len(raw) > length:
        raise ValueError(f"{what} {value!r} is longer than {length} bytes")
    return raw


def object_descriptor(q: str, qmgr: str = "", alternate_user: str | None = None) -> dict[str, bytes]:
    """MQOD fields; a blank queue manager is an empty ObjectQMgrName (name resolution)."""
    od = {"ObjectName": _name(q, 48, "queue name"), "ObjectQMgrName": _name(qmgr or "", 48, "queue manager name")}
    if alternate_user:
        od["AlternateUserId"] = _name(alternate_user, 12, "alternate user id")
    return od


def md_fields(md: MQMD) -> dict[str, int | bytes]:
    """Every MQMD field for a version-2 MQMD: character fields encoded as landed and blank
    padded to their length (the library would pad with NULs), byte fields exact."""
    out: dict[str, int | bytes] = {}
    for attribute, mq_name in MD_FIELD_NAMES.items():
        value = getattr(md, attribute)
        if attribute in MQMD_CHAR_LENGTHS:
            length = MQMD_CHAR_LENGTHS[attribute]
            raw = text_to_bytes(value)
            if len(raw) > length:
                raise ValueError(f"MQMD {attribute} {value!r} is longer than {length} bytes")
            value = raw.ljust(length, b" ")
        elif attribute in MQMD_BYTE_LENGTHS:
            length = MQMD_BYTE_LENGTHS[attribute]
            if len(value) != length:
                raise ValueError(f"MQMD {attribute} must be {length} bytes, not {len(value)}")
            value = bytes(value)
        out[mq_name] = value
    out["Version"] = MQMD_VERSION_2
    return out


def md_from_fields(values: Mapping[str, int | bytes]) -> MQMD:
    """The MQMD a get returned (character fields exactly as returned, blank padded)."""
    kwargs: dict[str, Any] = {}  # MQMD's fields: ints, str and bytes
    value: int | bytes | str  # a character field's bytes become its text
    for attribute, mq_name in MD_FIELD_NAMES.items():
        value = values[mq_name]
        if attribute in MQMD_CHAR_LENGTHS:
            value = bytes_to_text(bytes(value)) if isinstance(value, (bytes, bytearray)) else value
        elif attribute in MQMD_BYTE_LENGTHS:
            value = bytes(value)
        kwargs[attribute] = value
    return MQMD(**kwargs)


@dataclass(frozen=True)
class ClientSettings:
    """One ``[mq.qmgrs.NAME]`` table. Secrets are environment variable *names* only."""

    qmgr: str
    channel: str
    conn_name: str
    cipher_spec: str = ""
    key_repository: str = ""
    user: str = ""
    password_env: str = ""
    key_stash_password_env: str = ""


def client_settings(qmgr: str, raw: Mapping[str, str]) -> ClientSettings:
    missing = [k for k in ("channel", "conn_name") if not raw.get(k)]
    if missing:
        raise ValueError(f"[mq.qmgrs.{qmgr}] needs {' and '.join(missing)}")
    if raw.get("user") and not raw.get("password_env"):
        raise ValueError(f"[mq.qmgrs.{qmgr}] names a user but no password_env")
    known = {k: raw[k] for k in ClientSettings.__dataclass_fields__ if k in raw and k != "qmgr"}
    return ClientSettings(qmgr=qmgr, **known)


# --- the connection ------------------------------------------------------------------------


class ClientConnection:
    """A client connection (MQCONNX over a SVRCONN channel); implements
    `dlq_pipeline.mq.interface.Connection`, and `dlq_pipeline.mq.interface.AsyncPuts` where the
    library has MQSTAT (``QueueManager.stat``: ibmmq). ``library`` is for tests that bring their own."""

    dry_run = False

    def __init__(self, qmgr: str, settings: Mapping[str, str], *, library=None):
        self._lib = library or load_library()
        self.qmgr_name = qmgr
        s = client_settings(qmgr, settings)
        lib = self._lib
        cd = lib.CD()
        cd.ChannelName = s.channel.encode("ascii")
        cd.ConnectionName = s.conn_name.encode("ascii")
        cd.ChannelType = MQCHT_CLNTCONN
        cd.TransportType = MQXPT_TCP
        kwargs: dict = {"cd": cd, "opts": MQCNO_CLIENT_BINDING}
        if s.cipher_spec:
            cd.SSLCipherSpec = s.cipher_spec.encode("ascii")
        if s.key_repository:
            sco = lib.SCO()
            sco.KeyRepository = s.key_repository.encode()
            if s.key_stash_password_env:
                # An MQSCO before version 6 (pymqi's) has no KeyRepoPassword: setting it would
                # be an attribute its pack() leaves out, and the password would never be sent.
                if not hasattr(sco, "KeyRepoPassword"):
                    raise UsageError(
                        f"[mq.qmgrs.{qmgr}] key_stash_password_env needs an MQ client library whose MQSCO has "
                        f"KeyRepoPassword ({lib.__name__}'s has not): install ibmmq with  "
                        "pip install 'dlq-pipeline[mq]'"
                    )
                sco.KeyRepoPassword = secret(
                    s.key_stash_password_env, f"mq.qmgrs.{qmgr}.key_stash_password_env"
                ).encode()
            kwargs["sco"] = sco
        if s.user:
            kwargs["user"] = s.user.encode()
            kwargs["password"] = secret(s.password_env, f"mq.qmgrs.{qmgr}.password_env").encode()
        self._open: dict = {}
        self._qm = lib.QueueManager(None)
        self.async_put = callable(getattr(self._qm, "stat", None))
        self._call(
            lambda: self._qm.connect_with_options(qmgr.encode(), **kwargs),
            f"connecting to {qmgr} through channel {s.channel} at {s.conn_name}",
        )

    def _call(self, fn, what: str):
        """Run one MQI call; the library's error becomes an MQError (no secrets in it)."""
        try:
            return fn()
        except self._lib.MQMIError as exc:
            length = getattr(exc, "original_length", None)
            raise MQError(exc.reason, what, data_length=length if isinstance(length, int) else None) from None

    def _queue(self, od: Mapping[str, bytes], options: int, what: str):
        """An open queue handle, opened once per object and options for this connection."""
        key = (tuple(sorted(od.items())), options)
        if key not in self._open:
            self._open[key] = self._call(lambda: self._lib.Queue(self._qm, self._lib.OD(**od), options), what)
        return self._open[key]

    def disconnect(self) -> None:
        for queue in self._open.values():
            try:
                queue.close()
            except Exception:  # closing is best effort; MQDISC closes what is left
                pass
        self._open = {}
        self._call(self._qm.disconnect, f"disconnecting from {self.qmgr_name}")

    def open_for_put(
        self, q: str, qmgr: str = "", *, set_all_context: bool = True, alternate_user: str | None = None
    ) -> PutHandle:
        od = object_descriptor(q, qmgr, alternate_user)
        options = put_open_options(set_all_context=set_all_context, alternate_user=alternate_user)
        token = self._queue(od, options, f"opening {q} for output")
        return PutHandle(q, qmgr or "", set_all_context, alternate_user, token=token)

    def put(
        self, handle: PutHandle, md: MQMD, data: bytes, *, syncpoint: bool = True, asynchronous: bool = False
    ) -> None:
        try:
            mqmd = self._lib.MD(**md_fields(md))
        except ValueError as exc:
            raise MQError(reasons.MQRC_MD_ERROR, str(exc)) from None
        pmo = self._lib.PMO(
            Options=put_options(
                syncpoint=syncpoint,
                set_all_context=handle.set_all_context,
                asynchronous=asynchronous and self.async_put,
            )
        )
        queue: Any = handle.token  # the library's queue object (`open_for_put`)
        self._call(lambda: queue.put(bytes(data), mqmd, pmo), f"putting to {handle.queue}")

    def async_status(self) -> AsyncPutStatus:
        """MQSTAT (``MQSTAT_TYPE_ASYNC_ERROR``): the asynchronous puts since the last call."""
        sts = self._call(lambda: self._qm.stat(MQSTAT_TYPE_ASYNC_ERROR), "asking for the asynchronous puts' status")
        return async_put_status(sts)

    def commit(self) -> None:
        self._call(self._qm.commit, "committing")

    def backout(self) -> None:
        self._call(self._qm.backout, "backing out")

    def _get(self, queue, length: int, options: int, match: int, msg_id=None, correl_id=None) -> Message:
        md = self._lib.MD(Version=MQMD_VERSION_2)
        if msg_id is not None:
            md.MsgId = bytes(msg_id)
        if correl_id is not None:
            md.CorrelId = bytes(correl_id)
        gmo = self._lib.GMO(Version=MQGMO_VERSION_2, Options=options, MatchOptions=match)
        data = self._call(lambda: queue.get(length, md, gmo), "getting a message")
        return Message(md_from_fields({name: md[name] for name in MD_FIELD_NAMES.values()}), bytes(data))

    def browse(self, q: str, *, buffer_size: int = DEFAULT_BUFFER) -> Iterator[Message]:
        queue = self._queue(object_descriptor(q), browse_open_options(), f"opening {q} for browse")
        first = True
        while True:
            options, match = browse_options(first)
            try:
                message = read_whole(functools.partial(self._get, queue, options=options, match=match), buffer_size)
            except MQError as exc:
                if exc.reason == reasons.MQRC_NO_MSG_AVAILABLE:
                    return
                raise
            first = False
            yield message

    def get(
        self,
        q: str,
        *,
        msg_id: bytes | None = None,
        correl_id: bytes | None = None,
        syncpoint: bool = True,
        buffer_size: int = DEFAULT_BUFFER,
    ) -> Message:
        queue = self._queue(object_descriptor(q), get_open_options(), f"opening {q} for input")
        options, match = get_options(syncpoint=syncpoint, msg_id=msg_id, correl_id=correl_id)
        return read_whole(lambda n: self._get(queue, n, options, match, msg_id, correl_id), buffer_size)

    def dead_letter_queue(self) -> str:
        """The queue manager's DEADQ attribute (MQINQ on the queue manager object)."""
        value = self._call(
            lambda: self._qm.inquire(MQCA_DEAD_LETTER_Q_NAME), f"inquiring the dead-letter queue of {self.qmgr_name}"
        )
        return (bytes_to_text(bytes(value)) if isinstance(value, (bytes, bytearray)) else str(value)).rstrip(" \x00")

    def inquire_depth(self, q: str, qmgr: str = "") -> tuple[int, int]:
        queue = self._queue(object_descriptor(q, qmgr), inquire_open_options(), f"opening {q} to inquire")
        current = self._call(lambda: queue.inquire(MQIA_CURRENT_Q_DEPTH), f"inquiring CURDEPTH of {q}")
        maximum = self._call(lambda: queue.inquire(MQIA_MAX_Q_DEPTH), f"inquiring MAXDEPTH of {q}")
        return int(current), int(maximum)
