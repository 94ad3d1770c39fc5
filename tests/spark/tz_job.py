"""A small pipeline run in a process whose time zone is not UTC, for test_timezone.py:

    TZ=America/New_York JAVA_TOOL_OPTIONS=-Duser.timezone=America/New_York \\
        python tests/spark/tz_job.py WORKDIR RESULT.json

Twice, in ``WORKDIR/factory`` (the session as `get_spark` builds it) and in
``WORKDIR/session-ny`` (the same session with ``spark.sql.session.timeZone`` set to New York
too, as a caller's session could be), three runs of ingest + classify + replay to ``sim:``:

1. the dump is landed, RETRY is decided and fails (APP.IN is put-inhibited, 2051);
2. straight after: same rule, last attempt younger than RETRYINT(3600): deferred;
3. ``now`` two hours later, given *naive* (the library takes naive as UTC): tried again.

The dump's ``Created:`` stamp is New York's wall clock (dmpmqmsg's local time), and
``ingest.dump_time_zone`` names New York.

The result file holds the wall-clock bounds (epoch seconds) of each run, the run ids and the
time zones the process and the JVM really had; the test reads the warehouses itself.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from pathlib import Path

RULES = """\
INPUTQM(QM1) RETRYINT(3600)
REASON(MQRC_Q_FULL) ACTION(RETRY) RETRY(3)
"""
COUNT = 3


def pipeline(spark, root: Path) -> dict:
    from dlq_pipeline.config import load_config
    from dlq_pipeline.config.settings import RunSettings
    from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
    from dlq_pipeline.mq.sim import SimQueueManager
    from dlq_pipeline.pipeline import run_pipeline
    from dlq_pipeline.rules.parser import load_rules
    from tests.spark.replay_retry_job import dead_letter

    wh = root / "wh"
    (wh / "_sim").mkdir(parents=True)
    SimQueueManager(wh / "_sim" / "QM1.sqlite", "QM1", {"queues": {"APP.IN": {"put_inhibited": True}}})
    dump = root / "dlq.dmp"
    dumped = time.time()
    write_dump([dead_letter(n) for n in range(COUNT)], dump)  # Created: the local (New York) time
    rules = root / "tz.rules"
    rules.write_text(RULES)
    table = load_rules(rules)
    assert table.ok, table.diagnostics
    config = load_config(
        overrides={
            "storage": {"path": str(wh)},
            "replay": {"max_connections": 1},
            "ingest": {"dump_time_zone": "America/New_York"},
        }
    )

    runs = []
    for now in (None, None, "later"):
        if now == "later":  # naive UTC, two hours after the second run
            now = dt.datetime.fromtimestamp(runs[-1]["end"] + 7200, dt.UTC).replace(tzinfo=None)
        start = time.time()
        summary = run_pipeline(
            spark, RunSettings.from_config(config), table, inputs=[str(dump)], target="sim:QM1", now=now
        )
        runs.append(
            {
                "run_id": summary.run_id,
                "start": start,
                "end": time.time(),
                "outcomes": summary.outcomes,
                "started_at": summary.started_at,
                "now": None if now is None else now.replace(tzinfo=dt.UTC).timestamp(),
            }
        )
    return {"warehouse": str(wh), "runs": runs, "dumped": dumped}


def main(workdir: str, result_path: str) -> None:
    from dlq_pipeline.engine.session import get_spark

    spark = get_spark({"master": "local[1]", "app_name": "dlq-pipeline-tz"})
    result = {
        "python_tz": time.tzname[0],
        "python_offset": time.timezone,
        "jvm_tz": spark._jvm.java.util.TimeZone.getDefault().getID(),
        "passes": {},
    }
    result["factory_session_tz"] = spark.conf.get("spark.sql.session.timeZone")
    result["passes"]["factory"] = pipeline(spark, Path(workdir) / "factory")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    result["passes"]["session-ny"] = pipeline(spark, Path(workdir) / "session-ny")
    Path(result_path).write_text(json.dumps(result))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
