"""Render a report dict (see `dlq_pipeline.report.spark.build_report`) for people.

Console tables, and one self-contained HTML page: charts drawn by plotly.js, which ships
inside the ``plotly`` wheel and is inlined once, so the file works offline and can be
mailed or attached to a ticket (nothing is fetched). Every section names its scope (this
run / pending now / all time); the advice comes first, then the arrivals timeline.
"""

from __future__ import annotations

import html
import json

# (title, scope key, path in the report, columns, chart: None | "bar" (label columns -> count))
SECTIONS = [
    ("Pending by reason", "pending", ("pending", "by_reason"), ["reason", "reason_name", "count"], "bar"),
    ("Pending without a dead-letter header", "pending", ("pending", "without_dlh"), ["dlh_problem", "count"], None),
    ("Age of what is pending", "pending", ("pending", "age"), ["age", "count"], "bar"),
    ("Decisions by rule", "run", ("run", "by_rule"), ["rule_line", "action", "count", "rule", "target"], "rule"),
    ("Decisions by action", "run", ("run", "by_action"), ["action", "count"], "bar"),
    ("Ignored, by reason", "run", ("run", "ignored_by_reason"), ["ignore_reason", "count"], None),
    ("Outcomes", "run", ("run", "by_outcome"), ["outcome", "count"], "bar"),
    (
        "Failed and deferred puts by target queue",
        "run",
        ("run", "failures_by_target"),
        ["target_qmgr", "target_q", "outcome", "reason_code", "reason_name", "count"],
        None,
    ),
    (
        "RETRY rules: attempts and results",
        "run",
        ("run", "retry_rules"),
        ["rule_line", "attempts", "delivered", "failed", "main_reason_name"],
        None,
    ),
    (
        "Groups and segmented messages held (none of each is put until it is whole)",
        "run",
        ("run", "held_units"),
        ["reason", "messages"],
        None,
    ),
    (
        "Circuit breakers opened",
        "run",
        ("run", "breakers"),
        ["target_qmgr", "target_q", "deferred", "error_text"],
        None,
    ),
    ("Messages by reason", "all_time", ("overall", "by_reason"), ["reason", "reason_name", "count"], "bar"),
    (
        "Messages by original destination",
        "all_time",
        ("overall", "by_destination"),
        ["dest_qmgr", "dest_q", "count"],
        "bar",
    ),
    (
        "Who sends dead letters (originating queue manager, application)",
        "all_time",
        ("overall", "originators"),
        ["qmgr", "application", "count", "main_reason_name", "dead_lettered_by"],
        "bar",
    ),
    ("Messages by current state", "all_time", ("overall", "states"), ["state", "count"], "bar"),
    ("Messages without a dead-letter header", "all_time", ("overall", "without_dlh"), ["dlh_problem", "count"], None),
]
SCOPE_TITLES = {"run": "This run", "pending": "Pending now", "all_time": "All time"}
LABEL_COLUMNS = {  # what names a bar (the others are details in the table)
    "Pending by reason": ["reason_name"],
    "Messages by reason": ["reason_name"],
    "Who sends dead letters (originating queue manager, application)": ["qmgr", "application"],
}
BURST_COLOR = "rgba(214, 39, 40, 0.12)"


def _section_rows(report: dict, path: tuple[str, str]) -> list[dict]:
    return (report.get(path[0]) or {}).get(path[1]) or []


def _cell(value) -> str:
    return "" if value is None else str(value)


def text_table(rows: list[dict], columns: list[str]) -> str:
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths])] + [line(row) for row in cells])


