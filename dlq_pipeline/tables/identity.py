"""Identity of messages and runs. MsgId alone is not unique, so a message's key digests more than MsgId.

The key covers MsgId, CorrelId, PutDate, PutTime, PutApplName and the data digest: stable
across repeated dumps of the same DLQ and independent of BackoutCount, which changes when a
message is backed out.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from dlq_pipeline.mq.mqmd import MQMD, text_to_bytes


def data_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def message_key(md: MQMD, digest: str) -> str:
    h = hashlib.sha256()
    for part in (
        md.msg_id,
        md.correl_id,
        text_to_bytes(md.put_date.rstrip(" ")),
        text_to_bytes(md.put_time.rstrip(" ")),
        text_to_bytes(md.put_appl_name.rstrip(" ")),
        digest.encode("ascii"),
    ):
        h.update(len(part).to_bytes(4, "big"))
        h.update(part)
    return h.hexdigest()[:32]


def new_run_id(now: dt.datetime) -> str:
    """A run's id: its UTC start, sortable, plus a random suffix (two runs in one second differ)."""
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"
