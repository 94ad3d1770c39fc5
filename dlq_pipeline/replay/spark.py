"""Replay stage: the run's decisions + the messages -> puts per partition -> ledger rows.

Decisions are joined with the `messages` table, repartitioned by target queue manager into
at most ``replay.max_connections`` partitions (so never more MQ connections than allowed),
ordered within a partition as they were on the DLQ, and each partition runs
`dlq_pipeline.replay.writer.replay_partition` with its own connection. The join carries the
data file that holds each message's body, not the body, which the partition's task reads
there (`dlq_pipeline.replay.bodies`), except where Python cannot open the table's files. All of it happens in
ONE Spark action, the append of the ledger rows; counts per outcome are observed during that
same action, so no partition ever runs twice on purpose.

A retried task (or an accidental second evaluation) resumes from the partition's checkpoint
under ``WAREHOUSE/_checkpoints/<run_id>/`` (on the warehouse's own filesystem, local, HDFS
or object storage, through `dlq_pipeline.fs`) and re-emits the rows of what was already
committed instead of putting it again. When the ledger append has succeeded the run's
checkpoints are deleted. Checkpoints still present when a replay starts belong to a run
that died after putting (``kill -9``): what a ``dir:`` partition recorded as published is
renamed into place and its staging removed, their rows are appended to the ledger first and
their delivered messages are left out of this run, so a rerun never puts (or writes) them
again. This assumes one run at a time per warehouse.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import logging
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import cast

from pyspark.sql import Column, DataFrame, Observation, Row, SparkSession
from pyspark.sql import functions as F

from dlq_pipeline import fs as files
from dlq_pipeline.classify.spark import decision_counts, target_key
from dlq_pipeline.config.settings import ReplaySettings
from dlq_pipeline.engine.large_messages import LARGE_MESSAGE_BYTES, large_message_tasks
from dlq_pipeline.engine.tasks import TaskTicker
from dlq_pipeline.errors import UsageError
from dlq_pipeline.mq.constants import MQ_MAX_MESSAGE_BYTES
from dlq_pipeline.mq.groups import MQMF_SEGMENTATION_ALLOWED, UNIT_FLAGS, Part
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.mq.structures import DLH_LENGTH
from dlq_pipeline.replay.bodies import BODY_FILE, Bodies, windows
from dlq_pipeline.replay.checkpoints import Checkpoint
from dlq_pipeline.replay.placement import place_queues, slot_values
from dlq_pipeline.replay.rebuild import exact_target
from dlq_pipeline.replay.targets import Target, check_run_id, open_target
from dlq_pipeline.replay.units import Member, plan_units
from dlq_pipeline.replay.writer import WorkItem, replay_partition
from dlq_pipeline.rules.model import PUT_ACTIONS
from dlq_pipeline.runtime.clock import as_utc, from_epoch_micros, utc_now
from dlq_pipeline.runtime.process_group import RunGroup, join_run_group
from dlq_pipeline.runtime.progress import Progress, Report
from dlq_pipeline.runtime.testhooks import crash_point
from dlq_pipeline.tables import (
    CHAR_BYTES_COLUMN,
    ENDED_OUTCOMES,
    LEDGER_COLUMNS,
    MD_COLUMNS,
    OUTCOMES,
    exact_md,
)
from dlq_pipeline.warehouse.landings import (
    landing_state,
    open_message_files,
    open_messages,
    recording_ledger,
    settle_landings,
)
from dlq_pipeline.warehouse.lease import LeaseFence, check_lease, fenced, held_lease
from dlq_pipeline.warehouse.ledger import CHECKPOINTS_DIR, message_states, recover_checkpoints
from dlq_pipeline.warehouse.schemas import arrow_schema, table_schema
from dlq_pipeline.warehouse.storage import Storage

log = logging.getLogger(__name__)

LARGE_PUTS_LISTED = 10_000  # large messages whose keys `largest_put` looks up in the decisions
# Large messages go through replay's join, shuffle and sorts in pieces of this size, one row
# each: Spark sorts and shuffles whole rows in memory (docs/performance.md,
# "Large messages in fewer tasks and in pieces").
PIECE_BYTES = 8 * 1024 * 1024
PIECE_COLUMN = "piece"
# Between these many decisions replay's join broadcasts them (about 300 bytes each, in the
# driver and in every executor) to the messages' scan: the bodies then cross one shuffle, not
# two. Fewer, and the left join's shuffle is small (adaptive execution broadcasts a small
# `messages` itself; the broadcast's own jobs cost a small run more than they save); more,
# and the copies are too large (docs/performance.md, "Decisions broadcast into replay's
# join").
BROADCAST_DECISIONS = (50_000, 200_000)
# The columns of a decision that replay's join carries into its work items.
JOINED_DECISION_COLUMNS = (
    "message_key",
    "action",
    "rule_line",
    "attempt",
    "target_q",
    "target_qmgr",
    "header",
    "putaut",
    "not_before",
    "source_file",
    "source_index",
)


# (MQMD field, column, the field's default for a null): built once, not a default MQMD per row
_MD_PLAN = tuple((name, column, getattr(MQMD(), name)) for name, column in MD_COLUMNS.items())


def row_to_item(row) -> WorkItem:
    """A joined decision + message row (a dict or a Row) as the writer's work item."""
    if hasattr(row, "asDict"):  # a Row looks a name up by scanning its fields: ~5 µs, 40 times
        row = row.asDict()

    def value(column, default=None):
        got = row[column]
        return default if got is None else bytes(got) if isinstance(got, bytearray) else got

    md_values = tuple(value(column, default) for _, column, default in _MD_PLAN) if row["has_message"] else ()
    return _work_item(md_values, row[CHAR_BYTES_COLUMN], *(value(c) for c in _ITEM_COLUMNS))


