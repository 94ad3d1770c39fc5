"""Where the tables live: Parquet dataset directories (default) or Delta tables, behind one API.

Every write is an append or an idempotent ``merge_new`` (insert the rows whose key is not
there yet), so both formats behave the same and a rerun adds nothing twice. Every write
and read goes through ``schemas.conform``: what is stored, and what is read back, has
exactly the schema in ``schemas/<table>.json``.

- **Parquet**: table ``t`` is the dataset directory ``PATH/t`` (local, ``file:``, ``dbfs:``,
  ``hdfs:``, ``s3a:``, ... anything Spark's Hadoop file systems open). ``merge_new`` is an
  anti-join against the keys already stored, then an append.
- **Delta**: by path (``PATH/t``) or, with ``catalog``/``schema``, by name
  (``catalog.schema.t``). ``merge_new`` is ``MERGE ... WHEN NOT MATCHED THEN INSERT *``.
  Needs Delta Lake on the classpath (Databricks, or delta-spark); without it the
  constructor fails with one error that says how to fix it. The Delta code path is exercised
  where the jars exist (Databricks, a cluster with delta-spark); this repository's tests run
  Parquet, since no Maven repository is reachable to fetch the jars.

The warehouse directory and the run summaries are created owner-only (0700 / 0600): message
bodies may hold personal data.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import shutil
from functools import reduce
from typing import Any, Sequence

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from dlq_pipeline.paths import plain_path
from dlq_pipeline.private import private_dirs
from dlq_pipeline.settings import StorageSettings
from dlq_pipeline.spark.schemas import conform, table_schema
from dlq_pipeline.tables import table_key
from dlq_pipeline.spark.session import DELTA_FIX, delta_available

log = logging.getLogger(__name__)

FORMATS = ("parquet", "delta")
RUNS_DIR = "_runs"
STAGING_DIR = "_temporary"  # Hadoop's FileOutputCommitter stages task output here
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_TABLE = re.compile(r"[a-z][a-z0-9_]*")


class StorageError(RuntimeError):
    """The storage cannot be used as configured."""


class _Files:
    """The few file-system operations Storage needs, locally or through Hadoop's FileSystem."""

    def __init__(self, spark: SparkSession, root: str):
        self.spark = spark
        self.local = plain_path(root)

    def _hadoop(self, path: str):
        jvm = getattr(self.spark, "_jvm", None)
        if jvm is None:
            raise StorageError(f"cannot reach {path!r} from this client (Spark Connect): use a local or /dbfs path")
        jpath = jvm.org.apache.hadoop.fs.Path(path)
        return jvm, jpath, jpath.getFileSystem(self.spark._jsc.hadoopConfiguration())

    def exists(self, path: str) -> bool:
        local = plain_path(path)
        if local is not None:
            return os.path.exists(local)
        _, jpath, fs = self._hadoop(path)
        return bool(fs.exists(jpath))

    def has_data(self, path: str) -> bool:
        """A dataset directory that a write has completed in (not just an empty directory)."""
        local = plain_path(path)
        if local is not None:
            if not os.path.isdir(local):
                return False
            return any(n == "_SUCCESS" or n.endswith(".parquet") for n in os.listdir(local))
        _, jpath, fs = self._hadoop(path)
        if not fs.exists(jpath):
            return False
        return any(
            s.getPath().getName() == "_SUCCESS" or s.getPath().getName().endswith(".parquet")
            for s in fs.listStatus(jpath)
        )

    def makedirs(self, path: str) -> None:
        """Create ``path`` and missing parents owner-only; existing directories are left as they are."""
        local = plain_path(path)
        if local is not None:
            private_dirs(local)
            return
        jvm, jpath, fs = self._hadoop(path)
        if not fs.exists(jpath):
            fs.mkdirs(jpath, jvm.org.apache.hadoop.fs.permission.FsPermission(jvm.java.lang.Short(0o700)))

    def remove_tree(self, path: str) -> bool:
        """Delete ``path`` and everything under it; True if it existed."""
        local = plain_path(path)
        if local is not None:
            if not os.path.lexists(local):
                return False
            shutil.rmtree(local)
            return True
        _, jpath, fs = self._hadoop(path)
        return bool(fs.exists(jpath)) and bool(fs.delete(jpath, True))

    def write_text(self, path: str, text: str) -> None:
        """Write ``text`` to ``path`` (owner-only), replacing it atomically where the FS allows."""
        local = plain_path(path)
        if local is not None:
            tmp = f"{local}.{secrets.token_hex(4)}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(tmp, local)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
            return
        _, jpath, fs = self._hadoop(path)
        out = fs.create(jpath, True)
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()


