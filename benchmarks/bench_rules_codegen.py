"""Rules classification cost by table size: the obvious `when` chain vs dlq_pipeline's compiler.

Why: a rules table compiled into one ordered CASE WHEN chain grows one generated Java method
with the table. Past ~8000 bytes of bytecode HotSpot stops JIT-compiling it, past 64 KB it
cannot be compiled at all and Spark falls back (hugeMethodLimit, codegen fallback). This
measures where that bites, and that `rules.spark.classify_columns` stays flat.

Approaches (all in one projection over the same Parquet input):
  compiler   classify_columns: exact §8 semantics (the rule chosen per distinct combination of
             tested values, its outputs looked up by index)
  chain      the obvious single chain: when(rule 0 matches, outputs 0).when(rule 1 ...) ...;
             first match only, so it does NOT implement cumulative RETRY (cheaper than exact)
  chain-sum  the obvious chain made exact: branch i tests the running RETRY total written
             out over rules 0..i (quadratic size; only run up to --max-quadratic rules)

Usage: .venv/bin/python -m benchmarks.bench_rules_codegen [--rows 200000] [--sizes 10,100,500]
       [--approaches compiler,chain,chain-sum] [--huge-method-limit 8000|65535] [--repeat 3]
       [--max-quadratic 100] [--check]
Prints, per approach and table size: plan build time, first run (includes code generation
and compilation), best of the next runs (wall and JVM CPU seconds), rows per CPU second, CPU
µs per message, whether the projection ran in whole-stage codegen ("wscg"), or Spark had to
fall back to interpreted evaluation because the generated code grew beyond 64 KB
("fallback"), and the largest generated method (bytecode bytes). A short warm-up run first
keeps JVM start-up costs out of the first row. --check also verifies that chain-sum decides exactly as the compiler.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from benchmarks.chained_rules import rule_sql
from dlq_pipeline.rules.model import DECISION_COLUMNS, Rule, RulesTable
from dlq_pipeline.rules.spark import classify_columns, resolved_sql

REASONS = (2053, 2035, 2051, 2085, 2087, 265)


def realistic_table(size: int, seed: int = 7) -> RulesTable:
    """`size` rules in the shapes real tables use (per-application queues, reasons, the ?*
    idiom, &-substitutions), ending with IBM's advised catch-all."""
    rnd = random.Random(seed)
    rules = []
    for i in range(size - 1):
        app = f"APP{i:03d}"
        shape = rnd.randrange(6)
        if shape == 0:
            r = Rule(0, i, {"DESTQ": f"{app}.*", "REASON": rnd.choice(REASONS)}, "RETRY", retry=rnd.randint(1, 5))
        elif shape == 1:
            r = Rule(0, i, {"DESTQ": f"{app}.IN"}, "FWD", fwdq=f"{app}.ERRORS", fwdqm="QMERR")
        elif shape == 2:
            r = Rule(0, i, {"DESTQM": f"QM{i:03d}", "REPLYQM": "?*"}, "FWD", fwdq="&REPLYQ", fwdqm="&REPLYQM")
        elif shape == 3:
            r = Rule(0, i, {"APPLNAME": f"svc{i:03d}*", "PERSIST": 0}, "DISCARD")
        elif shape == 4:
            r = Rule(0, i, {"REASON": 2035, "USERID": f"u{i:03d}"}, "FWD", fwdq="SECURITY.Q", header=False)
        else:
            r = Rule(0, i, {"FORMAT": "MQSTR", "DESTQ": f"*.{app}.?N"}, "IGNORE")
        rules.append(
            Rule(
                line=10 + i,
                index=i,
                patterns=r.patterns,
                action=r.action,
                retry=r.retry,
                fwdq=r.fwdq,
                fwdqm=r.fwdqm,
                header=r.header,
            )
        )
    rules.append(Rule(line=10 + size, index=size - 1, patterns={}, action="FWD", fwdq="DEADQ.MANUAL"))
    return RulesTable(path=f"bench-{size}.rules", rules=tuple(rules))


