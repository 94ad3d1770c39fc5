"""Stable exit statuses of every command (the README's table; docs/api.md maps the errors to them)."""

OK = 0  # everything was processed
FAILURE = 1  # the command failed (I/O, Spark, MQ)
USAGE = 2  # bad usage, configuration or rules table: nothing was touched
ATTENTION = 3  # finished, but records were quarantined or messages need attention