def batch_items(batch, data: list[bytes | None] | None = None) -> list[WorkItem]:
    """An Arrow batch of joined rows (no pieces) as work items, read a column at a time:
    a replay task's cost per message, where building a dict of 43 columns per row first
    cost twice as much (docs/performance.md, "A replay task's work per message"). ``data``:
    the bodies, where the batch names their files instead of carrying them (`bodies`)."""

    def values(name, default=None):
        if name == "data" and data is not None:
            return data
        column = batch.column(name)
        got = column.to_pylist()
        return [default if v is None else v for v in got] if default is not None and column.null_count else got

    md_rows = zip(*[values(column, default) for _, column, default in _MD_PLAN])
    exact = [dict(pairs) if pairs else None for pairs in values(CHAR_BYTES_COLUMN)]  # a map: (key, value) pairs
    return [_work_item(*row) for row in zip(md_rows, exact, *(values(c) for c in _ITEM_COLUMNS))]


def items_reading_bodies(batches, webhdfs: str = "") -> Iterator[WorkItem]:
    """The work items of batches that name each body's data file (`BODY_FILE`), their bodies
    read from those files a window at a time (`bodies.windows`, `bodies.Bodies`)."""
    reader = Bodies(webhdfs)
    for batch in batches:
        for start, stop in windows(batch.column("data_length").to_pylist()):
            window = batch.slice(start, stop - start)
            data = reader.read(window.column(BODY_FILE).to_pylist(), window.column("message_key").to_pylist())
            yield from batch_items(window, data)


# the columns `_work_item` takes after the MQMD's values and md_char_bytes, in its order
_ITEM_COLUMNS = (
    "has_message",
    "message_key",
    "action",
    "rule_line",
    "attempt",
    "target_q",
    "target_qmgr",
    "header",
    "putaut",
    "not_before_us",
    "data",
    "truncated",
    "unit",
    "unit_hold",
    "recorded_at_us",
)