def run_facts(report: dict) -> list[tuple[str, str]]:
    """(label, value) lines about the run the report is on (pure)."""
    info = report.get("run_info") or {}
    facts = [("run", _cell(report.get("run_id")) or "(no run yet)")]
    for key, label in (
        ("target", "target"),
        ("rules_file", "rules file"),
        ("started_at", "started"),
        ("finished_at", "finished"),
        ("duration_s", "duration (s)"),
        ("exit_status", "exit status"),
    ):
        if info.get(key) not in (None, ""):
            facts.append((label, _cell(info[key])))
    if info.get("inputs"):
        facts.append(("inputs", ", ".join(info["inputs"])))
    if line := input_files_line(info.get("input_files") or {}):
        facts.append(("input files", line))
    return facts


def input_files_line(inputs: dict) -> str:
    """What ingest did with a run's input files (`InputCounts` as a dict), in one line: the
    run's result line and the report's fact (pure; empty when it listed none)."""
    if not inputs or not any(inputs.get(k) for k in ("read", "skipped", "deferred", "unreadable")):
        return ""
    line = (
        f"{inputs['read']} read ({inputs['bytes_read'] / 1e6:,.1f} MB), {inputs['skipped']} landed "
        f"before and skipped ({inputs['bytes_skipped'] / 1e6:,.1f} MB), {inputs['deferred']} deferred"
    )
    if inputs["unreadable"]:
        line += f", {inputs['unreadable']} unreadable"
    if inputs["backlog_files"]:
        line += f"; backlog {inputs['backlog_files']} files ({inputs['backlog_bytes'] / 1e6:,.1f} MB)"
    return line


def _arrivals_text(arrivals: dict) -> list[str]:
    series = arrivals.get("series") or []
    if not series:
        return []
    out = [
        "",
        f"Arrivals on the DLQ, per {arrivals['bucket']} (all time): {len(series)} buckets from "
        f"{series[0]['start']}, median {arrivals['median']:g}, burst threshold {arrivals['threshold']:g}",
        f"  rule: {arrivals['rule']}",
    ]
    for b in arrivals.get("bursts") or []:
        reasons = ", ".join(f"{r['reason']} {r['count']}" for r in b["reasons"])
        qmgrs = ", ".join(f"{q['qmgr']} {q['count']}" for q in b["qmgrs"])
        out.append(
            f"  BURST {b['start']} - {b['end']}: {b['count']} messages (peak {b['peak']}) "
            f"reasons: {reasons}; from: {qmgrs}"
        )
    if not arrivals.get("bursts"):
        out.append("  no bursts")
    return out


def render_text(report: dict) -> str:
    overall, pending = report["overall"], report.get("pending") or {}
    out = [
        f"DLQ report, as of {report['as_of']} (time travel)"
        if report.get("as_of")
        else f"DLQ report, generated {report['generated_at']}",
        f"all time: {overall['messages']} messages landed, {overall['truncated']} truncated, "
        f"{len(report['runs'])} runs; pending now: {pending.get('messages', 0)}",
        "  ".join(f"{label}: {value}" for label, value in run_facts(report)),
    ]
    advice = report.get("advice") or []
    if advice:
        out += ["", "Advice"]
        for item in advice:
            out += [f"  [{item['severity']}] {item['title']}", f"      -> {item['action']}"]
    out += _arrivals_text(report.get("arrivals") or {})
    for title, scope, path, columns, _ in SECTIONS:
        rows = _section_rows(report, path)
        if rows:
            out += ["", f"{title} ({SCOPE_TITLES[scope].lower()})", text_table(rows, columns)]
    return "\n".join(out) + "\n"


# --- HTML --------------------------------------------------------------------------------------


def _label(row: dict, columns: list[str]) -> str:
    parts = [_cell(row.get(c)) for c in columns if c != "count" and row.get(c) not in (None, "")]
    return " / ".join(parts) or "(blank)"


def _figure_html(fig, div_id: str) -> str:
    return fig.to_html(
        full_html=False, include_plotlyjs=False, div_id=div_id, config={"displaylogo": False, "responsive": True}
    )


