"""What an MQ reason code means for a replay attempt: transient or permanent.

docs/replay.md, "Reason codes", is the table in prose. Transient failures may clear by themselves (a full queue is
drained, a channel comes back): they count against the rule's RETRY like any failure, but
they also feed the per-queue circuit breaker. Connection failures are transient too and
make the writer reconnect (the queue manager backs out the unit of work).

Unknown codes are **permanent**: we cannot tell that waiting will help, so the attempt is
reported ``failed`` (and counted) instead of being retried or silently deferred, and no
breaker opens for a code nobody has looked at.
"""

from __future__ import annotations

from dlq_pipeline.mq.constants import MQRC, reason_name

# The codes the tables below name, taken from the one table of MQ constants (mq.constants).
MQRC_NONE = MQRC["MQRC_NONE"]
MQRC_BACKED_OUT = MQRC["MQRC_BACKED_OUT"]
MQRC_CONNECTION_BROKEN = MQRC["MQRC_CONNECTION_BROKEN"]
MQRC_SYNCPOINT_LIMIT_REACHED = MQRC["MQRC_SYNCPOINT_LIMIT_REACHED"]
MQRC_MSG_TOO_BIG_FOR_Q = MQRC["MQRC_MSG_TOO_BIG_FOR_Q"]
MQRC_MSG_TOO_BIG_FOR_Q_MGR = MQRC["MQRC_MSG_TOO_BIG_FOR_Q_MGR"]
MQRC_NO_MSG_AVAILABLE = MQRC["MQRC_NO_MSG_AVAILABLE"]
MQRC_NOT_AUTHORIZED = MQRC["MQRC_NOT_AUTHORIZED"]
MQRC_PERSISTENT_NOT_ALLOWED = MQRC["MQRC_PERSISTENT_NOT_ALLOWED"]
MQRC_PUT_INHIBITED = MQRC["MQRC_PUT_INHIBITED"]
MQRC_Q_FULL = MQRC["MQRC_Q_FULL"]
MQRC_Q_SPACE_NOT_AVAILABLE = MQRC["MQRC_Q_SPACE_NOT_AVAILABLE"]
MQRC_Q_MGR_NOT_AVAILABLE = MQRC["MQRC_Q_MGR_NOT_AVAILABLE"]
MQRC_TRUNCATED_MSG_FAILED = MQRC["MQRC_TRUNCATED_MSG_FAILED"]
MQRC_UNKNOWN_ALIAS_BASE_Q = MQRC["MQRC_UNKNOWN_ALIAS_BASE_Q"]
MQRC_UNKNOWN_OBJECT_NAME = MQRC["MQRC_UNKNOWN_OBJECT_NAME"]
MQRC_UNKNOWN_REMOTE_Q_MGR = MQRC["MQRC_UNKNOWN_REMOTE_Q_MGR"]
MQRC_Q_MGR_QUIESCING = MQRC["MQRC_Q_MGR_QUIESCING"]
MQRC_Q_MGR_STOPPING = MQRC["MQRC_Q_MGR_STOPPING"]
MQRC_CLUSTER_RESOLUTION_ERROR = MQRC["MQRC_CLUSTER_RESOLUTION_ERROR"]
MQRC_UNKNOWN_XMIT_Q = MQRC["MQRC_UNKNOWN_XMIT_Q"]
MQRC_NO_DESTINATIONS_AVAILABLE = MQRC["MQRC_NO_DESTINATIONS_AVAILABLE"]
MQRC_MD_ERROR = MQRC["MQRC_MD_ERROR"]
MQRC_GET_INHIBITED = MQRC["MQRC_GET_INHIBITED"]
MQRC_SECURITY_ERROR = MQRC["MQRC_SECURITY_ERROR"]
MQRC_Q_DELETED = MQRC["MQRC_Q_DELETED"]
MQRC_MSG_TOO_BIG_FOR_CHANNEL = MQRC["MQRC_MSG_TOO_BIG_FOR_CHANNEL"]
MQRC_BACKOUT_THRESHOLD_REACHED = MQRC["MQRC_BACKOUT_THRESHOLD_REACHED"]

# The connection is gone: reconnect with backoff; the queue manager backed out the unit of work.
CONNECTION = frozenset({MQRC_CONNECTION_BROKEN, MQRC_Q_MGR_NOT_AVAILABLE, MQRC_Q_MGR_QUIESCING, MQRC_Q_MGR_STOPPING})
TRANSIENT = (
    frozenset(
        {
            MQRC_Q_FULL,
            MQRC_PUT_INHIBITED,
            MQRC_Q_SPACE_NOT_AVAILABLE,
            MQRC_CLUSTER_RESOLUTION_ERROR,
            MQRC_NO_DESTINATIONS_AVAILABLE,
        }
    )
    | CONNECTION
)
PERMANENT = frozenset(
    {
        MQRC_UNKNOWN_OBJECT_NAME,
        MQRC_UNKNOWN_ALIAS_BASE_Q,
        MQRC_UNKNOWN_REMOTE_Q_MGR,
        MQRC_UNKNOWN_XMIT_Q,
        MQRC_NOT_AUTHORIZED,
        MQRC_MSG_TOO_BIG_FOR_Q,
        MQRC_MSG_TOO_BIG_FOR_Q_MGR,
        MQRC_PERSISTENT_NOT_ALLOWED,
    }
)


def is_transient(reason: int) -> bool:
    return reason in TRANSIENT


def is_connection_failure(reason: int) -> bool:
    return reason in CONNECTION


def classify(reason: int) -> str:
    """``"transient"`` or ``"permanent"`` (unknown codes are permanent, see the module doc)."""
    return "transient" if reason in TRANSIENT else "permanent"


def name(reason: int) -> str:
    """``MQRC_Q_FULL``-style name, or ``"reason 1234"`` for a code nobody named."""
    return reason_name(reason) or f"reason {reason}"


def describe(reason: int) -> str:
    """``MQRC_Q_FULL (2053)``: the form used in error texts."""
    known = name(reason)
    return f"{known} ({reason})" if not known.startswith("reason ") else known