def _work_item(
    md_values,
    exact,
    has_message,
    message_key,
    action,
    rule_line,
    attempt,
    target_q,
    target_qmgr,
    header,
    putaut,
    not_before_us,
    data,
    truncated,
    unit,
    unit_hold,
    recorded_at_us,
) -> WorkItem:
    """The work item of one joined row: the MQMD as got (``md_char_bytes`` put back, MQMD
    defaults for nulls in ``md_values``, MQMD field order), targets taken from its fields
    by their exact names (`rebuild.exact_target`)."""
    md = None
    if has_message:
        shown = MQMD(*md_values)
        md = exact_md(shown, exact)
        if md is not shown:
            target_q = exact_target(target_q, shown.reply_to_q, md.reply_to_q)
            target_qmgr = exact_target(target_qmgr, shown.reply_to_qmgr, md.reply_to_qmgr)
    return WorkItem(
        message_key=message_key,
        action=action,
        md=md,
        data=data,
        truncated=bool(truncated),
        rule_line=rule_line,
        attempt=attempt,
        target_q=target_q,
        target_qmgr=target_qmgr,
        header=header,
        putaut=putaut,
        not_before=from_epoch_micros(not_before_us),
        unit=unit,
        held=unit_hold,
        recorded_at=from_epoch_micros(recorded_at_us),
    )


def partition_function(
    target: Target,
    settings: ReplaySettings,
    run_id: str,
    now: dt.datetime,
    checkpoint_root: str | None,
    task_hook: Callable[[int, int], None] | None,
    run_group: RunGroup | None = None,
    fence: LeaseFence | None = None,
):
    """What each task runs; everything it closes over is picklable. Before it puts anything
    the task's worker joins the driver's process group (``run_group``, `process_group`), so
    killing the run's group stops its puts with it. With a Delta writer lease, ``fence`` is
    checked before every commit and before the partition publishes (`dlq_pipeline.warehouse.lease`)."""

    def run(index: int, items: Iterable[WorkItem]):
        join_run_group(run_group)
        checkpoint = Checkpoint.for_partition(checkpoint_root, run_id, index) if checkpoint_root else None
        on_commit = (lambda batches: task_hook(index, batches)) if task_hook is not None else None
        with target.partition(run_id, index, checkpoint) as part:
            for row in replay_partition(
                items,
                fenced(part.connect, fence),
                settings,
                run_id=run_id,
                partition_id=index,
                checkpoint=part.checkpoint,
                now=now,
                on_commit=on_commit,
            ):
                yield tuple(row[c] for c in LEDGER_COLUMNS)
            if fence is not None:
                fence.check()  # a dir: partition publishes its files when this block ends

    return run


LEDGER_BATCH_ROWS = 1024  # ledger rows per Arrow batch a replay task hands back


def _rows_of(batch) -> list[dict]:
    """``batch``'s rows as dicts, its map columns as dicts too: Arrow's ``to_pylist`` gives a
    map as a list of (key, value) pairs, where a Row gave a dict (``md_char_bytes`` is a map)."""
    import pyarrow as pa

    rows = batch.to_pylist()
    for name in [f.name for f in batch.schema if pa.types.is_map(f.type)]:
        for row in rows:
            if row[name] is not None:
                row[name] = dict(row[name])
    return rows


def whole_messages(rows: Iterator[dict]) -> Iterator[dict]:
    """``rows`` with a message's pieces (consecutive rows of one ``message_key``, in
    ``piece`` order: `pieces`) joined into one row again; rows without a ``piece`` pass."""
    held, parts = None, []
    for row in rows:
        if PIECE_COLUMN not in row:
            yield row
            continue
        row.pop(PIECE_COLUMN)
        if held is not None and held["message_key"] == row["message_key"]:
            parts.append(row["data"])
            continue
        if held is not None:
            yield _joined_pieces(held, parts)
        held, parts = row, [row["data"]]
    if held is not None:
        yield _joined_pieces(held, parts)


def _joined_pieces(row: dict, parts: list) -> dict:
    if len(parts) > 1 and row["data"] is not None:
        row["data"] = b"".join(parts)
    return row


def pieces(messages: DataFrame) -> DataFrame:
    """``messages`` with each message's ``data`` cut into rows of at most ``PIECE_BYTES``,
    numbered from 0 in ``piece`` (empty or null data: one row, as it was). Cut into an array
    first, so the rows the explode makes do not each carry the whole message."""
    size = PIECE_BYTES
    cut = F.expr(
        f"transform(sequence(0, cast(greatest(ceil(octet_length(data) / {size}), 1) AS INT) - 1), "
        f"k -> substring(data, k * {size} + 1, {size}))"
    )
    columns = [c for c in messages.columns if c != "data"]
    return messages.select(*columns, F.posexplode(cut).alias(PIECE_COLUMN, "data"))


