"""A realistic dead-letter queue, deterministic by seed.

The generated queue is the DLQ of a hub queue manager that collects the dead letters of a
fleet (each queue manager forwards its own DLQ there with the header kept), dumped with
``dmpmqmsg`` by a distributed client. So one dump holds what real ones hold: MQDLHs written
by z/OS (EBCDIC, big-endian), AIX (ASCII, big-endian) and Linux/Windows (little-endian)
queue managers, with the MQMD attributes readable and the data raw (docs/message-formats.md §3).

Each message is built as it would have been made: an application on an *origin* queue
manager puts it (MQMD identity and origin context, body in the origin's encoding and code
page), and the *home* queue manager (the one that could not deliver it) prepends an MQDLH in
its own encoding and CCSID and sets the MQMD Encoding/CCSID/Format to describe that header.

Determinism: everything comes from one ``random.Random(seed)`` consumed in message order and
from fixed tables; no clock, no global state. Same seed and options, same bytes.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import math
import random
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.dumps.records import DumpedMessage
from dlq_pipeline.mq import codepages
from dlq_pipeline.mq.constants import MQFB, MQMT
from dlq_pipeline.mq.mqmd import MQMD, MQMD_CHAR_LENGTHS
from dlq_pipeline.mq.reasons import (
    MQRC_BACKOUT_THRESHOLD_REACHED,
    MQRC_CLUSTER_RESOLUTION_ERROR,
    MQRC_MSG_TOO_BIG_FOR_CHANNEL,
    MQRC_MSG_TOO_BIG_FOR_Q,
    MQRC_NOT_AUTHORIZED,
    MQRC_PERSISTENT_NOT_ALLOWED,
    MQRC_PUT_INHIBITED,
    MQRC_Q_DELETED,
    MQRC_Q_FULL,
    MQRC_UNKNOWN_OBJECT_NAME,
    MQRC_UNKNOWN_REMOTE_Q_MGR,
)
from dlq_pipeline.mq.structures import (
    DLH_LENGTH,
    DeadLetterHeader,
    RulesFormattingHeader2,
    TransmissionQueueHeader,
    TriggerMessage,
    encode_dlh,
    encode_rfh2,
    encode_tm,
    encode_xqh,
)
from dlq_pipeline.runtime.permissions import private_dirs

__all__ = [
    "DEFAULT_END",
    "DEFAULT_SPAN",
    "DEFAULT_MAX_SIZE",
    "MIN_MAX_SIZE",
    "DEFAULT_MIX",
    "PLATFORMS",
    "PAYLOADS",
    "FLEET",
    "HUB_QMGR",
    "HUB_QUEUE",
    "QueueManager",
    "GeneratedMessage",
    "Storm",
    "STORMS",
    "parse_mix",
    "generate",
    "generate_messages",
    "split_counts",
    "write_generated",
]

# --- options ------------------------------------------------------------------------------

# The generated DLQ covers DEFAULT_SPAN before DEFAULT_END (GMT). A fixed end, not "now":
# the same seed must give the same bytes tomorrow.
DEFAULT_END = _dt.datetime(2026, 11, 1, 0, 0, 0)
DEFAULT_SPAN = _dt.timedelta(days=14)
DEFAULT_MAX_SIZE = 4 * 1024 * 1024
# Room for the longest header chain (MQDLH + MQXQH + MQRFH2 with folders, or MQDLH + MQTM).
MIN_MAX_SIZE = 2048
DEFAULT_NUL_PADDED_RATE = 0.02  # of the messages with an MQDLH (APAR IT31856)

HUB_QMGR = "QMHUB01"
HUB_QUEUE = "SYSTEM.DEAD.LETTER.QUEUE"

# Two independent axes, each normalised on its own: which platform's queue manager
# dead-lettered the message, and what the message is.
PLATFORMS = {"zos": 30, "aix": 15, "linux": 40, "windows": 15}
PAYLOADS = {
    "text": 40,  # MQSTR body: JSON, XML, CSV, fixed-width records
    "binary": 14,  # MQFMT_NONE body
    "jms": 14,  # MQHRF2 with folders, then MQSTR
    "xmit": 10,  # a transmission-queue message: MQXMIT, MQXQH + embedded MQMD, then data
    "trigger": 3,  # a trigger message the trigger monitor could not act on: MQTRIG
    "no_dlh": 16,  # put directly on the DLQ by an application: no usable MQDLH
    "empty": 3,  # zero-length data, no MQDLH
}
DEFAULT_MIX = {**PLATFORMS, **PAYLOADS}

# --- the fleet -----------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueManager:
    name: str
    platform: str
    encoding: int  # of what it writes (MQDLH, MQXQH, its applications' data)
    ccsid: int


FLEET = (
    QueueManager("CSQ1", "zos", 785, 500),
    QueueManager("CSQ2", "zos", 785, 37),
    QueueManager("MQP1", "zos", 785, 1047),
    QueueManager("QMAIX01", "aix", 273, 819),
    QueueManager("PAYAIX1", "aix", 273, 819),
    QueueManager("QM1", "linux", 546, 1208),
    QueueManager("LNXQM01", "linux", 546, 819),
    QueueManager("ORDQM01", "linux", 546, 1208),
    QueueManager("WINQM01", "windows", 546, 1252),
)
_BY_PLATFORM = {p: tuple(q for q in FLEET if q.platform == p) for p in PLATFORMS}

# Queue managers that no longer exist (MQRC_UNKNOWN_REMOTE_Q_MGR) and the AAAA.* gateway
# queue managers of the rules-table examples (REPLYQM(AAAA.*)).
_GONE_QMGRS = ("OLDQM02", "QMDR01", "LEGACYQM")
_GATEWAY_QMGRS = ("AAAA.GW01", "AAAA.GW02")

# MQAT_* values used below.
_AT_CICS, _AT_ZOS, _AT_UNIX, _AT_QMGR, _AT_WINDOWS_NT, _AT_JAVA = 1, 2, 6, 7, 11, 28


@dataclass(frozen=True)
class _App:
    appl_type: int
    name: str
    user: str


_APPS = {
    "zos": (
        _App(_AT_ZOS, "ORDB0012", "BATCHPRD"),
        _App(_AT_CICS, "CICSPA01", "CICSUSER"),
        _App(_AT_ZOS, "PAYJ0420", "PAYBATCH"),
    ),
    "aix": (
        _App(_AT_UNIX, "payengine", "payapp"),
        _App(_AT_UNIX, "amqsput", "mqm"),
        _App(_AT_UNIX, "clearing_batch", "clrbatch"),
    ),
    "linux": (
        _App(_AT_UNIX, "order-router", "svcorder"),
        _App(_AT_UNIX, "amqsput", "mqm"),
        _App(_AT_UNIX, "inventory-sync", "invsync"),
    ),
    "windows": (
        _App(_AT_WINDOWS_NT, "OrderGateway.exe", "svcgateway"),
        _App(_AT_WINDOWS_NT, "BillingExport.exe", "MUSR_MQADMIN"),
    ),
}
_JAVA_APPS = (
    _App(_AT_JAVA, "com.acme.orders.OrderService", "app01"),
    _App(_AT_JAVA, "com.acme.pay.PaymentMDB", "wasadmin"),
    _App(_AT_JAVA, "WebSphere MQ Client for Java", "jmsuser"),
)
# Applications that put dead letters themselves, with C-style NUL padding (APAR IT31856).
_DLQ_WRITERS = {
    "zos": _App(_AT_ZOS, "ERRHNDLR", "ERRUSER"),
    "aix": _App(_AT_UNIX, "dlqwriter", "mqapp"),
    "linux": _App(_AT_UNIX, "dlqwriter", "mqapp"),
    "windows": _App(_AT_WINDOWS_NT, "DlqWriter.exe", "svcdlq"),
}
_TRIGGER_MONITORS = {
    "zos": _App(_AT_CICS, "CKTI", "CICSUSER"),
    "aix": _App(_AT_UNIX, "runmqtrm", "mqm"),
    "linux": _App(_AT_UNIX, "runmqtrm", "mqm"),
    "windows": _App(_AT_WINDOWS_NT, "runmqtrm.exe", "MUSR_MQADMIN"),
}

# --- destinations and reasons --------------------------------------------------------------

# (name, weight): shared by every queue manager so that rules group them.
_BUSY_QUEUES = (
    ("ORDERS.IN", 8),
    ("PAYMENTS.REQUEST", 4),
    ("INVENTORY.UPDATE", 3),
    ("BILLING.BATCH.IN", 2),
    ("SHIPPING.NOTIFY", 2),
    ("CUSTOMER.EVENTS", 1),
)
_MISTYPED_QUEUES = (("ORDRES.IN", 3), ("PAYMENT.REQUEST", 3), ("INVENTORY.UPDTE", 1), ("SHIPPING.NOTIFY.V2", 2))
_SECURE_QUEUES = (("PAYROLL.SECURE.IN", 3), ("PAYMENTS.REQUEST", 2), ("HR.EMPLOYEE.UPDATE", 1))
_INHIBITED_QUEUES = (("INVENTORY.UPDATE", 3), ("LEGACY.FEED.IN", 2))
_SMALL_QUEUES = (("DOCS.ARCHIVE.IN", 2), ("ORDERS.IN", 1), ("CUSTOMER.EVENTS", 1))
_CLUSTER_QUEUES = (("CLUS.ORDERS.ROUTER", 2), ("CLUS.PAYMENTS", 1))
_REPLY_QUEUES = (("ORDERS.REPLY", 3), ("PAYMENTS.REPLY", 2), ("INVENTORY.REPLY", 1))
_INITIATION_QUEUES = {
    "zos": "CICS01.INITQ",
    "aix": "SYSTEM.DEFAULT.INITIATION.QUEUE",
    "linux": "SYSTEM.DEFAULT.INITIATION.QUEUE",
    "windows": "SYSTEM.DEFAULT.INITIATION.QUEUE",
}

# The feedback codes and message types the generated messages carry, by IBM's names (the
# reason codes are mq.reasons').
MQFB_APPL_CANNOT_BE_STARTED = MQFB["MQFB_APPL_CANNOT_BE_STARTED"]
MQFB_APPL_TYPE_ERROR = MQFB["MQFB_APPL_TYPE_ERROR"]
MQFB_COA = MQFB["MQFB_COA"]
MQFB_EXPIRATION = MQFB["MQFB_EXPIRATION"]
MQMT_REQUEST = MQMT["MQMT_REQUEST"]
MQMT_REPLY = MQMT["MQMT_REPLY"]
MQMT_REPORT = MQMT["MQMT_REPORT"]
MQMT_DATAGRAM = MQMT["MQMT_DATAGRAM"]
_REPLIES_AND_REPORTS = (MQMT_REPLY, MQMT_REPORT)

# DLH Reason weights per payload (the trigger monitor's are MQFB values; the rest MQRC).
_REASONS = {
    "general": (
        (MQRC_Q_FULL, 26),
        (MQRC_UNKNOWN_OBJECT_NAME, 16),
        (MQRC_NOT_AUTHORIZED, 11),
        (MQRC_PUT_INHIBITED, 9),
        (MQRC_MSG_TOO_BIG_FOR_Q, 4),
        (MQRC_UNKNOWN_REMOTE_Q_MGR, 6),
        (MQRC_CLUSTER_RESOLUTION_ERROR, 5),
        (MQRC_Q_DELETED, 3),
        (MQRC_PERSISTENT_NOT_ALLOWED, 2),
        (MQFB_EXPIRATION, 1),
    ),
    "jms": (
        (MQRC_BACKOUT_THRESHOLD_REACHED, 35),
        (MQRC_Q_FULL, 25),
        (MQRC_UNKNOWN_OBJECT_NAME, 15),
        (MQRC_NOT_AUTHORIZED, 15),
        (MQRC_PUT_INHIBITED, 10),
    ),
    "xmit": (
        (MQRC_UNKNOWN_REMOTE_Q_MGR, 35),
        (MQRC_MSG_TOO_BIG_FOR_CHANNEL, 15),
        (MQRC_Q_FULL, 25),
        (MQRC_PUT_INHIBITED, 13),
        (MQRC_CLUSTER_RESOLUTION_ERROR, 12),
    ),
    "trigger": ((MQFB_APPL_CANNOT_BE_STARTED, 85), (MQFB_APPL_TYPE_ERROR, 15)),
}
_TOO_BIG = (MQRC_MSG_TOO_BIG_FOR_Q, MQRC_MSG_TOO_BIG_FOR_CHANNEL)  # reasons that need a big message
_DLH_FIRST_BYTES = (0x44, 0xC4)  # "D" in ASCII and EBCDIC
_JMS_BACKOUT_THRESHOLD = 5


@dataclass(frozen=True)
class Storm:
    """A burst on top of the steady trickle: for ``hours`` from ``at`` (a fraction of the
    span), ``share`` of all messages are ``reason`` for ``dest_q`` on ``home``, sent over
    channels from ``origins`` and dead-lettered by ``home``'s channel program (the storm IBM's DLQ guidance warns of: a
    consumer stops, its queue fills, every sender's channel dead-letters what it brings)."""

    name: str
    reason: int
    home: str
    dest_q: str
    origins: tuple[tuple[str, int], ...]
    at: float
    hours: float
    share: float


