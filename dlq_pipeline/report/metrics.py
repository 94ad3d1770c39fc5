"""Run metrics for schedulers and dashboards, from a run summary (pure).

``run_metrics(summary)`` is the ``metrics`` object of the run summary
(``WAREHOUSE/_runs/<run_id>.json``): counts, per-stage durations and rates.
``prometheus_text(summary)`` renders the same numbers in Prometheus' text exposition
format, for node_exporter's textfile collector (``metrics.textfile``) or a Pushgateway.
Every metric is a gauge describing the *last* run, which is how batch jobs are monitored
(alert on ``dlq_pipeline_last_run_exit_status != 0`` or on an old
``dlq_pipeline_last_run_finished_timestamp_seconds``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

PREFIX = "dlq_pipeline"

# Which count each stage's rate divides by the stage's duration.
STAGE_ITEMS = {
    "ingest": ("messages_read", "messages read (landed + already landed)"),
    "classify": ("pending", "messages decided"),
    "replay": ("attempts", "ledger rows written"),
}


INPUT_STATES = ("read", "skipped", "deferred", "unreadable")


def _seconds(stamp: str) -> float | None:
    if not stamp:
        return None
    parsed = dt.datetime.fromisoformat(stamp.rstrip("Z"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


def run_metrics(summary: Mapping[str, Any]) -> dict[str, Any]:
    """Counts, durations (s) and rates (items/s) of one run summary (``RunSummary.as_dict()``)."""
    counts = {
        "files": summary.get("files", 0),
        "messages_landed": summary.get("messages_landed", 0),
        "duplicates_skipped": summary.get("duplicates_skipped", 0),
        "messages_read": summary.get("messages_landed", 0) + summary.get("duplicates_skipped", 0),
        "quarantined": summary.get("quarantined", 0),
        "pending": summary.get("pending", 0),
        "messages_without_dlh": summary.get("messages_without_dlh", 0),
        "attempts": sum((summary.get("outcomes") or {}).values()),
        "backlog_files": (summary.get("input_files") or {}).get("backlog_files", 0),
        "backlog_bytes": (summary.get("input_files") or {}).get("backlog_bytes", 0),
    }
    inputs = summary.get("input_files") or {}
    durations = {k: float(v) for k, v in (summary.get("durations") or {}).items()}
    started, finished = _seconds(summary.get("started_at", "")), _seconds(summary.get("finished_at", ""))
    total = round(finished - started, 3) if started is not None and finished is not None else sum(durations.values())
    rates = {}
    for stage, (count, _) in STAGE_ITEMS.items():
        seconds = durations.get(stage)
        if seconds:
            rates[stage] = round(counts[count] / seconds, 3)
    return {
        "counts": counts,
        "decisions": dict(summary.get("decisions") or {}),
        "ignore_reasons": dict(summary.get("ignore_reasons") or {}),
        "outcomes": dict(summary.get("outcomes") or {}),
        # the input files by what ingest did with them (`ingest.inputs`), and their bytes
        "input_files": {state: inputs.get(state, 0) for state in INPUT_STATES},
        "input_bytes": {state: inputs.get(f"bytes_{state}", 0) for state in INPUT_STATES},
        "durations_s": {**durations, "total": total},
        "rates_per_s": rates,
        "exit_status": summary.get("exit_status", 0),
        "finished_at_s": finished,
    }


def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Mapping[str, Any]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items())) + "}"


def _number(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) and not float(value).is_integer() else str(int(value))


def prometheus_text(summary: Mapping[str, Any], *, labels: Mapping[str, str] | None = None) -> str:
    """The run's metrics in the Prometheus text format (one family per block; pure).

    ``labels`` are added to every sample (e.g. ``{"warehouse": "prod"}``) so several
    pipelines can share one textfile directory.
    """
    m = run_metrics(summary)
    base = dict(labels or {})
    families: list[tuple[str, str, list[tuple[dict, float]]]] = [
        (
            "last_run_info",
            "the last run (value 1; labels identify it)",
            [({"run_id": summary.get("run_id", ""), "target": summary.get("target", "")}, 1)],
        ),
        (
            "last_run_exit_status",
            "exit status of the last run (0 done, 3 needs attention, 1 failed)",
            [({}, m["exit_status"])],
        ),
    ]
    if m["finished_at_s"] is not None:
        families.append(
            (
                "last_run_finished_timestamp_seconds",
                "when the last run finished (Unix time)",
                [({}, m["finished_at_s"])],
            )
        )
    for name, value in m["counts"].items():
        families.append((f"last_run_{name}", f"{name.replace('_', ' ')} in the last run", [({}, value)]))
    for name, key in (("decisions", "action"), ("outcomes", "outcome"), ("ignore_reasons", "reason")):
        families.append(
            (
                f"last_run_{name}",
                f"{name.replace('_', ' ')} in the last run, by {key}",
                [({key: k}, v) for k, v in sorted(m[name].items())],
            )
        )
    for name, what in (("input_files", "input files"), ("input_bytes", "bytes of input files")):
        families.append(
            (
                f"last_run_{name}",
                f"{what} in the last run, by what ingest did (read, skipped as landed, deferred, unreadable)",
                [({"state": k}, v) for k, v in m[name].items()],
            )
        )
    families.append(
        (
            "last_run_stage_duration_seconds",
            "wall-clock seconds per stage of the last run",
            [({"stage": k}, v) for k, v in m["durations_s"].items()],
        )
    )
    families.append(
        (
            "last_run_stage_rate_per_second",
            "items per second per stage of the last run",
            [({"stage": k}, v) for k, v in m["rates_per_s"].items()],
        )
    )
    lines: list[str] = []
    for name, help_text, samples in families:
        full = f"{PREFIX}_{name}"
        lines.append(f"# HELP {full} {help_text}")
        lines.append(f"# TYPE {full} gauge")
        for sample_labels, value in samples:
            lines.append(f"{full}{_labels({**base, **sample_labels})} {_number(value)}")
    return "\n".join(lines) + "\n"


def write_textfile(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically (the textfile collector must never read half a file)."""
    import os
    import secrets

    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