def arrow_items(batches, webhdfs: str = "") -> Iterator[WorkItem]:
    """The work items of a replay task's Arrow batches, in order: a column at a time
    (`batch_items`), their bodies read from the table's files where the batches name them
    (`items_reading_bodies`, ``webhdfs`` as `Storage.webhdfs`), or row by row where large
    messages come in pieces (`whole_messages`: a message's pieces may span batches). Every
    batch of a task has the same columns."""
    batches = iter(batches)
    first = next(batches, None)
    if first is None:
        return
    batches = itertools.chain([first], batches)
    if BODY_FILE in first.schema.names:
        yield from items_reading_bodies(batches, webhdfs)
        return
    if PIECE_COLUMN not in first.schema.names:
        for batch in batches:
            yield from batch_items(batch)
        return
    yield from (row_to_item(row) for row in whole_messages(row for batch in batches for row in _rows_of(batch)))


def partition_rows(items: DataFrame, run: Callable, webhdfs: str = "") -> DataFrame:
    """The rows ``run(partition_index, work_items)`` yields (tuples in ledger column order)
    for each partition of ``items``, as a DataFrame of the ``ledger`` schema (``webhdfs``: the
    NameNode's HTTP address where ``items`` name bodies' files on HDFS, `arrow_items`).

    Through ``mapInArrow``, not ``rdd.mapPartitionsWithIndex``: Spark Connect (Databricks
    serverless and shared clusters) has no RDD API. Each task reads its partition index from
    its TaskContext and hands ``run`` the rows as work items, in the partition's order."""
    schema = arrow_schema("ledger")

    def task(batches):
        import pyarrow as pa
        from pyspark import TaskContext

        pending: list[tuple] = []

        def flush():
            columns = list(zip(*pending))
            return pa.RecordBatch.from_arrays(
                [pa.array(list(c), type=f.type) for c, f in zip(columns, schema)], schema=schema
            )

        index = cast(TaskContext, TaskContext.get()).partitionId()  # in a task: set
        for row in run(index, arrow_items(batches, webhdfs)):
            pending.append(row)
            if len(pending) >= LEDGER_BATCH_ROWS:
                yield flush()
                pending = []
        if pending:
            yield flush()

    return items.mapInArrow(task, table_schema("ledger"))


def partition_key(
    per_qmgr: int = 1, placed: Mapping[tuple[str, str], int] | None = None, partitions: int = 1
) -> list[Column]:
    """What replay partitions are hashed on: the target queue manager. With ``per_qmgr`` > 1
    one queue manager's messages (typically most of a DLQ go back to the local one) spread
    over up to that many connections while every target queue (and every ``dir:`` file)
    stays in one partition, in DLQ order: each queue goes to the partition ``placed`` gives
    it (`dlq_pipeline.replay.placement`: by size), named by a value that hashes there; a
    queue missing from ``placed`` to one of ``per_qmgr`` buckets of its name. With 1 the key
    is the queue manager alone: one partition (one connection) per queue manager."""
    qmgr, queue = target_key()
    if per_qmgr <= 1:
        return [qmgr]
    bucket = F.hash(qmgr, F.pmod(F.hash(queue), F.lit(per_qmgr)))
    if not placed:
        return [bucket]
    slots = slot_values(partitions)
    table: dict[str, dict[str, int]] = {}
    for (m, q), p in placed.items():
        table.setdefault(m, {})[q] = slots[p]
    # one JSON literal that from_json folds into a constant map (see sql_text.sql_json_array)
    lookup = F.from_json(F.lit(json.dumps(table)), "MAP<STRING, MAP<STRING, INT>>")
    return [F.coalesce(F.element_at(F.element_at(lookup, qmgr), queue), bucket)]


