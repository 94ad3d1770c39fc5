"""What a long stage tells the person or the log watching it (no Spark here).

One decision, made once per command (`display_mode`), picks one of three displays:

- ``bar``: stderr is a terminal. Each counted step is one tqdm bar, a line redrawn in place
  (``ingest [#######.......] 5/12 work items  41% 00:12<00:17``: elapsed and left), cut to
  the terminal's width; notes print above it. Plain characters and carriage returns only, so
  a dumb terminal shows it too.
- ``lines``: anything else (a pipe, a file, a scheduler's job log). Plain lines, a count at
  most once per ``interval`` seconds per step (and always the last one).
- ``events``: log lines are JSON (``--log-format json``). Nothing is printed: each note and
  count is a log record of the logger ``dlq_pipeline.runtime.progress`` (``event`` ``progress`` or
  ``stage_progress`` with ``stage``, ``done``, ``total``, ``unit``), so stderr carries JSON
  objects only, JVM lines included (`dlq_pipeline.engine.session` logs them).

Progress always goes to stderr, also under ``--json``: stdout carries the result only.
`stage` adds the ``stage_started``/``stage_finished`` log events every long stage emits
(shown by default with JSON logs, with ``-v`` otherwise).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator

from tqdm import tqdm

log = logging.getLogger(__name__)

MODES = ("bar", "lines", "events")
# tqdm's rendering of a step with a total (a bar 30 characters wide), and of one without (a
# count alone, as `count_line`)
BAR_FORMAT = "{desc} [{bar:30}] {n_fmt}/{total_fmt} {unit} {percentage:3.0f}% {elapsed}<{remaining}"
COUNT_FORMAT = "{desc}: {n_fmt} {unit}"

# What a library caller may pass as ``progress``: a `Progress`, or any callable taking a line
# (``print``, ``list.append``), which then gets plain lines.
Report = Callable[[str], None]


def display_mode(stream) -> str:
    """``events`` when log lines are JSON, else ``bar`` on a terminal, else ``lines``."""
    from dlq_pipeline.runtime import logs

    if logs.json_lines():
        return "events"
    try:
        return "bar" if stream.isatty() else "lines"
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return "lines"


def count_line(label: str, done: int, total: int | None, unit: str) -> str:
    """``ingest: 3/12 work items done``; without a total ``drain: 1200 messages read`` (pure)."""
    return f"{label}: {done}/{total} {unit} done" if total else f"{label}: {done} {unit}"


class Progress:
    """Where a command's progress goes: ``stream`` (default: stderr, looked up now) in
    ``mode`` (default: `display_mode`). ``sink``: a callable that takes each line instead
    (``lines`` mode). Safe to call from a poller thread and the main thread at once."""

    def __init__(
        self,
        stream=None,
        mode: str | None = None,
        *,
        sink: Report | None = None,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.stream = stream if stream is not None else sys.stderr
        self.sink = sink
        self.mode = mode or ("lines" if sink is not None else display_mode(self.stream))
        if self.mode not in MODES:
            raise ValueError(f"progress mode must be one of {', '.join(MODES)}, not {mode!r}")
        # how often a count may change what is shown; a bar can move more often than a log line
        self.interval = interval if interval is not None else (0.5 if self.mode == "bar" else 2.0)
        self.clock = clock
        self._lock = threading.Lock()
        self._bar: _Bar | None = None  # the step drawn on the current line
        self._last: dict[str, tuple[float, int, int | None]] = {}
        if self.mode == "bar" and sink is None:  # a log line (a JVM warning, say) must not land on the bar
            for handler in logging.getLogger().handlers:
                if getattr(handler, "stream", None) is self.stream:
                    handler.addFilter(_ClearBar(self))

    # --- what the stages call ---------------------------------------------------------------

    def __call__(self, message: str, *, event: str = "progress", **fields) -> None:
        """A note: a line of its own (above a bar), or a log record with JSON logs."""
        if self.mode == "events":
            log.info(message, extra={"event": event, **fields})
            return
        with self._lock:
            self._clear()
            self._write(message + "\n")
            if self._bar is not None:  # the bar goes on below the note
                self._bar.refresh()

    def show(self, message: str) -> None:
        """A line for people only (nothing with JSON logs: a log event says it there)."""
        if self.mode != "events":
            self(message)

    def count(self, label: str, done: int, total: int | None, unit: str, *, final: bool = False) -> None:
        """``done`` of ``total`` (None: not known) ``unit`` of step ``label``. A change shows
        at most once per ``interval``, except done == total and the ``final`` count (which
        also ends a bar's line)."""
        complete = bool(total and done >= total)
        with self._lock:
            now = self.clock()
            last = self._last.get(label)
            if last is not None and last[1:] == (done, total):
                if final:  # shown already: only close its line
                    self._close()
                return
            if last is not None and not (final or complete) and now - last[0] < self.interval:
                return
            self._last[label] = (now, done, total)
            if self.mode == "events":
                log.info(
                    count_line(label, done, total, unit),
                    extra={"event": "stage_progress", "stage": label, "done": done, "total": total, "unit": unit},
                )
            elif self.mode == "lines":
                self._write(count_line(label, done, total, unit) + "\n")
            else:
                self._draw(label, done, total, unit)
                if final:  # the step's last word: one line per step, whatever stages it ran
                    self._close()

    def clear(self) -> None:
        """Blank the bar's line, so that what is written next starts at its beginning."""
        with self._lock:
            self._clear()

    def end(self) -> None:
        """Close a bar left open (a step that stopped early), so the next line starts clean."""
        with self._lock:
            self._close()

    # --- output -------------------------------------------------------------------------------

    def _draw(self, label: str, done: int, total: int | None, unit: str) -> None:
        """Redraw the current line with step ``label``; another step's bar stays as it was
        last drawn, on a line of its own."""
        total = total or None
        if self._bar is not None and self._bar.desc != label:
            self._close()
        elif self._bar is not None and (self._bar.total, self._bar.unit) != (total, unit):
            self._bar.leave = False  # the step's next stage: its own rate and time left, on the same line
            self._close()
        if self._bar is None:
            fmt = BAR_FORMAT if total else COUNT_FORMAT
            self._bar = _Bar(desc=label, total=total, initial=done, unit=unit, bar_format=fmt, file=self.stream)
        else:
            self._bar.n = done
            self._bar.refresh()

    def _clear(self) -> None:
        if self._bar is not None:
            self._bar.clear()

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _write(self, text: str) -> None:
        if self.sink is not None:
            if text.strip():
                self.sink(text.rstrip("\n"))
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # progress must never break the work (a closed pipe)
            pass


class _Bar(tqdm):
    """One step's line: drawn when told (`Progress` decides how often), in plain characters,
    left on screen when closed. No monitor thread: nothing here outlives the command."""

    monitor_interval = 0

    def __init__(self, **options):
        super().__init__(ascii=".#", mininterval=0, miniters=1, dynamic_ncols=True, leave=True, **options)


class _ClearBar(logging.Filter):
    """On the log handler that writes to the bar's stream: clear the bar before each record."""

    def __init__(self, progress: Progress):
        super().__init__()
        self.progress = progress

    def filter(self, record: logging.LogRecord) -> bool:
        self.progress.clear()
        return True


def as_progress(report: Progress | Report | None) -> Progress | None:
    """A `Progress` for what a caller passed: itself, plain lines into a callable, or None."""
    if report is None or isinstance(report, Progress):
        return report
    return Progress(sink=report)


def to_stderr() -> Progress:
    """The command line's progress: stderr, displayed as `display_mode` decides."""
    return Progress(sys.stderr)


@contextlib.contextmanager
def stage(progress: Progress | None, name: str, *, run_id: str = "", header: str | None = None) -> Iterator[dict]:
    """Emit ``stage_started`` and then ``stage_finished`` (with ``duration_s`` and whatever the
    block put in the yielded dict) or ``stage_failed`` as log events; ``header`` is shown to
    people too (``[2/4] classify``)."""
    ids = {"stage": name, "run_id": run_id}
    log.info("%s started", name, extra={"event": "stage_started", **ids})
    if header and progress is not None:
        progress.show(header)
    counts: dict = {}
    started = time.monotonic()
    try:
        yield counts
    except BaseException:
        seconds = round(time.monotonic() - started, 3)
        log.info("%s failed after %.3f s", name, seconds, extra={"event": "stage_failed", **ids, "duration_s": seconds})
        if progress is not None:
            progress.end()
        raise
    seconds = round(time.monotonic() - started, 3)
    counts["duration_s"] = seconds
    log.info("%s finished in %.3f s", name, seconds, extra={"event": "stage_finished", **ids, **counts})
