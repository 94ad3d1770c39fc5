"""What an MQ reason code means for a replay attempt: transient or permanent.

The table is mq-client.md's. Transient failures may clear by themselves (a full queue is
drained, a channel comes back): they count against the rule's RETRY like any failure, but
they also feed the per-queue circuit breaker. Connection failures are transient too and
make the writer reconnect (the queue manager backs out the unit of work).

Unknown codes are **permanent**: we cannot tell that waiting will help, so the attempt is
reported ``failed`` (and counted) instead of being retried or silently deferred, and no
breaker opens for a code nobody has looked at.
"""

from __future__ import annotations

from dlq_pipeline.constants import reason_name

MQRC_NONE = 0
MQRC_BACKED_OUT = 2003
MQRC_CONNECTION_BROKEN = 2009
MQRC_SYNCPOINT_LIMIT_REACHED = 2024
MQRC_MSG_TOO_BIG_FOR_Q = 2030
MQRC_MSG_TOO_BIG_FOR_Q_MGR = 2031
MQRC_NO_MSG_AVAILABLE = 2033
MQRC_NOT_AUTHORIZED = 2035
MQRC_PERSISTENT_NOT_ALLOWED = 2048
MQRC_PUT_INHIBITED = 2051
MQRC_Q_FULL = 2053
MQRC_Q_SPACE_NOT_AVAILABLE = 2056
MQRC_Q_MGR_NOT_AVAILABLE = 2059
MQRC_TRUNCATED_MSG_FAILED = 2080
MQRC_UNKNOWN_ALIAS_BASE_Q = 2082
MQRC_UNKNOWN_OBJECT_NAME = 2085
MQRC_UNKNOWN_REMOTE_Q_MGR = 2087
MQRC_Q_MGR_QUIESCING = 2161
MQRC_Q_MGR_STOPPING = 2162
MQRC_CLUSTER_RESOLUTION_ERROR = 2189
MQRC_UNKNOWN_XMIT_Q = 2196
MQRC_NO_DESTINATIONS_AVAILABLE = 2270

# The connection is gone: reconnect with backoff; the queue manager backed out the unit of work.
CONNECTION = frozenset({MQRC_CONNECTION_BROKEN, MQRC_Q_MGR_NOT_AVAILABLE, MQRC_Q_MGR_QUIESCING,
                        MQRC_Q_MGR_STOPPING})
TRANSIENT = frozenset({MQRC_Q_FULL, MQRC_PUT_INHIBITED, MQRC_Q_SPACE_NOT_AVAILABLE,
                       MQRC_CLUSTER_RESOLUTION_ERROR, MQRC_NO_DESTINATIONS_AVAILABLE}) | CONNECTION
PERMANENT = frozenset({MQRC_UNKNOWN_OBJECT_NAME, MQRC_UNKNOWN_ALIAS_BASE_Q, MQRC_UNKNOWN_REMOTE_Q_MGR,
                       MQRC_UNKNOWN_XMIT_Q, MQRC_NOT_AUTHORIZED, MQRC_MSG_TOO_BIG_FOR_Q,
                       MQRC_MSG_TOO_BIG_FOR_Q_MGR, MQRC_PERSISTENT_NOT_ALLOWED})

# Names for the codes this package raises itself, used when constants has no entry.
_OWN_NAMES = {value: name for name, value in globals().items()
              if name.startswith("MQRC_") and isinstance(value, int)}


def is_transient(reason: int) -> bool:
    return reason in TRANSIENT


def is_connection_failure(reason: int) -> bool:
    return reason in CONNECTION


def classify(reason: int) -> str:
    """``"transient"`` or ``"permanent"`` (unknown codes are permanent, see the module doc)."""
    return "transient" if reason in TRANSIENT else "permanent"


def name(reason: int) -> str:
    """``MQRC_Q_FULL``-style name, or ``"reason 1234"`` for a code nobody named."""
    return reason_name(reason) or _OWN_NAMES.get(reason) or f"reason {reason}"


def describe(reason: int) -> str:
    """``MQRC_Q_FULL (2053)``: the form used in error texts."""
    known = name(reason)
    return f"{known} ({reason})" if not known.startswith("reason ") else known