def largest_put(storage: Storage, decisions: DataFrame) -> int:
    """The size of the largest message ``decisions`` put (0 when none is large, ingest's
    ``LARGE_MESSAGE_BYTES``): one job over the stored sizes, in which Parquet's statistics
    skip every row group without a large message, and only when some are large, one over the
    decisions. More large messages than ``LARGE_PUTS_LISTED``: the largest of them."""
    large = (
        open_messages(storage)
        .where(F.col("data_length") >= LARGE_MESSAGE_BYTES)
        .select("message_key", "data_length")
        .limit(LARGE_PUTS_LISTED + 1)
        .collect()
    )
    sizes = {r["message_key"]: int(r["data_length"]) for r in large}
    if len(large) > LARGE_PUTS_LISTED or not sizes:
        return max(sizes.values(), default=0)
    puts = decisions.where(F.col("action").isin(*PUT_ACTIONS) & F.col("message_key").isin(*sizes))
    return max((sizes[r["message_key"]] for r in puts.select("message_key").distinct().collect()), default=0)


def heap_short_for_mq_messages(spark: SparkSession) -> bool:
    """Whether the heap cannot hold MQ's largest message in every task slot: only then can a
    message to put be too large, and replay looks the largest one up (`put_tasks`)."""
    return large_message_tasks(spark, MQ_MAX_MESSAGE_BYTES) is not None


def put_tasks(spark: SparkSession, storage: Storage, decisions: DataFrame) -> int | None:
    """How many tasks may carry the messages ``decisions`` put at once, where fewer than Spark
    runs: `work_items` then reads them in that many and carries them in pieces
    (docs/performance.md, "Large messages in fewer tasks and in pieces"). No lookup (no job) where the heap holds
    even MQ's largest message in every slot."""
    if not heap_short_for_mq_messages(spark):
        return None
    return large_message_tasks(spark, largest_put(storage, decisions))


def work_items(
    storage: Storage,
    decisions: DataFrame,
    partitions: int,
    skip: set[str],
    per_qmgr: int = 1,
    puts_per_queue: Mapping[tuple[str, str], int] | None = None,
    large_tasks: int | None = None,
    decisions_total: int | None = None,
    bodies_in_place: bool = False,
    placements: DataFrame | None = None,
) -> DataFrame:
    """Decisions joined with their messages, one partition per target queue manager (hashed
    into ``partitions``; with ``per_qmgr`` > 1 its queues placed by size over up to that
    many: `partition_key`, from ``puts_per_queue``, `classify.spark.decision_counts`'s, else counted
    here), in DLQ order within each. ``large_tasks``: how many tasks may hold a message to
    put at once, where fewer than Spark runs (`large_messages.large_message_tasks`): the messages are
    read in that many and go on as rows of `pieces` (`whole_messages` joins them again).
    ``decisions_total``: how many decisions there are, when the caller has counted them; in
    ``BROADCAST_DECISIONS``, every task that reads the messages gets all of them, and the
    bodies are shuffled once (into the partitions) instead of twice. ``bodies_in_place``
    (`Storage.plain_parquet_files`): no body is joined, shuffled or sorted; each item names the
    data file holding its body (`bodies.BODY_FILE`), which the writer's task reads there.
    Only the messages of landings not settled are read (`warehouse.landings`): every pending
    message is among them. ``placements`` (`unit_placements`): the members of units, which
    sort where their unit's first member is, next to each other in put order."""
    messages = open_messages(storage)
    if bodies_in_place:
        messages = messages.drop("data").withColumn(BODY_FILE, F.col("_metadata.file_path"))
    in_pieces = large_tasks is not None
    messages = (pieces(messages.coalesce(large_tasks)) if large_tasks is not None else messages).alias("m")
    chosen = decisions.select(*JOINED_DECISION_COLUMNS).alias("d")
    on = F.col("d.message_key") == F.col("m.message_key")
    low, high = BROADCAST_DECISIONS
    if in_pieces or decisions_total is None or not low <= decisions_total <= high:
        joined = chosen.join(messages, on, "left").select(
            *item_columns(lambda c: F.col(f"m.{c}"), in_pieces, bodies_in_place)
        )
    else:
        # the decisions without a message (a table changed since classify) as the left join has them
        types = {f.name: f.dataType for f in messages.schema.fields}
        found = messages.join(F.broadcast(chosen), on, "inner").select(
            *item_columns(lambda c: F.col(f"m.{c}"), bodies_in_place=bodies_in_place)
        )
        keys = messages.select(F.col("message_key").alias("stored_key"))
        missing = chosen.join(keys, F.col("d.message_key") == F.col("stored_key"), "left_anti").select(
            *item_columns(lambda c: F.lit(None).cast(types[c]), bodies_in_place=bodies_in_place)
        )
        joined = found.unionByName(missing)
    if skip:
        ended = storage.spark.createDataFrame([(k,) for k in sorted(skip)], "message_key string")
        joined = joined.join(ended, "message_key", "left_anti")
    order: list[str | Column] = ["source_file", "source_index"]
    if placements is None:
        joined = joined.select("*", *[F.lit(None).cast("string").alias(c) for c in ("unit", "unit_hold")])
    else:
        joined = joined.join(F.broadcast(placements), "message_key", "left")
        member = F.col("unit").isNotNull()
        order = [
            F.when(member, F.col("unit_file")).otherwise(F.col("source_file")),
            F.when(member, F.col("unit_index")).otherwise(F.col("source_index")),
            F.coalesce(F.col("unit"), F.lit("")),
            F.coalesce(F.col("unit_position"), F.lit(0)),
        ]
    placed = None
    if per_qmgr > 1:
        if puts_per_queue is None:  # decision_counts always counts the puts
            puts_per_queue = cast(Mapping[tuple[str, str], int], decision_counts(decisions).puts_per_queue)
        placed = place_queues(puts_per_queue, partitions, per_qmgr)
    return joined.repartition(partitions, *partition_key(per_qmgr, placed, partitions)).sortWithinPartitions(
        *order, "message_key", *([PIECE_COLUMN] if in_pieces else [])
    )