# The two storms every generated DLQ has (when the mix allows text messages on their home's
# platform): an orders queue full for four hours, and a channel sending to a mistyped queue.
STORMS = (
    Storm(
        "q_full",
        MQRC_Q_FULL,
        "ORDQM01",
        "ORDERS.IN",
        (("CSQ1", 6), ("QMAIX01", 3), ("WINQM01", 1)),
        at=0.62,
        hours=4,
        share=0.12,
    ),
    Storm(
        "unknown_queue",
        MQRC_UNKNOWN_OBJECT_NAME,
        "QM1",
        "PAYMENT.REQUEST",
        (("PAYAIX1", 1),),
        at=0.31,
        hours=2,
        share=0.05,
    ),
)
_QMGRS = {qm.name: qm for qm in FLEET}

# --- small helpers ---------------------------------------------------------------------------


def _pick(rng: random.Random, weighted):
    """One value from ((value, weight), ...)."""
    values, weights = zip(*weighted)
    return rng.choices(values, weights)[0]


def _pad(text: str, field: str) -> str:
    return text.ljust(MQMD_CHAR_LENGTHS[field])


def _dlh_pad(text: str, length: int, fill: str = " ") -> str:
    return text.ljust(length, fill)


_HUNDREDTHS = 100


def _stamp(cs: int) -> tuple[str, str]:
    """(PutDate, PutTime), GMT, for hundredths of a second since 1970-01-01."""
    when = _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=cs // _HUNDREDTHS)
    return when.strftime("%Y%m%d"), when.strftime("%H%M%S") + f"{cs % _HUNDREDTHS:02d}"


