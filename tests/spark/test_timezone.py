"""Every timestamp the pipeline writes is the right UTC instant on a host that is not in UTC.

tests/spark/tz_job.py runs ingest + classify (RETRYINT) + replay to ``sim:`` three times in a
process with ``TZ=America/New_York`` (the JVM too), once with the session as `get_spark`
builds it and once with the session's own time zone set to New York. Here, in the suite's
UTC process, the stored timestamps are read as epoch microseconds (no time zone involved)
and compared with the wall clock around each run, and the decisions and ledger rows with
what RETRYINT must give. PySpark's naive-datetime conversion would put every value five
hours (four in summer) off.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from dlq_pipeline.runtime.clock import from_epoch_micros, iso_z
from dlq_pipeline.warehouse.storage import Storage
from tests.spark.tz_job import COUNT
from tests.support import REPO, repo_env

pytestmark = pytest.mark.spark
NEW_YORK = "America/New_York"
MICROS = 1_000_000


def _micros(df, *columns):
    return df.select(
        *[c for c in df.columns if c not in columns], *[F.unix_micros(c).alias(c) for c in columns]
    ).collect()


def _within(value_us, run) -> bool:
    # time.time() bounds of the run; Spark keeps microseconds, time.time() has more: floor/ceil
    return int(run["start"] * MICROS) - 1 <= value_us <= int(run["end"] * MICROS) + 1


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    work = tmp_path_factory.mktemp("tz")
    result = work / "result.json"
    env = repo_env(TZ=NEW_YORK, JAVA_TOOL_OPTIONS=f"-Duser.timezone={NEW_YORK}")
    done = subprocess.run(
        [sys.executable, str(REPO / "tests" / "spark" / "tz_job.py"), str(work), str(result)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(result.read_text())


def test_the_job_really_ran_in_new_york(job):
    assert (job["python_tz"], job["python_offset"], job["jvm_tz"]) == ("EST", 5 * 3600, NEW_YORK)
    assert job["factory_session_tz"] == "UTC"  # get_spark's session time zone


@pytest.mark.parametrize("mode", ["factory", "session-ny"])
def test_timestamps_and_retryint_are_utc_whatever_the_time_zone(spark, job, mode):
    done = job["passes"][mode]
    run1, run2, run3 = done["runs"]
    storage = Storage(spark, path=done["warehouse"])

    messages = _micros(storage.read("messages"), "landed_at", "recorded_at")
    assert len(messages) == COUNT
    assert {(m["run_id"], _within(m["landed_at"], run1)) for m in messages} == {(run1["run_id"], True)}
    # the dump's Created stamp (whole seconds of New York's wall clock) read in ingest.dump_time_zone
    dumped = {"start": int(done["dumped"]), "end": run1["start"]}
    assert {_within(m["recorded_at"], dumped) for m in messages} == {True}
    keys = sorted(m["message_key"] for m in messages)

    ledger = {(r["run_id"], r["message_key"]): r for r in _micros(storage.read("ledger"), "started_at", "finished_at")}
    failed_at = {k: ledger[(run1["run_id"], k)]["finished_at"] for k in keys}
    retryint = 3600 * MICROS

    decisions = _micros(storage.read("decisions"), "decided_at", "not_before")
    now3 = int(round(run3["now"] * MICROS))
    assert sorted(
        (d["run_id"], d["message_key"], d["action"], d["attempt"], d["not_before"]) for d in decisions
    ) == sorted(
        [(run1["run_id"], k, "RETRY", 1, None) for k in keys]
        + [(run2["run_id"], k, "RETRY", 2, failed_at[k] + retryint) for k in keys]  # RETRYINT after run 1
        + [(run3["run_id"], k, "RETRY", 2, None) for k in keys]
    )  # two hours later: due
    decided = {d["run_id"]: set() for d in decisions}
    for d in decisions:
        decided[d["run_id"]].add(d["decided_at"])
    assert len(decided[run1["run_id"]]) == 1 and _within(next(iter(decided[run1["run_id"]])), run1)
    assert len(decided[run2["run_id"]]) == 1 and _within(next(iter(decided[run2["run_id"]])), run2)
    assert decided[run3["run_id"]] == {now3}  # the naive `now` given, taken as UTC

    assert sorted(
        (r["run_id"], r["message_key"], r["outcome"], r["reason_code"], r["attempt"], r["error_text"])
        for r in ledger.values()
    ) == sorted(
        [(run1["run_id"], k, "failed", 2051, 1, ledger[(run1["run_id"], k)]["error_text"]) for k in keys]
        + [
            (
                run2["run_id"],
                k,
                "deferred",
                None,
                2,
                f"RETRYINT: not before {iso_z(from_epoch_micros(failed_at[k] + retryint))}",
            )
            for k in keys
        ]
        + [(run3["run_id"], k, "failed", 2051, 2, ledger[(run3["run_id"], k)]["error_text"]) for k in keys]
    )
    for (run_id, _), row in ledger.items():
        run = {r["run_id"]: r for r in (run1, run2, run3)}[run_id]
        assert row["started_at"] <= row["finished_at"]
        assert _within(row["started_at"], run) and _within(row["finished_at"], run), (run_id, row)

    assert [r["outcomes"] for r in (run1, run2, run3)] == [{"failed": COUNT}, {"deferred": COUNT}, {"failed": COUNT}]
    summary = json.loads((Path(done["warehouse"]) / "_runs" / f"{run3['run_id']}.json").read_text())
    assert summary["started_at"] == iso_z(from_epoch_micros(now3)) == run3["started_at"]
