"""dlq-pipeline: reprocess IBM MQ dead-letter queues at scale with PySpark.

The names a notebook or a job uses (docs/api.md)::

    from dlq_pipeline import RunSettings, load_config, load_rules, open_warehouse, run_pipeline

    config = load_config("dlq.toml")
    summary = run_pipeline(spark, RunSettings.from_config(config), load_rules("dlq.rules"),
                           inputs=["/data/dlq.dmp"], target="dry-run")
    messages = open_warehouse(spark, config).read("messages")

    dlq_pipeline.register(spark)  # the mqdump, dmpmqmsg and amqsbcg data sources
    decided = spark.read.format("mqdump").load("/data/dlq.dmp").transform(decide(load_rules("dlq.rules")))

Importing the package starts nothing, registers nothing and imports no pyspark: each name is
loaded when first used. Every error the product raises on purpose is a `DlqPipelineError` carrying the exit
status the command line would give it (`UsageError`: exit 2, nothing was touched); every error class is
importable from here and from `dlq_pipeline.errors`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlq_pipeline import errors

__version__ = "0.1.0"

# name -> the module it is loaded from: the one that defines it, or for an error class
# dlq_pipeline.errors, which names every one
_PUBLIC = {
    "Config": "dlq_pipeline.config",
    "load_config": "dlq_pipeline.config",
    "RunSettings": "dlq_pipeline.config.settings",
    "RulesTable": "dlq_pipeline.rules.model",
    "load_rules": "dlq_pipeline.rules.parser",
    "RunSummary": "dlq_pipeline.pipeline",
    "run_pipeline": "dlq_pipeline.pipeline",
    "Storage": "dlq_pipeline.warehouse.storage",
    "open_warehouse": "dlq_pipeline.warehouse.storage",
    "register": "dlq_pipeline.dumps.spark",
    "decode_dlh": "dlq_pipeline.mq.spark",
    "reason_name": "dlq_pipeline.mq.spark",
    "decide": "dlq_pipeline.rules.spark",
    "stream_landing": "dlq_pipeline.ingest.spark",
    **dict.fromkeys(errors.__all__, "dlq_pipeline.errors"),
}

__all__ = [
    "Config",
    "RulesTable",
    "RunSettings",
    "RunSummary",
    "Storage",
    "__version__",
    "decide",
    "decode_dlh",
    "load_config",
    "load_rules",
    "open_warehouse",
    "reason_name",
    "register",
    "run_pipeline",
    "stream_landing",
]
__all__ += errors.__all__  # every error class (dlq_pipeline.errors)

if TYPE_CHECKING:
    from dlq_pipeline.config import Config, load_config
    from dlq_pipeline.config.settings import RunSettings
    from dlq_pipeline.dumps.spark import register
    from dlq_pipeline.errors import *  # noqa: F403 - every name of errors.__all__
    from dlq_pipeline.ingest.spark import stream_landing
    from dlq_pipeline.mq.spark import decode_dlh, reason_name
    from dlq_pipeline.pipeline import RunSummary, run_pipeline
    from dlq_pipeline.rules.model import RulesTable
    from dlq_pipeline.rules.parser import load_rules
    from dlq_pipeline.rules.spark import decide
    from dlq_pipeline.warehouse.storage import Storage, open_warehouse


def __getattr__(name: str) -> Any:
    return errors.lazy_attribute(globals(), _PUBLIC, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
