"""Messages large enough that the heap, not the row count, decides how Spark may carry them.

MQ allows 100 MB messages; a task that reads, shuffles, sorts or writes one holds several
copies of it at once, and a 2 GB heap runs two tasks (docs/performance.md, "Large messages in fewer tasks and
in pieces").
Ingest writes a landing with such messages in fewer tasks and one row group each; replay
moves their data in pieces. Both ask here what "large" is and how many tasks fit.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from dlq_pipeline.engine.session import tasks_that_fit

# A message this large changes how ingest caches and writes, and lets replay look for it.
LARGE_MESSAGE_BYTES = 16 * 1024 * 1024
# What a task that writes or shuffles a message holds of it at once, in multiples of its size:
# the cached or scanned row, projections whose buffers grow by doubling, Parquet's page and
# row group (100 MB messages in a 2 GB heap, docs/performance.md "Large messages in fewer
# tasks and in pieces").
LARGE_MESSAGE_TASK_COPIES = 6


def large_message_tasks(spark: SparkSession, largest: int) -> int | None:
    """How many tasks may carry messages as large as ``largest`` at once, where fewer than
    Spark would run (`session.tasks_that_fit`); None for smaller messages or when all fit."""
    if largest < LARGE_MESSAGE_BYTES:
        return None
    return tasks_that_fit(spark, LARGE_MESSAGE_TASK_COPIES * largest)