def messages(spark: SparkSession, rows: int, apps: int, path: str) -> DataFrame:
    """`rows` match-view rows written to Parquet; applications spread over the whole table."""
    h = lambda salt: F.pmod(F.xxhash64(F.col("id"), F.lit(salt)), F.lit(1 << 30))  # noqa: E731
    k = F.lpad((h(1) % apps).cast("string"), 3, "0")
    df = spark.range(rows).select(
        F.lit(True).alias("has_dlh"),
        F.lit(False).alias("truncated"),
        F.element_at(F.array(*[F.lit(r) for r in REASONS]), (h(2) % len(REASONS) + 1).cast("int")).alias("dlh_reason"),
        F.rpad(
            F.when(h(3) % 4 == 0, F.concat(F.lit("X.APP"), k, F.lit(".IN"))).otherwise(
                F.concat(F.lit("APP"), k, F.lit(".IN"))
            ),
            48,
            " ",
        ).alias("dlh_dest_q"),
        F.rpad(F.concat(F.lit("QM"), k), 48, " ").alias("dlh_dest_qmgr"),
        F.lit("MQSTR   ").alias("dlh_format"),
        F.rpad(F.concat(F.lit("REPLY."), k), 48, " ").alias("reply_to_q"),
        F.rpad(F.when(h(4) % 2 == 0, F.lit("QMR")).otherwise(F.lit("")), 48, " ").alias("reply_to_qmgr"),
        F.rpad(F.concat(F.lit("u"), k), 12, " ").alias("user_id"),
        F.rpad(F.lit(""), 32, " ").alias("appl_identity_data"),
        F.rpad(F.concat(F.lit("svc"), k, F.lit("-worker")), 28, " ").alias("put_appl_name"),
        F.lit(6).alias("put_appl_type"),
        F.lit(8).alias("msg_type"),
        (h(5) % 2).cast("int").alias("persistence"),
        F.lit(0).alias("feedback"),
        (h(6) % 4).cast("int").alias("prior_attempts"),
    )
    df.write.mode("overwrite").parquet(path)
    return spark.read.parquet(path)


def _outputs_struct(rule: Rule) -> Column:
    q = qm = F.lit(None).cast("string")
    if rule.action == "RETRY":
        q, qm = F.expr(resolved_sql("dlh_dest_q")), F.expr(resolved_sql("dlh_dest_qmgr"))
    elif rule.action == "FWD":

        def name(v):
            cols = {
                "&DESTQ": "dlh_dest_q",
                "&DESTQM": "dlh_dest_qmgr",
                "&REPLYQ": "reply_to_q",
                "&REPLYQM": "reply_to_qmgr",
            }
            return F.expr(resolved_sql(cols[v])) if v in cols else F.lit((v or "").rstrip(" "))

        q, qm = name(rule.fwdq), name(rule.fwdqm)
    return F.struct(
        F.lit(rule.action).alias("action"),
        F.lit(rule.line).alias("rule_line"),
        F.lit(rule.index).alias("rule_index"),
        q.alias("target_q"),
        qm.alias("target_qmgr"),
        F.lit(rule.header if rule.action == "FWD" else None).cast("boolean").alias("header"),
        F.lit(rule.putaut if rule.action in ("RETRY", "FWD") else None).cast("string").alias("putaut"),
        F.lit(None).cast("string").alias("ignore_reason"),
    )


def obvious_chain(table: RulesTable, df: DataFrame, cumulative: bool) -> DataFrame:
    """One ordered when chain whose branches carry the rule's outputs."""
    attempts = F.col("prior_attempts").cast("bigint")
    predicates = [F.expr(rule_sql(r)) for r in table.rules]
    chain = None
    for i, rule in enumerate(table.rules):
        condition = predicates[i]
        if cumulative and rule.action != "IGNORE":
            total = sum(
                (
                    F.when(predicates[j], F.lit(table.rules[j].retry)).otherwise(F.lit(0))
                    for j in range(i + 1)
                    if table.rules[j].action != "IGNORE"
                ),
                F.lit(0).cast("bigint"),
            )
            condition = condition & (total > attempts)
        branch = _outputs_struct(rule)
        chain = F.when(condition, branch) if chain is None else chain.when(condition, branch)
    reason = F.lit("no_match")
    if cumulative:  # exact: something matched but every matching rule has used its attempts
        reason = F.when(reduce(lambda a, b: a | b, predicates), F.lit("retries_exhausted")).otherwise(reason)
    implicit = F.struct(
        *[
            F.lit(v).cast(t).alias(n)
            for n, v, t in zip(
                DECISION_COLUMNS[:-1],
                ["IGNORE", None, None, None, None, None, None],
                ["string", "int", "int", "string", "string", "boolean", "string"],
            )
        ],
        reason.alias("ignore_reason"),
    )
    decided = df.withColumn("_d", chain.otherwise(implicit))
    return decided.select(*df.columns, *[F.col(f"_d.{n}").alias(n) for n in DECISION_COLUMNS])


