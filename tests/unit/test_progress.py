"""The progress display (`dlq_pipeline.runtime.progress`): a bar redrawn in place on a terminal,
plain lines elsewhere, log events with JSON logs; and the Spark-free loops that feed it
(drain and settle of a live queue)."""

from __future__ import annotations

import io
import json
import logging
import re
from types import SimpleNamespace

import pytest

from dlq_pipeline.dumps.generator import generate_messages
from dlq_pipeline.live.loops import drain_queue, live_queue, settle_queue
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.runtime import logs
from dlq_pipeline.runtime.progress import Progress, as_progress, count_line, display_mode, stage


class Terminal(io.StringIO):
    """A stream whose isatty() the test chooses."""

    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def json_log():
    """JSON log lines into a buffer for the test; the default text logging afterwards."""
    buffer = io.StringIO()
    logs.setup("json", "info", stream=buffer)
    yield buffer
    logs.setup("text", "warning")


_TIMES = re.compile(r" \d\d:\d\d<(?:\d\d:\d\d|\?)$")


def frames(text: str) -> list[str]:
    """Each line a terminal was given to show, in order, without the bar's clock (elapsed<left)."""
    return [_TIMES.sub("", frame) for frame in re.split(r"[\r\n]", text) if frame.strip()]


def screen(text: str) -> list[str]:
    """What a terminal shows at the end: carriage returns overwrite, blanked lines vanish."""
    lines, col = [""], 0
    for part in re.split(r"([\r\n])", text):
        if part == "\r":
            col = 0
        elif part == "\n":
            lines.append("")
            col = 0
        else:
            lines[-1] = lines[-1][:col] + part + lines[-1][col + len(part) :]
            col += len(part)
    return [_TIMES.sub("", line.rstrip()) for line in lines if line.strip()]


def bar(label: str, done: int, total: int, unit: str) -> str:
    filled = 30 * done // total
    return f"{label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total} {unit} {100 * done // total:3d}%"


def records(buffer: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in buffer.getvalue().splitlines()]


def test_the_display_follows_the_stream_and_the_log_format(json_log):
    assert display_mode(Terminal(True)) == "events"  # JSON logs: whatever the stream is
    logs.setup("text", "warning")
    assert display_mode(Terminal(True)) == "bar"
    assert display_mode(Terminal(False)) == "lines"
    assert display_mode(object()) == "lines"  # no isatty at all
    assert Progress(Terminal(True)).mode == "bar" and Progress(Terminal(False)).mode == "lines"


def test_a_terminal_gets_one_bar_redrawn_in_place_and_notes_above_it():
    out, clock = Terminal(True), Clock()
    progress = Progress(out, clock=clock)
    progress("ingest: 2 files (1.0 MB of dumps) in 4 work items")
    progress.count("ingest", 1, 4, "work items")
    clock.now += 1
    progress.count("ingest", 2, 4, "work items")
    progress("a note while the bar is drawn")
    clock.now += 1
    progress.count("ingest", 4, 4, "work items")
    progress.count("ingest", 4, 4, "work items", final=True)  # the ticker's last word: nothing new
    assert bar("ingest", 2, 4, "work items") == "ingest [###############...............] 2/4 work items  50%"
    shown = [bar("ingest", n, 4, "work items") for n in (1, 2, 4)]
    assert sorted(set(frames(out.getvalue()))) == sorted(
        {"ingest: 2 files (1.0 MB of dumps) in 4 work items", "a note while the bar is drawn", *shown}
    )
    assert screen(out.getvalue()) == [
        "ingest: 2 files (1.0 MB of dumps) in 4 work items",
        "a note while the bar is drawn",
        shown[2],
    ]
    assert out.getvalue().endswith("\n")


def test_a_log_line_clears_the_bar_first():
    out = Terminal(True)
    logs.setup("text", "warning", stream=out)
    try:
        progress = Progress(out, interval=0)
        progress.count("classify", 1, 2, "tasks")
        logging.getLogger("dlq_pipeline.jvm").error("a JVM error line")
        progress.count("classify", 2, 2, "tasks", final=True)
    finally:
        logs.setup("text", "warning")
    shown = frames(out.getvalue())
    assert shown[0] == bar("classify", 1, 2, "tasks") and shown[-1] == bar("classify", 2, 2, "tasks")
    logged = [frame for frame in shown if "ERROR" in frame]
    assert len(logged) == 1 and logged[0].endswith(" ERROR dlq_pipeline.jvm: a JVM error line")
    assert screen(out.getvalue()) == [logged[0], bar("classify", 2, 2, "tasks")]


