"""Log output: human-readable lines (default) or one JSON object per line.

JSON lines are for log shippers (Splunk, ELK, Datadog, Databricks log delivery): each line
has ``ts`` (UTC, ISO 8601), ``level``, ``logger``, ``message`` and any structured fields the
caller passed with ``extra=`` (``event``, ``run_id``, ``stage``, ``duration_s``, counts ...).

Precedence, lowest first: the configuration file's ``[log]`` section, then the environment
(``DLQ_PIPELINE_LOG_FORMAT``, ``DLQ_PIPELINE_LOG_LEVEL``), then the command line
(``--log-format``, ``-v``). Only dlq-pipeline's own Python logging is affected; Spark's JVM
log (log4j2) has its own configuration (docs/operations.md).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sys
from typing import Any

FORMATS = ("text", "json")
LEVELS = ("debug", "info", "warning", "error")
FORMAT_ENV = "DLQ_PIPELINE_LOG_FORMAT"
LEVEL_ENV = "DLQ_PIPELINE_LOG_LEVEL"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}
# Loggers that are chatty at INFO/DEBUG and say nothing an operator needs.
_QUIET = ("py4j", "py4j.clientserver", "py4j.java_gateway")

# Which of format/level were chosen by something stronger than the configuration file,
# and what is installed now.
_explicit: dict[str, str] = {}
_current: dict[str, str] = {"format": "text", "level": "warning"}


def record_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The JSON object for one record (pure)."""
    doc: dict[str, Any] = {
        "ts": dt.datetime.fromtimestamp(record.created, dt.UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z"),
        "level": record.levelname.lower(),
        "logger": record.name,
        "message": record.getMessage(),
    }
    for key, value in vars(record).items():
        if key not in _STANDARD and not key.startswith("_"):
            doc[key] = value
    if record.exc_info:
        doc["exc"] = logging.Formatter().formatException(record.exc_info)
    return doc


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(record_fields(record), default=str, sort_keys=False)


class _Handler(logging.StreamHandler):
    """Marks the handler this module installed, so setup can replace it."""


def _level_number(level: str) -> int:
    if level.lower() not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}, not {level!r}")
    return getattr(logging, level.upper())


def setup(fmt: str = "text", level: str = "warning", *, stream=None) -> None:
    """(Re)install dlq-pipeline's log handler on the root logger."""
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(handler)
    handler = _Handler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root.addHandler(handler)
    root.setLevel(_level_number(level))
    for name in _QUIET:
        logging.getLogger(name).setLevel(logging.WARNING)
    _current.update(format=fmt, level=level.lower())


def setup_from_env(*, fmt: str | None = None, level: str | None = None) -> None:
    """Set up logging from explicit choices (command line) over the environment; remember them."""
    _explicit.clear()
    fmt = fmt or os.environ.get(FORMAT_ENV) or None
    level = level or os.environ.get(LEVEL_ENV) or None
    if fmt:
        _explicit["format"] = fmt.lower()
    if level:
        _explicit["level"] = level.lower()
    chosen = _explicit.get("format", "text")
    setup(chosen, _explicit.get("level", default_level(chosen)))


def default_level(fmt: str) -> str:
    """JSON lines are for log shippers, which want the stage events (info); people at a
    terminal get progress lines instead, and only warnings from the log."""
    return "info" if fmt == "json" else "warning"


def json_lines() -> bool:
    """Whether log lines are JSON now: progress is then carried by the log's stage events,
    not printed as plain lines between them."""
    return _current["format"] == "json"


def apply_settings(settings) -> None:
    """Apply the configuration file's ``[log]`` settings (`dlq_pipeline.config.settings.LogSettings`)
    where nothing stronger chose already."""
    fmt = _explicit.get("format", settings.format)
    level = _explicit.get("level", settings.level or default_level(fmt))
    if (fmt, level) != (_current["format"], _current["level"]):
        setup(fmt, level)
