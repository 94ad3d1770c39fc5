"""Where the tables live: Parquet dataset directories (default) or Delta tables, behind one API.

Every write is an append or an idempotent ``merge_new`` (insert the rows whose key is not
there yet), so both formats behave the same and a rerun adds nothing twice. Every write
and read goes through ``schemas.conform``: what is stored, and what is read back, has
exactly the schema in ``schemas/<table>.json``.

- **Parquet**: table ``t`` is the dataset directory ``PATH/t`` (local, ``file:``, ``dbfs:``,
  ``/Volumes``, ``hdfs:``, ``s3a:``, ``gs:``, ``abfss:``: where Spark's Hadoop file systems
  write and `dlq_pipeline.fs` reaches). ``merge_new`` is an anti-join against the keys
  already stored, then an append.
- **Delta**: by path (``PATH/t``) or, with ``catalog``/``schema``, by name
  (``catalog.schema.t``; the schema is created when missing). Each table is created with its
  declared schema (NOT NULL columns are enforced by Delta on every write, and a write with
  another schema is refused), the ``ledger`` with ``delta.appendOnly`` (Delta refuses any
  UPDATE or DELETE of audit rows). ``merge_new`` is ``MERGE ... WHEN NOT MATCHED THEN INSERT
  *``: a commit is atomic (nothing to clean up after a killed write), and a MERGE that loses
  an optimistic-concurrency race to another writer is retried on the new snapshot, so two
  writers landing the same rows insert them once. ``as_of(RUN_ID | TIMESTAMP)`` gives a
  read-only view of the tables as they were (time travel). Needs Delta Lake on the classpath
  (Databricks, ``--packages``, or the jars of `dlq_pipeline.engine.delta`); without it the
  constructor fails with one error that says how to fix it.

Spark reads and writes the tables; the files Storage handles itself (the directories, a
Parquet table's data files listed, read as small tables and deleted after a compaction, a
Delta table's first commit looked for, the run summaries) go through `dlq_pipeline.fs`, the
layer replay's checkpoints and the lease's fence use on the same paths (``hdfs://`` over
WebHDFS at ``webhdfs``, the ``hdfs.webhdfs`` setting). It needs no JVM, so a Spark Connect
client reaches a warehouse on HDFS or object storage as a classic driver does.

The warehouse directory and the run summaries are created owner-only (0700 / 0600): message
bodies may hold personal data.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Mapping, Sequence
from functools import reduce
from typing import Any, cast

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from dlq_pipeline import fs as files
from dlq_pipeline.config.options import STORAGE_FORMATS
from dlq_pipeline.config.settings import StorageSettings
from dlq_pipeline.engine.session import DELTA_FIX, delta_available
from dlq_pipeline.engine.sql_text import sql_column
from dlq_pipeline.errors import DlqPipelineError, UsageError
from dlq_pipeline.runtime.clock import as_utc, epoch_micros, iso_z
from dlq_pipeline.runtime.paths import plain_path
from dlq_pipeline.tables import table_key
from dlq_pipeline.warehouse.schemas import arrow_conformed, arrow_schema, collected_arrow, conform, table_schema

log = logging.getLogger(__name__)

FORMATS = STORAGE_FORMATS  # the choices of the storage.format option
RUNS_DIR = "_runs"
STAGING_DIR = "_temporary"  # Hadoop's FileOutputCommitter stages task output here
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_TABLE = re.compile(r"[a-z][a-z0-9_]*")
# Tables a run appends a few rows to, read whole by every run, where a row written twice means
# what it means once (a set of keys, of landing events, the latest state of a path): their
# small data files are merged into one once more than COMPACT_FILES of them are below
# COMPACT_SMALL_BYTES, so their file counts follow their sizes, not the number of runs.
COMPACTED_TABLES = ("files", "landings", "keys")
COMPACT_FILES = 16
COMPACT_SMALL_BYTES = 8 << 20
_AUTO_COMPACT = {"delta.autoOptimize.autoCompact": "true"}
# Delta table properties per table: those tables compact themselves; audit rows are never
# changed; the lease's one row is rewritten at every renewal, so its log and old files are
# kept a day, not Delta's 30 and 7.
TABLE_PROPERTIES = {
    **dict.fromkeys(COMPACTED_TABLES, _AUTO_COMPACT),
    "ledger": {"delta.appendOnly": "true"},
    "leases": {
        "delta.logRetentionDuration": "interval 1 days",
        "delta.deletedFileRetentionDuration": "interval 1 days",
    },
}
# A commit that lost an optimistic-concurrency race (ConcurrentAppendException & co., or the
# table created by the other writer first): redone on the new snapshot.
_CONFLICT = re.compile(
    r"Concurrent\w*Exception|DELTA_CONCURRENT|ProtocolChanged|MetadataChanged|"
    r"TABLE_OR_VIEW_ALREADY_EXISTS|DELTA_TABLE_ALREADY_EXISTS|"
    r"DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION"
)
# Parquet writer options per table, on every write of it. Parquet tries a dictionary for
# every column and, once it passes 1 MB, throws it away and encodes the page again plainly:
# for values that are (nearly) all distinct, work done twice. No dictionary for a message's
# data and head (a quarter of the messages write; snappy still compresses repeated bodies
# within a page), nor for the columns unique by
# construction: a key, a digest, a MsgId, a position in its file (with the cache's columns
# left uncompressed, an eighth of a 100,000-message ingest's CPU: docs/performance.md,
# "Parquet dictionaries in the stored tables").
UNIQUE_MESSAGE_COLUMNS = ("message_key", "data_digest", "msg_id", "source_index", "source_line", "source_offset")
TABLE_PARQUET_OPTIONS = {
    "messages": {
        f"parquet.enable.dictionary#{column}": "false" for column in ("data", "data_head", *UNIQUE_MESSAGE_COLUMNS)
    }
}
# A field of a Delta table with column mapping carries the name its data files give it here.
COLUMN_MAPPING_NAME = "delta.columnMapping.physicalName"
COMMIT_ATTEMPTS = 8
# How long a writer waits for another's CREATE of a Delta table to commit its first version
# (the other has made the table's _delta_log; Delta then calls the table existing).
CREATE_WAIT_SECONDS = 60.0


class StorageError(DlqPipelineError, RuntimeError):
    """The storage cannot be used as configured."""


class WarehouseMismatch(StorageError, UsageError):
    """The warehouse does not hold what the command asks of it: no tables (a wrong path must
    not read as an empty DLQ), or no history for ``--as-of`` (exit 2)."""


def default_fs(spark: SparkSession, path: str) -> tuple[str, str] | None:
    """Spark's default file system (``fs.defaultFS``) and ``path`` as Spark resolves it there;
    None over Spark Connect (no JVM here to ask)."""
    jvm, jsc = getattr(spark, "_jvm", None), getattr(spark, "_jsc", None)
    if jvm is None or jsc is None:
        return None
    conf = jsc.hadoopConfiguration()
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(conf)
    return str(conf.get("fs.defaultFS")), str(fs.makeQualified(jvm.org.apache.hadoop.fs.Path(path)).toString())


def local_table(path: str, table: str):
    """The rows of ``table`` of the Parquet warehouse at the local ``path``, as one Arrow
    table of its schema, read without Spark (before a session starts); None where ``path``
    is not local or holds no such table, or a file of it cannot be read."""
    import pyarrow as pa

    if plain_path(path) is None:
        return None
    try:
        found = _arrow_table(files.files_uri(files.join(path, table)), table)
    except (OSError, pa.ArrowException):
        return None
    return found if found.num_rows else None


def _is_data_file(name: str) -> bool:
    """A Parquet data file of a table's directory (not hidden, not Spark's ``_SUCCESS`` & co.)."""
    return name.endswith(".parquet") and not name.startswith((".", "_"))


def _data_files(uri: str) -> list[str]:
    """The Parquet data files directly in the directory ``uri`` (`_is_data_file`), sorted."""
    return sorted(n for n in files.list_names(uri) if _is_data_file(n))


def _has_data(uri: str) -> bool:
    """A dataset directory at ``uri`` that a write has completed in (not just an empty directory)."""
    return any(n == "_SUCCESS" or n.endswith(".parquet") for n in files.list_names(uri))


def _arrow_table(uri: str, table: str):
    """The rows of every data file of ``table`` in the directory ``uri`` (`_data_files`), read
    here with no Spark job, as one Arrow table of its schema (`arrow_conformed`).
    FileNotFoundError when a file listed is gone before it is read."""
    import pyarrow as pa

    parts = [arrow_conformed(_read_parquet(files.join(uri, n)), table) for n in _data_files(uri)]
    return pa.concat_tables(parts) if parts else arrow_schema(table).empty_table()


def _read_parquet(uri: str):
    """The rows of the Parquet file ``uri`` as an Arrow table, from its bytes read whole (one
    request on a remote store; the files read so are small tables')."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = files.read_bytes(uri)
    if data is None:
        raise FileNotFoundError(uri)
    return pq.read_table(pa.BufferReader(data))


def _delete_data_files(uri: str, names: Sequence[str]) -> None:
    """Delete the data files ``names`` in the directory ``uri``, and on a local file system the
    ``.crc`` checksum Hadoop's local file system writes beside each; a name already gone is
    no error."""
    local = files.is_local(uri)
    for name in names:
        for gone in (name, f".{name}.crc") if local else (name,):
            files.delete(files.join(uri, gone))


def _delta_conflict_types() -> tuple[type, ...]:
    """delta-spark's Python names for a lost optimistic-concurrency race (when its pip package
    is installed; a runtime without it still raises them, recognised by name)."""
    try:
        from delta.exceptions import (
            ConcurrentAppendException,
            ConcurrentDeleteDeleteException,
            ConcurrentDeleteReadException,
            ConcurrentTransactionException,
            ConcurrentWriteException,
            DeltaConcurrentModificationException,
            MetadataChangedException,
            ProtocolChangedException,
        )
    except ImportError:
        return ()
    return (
        ConcurrentAppendException,
        ConcurrentDeleteDeleteException,
        ConcurrentDeleteReadException,
        ConcurrentTransactionException,
        ConcurrentWriteException,
        DeltaConcurrentModificationException,
        MetadataChangedException,
        ProtocolChangedException,
    )


def is_conflict(exc: BaseException) -> bool:
    """``exc`` is Delta refusing a commit because another writer committed first
    (ConcurrentAppend/ConcurrentDeleteRead/ConcurrentDeleteDelete/ConcurrentTransaction/
    MetadataChanged/ProtocolChanged..., or the table created by the other writer first)."""
    return isinstance(exc, _delta_conflict_types()) or bool(_CONFLICT.search(f"{type(exc).__name__} {exc}"))


def parse_instant(text: str) -> dt.datetime | None:
    """``2026-11-23``, ``2026-11-23T17:05:00Z``, ``2026-11-23 17:05:00+01:00`` -> aware UTC; else None
    (naive means UTC, as everywhere in the pipeline)."""
    try:
        value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return as_utc(value)


def _null_safe_match(left: str, right: str, key: Sequence[str]):
    return reduce(
        lambda a, b: a & b,
        [F.col(f"{left}.{sql_column(k)}").eqNullSafe(F.col(f"{right}.{sql_column(k)}")) for k in key],
    )


class Storage:
    """The pipeline's tables, as Parquet or Delta; see the module docstring.

    ``Storage(spark, format="parquet"|"delta", path="./warehouse", catalog=None, schema=None)``.
    ``catalog``/``schema`` select Delta tables by name; ``path`` still holds the run summaries.
    """

    def __init__(
        self,
        spark: SparkSession,
        format: str = "parquet",  # noqa: A002 - the configuration's word
        path: str = "./warehouse",
        catalog: str | None = None,
        schema: str | None = None,
        as_of: dt.datetime | None = None,
        webhdfs: str = "",
    ):
        if format not in FORMATS:
            raise StorageError(f"storage format must be one of {', '.join(FORMATS)}, not {format!r}")
        if format == "parquet" and (catalog or schema):
            raise StorageError("catalog/schema name Delta tables; Parquet tables live under storage.path")
        if catalog and not schema:
            raise StorageError("a Delta catalog needs a schema (database) too: catalog.schema.table")
        if format == "delta" and not delta_available(spark):
            raise StorageError(
                f"storage format 'delta' needs Delta Lake on the Spark classpath, and it is not: {DELTA_FIX}"
            )
        if plain_path(path) == path and not os.path.isabs(path):
            path = os.path.abspath(path)  # this process's directory, not a Spark Connect server's
        self.spark = spark
        self.format = format
        self.path = path.rstrip("/") or "/"
        self.catalog = catalog or None
        self.schema = schema or None
        self.as_of_time = as_utc(as_of)
        self.webhdfs = webhdfs  # the NameNode's HTTP address for an hdfs:// path (hdfs.webhdfs)
        self._evolved: set[str] = set()  # Delta tables checked for columns declared since they were created

    def __repr__(self) -> str:
        where = f"{self.catalog}.{self.schema}" if self.by_name else self.path
        when = f", as of {iso_z(self.as_of_time)}" if self.as_of_time else ""
        return f"Storage({self.format}, {where}{when})"

    def as_of(self, when: str | dt.datetime) -> Storage:
        """A read-only view of the tables as they were at ``when``: an instant (ISO 8601, naive
        = UTC) or a run id (the end of that run, from its summary). Delta only: Parquet keeps
        no history."""
        if self.format != "delta":
            raise WarehouseMismatch(
                'time travel (--as-of) needs storage.format = "delta": Parquet tables keep no history'
            )
        instant = as_utc(when) if isinstance(when, dt.datetime) else parse_instant(when)
        if instant is None:
            # ``when`` is a str here: as_utc gives no None for a datetime
            summary = self._read_text(self.summary_path(cast(str, when)))
            if summary is None:
                raise WarehouseMismatch(
                    f"--as-of {when!r} is neither a timestamp (ISO 8601) nor a run with a summary "
                    f"in {self.path}/{RUNS_DIR}"
                )
            instant = parse_instant(json.loads(summary)["finished_at"])
        return Storage(
            self.spark, self.format, self.path, self.catalog, self.schema, as_of=instant, webhdfs=self.webhdfs
        )

    # --- where ---------------------------------------------------------------------------

    @property
    def by_name(self) -> bool:
        return self.format == "delta" and self.schema is not None

    def location(self, table: str) -> str:
        """The table's directory, or its catalog name (``catalog.schema.table``)."""
        if not _TABLE.fullmatch(table):
            raise StorageError(f"not a table name: {table!r}")
        if self.by_name:
            parts = [p for p in (self.catalog, self.schema, table) if p]
            return ".".join(sql_column(p) for p in parts)
        return f"{self.path}/{table}"

    def _delta_ref(self, table: str) -> str:
        return self.location(table) if self.by_name else f"delta.{sql_column(self.location(table))}"

    # --- reading -------------------------------------------------------------------------

    def exists(self, table: str) -> bool:
        where = self.location(table)
        if self.by_name:
            return bool(self.spark.catalog.tableExists(where))
        if self.format == "delta":
            return self._delta_log_has_commit(where)
        return _has_data(self._uri(where))

    def _delta_log_has_commit(self, where: str) -> bool:
        """A Delta table is at ``where`` once its first commit is: a writer creating it makes
        ``_delta_log`` before version 0 lands there, and a table whose early commits the log
        cleanup removed has a checkpoint (``_last_checkpoint`` names it)."""
        log_dir = f"{where}/_delta_log"
        return files.exists(self._uri(f"{log_dir}/{0:020d}.json")) or files.exists(
            self._uri(f"{log_dir}/_last_checkpoint")
        )

    def _history_starts_after(self, table: str, instant: dt.datetime) -> bool:
        """The table's first commit is later than ``instant`` (it did not exist then)."""
        first = (
            self.spark.sql(f"DESCRIBE HISTORY {self._delta_ref(table)}")
            .agg(F.min(F.unix_micros("timestamp")).alias("us"))
            .collect()[0]["us"]
        )
        return first is None or first > epoch_micros(instant)

    def require_tables(self) -> None:
        """Raise `WarehouseMismatch` naming the warehouse when it holds no `messages` table: a
        wrong path must not read as an empty DLQ (reports of zeros, empty charts)."""
        if not self.exists("messages"):
            where = f"{self.catalog}.{self.schema}" if self.by_name else self.path
            raise WarehouseMismatch(
                f"no tables in the warehouse {where} ({self.format}): wrong path? "
                "(ingest or run land messages there first)"
            )

    def read(self, table: str) -> DataFrame:
        """The table, with exactly its schema; an empty DataFrame with that schema when absent
        (or, for a view `as_of` an instant, when it did not exist yet then)."""
        schema = table_schema(table)
        if not self.exists(table):
            return self._empty(schema)
        where = self.location(table)
        if self.as_of_time is not None:
            if self._history_starts_after(table, self.as_of_time):
                return self._empty(schema)
            stamp = self.as_of_time.strftime("%Y-%m-%d %H:%M:%S.%f")  # the session time zone is UTC
            df = self.spark.sql(f"SELECT * FROM {self._delta_ref(table)} TIMESTAMP AS OF '{stamp}'")
        elif self.by_name:
            df = self.spark.read.table(where)
        elif self.format == "delta":
            df = self.spark.read.format("delta").load(where)
        else:
            # Reading with the declared schema: no inference, and columns added to a schema
            # later read as null from older files.
            df = self.spark.read.schema(schema).parquet(where)
        if self.format == "delta":
            df = self._with_added_columns(df, table)
        return conform(df, table)

    @property
    def names_files(self) -> bool:
        """Whether this storage's tables are Parquet files at a path that it lists and reads
        itself; not where Delta's log names them (and skips by its own statistics), for a
        catalog's tables or a view of the past."""
        return self.format == "parquet" and not self.by_name and self.as_of_time is None

    def data_files(self, table: str) -> list[str] | None:
        """The names of the data files of a Parquet ``table`` at a path, sorted (one listing);
        None where the table's files are not ours to name (`names_files`)."""
        if not self.names_files:
            return None
        return _data_files(self._uri(self.location(table)))

    def small_table(self, table: str):
        """A small table's rows on the driver, as one Arrow table of its schema
        (`arrow_schema`). A Parquet table at a path is read here, file by file, with no Spark
        job: a run reads its ``files`` and ``landings`` several times, and a job each would be
        most of a scheduled run that finds little to do. Delta, a catalog's table or a view of
        the past is collected by Spark."""
        if not self.exists(table):
            return arrow_schema(table).empty_table()
        if self.names_files:
            for attempt in range(1, COMMIT_ATTEMPTS + 1):
                try:
                    return _arrow_table(self._uri(self.location(table)), table)
                except FileNotFoundError:  # merged away by a writer's compaction since the listing
                    if attempt == COMMIT_ATTEMPTS:
                        raise
        return collected_arrow(self.read(table))

    def column_max(self, table: str, names: Sequence[str], column: str) -> int | None:
        """The largest value of the integer ``column`` in the data files ``names`` of a Parquet
        ``table`` (`data_files`), from their footers' statistics, read here with no Spark
        job; None where that is not known here: a table not on a local file system, or a row
        group without statistics (then a scan must look)."""
        import pyarrow.parquet as pq

        if not self.names_files or plain_path(self.location(table)) is None:
            return None
        directory = self._uri(self.location(table))
        top: int | None = None
        for name in names:
            with files.open_input(files.join(directory, name)) as f:
                meta = pq.ParquetFile(f).metadata
            where = [i for i in range(meta.num_columns) if meta.schema.column(i).path == column]
            if not where:
                return None
            for g in range(meta.num_row_groups):
                group = meta.row_group(g)
                stats = group.column(where[0]).statistics
                if group.num_rows == 0 or (stats is not None and stats.null_count == group.num_rows):
                    continue  # no value in it
                if stats is None or not stats.has_min_max:
                    return None
                top = stats.max if top is None else max(top, stats.max)
        return top

    def read_files(self, table: str, names: Sequence[str]) -> DataFrame:
        """The rows of the data files ``names`` of a Parquet ``table`` (`data_files`), with
        exactly its schema."""
        if not names:
            return self._empty(table_schema(table))
        where = self.location(table)
        paths = [f"{where}/{name}" for name in names]
        return conform(self.spark.read.schema(table_schema(table)).parquet(*paths), table)

    def plain_parquet_files(self, table: str) -> bool:
        """Whether Python on an executor can read ``table``'s rows from the data files its scan
        names (``_metadata.file_path``) through `dlq_pipeline.fs`: a table at a path (replay's
        checkpoints already need that path open to Python), in Parquet or in Delta without
        column mapping (whose files name columns by id). A catalog's table is not: its files
        may be open to Spark alone (Unity Catalog hands Spark credentials for them)."""
        if self.by_name or self.as_of_time is not None:
            return False
        if self.format == "parquet" or not self.exists(table):
            return True
        fields = self.spark.read.format("delta").load(self.location(table)).schema.fields
        return not any(COLUMN_MAPPING_NAME in f.metadata for f in fields)

    def _empty(self, schema) -> DataFrame:
        """No rows, as the optimizer can see: ``limit(0)`` makes an empty local relation, so a
        join with it or an aggregation over it plans no job (an empty ``createDataFrame``
        alone is an RDD Spark must run to find empty: the first run's ledger cost two jobs)."""
        return self.spark.createDataFrame([], schema).limit(0)

    # --- writing -------------------------------------------------------------------------

    def _prepare(self) -> None:
        if self.as_of_time is not None:
            raise StorageError(f"{self!r} is a read-only view of the past")
        if not self.by_name:
            files.make_dirs(self._uri(self.path))
        elif self.format == "delta":
            namespace = ".".join(sql_column(p) for p in (self.catalog, self.schema) if p)
            self.spark.sql(f"CREATE SCHEMA IF NOT EXISTS {namespace}")

    def _committed(self, what: str, commit):
        """Run ``commit`` (one Delta transaction), redoing it when another writer committed
        first and Delta refused this one (optimistic concurrency)."""
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            try:
                return commit()
            except Exception as exc:  # noqa: BLE001 - py4j/Spark wrap Delta's exceptions
                if attempt == COMMIT_ATTEMPTS or not is_conflict(exc):
                    raise
                log.info(
                    "%s lost a concurrent commit race (attempt %d), retrying: %s",
                    what,
                    attempt,
                    str(exc).splitlines()[0][:200],
                )
                time.sleep(0.25 * attempt + secrets.randbelow(250) / 1000)

    def _added_columns(self, df: DataFrame, table: str) -> list:
        """The declared columns ``df`` (a stored Delta table) lacks: nullable columns added to
        the schema after the table was created (``messages.data_head``). Any other difference
        is left to `conform`, which names it."""
        have = set(df.columns)
        return [f for f in table_schema(table).fields if f.name not in have and f.nullable]

    def _with_added_columns(self, df: DataFrame, table: str) -> DataFrame:
        """A Delta table read as the declared schema: columns added since it was created read
        as null (as Parquet files written before them do)."""
        for f in self._added_columns(df, table):
            df = df.withColumn(f.name, F.lit(None).cast(f.dataType))
        return df

    def _create_delta(self, table: str) -> None:
        """Create the Delta table with its declared schema (and ledger: append-only) if absent;
        add to an existing one the nullable columns declared since it was created (Delta
        refuses a write with a column the table lacks): its older rows read null there."""
        if self.exists(table):
            if table not in self._evolved:
                added = self._added_columns(self.spark.table(self._delta_ref(table)), table)
                if added:
                    columns = ", ".join(f"{sql_column(f.name)} {f.dataType.simpleString()}" for f in added)
                    log.warning(
                        "adding column(s) %s to the Delta table %s (declared since it was created)",
                        ", ".join(f.name for f in added),
                        table,
                    )
                    self._committed(
                        f"add columns to {table}",
                        lambda: self.spark.sql(f"ALTER TABLE {self._delta_ref(table)} ADD COLUMNS ({columns})"),
                    )
                self._evolved.add(table)
            return
        if not self.by_name:
            files.make_dirs(self._uri(self.location(table)))
        declared = TABLE_PROPERTIES.get(table, {})
        properties = (
            "TBLPROPERTIES (" + ", ".join(f"'{k}' = '{v}'" for k, v in declared.items()) + ")" if declared else ""
        )
        ddl = table_schema(table).toDDL()
        # Two writers creating it at once: the loser finds the other's files (or table) and,
        # once the other's first commit is there, nothing left to do.
        self._committed(
            f"create {table}",
            lambda: (
                None
                if self.exists(table)
                else self.spark.sql(
                    f"CREATE TABLE IF NOT EXISTS {self._delta_ref(table)} ({ddl}) USING delta {properties}"
                )
            ),
        )
        self._await_first_commit(table)

    def _await_first_commit(self, table: str) -> None:
        """Wait for the first commit of a table another writer is creating: its CREATE made
        the table's ``_delta_log`` first, and ours (IF NOT EXISTS) then did nothing."""
        deadline = time.monotonic() + CREATE_WAIT_SECONDS
        while not self.exists(table):
            if time.monotonic() > deadline:
                where = self.location(table)
                raise StorageError(
                    f"the Delta table {where} has a _delta_log but no commit after {CREATE_WAIT_SECONDS:.0f} s: a "
                    f"creation that did not finish (a killed writer). If nothing is writing it, remove "
                    f"{where}/_delta_log and run again"
                )
            time.sleep(0.5)

    def _write(self, table: str, df: DataFrame, parquet_options: Mapping[str, str] | None = None) -> None:
        where = self.location(table)
        writer = df.write.mode("append")
        options = {**TABLE_PARQUET_OPTIONS.get(table, {}), **(parquet_options or {})}
        if options and self.format == "parquet":
            writer = writer.options(**options)
        if self.format == "delta":
            self._create_delta(table)
            # Blind appends never conflict with other writers in Delta.
            if self.by_name:
                writer.format("delta").saveAsTable(where)
            else:
                writer.format("delta").save(where)
        else:
            files.make_dirs(self._uri(where))
            # A Parquet write that was killed leaves its committed task output under
            # _temporary, and the next write's job commit would merge those stale files into
            # the table (duplicate rows). One run at a time per warehouse, so anything there
            # now belongs to a dead job.
            if files.delete(self._uri(f"{where}/{STAGING_DIR}")):
                log.warning("removed the output of an interrupted write from %s/%s", where, STAGING_DIR)
            writer.parquet(where)

    def append(self, table: str, df: DataFrame, parquet_options: Mapping[str, str] | None = None) -> None:
        """Append ``df`` (conformed to the table's schema; extra columns are dropped).
        ``parquet_options``: Parquet writer options for this write (ingest's large messages)."""
        self._prepare()
        self._write(table, conform(df, table), parquet_options)

    def compact(self, table: str) -> int:
        """Merge the small data files of a Parquet ``table`` at a path into one, once more than
        `COMPACT_FILES` of them have piled up (a run appends one or a few); return how many
        were merged. Only for `COMPACTED_TABLES`, where a row written twice means what it
        means once: the merged file is committed before the small ones are deleted, so a kill
        in between leaves rows twice, never none. Delta compacts these tables itself
        (``delta.autoOptimize.autoCompact``, `TABLE_PROPERTIES`)."""
        if table not in COMPACTED_TABLES:
            raise StorageError(f"table {table!r} is not one that compacts (its rows count)")
        if not self.names_files:
            return 0
        where = self._uri(self.location(table))
        sizes = files.list_sizes(where)
        small = sorted(name for name, size in sizes.items() if _is_data_file(name) and size < COMPACT_SMALL_BYTES)
        if len(small) <= COMPACT_FILES:
            return 0
        self._write(table, self.read_files(table, small).coalesce(1))
        _delete_data_files(where, small)
        log.info("compacted %d small data files of %s into one", len(small), table)
        return len(small)

    def merge_new(
        self, table: str, df: DataFrame, key: Sequence[str] | None = None, stored: DataFrame | None = None
    ) -> int:
        """Insert the rows of ``df`` whose key is not in the table yet; return how many.

        Idempotent: merging the same rows again inserts nothing. Rows of ``df`` that repeat a
        key are inserted once (which one is unspecified: deduplicate first if it matters).
        Keys compare null-safely (a null key part equals a null). ``stored``: the keys the
        table holds, where something smaller than the table has them (``messages``' are in
        ``keys``: `dlq_pipeline.warehouse.keys`); Delta's MERGE reads the table itself.
        """
        key = list(key) if key is not None else table_key(table)
        if not key:
            raise StorageError(f"table {table!r} has no key: use append (it is append-only)")
        self._prepare()
        new = conform(df, table).dropDuplicates(key)
        if self.exists(table):
            stored = self.read(table).select(*key) if stored is None else stored.select(*key)
            unseen = new.alias("n").join(stored.alias("s"), _null_safe_match("n", "s", key), "left_anti")
            if unseen.isEmpty():  # nothing new: no empty file, no empty Delta commit
                return 0
            if self.format == "parquet":
                new = unseen
        if self.format == "delta":  # MERGE decides atomically on the snapshot it commits against
            return self._delta_merge(table, new, key)
        observation = Observation(f"merge_new_{table}_{secrets.token_hex(4)}")
        counted = new.observe(observation, F.count(F.lit(1)).alias("rows"))
        self._write(table, counted)
        return int(observation.get.get("rows", 0))

    def _delta_merge(self, table: str, new: DataFrame, key: Sequence[str], replace_when: str | None = None) -> int:
        self._create_delta(table)
        view = f"_dlq_merge_{table}_{secrets.token_hex(6)}"
        new.createOrReplaceTempView(view)
        try:
            condition = " AND ".join(f"t.{sql_column(k)} <=> s.{sql_column(k)}" for k in key)
            matched = f"WHEN MATCHED AND ({replace_when}) THEN UPDATE SET * " if replace_when else ""
            result = self._committed(
                f"merge into {table}",
                lambda: self.spark.sql(
                    f"MERGE INTO {self._delta_ref(table)} AS t USING {sql_column(view)} AS s ON {condition} "
                    f"{matched}WHEN NOT MATCHED THEN INSERT *"
                ).collect(),
            )
        finally:
            self.spark.catalog.dropTempView(view)
        if result and "num_inserted_rows" in result[0].asDict():
            return int(result[0]["num_inserted_rows"])
        history = self.spark.sql(f"DESCRIBE HISTORY {self._delta_ref(table)} LIMIT 1").collect()
        return int(history[0]["operationMetrics"].get("numTargetRowsInserted", 0))

    def upsert(self, table: str, df: DataFrame, replace_when: str) -> None:
        """Delta only: one ``MERGE`` on the table's key: a row of ``df`` whose key is absent is
        inserted, a stored row is replaced by it only where ``replace_when`` (SQL over ``t``,
        the stored row, and ``s``, the new one) holds. A compare-and-swap: when another writer
        commits first, Delta refuses this commit and it is redone on the new snapshot, where
        ``replace_when`` is evaluated again (the writer lease, `dlq_pipeline.warehouse.lease`)."""
        if self.format != "delta":
            raise StorageError(f'upsert into {table!r} needs storage.format = "delta"')
        self._prepare()
        self._delta_merge(table, conform(df, table), table_key(table), replace_when)

    @property
    def files_root(self) -> str:
        """``path`` as the Python filesystem layer (`dlq_pipeline.fs`) reaches it, on
        the driver and on executors: where replay's checkpoints and the lease's fence file live."""
        return self._uri(self.path)

    def _uri(self, path: str) -> str:
        """``path`` (``path`` or below it, as Spark names it) as `dlq_pipeline.fs` reaches it."""
        return files.files_uri(path, self.webhdfs)

    def _read_text(self, path: str) -> str | None:
        """The text of the file ``path``, or None when there is no such file."""
        data = files.read_bytes(self._uri(path))
        return None if data is None else data.decode("utf-8")

    # --- run summaries -------------------------------------------------------------------

    def summary_path(self, run_id: str) -> str:
        if not _RUN_ID.fullmatch(run_id):
            raise StorageError(f"run id {run_id!r} cannot name a file (letters, digits, '.', '_', '-')")
        return f"{self.path}/{RUNS_DIR}/{run_id}.json"

    def read_summary(self, run_id: str) -> dict | None:
        """The run summary `write_summary` wrote for ``run_id``, or None (no such run, or a
        run made by a command that writes none, e.g. ``classify``)."""
        try:
            where = self.summary_path(run_id)
        except StorageError:  # a run id that names no file: no such run
            return None
        text = self._read_text(where)
        return json.loads(text) if text else None

    def write_summary(self, run_id: str, obj: Any) -> str:
        """Write ``obj`` as JSON to ``PATH/_runs/<run_id>.json`` (owner-only); return the path."""
        target = self.summary_path(run_id)
        text = json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n"
        files.write_file(self._uri(target), text.encode("utf-8"), replace=True)  # missing directories owner-only
        return target


def open_storage(spark: SparkSession, settings: StorageSettings) -> Storage:
    """The `Storage` that ``[storage]`` settings describe (built at the edge, `dlq_pipeline.config.settings`)."""
    return Storage(
        spark,
        format=settings.format,
        path=settings.path,
        catalog=settings.catalog,
        schema=settings.schema,
        webhdfs=settings.hdfs.webhdfs,
    )


def open_warehouse(spark: SparkSession, where: str | StorageSettings) -> Storage:
    """The tables of an existing warehouse: a path (Parquet), or ``[storage]`` settings (Delta,
    catalog tables: ``RunSettings.from_config(config).storage``). `WarehouseMismatch` naming
    the warehouse when it holds no tables: a wrong path must not read as an empty DLQ."""
    settings = where if isinstance(where, StorageSettings) else StorageSettings(path=str(where))
    storage = open_storage(spark, settings)
    storage.require_tables()
    return storage
