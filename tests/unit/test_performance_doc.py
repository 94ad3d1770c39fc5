"""docs/performance.md is a reference true to benchmarks/results.json: its current figures are
what `python -m benchmarks.figures` writes from that file, it stays short, each design decision
gives one measured line, and the paths it cites exist. Pure: reads files, starts no Spark."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks import figures

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "performance.md"
RESULTS = REPO / "benchmarks" / "results.json"
MAX_LINES = 400


def doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def results() -> dict:
    return json.loads(RESULTS.read_text(encoding="utf-8"))


def test_the_current_figures_are_what_results_json_gives():
    assert figures.rewritten(doc_text(), results()) == doc_text(), "run `python -m benchmarks.figures`"


def test_a_figure_edited_by_hand_is_written_back():
    text = doc_text()
    block = text[text.index(figures.BEGIN) : text.index(figures.END)]
    edited = text.replace(block, block.replace("| 1,000 |", "| 1,001 |", 1))
    assert edited != text
    assert figures.rewritten(edited, results()) == text


def test_the_check_fails_on_a_stale_doc_and_passes_once_rewritten(tmp_path, capsys):
    stale = tmp_path / "performance.md"
    stale.write_text(f"# Performance\n\n{figures.BEGIN}\nold figures\n{figures.END}\n\nThe rest.\n", encoding="utf-8")
    args = ["--doc", str(stale), "--results", str(RESULTS)]
    assert figures.main([*args, "--check"]) == 1
    assert "python -m benchmarks.figures" in capsys.readouterr().err
    assert figures.main(args) == 0
    assert figures.main([*args, "--check"]) == 0
    written = stale.read_text(encoding="utf-8")
    assert "old figures" not in written and written.endswith(f"{figures.END}\n\nThe rest.\n")
    assert "| target | measured | limit | holds |" in written


def test_the_doc_must_hold_both_markers():
    with pytest.raises(ValueError):
        figures.rewritten(f"# Performance\n\n{figures.BEGIN}\n", results())
    with pytest.raises(ValueError):
        figures.rewritten(f"{figures.END}\n{figures.BEGIN}\n", results())


def test_the_doc_stays_short():
    assert len(doc_text().splitlines()) <= MAX_LINES


def test_each_design_decision_gives_one_measured_line():
    section = doc_text().split("\n## Design decisions\n", 1)[1].split("\n## ", 1)[0]
    decisions = re.split(r"^### ", section, flags=re.M)[1:]
    assert len(decisions) >= 20
    for decision in decisions:
        measured = [line for line in decision.splitlines() if line.startswith("**Measured**")]
        assert len(measured) == 1, decision.splitlines()[0]


def test_the_paths_the_doc_cites_exist():
    cited = set(re.findall(r"`((?:dlq_pipeline|benchmarks|tests|docs)/[\w./-]*)`", doc_text()))
    assert "dlq_pipeline/replay/writer.py" in cited
    assert sorted(p for p in cited if not (REPO / p).exists()) == []
