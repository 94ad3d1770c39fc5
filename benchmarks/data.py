"""Benchmark inputs, all from the project's generator: dumps, landed messages, rules tables.

The generator is pure Python (~1,300 messages/s), so large inputs are made from a generated
*pool* landed once (through the real ingest) and copied in Spark: decode and classify do
the same work per copy, which is all a throughput measurement needs.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import Sizes
from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.mq.constants import reason_name

STARTER_RULES = str(Path(__file__).resolve().parents[1] / "dlq_pipeline" / "data" / "rules" / "starter.rules")

# --- rules tables ------------------------------------------------------------------------------

# Rules for the traffic the generator makes (its queues, reasons and applications): what a
# hub's operations team writes first. Most messages are decided by one of these.
OPERATIONS_RULES = (
    "REASON(MQRC_Q_FULL) DESTQ(ORDERS.IN) ACTION(RETRY) RETRY(5)",
    "REASON(MQRC_Q_FULL) DESTQ(PAYMENTS.*) ACTION(RETRY) RETRY(5)",
    "REASON(MQRC_PUT_INHIBITED) DESTQ(INVENTORY.*) ACTION(RETRY) RETRY(3)",
    "REASON(MQRC_NOT_AUTHORIZED) DESTQ(PAYROLL.*) ACTION(FWD) FWDQ(DEADQ.SECURITY.HR) HEADER(YES)",
    "REASON(MQRC_NOT_AUTHORIZED) ACTION(FWD) FWDQ(DEADQ.MANUAL.SECURITY) HEADER(YES)",
    "REASON(MQRC_UNKNOWN_OBJECT_NAME) DESTQ(ORDRES.IN) ACTION(FWD) FWDQ(ORDERS.IN) HEADER(NO)",
    "MSGTYPE(MQMT_REQUEST) REASON(MQRC_UNKNOWN_OBJECT_NAME) REPLYQ(?*) REPLYQM(?*) "
    "ACTION(FWD) FWDQ(&REPLYQ) FWDQM(&REPLYQM) HEADER(YES)",
    "REASON(MQRC_UNKNOWN_REMOTE_Q_MGR) DESTQM(OLDQM*) ACTION(FWD) FWDQ(DEADQ.MANUAL.ADDRESS) HEADER(YES)",
    "REASON(MQRC_BACKOUT_THRESHOLD_REACHED) APPLNAME('com.acme.*') ACTION(FWD) FWDQ(JMS.POISON.HOLD) HEADER(YES)",
    "REASON(MQRC_MSG_TOO_BIG_FOR_Q) ACTION(FWD) FWDQ(DEADQ.MANUAL.SIZE) HEADER(YES)",
    "DESTQM(CSQ*) REASON(MQRC_CLUSTER_RESOLUTION_ERROR) ACTION(RETRY) RETRY(2)",
    "REASON(MQRC_Q_FULL) ACTION(RETRY) RETRY(3)",
)
CATCH_ALL = "ACTION(FWD) FWDQ(REALLY.DEAD.QUEUE) HEADER(YES)"

# Rules application teams add over the years: specific queues, queue managers and programs,
# in every pattern shape the compiler has (equality, prefix, suffix, ?-patterns, regex).
_TEAM_SHAPES = (
    "DESTQ({app}.*) REASON({reason}) ACTION(RETRY) RETRY(3)",
    "DESTQ({app}.REQUEST) DESTQM(QM{qm:02d}) ACTION(FWD) FWDQ({app}.HOLD) HEADER(YES)",
    "APPLNAME('{low}-svc*') REASON({reason}) ACTION(FWD) FWDQ({app}.SECURITY) HEADER(YES)",
    "DESTQ(*.{app}.IN) ACTION(RETRY) RETRY(1)",
    "REPLYQ({app}.REPLY*) ACTION(FWD) FWDQ(&REPLYQ) FWDQM(&REPLYQM) HEADER(YES)",
    "DESTQ({app}.*.V?) REASON({reason}) ACTION(FWD) FWDQ({app}.VERSIONS) HEADER(NO)",
    "USERID({low}usr) DESTQ({app}*) ACTION(DISCARD)",
)
_TEAM_REASONS = (2053, 2085, 2035, 2051, 2087, 2189)


def rules_table_text(count: int, seed: int = 11) -> str:
    """A valid table of ``count`` rules (``count`` >= 2): the operations rules spread evenly
    through application teams' rules, and a catch-all FWD last."""
    rng = random.Random(seed)
    body = count - 1
    ops = list(OPERATIONS_RULES[:body])
    teams = []
    for k in range(body - len(ops)):
        app = f"APP{k:03d}"
        shape = _TEAM_SHAPES[k % len(_TEAM_SHAPES)]
        teams.append(
            shape.format(app=app, low=app.lower(), qm=rng.randrange(20), reason=reason_name(rng.choice(_TEAM_REASONS)))
        )
    # the operations rules at evenly spaced positions, the teams' rules around them
    at = {round((j + 1) * body / (len(ops) + 1)) for j in range(len(ops))} if teams else set(range(body))
    rules = [ops.pop(0) if (i in at and ops) or not teams else teams.pop(0) for i in range(body)]
    rules += ops
    header = (
        "* benchmark table: operations rules among application teams' rules\n"
        "INPUTQM(' ') INPUTQ(' ') RETRYINT(300) WAIT(NO)\n"
    )
    return header + "\n".join(_wrapped(r) for r in rules + [CATCH_ALL]) + "\n"


