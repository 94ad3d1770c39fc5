"""Ingest's dmpmqmsg reader in the JVM: the dumps dmpmqmsg writes, parsed where Spark runs.

The Python reader (`dumps.dmpmqmsg`) parses a dump in a Python worker and ships every
message to the JVM through Arrow: about twice the time of reading the file as text lines
before the JVM holds a row (docs/performance.md, "The JVM dmpmqmsg reader"). The Java data source in
``dlq_pipeline/ingest/jvm/`` (``dlqpipeline.ingest.DumpSource``, DataSource V2, one partition
per work item) reads the same work items into the same rows in the executors themselves.
This module says which items it may read (`readable`), what it is told (`layout`,
`items_option`) and builds its jar; the Spark side, the reader's DataFrame and whether a
session has it, is `ingest.spark` (`read_in_jvm`, `jvm_available`).

It reads what dmpmqmsg writes: a header, then per message its 28 ``A`` lines in either of
dmpmqmsg's two orders and its ``X`` lines. Anything else in a work item (a bad record, ``S``
or ``T`` lines, ``N`` lines, a character field outside ASCII, a file that ends inside a
line, a banner before the header) ends the item with one ``rec = "fallback"`` row, and
ingest reads that item again with the Python reader, which knows every case (`ingest.spark.land`).
So the rows are always the Python reader's rows: `tests/spark/test_jvm_reader.py` holds the
two to each other, row for row, on the real fixtures, generated DLQs and damaged dumps cut
anywhere. What the Java code needs of the format (the attribute table, the MQMD defaults,
the chain prefixes of ``data_head``, the limits) comes from this package (`layout`), so the
format is stated in one place.

**The jar** is built from the sources shipped in the package with the JDK's ``javac``
against pyspark's own jars (``python -m dlq_pipeline.ingest.jvm_reader``; ``make jvm-reader``,
which ``make demo``, ``test``, ``bench`` and ``package`` run), into the package directory,
named by the sources' digest: a jar built from other sources is never used, and the digest
is checked again by the data source itself (a cluster or a Connect server that has another
build answers "unavailable"). `get_spark` puts it on the class path of a local JVM it starts
(``spark.jars`` for another master); ``make package`` copies it to ``dist/`` for
``spark-submit --jars`` and a Databricks cluster library (docs/deploy.md). Where it is not
on the classpath (Databricks serverless, a Connect server started without it,
``ingest.reader = "python"``), ingest reads with Python.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SOURCE_DIR = Path(__file__).resolve().parent / "jvm"
SOURCE_CLASS = "dlqpipeline.ingest.DumpSource"
JAR_PREFIX = "dlq-pipeline-reader-"
DIGEST_RESOURCE = "dlqpipeline/ingest/digest.txt"
DIST_NAME = "dlq-pipeline-reader.jar"  # its name in dist/ (spark-submit --jars, a cluster library)
BUILD_TIMEOUT_S = 300
_COMPILE_JARS = ("spark-", "jackson-", "scala-library", "kryo", "hadoop-client-api")


def sources() -> list[Path]:
    return sorted(SOURCE_DIR.glob("*.java"))


def source_digest() -> str:
    """The digest of the Java sources: the jar's name and what the data source checks."""
    h = hashlib.sha256()
    for path in sources():
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def jar_path() -> Path:
    """Where the jar built from these sources lives (it may not exist)."""
    return SOURCE_DIR / f"{JAR_PREFIX}{source_digest()}.jar"


def existing() -> str | None:
    """The jar for these sources, when it was built."""
    path = jar_path()
    return str(path) if path.is_file() else None


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "javac") if home else shutil.which("javac")
    return found if found and os.path.exists(found) else None