def bar_figure(rows: list[dict], label_columns: list[str], *, title: str = ""):
    """Horizontal bars, largest at the top; the axis makes room for its labels."""
    import plotly.graph_objects as go

    labels = [_label(r, label_columns) for r in rows]
    counts = [r["count"] for r in rows]
    fig = go.Figure(
        go.Bar(
            x=counts[::-1],
            y=labels[::-1],
            orientation="h",
            text=counts[::-1],
            textposition="outside",
            cliponaxis=False,
            marker_color="#3b6ea5",
            hovertemplate="%{y}: %{x}<extra></extra>",
        )
    )
    fig.update_layout(
        title=title or None,
        height=90 + 26 * len(rows),
        margin=dict(l=10, r=50, t=30 if title else 10, b=30),
        yaxis=dict(automargin=True, type="category"),
        xaxis=dict(title="messages", automargin=True),
        plot_bgcolor="white",
    )
    return fig


def arrivals_figure(arrivals: dict, by: str):
    """Stacked bars over time (``by``: ``by_reason`` or ``by_qmgr``), bursts shaded."""
    import plotly.graph_objects as go

    series = arrivals["series"]
    names = sorted({k for s in series for k in s[by]}, key=lambda k: -sum(s[by].get(k, 0) for s in series))
    fig = go.Figure(
        [
            go.Bar(
                x=[s["start"] for s in series],
                y=[s[by].get(name, 0) for s in series],
                name=name,
                hovertemplate=f"{name}<br>%{{x}}: %{{y}}<extra></extra>",
            )
            for name in names
        ]
    )
    for burst in arrivals.get("bursts") or []:
        fig.add_vrect(
            x0=burst["start"],
            x1=burst["end"],
            fillcolor=BURST_COLOR,
            line_width=0,
            annotation_text=f"burst: {burst['count']}",
            annotation_position="top left",
        )
    fig.add_hline(
        y=arrivals["threshold"],
        line_dash="dot",
        line_color="#d62728",
        annotation_text="burst threshold",
        annotation_position="top right",
    )
    fig.update_layout(
        barmode="stack",
        height=420,
        bargap=0.05,
        legend=dict(orientation="h", y=-0.2),
        margin=dict(l=10, r=10, t=30, b=10),
        plot_bgcolor="white",
        xaxis=dict(type="date", automargin=True),
        yaxis=dict(title=f"messages per {arrivals['bucket']}", automargin=True),
    )
    return fig


def _html_table(rows: list[dict], columns: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(r.get(c)))}</td>" for c in columns) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def advice_html(advice: list[dict]) -> str:
    """The advice items as an HTML list, evidence folded under each (the page and the notebook)."""
    if not advice:
        return "<p>Nothing needs attention.</p>"
    items = []
    for item in advice:
        evidence = html.escape(json.dumps(item["evidence"], indent=2, sort_keys=True, default=str))
        items.append(
            f'<li class="advice {html.escape(item["severity"])}"><span class="sev">{html.escape(item["severity"])}'
            f"</span> <strong>{html.escape(item['title'])}</strong><p>{html.escape(item['action'])}</p>"
            f"<details><summary>evidence</summary><pre>{evidence}</pre></details></li>"
        )
    return f'<ul class="advice-list">{"".join(items)}</ul>'


def _arrivals_html(arrivals: dict) -> str:
    if not arrivals.get("series"):
        return "<p>No messages yet.</p>"
    bursts = arrivals.get("bursts") or []
    rows = [
        {
            "from": b["start"],
            "to": b["end"],
            "messages": b["count"],
            "peak": b["peak"],
            "reasons": ", ".join(f"{r['reason']} {r['count']}" for r in b["reasons"]),
            "from queue managers": ", ".join(f"{q['qmgr']} {q['count']}" for q in b["qmgrs"]),
            "for": ", ".join(f"{d['dest']} {d['count']}" for d in b["destinations"]),
        }
        for b in bursts
    ]
    table = _html_table(rows, list(rows[0])) if rows else "<p>No bursts.</p>"
    return (
        f'<p class="scope">All time, per {html.escape(arrivals["bucket"])}, from the MQDLH put date and time. '
        f"Median {arrivals['median']:g} per {html.escape(arrivals['bucket'])}; "
        f"{html.escape(arrivals['rule'])}.</p>"
        f"<h3>By reason</h3>{_figure_html(arrivals_figure(arrivals, 'by_reason'), 'chart-arrivals-reason')}"
        f"<h3>By originating queue manager</h3>"
        f"{_figure_html(arrivals_figure(arrivals, 'by_qmgr'), 'chart-arrivals-qmgr')}"
        f"<h3>Bursts</h3>{table}"
    )


