"""The HTML report in a real browser (Debian's headless Chromium): every chart draws and no
text is clipped. `make browser` installs Chromium when it is missing; this test installs
nothing (absent: skipped on a developer's machine, a failure under CI=true)."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess

import pytest

from dlq_pipeline.dumps.generator import generate
from dlq_pipeline.mq.constants import reason_name
from dlq_pipeline.report.advice import advise
from dlq_pipeline.report.arrivals import NO_DLH, timeline
from dlq_pipeline.report.render import SECTIONS, render_html

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--window-size=1280,3000",
    "--virtual-time-budget=20000",
]

# Runs in the page once plotly has drawn: per chart, whether it drew (an SVG with marks) and
# every text element that sticks out of its chart or the page; the result lands in the DOM.
CHECK = """<script>
window.addEventListener('load', () => setTimeout(() => {
  const page = document.documentElement.getBoundingClientRect();
  const out = {charts: [], clipped: [], pageWidth: document.documentElement.scrollWidth,
               viewport: window.innerWidth};
  for (const div of document.querySelectorAll('.plotly-graph-div')) {
    const box = div.getBoundingClientRect();
    const marks = div.querySelectorAll('.bars path, .point path, .trace path').length;
    out.charts.push({id: div.id, svg: div.querySelectorAll('svg.main-svg').length, marks: marks,
                     width: box.width, height: box.height});
    for (const t of div.querySelectorAll('svg text')) {
      const r = t.getBoundingClientRect();
      if (!t.textContent.trim() || r.width === 0) continue;
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        out.clipped.push({chart: div.id, text: t.textContent, left: r.left, right: r.right, top: r.top,
                          bottom: r.bottom, box: [box.left, box.right, box.top, box.bottom]});
    }
  }
  const pre = document.createElement('pre'); pre.id = 'layout-check';
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
}, 1000));
</script>"""


def storm_report() -> dict:
    """A report as `build_report` makes it, over the generator's DLQ with its storms, with
    the longest labels the sections can have."""
    generated = list(generate(3000, seed=4, max_size=4096))
    rows = []
    for g in generated:
        md, dlh = g.message.md, g.dlh
        date, time = (dlh.put_date, dlh.put_time) if dlh else (md.put_date, md.put_time)
        rows.append(
            {
                "at": dt.datetime.strptime(date + time[:6], "%Y%m%d%H%M%S").replace(tzinfo=dt.UTC),
                "reason": reason_name(dlh.reason) if dlh else NO_DLH,
                "qmgr": md.reply_to_qmgr.rstrip(),
                "dest": f"{dlh.dest_qmgr.rstrip(chr(0) + ' ')}/{dlh.dest_q.rstrip(chr(0) + ' ')}" if dlh else "",
                "count": 1,
            }
        )
    long_rule = (
        "REASON(MQRC_CLUSTER_RESOLUTION_ERROR) DESTQ(CLUS.ORDERS.ROUTER) ACTION(FWD) FWDQ(HOLD.CLUSTER) "
        "FWDQM(QMHUB01) HEADER(YES)"
    )
    rows_by_reason = [
        {"reason": 2189, "reason_name": "MQRC_CLUSTER_RESOLUTION_ERROR", "count": 89},
        {"reason": 2362, "reason_name": "MQRC_BACKOUT_THRESHOLD_REACHED", "count": 1234567},
    ]
    report = {
        "generated_at": "2026-11-01T00:00:00Z",
        "run_id": "20261101T000000Z-abcdef",
        "scopes": {"run": "this run", "pending": "pending now", "all_time": "all time"},
        "run_info": {
            "run_id": "20261101T000000Z-abcdef",
            "target": "sim:DEMO",
            "rules_file": "conf/rules/starter.rules",
            "started_at": "2026-11-01T00:00:00Z",
            "finished_at": "2026-11-01T00:01:00Z",
            "duration_s": 60.0,
            "exit_status": 3,
            "inputs": ["dlq-0000.dmp"],
        },
        "rules": [
            {
                "line": 12,
                "index": 0,
                "text": long_rule,
                "action": "FWD",
                "target": "HOLD.CLUSTER at QMHUB01",
                "retry": 1,
                "catch_all": False,
            }
        ],
        "runs": [{"run_id": "20261101T000000Z-abcdef"}],
        "overall": {
            "messages": 3000,
            "truncated": 0,
            "by_reason": rows_by_reason,
            "by_destination": [
                {"dest_qmgr": "ORDQM01", "dest_q": "SYSTEM.CLUSTER.TRANSMIT.QUEUE.VERY.LONG.NAME", "count": 77}
            ],
            "originators": [
                {
                    "qmgr": "CSQ1",
                    "application": "CICS01 PAYMENT-ROUTER-LONG-NAME",
                    "count": 500,
                    "main_reason_name": "MQRC_Q_FULL",
                    "dead_lettered_by": "amqrmppa",
                }
            ],
            "states": [{"state": "not replayed", "count": 3000}],
            "without_dlh": [],
        },
        "pending": {
            "messages": 3000,
            "by_reason": rows_by_reason,
            "without_dlh": [{"dlh_problem": "bad_strucid", "count": 3}],
            "age": [{"age": "< 1 hour", "count": 0}, {"age": "> 7 days", "count": 3000}],
        },
        "arrivals": timeline(rows),
        "run": {
            "messages": 3000,
            "decisions": 3000,
            "by_rule": [
                {"rule_line": 12, "action": "FWD", "count": 89, "rule": long_rule, "target": "HOLD.CLUSTER at QMHUB01"},
                {"rule_line": None, "action": "IGNORE", "count": 2911, "rule": "(no rule matched)", "target": ""},
            ],
            "by_action": [{"action": "IGNORE", "count": 2911}, {"action": "FWD", "count": 89}],
            "by_outcome": [{"outcome": "ignored", "count": 2911}, {"outcome": "delivered", "count": 89}],
            "ignored_by_reason": [{"ignore_reason": "no_match", "count": 2911}],
            "failures_by_target": [],
            "retry_rules": [],
            "breakers": [],
        },
    }
    report["advice"] = advise(report)
    return report


def render_in_chromium(page: str, tmp_path) -> dict:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: run `make browser` (apt-get install chromium)")
        pytest.skip("chromium is not installed: `make browser` installs it (Debian's chromium package)")
    html_file = tmp_path / "report.html"
    html_file.write_text(page.replace("</body>", CHECK + "</body>"), encoding="utf-8")
    profile = tmp_path / "profile"
    done = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", html_file.as_uri()],
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = re.search(r'<pre id="layout-check">(.*?)</pre>', done.stdout, re.S)
    assert found, f"the check did not run: {done.stderr[-2000:]}"
    subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={tmp_path / 'report.png'}", html_file.as_uri()],
        capture_output=True,
        timeout=300,
    )
    return json.loads(
        found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    )


def test_every_chart_draws_and_no_text_is_clipped(tmp_path):
    report = storm_report()
    assert len(report["arrivals"]["bursts"]) == 2  # the generated storms
    result = render_in_chromium(render_html(report), tmp_path)
    charts = {c["id"]: c for c in result["charts"]}
    bar_sections = sum(1 for _, _, path, _, chart in SECTIONS if chart and (report.get(path[0]) or {}).get(path[1]))
    assert len(charts) == 2 + bar_sections  # the two arrivals charts and one per charted section
    assert all(c["svg"] >= 1 and c["marks"] >= 1 and c["width"] > 100 and c["height"] > 50 for c in charts.values()), (
        charts
    )
    assert result["clipped"] == []
    assert result["pageWidth"] <= result["viewport"]