def _quote(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


def _null_safe_match(left: str, right: str, key: Sequence[str]):
    return reduce(lambda a, b: a & b, [F.col(f"{left}.{_quote(k)}").eqNullSafe(F.col(f"{right}.{_quote(k)}")) for k in key])


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
    ):
        if format not in FORMATS:
            raise StorageError(f"storage format must be one of {', '.join(FORMATS)}, not {format!r}")
        if format == "parquet" and (catalog or schema):
            raise StorageError("catalog/schema name Delta tables; Parquet tables live under storage.path")
        if catalog and not schema:
            raise StorageError("a Delta catalog needs a schema (database) too: catalog.schema.table")
        if format == "delta" and not delta_available(spark):
            raise StorageError(f"storage format 'delta' needs Delta Lake on the Spark classpath, and it is not: {DELTA_FIX}")
        self.spark = spark
        self.format = format
        self.path = path.rstrip("/") or "/"
        self.catalog = catalog or None
        self.schema = schema or None
        self._files = _Files(spark, self.path)

    def __repr__(self) -> str:
        where = f"{self.catalog}.{self.schema}" if self.by_name else self.path
        return f"Storage({self.format}, {where})"

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
            return ".".join(_quote(p) for p in parts)
        return f"{self.path}/{table}"

    def _delta_ref(self, table: str) -> str:
        return self.location(table) if self.by_name else f"delta.{_quote(self.location(table))}"

    # --- reading -------------------------------------------------------------------------

    def exists(self, table: str) -> bool:
        where = self.location(table)
        if self.by_name:
            return bool(self.spark.catalog.tableExists(where))
        if self.format == "delta":
            return self._files.exists(f"{where}/_delta_log")
        return self._files.has_data(where)

    def read(self, table: str) -> DataFrame:
        """The table, with exactly its schema; an empty DataFrame with that schema when absent."""
        schema = table_schema(table)
        if not self.exists(table):
            return self.spark.createDataFrame([], schema)
        where = self.location(table)
        if self.by_name:
            df = self.spark.read.table(where)
        elif self.format == "delta":
            df = self.spark.read.format("delta").load(where)
        else:
            # Reading with the declared schema: no inference, and columns added to a schema
            # later read as null from older files.
            df = self.spark.read.schema(schema).parquet(where)
        return conform(df, table)

    # --- writing -------------------------------------------------------------------------

    def _prepare(self) -> None:
        if not self.by_name:
            self._files.makedirs(self.path)

    def _write(self, table: str, df: DataFrame) -> None:
        where = self.location(table)
        writer = df.write.mode("append")
        if self.by_name:
            writer.format("delta").saveAsTable(where)
        elif self.format == "delta":
            self._files.makedirs(where)
            writer.format("delta").save(where)
        else:
            self._files.makedirs(where)
            # A Parquet write that was killed leaves its committed task output under
            # _temporary, and the next write's job commit would merge those stale files into
            # the table (duplicate rows). One run at a time per warehouse, so anything there
            # now belongs to a dead job.
            if self._files.remove_tree(f"{where}/{STAGING_DIR}"):
                log.warning("removed the output of an interrupted write from %s/%s", where, STAGING_DIR)
            writer.parquet(where)

    def append(self, table: str, df: DataFrame) -> None:
        """Append ``df`` (conformed to the table's schema; extra columns are dropped)."""
        self._prepare()
        self._write(table, conform(df, table))

    def merge_new(self, table: str, df: DataFrame, key: Sequence[str] | None = None) -> int:
        """Insert the rows of ``df`` whose key is not in the table yet; return how many.

        Idempotent: merging the same rows again inserts nothing. Rows of ``df`` that repeat a
        key are inserted once (which one is unspecified: deduplicate first if it matters).
        Keys compare null-safely (a null key part equals a null).
        """
        key = list(key) if key is not None else table_key(table)
        if not key:
            raise StorageError(f"table {table!r} has no key: use append (it is append-only)")
        self._prepare()
        new = conform(df, table).dropDuplicates(key)
        if self.format == "delta":
            return self._delta_merge(table, new, key)
        if self.exists(table):
            stored = self.read(table).select(*key)
            new = new.alias("n").join(stored.alias("s"), _null_safe_match("n", "s", key), "left_anti")
            if new.isEmpty():  # nothing new: do not leave an empty file behind
                return 0
        observation = Observation(f"merge_new_{table}_{secrets.token_hex(4)}")
        counted = new.observe(observation, F.count(F.lit(1)).alias("rows"))
        self._write(table, counted)
        return int(observation.get.get("rows", 0))

    def _delta_merge(self, table: str, new: DataFrame, key: Sequence[str]) -> int:
        if not self.exists(table):
            self._write(table, new.limit(0))  # create it with the declared schema
        view = f"_dlq_merge_{table}_{secrets.token_hex(6)}"
        new.createOrReplaceTempView(view)
        try:
            condition = " AND ".join(f"t.{_quote(k)} <=> s.{_quote(k)}" for k in key)
            result = self.spark.sql(
                f"MERGE INTO {self._delta_ref(table)} AS t USING {_quote(view)} AS s ON {condition} "
                "WHEN NOT MATCHED THEN INSERT *"
            ).collect()
        finally:
            self.spark.catalog.dropTempView(view)
        if result and "num_inserted_rows" in result[0].asDict():
            return int(result[0]["num_inserted_rows"])
        history = self.spark.sql(f"DESCRIBE HISTORY {self._delta_ref(table)} LIMIT 1").collect()
        return int(history[0]["operationMetrics"].get("numTargetRowsInserted", 0))

    # --- run summaries -------------------------------------------------------------------

    def summary_path(self, run_id: str) -> str:
        if not _RUN_ID.fullmatch(run_id):
            raise StorageError(f"run id {run_id!r} cannot name a file (letters, digits, '.', '_', '-')")
        return f"{self.path}/{RUNS_DIR}/{run_id}.json"

    def write_summary(self, run_id: str, obj: Any) -> str:
        """Write ``obj`` as JSON to ``PATH/_runs/<run_id>.json`` (owner-only); return the path."""
        target = self.summary_path(run_id)
        self._files.makedirs(f"{self.path}/{RUNS_DIR}")
        self._files.write_text(target, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")
        return target


def open_storage(spark: SparkSession, settings: StorageSettings) -> Storage:
    """The `Storage` that ``[storage]`` settings describe (built at the edge, `dlq_pipeline.settings`)."""
    return Storage(spark, format=settings.format, path=settings.path, catalog=settings.catalog,
                   schema=settings.schema)
