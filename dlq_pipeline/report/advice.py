"""Advice an operator can act on, computed from a report (pure, no Spark).

`advise(report)` reads the dict `dlq_pipeline.report.spark.build_report` makes and returns
one item per finding, most urgent first. Each item says what was found (``title``), what
to do (``action``) and why we think so (``evidence``: the numbers, times, rule text),
so nobody has to take the advice on trust.

Findings: a queue that was full for hours (a Q_FULL burst), other bursts (a channel or
application sending to queues that do not exist, ...), pending messages without an MQDLH
(no rule can act on them: they stay on the DLQ), a rules table without a catch-all, a rule
that never matched, a RETRY rule whose retries all fail, a queue whose circuit breaker
opened, message groups replay held back because they are not whole, pending messages whose
lifetime cannot be counted down (landed without the time they were recorded), messages that
have been waiting for more than a week, and input files the run could not read or left
because they were still being written.
"""

from __future__ import annotations

SEVERITIES = ("act", "check", "info")  # most urgent first
Q_FULL = "MQRC_Q_FULL"
UNKNOWN_DESTINATION = (
    "MQRC_UNKNOWN_OBJECT_NAME",
    "MQRC_UNKNOWN_REMOTE_Q_MGR",
    "MQRC_UNKNOWN_ALIAS_BASE_Q",
    "MQRC_CLUSTER_RESOLUTION_ERROR",
)


def _item(code: str, severity: str, title: str, action: str, evidence: dict) -> dict:
    return {"code": code, "severity": severity, "title": title, "action": action, "evidence": evidence}


def _split_dest(dest: str) -> tuple[str, str]:
    qmgr, _, queue = dest.partition("/")
    return qmgr, queue


def _burst_advice(burst: dict, bucket: str) -> dict:
    main = burst["reasons"][0] if burst["reasons"] else {"reason": "?", "count": 0}
    share = main["count"] / burst["count"] if burst["count"] else 0
    origin = burst["qmgrs"][0]["qmgr"] if burst["qmgrs"] else "?"
    dest = burst["destinations"][0]["dest"] if burst["destinations"] else ""
    qmgr, queue = _split_dest(dest)
    when = f"{burst['start']} to {burst['end']}"
    evidence = {
        "from": burst["start"],
        "to": burst["end"],
        "hours": burst["hours"],
        "messages": burst["count"],
        "peak_per_" + bucket: burst["peak"],
        "normal_per_" + bucket: burst["baseline_per_bucket"],
        "reasons": burst["reasons"],
        "origin_qmgrs": burst["qmgrs"],
        "destinations": burst["destinations"],
    }
    if main["reason"] == Q_FULL and share >= 0.5 and queue:
        return _item(
            "queue_full",
            "act",
            f"{queue} on {qmgr} was full for about {burst['hours']:g} hours ({when}): "
            f"{main['count']} messages dead-lettered with {Q_FULL}",
            f"Find why {queue} stopped draining: DISPLAY QSTATUS('{queue}') TYPE(QUEUE) IPPROCS CURDEPTH "
            f"LGETDATE LGETTIME on {qmgr} (no getter, IPPROCS 0: restart the consumer). Raise MAXDEPTH "
            f"(ALTER QLOCAL('{queue}') MAXDEPTH(...)) only if the volume is legitimate and the disk has room. "
            "Replay (RETRY) the dead letters once the queue drains, not before: they would fill it again.",
            evidence,
        )
    if main["reason"] in UNKNOWN_DESTINATION and share >= 0.5:
        return _item(
            "unknown_destination_burst",
            "act",
            f"Burst of {main['count']} messages {main['reason']} ({when}), mostly from {origin}"
            + (f", for {dest}" if dest else ""),
            f"A channel or application on {origin} sends to a destination that does not resolve: check the "
            "remote queue, alias and transmission-queue definitions (and cluster membership) it uses, and "
            "what was changed just before the burst. Forward these to a hold queue until it is fixed.",
            evidence,
        )
    return _item(
        "burst",
        "check",
        f"Burst of {burst['count']} dead letters ({when}), mostly {main['reason']} from {origin}",
        "Look at what changed on the queue managers named at that time (deployments, stopped "
        "consumers, channel restarts); the rules decide what happens to these messages.",
        evidence,
    )


