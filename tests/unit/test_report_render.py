import re
from html.parser import HTMLParser

from dlq_pipeline.report_render import render_html, render_text, svg_bar_chart, text_table

REPORT = {
    "generated_at": "2026-11-21T10:00:00Z",
    "run_id": "R2",
    "runs": [{"run_id": "R1"}, {"run_id": "R2"}],
    "overall": {
        "messages": 5,
        "pending": 3,
        "truncated": 1,
        "by_reason": [{"reason": 2053, "reason_name": "MQRC_Q_FULL", "count": 4}, {"reason": 265, "reason_name": "MQFB_APPL_CANNOT_BE_STARTED", "count": 1}],
        "by_destination": [{"dest_qmgr": "QM1", "dest_q": "A<B>", "count": 5}],
        "without_dlh": [],
        "pending_age": [{"age": "< 1 hour", "count": 3}],
        "by_outcome": [{"outcome": "delivered", "count": 2}],
    },
    "run": {"by_action": [{"action": "RETRY", "count": 2}], "by_outcome": [{"outcome": "delivered", "count": 2}]},
}


def test_text_table_aligns_columns():
    assert text_table([{"a": 1, "bb": None}, {"a": 22, "bb": "x"}], ["a", "bb"]) == "a   bb\n--  --\n1\n22  x"


def test_render_text_lists_sections_with_rows_only():
    text = render_text(REPORT)
    assert "Messages by reason\nreason  reason_name                  count\n" in text
    assert "2053    MQRC_Q_FULL                  4" in text
    assert "without a dead-letter header" not in text  # empty section left out
    assert text.startswith("DLQ report, generated 2026-11-21T10:00:00Z\nmessages landed 5, still pending 3")


def test_html_is_self_contained_escaped_and_well_formed():
    page = render_html(REPORT)
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "A&lt;B&gt;" in page and "A<B>" not in page
    assert page.count("<svg") == 5  # reason, destination, age, action, outcome charts

    class Balance(HTMLParser):
        def __init__(self):
            super().__init__()
            self.stack = []

        def handle_starttag(self, tag, attrs):
            if tag != "meta":
                self.stack.append(tag)

        def handle_startendtag(self, tag, attrs):
            pass

        def handle_endtag(self, tag):
            assert self.stack.pop() == tag

    parser = Balance()
    parser.feed(page)
    assert parser.stack == []


def test_bars_scale_to_the_largest_count():
    svg = svg_bar_chart([{"k": "a", "count": 10}, {"k": "b", "count": 5}], ["k", "count"])
    widths = [int(w) for w in re.findall(r'<rect x="\d+" y="\d+" width="(\d+)"', svg)]
    assert widths[0] == 2 * widths[1]
