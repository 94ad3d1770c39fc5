"""A local Spark Connect server for the `connect` tests: what Databricks serverless and
shared clusters are, on this machine.

pip's pyspark ships the server's jar (``pyspark/jars/spark-connect_*.jar``) but not
``sbin/start-connect-server.sh``, so the server is ``spark-submit --class
org.apache.spark.sql.connect.service.SparkConnectServer``. Its settings are those
`dlq_pipeline.engine.session.session_conf` gives a local Delta session (Delta's jars from the
cache of `dlq_pipeline.engine.delta`), so Parquet and Delta tables both work over it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support import repo_env

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT = 180.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def server_command(port: int, warehouse_dir: Path) -> list[str]:
    """``spark-submit`` starting a Connect server on ``port``, local[2], with Delta."""
    import pyspark

    from dlq_pipeline.engine.session import session_conf

    conf = session_conf(
        {
            "master": "local[2]",
            "app_name": "dlq-pipeline-connect-tests",
            "format": "delta",
            "spark_conf": {"spark.driver.memory": "1g", "spark.sql.warehouse.dir": str(warehouse_dir)},
        }
    )
    conf["spark.connect.grpc.binding.port"] = str(port)
    conf["spark.connect.grpc.binding.address"] = "127.0.0.1"
    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    args = [str(submit), "--class", SERVER_CLASS]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    return args


@contextmanager
def connect_server(workdir: Path) -> Iterator[str]:
    """Start a server (logs in ``workdir/server.log``), yield its ``sc://`` URL, stop it by
    its process group. Its Python workers run this interpreter with this checkout first on
    the path, so they import the dlq_pipeline under test."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    # the repository ahead of this process's PYTHONPATH when it has one: no empty entry, which
    # would put the server's working directory on its workers' path
    env = repo_env(
        keep_path=bool(os.environ.get("PYTHONPATH")),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    env.pop("SPARK_REMOTE", None)
    env.pop("PYSPARK_GATEWAY_PORT", None)
    log = open(workdir / "server.log", "wb")
    proc = subprocess.Popen(
        server_command(port, workdir / "catalog"),
        cwd=workdir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _accepts(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (workdir / "server.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the Spark Connect server did not start (exit {proc.poll()}):\n{tail}")
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