def _pyspark_jars() -> Path:
    """The jars directory of the installed pyspark, found without importing it: javac needs
    its files, not Spark."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("No module named 'pyspark'", name="pyspark")
    return Path(spec.origin).resolve().parent / "jars"


def build(force: bool = False) -> Path:
    """Compile the sources into the jar (a no-op when it exists, unless ``force``): javac
    ``--release 17`` against the Spark, Jackson, Hadoop and Scala jars of this pyspark; the
    jar is written under a temporary name and renamed when whole, and older builds are
    removed. Raises RuntimeError with javac's output."""
    jars = _pyspark_jars()
    target = jar_path()
    if target.is_file() and not force:
        return target
    javac = _javac()
    if javac is None:
        raise RuntimeError("no javac (a JDK 17) found on PATH or in JAVA_HOME: the JVM reader cannot be built")
    classpath = os.pathsep.join(str(j) for j in sorted(jars.glob("*.jar")) if j.name.startswith(_COMPILE_JARS))
    with tempfile.TemporaryDirectory(prefix="dlq-jvm-reader-") as work:
        classes = Path(work) / "classes"
        done = subprocess.run(
            [
                javac,
                "--release",
                "17",
                "-nowarn",
                "-encoding",
                "UTF-8",
                "-cp",
                classpath,
                "-d",
                str(classes),
                *map(str, sources()),
            ],
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
        if done.returncode != 0:
            raise RuntimeError(f"javac failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        entries = {
            "META-INF/MANIFEST.MF": b"Manifest-Version: 1.0\nCreated-By: dlq-pipeline\n\n",
            DIGEST_RESOURCE: source_digest().encode(),
        }
        entries.update({p.relative_to(classes).as_posix(): p.read_bytes() for p in sorted(classes.rglob("*.class"))})
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as jar:
            for name, data in entries.items():  # fixed times: the same sources give the same bytes
                jar.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
        os.replace(partial, target)
    for old in SOURCE_DIR.glob(f"{JAR_PREFIX}*.jar"):
        if old != target:
            old.unlink(missing_ok=True)
    return target


# --- what the Java code is told ----------------------------------------------------------------


def layout(max_line_length: int, max_message_bytes: int | None, dump_time_zone: str = "UTC") -> dict[str, Any]:
    """The ``layout`` option: the format and the rows as this package states them (pure);
    ``dump_time_zone`` is the IANA zone dump headers' ``Created:`` stamps are read in."""
    from dlq_pipeline.dumps import dmpmqmsg
    from dlq_pipeline.dumps.sources import SNIFF_BYTES
    from dlq_pipeline.mq import dlh_decoder, structures
    from dlq_pipeline.mq.mqmd import MQMD, MQMD_FIELDS
    from dlq_pipeline.runtime import testhooks
    from dlq_pipeline.tables import MD_COLUMNS

    default = MQMD()
    kinds: dict[str, str] = {}
    for attr in dmpmqmsg.ATTRIBUTES.values():
        kinds.setdefault(attr.field, attr.kind if attr.kind != dmpmqmsg.HEXTEXT else dmpmqmsg.CHAR)

    def described(value, kind):
        return value.hex() if kind == dmpmqmsg.BYTE else value

    orders = [
        [{"code": a.code, "column": MD_COLUMNS[a.field], "kind": a.kind, "length": a.length} for a in order]
        for order in dmpmqmsg.MD_BLOCK_ORDERS
    ]
    return {
        "digest": source_digest(),
        "orders": orders,
        "md_columns": [
            {"column": MD_COLUMNS[f], "kind": kinds[f], "default": described(getattr(default, f), kinds[f])}
            for f in MQMD_FIELDS
        ],
        "key_columns": [MD_COLUMNS[f] for f in ("msg_id", "correl_id", "put_date", "put_time", "put_appl_name")],
        "max_line_length": max_line_length,
        "max_message_bytes": max_message_bytes,
        "sniff_bytes": SNIFF_BYTES,
        "header_prefixes": [f"* {tool} Version:" for tool in dmpmqmsg.HEADER_TOOLS],
        "header_search_lines": dmpmqmsg.HEADER_SEARCH_LINES,
        "created": {"pattern": dmpmqmsg.CTIME_PATTERN, "months": list(dmpmqmsg.CTIME_MONTHS)},
        "dump_time_zone": dump_time_zone,
        "head": {
            "dlh_length": structures.DLH_LENGTH,
            "chain_scan_limit": dlh_decoder.CHAIN_SCAN_LIMIT,
            "format_offset": dlh_decoder.chain_format_offset(),
            "prefixes": sorted(p.hex() for p in dlh_decoder.chain_format_prefixes()),
        },
        "crash": {"point": "ingest-record", "at_env": testhooks.CRASH_AT_ENV, "marker_env": testhooks.MARKER_ENV},
    }


# URI schemes the JVM reader opens through Hadoop's FileSystem, with Spark's Hadoop
# configuration and credentials (Kerberos delegation tokens included); a file system the
# executors' classpath lacks (s3a without hadoop-aws, say) makes the item fall back to Python.
HADOOP_SCHEMES = ("hdfs", "webhdfs", "swebhdfs", "s3a", "gs", "abfs", "abfss", "dbfs")


def readable(item) -> bool:
    """Whether the JVM reader may take this work item: a dmpmqmsg dump at a local path
    (``/dbfs``, ``/Volumes`` and NFS mounts included) or a URI Hadoop's FileSystem opens."""
    if item.kind != "dmpmqmsg":
        return False
    return os.path.isabs(item.path) or urllib.parse.urlsplit(item.path).scheme in HADOOP_SCHEMES


def items_option(numbered: Sequence[tuple[int, Any]]) -> str:
    """The ``items`` option: (number in the plan, FileSplit) pairs as JSON. The JVM opens an
    input at the name it was given (``hdfs://``, not the WebHDFS URL Python reads it at)."""
    return json.dumps(
        [
            {
                "number": n,
                "location": i.path,
                "source_file": i.path,
                "qmgr": i.qmgr,
                "queue": i.queue,
                "start": i.start,
                "end": i.end,
                "split": i.split,
                "splits": i.splits,
                "modified": i.modified,
            }
            for n, i in numbered
        ]
    )


def copy_to(directory: Path) -> Path:
    """The jar (built when missing) copied to ``directory`` as ``DIST_NAME``: what
    ``spark-submit --jars`` and a Databricks cluster library are given. The name carries no
    digest; the jar checks its own against the package's when a session resolves it."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / DIST_NAME
    shutil.copy2(build(), target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the JVM reader's jar (into the package directory).")
    parser.add_argument("--force", action="store_true", help="build again even if it exists")
    parser.add_argument("--copy-to", metavar="DIR", help=f"also copy it to DIR/{DIST_NAME} (e.g. dist)")
    parser.add_argument(
        "--print-path",
        action="store_true",
        help="print where the jar of this installation is, without building (exit 1 if none)",
    )
    args = parser.parse_args(argv)
    if args.print_path:
        found = existing()
        print(
            found or f"jvm-reader: no jar built for these sources ({jar_path()})",
            file=sys.stdout if found else sys.stderr,
        )
        return 0 if found else 1
    try:
        print(build(force=args.force))
        if args.copy_to:
            print(copy_to(Path(args.copy_to)))
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
        print(f"jvm-reader: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
