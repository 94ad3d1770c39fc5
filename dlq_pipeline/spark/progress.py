"""Progress of long Spark actions, for people watching a terminal or a job log.

A dump of gigabytes is read by tasks on executors, so the driver cannot count lines as it
goes. It can see how many of an action's tasks have finished: the action runs under its
own job group and a daemon thread polls Spark's status tracker, reporting each change (at
most every ``interval`` seconds) and always the final count. Where there is no
SparkContext (Spark Connect, Databricks serverless) the action runs without ticks.
"""

from __future__ import annotations

import threading
import uuid
from typing import Callable

from pyspark.sql import SparkSession

Report = Callable[[str], None]


def tasks_line(label: str, done: int, total: int, unit: str) -> str:
    return f"{label}: {done}/{total} {unit} done"


class TaskTicker:
    """``with TaskTicker(spark, report, "ingest", "work items"): df.count()``.

    ``report`` receives lines like ``ingest: 3/12 work items done``. The count is that of
    the first stage run inside the block: put the action that does the heavy reading first
    (for an ingest, one task per work item); later stages of cheap follow-up work (a
    shuffle after the read, a second job) would only blur the figure."""

    def __init__(self, spark: SparkSession, report: Report | None, label: str, unit: str = "tasks",
                 interval: float = 2.0):
        self.report, self.label, self.unit, self.interval = report, label, unit, interval
        self.group = f"dlq-pipeline-{label}-{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last: tuple[int, int] | None = None
        try:
            self.sc = spark.sparkContext if report else None
        except Exception:  # noqa: BLE001 - Spark Connect: no SparkContext, no ticks
            self.sc = None

    def counts(self) -> tuple[int, int]:
        tracker = self.sc.statusTracker()
        stage_ids = []
        for job_id in tracker.getJobIdsForGroup(self.group):
            job = tracker.getJobInfo(job_id)
            stage_ids += list(job.stageIds) if job else []
        stage = tracker.getStageInfo(min(stage_ids)) if stage_ids else None
        return (stage.numCompletedTasks, stage.numTasks) if stage else (0, 0)

    def _tell(self) -> None:
        try:
            done, total = self.counts()
        except Exception:  # noqa: BLE001 - progress must never break the work
            return
        if total and (done, total) != self._last:
            self._last = (done, total)
            self.report(tasks_line(self.label, done, total, self.unit))

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            self._tell()

    def __enter__(self) -> "TaskTicker":
        if self.sc is not None:
            self.sc.setJobGroup(self.group, f"dlq-pipeline {self.label}")
            self._thread = threading.Thread(target=self._poll, name=f"progress-{self.label}", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind, *_):
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self.sc.setLocalProperty("spark.jobGroup.id", None)
        self.sc.setLocalProperty("spark.job.description", None)
        if kind is None:
            self._tell()  # the final count, even when the action beat the first poll
