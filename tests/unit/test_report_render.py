import html
import json
from html.parser import HTMLParser

from dlq_pipeline.report.render import render_html, render_text, run_facts, text_table

REPORT = {
    "generated_at": "2026-11-21T10:00:00Z",
    "run_id": "R2",
    "scopes": {"run": "this run: decisions", "pending": "pending now: not ended", "all_time": "all time: landed"},
    "run_info": {
        "run_id": "R2",
        "target": "sim:DEMO",
        "rules_file": "my.rules",
        "duration_s": 12.5,
        "exit_status": 3,
        "inputs": ["a.dmp", "b.dmp"],
    },
    "runs": [{"run_id": "R1"}, {"run_id": "R2"}],
    "overall": {
        "messages": 5,
        "truncated": 1,
        "by_reason": [
            {"reason": 2053, "reason_name": "MQRC_Q_FULL", "count": 4},
            {"reason": 265, "reason_name": "MQFB_APPL_CANNOT_BE_STARTED", "count": 1},
        ],
        "by_destination": [{"dest_qmgr": "QM1", "dest_q": "A<B>", "count": 5}],
        "without_dlh": [],
        "states": [{"state": "delivered", "count": 2}, {"state": "not replayed", "count": 3}],
    },
    "pending": {"messages": 3, "age": [{"age": "< 1 hour", "count": 3}], "by_reason": [], "without_dlh": []},
    "arrivals": {
        "bucket": "hour",
        "rule": "RULE",
        "median": 1.0,
        "mad": 0.0,
        "threshold": 10.0,
        "series": [
            {
                "start": "2026-11-21T08:00:00Z",
                "count": 1,
                "by_reason": {"MQRC_Q_FULL": 1},
                "by_qmgr": {"CSQ1": 1},
                "burst": False,
            },
            {
                "start": "2026-11-21T09:00:00Z",
                "count": 12,
                "by_reason": {"MQRC_Q_FULL": 12},
                "by_qmgr": {"CSQ1": 12},
                "burst": True,
            },
        ],
        "bursts": [
            {
                "start": "2026-11-21T09:00:00Z",
                "end": "2026-11-21T10:00:00Z",
                "buckets": 1,
                "hours": 1.0,
                "count": 12,
                "baseline_per_bucket": 1.0,
                "peak": 12,
                "reasons": [{"reason": "MQRC_Q_FULL", "count": 12}],
                "qmgrs": [{"qmgr": "CSQ1", "count": 12}],
                "destinations": [{"dest": "QM1/ORDERS.IN", "count": 12}],
            }
        ],
    },
    "advice": [
        {
            "code": "queue_full",
            "severity": "act",
            "title": "ORDERS.IN on QM1 was full",
            "action": "find the consumer",
            "evidence": {"messages": 12},
        }
    ],
    "run": {
        "messages": 2,
        "by_action": [{"action": "RETRY", "count": 2}],
        "by_outcome": [{"outcome": "delivered", "count": 2}],
        "by_rule": [
            {
                "rule_line": 7,
                "action": "RETRY",
                "count": 2,
                "rule": "REASON(MQRC_Q_FULL) ACTION(RETRY)",
                "target": "original destination",
            }
        ],
    },
}


def test_text_table_aligns_columns():
    assert text_table([{"a": 1, "bb": None}, {"a": 22, "bb": "x"}], ["a", "bb"]) == "a   bb\n--  --\n1\n22  x"


def test_run_facts_name_target_rules_duration_and_status():
    assert run_facts(REPORT) == [
        ("run", "R2"),
        ("target", "sim:DEMO"),
        ("rules file", "my.rules"),
        ("duration (s)", "12.5"),
        ("exit status", "3"),
        ("inputs", "a.dmp, b.dmp"),
    ]


def test_render_text_says_each_scope_and_shows_advice_bursts_and_rule_text():
    text = render_text(REPORT)
    assert text.startswith(
        "DLQ report, generated 2026-11-21T10:00:00Z\n"
        "all time: 5 messages landed, 1 truncated, 2 runs; pending now: 3\n"
        "run: R2  target: sim:DEMO  rules file: my.rules  duration (s): 12.5  exit status: 3"
    )
    assert "\nAdvice\n  [act] ORDERS.IN on QM1 was full\n      -> find the consumer\n" in text
    assert (
        "  BURST 2026-11-21T09:00:00Z - 2026-11-21T10:00:00Z: 12 messages (peak 12) reasons: MQRC_Q_FULL 12; "
        "from: CSQ1 12\n"
    ) in text
    assert "Messages by reason (all time)\nreason  reason_name                  count\n" in text
    assert (
        "Decisions by rule (this run)\n" in text
        and "7          RETRY   2      REASON(MQRC_Q_FULL) ACTION(RETRY)" in text
    )
    assert "Messages by current state (all time)" in text and "Age of what is pending (pending now)" in text
    assert "without a dead-letter header" not in text  # empty sections left out


class _Page(HTMLParser):
    """Balanced tags, every script inline, the chart divs."""

    def __init__(self):
        super().__init__()
        self.stack, self.scripts, self.charts, self.links = [], [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag not in ("meta", "br"):
            self.stack.append(tag)
        if tag == "script":
            self.scripts.append(attrs)
        if tag == "div" and "plotly-graph-div" in (attrs.get("class") or ""):
            self.charts.append(attrs["id"])
        if tag in ("link", "img", "iframe"):
            self.links.append(attrs)

    def handle_endtag(self, tag):
        assert self.stack.pop() == tag


def test_html_is_one_self_contained_page_with_a_chart_per_view():
    page = render_html(REPORT)
    parser = _Page()
    parser.feed(page)
    assert parser.stack == [] and parser.links == []
    assert all("src" not in s for s in parser.scripts)  # plotly.js inlined, nothing fetched
    assert page.count("Plotly.newPlot") == len(parser.charts)
    # arrivals, then this run (rule, action, outcome), pending now (age), all time (reason, destination, state)
    assert parser.charts == [
        "chart-arrivals-reason",
        "chart-arrivals-qmgr",
        "chart-3",
        "chart-4",
        "chart-6",
        "chart-2",
        "chart-11",
        "chart-12",
        "chart-14",
    ]
    assert "A&lt;B&gt;" in page and "<td>A<B></td>" not in page
    assert "Pending now" in page and "pending now: not ended" in page and "this run: decisions" in page
    assert html.escape(json.dumps({"messages": 12}, indent=2)) in page  # the advice's evidence


def test_the_arrivals_chart_stacks_each_reason_and_shades_each_burst():
    page = render_html(REPORT)
    start = page.index('"chart-arrivals-reason"')
    figure = page[start : page.index("</script>", start)]
    assert '"barmode":"stack"' in figure and '"name":"MQRC_Q_FULL"' in figure
    assert '"x0":"2026-11-21T09:00:00Z","x1":"2026-11-21T10:00:00Z"' in figure
