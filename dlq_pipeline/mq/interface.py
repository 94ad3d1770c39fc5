"""The one small interface every MQ connection implements, and what flows through it.

Two implementations: `dlq_pipeline.mq.client` over the real IBM MQ client, and
`dlq_pipeline.mq.sim`, the simulated queue manager used by tests, rehearsals and the demo.
The replay targets in `dlq_pipeline.replay.targets` (dry run, dmpmqmsg directory) speak it
too, so the writer never needs to know where its messages go.

Every failure is an `MQError` carrying the MQ reason code; nothing else about MQ leaks out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol, TypeGuard, runtime_checkable

from dlq_pipeline.errors import DlqPipelineError
from dlq_pipeline.mq import reasons
from dlq_pipeline.mq.mqmd import MQMD

# First buffer for a get/browse; grown to the real length on 2080 (never truncate).
DEFAULT_BUFFER = 64 * 1024


class MQError(DlqPipelineError):
    """A failed MQ call. ``reason`` is the MQ reason code (2053, 2009, ...); ``text`` says what
    was being done, never a secret. ``data_length`` is the real message length for 2080."""

    def __init__(self, reason: int, text: str = "", *, data_length: int | None = None):
        self.reason = int(reason)
        self.text = text
        self.data_length = data_length
        super().__init__(f"{reasons.describe(self.reason)}{': ' + text if text else ''}")

    @property
    def transient(self) -> bool:
        return reasons.is_transient(self.reason)

    @property
    def connection_failure(self) -> bool:
        return reasons.is_connection_failure(self.reason)


@dataclass(frozen=True, slots=True)
class PutHandle:
    """An open queue for output. ``qmgr`` is the ObjectQMgrName ("" = name resolution);
    ``token`` is the implementation's own handle object."""

    queue: str
    qmgr: str
    set_all_context: bool
    alternate_user: str | None
    token: object = None


@dataclass(frozen=True, slots=True)
class Message:
    """A message as got or browsed: the descriptor and every byte of the data."""

    md: MQMD
    data: bytes


@runtime_checkable
class Connection(Protocol):
    """One connection to one queue manager. Units of work are explicit: ``syncpoint=True``
    puts/gets stay invisible until `commit`; `backout` undoes them. ``dry_run`` is True only
    for the dry-run target, whose puts are never made."""

    qmgr_name: str
    dry_run: bool

    def disconnect(self) -> None: ...

    def open_for_put(
        self, q: str, qmgr: str = "", *, set_all_context: bool = True, alternate_user: str | None = None
    ) -> PutHandle: ...

    def put(self, handle: PutHandle, md: MQMD, data: bytes, *, syncpoint: bool = True) -> None: ...

    def commit(self) -> None: ...

    def backout(self) -> None: ...

    def browse(self, q: str, *, buffer_size: int = DEFAULT_BUFFER) -> Iterator[Message]: ...

    def get(
        self,
        q: str,
        *,
        msg_id: bytes | None = None,
        correl_id: bytes | None = None,
        syncpoint: bool = True,
        buffer_size: int = DEFAULT_BUFFER,
    ) -> Message: ...

    def inquire_depth(self, q: str, qmgr: str = "") -> tuple[int, int]: ...


@dataclass(frozen=True, slots=True)
class AsyncPutStatus:
    """What MQSTAT (``MQSTAT_TYPE_ASYNC_ERROR``) says of the asynchronous puts since the last
    call: how many succeeded, warned and failed, and the reason of the first that did not
    simply succeed (0: none)."""

    succeeded: int = 0
    warned: int = 0
    failed: int = 0
    reason: int = 0


@runtime_checkable
class AsyncPuts(Protocol):
    """A connection that can put without waiting for the queue manager's answer
    (``MQPMO_ASYNC_RESPONSE``) where ``async_put`` is True: ``put(..., asynchronous=True)``
    returns at once and a failed put is not raised but counted, for `async_status` (MQSTAT)
    to report before the unit of work is committed. A connection that cannot (no MQSTAT in
    its client library, the replay targets that write files) has no such attribute or has
    it False, and the writer puts synchronously."""

    async_put: bool

    def put(
        self, handle: PutHandle, md: MQMD, data: bytes, *, syncpoint: bool = True, asynchronous: bool = False
    ) -> None: ...

    def async_status(self) -> AsyncPutStatus: ...


def puts_asynchronously(conn: object) -> TypeGuard[AsyncPuts]:
    """Whether ``conn`` can put asynchronously (`AsyncPuts`)."""
    return bool(getattr(conn, "async_put", False))


Connector = Callable[[], Connection]


def read_whole(attempt: Callable[[int], Message], buffer_size: int = DEFAULT_BUFFER) -> Message:
    """Call ``attempt(buffer_length)`` until the message fits: on 2080 grow the buffer to the
    length MQ reported (or double it when MQ did not say) and repeat the same call.

    A browse or get that fails with 2080 leaves the cursor and the message where they were,
    so repeating it returns the same message, whole. Any other error propagates.
    """
    length = max(int(buffer_size), 1)
    while True:
        try:
            return attempt(length)
        except MQError as exc:
            if exc.reason != reasons.MQRC_TRUNCATED_MSG_FAILED:
                raise
            wanted = exc.data_length if exc.data_length and exc.data_length > length else length * 2
            length = wanted
