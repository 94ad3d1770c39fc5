"""JSON log lines and run metrics (summary object and Prometheus text), without Spark."""

from __future__ import annotations

import io
import json
import logging

import pytest

from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import LogSettings
from dlq_pipeline.report.metrics import prometheus_text, run_metrics, write_textfile
from dlq_pipeline.runtime import logs

SUMMARY = {
    "run_id": "20260301T120000Z-abc123",
    "target": "mq:QM1",
    "started_at": "2026-03-01T12:00:00Z",
    "finished_at": "2026-03-01T12:00:20Z",
    "inputs": ["/d/dlq.dmp"],
    "files": 2,
    "input_files": {
        "read": 2,
        "skipped": 5,
        "deferred": 1,
        "unreadable": 0,
        "bytes_read": 2000,
        "bytes_skipped": 5000,
        "bytes_deferred": 300,
        "bytes_unreadable": 0,
        "backlog_files": 1,
        "backlog_bytes": 300,
    },
    "messages_landed": 90,
    "duplicates_skipped": 10,
    "quarantined": 1,
    "pending": 95,
    "messages_without_dlh": 4,
    "decisions": {"RETRY": 50, "FWD": 30, "IGNORE": 15},
    "ignore_reasons": {"no_dlh": 4, "no_match": 11},
    "outcomes": {"delivered": 70, "failed": 5, "ignored": 15, "deferred": 5},
    "durations": {"ingest": 4.0, "classify": 2.5, "replay": 10.0},
    "exit_status": 3,
}


def test_run_metrics_counts_durations_and_rates():
    assert run_metrics(SUMMARY) == {
        "counts": {
            "files": 2,
            "messages_landed": 90,
            "duplicates_skipped": 10,
            "messages_read": 100,
            "quarantined": 1,
            "pending": 95,
            "messages_without_dlh": 4,
            "attempts": 95,
            "backlog_files": 1,
            "backlog_bytes": 300,
        },
        "decisions": {"RETRY": 50, "FWD": 30, "IGNORE": 15},
        "ignore_reasons": {"no_dlh": 4, "no_match": 11},
        "outcomes": {"delivered": 70, "failed": 5, "ignored": 15, "deferred": 5},
        "input_files": {"read": 2, "skipped": 5, "deferred": 1, "unreadable": 0},
        "input_bytes": {"read": 2000, "skipped": 5000, "deferred": 300, "unreadable": 0},
        "durations_s": {"ingest": 4.0, "classify": 2.5, "replay": 10.0, "total": 20.0},
        "rates_per_s": {"ingest": 25.0, "classify": 38.0, "replay": 9.5},
        "exit_status": 3,
        "finished_at_s": 1772366420.0,
    }


def test_a_stage_that_took_no_time_has_no_rate():
    summary = {**SUMMARY, "durations": {"ingest": 0.0}, "finished_at": ""}
    m = run_metrics(summary)
    assert m["rates_per_s"] == {} and m["finished_at_s"] is None and m["durations_s"]["total"] == 0.0