UNIT_PLACEMENTS_SCHEMA = (
    "message_key string, unit string, unit_file string, unit_index long, unit_position int, unit_hold string"
)


def unit_placements(storage: Storage, decisions: DataFrame) -> DataFrame | None:
    """Where the members of groups and segmented messages among ``decisions`` go
    (`dlq_pipeline.replay.units.plan_units`), as rows to join to the work items, or None
    when there are none. One job over the messages' MsgFlags, in which Parquet's statistics
    skip every row group of messages that are no unit's (``MsgFlags`` 0 or 1); only when some
    are, one over the decisions of their keys. A Parquet warehouse on a local file system
    answers "none" from its files' footers, with no job."""
    state = landing_state(storage)
    if not state.open:
        return None
    names = open_message_files(storage, state)
    if names is not None:
        top = storage.column_max("messages", names, "msg_flags")
        if top is not None and top <= MQMF_SEGMENTATION_ALLOWED:
            return None
    flags = F.col("msg_flags")
    dead = F.rtrim(F.col("format")) == "MQDEAD"
    found = (
        open_messages(storage, state, names)
        .where((flags > MQMF_SEGMENTATION_ALLOWED) & (flags.bitwiseAND(F.lit(UNIT_FLAGS)) != 0))
        .select(
            "message_key",
            "group_id",
            "msg_seq_number",
            "offset",
            "msg_flags",
            (F.col("data_length") - F.when(dead, F.lit(DLH_LENGTH)).otherwise(F.lit(0))).alias("length"),
        )
        .collect()
    )
    if not found:
        return None
    spark = storage.spark
    stored = {r["message_key"]: r for r in found}
    keys = spark.createDataFrame([(k,) for k in sorted(stored)], "message_key string")
    decided = (
        decisions.join(F.broadcast(keys), "message_key")
        .select("message_key", "action", "target_q", "target_qmgr", "rule_line", "source_file", "source_index")
        .collect()
    )
    members = []
    for d in decided:
        m = stored[d["message_key"]]
        members.append(
            Member(
                Part(
                    d["message_key"],
                    bytes(m["group_id"] or b""),
                    int(m["msg_seq_number"] if m["msg_seq_number"] is not None else 1),
                    int(m["offset"] or 0),
                    int(m["msg_flags"]),
                    int(m["length"]),
                ),
                action=d["action"],
                target_q=d["target_q"],
                target_qmgr=d["target_qmgr"],
                rule_line=d["rule_line"],
                source_file=d["source_file"],
                source_index=d["source_index"],
            )
        )
    plan = plan_units(members)
    if not plan:
        return None
    rows = [(k, p.unit, p.first_file, p.first_index, p.position, p.hold) for k, p in sorted(plan.items())]
    return spark.createDataFrame(rows, UNIT_PLACEMENTS_SCHEMA)


