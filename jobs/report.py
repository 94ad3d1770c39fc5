"""spark-submit entry script: `dlq-pipeline report` with the same options.

    spark-submit [spark options] jobs/report.py --config dlq-pipeline.toml --profile cluster [options]

Options and exit statuses: `dlq-pipeline report --help`; packaging: docs/deploy.md.
"""

from dlq_pipeline.jobs import main

if __name__ == "__main__":
    main("report")
