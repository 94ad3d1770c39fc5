"""spark-submit entry script: `dlq-pipeline settle` with the same options.

    spark-submit [spark options] jobs/settle.py --config dlq-pipeline.toml --profile cluster [options]

Options and exit statuses: `dlq-pipeline settle --help`; packaging: docs/deploy.md.
"""

from dlq_pipeline.jobs import main

if __name__ == "__main__":
    main("settle")
