"""The distributed test bed: a real HDFS (Hadoop's MiniDFSCluster: NameNode + one DataNode)
and a Spark standalone cluster (master + one worker of two cores from pip's pyspark, executors
in their own JVMs), started as subprocesses on free ports and stopped by process group.

The HDFS jar is ``org.apache.hadoop:hadoop-client-minicluster`` of the Hadoop version whose
client pyspark ships (``pyspark/jars/hadoop-client-api-<v>.jar``), fetched once with Maven into
``~/.cache/dlq-pipeline/jars/hadoop-minicluster-<v>/`` by ``make hadoop-jars``
(``python -m tests.cluster.bed fetch``). Everything else comes from pip's pyspark.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from dlq_pipeline.engine.jars import cache_root
from dlq_pipeline.engine.session import QUICK_JIT_OPTION
from tests.support import REPO, repo_env

LAUNCHER = REPO / "tests" / "java" / "MiniHdfs.java"
FETCH_COMMAND = "make hadoop-jars"
# the machine's two cores: an application's tasks run two at a time, and two applications
# with spark.cores.max = 1 each (test_replay.py's runs at once) both get an executor
WORKER_CORES = 2
# Every JVM of the bed compiles with C1 only: its jobs are small and short, and HotSpot's C2
# compiler on two cores spends its CPU optimising code they hardly use (docs/performance.md,
# "C1-only JIT for small runs (quick JIT)": it halves a cold first run's CPU). The daemons, and
# the drivers and executors of each application (spark_conf, the deploy test's
# spark-defaults.conf). What `run` gives a local JVM.
QUICK_JIT = QUICK_JIT_OPTION
START_TIMEOUT = 600  # seconds: ~50 s on an idle 2-core machine, minutes on a loaded one


def spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def hadoop_version() -> str:
    """The Hadoop client version inside pyspark (the mini cluster must match it)."""
    [jar] = (spark_home() / "jars").glob("hadoop-client-api-*.jar")
    return jar.name[len("hadoop-client-api-") : -len(".jar")]


def minicluster_jar() -> Path:
    version = hadoop_version()
    return cache_root() / f"hadoop-minicluster-{version}" / f"hadoop-client-minicluster-{version}.jar"


def fetch() -> Path:
    """Fetch the mini cluster jar with Maven (a no-op when it is there)."""
    jar = minicluster_jar()
    if jar.is_file():
        return jar
    jar.parent.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=jar.parent.name + ".", dir=jar.parent.parent))
    subprocess.run(
        [
            "mvn",
            "-q",
            "-B",
            "dependency:copy",
            f"-Dartifact=org.apache.hadoop:hadoop-client-minicluster:{hadoop_version()}",
            f"-DoutputDirectory={staging}",
        ],
        check=True,
    )
    if jar.parent.exists():
        shutil.rmtree(jar.parent)
    staging.rename(jar.parent)
    return jar


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Daemon:
    """A subprocess in its own process group (so its children, e.g. executors, stop with it)."""

    name: str
    process: subprocess.Popen
    log: Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def wait_for(self, text: str, deadline: float) -> str:
        """The first line of the log containing ``text``; fails if the process dies or time runs out."""
        while time.monotonic() < deadline:
            for line in self.log.read_text(errors="replace").splitlines():
                if text in line:
                    return line
            if not self.alive():
                raise RuntimeError(f"{self.name} exited ({self.process.returncode}):\n{self.tail()}")
            time.sleep(0.3)
        raise RuntimeError(f"{self.name} not ready after {START_TIMEOUT} s:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()  # MiniHdfs shuts down cleanly on EOF
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue


def _own_group_dying_with_parent() -> None:
    """In the child: its own process group, and SIGKILL when the test process dies (a pytest
    killed by a timeout runs no finalizer; the daemons must not outlive it)."""
    os.setsid()
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _start(name: str, command: list[str], log: Path, env: dict, stdin=subprocess.DEVNULL) -> Daemon:
    out = open(log, "wb")
    try:
        process = subprocess.Popen(
            command, stdin=stdin, stdout=out, stderr=subprocess.STDOUT, env=env, preexec_fn=_own_group_dying_with_parent
        )
    finally:
        out.close()
    return Daemon(name, process, log)


@dataclass
class Hdfs:
    uri: str  # hdfs://localhost:PORT
    http: str  # http://127.0.0.1:PORT, the NameNode's WebHDFS

    def url(self, path: str, op: str, **params) -> str:
        query = urllib.parse.urlencode({"op": op, "user.name": "dlq", **params})
        return f"{self.http}/webhdfs/v1{urllib.parse.quote(path)}?{query}"

    def put(self, path: str, data: bytes) -> None:
        """Write a file through WebHDFS (NameNode, then the DataNode it redirects to)."""
        request = urllib.request.Request(self.url(path, "CREATE", overwrite="true"), method="PUT")
        try:
            urllib.request.urlopen(request, timeout=60)
            raise RuntimeError("WebHDFS CREATE did not redirect")
        except urllib.error.HTTPError as redirect:
            if redirect.code != 307:
                raise
            location = redirect.headers["Location"]
        urllib.request.urlopen(urllib.request.Request(location, data=data, method="PUT"), timeout=60).read()

    def touch(self, path: str, mtime: float) -> None:
        """Set a file's modification time (WebHDFS SETTIMES, in milliseconds)."""
        request = urllib.request.Request(self.url(path, "SETTIMES", modificationtime=int(mtime * 1000)), method="PUT")
        urllib.request.urlopen(request, timeout=60).read()

    def upload(self, local: Path, path: str) -> list[str]:
        """Copy a local file or directory tree to ``path`` on HDFS, modification times kept;
        the hdfs:// URIs written."""
        local = Path(local)
        files = [local] if local.is_file() else sorted(p for p in local.rglob("*") if p.is_file())
        written = []
        for f in files:
            target = path if local.is_file() else f"{path}/{f.relative_to(local).as_posix()}"
            self.put(target, f.read_bytes())
            self.touch(target, f.stat().st_mtime)
            written.append(self.uri + target)
        return written

    def list(self, path: str) -> list[dict]:
        with urllib.request.urlopen(self.url(path, "LISTSTATUS"), timeout=60) as r:
            return json.load(r)["FileStatuses"]["FileStatus"]

    def read(self, path: str) -> bytes:
        with urllib.request.urlopen(self.url(path, "OPEN"), timeout=60) as r:
            return r.read()