def _cs(when: _dt.datetime) -> int:
    return round((when - _dt.datetime(1970, 1, 1)).total_seconds() * _HUNDREDTHS)


def parse_mix(text: str) -> dict[str, float]:
    """``"zos=5,jms=0"`` -> weights; unknown names, bad numbers or negative weights raise
    ValueError naming the choices."""
    mix: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(f"{item!r}: expected NAME=WEIGHT")
        try:
            weight = float(value)
        except ValueError:
            raise ValueError(f"{item!r}: weight {value.strip()!r} is not a number") from None
        mix[name] = weight
    _check_mix(mix)
    return mix


def _check_mix(mix: Mapping[str, float]) -> None:
    unknown = sorted(set(mix) - set(DEFAULT_MIX))
    if unknown:
        raise ValueError(
            f"unknown mix name(s) {', '.join(unknown)}; choose from "
            f"platforms {', '.join(PLATFORMS)} and payloads {', '.join(PAYLOADS)}"
        )
    for name, weight in mix.items():
        if not (isinstance(weight, (int, float)) and math.isfinite(weight) and weight >= 0):
            raise ValueError(f"{name}={weight}: a weight is a number >= 0")


def _axis(axis: Mapping[str, float], mix: Mapping[str, float], what: str) -> tuple:
    weighted = tuple((name, float(mix.get(name, default))) for name, default in axis.items())
    if not any(w > 0 for _, w in weighted):
        raise ValueError(f"every {what} weight is 0: at least one of {', '.join(axis)} must be > 0")
    return tuple((n, w) for n, w in weighted if w > 0)


# --- bodies ----------------------------------------------------------------------------------

_CUSTOMERS = (
    "Müller GmbH",
    "José Álvarez",
    "Françoise Dubois",
    "Acme Corp",
    "Nørre Logistik",
    "Siân O'Neill",
    "Zoë Ltd",
    "Grüne Energie AG",
    "Oficina São João",
    "Björk & Co",
)
_CURRENCIES = ("EUR", "USD", "GBP", "CHF", "BRL")
_ITEMS = ("WIDGET-A", "BOLT-M8", "PUMP-220V", "CABLE-5M", "FILTER-XL", "VALVE-3/4")
_TEXT_STYLES = (("json", 5), ("xml", 3), ("csv", 2), ("fixed", 2))


def _record(rng: random.Random, style: str) -> str:
    order = f"ORD{rng.randrange(10**7):07d}"
    customer = rng.choice(_CUSTOMERS)
    amount = f"{rng.randrange(1, 10**6) / 100:.2f}"
    currency = rng.choice(_CURRENCIES)
    item = rng.choice(_ITEMS)
    quantity = rng.randrange(1, 500)
    if style == "json":
        return (
            f'{{"orderId":"{order}","customer":"{customer}","item":"{item}",'
            f'"quantity":{quantity},"amount":{amount},"currency":"{currency}"}}'
        )
    if style == "xml":
        return (
            f'<order id="{order}"><customer>{customer}</customer><item qty="{quantity}">'
            f'{item}</item><amount currency="{currency}">{amount}</amount></order>'
        )
    if style == "csv":
        return f'{order},"{customer}",{item},{quantity},{amount},{currency}\n'
    return f"{order}{customer[:20]:<20}{item:<12}{quantity:07d}{amount:>12}{currency}\n"


_OPENERS = {
    "json": ('{"orders":[', ",", "]}"),
    "xml": ("<orders>", "", "</orders>"),
    "csv": ("order,customer,item,quantity,amount,currency\n", "", ""),
    "fixed": ("", "", ""),
}
# Above this many characters a body is drawn from a pool of records (a batch of similar
# records, and megabytes made in milliseconds rather than seconds).
_POOLED_ABOVE = 8192
_POOL_SIZE = 64