def test_a_step_keeps_one_line_across_its_stages():
    out = Terminal(True)
    progress = Progress(out, interval=0)
    for done, total in ((0, 1), (1, 1), (0, 3), (3, 3)):  # a job's two stages
        progress.count("classify", done, total, "tasks")
    progress.count("classify", 3, 3, "tasks", final=True)
    bars = [bar("classify", d, t, "tasks") for d, t in ((0, 1), (1, 1), (0, 3), (3, 3))]
    assert [
        frame
        for i, frame in enumerate(frames(out.getvalue()))
        if frame.strip() and frame not in frames(out.getvalue())[:i]
    ] == bars
    assert screen(out.getvalue()) == [bars[-1]] and out.getvalue().count("\n") == 1


def test_a_bar_left_open_is_closed_and_a_shorter_one_blanks_the_rest():
    out, clock = Terminal(True), Clock()
    progress = Progress(out, clock=clock)
    progress.count("drain", 12345, None, "messages read")
    clock.now += 1
    progress.count("drain", 9, 10, "x")
    progress.end()
    progress.end()  # nothing open any more
    assert frames(out.getvalue())[0] == "drain: 12345 messages read"
    assert screen(out.getvalue()) == [bar("drain", 9, 10, "x")] and out.getvalue().endswith("\n")
    assert out.getvalue().count("\n") == 1


def test_elsewhere_plain_lines_at_most_one_per_interval_and_always_the_last():
    out, clock = Terminal(False), Clock()
    progress = Progress(out, clock=clock)
    assert progress.interval == 2.0
    for done in range(1, 6):  # five changes within one second: the first only
        progress.count("classify", done, 10, "tasks")
        clock.now += 0.2
    clock.now += 2
    progress.count("classify", 7, 10, "tasks")
    progress.count("classify", 7, 10, "tasks")  # unchanged: nothing
    progress.count("classify", 10, 10, "tasks")  # complete: shown at once
    progress.count("classify", 10, 10, "tasks", final=True)
    progress.end()
    assert out.getvalue().splitlines() == [
        "classify: 1/10 tasks done",
        "classify: 7/10 tasks done",
        "classify: 10/10 tasks done",
    ]


def test_a_callable_gets_the_plain_lines():
    lines = []
    progress = as_progress(lines.append)
    assert progress.mode == "lines" and as_progress(progress) is progress and as_progress(None) is None
    progress("replay: starting")
    progress.count("replay", 4, 4, "partitions")
    progress.end()
    assert lines == ["replay: starting", "replay: 4/4 partitions done"]


def test_json_logs_get_events_and_nothing_else(json_log):
    out, clock = Terminal(True), Clock()
    progress = Progress(out, clock=clock)
    assert progress.mode == "events"
    with stage(progress, "replay", run_id="r1", header="[3/4] replay") as counts:
        progress("replay: 4 partitions")
        progress.count("replay", 1, 4, "partitions")
        progress.count("replay", 4, 4, "partitions", final=True)
        counts["outcomes"] = {"delivered": 3}
    assert out.getvalue() == ""
    found = records(json_log)
    assert [r["event"] for r in found] == [
        "stage_started",
        "progress",
        "stage_progress",
        "stage_progress",
        "stage_finished",
    ]
    assert all(r["level"] == "info" for r in found)
    assert found[3]["message"] == count_line("replay", 4, 4, "partitions") == "replay: 4/4 partitions done"
    assert {k: found[3][k] for k in ("stage", "done", "total", "unit")} == {
        "stage": "replay",
        "done": 4,
        "total": 4,
        "unit": "partitions",
    }
    assert found[-1]["run_id"] == "r1" and found[-1]["outcomes"] == {"delivered": 3}
    assert found[-1]["duration_s"] >= 0


def test_a_stage_shows_its_header_to_people_and_logs_its_failure(json_log):
    logs.setup("text", "warning")
    out = Terminal(False)
    progress = Progress(out)
    logs.setup("json", "info", stream=json_log)
    with pytest.raises(RuntimeError):
        with stage(progress, "classify", run_id="r2", header="[2/4] classify"):
            raise RuntimeError("boom")
    assert out.getvalue() == "[2/4] classify\n"
    assert [(r["event"], r["stage"]) for r in records(json_log)] == [
        ("stage_started", "classify"),
        ("stage_failed", "classify"),
    ]


