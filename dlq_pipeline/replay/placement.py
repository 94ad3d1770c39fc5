"""Which replay connection (Spark partition) each target queue goes through when one queue
manager's messages may use several (``replay.connections_per_qmgr`` > 1).

Hashing queue names into buckets cannot spread a handful of large queues evenly: in the
benchmark's traffic four queues took most of the puts and hashed into one partition
(docs/performance.md, "Queues placed by size across connections"). So queues are placed by size,
largest first, each on the least loaded connection its queue manager may still use
(`place_queues`). Spark's ``repartition`` hashes a value to its partition, so each connection is
named by a *slot value* chosen to hash there with Spark's own Murmur3 (`slot_values`). The
placement decides only which connection a queue uses, never its messages or their order: on a
Spark whose hash differed, queues would share connections less evenly, nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping

_MASK = 0xFFFFFFFF
SPARK_HASH_SEED = 42  # the seed of Spark's `hash()` and of its hash partitioning


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def spark_int_hash(value: int, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's ``hash(value)`` of one INT (Murmur3_x86_32.hashInt), as a signed 32-bit int."""
    k1 = _rotl((value & _MASK) * 0xCC9E2D51 & _MASK, 15) * 0x1B873593 & _MASK
    h1 = (_rotl(seed ^ k1, 13) * 5 + 0xE6546B64) & _MASK
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def slot_values(partitions: int) -> list[int]:
    """For each partition p, the smallest INT v >= 0 that ``repartition(partitions, v)`` sends
    to p (Spark's hash partitioning: ``pmod(hash(v), partitions)``)."""
    found: dict[int, int] = {}
    value = 0
    while len(found) < partitions:
        found.setdefault(spark_int_hash(value) % partitions, value)
        value += 1
    return [found[p] for p in range(partitions)]


def place_queues(puts: Mapping[tuple[str, str], int], partitions: int, per_qmgr: int) -> dict[tuple[str, str], int]:
    """Each (queue manager, queue) -> its partition, given the puts per queue: largest
    first, on the least loaded partition, using at most ``per_qmgr`` partitions per queue
    manager (ties: the lower partition, then the name; so the same counts always give the
    same placement)."""
    load = [0] * partitions
    used: dict[str, list[int]] = {}
    placed: dict[tuple[str, str], int] = {}
    for (qmgr, queue), n in sorted(puts.items(), key=lambda kv: (-kv[1], kv[0])):
        mine = used.setdefault(qmgr, [])
        choices = mine if len(mine) >= min(per_qmgr, partitions) else range(partitions)
        chosen = min(choices, key=lambda p: (load[p], p))
        if chosen not in mine:
            mine.append(chosen)
        load[chosen] += n
        placed[(qmgr, queue)] = chosen
    return placed