def _rule_label_rows(rows: list[dict]) -> list[dict]:
    return [
        {
            "label": f"line {r['rule_line']}: {r['action']}"
            if r.get("rule_line") is not None
            else f"no rule: {r['action']}",
            "count": r["count"],
        }
        for r in rows
    ]


def render_html(report: dict) -> str:
    import plotly.offline

    overall, pending = report["overall"], report.get("pending") or {}
    facts = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in run_facts(report))
    blocks: dict[str, list[str]] = {scope: [] for scope in SCOPE_TITLES}
    for n, (title, scope, path, columns, chart) in enumerate(SECTIONS):
        rows = _section_rows(report, path)
        if not rows:
            continue
        figure = ""
        if chart == "bar":
            label = LABEL_COLUMNS.get(title, [c for c in columns if c != "count"])
            figure = _figure_html(bar_figure(rows, label), f"chart-{n}")
        elif chart == "rule":
            figure = _figure_html(bar_figure(_rule_label_rows(rows), ["label"]), f"chart-{n}")
        blocks[scope].append(f"<section><h3>{html.escape(title)}</h3>{figure}{_html_table(rows, columns)}</section>")
    scopes = report.get("scopes") or {}
    body = "".join(
        f'<h2>{html.escape(SCOPE_TITLES[scope])}</h2><p class="scope">{html.escape(scopes.get(scope, ""))}</p>'
        + "".join(sections)
        for scope, sections in blocks.items()
        if sections
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>DLQ report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:72em}}
table{{border-collapse:collapse;margin:.5em 0 1.5em}} td,th{{border:1px solid #ccc;padding:.2em .6em;text-align:left;
vertical-align:top}}
th{{background:#eef}} .kpi{{display:inline-block;margin-right:2em;font-size:1.3em}}
.kpi small{{display:block;font-size:.6em;color:#666}} .scope{{color:#555;font-style:italic}}
.advice-list{{list-style:none;padding:0}} .advice{{border-left:6px solid #999;padding:.4em .8em;margin:.6em 0;
background:#fafafa}}
.advice.act{{border-color:#d62728}} .advice.check{{border-color:#ff7f0e}} .advice.info{{border-color:#1f77b4}}
.sev{{text-transform:uppercase;font-size:.75em;font-weight:bold;color:#555}} pre{{white-space:pre-wrap}}
</style>
<script>{plotly.offline.get_plotlyjs()}</script>
</head><body>
<h1>Dead-letter queue report</h1>
<p>Generated {html.escape(report["generated_at"])}</p>
<table class="facts">{facts}</table>
<p><span class="kpi">{overall["messages"]} messages<small>all time</small></span>
<span class="kpi">{pending.get("messages", 0)} pending<small>now</small></span>
<span class="kpi">{(report.get("run") or {}).get("messages", 0)} decided<small>this run</small></span>
<span class="kpi">{overall["truncated"]} truncated<small>all time</small></span>
<span class="kpi">{len(report["runs"])} runs<small>all time</small></span></p>
<h2>Advice</h2>{advice_html(report.get("advice") or [])}
<h2>Arrivals over time</h2>{_arrivals_html(report.get("arrivals") or {})}
{body}
</body></html>
"""
