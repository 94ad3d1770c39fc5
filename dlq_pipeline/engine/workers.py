"""Python workers started while the driver plans.

A local session's first Python task waits for PySpark's daemon to start and for each worker
to import pyarrow, pandas (pyarrow imports it on its first conversion) and this package:
about a second on a cold machine, which a 1,000-message run paid inside classify's write
(docs/performance.md, "Python workers started while classify plans"). Classify's driver-side work (building the
rules' plan, analysing it, planning the write) takes about as long and leaves the task slots
idle, so `start_python_workers` runs a job of one trivial Python task per slot in a
background thread at that point: the write's tasks find the workers up (PySpark reuses them,
``spark.python.worker.reuse``) and the JVM's Arrow path loaded.

Local masters only, once per SparkContext: on a cluster the workers live on executors this
process cannot see, and over Spark Connect there is no SparkContext.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import weakref
from collections.abc import Iterator
from concurrent.futures import Future
from typing import cast

from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

# pandas: what pyarrow imports on its first conversion of Python values; then classify's UDF
# and replay's tasks
TASK_MODULES = ("pandas", "dlq_pipeline.rules.spark", "dlq_pipeline.replay.spark")
MAX_WORKERS = 4  # replay's default connections: more workers than that would not all be used by a run

_started: weakref.WeakSet = weakref.WeakSet()  # SparkContexts whose workers were started
_lock = threading.Lock()


def _import_what_tasks_use(batches: Iterator) -> Iterator:
    """The warm-up task: the modules classify's UDF and replay's tasks import; its row is
    the worker's process id."""
    import pyarrow as pa

    for name in TASK_MODULES:
        importlib.import_module(name)
    for batch in batches:
        yield pa.RecordBatch.from_pydict(
            {"pid": [os.getpid()] * batch.num_rows}, schema=pa.schema([("pid", pa.int64())])
        )


def start_python_workers(spark: SparkSession) -> Future | None:
    """Start this local session's Python workers in the background (module doc). Returns
    a future of the workers' process ids (empty when the job failed), or None when there is
    nothing to start here. Never raises: a failed warm-up only leaves the first Python task
    to start its own workers."""
    try:
        sc = spark.sparkContext
        if not cast(str, sc.master).startswith("local"):  # a started context has its master
            return None
    except Exception:  # noqa: BLE001 - Spark Connect: no SparkContext
        return None
    with _lock:
        if sc in _started:
            return None
        _started.add(sc)
    workers = max(1, min(sc.defaultParallelism, MAX_WORKERS))
    started: Future = Future()

    def run() -> None:
        pids: list[int] = []
        try:
            sc.setLocalProperty("spark.job.description", "dlq-pipeline: start the Python workers")
            rows = spark.range(workers, numPartitions=workers).mapInArrow(_import_what_tasks_use, "pid long").collect()
            pids = sorted({int(r["pid"]) for r in rows})
        except Exception as err:  # noqa: BLE001 - a stopped session, a worker that failed: the tasks start their own
            log.debug("starting the Python workers did not complete: %s", err)
        started.set_result(pids)

    threading.Thread(target=run, name="dlq-pipeline-python-workers", daemon=True).start()
    return started
