"""A fresh local session for test_workers.py: its Python workers started by
`start_python_workers`, then one Arrow UDF task, which must run in one of them.

    python tests/spark/workers_job.py RESULT.json

A fresh session because the suite's own has workers from earlier tests in its idle pool.
The result: the started workers' process ids, what a second call returned, and the UDF
task's process id with the modules it found imported before it imported anything.
"""

import json
import sys
from pathlib import Path

import pyarrow as pa  # module level: the UDF's type hints name it


def main(result: Path) -> None:
    from pyspark.sql import functions as F

    from dlq_pipeline.engine.session import get_spark
    from dlq_pipeline.engine.workers import TASK_MODULES, start_python_workers

    spark = get_spark({"master": "local[2]", "app_name": "workers-test"})
    started = start_python_workers(spark)
    again = start_python_workers(spark)
    pids = started.result(timeout=300)

    def where(ids: pa.Array) -> pa.Array:
        import os
        import sys as system

        found = sum(name in system.modules for name in TASK_MODULES)
        return pa.array([os.getpid() * 100 + found] * len(ids), pa.int64())

    [row] = spark.range(1, numPartitions=1).select(F.arrow_udf(where, returnType="long")("id").alias("v")).collect()
    result.write_text(
        json.dumps(
            {
                "pids": pids,
                "again": again is not None,
                "task_pid": row["v"] // 100,
                "modules_found": row["v"] % 100,
                "modules": len(TASK_MODULES),
            }
        )
    )
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