def _rules_advice(report: dict) -> list[dict]:
    rules, run = report.get("rules") or [], report.get("run")
    if not rules or not run:
        return []
    items = []
    ignored = {r["ignore_reason"]: r["count"] for r in run.get("ignored_by_reason", [])}
    if not any(r["catch_all"] for r in rules):
        items.append(
            _item(
                "no_catch_all",
                "check",
                f"The rules table has no catch-all rule: {ignored.get('no_match', 0)} messages matched no rule "
                "in this run and stay on the DLQ",
                "End the table with a rule that matches everything, e.g. ACTION(FWD) FWDQ(DLQ.UNMATCHED) "
                "HEADER(YES), so nothing is left behind unseen.",
                {
                    "rules": len(rules),
                    "no_match_this_run": ignored.get("no_match", 0),
                    "rules_file": (report.get("run_info") or {}).get("rules_file"),
                },
            )
        )
    matched = {r["rule_line"] for r in run.get("by_rule", []) if r.get("rule_line") is not None}
    for rule in rules:
        if rule["line"] not in matched and run.get("decisions"):
            items.append(
                _item(
                    "rule_never_matched",
                    "info",
                    f"Rule at line {rule['line']} matched none of the {run['decisions']} messages decided in this run",
                    "Remove it if its case is gone, or check its patterns: a rule above may take its messages "
                    "(dlq-pipeline rules check reports shadowed rules).",
                    {"line": rule["line"], "rule": rule["text"], "decisions_this_run": run["decisions"]},
                )
            )
    texts = {r["line"]: r["text"] for r in rules}
    for retry in run.get("retry_rules", []):
        if retry["attempts"] and not retry["delivered"]:
            items.append(
                _item(
                    "retry_always_fails",
                    "act",
                    f"RETRY rule at line {retry['rule_line']}: all {retry['attempts']} retries in this run failed"
                    + (f", mostly {retry['main_reason_name']}" if retry.get("main_reason_name") else ""),
                    "Retrying cannot succeed while the cause lasts: fix the cause (the reason says which), or "
                    "forward these messages to a hold queue (ACTION(FWD) FWDQ(...)) instead of retrying.",
                    {
                        "line": retry["rule_line"],
                        "rule": texts.get(retry["rule_line"], ""),
                        "attempts": retry["attempts"],
                        "failed": retry["failed"],
                        "main_reason": retry.get("main_reason"),
                        "main_reason_name": retry.get("main_reason_name"),
                    },
                )
            )
    return items


def _inputs_advice(counts: dict) -> list[dict]:
    """The run's input files that it left for a later run: unreadable ones (act) and ones
    still being written (info), each named with why."""
    items = []
    unreadable, deferred = counts.get("unreadable_files") or {}, counts.get("deferred_files") or {}
    if unreadable:
        items.append(
            _item(
                "inputs_unreadable",
                "act",
                f"{len(unreadable)} input files could not be read; nothing of them landed",
                "Fix what each line says (a permission, a file that vanished, a store that failed part way); "
                "the next run reads them.",
                {"files": unreadable},
            )
        )
    if deferred:
        items.append(
            _item(
                "inputs_deferred",
                "info",
                f"{len(deferred)} input files were still being written and wait for the next run",
                "Nothing to do if dumps keep arriving; if a file stays here run after run, whatever writes it "
                "has not finished (write dumps under a hidden name and rename them when complete).",
                {"files": deferred},
            )
        )
    return items


def advise(report: dict) -> list[dict]:
    """The advice for a report, most urgent first (see the module docstring)."""
    items = []
    arrivals = report.get("arrivals") or {}
    for burst in arrivals.get("bursts", []):
        items.append(_burst_advice(burst, arrivals.get("bucket", "hour")))
    pending = report.get("pending") or {}
    without = sum(r["count"] for r in pending.get("without_dlh", []))
    if without:
        items.append(
            _item(
                "no_dlh_stays",
                "act",
                f"{without} pending messages have no dead-letter header: no rule can act on them, they stay "
                "on the DLQ for ever",
                "Look at them (dlq-pipeline inspect on the dump), find the application that puts them on the "
                "DLQ directly, and move them off by hand (dmpmqmsg, then remove) once kept elsewhere.",
                {"messages": without, "by_problem": pending["without_dlh"]},
            )
        )
    items += _inputs_advice((report.get("run_info") or {}).get("input_files") or {})
    items += _rules_advice(report)
    for breaker in (report.get("run") or {}).get("breakers", []):
        items.append(
            _item(
                "breaker_opened",
                "act",
                f"The circuit breaker opened for {breaker['target_q']} on {breaker['target_qmgr']}: "
                f"{breaker['deferred']} puts deferred in this run",
                f"{breaker['target_q']} refused puts again and again; check it (DISPLAY QSTATUS CURDEPTH, "
                "PUT(ENABLED), MAXDEPTH) before the next run retries the deferred messages.",
                {**breaker},
            )
        )
    held = (report.get("run") or {}).get("held_units", [])
    if held:
        items.append(
            _item(
                "units_held",
                "check",
                f"{len(held)} message group(s) or segmented message(s) held: none of each was put",
                "A group is put only whole, every message present and decided alike. Land the missing "
                "messages (a later dump), or change the rules so its messages agree; each reason names the "
                "group and what is missing or which rules disagree. replay.units = members puts each message "
                "on its own, as runmqdlq does.",
                {"units": held},
            )
        )
    unknown = pending.get("expiry_unknown") or 0
    if unknown:
        items.append(
            _item(
                "expiry_unknown",
                "info",
                f"{unknown} pending messages with an Expiry were landed without the time they were recorded",
                "They are replayed with the Expiry they were landed with, not what is left of it: they were "
                "landed before the messages table had recorded_at. Landing them again from their dumps "
                "records it.",
                {"messages": unknown},
            )
        )
    old = next((r["count"] for r in pending.get("age", []) if r["age"] == "> 7 days"), 0)
    if old:
        items.append(
            _item(
                "waiting_long",
                "info",
                f"{old} pending messages reached the DLQ more than 7 days ago",
                "Decide what they need (the rules leave them): forward to a hold queue, or discard what has "
                "no value any more.",
                {"messages": old, "age": pending["age"]},
            )
        )
    return sorted(items, key=lambda i: SEVERITIES.index(i["severity"]))