def item_columns(
    message: Callable[[str], Column], in_pieces: bool = False, bodies_in_place: bool = False
) -> list[Column]:
    """A work item's columns: the decision's (alias ``d``) and ``message(column)``'s, the
    joined message's column, or a null where there is none. ``bodies_in_place``: the data
    file holding the body and its length instead of the body (`work_items`)."""
    needs_data = F.col("d.action").isin(*PUT_ACTIONS)  # IGNORE/DISCARD never ship their bodies
    body = (
        [F.when(needs_data, message(c)).alias(c) for c in (BODY_FILE, "data_length")]
        if bodies_in_place
        else [F.when(needs_data, message("data")).alias("data")]
    )
    return [
        *[F.col(f"d.{c}").alias(c) for c in JOINED_DECISION_COLUMNS if c != "not_before"],
        # as epoch microseconds: a timestamp collected into Python is naive *local* time
        F.unix_micros(F.col("d.not_before")).alias("not_before_us"),
        *[message(c).alias(c) for c in (*MD_COLUMNS.values(), CHAR_BYTES_COLUMN)],
        *body,
        F.coalesce(message("truncated"), F.lit(False)).alias("truncated"),
        F.unix_micros(message("recorded_at")).alias("recorded_at_us"),
        message("message_key").isNotNull().alias("has_message"),
        *([message(PIECE_COLUMN).alias(PIECE_COLUMN)] if in_pieces else []),
    ]


def replay(
    spark: SparkSession,
    storage: Storage,
    decisions: DataFrame,
    *,
    target: str,
    settings: ReplaySettings = ReplaySettings(),
    qmgrs: Mapping[str, Mapping] | None = None,
    run_id: str,
    now: dt.datetime,
    task_hook: Callable[[int, int], None] | None = None,
    progress: Progress | Report | None = None,
    puts_per_queue: Mapping[tuple[str, str], int] | None = None,
    decisions_total: int | None = None,
) -> dict[str, int]:
    """Replay the run's decisions to ``target``; append one ledger row per decision; return
    the number of rows per outcome. ``settings`` are the ``[replay]`` settings, ``qmgrs`` the
    client settings per queue manager an ``mq:`` target needs; checkpoints (and simulated
    queue managers) live in the warehouse, ``storage.path``. ``task_hook(partition_id,
    batches_committed)`` runs in the task after each committed batch (rehearsals and tests
    inject task failures with it). ``progress`` counts the partitions whose puts are done.
    ``puts_per_queue``: `classify.spark.decision_counts`'s, when the caller has them (else counted here
    where `replay.connections_per_qmgr` > 1 needs them); ``decisions_total``: how many
    decisions there are, when the caller has counted them (`work_items`)."""
    check_run_id(run_id)
    now = as_utc(now)
    if decisions_total == 0:  # nothing to put: only what a killed run left is finished
        recover_checkpoints(spark, storage, files.join(storage.files_root, CHECKPOINTS_DIR))
        return {}
    chosen = open_target(
        target,
        warehouse=storage.path,
        qmgrs=qmgrs,
        file_mode=settings.dir_mode,
        webhdfs=storage.webhdfs,
        sim_dir=settings.sim_dir,
    )
    chosen.preflight()
    root = files.join(storage.files_root, CHECKPOINTS_DIR)
    skip = recover_checkpoints(spark, storage, root)
    checkpoint_root = root if chosen.resumable else None

    in_place = storage.plain_parquet_files("messages")
    placements = unit_placements(storage, decisions) if settings.units == "whole" else None
    items = work_items(
        storage,
        decisions,
        settings.max_connections,
        skip,
        settings.connections_per_qmgr,
        puts_per_queue,
        None if in_place else put_tasks(spark, storage, decisions),
        decisions_total,
        in_place,
        placements,
    )
    lease = held_lease(storage)
    run = partition_function(
        chosen,
        settings,
        run_id,
        now,
        checkpoint_root,
        task_hook,
        RunGroup.of_this_process(),
        lease.fence() if lease is not None else None,
    )
    ledger = partition_rows(items, run, storage.webhdfs)
    observation = Observation(f"replay_{run_id}_{secrets.token_hex(4)}")
    observed = ledger.observe(
        observation, *[F.sum(F.when(F.col("outcome") == o, 1).otherwise(0)).alias(o) for o in OUTCOMES]
    )
    check_lease(storage)

    def write() -> None:
        # the puts run in the write's last stage, one task per partition: that stage is counted
        with TaskTicker(spark, progress, "replay", "partitions", stage="last"):
            storage.append("ledger", observed)

    recording_ledger(storage, write)
    counts = {o: int(observation.get.get(o) or 0) for o in OUTCOMES}
    crash_point("replay-ledger-appended")
    files.delete(files.join(root, run_id))
    if any(counts.get(o) for o in ENDED_OUTCOMES):
        settle_landings(storage, now)
    return {o: n for o, n in counts.items() if n}


