"""Runs several ``jobs/*.py`` scripts, one after another, inside ONE ``spark-submit`` process.

    spark-submit --master local[1] tests/spark/jobs_harness.py RESULT.json \\
        jobs/ingest.py ARGS... -- jobs/classify.py ARGS... -- jobs/report.py ARGS...

Each script runs exactly as spark-submit runs it (``__name__ == "__main__"``, its own
``sys.argv``), so the test proves every script under spark-submit while paying for one JVM.
RESULT.json gets, per script, its exit status and stdout, plus the master the session ended
up with (the one spark-submit was given, not the configuration's default).
"""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import sys


def split_runs(argv: list[str]) -> list[list[str]]:
    runs, current = [], []
    for arg in argv:
        if arg == "--":
            runs.append(current)
            current = []
        else:
            current.append(arg)
    return [r for r in [*runs, current] if r]


def main() -> None:
    result_path, rest = sys.argv[1], sys.argv[2:]
    results = []
    for script, *args in split_runs(rest):
        out = io.StringIO()
        sys.argv = [script, *args]
        status = 0
        with contextlib.redirect_stdout(out):
            try:
                runpy.run_path(script, run_name="__main__")
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        results.append({"script": script, "exit": status, "stdout": out.getvalue()})
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    doc = {"runs": results, "master": active.sparkContext.master if active else None}
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main()
