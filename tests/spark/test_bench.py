"""`make bench` cannot rot: its quick path at the tiniest size writes every comparison.

Runs the real benchmark code in this test session (``--in-process``: no child JVMs), so it
checks code paths and keys, never speeds."""

from __future__ import annotations

import json

import pytest

from benchmarks import run as bench
from benchmarks.run import COMPARISONS

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_tiny_run_writes_every_comparison(spark, tmp_path):
    """Over a minute: every section at its tiniest size, `run` end to end several times among
    them (end to end, memory, the Q_FULL storm), each with its Spark jobs, in one session."""
    out = tmp_path / "results.json"
    bench.run(["--tiny", "--in-process", "--work", str(tmp_path / "work"), "--out", str(out)], spark=spark)
    doc = json.loads(out.read_text())
    for key in COMPARISONS:
        assert key in doc, key
        assert "error" not in doc[key], doc[key]
    assert {"cores", "memory_gb", "python", "java", "spark"} <= set(doc["machine"])
    assert doc["decode"]["ratios"]["row_udf_over_ours"] > 0
    assert all(t["agreement"]["agree"] == t["agreement"]["rows"] for t in doc["classify"]["tables"].values())
    assert doc["ingest"]["ratios"]["parse_speedup_1_to_2_cores"] > 0
    assert doc["ingest"]["ratios"]["parse_speedup_1_to_2_cores_large_dump"] > 0
    assert doc["ingest"]["ratios"]["ingest_speedup_1_to_2_cores_large_dump"] > 0
    assert doc["ingest"]["ratios"]["python_reader_over_parse_1_core"] > 0  # the JVM reader and the Python one both ran
    # the mqdump source: against mapInArrow of the same reader, and as a user reads a dump
    assert doc["ingest"]["ratios"]["python_reader_over_map_in_arrow_1_core"] > 0
    assert doc["ingest"]["ratios"]["data_source_over_python_reader_2_cores"] > 0
    assert doc["ingest"]["ratios"]["ingest_over_parse_and_store_1_core"] > 0  # the store's limit ran too
    assert doc["ingest"]["ratios"]["ingest_speedup_over_parse_and_store_large_dump"] > 0  # its limit on 2 cores
    assert all(p["puts_per_s"] > 0 for p in doc["replay"]["partitions"].values())
    read = doc["replay"]["read_path"]
    assert set(read["variants"]) == {"bodies_in_place", "bodies_joined", "scan_and_iterate"}
    assert read["messages"] > 0 and doc["replay"]["ratios"]["bodies_joined_over_in_place"] > 0
    assert "crossover_messages" in doc["end_to_end"]["crossover"]
    smallest = min(doc["end_to_end"]["sizes"], key=int)  # Spark's own cold stages ran beside it
    assert doc["end_to_end"]["sizes"][smallest]["spark_cold_stages_s"] > 0
    # the same run again in the warm session decides the same, and has its own crossover
    for size in doc["end_to_end"]["sizes"].values():
        assert size["warm_run_s"] > 0 and size["warm_outcomes_match"] is True, size
        # ... in a session started as a notebook's (it names no input: never C1 only), after
        # a first run of its own; the cold child, which names its small input, runs C1 only
        assert (size["warm_session_quick_jit"], size["pipeline_quick_jit"]) == (False, True), size
        assert size["warm_session_first_run_s"] > 0, size
        # each connection's puts, and the seconds its task put for, busiest first
        puts, seconds = size["pipeline_puts_per_connection"], size["pipeline_replay_s_per_connection"]
        assert len(puts) == len(seconds) > 0 and puts == sorted(puts, reverse=True), size
        assert all(s >= 0 for s in seconds) and sum(puts) == size["pipeline_outcomes"].get("delivered"), size
    assert "crossover_messages" in doc["end_to_end"]["crossover_warm_session"]
    # the crossover's floor (the reference's messages in the time of start-up + a trivial job)
    assert isinstance(doc["end_to_end"]["targets"]["crossover_messages"]["start_up_and_cold_stages_floor"], int)
    assert "The crossover's floor in a fresh process" in out.with_suffix(".md").read_text()
    # the largest warm run against its bound: the busiest connection and Spark's own stages
    bound = doc["targets"]["end_to_end.warm_run_over_its_bound_at_100000"]
    largest = doc["end_to_end"]["sizes"][max(doc["end_to_end"]["sizes"], key=int)]
    assert set(largest["warm_spark_stage_s"]) == {"ingest", "classify", "replay"}
    assert largest["warm_replay_s_per_connection"], largest
    assert bound["holds"] is None  # the tiny run has no 100,000-message size
    # every section's targets in one place, each with its limit, value and verdict
    assert {
        "end_to_end.cold_run_over_spark_cold_stages_at_1000",
        "ingest.ingest_speedup_over_store_limit_speedup",
    } <= set(doc["targets"])
    assert {"storm.storm_million_messages_in_2g_heaps", "first_run.first_run_over_plain_start_s"} <= set(doc["targets"])
    assert all({"value", "limit", "holds"} <= set(t) for t in doc["targets"].values())
    first = doc["first_run"]["wall_s"]
    assert set(first) == {"plain", "spark_stages", "with_archive"} and first["with_archive"]["median"] > 0
    assert set(doc["memory"]["cases"]) == {"small_payload", "large_payload", "large_payload_whole_data_udf"}
    pipeline = doc["memory"]["pipeline"]
    assert (pipeline["passed"], pipeline["landed"], pipeline["replayed_bytes"] >= 2 * 1024 * 1024) == (True, 2, True)
    assert pipeline["dump_deleted_when_landed"]  # what lets 100 messages of 100 MB fit the disk
    assert not list((tmp_path / "work" / "tiny").glob("pipeline-memory-*"))  # the large dump is deleted
    # the Q_FULL storm: every message landed has one outcome, most were the storm's ...
    storm, run = doc["storm"], doc["storm"]["run"]
    assert storm["passed"] and run["landed"] == storm["messages"] == 200
    assert sum(run["outcomes"].values()) == run["landed"]
    assert storm["input"]["storm_messages"] > 100 and storm["input"]["mean_payload_bytes"] > 1500
    # ... its queue filled, and the writer met 2053 there: failed puts, or deferred by its breaker
    queue = run["storm_queue"]
    assert queue["depth"] == queue["maxdepth"] == storm["storm"]["maxdepth"] < storm["input"]["storm_messages"]
    assert queue["failed_q_full"] + queue["deferred_by_breaker"] > 0
    # (and the generated messages whose Expiry ran out since their dump was taken are not put)
    stormed = queue["outcomes"]["delivered"] + queue["failed_q_full"] + queue["deferred_by_breaker"]
    stormed += queue["outcomes"].get("expired", 0)
    assert sum(queue["outcomes"].values()) == stormed
    assert run["peak_hwm_one_process_mb"]["jvm"] > 0 and run["heap"] == "2g"
    # ... and the sequential reference, over an evenly spread sample, extrapolated to the whole
    ref = storm["reference"]
    assert (ref["extrapolated_from"], ref["extrapolated_to"]) == (ref["messages"], 200) == (100, 200)
    assert ref["outcomes"].get("failed", 0) > 0  # the full queue refuses its puts too
    assert ref["extrapolated_s"] > 0 and storm["reference_over_run"] > 0
    assert not list((tmp_path / "work" / "tiny").glob("storm-run-*"))  # the run's warehouse and sim are removed
    text = out.with_suffix(".md").read_text()
    assert all(f"## {n}." in text for n in range(1, 9))
    # incremental runs: the rerun reads no dump, the run after one new dump reads it alone
    runs = doc["incremental"]["runs"]
    assert (
        doc["incremental"]["passed"]
        and runs["floor"]["files_listed"] == runs["unchanged"]["input_files"]["skipped"] > 0
    )
    assert (runs["unchanged"]["input_files"]["read"], runs["incremental"]["input_files"]["read"]) == (0, 1)
    assert set(doc["incremental"]["targets"]) == {"incremental_over_empty", "unchanged_rerun_s"}
    assert "**extrapolated** linearly from 100 evenly spread messages" in text