def check(table: RulesTable, df: DataFrame) -> None:
    """The exact chain and the compiler must agree on every row (a benchmark of a wrong
    answer is worthless)."""
    key = ["id", *DECISION_COLUMNS]
    with_id = df.withColumn("id", F.monotonically_increasing_id()).cache()
    a = classify_columns(table, with_id).select(*key)
    b = obvious_chain(table, with_id, cumulative=True).select(*key)
    differ = a.exceptAll(b).count() + b.exceptAll(a).count()
    with_id.unpersist()
    if differ:
        raise SystemExit(f"chain-sum and the compiler disagree on {differ} rows ({len(table.rules)} rules)")
    print(f"{'':<10} {len(table.rules):>5}   check: chain-sum == compiler on every row", flush=True)


def plan_facts(spark: SparkSession, df: DataFrame) -> tuple[bool, int | None]:
    """(projection inside whole-stage codegen, largest whole-stage method in bytecode bytes)."""
    plan = df._jdf.queryExecution().executedPlan()
    text = plan.toString()
    in_wscg = any(line.lstrip(" +-:").startswith("*(") and "Project" in line for line in text.splitlines())
    debug = getattr(getattr(spark._jvm.org.apache.spark.sql.execution.debug, "package$"), "MODULE$")
    try:
        sizes = [
            entry._3().maxMethodCodeSize()
            for entry in spark._jvm.scala.jdk.javaapi.CollectionConverters.asJava(debug.codegenStringSeq(plan))
        ]
    except Exception:  # noqa: BLE001 - only a diagnostic
        sizes = []
    return in_wscg, max(sizes) if sizes else None


def timed_run(df: DataFrame) -> tuple[float, float]:
    """(wall seconds, JVM CPU seconds) of one full evaluation. The machine may be shared, so
    the CPU time the JVM spent (local mode: driver = executor) is the steadier figure."""
    pid = df.sparkSession._jvm.java.lang.ProcessHandle.current().pid()
    cpu0, start = _cpu_seconds(pid), time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start, _cpu_seconds(pid) - cpu0


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--sizes", default="10,100,500")
    parser.add_argument("--approaches", default="compiler,chain,chain-sum")
    parser.add_argument("--huge-method-limit", default="8000")
    parser.add_argument("--max-quadratic", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="chain-sum must equal the compiler, row for row")
    args = parser.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from dlq_pipeline.engine.session import get_spark

    spark = get_spark(
        {
            "master": "local[2]",
            "app_name": "bench-rules-codegen",
            "log_level": "OFF",
            "spark_conf": {
                "spark.sql.shuffle.partitions": "2",
                "spark.sql.codegen.hugeMethodLimit": args.huge_method_limit,
            },
        }
    )
    spark.conf.set("spark.sql.codegen.hugeMethodLimit", args.huge_method_limit)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(
        f"rows={args.rows} hugeMethodLimit={spark.conf.get('spark.sql.codegen.hugeMethodLimit')} "
        f"spark={spark.version} cores={os.cpu_count()}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        warm = messages(spark, 1000, 10, os.path.join(tmp, "warm"))
        timed_run(classify_columns(realistic_table(10), warm))
        timed_run(obvious_chain(realistic_table(10), warm, cumulative=True))
        print(
            f"{'approach':<10} {'rules':>5} {'plan s':>7} {'first s':>8} {'wall s':>7} {'cpu s':>6}"
            f" {'rows/cpu-s':>10} {'cpu µs/msg':>10} {'codegen':>8} {'max method B':>12}"
        )
        for size in sizes:
            table = realistic_table(size)
            df = messages(spark, args.rows, size, os.path.join(tmp, f"m{size}"))
            for approach in args.approaches.split(","):
                if approach == "chain-sum" and size > args.max_quadratic:
                    print(f"{approach:<10} {size:>5}   skipped: quadratic expression (--max-quadratic)")
                    continue
                t0 = time.perf_counter()
                out = (
                    classify_columns(table, df)
                    if approach == "compiler"
                    else obvious_chain(table, df, cumulative=approach == "chain-sum")
                )
                in_wscg, method = plan_facts(spark, out)
                # maxMethodCodeSize -1: Janino could not compile the stage (64 KB), Spark ran it
                # interpreted instead
                codegen = "fallback" if method == -1 else "wscg" if in_wscg else "none"
                plan_s = time.perf_counter() - t0
                first, _ = timed_run(out)
                wall, cpu = min(timed_run(out) for _ in range(args.repeat))
                print(
                    f"{approach:<10} {size:>5} {plan_s:>7.2f} {first:>8.2f} {wall:>7.2f} {cpu:>6.2f}"
                    f" {args.rows / cpu:>10,.0f} {cpu / args.rows * 1e6:>10.2f} {codegen:>8}"
                    f" {method or '-':>12}",
                    flush=True,
                )
                if args.check and approach == "chain-sum":
                    check(table, df)
    spark.stop()


if __name__ == "__main__":
    main()
