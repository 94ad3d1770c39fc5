"""A driver for test_bed.py, run as its own process (one SparkContext per process): reads the
HDFS file ``argv[2]`` on the standalone cluster ``argv[1]`` and prints, as JSON, its lines and
the pids of the Python workers that read them, and the driver's pid."""

import json
import os
import sys

from dlq_pipeline.engine.session import get_spark


def main() -> None:
    master, path, conf = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    spark = get_spark({"master": master, "spark_conf": conf})
    lines = spark.sparkContext.textFile(path, 2).map(lambda line: (line, os.getpid(), os.getppid())).collect()
    print(
        json.dumps(
            {
                "lines": [line for line, _, _ in lines],
                "worker_pids": sorted({p for _, p, _ in lines}),
                "worker_parents": sorted({pp for _, _, pp in lines}),
                "driver_pid": os.getpid(),
                "master": spark.sparkContext.master,
            }
        )
    )
    spark.stop()


if __name__ == "__main__":
    main()
