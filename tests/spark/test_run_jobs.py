"""The number of Spark jobs a small `run` schedules, per stage (the fixed cost of a run).

Each job costs a round of scheduling, tasks and, for Python stages, workers: on a small DLQ
they are most of a run. Counts are deterministic for a given plan and data (adaptive
execution runs each shuffle stage as a job of its own), so a stage that starts reading back
what it just wrote, counting the same data twice or joining an empty table shows up here."""

from __future__ import annotations

import dataclasses
import os

import pytest

from benchmarks.common import StageJobs
from dlq_pipeline.config.settings import IngestSettings, RunSettings, StorageSettings
from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.engine.workers import start_python_workers
from dlq_pipeline.pipeline import run_pipeline
from dlq_pipeline.replay.spark import heap_short_for_mq_messages
from dlq_pipeline.rules.parser import load_rules
from tests.support import REPO

pytestmark = pytest.mark.spark

STARTER = str(REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules")


def lookup_jobs(spark) -> int:
    """1 where replay looks up the largest message to put (a heap too small for MQ's largest
    in every task slot), else 0."""
    return int(heap_short_for_mq_messages(spark))


@pytest.fixture(autouse=True)
def python_workers_up(spark):
    """The session's Python workers started: a session's first classify starts them with a job
    of its own (`engine.workers`, tests/spark/test_workers.py), once per SparkContext, so which
    test here ran first would change its count."""
    started = start_python_workers(spark)
    if started is not None:
        started.result(timeout=300)


def test_a_small_run_and_its_rerun_schedule_these_jobs(spark, tmp_path):
    dumps = [str(p) for p in write_generated(tmp_path / "dumps", 200, seed=5, files=2, max_size=8 * 1024)]
    settings = RunSettings(storage=StorageSettings(path=str(tmp_path / "wh")))
    table = load_rules(STARTER)

    first = StageJobs(spark)
    summary = run_pipeline(spark, settings, table, inputs=dumps, target="dry-run", run_id="JOBS1", progress=first)
    assert summary.messages_landed == 200 and summary.pending == 200
    # ingest: the read into the cache with the per-file counts and, for a landing this small,
    # its messages' keys (1: each work item counts its own rows, no aggregation; the rows to
    # leave out are found on the driver, where a job over the cache cost 2), the write (1),
    # the keys of the files it wrote, read back into `keys` (1), and three rows of a few bytes
    # each: the landing before the write, its data files after it, the input files (3);
    # classify: the write of the decisions, which caches and counts them (1: the counts are
    # observed; the landings are read on the driver, `Storage.small_table`, no job);
    # replay: the join with the messages and the repartition by queue manager (2), the
    # ledger write (1) and the record of its files under the open landings (1).
    # (+1 where the session's heap cannot hold MQ's largest message in every task slot: the
    # lookup of the largest message to put, `replay.largest_put`; not on a 24 GB machine)
    assert first.per_stage() == {"ingest": 6, "classify": 1, "replay": 4 + lookup_jobs(spark), "summary": 0}

    unchanged = StageJobs(spark)
    same = run_pipeline(spark, settings, table, inputs=dumps, target="dry-run", run_id="JOBS2", progress=unchanged)
    assert same.input_files["skipped"] == 2 and same.pending == 200
    # an unchanged rerun reads no dump and runs no ingest job (the files table is read on
    # the driver); the dry run left every message pending, so classify decides them again,
    # their ledger rows joined first (the ledger's semi-join and grouping with their adaptive
    # stages, 4, beside the write, 1), and replay puts them as the first run did (4)
    assert unchanged.per_stage() == {"ingest": 0, "classify": 5, "replay": 4 + lookup_jobs(spark), "summary": 0}

    again = StageJobs(spark)
    reread = dataclasses.replace(settings, ingest=IngestSettings(reread=True))
    rerun = run_pipeline(spark, reread, table, inputs=dumps, target="dry-run", run_id="JOBS3", progress=again)
    assert rerun.messages_landed == 0 and rerun.duplicates_skipped == 200
    # read again (--reread), the landing's keys are also looked up in the stored ones (2: the
    # keys' broadcast, the scan of `keys`), and nothing is written but the landing's and the
    # input files' rows
    assert again.per_stage() == {"ingest": 5, "classify": 5, "replay": 4 + lookup_jobs(spark), "summary": 0}


def test_placing_queues_by_size_costs_one_aggregation(spark, tmp_path):
    """replay.connections_per_qmgr > 1 places queues by their puts, which replay counts in one
    aggregation of the cached decisions (two jobs): the run's own counts are observed by the
    decisions write, and cannot hold the puts per queue (an open set)."""
    from dlq_pipeline.config.settings import ReplaySettings

    dumps = [str(p) for p in write_generated(tmp_path / "dumps", 200, seed=5, files=2, max_size=8 * 1024)]
    settings = RunSettings(
        storage=StorageSettings(path=str(tmp_path / "wh")), replay=ReplaySettings(connections_per_qmgr=4)
    )
    jobs = StageJobs(spark)
    summary = run_pipeline(
        spark, settings, load_rules(STARTER), inputs=dumps, target="dry-run", run_id="PLACED", progress=jobs
    )
    assert summary.pending == 200
    assert jobs.per_stage() == {"ingest": 6, "classify": 1, "replay": 6 + lookup_jobs(spark), "summary": 0}


def test_where_the_byte_ranges_of_a_split_dump_start_costs_no_job_of_its_own(spark, tmp_path):
    """Where each byte range's records and lines start comes from the rows that count the read
    (`ingest.read_summary`), and reaches the write as array literals indexed by work item: no
    job of its own (it was one, then the broadcast of a join was one)."""
    [dump] = write_generated(tmp_path / "dumps", 200, seed=5, files=1, max_size=8 * 1024)
    split = os.path.getsize(dump) // 4
    settings = RunSettings(storage=StorageSettings(path=str(tmp_path / "wh")), ingest=IngestSettings(split_bytes=split))
    jobs, lines = StageJobs(spark), []
    summary = run_pipeline(
        spark,
        settings,
        load_rules(STARTER),
        inputs=[str(dump)],
        target="dry-run",
        run_id="SPLIT",
        progress=lambda line: (lines.append(line), jobs(line)),
    )
    assert summary.messages_landed == 200
    assert any(line.endswith(" in 5 work items") for line in lines), lines
    # as many jobs as a dump read whole
    assert jobs.per_stage() == {"ingest": 6, "classify": 1, "replay": 4 + lookup_jobs(spark), "summary": 0}


def test_a_run_whose_decisions_are_broadcast_puts_and_records_the_same(spark, tmp_path, monkeypatch):
    """A run of as many decisions as `replay.BROADCAST_DECISIONS` says (here every run) joins
    them to the messages' scan as a broadcast: one shuffle of the bodies fewer, the same
    files and ledger as the left join's run."""
    import dlq_pipeline.replay.spark as replay_module
    from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump

    dumps = [str(p) for p in write_generated(tmp_path / "dumps", 200, seed=5, files=2, max_size=8 * 1024)]
    table = load_rules(STARTER)
    got = {}
    for name, bounds in (("joined", replay_module.BROADCAST_DECISIONS), ("broadcast", (1, 10_000))):
        monkeypatch.setattr(replay_module, "BROADCAST_DECISIONS", bounds)
        settings = RunSettings(storage=StorageSettings(path=str(tmp_path / f"wh-{name}")))
        out = tmp_path / f"out-{name}"
        jobs = StageJobs(spark)
        summary = run_pipeline(spark, settings, table, inputs=dumps, target=f"dir:{out}", run_id="BCAST", progress=jobs)
        ledger = sorted(
            tuple(
                r[c]
                for c in (
                    "message_key",
                    "outcome",
                    "target_qmgr",
                    "target_q",
                    "partition_id",
                    "batch_id",
                    "reason_code",
                )
            )
            for r in spark.read.parquet(str(tmp_path / f"wh-{name}" / "ledger")).collect()
        )
        files = {p.relative_to(out): [(m.md, m.data) for m in read_dump(str(p))] for p in sorted(out.rglob("*.dmp"))}
        got[name] = summary.outcomes, ledger, files, jobs.per_stage()["replay"]
    assert got["broadcast"][:3] == got["joined"][:3] and len(got["joined"][1]) == 200 and got["joined"][2]
    # the decisions' broadcast and the stored keys for those without a message: one job more
    assert got["broadcast"][3] == got["joined"][3] + 1