def _text_body(rng: random.Random, size: int, style: str) -> str:
    """Whole records until at least ``size`` characters (at least one record)."""
    opener, separator, closer = _OPENERS[style]
    records: list[str] = []
    length = len(opener) + len(closer)
    while (length < size and length < _POOLED_ABOVE) or not records:
        records.append(_record(rng, style))
        length += len(records[-1]) + len(separator)
    if length < size:
        pool = records + [_record(rng, style) for _ in range(_POOL_SIZE)]
        average = sum(map(len, pool)) / len(pool) + len(separator)
        records += rng.choices(pool, k=math.ceil((size - length) / average))
    return opener + separator.join(records) + closer


def _encode_text(text: str, ccsid: int, limit: int) -> bytes:
    raw = codepages.encode(text, ccsid)
    return raw[:limit]


def _binary_body(rng: random.Random, size: int, encoding: int) -> bytes:
    """A record-structured binary body: a length-prefixed header, then opaque bytes."""
    if size <= 0:
        return b""
    order: Literal["big", "little"] = "big" if encoding & 0x0F == 1 else "little"
    head = b"\x1f\x8b\x08\x00" if rng.random() < 0.3 else (b"\x01\x02" + min(size, 65535).to_bytes(2, order))
    return (head + rng.randbytes(max(0, size - len(head))))[:size]


# Size buckets: (weight, low, high) bytes, log-uniform inside a bucket; long-tailed overall.
_SIZE_BUCKETS = (
    (2.0, 0, 0),
    (68.0, 20, 2048),
    (27.0, 2048, 16384),
    (2.75, 16384, 262144),
    (0.2, 262144, 1048576),
    (0.05, 1048576, 8 * 1048576),
)
# Too big for a queue or a channel: above its MAXMSGL, which is often set low.
_BIG_BUCKETS = ((90.0, 8192, 131072), (9.0, 131072, 1048576), (1.0, 1048576, 8 * 1048576))


def _bucket(rng: random.Random, buckets) -> tuple[int, int]:
    """(low, high) of a bucket drawn by weight (the last one when rounding runs past them all)."""
    point = rng.random() * sum(w for w, _, _ in buckets)
    for weight, low, high in buckets:
        point -= weight
        if point < 0:
            return low, high
    return buckets[-1][1], buckets[-1][2]


def _size(rng: random.Random, buckets, cap: int) -> int:
    low, high = _bucket(rng, buckets)
    if high == 0:
        return 0
    high = min(high, cap)
    low = min(low, high)
    return int(math.exp(rng.uniform(math.log(max(low, 1)), math.log(max(high, 1)))))


# --- identities --------------------------------------------------------------------------------


def _msg_id(qm: QueueManager, counter: int, put_cs: int) -> bytes:
    """How the queue manager itself makes MsgIds: 'AMQ ' + name + stamp + counter, or on
    z/OS 'CSQ ' + name (EBCDIC) + a store-clock value."""
    if qm.platform == "zos":
        prefix = codepages.encode("CSQ " + qm.name.ljust(12), 500)
        micros_since_1900 = (put_cs * 10_000) + 2_208_988_800 * 1_000_000
        stck = ((micros_since_1900 << 12) | (counter & 0xFFF)) & (2**64 - 1)
        return prefix + stck.to_bytes(8, "big")
    prefix = ("AMQ " + qm.name.ljust(12)[:12]).encode("ascii")
    start = zlib.crc32(qm.name.encode("ascii")).to_bytes(4, "big")
    order: Literal["big", "little"] = "big" if qm.encoding & 0x0F == 1 else "little"
    return prefix + start + (counter & 0xFFFFFFFF).to_bytes(4, order)


def _accounting_token(rng: random.Random, platform: str) -> bytes:
    if platform == "zos":
        return b"\x00" * 32
    if platform == "windows":  # a Windows SID, type MQACTT_NT_SECURITY_ID
        sid = bytes.fromhex("010500000000000515000000") + rng.randbytes(16)
        return bytes([len(sid)]) + sid + b"\x00" * (31 - 1 - len(sid)) + b"\x0b"
    uid = str(rng.choice((1001, 1002, 2000, 30005))).encode("ascii")  # MQACTT_UNIX numeric id
    return bytes([len(uid)]) + uid + b"\x00" * (31 - 1 - len(uid)) + b"\x06"


def _dynamic_queue(rng: random.Random) -> str:
    return "AMQ." + rng.randbytes(8).hex().upper()


# --- one message -------------------------------------------------------------------------------


@dataclass(frozen=True)
class GeneratedMessage:
    """A generated message and what it was made to be, for tests and tools that check it.

    ``dlh`` is the MQDLH that was encoded (character fields at full length, padding as
    written), ``chain`` the formats after it as `decode_dlh` names them, ``problem`` the
    `decode_dlh` problem of a message without a usable MQDLH.
    """

    message: DumpedMessage
    platform: str  # of the queue manager whose DLQ it reached (home)
    payload: str
    home_qmgr: str
    dlh: DeadLetterHeader | None
    chain: tuple[str, ...]
    problem: str | None
    nul_padded: bool
    storm: str | None = None  # the `Storm` it belongs to, None for the steady trickle


@dataclass
class _Built:
    """A payload ready for an MQDLH: what follows the header and how it is described."""

    data: bytes
    encoding: int
    ccsid: int
    format: str
    chain: tuple[str, ...]


