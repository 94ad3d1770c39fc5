"""The main job: ingest -> decode -> classify -> replay -> report, as one run.

Each stage is a function a notebook can call on its own; this module only sequences them,
times them and produces the run summary that `run --json` prints and that is written next
to the tables (WAREHOUSE/_runs/<run_id>.json).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from pyspark.sql import SparkSession

from dlq_pipeline import exitcodes
from dlq_pipeline.classify.spark import decide_pending
from dlq_pipeline.config.settings import RunSettings
from dlq_pipeline.report.metrics import prometheus_text, run_metrics, write_textfile
from dlq_pipeline.rules.model import RulesError, RulesTable
from dlq_pipeline.rules.printer import rules_listing
from dlq_pipeline.runtime.clock import as_utc, iso_z, utc_now
from dlq_pipeline.runtime.progress import Progress, Report, as_progress
from dlq_pipeline.runtime.progress import stage as stage_events
from dlq_pipeline.runtime.testhooks import crash_point
from dlq_pipeline.tables import ATTENTION_OUTCOMES, IGNORE_REASONS
from dlq_pipeline.tables.identity import new_run_id
from dlq_pipeline.warehouse.lease import writer_lease
from dlq_pipeline.warehouse.locks import writer_lock
from dlq_pipeline.warehouse.storage import open_storage

log = logging.getLogger(__name__)

# Outcomes and ignore reasons that mean a person should look (exit status 3).
ATTENTION_IGNORES = IGNORE_REASONS  # each implicit IGNORE needs a look


@dataclass
class RunSummary:
    run_id: str
    target: str
    started_at: str
    finished_at: str = ""
    inputs: list[str] = field(default_factory=list)
    files: int = 0
    # the input files read, skipped (landed and unchanged), deferred and unreadable, with their
    # bytes and the backlog left (`dlq_pipeline.ingest.spark.InputCounts`)
    input_files: dict = field(default_factory=dict)
    messages_landed: int = 0
    duplicates_skipped: int = 0
    quarantined: int = 0
    pending: int = 0
    messages_without_dlh: int = 0
    decisions: dict[str, int] = field(default_factory=dict)
    ignore_reasons: dict[str, int] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    exit_status: int = exitcodes.OK
    source: str = ""  # live DLQ drained and settled by this run (mq:/sim:), "" for none
    drain: dict = field(default_factory=dict)
    settle: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    rules_file: str = ""  # the rules table the run decided with, and its rules (the report shows them)
    rules: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def attention_status(summary: RunSummary) -> int:
    needs_look = (
        summary.quarantined
        or summary.input_files.get("unreadable")
        or any(summary.outcomes.get(o) for o in ATTENTION_OUTCOMES)
        or any(summary.ignore_reasons.get(r) for r in ATTENTION_IGNORES)
        or summary.settle.get("mismatched")
    )
    return exitcodes.ATTENTION if needs_look else exitcodes.OK


class _Stages:
    """Times each stage and shows it (``[i/n] name``) and its progress; the stage events go
    to the log (`dlq_pipeline.runtime.progress.stage`)."""

    def __init__(self, summary: RunSummary, total: int, progress: Progress | None):
        self.summary, self.total, self.index = summary, total, 0
        self.progress = progress

    @contextlib.contextmanager
    def __call__(self, name: str):
        self.index += 1
        with stage_events(
            self.progress, name, run_id=self.summary.run_id, header=f"[{self.index}/{self.total}] {name}"
        ) as counts:
            yield
        self.summary.durations[name] = counts["duration_s"]


def run_pipeline(
    spark: SparkSession,
    settings: RunSettings,
    table: RulesTable,
    *,
    inputs: Sequence[str],
    target: str,
    run_id: str | None = None,
    now: dt.datetime | None = None,
    progress: Progress | Report | None = None,
    source: str | None = None,
) -> RunSummary:
    """One whole run with ``settings`` (each stage's, `dlq_pipeline.config.settings.RunSettings`).
    The rules table must be valid (`dlq_pipeline.rules.parser.load_rules`; else `RulesError`
    before anything runs). ``source``
    (``mq:QMGR``/``sim:NAME``; the command line defaults it to ``pipeline.source``): a live DLQ
    drained first and settled last (`dlq_pipeline.live.spark`). Holds the warehouse's writer
    lock (`dlq_pipeline.warehouse.locks`) and, for Delta, its writer lease (`dlq_pipeline.warehouse.lease`)
    throughout: `dlq_pipeline.warehouse.locks.WarehouseLocked` when another process writes it.
    ``progress``: where the stages' progress goes (`dlq_pipeline.runtime.progress`; None: the stage
    events go to the log only)."""
    if not table.ok:
        raise RulesError(table)
    now = as_utc(now) or utc_now()
    run_id = run_id or new_run_id(now)
    # both re-entrant: no-ops under the `run` command
    with (
        writer_lock(settings.storage, command="run", run_id=run_id),
        writer_lease(spark, settings.storage, command="run", run_id=run_id),
    ):
        return _run_pipeline(
            spark,
            settings,
            table,
            inputs=inputs,
            target=target,
            run_id=run_id,
            now=now,
            progress=as_progress(progress),
            source=source,
        )


def _run_pipeline(spark, settings: RunSettings, table, *, inputs, target, run_id, now, progress, source) -> RunSummary:
    from dlq_pipeline.ingest.spark import ingest
    from dlq_pipeline.replay.spark import replay

    summary = RunSummary(
        run_id=run_id,
        target=target,
        started_at=iso_z(now),
        inputs=list(inputs),
        rules_file=table.path or "",
        rules=rules_listing(table),
    )
    stage = _Stages(summary, 6 if source else 4, progress)
    storage = open_storage(spark, settings.storage)
    if source:
        from dlq_pipeline.live.spark import drain_stage

        summary.source = source
        with stage("drain"):
            live, summary.drain = drain_stage(
                spark, storage, settings, table, source=source, run_id=run_id, progress=progress
            )

    with stage("ingest"):
        landed = (
            ingest(spark, storage, list(inputs), run_id=run_id, settings=settings.ingest, progress=progress)
            if inputs
            else None
        )
        if landed is not None:
            summary.files = landed.files
            summary.input_files = asdict(landed.inputs)
            summary.messages_landed = landed.messages_landed
            summary.duplicates_skipped = landed.duplicates_skipped
            summary.quarantined = landed.quarantined
    crash_point("after-ingest")

    with stage("classify"):
        decisions, counted = decide_pending(
            spark,
            storage,
            table,
            run_id=run_id,
            now=now,
            retry_interval=settings.classify.retry_interval,
            progress=progress,
        )
        summary.pending, summary.decisions, summary.ignore_reasons = (
            counted.total,
            counted.actions,
            counted.ignore_reasons,
        )
        summary.messages_without_dlh = summary.ignore_reasons.get("no_dlh", 0)
    crash_point("after-classify")

    with stage("replay"):
        try:
            outcomes = replay(
                spark,
                storage,
                decisions,
                target=target,
                settings=settings.replay,
                qmgrs=settings.qmgrs,
                run_id=run_id,
                now=now,
                progress=progress,
                puts_per_queue=counted.puts_per_queue,
                decisions_total=counted.total,
            )
        finally:
            decisions.unpersist()
        summary.outcomes = dict(sorted(Counter(outcomes).items()))
    crash_point("after-replay")

    if source:
        from dlq_pipeline.live.spark import settle_stage

        with stage("settle"):
            summary.settle = settle_stage(
                spark, storage, settings, live, target=target, run_id=run_id, progress=progress
            )

    with stage("summary"):
        summary.finished_at = iso_z(utc_now())
        summary.exit_status = attention_status(summary)
        summary.metrics = run_metrics(summary.as_dict())
        where = storage.write_summary(run_id, summary.as_dict())
        if settings.metrics_textfile:
            write_textfile(settings.metrics_textfile, prometheus_text(summary.as_dict()))
    log.info(
        "run %s finished with status %d",
        run_id,
        summary.exit_status,
        extra={
            "event": "run_finished",
            "run_id": run_id,
            "summary_path": where,
            "exit_status": summary.exit_status,
            "metrics": summary.metrics,
        },
    )
    return summary
