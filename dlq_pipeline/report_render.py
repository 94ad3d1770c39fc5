"""Render a report dict (see `dlq_pipeline.spark.report.build_report`) for people.

Console tables and one self-contained HTML page: inline SVG charts, inline CSS, no
scripts and nothing fetched, so the file can be mailed or attached to a ticket.
"""

from __future__ import annotations

import html

SECTIONS = [
    # (title, path in the report, columns)
    ("Messages by reason", ("overall", "by_reason"), ["reason", "reason_name", "count"]),
    ("Messages by original destination", ("overall", "by_destination"), ["dest_qmgr", "dest_q", "count"]),
    ("Messages without a dead-letter header", ("overall", "without_dlh"), ["dlh_problem", "count"]),
    ("Age of what is still pending", ("overall", "pending_age"), ["age", "count"]),
    ("Decisions by rule (this run)", ("run", "by_rule"), ["rule_line", "action", "count"]),
    ("Decisions by action (this run)", ("run", "by_action"), ["action", "count"]),
    ("Ignored, by reason (this run)", ("run", "ignored_by_reason"), ["ignore_reason", "count"]),
    ("Outcomes (this run)", ("run", "by_outcome"), ["outcome", "count"]),
    ("Top failing targets (this run)", ("run", "top_failing_targets"), ["target_qmgr", "target_q", "reason_code", "count"]),
    ("Outcomes (all runs)", ("overall", "by_outcome"), ["outcome", "count"]),
]
CHARTED = {"Messages by reason", "Messages by original destination", "Age of what is still pending",
           "Decisions by action (this run)", "Outcomes (this run)"}


def _section_rows(report: dict, path: tuple[str, str]) -> list[dict]:
    return (report.get(path[0]) or {}).get(path[1]) or []


def _cell(value) -> str:
    return "" if value is None else str(value)


def text_table(rows: list[dict], columns: list[str]) -> str:
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths])] + [line(row) for row in cells])


def render_text(report: dict) -> str:
    overall = report["overall"]
    out = [
        f"DLQ report, as of {report['as_of']} (time travel)" if report.get("as_of")
        else f"DLQ report, generated {report['generated_at']}",
        f"messages landed {overall['messages']}, still pending {overall['pending']}, "
        f"truncated {overall['truncated']}, runs {len(report['runs'])}"
        + (f", latest run {report['run_id']}" if report.get("run_id") else ""),
    ]
    for title, path, columns in SECTIONS:
        rows = _section_rows(report, path)
        if rows:
            out += ["", title, text_table(rows, columns)]
    return "\n".join(out) + "\n"


def _label(row: dict, columns: list[str]) -> str:
    parts = [_cell(row.get(c)) for c in columns if c != "count" and row.get(c) not in (None, "")]
    return " / ".join(parts) or "(blank)"


def svg_bar_chart(rows: list[dict], columns: list[str], *, width: int = 640) -> str:
    """Horizontal bars, one per row, labelled and scaled to the largest count."""
    bar_h, gap, label_w = 18, 6, 260
    peak = max((r["count"] for r in rows), default=0) or 1
    height = len(rows) * (bar_h + gap) + gap
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">']
    for i, row in enumerate(rows):
        y = gap + i * (bar_h + gap)
        length = max(1, int((width - label_w - 60) * row["count"] / peak))
        label = html.escape(_label(row, columns)[:40])
        parts.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end" font-size="12">{label}</text>')
        parts.append(f'<rect x="{label_w}" y="{y}" width="{length}" height="{bar_h}" fill="#3b6ea5"/>')
        parts.append(f'<text x="{label_w + length + 4}" y="{y + 13}" font-size="12">{row["count"]}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _html_table(rows: list[dict], columns: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(r.get(c)))}</td>" for c in columns) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(report: dict) -> str:
    overall = report["overall"]
    sections = []
    for title, path, columns in SECTIONS:
        rows = _section_rows(report, path)
        if not rows:
            continue
        chart = svg_bar_chart(rows, columns) if title in CHARTED else ""
        sections.append(f"<section><h2>{html.escape(title)}</h2>{chart}{_html_table(rows, columns)}</section>")
    run = f" &middot; latest run <code>{html.escape(report['run_id'])}</code>" if report.get("run_id") else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>DLQ report</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:60em}}
table{{border-collapse:collapse;margin:.5em 0 1.5em}} td,th{{border:1px solid #ccc;padding:.2em .6em;text-align:left}}
th{{background:#eef}} .kpi{{display:inline-block;margin-right:2em;font-size:1.3em}}
</style></head><body>
<h1>Dead-letter queue report</h1>
<p>Generated {html.escape(report['generated_at'])}{run}</p>
<p><span class="kpi">{overall['messages']} messages</span><span class="kpi">{overall['pending']} pending</span>
<span class="kpi">{overall['truncated']} truncated</span><span class="kpi">{len(report['runs'])} runs</span></p>
{''.join(sections)}
</body></html>
"""