def _wrapped(rule: str, width: int = 70) -> str:
    """One rule over as many lines as it needs, with ``+`` continuations (runmqdlq reads
    at most 72 characters of a line)."""
    lines, line = [], ""
    for token in rule.split(" "):
        if line and len(line) + 1 + len(token) > width:
            lines.append(line + " +")
            line = "  " + token
        else:
            line = f"{line} {token}" if line else token
    return "\n".join(lines + [line])


def rules_table(count: int, seed: int = 11):
    from dlq_pipeline.rules.parser import parse_rules

    table = parse_rules(rules_table_text(count, seed), f"<generated {count} rules>")
    if not table.ok or len(table.rules) != count:
        errors = [d for d in table.diagnostics if d.severity == "error"]
        raise ValueError(f"generated table of {count} rules is not valid: {errors[:3]}")
    return table


# --- dumps -------------------------------------------------------------------------------------


def dumps(out_dir: Path, count: int, seed: int, *, files: int = 1, max_size: int = 64 * 1024) -> list[str]:
    """Generated dmpmqmsg dumps (cached: reused when already written with the same options)."""
    out = Path(out_dir)
    stamp = out / f".done-{count}-{seed}-{files}-{max_size}"
    if stamp.exists():
        return [str(p) for p in sorted(out.glob("dlq-*.dmp"))]
    paths = write_generated(out, count, seed, files=files, max_size=max_size)
    stamp.touch()
    return [str(p) for p in paths]


def landed_pool(spark, dump_paths: list[str], out: Path) -> str:
    """The dumps landed by the real ingest (`land`) and written as Parquet, in 8 files."""
    from dlq_pipeline.ingest.spark import land

    messages, _ = land(spark, dump_paths, run_id="bench-pool")
    messages.repartition(8).write.mode("overwrite").parquet(str(out))
    return str(out)


def copied(spark, pool: str, copies: int, out: Path) -> str:
    """``copies`` copies of every pooled message, as Parquet (the decode/classify input)."""
    from pyspark.sql import functions as F

    messages = spark.read.parquet(pool)
    copy = spark.range(copies).withColumnRenamed("id", "_copy")
    rows = messages.crossJoin(F.broadcast(copy))
    rows = rows.withColumn("message_key", F.concat_ws("-", "message_key", F.col("_copy").cast("string"))).drop("_copy")
    rows.write.mode("overwrite").parquet(str(out))
    return str(out)


def cached(path: Path, params: dict, make: Callable[[], object]) -> None:
    """Run ``make`` unless ``path`` already holds what these ``params`` made."""
    stamp = path.parent / f".{path.name}.json"
    if path.exists() and stamp.exists() and json.loads(stamp.read_text()) == params:
        return
    shutil.rmtree(path, ignore_errors=True)
    make()
    stamp.write_text(json.dumps(params))


def decode_input(spark, sizes: Sizes, work: Path) -> tuple[str, str]:
    """(pool, copies): the generated pool landed as Parquet, and its copies (decode input)."""
    pool_dumps = dumps(work / "pool-dumps", sizes.decode_pool, seed=101, max_size=sizes.max_size)
    pool, copies = work / "pool", work / "decode-input"
    cached(pool, {"n": sizes.decode_pool, "max": sizes.max_size}, lambda: landed_pool(spark, pool_dumps, pool))
    cached(
        copies,
        {"n": sizes.decode_pool, "max": sizes.max_size, "copies": sizes.decode_copies},
        lambda: copied(spark, str(pool), sizes.decode_copies, copies),
    )
    return str(pool), str(copies)


def large_messages_dump(path: Path, count: int, payload: int, seed: int = 505) -> str:
    """A dmpmqmsg dump of ``count`` generated messages with an MQDLH, each padded to ``payload``
    bytes with random bytes (written one message at a time)."""
    from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
    from dlq_pipeline.dumps.generator import generate_messages

    rng = random.Random(seed)

    def messages():
        for msg in generate_messages(count, seed, {"no_dlh": 0, "empty": 0, "trigger": 0}, max_size=4096):
            yield msg.md, msg.data[:payload] + rng.randbytes(max(0, payload - len(msg.data)))

    write_dump(messages(), path)
    return str(path)