@dataclass
class Bed:
    hdfs: Hdfs
    master: str  # spark://127.0.0.1:PORT
    root: Path
    daemons: list[Daemon] = field(default_factory=list)

    def spark_env(self) -> dict[str, str]:
        """The environment a driver process (CLI, spark-submit) needs to use this cluster."""
        return repo_env(
            keep_path=False,
            SPARK_LOCAL_IP="127.0.0.1",
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
        )

    def spark_conf(self) -> dict[str, str]:
        """Settings a session on this cluster needs: executors import this checkout's package."""
        return {
            "spark.executorEnv.PYTHONPATH": str(REPO),
            "spark.executor.memory": "768m",
            "spark.executor.extraJavaOptions": QUICK_JIT,
            "spark.driver.extraJavaOptions": QUICK_JIT,
        }


def start(root: Path) -> Bed:
    """Start HDFS and the Spark cluster side by side; stop whatever started if one fails."""
    jar = minicluster_jar()
    if not jar.is_file():
        raise RuntimeError(f"{jar} is missing: run `{FETCH_COMMAND}` (python -m tests.cluster.bed fetch)")
    home = spark_home()
    logs = root / "logs"
    logs.mkdir(parents=True)
    # no PYTHONPATH: executors import dlq_pipeline from what each session gives them (spark_conf's
    # spark.executorEnv.PYTHONPATH, or a packed environment shipped with --archives), never the test's
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(logs),
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_NO_DAEMONIZE": "1",
        "SPARK_DAEMON_JAVA_OPTS": QUICK_JIT,
    }
    daemons: list[Daemon] = []
    try:
        hdfs = _start(
            "HDFS",
            ["java", "-Xmx512m", QUICK_JIT, "-cp", f"{jar}:{home / 'jars'}/*", str(LAUNCHER), str(root / "hdfs")],
            logs / "hdfs.log",
            env,
            stdin=subprocess.PIPE,
        )
        daemons.append(hdfs)
        port = free_port()
        spark_class = str(home / "bin" / "spark-class")
        master = _start(
            "Spark master",
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                "0",
            ],
            logs / "master.log",
            env,
        )
        daemons.append(master)
        url = f"spark://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT
        master.wait_for("I have been elected leader", deadline)
        worker = _start(
            "Spark worker",
            [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                str(WORKER_CORES),
                "--memory",
                "2g",
                "--webui-port",
                "0",
                "--work-dir",
                str(root / "work"),
                url,
            ],
            logs / "worker.log",
            env,
        )
        daemons.append(worker)
        worker.wait_for("Successfully registered with master", deadline)
        _, uri, http = hdfs.wait_for("READY ", deadline).split()
    except BaseException:
        for daemon in reversed(daemons):
            daemon.stop()
        raise
    return Bed(Hdfs(uri, http), url, root, daemons)


def stop(bed: Bed) -> None:
    for daemon in reversed(bed.daemons):
        daemon.stop()


if __name__ == "__main__":
    if sys.argv[1:] == ["fetch"]:
        print(fetch())
    else:
        sys.exit("usage: python -m tests.cluster.bed fetch")
