"""spark-submit entry script: `dlq-pipeline ingest` with the same options.

    spark-submit [spark options] jobs/ingest.py --config dlq-pipeline.toml --profile cluster [options]

Options and exit statuses: `dlq-pipeline ingest --help`; packaging: docs/deploy.md.
"""

from dlq_pipeline.jobs import main

if __name__ == "__main__":
    main("ingest")
