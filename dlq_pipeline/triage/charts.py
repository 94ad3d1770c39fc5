"""Notebook triage helpers that need no Spark: message body previews (with redaction) and
the matplotlib charts the triage notebook draws. The Spark side (loading the tables,
counting, the what-if) is ``dlq_pipeline.triage.spark``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dlq_pipeline.mq.codepages import decode
from dlq_pipeline.mq.structures import DLH_LENGTH

PREVIEW_CHARS = 80


def body_preview(
    data: bytes | None,
    ccsid: int | None,
    *,
    has_dlh: bool,
    limit: int = PREVIEW_CHARS,
    redact: bool = False,
    data_length: int | None = None,
) -> str:
    """The start of the message body as text: after the MQDLH when there is one, decoded with
    the CCSID of the data (the MQDLH's CodedCharSetId, else the MQMD's), unprintable
    characters shown as ``.``. ``redact`` shows only the size (payloads may hold personal data)."""
    data = data or b""
    body = data[DLH_LENGTH:] if has_dlh else data
    size = (data_length - (DLH_LENGTH if has_dlh else 0)) if data_length is not None else len(body)
    if redact:
        return f"<redacted: {size} bytes>"
    if not body:
        return ""
    text, _ = decode(body[: limit * 4], ccsid or 1208)
    shown = "".join(c if c.isprintable() else "." for c in text[:limit])
    return shown + ("…" if len(text) > limit or size > len(body[: limit * 4]) else "")


def bar_chart(ax, labels: Sequence[Any], counts: Sequence[int], *, title: str, xlabel: str = "messages"):
    """Horizontal bars, largest at the top."""
    labels = [str(x) for x in labels]
    ax.barh(list(reversed(labels)), list(reversed(list(counts))), color="#4878a8")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    for i, value in enumerate(reversed(list(counts))):
        ax.annotate(f" {value}", (value, i), va="center", fontsize=8)
    return ax


def stacked_runs(ax, frame, *, index: str, columns: str, values: str, title: str):
    """One stacked bar per run (``frame``: long format, e.g. run_id/action/count)."""
    if frame.empty:
        ax.set_title(title + " (no runs yet)")
        return ax
    wide = frame.pivot_table(index=index, columns=columns, values=values, aggfunc="sum", fill_value=0).sort_index()
    bottom = [0] * len(wide)
    for column in wide.columns:
        heights = list(wide[column])
        ax.bar(range(len(wide)), heights, bottom=bottom, label=str(column))
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xticks(range(len(wide)), [str(i)[-12:] for i in wide.index], rotation=30, ha="right", fontsize=8)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return ax
