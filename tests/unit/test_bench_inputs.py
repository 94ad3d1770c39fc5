"""The benchmark's pure helpers: generated rules tables, the crossover (measured and fitted), latency options."""

from __future__ import annotations

import pytest

from benchmarks.data import CATCH_ALL, rules_table, rules_table_text
from benchmarks.end_to_end import crossover, e2e_targets, warm_large_target
from benchmarks.run import parse_latency
from benchmarks.sim import latency_faults


@pytest.mark.parametrize("count", [2, 10, 13, 100, 500])
def test_generated_tables_are_valid_with_the_catch_all_last(count):
    table = rules_table(count)
    assert len(table.rules) == count and table.ok
    assert not [d for d in table.diagnostics if d.severity != "info"]
    assert table.rules[-1].action == "FWD" and table.rules[-1].fwdq == "REALLY.DEAD.QUEUE"
    assert rules_table_text(count).rstrip().endswith(CATCH_ALL)
    assert all(len(line) <= 72 for line in rules_table_text(count).splitlines())


def test_the_fitted_crossover_is_where_the_fitted_lines_meet():
    # run: 30 s + 1 ms/message; reference: 6 ms/message -> they meet at 6,000 messages
    fit = crossover([(1000, 31.0, 6.0), (10000, 40.0, 60.0)])
    assert fit["fitted_crossover_messages"] == 6000
    assert fit["pipeline_fixed_s"] == 30.0 and fit["reference_ms_per_message"] == 6.0
    assert crossover([(100, 10.0, 1.0), (200, 20.0, 1.5)])["fitted_crossover_messages"] is None


def test_the_measured_crossover_interpolates_between_the_last_loss_and_the_first_lasting_win():
    # lead (pipeline - reference): +2 at 1,000, -1 at 4,000 -> crossing at 3,000; the fit of
    # all four points would say otherwise, as the large sizes bend the line
    points = [(4000, 9.0, 10.0), (1000, 5.0, 3.0), (20000, 20.0, 50.0), (100000, 60.0, 300.0)]
    got = crossover(points)
    assert (got["crossover_messages"], got["between"]) == (3000, [1000, 4000])
    assert got["fitted_crossover_messages"] != 3000
    # a win that does not last (lost again at 4,000) does not count
    assert crossover([(1000, 2.0, 3.0), (2000, 5.0, 4.0), (4000, 5.0, 8.0)])["crossover_messages"] == 2500
    # won everywhere: the smallest size; lost at the largest: none
    assert crossover([(1000, 2.0, 3.0), (5000, 4.0, 15.0)])["crossover_messages"] == 1000
    assert crossover([(1000, 2.0, 3.0), (5000, 16.0, 15.0)])["crossover_messages"] is None


def test_the_crossovers_floor_is_the_references_messages_in_the_start_up_and_sparks_cold_stages():
    # start-up + trivial job 4.0, 5.0 and 6.5 s (median 5.0), Spark's own cold stages 2.1 s; the
    # reference 0.1 s + 3.5 ms a message: it handles 2,000 messages before a fresh process has
    # started Spark, run a job and Spark's own stages of a run's shape
    def size(start, trivial, cold=None):
        return {
            "pipeline_spark_start_s": start,
            "pipeline_trivial_job_s": trivial,
            "pipeline_run_s": 9.0,
            "pipeline_jobs": 7,
            "spark_cold_stages_s": cold,
            "reference_over_pipeline": 0.3,
        }

    points = [(1000, 14.0, 3.6), (1500, 14.5, 5.35), (5000, 17.0, 17.6)]
    d = {
        "sizes": {"1000": size(3.0, 1.0, 2.1), "1500": size(4.0, 1.0), "5000": size(5.0, 1.5)},
        "crossover": {**crossover(points), "reference_fixed_s": 0.1, "reference_ms_per_message": 3.5},
        "sim_put_cost": {"worst_cpu_us_per_put": 30.0},
    }
    targets = e2e_targets(d)
    # between 1,500 and 5,000 (interpolated): judged against the floor + 500
    assert targets["crossover_messages"] == {
        "value": 4785,
        "limit": 2500,
        "holds": False,
        "start_up_and_cold_stages_floor": 2000,
    }
    fixed = targets["cold_run_over_spark_cold_stages_at_1000"]
    assert (fixed["value"], fixed["limit"], fixed["holds"]) == (4.286, 1.6, False)


def test_the_largest_warm_run_is_judged_against_its_connection_sparks_ingest_and_decodes_limit():
    large = {"warm_run_s": 12.0, "warm_replay_s_per_connection": [5.0, 2.0], "warm_spark_stage_s": {"ingest": 4.5}}
    doc = {
        "end_to_end": {"sizes": {"100000": large}},
        "decode": {"variants": {"jvm_expressions": {"us_per_message": 5.0}}},
    }
    got = warm_large_target(doc)
    assert got is not None
    assert (got["bound_s"], got["value"], got["holds"]) == (10.0, 1.2, False)  # 5.0 + 4.5 + 100,000 x 5 µs
    assert warm_large_target({"decode": {}}) is None
    doc["decode"] = {}
    assert warm_large_target(doc)["holds"] is None  # a limit not measured: no verdict


def test_latency_option_becomes_delay_faults():
    assert parse_latency("put=0.2, commit=2") == {"put": 0.2, "commit": 2.0}
    assert latency_faults({"put": 0.2, "commit": 2.0, "get": 0}) == [
        {"op": "commit", "delay": 0.002},
        {"op": "put", "delay": 0.0002},
    ]
    with pytest.raises(ValueError):
        parse_latency("put")


def test_a_failed_childs_summary_keeps_the_jvm_error_that_came_first():
    from benchmarks.memory import failure_summary

    stderr = (
        "26/11/27 03:05:07 ERROR Executor: Exception in task 26.0 in stage 0.0 (TID 26)\n"
        "java.lang.OutOfMemoryError: Java heap space\n"
        "\tat java.base/java.nio.HeapByteBuffer.<init>(HeapByteBuffer.java:64)\n"
        + '  File "x.py", line 1, in <module>\n' * 200
        + "py4j.protocol.Py4JJavaError: An error occurred while calling o111.collectToPython.\n"
    )
    summary = failure_summary(stderr, limit=600)
    assert summary.startswith("26/11/27 03:05:07 ERROR Executor: Exception in task 26.0")
    assert "java.lang.OutOfMemoryError: Java heap space" in summary.splitlines()[1]
    assert "HeapByteBuffer" not in summary
    assert summary.endswith("collectToPython.\n") and len(summary) <= 610
    assert failure_summary("plain failure") == "plain failure"


def test_a_failed_child_keeps_its_whole_stderr_in_a_file(tmp_path):
    """A child's first error can be far above the end of its stderr the exception carries:
    all of it stays on disk, and the memory section reports that file."""
    from benchmarks.common import ChildFailed, run_child

    with pytest.raises(ChildFailed) as failed:
        run_child("no-such-child", {}, tmp_path)
    assert failed.value.log.parent == tmp_path and failed.value.log.read_text() == failed.value.stderr
    assert "no-such-child" in failed.value.stderr and str(failed.value.log) in str(failed.value)
