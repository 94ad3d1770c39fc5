"""`python -m benchmarks.run --merge`: a comparison measured again replaces only its own
section of results.json, and the Markdown says when and how loaded it was measured."""

from __future__ import annotations

from benchmarks.report import markdown
from benchmarks.run import _merged, provenance, stale_sections

MACHINE = {
    "cores": 2,
    "cpu": "x",
    "memory_gb": 1,
    "load_average_at_start": [0.5, 0.5, 0.5],
    "python": "3",
    "java": "17",
    "spark": "4.2.0",
    "pyarrow": "1",
    "pandas": "2",
}


def test_merge_keeps_the_other_comparisons_and_marks_the_one_measured_again():
    before = {
        "command": "python -m benchmarks.run",
        "mode": "full",
        "machine": MACHINE,
        "sizes": {"repeats": 3, "e2e_repeats": 1},
        "started_at": "T0",
        "elapsed_s": {"decode": 10.0, "end_to_end": 20.0, "total": 30.0},
        "decode": {"error": "kept as it was"},
        "end_to_end": {"error": "old"},
    }
    now = {
        "command": "python -m benchmarks.run --only end_to_end --merge",
        "mode": "full",
        "machine": {**MACHINE, "load_average_at_start": [9.0, 8.0, 7.0]},
        "sizes": {"repeats": 3, "e2e_repeats": 1},
        "started_at": "T1",
        "elapsed_s": {},
    }
    doc = _merged(before, now, ["end_to_end"])
    assert "end_to_end" not in doc and doc["decode"] == {"error": "kept as it was"}
    assert doc["elapsed_s"] == {"decode": 10.0, "total": 30.0}
    assert doc["measured_apart"] == {
        "end_to_end": {"command": now["command"], "started_at": "T1", "machine": now["machine"], "sizes": now["sizes"]}
    }
    doc["end_to_end"] = {"error": "new"}
    text = markdown(doc)
    assert "**failed**: kept as it was" in text and "**failed**: new" in text and "old" not in text
    assert (
        "*Measured in a later run (T1, load average at start [9.0, 8.0, 7.0], Spark 4.2.0): "
        "`python -m benchmarks.run --only end_to_end --merge`.*"
    ) in text
    assert text.count("Measured in a later run") == 1  # decode keeps the header's run


def _doc(**sections) -> dict:
    return {
        "command": "python -m benchmarks.run",
        "mode": "full",
        "machine": MACHINE,
        "sizes": {"repeats": 3, "e2e_repeats": 1},
        "started_at": "T0",
        "elapsed_s": {},
        **sections,
    }


def test_a_merge_measures_again_what_another_spark_or_machine_measured():
    apart = {"command": "c", "started_at": "T1", "sizes": {}}
    doc = _doc(
        decode={"error": "x"},
        ingest={"error": "x"},
        replay={"error": "x"},
        memory={"error": "x"},
        measured_apart={
            "ingest": {**apart, "machine": {**MACHINE, "spark": "4.0.1"}},
            "replay": {**apart, "machine": {**MACHINE, "cpu": "another"}},
            "memory": {**apart, "machine": {**MACHINE, "load_average_at_start": [5, 5, 5]}},  # load is no kind
        },
    )
    assert stale_sections(doc, MACHINE, ["decode"]) == ["ingest", "replay"]
    assert stale_sections(doc, {**MACHINE, "cores": 4}, []) == ["decode", "ingest", "replay", "memory"]
    assert provenance(doc, "replay") == "Spark 4.2.0 on 2 cores (another)"


def test_the_header_says_where_each_section_was_measured():
    doc = _doc(
        decode={"error": "x"},
        ingest={"error": "x"},
        measured_apart={
            "ingest": {
                "command": "c",
                "started_at": "T1",
                "sizes": {},
                "machine": {**MACHINE, "spark": "4.0.1", "cpu": "EPYC"},
            }
        },
    )
    text = markdown(doc)
    assert "| 1. Decode | T0 | 4.2.0 | 2 cores (x), 1 GB |" in text
    assert "| 3. Ingest | T1 | 4.0.1 | 2 cores (EPYC), 1 GB |" in text