def _queue(tmp_path, count: int):
    """A simulated queue manager QM1 whose DLQ holds ``count`` generated dead letters."""
    qm = SimQueueManager(tmp_path / "_sim" / "QM1.sqlite", "QM1", {})
    c = qm.connect()
    handle = c.open_for_put("DLQ")
    for m in generate_messages(count, seed=7, max_size=2048):
        c.put(handle, m.md, m.data)
    c.commit()
    c.disconnect()
    return live_queue("sim:QM1", warehouse=tmp_path, queue="DLQ")


def test_drain_reports_the_messages_it_reads_or_moves(tmp_path):
    live = _queue(tmp_path, 7)
    lines = []
    result = drain_queue(live, len, warehouse=tmp_path, run_id="d1", progress=lines.append)
    assert result.read == 7 and lines == ["drain: 1 messages", "drain: 7 messages"]

    moved = []
    result = drain_queue(
        live, len, warehouse=tmp_path, run_id="d2", mode="move", batch_size=3, limit=5, progress=moved.append
    )
    assert result.removed == 5 and moved == ["drain: 3/5 messages done", "drain: 5/5 messages done"]


def test_settle_reports_what_it_browsed_then_what_it_settled(tmp_path):
    live = _queue(tmp_path, 6)
    out = Terminal(True)
    result = settle_queue(
        live,
        lambda keys: set(sorted(keys)[:4]),
        warehouse=tmp_path,
        run_id="s1",
        batch_size=2,
        progress=Progress(out, interval=0),
    )
    assert result.removed == 4
    browsed = [f"settle: {n} messages browsed" for n in range(1, 7)]
    settled = [bar("settle", n, 4, "ended messages") for n in (2, 4)]
    assert list(dict.fromkeys(frames(out.getvalue()))) == browsed + settled
    assert screen(out.getvalue()) == [browsed[-1], settled[-1]]


# --- TaskTicker: which stage it counts, and what it says without a SparkContext ------------------


class FakeTracker:
    """Spark's status tracker for one job group: jobs of stages (id, tasks, done, running)."""

    def __init__(self, jobs: list[list[tuple[int, int, int, int]]]):
        self.jobs = jobs

    def getJobIdsForGroup(self, group):
        return list(range(len(self.jobs)))

    def getJobInfo(self, job_id):
        return SimpleNamespace(stageIds=[s[0] for s in self.jobs[job_id]])

    def getStageInfo(self, stage_id):
        for job in self.jobs:
            for sid, tasks, done, running in job:
                if sid == stage_id:
                    return SimpleNamespace(stageId=sid, numTasks=tasks, numCompletedTasks=done, numActiveTasks=running)
        return None


def _ticker(stage: str, jobs):
    from dlq_pipeline.engine.tasks import TaskTicker

    tracker = FakeTracker(jobs)
    spark = SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: tracker))
    return TaskTicker(spark, [].append, "replay", "partitions", stage=stage)


def test_the_ticker_counts_the_first_stage_or_the_latest_that_started():
    # replay's write: the read (stage 3, skipped: its output was there), then the puts (stage 4)
    write = [[(3, 200, 0, 0), (4, 4, 1, 3)]]
    assert _ticker("last", write).counts() == (1, 4)
    assert _ticker("first", write).counts() == (0, 200)
    # before the puts start, nothing that replay does is counted
    assert _ticker("last", [[(3, 200, 0, 0), (4, 4, 0, 0)]]).counts() == (0, 0)
    # a job of its own after it (a Delta commit's follow-up) is the latest once it runs
    assert _ticker("last", write + [[(5, 1, 0, 1)]]).counts() == (0, 1)
    # ingest: the read is the first stage, the aggregation after it is not counted
    assert _ticker("first", [[(7, 12, 5, 2), (8, 1, 0, 0)]]).counts() == (5, 12)


def test_without_a_spark_context_the_ticker_says_when_a_step_starts_and_ends():
    from dlq_pipeline.engine.tasks import TaskTicker

    class Connect:  # Spark Connect: no SparkContext
        @property
        def sparkContext(self):
            raise RuntimeError("[NOT_IMPLEMENTED] sparkContext() is not implemented.")

    lines = []
    with TaskTicker(Connect(), lines.append, "classify", "tasks"):
        pass
    assert lines[0] == "classify: running (no task counts without a SparkContext)"
    assert re.fullmatch(r"classify: done in \d+\.\d s", lines[1]) and len(lines) == 2
    with TaskTicker(Connect(), None, "classify"):  # no progress wanted: nothing at all
        pass
