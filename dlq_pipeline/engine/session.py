"""The one place that obtains a SparkSession.

Library code never builds or stops a session anywhere else: on Databricks and in notebooks
the session already exists and belongs to the caller, so ``get_spark`` reuses it; only when
there is none (CLI, spark-submit in client mode, tests) does it build a local one with the
defaults below.
"""

from __future__ import annotations

import glob
import importlib.util
import logging
import os
import re
import sys
import threading
from collections.abc import Mapping
from importlib.machinery import ModuleSpec
from typing import Any, cast

from pyspark.sql import SparkSession

from dlq_pipeline.engine import class_archive, s3a
from dlq_pipeline.engine.delta import cached_jars
from dlq_pipeline.ingest import jvm_reader

log = logging.getLogger(__name__)

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
DELTA_FIX = (
    "fetch Delta Lake's jars once with `dlq-pipeline setup --delta` (from Maven Central into "
    "~/.cache/dlq-pipeline/jars), or start Spark with "
    "--packages io.delta:delta-spark_<spark>_2.13:<release>, or run on Databricks, "
    'or use storage.format = "parquet"'
)

# Settings every locally built session gets; `spark_conf` entries override them.
BASE_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",  # no progress-bar noise on the console
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "true",
    "spark.sql.shuffle.partitions": "4",  # tables here are small per run; AQE coalesces anyway
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.session.timeZone": "UTC",  # MQ PutDate/PutTime and all our timestamps are GMT
    # Tables hold message bodies (personal data, possibly): files the session writes are
    # owner-only (0600; directories 0700) on file systems with POSIX permissions.
    "spark.hadoop.fs.permissions.umask-mode": "077",
    # Classify compiles a rules table into one long ordered CASE WHEN chain per decision
    # column. Spark already splits generated expression code into methods of about
    # methodSplitThreshold (1024) source characters, and we keep that default. But a
    # whole-stage-codegen method can still exceed 8000 bytes of bytecode, which HotSpot
    # refuses to JIT (-XX:+DontCompileHugeMethods, the default): it would then run in the
    # bytecode interpreter for the whole job. With hugeMethodLimit at 8000 Spark drops only
    # that subtree out of whole-stage codegen (expressions stay compiled, in split methods),
    # which is what Spark's tuning guide recommends on HotSpot. Codegen fallback stays on,
    # so a chain too large to compile at all is interpreted instead of failing the job.
    "spark.sql.codegen.hugeMethodLimit": "8000",
    # Arrow batches for the decode UDF: up to 4 KB of header per message, so Spark's default
    # of 10,000 rows is ~40 MB per task before the column vectors double while growing; on a
    # default 1 GB local heap that ran out of memory decoding a realistic DLQ
    # (benchmarks/run.py decode). 2,048 rows keep a batch under ~8 MB at no measurable cost.
    "spark.sql.execution.arrow.maxRecordsPerBatch": "2048",
    # ... and at most 64 MB (a larger message alone): replay sends whole messages to Python,
    # and 2,048 messages of up to 100 MB would be one batch of up to 200 GB.
    "spark.sql.execution.arrow.maxBytesPerBatch": str(64 * 1024 * 1024),
    "spark.sql.codegen.fallback": "true",
    # What the pipeline caches (ingest's one read of its dumps, classify's decisions) is
    # built once and read once or twice: compressing its columns in memory (dictionary and
    # run-length encodings, tried column by column on every batch) cost more CPU than the
    # memory it saved, most of which is message bodies that do not compress that way
    # (docs/performance.md, "Ingest's one cached read").
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
    # PySpark 4 wraps every DataFrame and Column call to send its Python call site to the JVM
    # (for error messages): four py4j round trips per `F.col`, `select`, `alias` ... A run
    # builds its plans with about 800 such calls: 1-4 s of a 1,000-message run went there
    # (docs/performance.md, "Fewer calls into the JVM"). Errors still name the failing operation.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # Delta rebuilds a table's file list (its snapshot state) for every new version a read or
    # MERGE sees, shuffled into 50 tasks by default: 50 tasks for a log of a few hundred
    # files, ten times or more per command. Our tables' states are small (one row per data
    # file), so one task does it: 8 appends each read back took 194 s -> 61 s on 2 busy cores
    # (docs/performance.md, "Delta snapshot state in one task"). Ignored without Delta.
    "spark.databricks.delta.snapshotPartitions": "1",
}
LOG_LEVEL = "WARN"
CLASSPATH = "spark.driver.extraClassPath"