def test_prometheus_text_is_the_whole_exposition():
    text = prometheus_text({**SUMMARY, "target": 'dir:/x"y'}, labels={"warehouse": "prod"})
    lines = text.splitlines()
    samples = [line for line in lines if not line.startswith("#")]
    assert samples == [
        'dlq_pipeline_last_run_info{run_id="20260301T120000Z-abc123",target="dir:/x\\"y",warehouse="prod"} 1',
        'dlq_pipeline_last_run_exit_status{warehouse="prod"} 3',
        'dlq_pipeline_last_run_finished_timestamp_seconds{warehouse="prod"} 1772366420',
        'dlq_pipeline_last_run_files{warehouse="prod"} 2',
        'dlq_pipeline_last_run_messages_landed{warehouse="prod"} 90',
        'dlq_pipeline_last_run_duplicates_skipped{warehouse="prod"} 10',
        'dlq_pipeline_last_run_messages_read{warehouse="prod"} 100',
        'dlq_pipeline_last_run_quarantined{warehouse="prod"} 1',
        'dlq_pipeline_last_run_pending{warehouse="prod"} 95',
        'dlq_pipeline_last_run_messages_without_dlh{warehouse="prod"} 4',
        'dlq_pipeline_last_run_attempts{warehouse="prod"} 95',
        'dlq_pipeline_last_run_backlog_files{warehouse="prod"} 1',
        'dlq_pipeline_last_run_backlog_bytes{warehouse="prod"} 300',
        'dlq_pipeline_last_run_decisions{action="FWD",warehouse="prod"} 30',
        'dlq_pipeline_last_run_decisions{action="IGNORE",warehouse="prod"} 15',
        'dlq_pipeline_last_run_decisions{action="RETRY",warehouse="prod"} 50',
        'dlq_pipeline_last_run_outcomes{outcome="deferred",warehouse="prod"} 5',
        'dlq_pipeline_last_run_outcomes{outcome="delivered",warehouse="prod"} 70',
        'dlq_pipeline_last_run_outcomes{outcome="failed",warehouse="prod"} 5',
        'dlq_pipeline_last_run_outcomes{outcome="ignored",warehouse="prod"} 15',
        'dlq_pipeline_last_run_ignore_reasons{reason="no_dlh",warehouse="prod"} 4',
        'dlq_pipeline_last_run_ignore_reasons{reason="no_match",warehouse="prod"} 11',
        'dlq_pipeline_last_run_input_files{state="read",warehouse="prod"} 2',
        'dlq_pipeline_last_run_input_files{state="skipped",warehouse="prod"} 5',
        'dlq_pipeline_last_run_input_files{state="deferred",warehouse="prod"} 1',
        'dlq_pipeline_last_run_input_files{state="unreadable",warehouse="prod"} 0',
        'dlq_pipeline_last_run_input_bytes{state="read",warehouse="prod"} 2000',
        'dlq_pipeline_last_run_input_bytes{state="skipped",warehouse="prod"} 5000',
        'dlq_pipeline_last_run_input_bytes{state="deferred",warehouse="prod"} 300',
        'dlq_pipeline_last_run_input_bytes{state="unreadable",warehouse="prod"} 0',
        'dlq_pipeline_last_run_stage_duration_seconds{stage="ingest",warehouse="prod"} 4',
        'dlq_pipeline_last_run_stage_duration_seconds{stage="classify",warehouse="prod"} 2.5',
        'dlq_pipeline_last_run_stage_duration_seconds{stage="replay",warehouse="prod"} 10',
        'dlq_pipeline_last_run_stage_duration_seconds{stage="total",warehouse="prod"} 20',
        'dlq_pipeline_last_run_stage_rate_per_second{stage="ingest",warehouse="prod"} 25',
        'dlq_pipeline_last_run_stage_rate_per_second{stage="classify",warehouse="prod"} 38',
        'dlq_pipeline_last_run_stage_rate_per_second{stage="replay",warehouse="prod"} 9.5',
    ]
    # every family has HELP and TYPE right before its samples
    families = [line.split()[2] for line in lines if line.startswith("# TYPE")]
    assert all(
        f"# TYPE {f} gauge" in lines and any(s.startswith(f + "{") or s.startswith(f + " ") for s in samples)
        for f in families
    )
    assert text.endswith("\n")


def test_write_textfile_replaces_atomically(tmp_path):
    target = tmp_path / "collector" / "dlq.prom"
    write_textfile(str(target), "a 1\n")
    write_textfile(str(target), "a 2\n")
    assert target.read_text() == "a 2\n" and [p.name for p in target.parent.iterdir()] == ["dlq.prom"]


def test_json_log_lines_carry_structured_fields():
    stream = io.StringIO()
    logs.setup("json", "info", stream=stream)
    try:
        log = logging.getLogger("dlq_pipeline.test")
        log.info("stage %s done", "ingest", extra={"event": "stage_finished", "stage": "ingest", "duration_s": 1.5})
        log.debug("not shown")
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed")
    finally:
        logs.setup("text", "warning")
    first, second = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert first.pop("ts").endswith("Z")
    assert first == {
        "level": "info",
        "logger": "dlq_pipeline.test",
        "message": "stage ingest done",
        "event": "stage_finished",
        "stage": "ingest",
        "duration_s": 1.5,
    }
    assert second["message"] == "failed" and second["exc"].splitlines()[-1] == "ValueError: boom"


def test_log_precedence_file_then_environment_then_command_line(monkeypatch, tmp_path):
    conf = tmp_path / "c.toml"
    conf.write_text('[log]\nformat = "json"\nlevel = "info"\n')
    config = load_config(conf)
    try:
        monkeypatch.delenv(logs.FORMAT_ENV, raising=False)
        monkeypatch.delenv(logs.LEVEL_ENV, raising=False)
        logs.setup_from_env()
        logs.apply_settings(LogSettings.from_config(config))
        assert logs._current == {"format": "json", "level": "info"}
        monkeypatch.setenv(logs.FORMAT_ENV, "text")
        logs.setup_from_env()
        logs.apply_settings(LogSettings.from_config(config))
        assert logs._current == {"format": "text", "level": "info"}
        logs.setup_from_env(level="debug")
        logs.apply_settings(LogSettings.from_config(config))
        assert logs._current == {"format": "text", "level": "debug"}
        assert logging.getLogger("py4j").level == logging.WARNING
    finally:
        logs.setup("text", "warning")


def test_json_lines_carry_the_stage_events_at_the_default_level(monkeypatch):
    monkeypatch.delenv(logs.FORMAT_ENV, raising=False)
    monkeypatch.delenv(logs.LEVEL_ENV, raising=False)
    try:
        for fmt, level in (("json", "info"), ("text", "warning")):
            logs.setup_from_env(fmt=fmt)
            logs.apply_settings(LogSettings.from_config(load_config(None)))  # no level in the configuration
            assert (logs._current, logs.json_lines()) == ({"format": fmt, "level": level}, fmt == "json")
    finally:
        logs.setup("text", "warning")


def test_bad_log_settings():
    with pytest.raises(ValueError, match="log format must be one of text, json"):
        logs.setup("xml")
    with pytest.raises(ValueError, match="log level must be one of"):
        logs.setup("text", "loud")
