"""dlq-pipeline: reprocess IBM MQ dead-letter queues at scale with PySpark."""

__version__ = "0.1.0"