class _Generator:
    def __init__(
        self,
        count: int,
        seed: int,
        mix: Mapping[str, float] | None,
        max_size: int,
        nul_padded_rate: float,
        end: _dt.datetime,
        span: _dt.timedelta,
        storms: Sequence[Storm] = STORMS,
    ):
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"count must be an integer >= 0, not {count!r}")
        if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < MIN_MAX_SIZE:
            raise ValueError(f"max_size must be an integer >= {MIN_MAX_SIZE}, not {max_size!r}")
        if not 0 <= nul_padded_rate <= 1:
            raise ValueError(f"nul_padded_rate must be between 0 and 1, not {nul_padded_rate!r}")
        if span <= _dt.timedelta(0):
            raise ValueError("span must be positive")
        if any(s.share < 0 for s in storms) or sum(s.share for s in storms) > 1:
            raise ValueError("storm shares must be >= 0 and add up to at most 1")
        mix = dict(mix or {})
        _check_mix(mix)
        self.platforms = _axis(PLATFORMS, mix, "platform")
        self.payloads = _axis(PAYLOADS, mix, "payload")
        self.count, self.max_size, self.nul_rate = count, max_size, nul_padded_rate
        self.rng = random.Random(seed)
        self.end_cs = _cs(end)
        self.span_cs = max(1, _cs(end) - _cs(end - span))
        self.counters = {qm.name: 0 for qm in FLEET}
        self.storms = self._windows(storms)
        self.segments = self._segments()

    def _windows(self, storms: Sequence[Storm]) -> list[tuple[Storm, int, int]]:
        """(storm, first cs, length cs) of the ``storms`` the mix allows (text messages
        dead-lettered on their home's platform), each at most a tenth of the span."""
        platforms, payloads = dict(self.platforms), dict(self.payloads)
        start = self.end_cs - self.span_cs
        return [
            (
                storm,
                start + int(storm.at * self.span_cs),
                max(1, min(int(storm.hours * 3600 * _HUNDREDTHS), self.span_cs // 10)),
            )
            for storm in storms
            if platforms.get(_QMGRS[storm.home].platform, 0) > 0 and payloads.get("text", 0) > 0
        ]

    def _segments(self) -> list[tuple[int, int, float, list]]:
        """The span cut where storms start and end: (start cs, end cs, share of all messages,
        [(storm, its share)]); the trickle gets what the storms leave, spread evenly."""
        trickle = 1.0 - sum(s.share for s, _, _ in self.storms)
        edges = {self.end_cs - self.span_cs, self.end_cs}
        for _, first, length in self.storms:
            edges |= {first, first + length}
        cuts = sorted(edges)
        segments = []
        for a, b in zip(cuts, cuts[1:]):
            inside = [
                (s, s.share * (b - a) / length)
                for s, first, length in self.storms
                if first <= a and b <= first + length
            ]
            share = trickle * (b - a) / self.span_cs + sum(x for _, x in inside)
            segments.append((a, b, share, inside))
        return segments

    def arrival(self, index: int) -> tuple[int, Storm | None]:
        """When message ``index`` reached the DLQ, and the storm it belongs to (None: the
        trickle). Arrivals follow the density of trickle plus storms: message ``index`` is at
        quantile ``(index + u) / count`` of it, so the DLQ is in arrival order and a dump of
        messages [a, b) ends before message b arrives. Two draws whatever the count, so the
        count changes times (and which messages fall in a storm), not the others."""
        q = (index + self.rng.random()) / max(self.count, 1)
        pick = self.rng.random()
        done, segments = 0.0, self.segments
        for k, (a, b, share, inside) in enumerate(segments):
            if q < done + share or k == len(segments) - 1:
                at = a + min(b - a - 1, int((q - done) / share * (b - a))) if share else a
                for storm, storm_share in inside:
                    if pick < storm_share / share:
                        return at, storm
                    pick -= storm_share / share
                return at, None
            done += share
        raise AssertionError("unreachable")

    def arrival_cs(self, index: int) -> int:
        return self.arrival(index)[0]

    def next_msg_id(self, qm: QueueManager, put_cs: int) -> bytes:
        self.counters[qm.name] += 1
        return _msg_id(qm, self.counters[qm.name], put_cs)

    def messages(self) -> Iterator[GeneratedMessage]:
        for index in range(self.count):
            yield self.one(index)

    def one(self, index: int) -> GeneratedMessage:
        rng = self.rng
        platform = _pick(rng, self.platforms)
        payload = _pick(rng, self.payloads)
        home = rng.choice(_BY_PLATFORM[platform])
        arrival, storm = self.arrival(index)
        if storm is not None:
            return self.dead_letter(index, _QMGRS[storm.home], "text", arrival, storm=storm)
        if payload in ("no_dlh", "empty"):
            return self.without_dlh(index, home, payload, arrival)
        return self.dead_letter(index, home, payload, arrival)

    # --- the original message --------------------------------------------------------------

    def origin_for(self, home: QueueManager, payload: str) -> QueueManager:
        """Most traffic is local; some arrived over channels from elsewhere in the fleet."""
        if payload in ("xmit", "trigger") or self.rng.random() < 0.7:
            return home
        return self.rng.choice(FLEET)

    def original_md(
        self, origin: QueueManager, app: _App, put_cs: int, *, msg_type: int, persistence: int, backout_count: int = 0
    ) -> MQMD:
        rng = self.rng
        put_date, put_time = _stamp(put_cs)
        reply_q, reply_qmgr = "", origin.name
        correl_id = b"\x00" * 24
        feedback = 0
        report = 0
        if msg_type == MQMT_REQUEST:
            reply_q = rng.choice((_pick(rng, _REPLY_QUEUES), _dynamic_queue(rng)))
            reply_qmgr = _pick(rng, ((origin.name, 60), (rng.choice(_GATEWAY_QMGRS), 25), ("", 15)))
            report = rng.choice((0, 0, 64, 16777216))  # PASS_CORREL_ID, EXCEPTION
        elif msg_type in _REPLIES_AND_REPORTS:  # correlated to a request from elsewhere
            correl_id = _msg_id(rng.choice(FLEET), rng.randrange(1, 10**6), put_cs - 500)
            feedback = rng.choice((MQFB_EXPIRATION, MQFB_COA)) if msg_type == MQMT_REPORT else 0
        elif rng.random() < 0.3:
            correl_id = f"ORD{rng.randrange(10**7):07d}".encode("ascii").ljust(24, b"\x00")
        return MQMD(
            version=2,
            report=report,
            msg_type=msg_type,
            expiry=-1 if rng.random() < 0.8 else rng.randrange(600, 36000),
            feedback=feedback,
            encoding=origin.encoding,
            ccsid=origin.ccsid,
            format=_pad("", "format"),
            priority=_pick(rng, ((0, 30), (4, 30), (5, 25), (9, 5), (2, 10))),
            persistence=persistence,
            msg_id=self.next_msg_id(origin, put_cs),
            correl_id=correl_id,
            backout_count=backout_count,
            reply_to_q=_pad(reply_q, "reply_to_q"),
            reply_to_qmgr=_pad(reply_qmgr, "reply_to_qmgr"),
            user_id=_pad(app.user, "user_id"),
            accounting_token=_accounting_token(rng, origin.platform),
            appl_identity_data=_pad("", "appl_identity_data"),
            put_appl_type=app.appl_type,
            put_appl_name=_pad(app.name, "put_appl_name"),
            put_date=put_date,
            put_time=put_time,
            appl_origin_data=_pad("", "appl_origin_data"),
        )

    def msg_type(self) -> int:
        return _pick(self.rng, ((MQMT_DATAGRAM, 70), (MQMT_REQUEST, 20), (MQMT_REPLY, 8), (MQMT_REPORT, 2)))

    def persistence(self) -> int:
        return 1 if self.rng.random() < 0.65 else 0

    # --- payloads ------------------------------------------------------------------------------

    def text(self, size: int, encoding: int, ccsid: int, limit: int) -> _Built:
        style = _pick(self.rng, _TEXT_STYLES)
        raw = _encode_text(_text_body(self.rng, size, style), ccsid, limit) if size else b""
        return _Built(raw, encoding, ccsid, "MQSTR   ", ("MQSTR",))

    def binary(self, size: int, encoding: int, ccsid: int) -> _Built:
        return _Built(_binary_body(self.rng, size, encoding), encoding, ccsid, " " * 8, ("",))

    def jms(self, size: int, limit: int, dest_q: str) -> _Built:
        """MQRFH2 (Java's encoding 273, CCSID 1208) with mcd/jms/usr folders, then MQSTR."""
        rng = self.rng
        millis = (self.end_cs - self.span_cs) * 10 + rng.randrange(10**9)
        folders = [
            "<mcd><Msd>jms_text</Msd></mcd>",
            f"<jms><Dst>queue:///{dest_q}</Dst><Tms>{millis}</Tms><Dlv>2</Dlv></jms>",
            f"<usr><orderType>{rng.choice(('STD', 'EXPRESS', 'RETURN'))}</orderType>"
            f"<region>{rng.choice(('EMEA', 'AMER', 'APAC'))}</region></usr>",
        ]
        encoded = []
        for folder in folders:
            text = folder.encode("utf-8")
            text += b" " * (-len(text) % 4)  # folders are padded to a multiple of 4 bytes
            encoded.append(len(text).to_bytes(4, "big") + text)
        header_length = 36 + sum(len(f) for f in encoded)
        rfh2 = encode_rfh2(
            RulesFormattingHeader2(
                struc_length=header_length, encoding=273, ccsid=1208, format="MQSTR   ", flags=0, name_value_ccsid=1208
            ),
            273,
            1208,
        )
        body = self.text(size, 273, 1208, max(0, limit - header_length))
        return _Built(rfh2 + b"".join(encoded) + body.data, 273, 1208, "MQHRF2  ", ("MQHRF2", "MQSTR"))

    def app_payload(self, origin: QueueManager, payload: str, size: int, limit: int, dest_q: str) -> _Built:
        """The body an application on ``origin`` put: its own encoding and code page."""
        if payload == "jms":
            return self.jms(size, limit, dest_q)
        if payload == "binary":
            return self.binary(min(size, limit), origin.encoding, origin.ccsid)
        return self.text(size, origin.encoding, origin.ccsid, limit)

    # --- dead letters --------------------------------------------------------------------------

    def dead_letter(
        self, index: int, home: QueueManager, payload: str, arrival: int, *, storm: Storm | None = None
    ) -> GeneratedMessage:
        rng = self.rng
        reasons = _REASONS.get(payload, _REASONS["general"])
        reason = _pick(rng, reasons)
        nul_padded = payload != "trigger" and rng.random() < self.nul_rate
        msg_type = MQMT_DATAGRAM if payload == "trigger" else self.msg_type()
        origin = self.origin_for(home, payload)
        dest_q, dest_qmgr = self.destination(reason, home, msg_type, remote=payload == "xmit")
        if storm is not None:  # a datagram from a sender, dead-lettered by the receiving channel
            reason, msg_type, nul_padded = storm.reason, MQMT_DATAGRAM, False
            origin, dest_q, dest_qmgr = _QMGRS[_pick(rng, storm.origins)], storm.dest_q, home.name
        persistence = 1 if reason == MQRC_PERSISTENT_NOT_ALLOWED else self.persistence()
        delay = self.delay_cs(reason, payload)
        put_cs = arrival - delay
        limit = self.max_size - DLH_LENGTH
        size = _size(rng, _BIG_BUCKETS if reason in _TOO_BIG else _SIZE_BUCKETS, limit)

        if payload == "trigger":
            app = _TRIGGER_MONITORS[home.platform]
            built = self.trigger(home, reason)
            md = self.original_md(home, _App(_AT_QMGR, home.name, app.user), put_cs, msg_type=8, persistence=0).replace(
                correl_id=b"\x00" * 24
            )
            writer_type, writer_name = app.appl_type, app.name
        elif payload == "xmit":
            built, md = self.xmit(origin, size, limit, dest_q, dest_qmgr, put_cs, msg_type, persistence)
            writer_type, writer_name = self.channel_writer(home)
        else:
            app = rng.choice(_JAVA_APPS) if payload == "jms" else rng.choice(_APPS[origin.platform])
            md = self.original_md(
                origin,
                app,
                put_cs,
                msg_type=msg_type,
                persistence=persistence,
                backout_count=self.backouts(reason, nul_padded),
            )
            built = self.app_payload(origin, payload, size, limit, dest_q)
            if reason == MQRC_BACKOUT_THRESHOLD_REACHED:  # the JMS ConnectionConsumer dead-lettered it
                writer_type, writer_name = _AT_JAVA, app.name
            else:
                writer_type, writer_name = self.channel_writer(home)
            if storm is not None:
                writer_type, writer_name = (
                    _AT_QMGR,
                    {"zos": home.name + "CHIN", "windows": "amqrmppa.exe"}.get(home.platform, "amqrmppa"),
                )

        fill = " "
        if nul_padded:  # an application wrote this MQDLH with strncpy-style NUL padding
            writer = _DLQ_WRITERS[home.platform]
            writer_type, writer_name, fill = writer.appl_type, writer.name, "\x00"
        dlq_date, dlq_time = _stamp(arrival)
        dlh = DeadLetterHeader(
            reason=reason,
            dest_q=_dlh_pad(dest_q, 48, fill),
            dest_qmgr=_dlh_pad(dest_qmgr, 48, fill if rng.random() < 0.5 else " "),
            encoding=built.encoding,
            ccsid=built.ccsid,
            format=built.format,
            put_appl_type=writer_type,
            put_appl_name=_dlh_pad(writer_name, 28),
            put_date=dlq_date,
            put_time=dlq_time,
        )
        data = encode_dlh(dlh, home.encoding, home.ccsid) + built.data
        md = md.replace(encoding=home.encoding, ccsid=home.ccsid, format="MQDEAD  ")
        message = DumpedMessage(md=md, data=data, index=index)
        return GeneratedMessage(
            message,
            home.platform,
            payload,
            home.name,
            dlh,
            built.chain,
            None,
            nul_padded,
            storm.name if storm else None,
        )

    def destination(self, reason: int, home: QueueManager, msg_type: int, *, remote: bool) -> tuple[str, str]:
        """(DestQName, DestQMgrName): queues shared across the fleet, chosen by what the
        reason says about them; replies and reports go to reply queues. ``remote``: the
        message was on its way to another queue manager (a transmission-queue message)."""
        rng = self.rng
        if reason == MQRC_UNKNOWN_REMOTE_Q_MGR:
            qmgr = rng.choice(_GONE_QMGRS)
        elif remote or reason == MQRC_MSG_TOO_BIG_FOR_CHANNEL:
            qmgr = rng.choice([q.name for q in FLEET if q != home])
        else:
            qmgr = home.name
        if reason in (MQFB_APPL_CANNOT_BE_STARTED, MQFB_APPL_TYPE_ERROR):
            return _INITIATION_QUEUES[home.platform], qmgr
        if reason in (MQRC_Q_DELETED, MQRC_PERSISTENT_NOT_ALLOWED) or (
            msg_type in _REPLIES_AND_REPORTS and reason == MQRC_UNKNOWN_OBJECT_NAME
        ):
            return _dynamic_queue(rng), qmgr  # a temporary dynamic queue, gone or refusing
        if msg_type in _REPLIES_AND_REPORTS:
            return _pick(rng, _REPLY_QUEUES), qmgr
        pools = {
            MQRC_UNKNOWN_OBJECT_NAME: _MISTYPED_QUEUES,
            MQRC_NOT_AUTHORIZED: _SECURE_QUEUES,
            MQRC_PUT_INHIBITED: _INHIBITED_QUEUES,
            MQRC_MSG_TOO_BIG_FOR_Q: _SMALL_QUEUES,
            MQRC_CLUSTER_RESOLUTION_ERROR: _CLUSTER_QUEUES,
        }
        return _pick(rng, pools.get(reason, _BUSY_QUEUES)), qmgr

    def backouts(self, reason: int, by_application: bool) -> int:
        """MQMD BackoutCount: only an application that got the message can have backed it
        out; the queue manager and channels dead-letter messages nobody has got yet."""
        if reason == MQRC_BACKOUT_THRESHOLD_REACHED:
            return _JMS_BACKOUT_THRESHOLD + self.rng.randrange(3)
        return self.rng.choice((0, 0, 1, 2, 3)) if by_application else 0

    def delay_cs(self, reason: int, payload: str) -> int:
        """Hundredths of a second between the original put and the dead-lettering."""
        rng = self.rng
        if reason == MQRC_BACKOUT_THRESHOLD_REACHED:  # redelivered and backed out a few times first
            seconds = rng.uniform(30, 1800)
        elif payload == "xmit":  # waited on a transmission queue, often for a long time
            seconds = math.exp(rng.uniform(math.log(5), math.log(6 * 3600)))
        else:  # the log-normal hop of one or two channels
            seconds = rng.lognormvariate(0.0, 1.5)
        return max(5, int(seconds * _HUNDREDTHS))

    def channel_writer(self, home: QueueManager) -> tuple[int, str]:
        """The queue manager itself or its channel program (MQAT_QMGR either way)."""
        if self.rng.random() < 0.6:
            return _AT_QMGR, home.name
        program = {"zos": home.name + "CHIN", "windows": "amqrmppa.exe"}.get(home.platform, "amqrmppa")
        return _AT_QMGR, program

    def trigger(self, home: QueueManager, reason: int) -> _Built:
        rng = self.rng
        if home.platform == "zos":
            tm = TriggerMessage(
                q_name=_dlh_pad("CICS.ORDERS.TRIGGERED", 48),
                process_name=_dlh_pad("ORDERS.PROCESS", 48),
                trigger_data=_dlh_pad("", 64),
                appl_type=_AT_CICS,
                appl_id=_dlh_pad(rng.choice(("ORD1", "PAY2")), 256),
                env_data=_dlh_pad("", 128),
                user_data=_dlh_pad("", 128),
            )
        else:
            tm = TriggerMessage(
                q_name=_dlh_pad(rng.choice(("ORDERS.IN", "BILLING.BATCH.IN")), 48),
                process_name=_dlh_pad("ORDERS.PROCESS", 48),
                trigger_data=_dlh_pad("", 64),
                appl_type=_AT_WINDOWS_NT if home.platform == "windows" else _AT_UNIX,
                appl_id=_dlh_pad(rng.choice(("/opt/acme/bin/orderproc", "/opt/acme/bin/billing")), 256),
                env_data=_dlh_pad("", 128),
                user_data=_dlh_pad("", 128),
            )
        return _Built(encode_tm(tm, home.encoding, home.ccsid), home.encoding, home.ccsid, "MQTRIG  ", ("MQTRIG",))

    def xmit(
        self,
        origin: QueueManager,
        size: int,
        limit: int,
        dest_q: str,
        dest_qmgr: str,
        put_cs: int,
        msg_type: int,
        persistence: int,
    ) -> tuple[_Built, MQMD]:
        """A message taken off a transmission queue: MQXQH with the application's MQMD
        (version 1) in the origin queue manager's encoding, then the application data."""
        rng = self.rng
        inner_payload = _pick(rng, (("text", 6), ("binary", 2), ("jms", 2)))
        app = rng.choice(_JAVA_APPS) if inner_payload == "jms" else rng.choice(_APPS[origin.platform])
        md = self.original_md(origin, app, put_cs, msg_type=msg_type, persistence=persistence)
        inner = self.app_payload(origin, inner_payload, size, max(0, limit - 428), dest_q)
        inner_md = md.replace(version=1, encoding=inner.encoding, ccsid=inner.ccsid, format=inner.format)
        xqh = encode_xqh(
            TransmissionQueueHeader(remote_q=_dlh_pad(dest_q, 48), remote_qmgr=_dlh_pad(dest_qmgr, 48), md=inner_md),
            origin.encoding,
            origin.ccsid,
        )
        built = _Built(xqh + inner.data, origin.encoding, origin.ccsid, "MQXMIT  ", ("MQXMIT",) + inner.chain)
        return built, md

    # --- messages without an MQDLH --------------------------------------------------------------

    def without_dlh(self, index: int, home: QueueManager, payload: str, arrival: int) -> GeneratedMessage:
        """What applications put straight onto a DLQ: their own error records, binary blobs,
        and (rarely) a botched MQDLH: written in the wrong byte order or cut short."""
        rng = self.rng
        app = rng.choice(_APPS[home.platform])
        md = self.original_md(home, app, arrival, msg_type=8, persistence=self.persistence())
        if payload == "empty":
            md = md.replace(format=rng.choice(("MQSTR   ", " " * 8)))
            return GeneratedMessage(
                DumpedMessage(md=md, data=b"", index=index),
                home.platform,
                payload,
                home.name,
                None,
                (),
                "too_short",
                False,
            )
        variant = _pick(rng, (("record", 80), ("wrong_byte_order", 12), ("cut_short", 8)))
        if variant == "record":
            size = max(1, _size(rng, _SIZE_BUCKETS, self.max_size))
            if rng.random() < 0.75:
                data = self.error_record(size, home)
                md = md.replace(format="MQSTR   ")
            else:
                data = _binary_body(rng, size, home.encoding)
                if data[0] in _DLH_FIRST_BYTES:  # so that it cannot pass for a cut-off MQDLH
                    data = b"\x00" + data[1:]
            problem = "bad_strucid"
        else:
            # An application built the MQDLH itself and got it wrong.
            dead_cs = arrival
            dlq_date, dlq_time = _stamp(dead_cs)
            dlh = DeadLetterHeader(
                reason=MQRC_Q_FULL,
                dest_q=_dlh_pad(_pick(rng, _BUSY_QUEUES), 48),
                dest_qmgr=_dlh_pad(home.name, 48),
                encoding=home.encoding,
                ccsid=home.ccsid,
                format="MQSTR   ",
                put_appl_type=app.appl_type,
                put_appl_name=_dlh_pad(app.name, 28),
                put_date=dlq_date,
                put_time=dlq_time,
            )
            body = self.text(rng.randrange(40, 400), home.encoding, home.ccsid, self.max_size).data
            if variant == "wrong_byte_order":  # host order on a big-endian declaration, or back
                wrong = 546 if home.encoding & 0x0F == 1 else 273
                data, problem = encode_dlh(dlh, wrong, home.ccsid) + body, "bad_version"
            else:
                data, problem = encode_dlh(dlh, home.encoding, home.ccsid)[: rng.randrange(8, 172)], "too_short"
            md = md.replace(format="MQDEAD  ")
        return GeneratedMessage(
            DumpedMessage(md=md, data=data, index=index), home.platform, payload, home.name, None, (), problem, False
        )

    def error_record(self, size: int, home: QueueManager) -> bytes:
        """An application's own 'could not process' record, like the real MQ 10 fixture."""
        rng = self.rng
        entries, length = [], 0
        while length < size:
            order = f"ORD{rng.randrange(10**7):07d}"
            code = rng.choice((2951, 4001, 5003))
            problem = rng.choice(("validation failed", "unknown customer", "timeout"))
            entries.append(
                f'{{"original":{{"orderId":"{order}"}},"error":{{"code":{code},'
                f'"message":"{problem}","attempts":{rng.randrange(1, 6)}}}}}'
            )
            length += len(entries[-1]) + 1
        return _encode_text("\n".join(entries), home.ccsid, self.max_size)


# --- public API --------------------------------------------------------------------------------


def generate(
    count: int,
    seed: int,
    mix: Mapping[str, float] | None = None,
    *,
    max_size: int = DEFAULT_MAX_SIZE,
    nul_padded_rate: float = DEFAULT_NUL_PADDED_RATE,
    end: _dt.datetime = DEFAULT_END,
    span: _dt.timedelta = DEFAULT_SPAN,
    storms: Sequence[Storm] = STORMS,
) -> Iterator[GeneratedMessage]:
    """``count`` messages in DLQ arrival order, each with what it was made to be.

    ``mix`` overrides weights of the platform axis (zos, aix, linux, windows) and of the
    payload axis (text, binary, jms, xmit, trigger, no_dlh, empty); each axis is normalised
    on its own and names left out keep their default weight. ``max_size`` caps the data
    length of every message. ``storms`` are the bursts on top of the trickle (their shares
    add up to at most 1; e.g. one `Storm` with ``share=0.85`` for a DLQ most of which one
    full queue filled). Options are checked here, before the first message is made.
    """
    return _Generator(count, seed, mix, max_size, nul_padded_rate, end, span, storms).messages()


def generate_messages(
    count: int, seed: int, mix: Mapping[str, float] | None = None, **options
) -> Iterator[DumpedMessage]:
    """The messages of `generate` alone (``index`` 0..count-1)."""
    return (generated.message for generated in generate(count, seed, mix, **options))


def split_counts(count: int, files: int) -> list[int]:
    """How many messages each of ``files`` dumps gets: consecutive, as even as possible."""
    if isinstance(files, bool) or not isinstance(files, int) or files < 1:
        raise ValueError(f"files must be an integer >= 1, not {files!r}")
    return [count // files + (1 if k < count % files else 0) for k in range(files)]


def write_generated(
    out_dir,
    count: int,
    seed: int,
    files: int = 1,
    mix: Mapping[str, float] | None = None,
    *,
    qmgr: str = HUB_QMGR,
    queue: str = HUB_QUEUE,
    **options,
) -> list[Path]:
    """Write ``count`` generated messages as ``files`` dmpmqmsg dumps ``dlq-NNNN.dmp`` in
    ``out_dir`` (created if needed): consecutive slices of one stream, like successive
    ``dmpmqmsg -I`` runs, each with a Created stamp five minutes after its last message can
    have arrived. ``options`` are those of `generate`. Returns the paths in order."""
    counts = split_counts(count, files)
    end = options.get("end", DEFAULT_END)
    span = options.get("span", DEFAULT_SPAN)
    stream = generate_messages(count, seed, mix, **options)  # validates before any file is made
    out = private_dirs(out_dir)
    paths, written = [], 0
    for k, n in enumerate(counts):
        written += n
        created = end - span + span * written / max(count, 1) + _dt.timedelta(minutes=5)
        path = out / f"dlq-{k:04d}.dmp"
        write_dump(itertools.islice(stream, n), path, qmgr=qmgr, queue=queue, created=created.replace(microsecond=0))
        paths.append(path)
    return paths
