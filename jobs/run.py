"""spark-submit entry script: `dlq-pipeline run` with the same options.

    spark-submit [spark options] jobs/run.py --config dlq-pipeline.toml --profile cluster [options]

Options and exit statuses: `dlq-pipeline run --help`; packaging: docs/deploy.md.
"""

from dlq_pipeline.jobs import main

if __name__ == "__main__":
    main("run")
