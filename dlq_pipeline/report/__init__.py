"""The report: what a run decided and delivered, as JSON, HTML and metrics."""