class ReplayError(UsageError, RuntimeError):
    """There is nothing (valid) to replay; the message says why."""


def replay_decisions(
    spark: SparkSession,
    storage: Storage,
    *,
    target: str,
    settings: ReplaySettings = ReplaySettings(),
    qmgrs: Mapping[str, Mapping] | None = None,
    run_id: str | None = None,
    now: dt.datetime | None = None,
    progress: Progress | Report | None = None,
) -> dict:
    """Replay the decisions of run ``run_id`` (default: the latest run that made decisions)
    to ``target``: the `replay` command, e.g. after ``classify``, or to send for real what a
    dry run showed.

    Decisions that are no longer current are skipped and counted as ``stale``: the message's
    processing has ended since, or its attempt count in the ledger is no longer the one the
    decision was made with (another run tried it; classify again). The ledger rows get the
    decisions' run id when that run has none yet, else ``<run_id>.replay-<hex>``.
    """
    everything = storage.read("decisions")
    if run_id is None:
        latest = everything.orderBy(F.col("decided_at").desc(), F.col("run_id").desc()).select("run_id").limit(1)
        found = latest.collect()
        if not found:
            raise ReplayError("there are no decisions in the warehouse: run classify (or run) first")
        run_id = found[0]["run_id"]
    decisions = everything.where(F.col("run_id") == run_id)
    if decisions.isEmpty():
        raise ReplayError(f"run {run_id} made no decisions (see dlq-pipeline report for the runs)")
    ledger = storage.read("ledger")
    states = message_states(ledger)
    current = decisions.join(states, "message_key", "left")
    puts = F.col("action").isin(*PUT_ACTIONS)
    stale = F.coalesce(F.col("ended"), F.lit(False)) | (
        puts & (F.coalesce(F.col("prior_attempts"), F.lit(0)) != F.col("attempt") - 1)
    )
    current = current.withColumn("_stale", stale).cache()
    try:
        # an aggregation without groups: always one row
        total, stale_count = cast(Row, current.agg(F.count(F.lit(1)), F.count(F.when(F.col("_stale"), 1))).first())
        fresh = current.where(~F.col("_stale")).select(*decisions.columns)
        ledger_run = run_id
        if not ledger.where(F.col("run_id") == run_id).isEmpty():
            ledger_run = check_run_id(f"{run_id}.replay-{secrets.token_hex(3)}")
        counts = replay(
            spark,
            storage,
            fresh,
            target=target,
            settings=settings,
            qmgrs=qmgrs,
            run_id=ledger_run,
            now=as_utc(now) or utc_now(),
            progress=progress,
            decisions_total=total - stale_count,
        )
    finally:
        current.unpersist()
    return {
        "decisions_run_id": run_id,
        "run_id": ledger_run,
        "target": target,
        "outcomes": counts,
        "stale": stale_count,
    }
