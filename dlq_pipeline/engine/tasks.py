"""Task counts of long Spark actions, fed to the progress display (`dlq_pipeline.runtime.progress`).

A dump of gigabytes is read by tasks on executors, so the driver cannot count lines as it
goes. It can see how many of an action's tasks have finished: the action runs under its
own job group and a daemon thread polls Spark's status tracker, reporting each change and
always the final count. Which stage is counted is the caller's choice: ``first`` (the read
of an ingest: one task per work item; the cheap aggregation after it would only blur the
figure) or ``last`` (the latest stage that has started: classify's write, replay's puts,
one task per partition). Where there is no SparkContext (Spark Connect, Databricks
serverless) there are no counts: a line when the step starts and one when it ends.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import cast

from pyspark import SparkContext
from pyspark.sql import SparkSession

from dlq_pipeline.runtime.progress import Progress, Report, as_progress

__all__ = ["Report", "TaskTicker"]

STAGES = ("first", "last")


class TaskTicker:
    """``with TaskTicker(spark, progress, "ingest", "work items"): df.count()``.

    ``report`` is a `dlq_pipeline.runtime.progress.Progress` (a bar, lines or log events) or a
    callable that takes lines like ``ingest: 3/12 work items done``; None reports nothing.
    ``stage``: which stage of the jobs run inside the block is counted (module doc)."""

    def __init__(
        self,
        spark: SparkSession,
        report: Progress | Report | None,
        label: str,
        unit: str = "tasks",
        interval: float | None = None,
        *,
        stage: str = "first",
    ):
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {', '.join(STAGES)}, not {stage!r}")
        self.progress = as_progress(report)
        self.label, self.unit, self.stage = label, unit, stage
        self.interval = interval if interval is not None else (self.progress.interval if self.progress else 2.0)
        self.group = f"dlq-pipeline-{label}-{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0
        try:
            self.sc = spark.sparkContext if self.progress else None
        except Exception:  # noqa: BLE001 - Spark Connect: no SparkContext, no ticks
            self.sc = None

    def counts(self) -> tuple[int, int]:
        """(tasks done, tasks) of the counted stage; (0, 0) before it starts."""
        tracker = cast(SparkContext, self.sc).statusTracker()  # asked only where there is a SparkContext
        stages = []
        job_ids = sorted(tracker.getJobIdsForGroup(self.group))
        if self.stage == "last":  # adaptive execution runs each shuffle as a job of its own: the result is the latest
            job_ids = job_ids[-1:]
        for job_id in job_ids:
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job else []:
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    stages.append(info)
        if self.stage == "first":
            stage = min(stages, key=lambda s: s.stageId, default=None)
        else:  # a stage that never started (skipped: its output was there) has nothing to count
            begun = [s for s in stages if s.numCompletedTasks or s.numActiveTasks]
            stage = max(begun, key=lambda s: s.stageId, default=None)
        return (stage.numCompletedTasks, stage.numTasks) if stage else (0, 0)

    def _tell(self, final: bool = False) -> None:
        try:
            done, total = self.counts()
        except Exception:  # noqa: BLE001 - progress must never break the work
            return
        if total:
            # told only by the poller, which runs only with a progress (and a SparkContext)
            cast(Progress, self.progress).count(self.label, done, total, self.unit, final=final)

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            self._tell()

    def __enter__(self) -> TaskTicker:
        self._started = time.monotonic()
        if self.sc is not None:
            self.sc.setJobGroup(self.group, f"dlq-pipeline {self.label}")
            self._thread = threading.Thread(target=self._poll, name=f"progress-{self.label}", daemon=True)
            self._thread.start()
        elif self.progress is not None:
            self.progress(f"{self.label}: running (no task counts without a SparkContext)")
        return self

    def __exit__(self, kind, *_):
        if self._thread is None:
            if self.progress is not None and kind is None:
                self.progress(f"{self.label}: done in {time.monotonic() - self._started:.1f} s")
            return
        sc, progress = cast(SparkContext, self.sc), cast(Progress, self.progress)  # the poller ran: both are set
        self._stop.set()
        self._thread.join()
        # None removes a local property (pyspark's docstring says so; its type hint says str)
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]
        if kind is None:
            self._tell(final=True)  # the final count, even when the action beat the first poll
        progress.end()
