"""The simulated queue manager the sections put to (replay, end to end, the storm), with the
latency of ``--latency``."""

from __future__ import annotations

from pathlib import Path

# Any queue on any remote queue manager, deep and wide enough for every section's messages
SIM_CONFIG = {"remote_qmgrs": ["*"], "maxdepth": 10**9, "maxmsgl": 100 * 2**20, "qmgr_maxmsgl": 100 * 2**20}


def latency_faults(latency_ms: dict | None) -> list[dict]:
    """Delay-only sim faults: ``{"put": 0.2, "commit": 2}`` (milliseconds per operation)."""
    return [{"op": op, "delay": ms / 1000.0} for op, ms in sorted((latency_ms or {}).items()) if ms]


def fresh_sim(path: Path, name: str, latency_ms: dict | None):
    """A new simulated queue manager ``name`` in ``path`` (what an earlier one left there
    removed), configured with `SIM_CONFIG` and the delays of ``latency_ms``."""
    from dlq_pipeline.mq.sim import SimQueueManager

    for suffix in ("", "-wal", "-shm", ".faults"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return SimQueueManager(path, name, {**SIM_CONFIG, "faults": latency_faults(latency_ms)})
