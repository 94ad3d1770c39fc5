"""Advice from a report: each finding with what to do and its evidence."""

from __future__ import annotations

from dlq_pipeline.report.advice import advise

BURST = {
    "start": "2026-10-09T10:00:00Z",
    "end": "2026-10-09T14:00:00Z",
    "buckets": 4,
    "hours": 4.0,
    "count": 2400,
    "baseline_per_bucket": 50.0,
    "peak": 700,
    "reasons": [{"reason": "MQRC_Q_FULL", "count": 2300}, {"reason": "MQRC_NOT_AUTHORIZED", "count": 100}],
    "qmgrs": [{"qmgr": "CSQ1", "count": 1500}],
    "destinations": [{"dest": "ORDQM01/ORDERS.IN", "count": 2200}],
}
RULES = [
    {
        "line": 3,
        "index": 0,
        "text": "REASON(MQRC_Q_FULL) ACTION(RETRY) RETRY(3)",
        "action": "RETRY",
        "target": "original destination",
        "retry": 3,
        "catch_all": False,
    },
    {
        "line": 5,
        "index": 1,
        "text": "REASON(MQRC_PUT_INHIBITED) ACTION(IGNORE)",
        "action": "IGNORE",
        "target": "",
        "retry": 1,
        "catch_all": False,
    },
]
REPORT = {
    "arrivals": {"bucket": "hour", "bursts": [BURST]},
    "pending": {
        "without_dlh": [{"dlh_problem": "bad_strucid", "count": 7}],
        "age": [{"age": "1-7 days", "count": 3}, {"age": "> 7 days", "count": 0}],
    },
    "rules": RULES,
    "run_info": {"rules_file": "my.rules"},
    "run": {
        "decisions": 50,
        "ignored_by_reason": [{"ignore_reason": "no_match", "count": 9}],
        "by_rule": [
            {"rule_line": 3, "action": "RETRY", "count": 41},
            {"rule_line": None, "action": "IGNORE", "count": 9},
        ],
        "retry_rules": [
            {
                "rule_line": 3,
                "attempts": 41,
                "delivered": 0,
                "failed": 41,
                "main_reason": 2053,
                "main_reason_name": "MQRC_Q_FULL",
            }
        ],
        "breakers": [
            {
                "target_qmgr": "ORDQM01",
                "target_q": "ORDERS.IN",
                "deferred": 30,
                "error_text": "circuit breaker open for ORDERS.IN after 5 consecutive transient failures",
            }
        ],
    },
}


def test_every_finding_with_its_evidence_most_urgent_first():
    items = advise(REPORT)
    assert [i["code"] for i in items] == [
        "queue_full",
        "no_dlh_stays",
        "retry_always_fails",
        "breaker_opened",
        "no_catch_all",
        "rule_never_matched",
    ]
    full = items[0]
    assert full["title"] == (
        "ORDERS.IN on ORDQM01 was full for about 4 hours (2026-10-09T10:00:00Z to "
        "2026-10-09T14:00:00Z): 2300 messages dead-lettered with MQRC_Q_FULL"
    )
    assert "MAXDEPTH" in full["action"] and "IPPROCS" in full["action"]
    assert full["evidence"]["messages"] == 2400 and full["evidence"]["normal_per_hour"] == 50.0
    assert full["evidence"]["origin_qmgrs"] == [{"qmgr": "CSQ1", "count": 1500}]
    assert items[1]["evidence"] == {"messages": 7, "by_problem": [{"dlh_problem": "bad_strucid", "count": 7}]}
    assert items[2]["evidence"]["rule"] == RULES[0]["text"] and items[2]["evidence"]["failed"] == 41
    assert items[3]["title"].startswith("The circuit breaker opened for ORDERS.IN on ORDQM01: 30 puts deferred")
    assert items[4]["evidence"]["no_match_this_run"] == 9
    assert items[5]["evidence"] == {"line": 5, "rule": RULES[1]["text"], "decisions_this_run": 50}
    assert {i["severity"] for i in items} == {"act", "check", "info"}


def test_a_burst_of_unknown_queues_points_at_definitions_and_others_are_checked():
    unknown = {**BURST, "reasons": [{"reason": "MQRC_UNKNOWN_OBJECT_NAME", "count": 2000}]}
    other = {**BURST, "reasons": [{"reason": "MQRC_NOT_AUTHORIZED", "count": 2000}]}
    items = advise({"arrivals": {"bucket": "hour", "bursts": [unknown, other]}})
    assert [(i["code"], i["severity"]) for i in items] == [("unknown_destination_burst", "act"), ("burst", "check")]
    assert "mostly from CSQ1, for ORDQM01/ORDERS.IN" in items[0]["title"]


def test_a_quiet_warehouse_needs_nothing_and_a_catch_all_table_is_not_flagged():
    assert advise({}) == []
    catch_all = [
        *RULES,
        {
            "line": 9,
            "index": 2,
            "text": "ACTION(FWD) FWDQ(HOLD)",
            "action": "FWD",
            "target": "HOLD",
            "retry": 1,
            "catch_all": True,
        },
    ]
    run = {
        **REPORT["run"],
        "retry_rules": [],
        "breakers": [],
        "by_rule": [{"rule_line": n, "action": "X", "count": 1} for n in (3, 5, 9)],
    }
    assert advise({"rules": catch_all, "run": run}) == []


def test_held_groups_and_lifetimes_not_counted_down_are_named():
    reason = "group 414D51 (2 messages here) incomplete: MsgSeqNumber 3 of 1-3 not landed; none of it is put"
    items = advise({"run": {"held_units": [{"reason": reason, "messages": 2}]}, "pending": {"expiry_unknown": 7}})
    assert [(i["code"], i["severity"]) for i in items] == [("units_held", "check"), ("expiry_unknown", "info")]
    assert items[0]["evidence"] == {"units": [{"reason": reason, "messages": 2}]}
    assert items[0]["title"] == "1 message group(s) or segmented message(s) held: none of each was put"
    assert items[1]["title"].startswith("7 pending messages with an Expiry were landed without")