def _settings(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    s = dict(settings or {})
    unknown = set(s) - {
        "master",
        "remote",
        "app_name",
        "spark_conf",
        "format",
        "log_level",
        "work_bytes",
        "quick_jit_bytes",
        "class_archive",
        "archive_classes",
        "s3a",
    }
    if unknown:
        raise ValueError(f"get_spark: unknown settings {sorted(unknown)}")
    return s


def _delta_jars_present(conf: Mapping[str, str]) -> bool:
    """Delta classes will be on the classpath: Databricks, Delta named in the settings, or in SPARK_HOME."""
    if os.environ.get("DATABRICKS_RUNTIME_VERSION"):
        return True
    listed = " ".join(conf.get(k, "") for k in ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath"))
    if "delta-spark" in listed or "io.delta" in listed:
        return True
    spark_home = os.environ.get("SPARK_HOME") or os.path.dirname(
        cast(str, cast(ModuleSpec, importlib.util.find_spec("pyspark")).origin)  # pyspark is imported: found
    )
    return bool(glob.glob(os.path.join(spark_home, "jars", "delta-spark_*.jar")))


def launcher_conf() -> dict[str, str]:
    """What ``spark-submit`` was told (``--master``, ``--conf``, ``--name``, spark-defaults.conf)
    when it started this Python process, else ``{}``.

    spark-submit hands its JVM to the Python driver through PYSPARK_GATEWAY_PORT; a plain
    ``python`` process has no gateway yet and nothing was decided for it.
    """
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return {}
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connect to spark-submit's JVM, so SparkConf reads its settings
    return {str(k): str(v) for k, v in SparkConf().getAll()}


def local_driver_memory(total_bytes: int | None = None) -> str:
    """The heap of a local session this process starts: a quarter of the machine's memory,
    1 to 8 GB. Spark's default of 1 GB runs out reading a realistic ``messages`` table
    (Parquet reads a whole row group's column chunk, up to 128 MB of payload, per task):
    decode over 1M messages died with "Java heap space" on 2 cores (benchmarks/run.py)."""
    if total_bytes is None:
        try:
            total_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # not POSIX: keep Spark's default
            return "1g"
    return f"{max(1, min(8, total_bytes // 4 // 2**30))}g"


# A local JVM started for a small amount of work compiles with C1 only (docs/performance.md,
# "C1-only JIT for small runs (quick JIT)"): on 2 cores HotSpot's C2 compiler spends about 10 s
# of CPU warming up during a 1,000-message run (the run's JVM CPU 25 s with C2, 15 s without;
# its wall 37 s and 23 s), code it never gets to use; a one-process run of 1 GB of dumps still
# finishes sooner without C2, one of 2 GB about evenly. On long CPU-bound JVM work C1 code is 3-5x slower,
# so only a command that knows its input is no larger gets it (``work_bytes`` <= ``quick_jit_bytes``).
QUICK_JIT_OPTION = "-XX:TieredStopAtLevel=1"
QUICK_JIT_BYTES = 1024 * 1024 * 1024


def quick_jit(settings: Mapping[str, Any] | None = None) -> bool:
    """Whether a local JVM started with ``settings`` compiles with C1 only: the command
    named the bytes it will read (``work_bytes``, None = unknown, e.g. a live DLQ) and they
    are at most ``quick_jit_bytes`` (default `QUICK_JIT_BYTES`, 1 GiB; 0 = never)."""
    s = _settings(settings)
    work, limit = s.get("work_bytes"), s.get("quick_jit_bytes", QUICK_JIT_BYTES)
    return work is not None and limit > 0 and work <= limit


def remote_url(settings: Mapping[str, Any] | None = None) -> str:
    """The Spark Connect server a new session talks to: the ``remote`` setting, else
    ``$SPARK_REMOTE`` (pyspark's own variable); "" builds a classic session with its own JVM."""
    return str(_settings(settings).get("remote") or os.environ.get("SPARK_REMOTE") or "")


def _connect_session_class():
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # the Connect client's packages are not installed: no session can be one
        return None
    return ConnectSession


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (Databricks serverless and shared
    clusters, ``spark.remote``): no SparkContext, no JVM in this process, no RDDs."""
    connect = _connect_session_class()
    return connect is not None and isinstance(spark, connect)


def active_connect() -> bool:
    """Whether this process has an active Spark Connect session already (a Databricks
    serverless task or notebook), without starting anything."""
    connect = _connect_session_class()
    return connect is not None and connect.getActiveSession() is not None


def connect_conf(settings: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The settings of a new Spark Connect session (pure): ``spark.remote`` and the SQL
    settings a session can change at runtime (``spark.sql.*`` of the defaults, then of
    ``spark_conf``). The server's JVM, master, memory and jars (Delta's included) are the
    server's business: they are fixed when it starts."""
    s = _settings(settings)
    conf = {k: v for k, v in BASE_CONF.items() if k.startswith("spark.sql.")}
    conf.update({str(k): str(v) for k, v in (s.get("spark_conf") or {}).items() if str(k).startswith("spark.sql.")})
    conf["spark.remote"] = remote_url(s)
    return conf


def session_conf(
    settings: Mapping[str, Any] | None = None, launcher: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The Spark settings ``get_spark`` uses for a new local session (pure; for tests and docs).

    Delta's SQL extension and catalog are added only when ``format`` is ``delta`` *and* Delta
    will be on the classpath (already there or named, or fetched once into the jar cache of
    `dlq_pipeline.engine.delta`, which then go on the class path of a local JVM, into
    ``spark.jars`` for another master): naming a catalog class that does not exist would
    break every query, Parquet ones included.

    ``launcher``: the settings spark-submit was started with (``launcher_conf()``). They win
    over the defaults and the configuration file: ``spark-submit --master yarn jobs/run.py``
    runs on YARN whatever ``spark.master`` says (that option is for locally built sessions).
    """
    s = _settings(settings)
    conf = dict(BASE_CONF)
    conf["spark.master"] = s.get("master") or "local[*]"
    conf["spark.app.name"] = s.get("app_name") or "dlq-pipeline"
    local = _local_jvm(s, launcher)
    if local:
        conf["spark.driver.memory"] = local_driver_memory()
    user = {str(k): str(v) for k, v in (s.get("spark_conf") or {}).items()}
    conf.update(user)
    conf.update({str(k): str(v) for k, v in (launcher or {}).items()})
    jars = []
    reader = jvm_reader.existing()
    if reader and not launcher:  # spark-submit's JVM has its classpath already: --jars names it there
        jars.append(reader)
    delta = s.get("format") == "delta"
    if delta and not _delta_jars_present(conf):
        jars += cached_jars()
    if s.get("s3a"):  # a path on S3: the connector, pointed where the Python side points
        if not s3a.listed(conf):
            jars += s3a.cached_jars()
        for key, value in s3a.spark_conf().items():
            conf.setdefault(key, value)  # the user's own S3A settings win
    if jars:
        # A local JVM is its own executor: the jars go on its class path, where the class
        # archive maps their classes too (`dlq_pipeline.engine.class_archive`); other masters
        # ship them to their executors.
        key, sep = (CLASSPATH, os.pathsep) if local else ("spark.jars", ",")
        listed = [j for j in conf.get(key, "").split(sep) if j]
        conf[key] = sep.join([*listed, *[j for j in jars if j not in listed]])
    if delta and _delta_jars_present(conf):
        extensions = [e for e in conf.get("spark.sql.extensions", "").split(",") if e]
        if DELTA_EXTENSION not in extensions:
            conf["spark.sql.extensions"] = ",".join([*extensions, DELTA_EXTENSION])
        conf.setdefault("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
    if _owns_java_options(s, launcher):
        options = [QUICK_JIT_OPTION] if quick_jit(s) else []
        if s.get("class_archive"):
            options.append(class_archive.java_options(str(s["class_archive"])))
        if options:
            conf["spark.driver.extraJavaOptions"] = " ".join(options)
    return conf


def _local_jvm(s: Mapping[str, Any], launcher: Mapping[str, str] | None) -> bool:
    """Whether a session built with ``s`` runs in a JVM this process starts itself, as its own
    executor: a local master and no spark-submit JVM (``launcher``)."""
    return not launcher and str(s.get("master") or "local[*]").startswith("local")


def _owns_java_options(s: Mapping[str, Any], launcher: Mapping[str, str] | None) -> bool:
    """Whether that JVM gets this module's options (C1 only, the class archive): the user's own
    ``spark.driver.extraJavaOptions`` replace them."""
    return _local_jvm(s, launcher) and "spark.driver.extraJavaOptions" not in (s.get("spark_conf") or {})


def local_classpath(settings: Mapping[str, Any] | None = None) -> list[str]:
    """The jars a local JVM built with ``settings`` gets on its class path besides Spark's own
    (the JVM reader's; Delta's cached jars for ``format`` delta): what its class archive is
    made for."""
    found = session_conf(settings, launcher_conf()).get(CLASSPATH, "")
    return [j for j in found.split(os.pathsep) if j]


def _python_env() -> None:
    """Workers must run this interpreter (pandas/Arrow UDFs fail on a bare `python3` otherwise)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def _build(conf: Mapping[str, str]) -> SparkSession:
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    if "spark.remote" not in conf:
        _start_jvm(conf)
    return builder.getOrCreate()


# --- the JVM's own output ----------------------------------------------------------------------
# A JVM this process starts writes to the stderr it inherits: log4j's start-up and WARN lines
# ("Using Spark's default log4j profile", the loopback-address, native-hadoop and plan-
# truncation warnings), the JVM's own "WARNING: Using incubator modules", and whatever Python
# workers print. Interleaved with our progress (or with --log-format json lines) that is noise
# an operator cannot act on. So the JVM is started with a pipe as its stderr, and each line
# becomes a log record of the logger "dlq_pipeline.jvm": log4j ERROR/FATAL lines and lines we
# do not recognise (a worker's traceback, an OutOfMemoryError) at WARNING and above, shown
# by default; log4j WARN/INFO lines and the known start-up lines at INFO, shown with -v.

JVM_LOGGER = logging.getLogger("dlq_pipeline.jvm")
_LOG4J_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ")
_START_UP_LINES = (
    "WARNING: Using incubator modules",
    "Using Spark's default log4j profile",
    "Setting default log level to",
    "To adjust logging level use sc.setLogLevel",
    ":: loading settings ::",
)
_LOG4J_LEVELS = {
    "TRACE": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.INFO,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
}


def jvm_line_level(line: str) -> int:
    """The log level a line the JVM printed gets (see above)."""
    match = _LOG4J_LINE.match(line)
    if match:
        return _LOG4J_LEVELS[match.group(1)]
    if line.startswith(_START_UP_LINES) or not line.strip():
        return logging.INFO
    return logging.WARNING


def _forward(fd: int) -> None:
    """Turn what arrives on ``fd`` into log records, line by line, until every writer is gone."""
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        pending = b""
        while True:
            try:
                chunk = pipe.read(65536)
            except OSError:
                return
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                _log_jvm_line(raw)
        if pending:
            _log_jvm_line(pending)


def _log_jvm_line(raw: bytes) -> None:
    line = raw.decode("utf-8", "replace").rstrip("\r")
    try:
        JVM_LOGGER.log(jvm_line_level(line), "%s", line)
    except Exception:  # noqa: BLE001 - a logging failure must never block the JVM's stderr
        pass


def _start_jvm(conf: Mapping[str, str]) -> None:
    """Start Spark's JVM (the gateway and its SparkContext) with a pipe as its stderr, read by
    a daemon thread that logs each line (see above). The JVM's children (Python workers) keep
    the pipe. Nothing changes when a SparkContext exists already or with
    ``DLQ_PIPELINE_JVM_STDERR=raw``."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._active_spark_context is not None or os.environ.get("DLQ_PIPELINE_JVM_STDERR") == "raw":
        return
    spark_conf = SparkConf(loadDefaults=False).setAll(list(conf.items()))
    read_end, write_end = os.pipe()
    try:
        gateway = launch_gateway(spark_conf, popen_kwargs={"stderr": write_end})
    finally:
        os.close(write_end)  # the JVM has its copy: the pipe ends when the JVM and its workers do
    threading.Thread(target=_forward, args=(read_end,), name="jvm-stderr", daemon=True).start()
    SparkContext(conf=spark_conf, gateway=gateway)


def _quiet(spark: SparkSession, level: str) -> None:
    try:
        spark.sparkContext.setLogLevel(level)
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext: nothing to quieten
        pass


def get_spark(settings: Mapping[str, Any] | None = None) -> SparkSession:
    """The active SparkSession, or a new local one.

    ``settings``: ``master`` (default ``local[*]``), ``remote`` (a Spark Connect URL,
    ``sc://host:port``, default ``$SPARK_REMOTE``; `connect_conf`), ``app_name``, ``spark_conf`` (extra Spark
    settings, overriding the defaults), ``format`` (``"delta"`` adds Delta's extension and
    catalog when Delta is available), ``log_level`` (default WARN), ``work_bytes`` and
    ``quick_jit_bytes`` (a small command's JVM compiles with C1 only: `quick_jit`),
    ``class_archive`` (the JVM class archive a local JVM maps; default: the one
    `dlq_pipeline.engine.class_archive` built for this Java and pyspark, if any),
    ``archive_classes`` (where there is no archive, one is built for the next local JVM
    once this process exits: `dlq_pipeline.engine.class_archive.claim`; the CLI's commands
    ask for it), and ``s3a`` (a path is on S3: Hadoop's S3A connector and its
    settings, `dlq_pipeline.engine.s3a`).

    An existing session (Databricks, a notebook, spark-submit) is returned as it is, apart
    from ``spark_conf`` entries that can be changed at runtime: it belongs to the caller.
    """
    s = _settings(settings)
    _python_env()
    active = SparkSession.getActiveSession()
    if active is not None:
        for key, value in (s.get("spark_conf") or {}).items():
            try:
                if active.conf.isModifiable(str(key)):
                    active.conf.set(str(key), str(value))
            except Exception:  # noqa: BLE001 - static or unknown settings stay as they are
                log.debug("cannot set %s on the active session", key)
        return active

    if remote_url(s):
        spark = _build(connect_conf(s))
    else:
        launcher = launcher_conf()
        classpath = local_classpath(s)
        s.setdefault("class_archive", class_archive.existing(classpath))
        spark = _build(session_conf(s, launcher))
        if s.get("archive_classes") and not s["class_archive"] and _owns_java_options(s, launcher):
            next_run = class_archive.claim(classpath)
            if next_run is not None:
                next_run.build_after_exit(str(s.get("format") or "parquet"), bool(s.get("s3a")))
    _quiet(spark, s.get("log_level") or LOG_LEVEL)
    return spark


def _managed_memory(spark: SparkSession) -> list[int] | None:
    """The memory Spark manages (may cache blocks in) in each executor with a block
    manager, the driver's too; None where this process cannot ask (Spark Connect)."""
    jsc = getattr(spark, "_jsc", None)
    if jsc is None:
        return None
    try:
        values = jsc.sc().getExecutorMemoryStatus().valuesIterator()  # (max, remaining) per executor
        sizes = []
        while values.hasNext():
            sizes.append(int(values.next()._1()))
        return sizes or None
    except Exception:  # noqa: BLE001 - only a hint for how much to cache or run at once
        return None


def storage_memory_bytes(spark: SparkSession) -> int | None:
    """The memory Spark may keep cached blocks in, summed over its executors (the driver's,
    in local mode); None where this process cannot ask (Spark Connect)."""
    sizes = _managed_memory(spark)
    return sum(sizes) if sizes else None


def _executor_memory(spark: SparkSession) -> tuple[int, int] | None:
    """(executors that run tasks, the memory Spark manages in each). The driver's entry
    counts only in local mode, where it is the one executor."""
    sizes = _managed_memory(spark)
    if not sizes:
        return None
    local = cast(str, spark.sparkContext.master).startswith("local")  # a started context has its master
    return (len(sizes) if local or len(sizes) == 1 else len(sizes) - 1), max(sizes)


def tasks_that_fit(spark: SparkSession, task_bytes: int) -> int | None:
    """How many tasks may run at once when each holds ``task_bytes`` of heap (`fitting_tasks`
    over this session's executors); None when every slot fits or this process cannot ask."""
    memory = _executor_memory(spark)
    if memory is None:
        return None
    return fitting_tasks(*memory, spark.sparkContext.defaultParallelism, task_bytes)


def fitting_tasks(executors: int, managed: int, slots: int, task_bytes: int) -> int | None:
    """Per executor as many tasks as its ``managed`` memory holds, at least one, at most its
    share of the ``slots``; None when that is every slot (no cap is needed). Spark's
    scheduler fills free slots wherever they are, so a stage cut to this many partitions
    keeps the count exact only in local mode; on a cluster it is the average per executor."""
    if task_bytes <= 0:
        return None
    fit = executors * max(1, min(max(1, slots // executors), managed // task_bytes))
    return fit if fit < slots else None


def delta_available(spark: SparkSession) -> bool:
    """Whether Delta Lake's classes are on this session's classpath."""
    if os.environ.get("DATABRICKS_RUNTIME_VERSION"):
        return True
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:  # Spark Connect: the server decides; let Delta's own error speak
        return True
    try:
        return bool(jvm.org.apache.spark.util.Utils.classIsLoadable("org.apache.spark.sql.delta.DeltaLog"))
    except Exception:  # noqa: BLE001
        return False


def delta_missing(settings: Mapping[str, Any] | None = None) -> bool:
    """``format`` is delta but a session ``get_spark`` would build could not load Delta: the
    CLI's exit 2 *before* a JVM starts. An active session is judged by `delta_available`."""
    s = _settings(settings)
    if s.get("format") != "delta" or remote_url(s) or SparkSession.getActiveSession() is not None:
        return False  # a Connect server (or an active session) has its own classpath
    return DELTA_EXTENSION not in session_conf(s, launcher_conf()).get("spark.sql.extensions", "").split(",")


def s3a_missing(settings: Mapping[str, Any] | None = None) -> bool:
    """A path is on S3 (``s3a``) but a session ``get_spark`` would build could not load S3A:
    the CLI's exit 2 *before* a JVM starts. An active session is judged by
    `dlq_pipeline.engine.s3a.available`."""
    s = _settings(settings)
    if not s.get("s3a") or remote_url(s) or SparkSession.getActiveSession() is not None:
        return False
    return not s3a.listed(session_conf(s, launcher_conf()))  # the cached jars are listed there when fetched
