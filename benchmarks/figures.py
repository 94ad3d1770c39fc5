"""docs/performance.md's current figures, written from benchmarks/results.json.

    python -m benchmarks.figures            # rewrite the figures between the doc's two markers
    python -m benchmarks.figures --check    # exit 1 when the doc's figures are not results.json's

The figures themselves are rendered by `benchmarks.report.figures`; this module only puts them
between `BEGIN` and `END` in the doc, and tells whether they are there already.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks.common import ROOT
from benchmarks.report import figures

RESULTS = ROOT / "benchmarks" / "results.json"
DOC = ROOT / "docs" / "performance.md"
BEGIN = "<!-- figures: written by `python -m benchmarks.figures` from benchmarks/results.json -->"
END = "<!-- figures: end -->"


def rewritten(text: str, results: dict) -> str:
    """``text`` (the doc) with the figures of ``results`` between its markers, and the rest as
    it is (pure). Raises ValueError when the markers are missing or out of order."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the doc needs the markers {BEGIN!r} and, after it, {END!r}")
    return text[: start + len(BEGIN)] + "\n\n" + figures(results) + "\n" + text[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.figures", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when the doc's figures differ")
    parser.add_argument("--results", default=str(RESULTS))
    parser.add_argument("--doc", default=str(DOC))
    args = parser.parse_args(argv)
    doc = Path(args.doc)
    text = doc.read_text(encoding="utf-8")
    new = rewritten(text, json.loads(Path(args.results).read_text(encoding="utf-8")))
    if args.check:
        if new != text:
            print(f"{doc}: its figures are not {args.results}'s: run `python -m benchmarks.figures`", file=sys.stderr)
            return 1
        return 0
    if new != text:
        doc.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
