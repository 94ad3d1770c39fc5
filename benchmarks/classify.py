"""Section 2, classify: the rule chosen per distinct combination of values (ours), against the
reference matcher as a Python UDF and every rule compiled into SQL, over 10 to 500 rules: the
marginal cost per message and the fixed cost per query."""

from __future__ import annotations

import time
from pathlib import Path

from benchmarks import data
from benchmarks.common import Context, Sizes, interleaved, median, noop, ratio, summary


def classify_input(spark, sizes: Sizes, work: Path) -> str:
    """The match-view columns of ``classify_rows`` messages (decoded once), as Parquet."""
    from pyspark.sql import functions as F

    pool, _ = data.decode_input(spark, sizes, work)
    out = work / "classify-input"
    copies = -(-sizes.classify_rows // sizes.decode_pool)

    def make():
        from dlq_pipeline.mq.spark import decode_headers

        rows = spark.read.parquet(pool).crossJoin(F.broadcast(spark.range(copies).withColumnRenamed("id", "_c")))
        rows = rows.withColumn("message_key", F.concat_ws("-", "message_key", F.col("_c").cast("string")))
        decoded = decode_headers(rows.drop("_c")).drop("data", "notes", "decode_flags")
        decoded.limit(sizes.classify_rows).withColumn("prior_attempts", F.lit(0)).repartition(8).write.mode(
            "overwrite"
        ).parquet(str(out))

    data.cached(out, {"pool": sizes.decode_pool, "rows": sizes.classify_rows, "max": sizes.max_size}, make)
    return str(out)


_VIEW_COLUMNS = ("has_dlh", "truncated")


def reference_classify(df, table):
    """The obvious way: the reference matcher (``matcher.decide``) as a Python UDF over the
    match-view columns the rules read (the names of ``view.match_view``)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from dlq_pipeline.rules.matcher import SUBSTITUTION_COLUMNS, decide
    from dlq_pipeline.rules.model import DECISION_COLUMNS, PATTERN_FIELDS

    names = sorted({c for c, _, _ in PATTERN_FIELDS.values()} | set(SUBSTITUTION_COLUMNS.values()) | set(_VIEW_COLUMNS))
    schema = T.StructType(
        [
            T.StructField("action", T.StringType()),
            T.StructField("rule_line", T.IntegerType()),
            T.StructField("rule_index", T.IntegerType()),
            T.StructField("target_q", T.StringType()),
            T.StructField("target_qmgr", T.StringType()),
            T.StructField("header", T.BooleanType()),
            T.StructField("putaut", T.StringType()),
            T.StructField("ignore_reason", T.StringType()),
        ]
    )

    def decide_one(attempts, *values):
        d = decide(table, dict(zip(names, values)), attempts or 0)
        return tuple(getattr(d, c) for c in DECISION_COLUMNS)

    udf = F.udf(decide_one, schema)
    return df.select("message_key", udf(F.col("prior_attempts"), *[F.col(c) for c in names]).alias("d")).select(
        "message_key", "d.*"
    )


def compiled_classify(df, table):
    """Ours: ``classify_columns``, the rule chosen per distinct combination of values."""
    from dlq_pipeline.rules.model import DECISION_COLUMNS
    from dlq_pipeline.rules.spark import classify_columns

    return classify_columns(table, df, "prior_attempts").select("message_key", *DECISION_COLUMNS)


def chained_classify(df, table):
    """Every rule compiled into SQL (``chained_columns``): each message tests every rule."""
    from benchmarks.chained_rules import chained_columns
    from dlq_pipeline.rules.model import DECISION_COLUMNS

    return chained_columns(table, df, "prior_attempts").select("message_key", *DECISION_COLUMNS)


def classify_agreement(spark, df, table) -> dict:
    from pyspark.sql import functions as F

    from dlq_pipeline.rules.model import DECISION_COLUMNS

    a, b = compiled_classify(df, table).alias("a"), reference_classify(df, table).alias("b")
    same = F.lit(True)
    for c in DECISION_COLUMNS:
        same = same & F.col(f"a.{c}").eqNullSafe(F.col(f"b.{c}"))
    row = (
        a.join(b, "message_key").agg(F.count("*").alias("n"), F.sum(F.when(same, 1).otherwise(0)).alias("same")).first()
    )
    return {"rows": int(row["n"]), "agree": int(row["same"] or 0)}


def _prepared(build):
    """(DataFrame, seconds): ``build()`` and its executed plan (SQL generation, parsing,
    analysis, optimisation, physical planning): the fixed cost a classification pays once
    whatever the row count."""
    began = time.perf_counter()
    df = build()
    df._jdf.queryExecution().executedPlan()
    return df, time.perf_counter() - began


def bench_classify(spark, sizes: Sizes, work: Path, ctx: Context) -> dict:
    """Each classifier over N and ``classify_scale`` x N messages, built and planned before
    the clock starts: the slope between the two sizes is the cost per message, the
    intercept (plus the build-and-plan time, measured on its own) the fixed cost per query.
    Timing one size alone mixes both: at 10,000 rows a large table's planning dominated."""
    from pyspark.sql import functions as F

    df = spark.read.parquet(classify_input(spark, sizes, work)).cache()
    n = df.count()
    scale = sizes.classify_scale
    big = df.crossJoin(F.broadcast(spark.range(scale).withColumnRenamed("id", "_copy"))).drop("_copy").cache()
    big_n = big.count()
    out = {"messages": n, "messages_large": big_n, "tables": {}}
    for count in sizes.rule_counts:
        table = data.rules_table(count)
        build = {
            "compiled": lambda d: compiled_classify(d, table),
            "sql_chain": lambda d: chained_classify(d, table),
            "reference_udf": lambda d: reference_classify(d, table),
        }
        prepare = {k: [] for k in build}
        for _ in range(max(sizes.repeats, 1)):
            for k, make in build.items():
                prepare[k].append(_prepared(lambda: make(df))[1])
        queries = {(k, size): make(d) for k, make in build.items() for size, d in (("n", df), ("large", big))}
        variants = {f"{k}_{size}": (lambda q=q: noop(q)) for (k, size), q in queries.items()}
        cpu: dict[str, list[float]] = {}
        times = interleaved(variants, sizes.repeats, cpu=cpu)
        t = {k: median(v) for k, v in times.items()}
        c = {k: median(v) for k, v in cpu.items()}
        figures = {}
        for k in build:
            slope = (t[f"{k}_large"] - t[f"{k}_n"]) / max(big_n - n, 1)
            intercept = t[f"{k}_n"] - slope * n
            figures[k] = {
                "cpu_marginal_us_per_message": round((c[f"{k}_large"] - c[f"{k}_n"]) / max(big_n - n, 1) * 1e6, 2),
                "build_and_plan_s": round(median(prepare[k]), 3),
                "run_s": {"n": summary(times[f"{k}_n"], n), "large": summary(times[f"{k}_large"], big_n)},
                "marginal_us_per_message": round(slope * 1e6, 2),
                "fixed_s": round(median(prepare[k]) + intercept, 3),
                "whole_us_per_message_at_n": round((median(prepare[k]) + t[f"{k}_n"]) / n * 1e6, 1),
            }
        decided_by = compiled_classify(df, table).groupBy("rule_index").count()
        spread = {
            int(r["rule_index"]) if r["rule_index"] is not None else -1: int(r["count"]) for r in decided_by.collect()
        }
        weighted = sum((k if k >= 0 else count) * v for k, v in spread.items()) / max(n, 1)
        out["tables"][str(count)] = {
            "variants": figures,
            "reference_over_compiled_marginal": ratio(
                figures["reference_udf"]["marginal_us_per_message"], figures["compiled"]["marginal_us_per_message"]
            ),
            "reference_over_compiled_at_n": ratio(
                figures["reference_udf"]["whole_us_per_message_at_n"], figures["compiled"]["whole_us_per_message_at_n"]
            ),
            "mean_rules_scanned_by_reference": round(weighted + 1, 1),
            "catch_all_share": round(spread.get(count - 1, 0) / max(n, 1), 3),
            "agreement": classify_agreement(spark, df.limit(2000), table),
        }
    first, last = str(sizes.rule_counts[0]), str(sizes.rule_counts[-1])
    per = {
        k: {v: out["tables"][k]["variants"][v] for v in ("compiled", "sql_chain", "reference_udf")}
        for k in (first, last)
    }
    out["growth"] = {
        # targets: ours' marginal cost at the largest table <= 2x that at the smallest,
        # and its build + plan there <= 0.5 s
        f"sql_chain_marginal_{last}_over_{first}_rules": ratio(
            per[last]["sql_chain"]["marginal_us_per_message"], per[first]["sql_chain"]["marginal_us_per_message"]
        ),
        f"compiled_build_and_plan_s_at_{last}_rules": per[last]["compiled"]["build_and_plan_s"],
        f"compiled_marginal_{last}_over_{first}_rules": ratio(
            per[last]["compiled"]["marginal_us_per_message"], per[first]["compiled"]["marginal_us_per_message"]
        ),
        f"reference_marginal_{last}_over_{first}_rules": ratio(
            per[last]["reference_udf"]["marginal_us_per_message"],
            per[first]["reference_udf"]["marginal_us_per_message"],
        ),
        f"compiled_fixed_{last}_over_{first}_rules": ratio(
            per[last]["compiled"]["fixed_s"], per[first]["compiled"]["fixed_s"]
        ),
        # the marginal costs in CPU seconds (JVM + Python workers): steadier on a shared machine
        f"compiled_cpu_marginal_{last}_over_{first}_rules": ratio(
            per[last]["compiled"]["cpu_marginal_us_per_message"], per[first]["compiled"]["cpu_marginal_us_per_message"]
        ),
        f"sql_chain_cpu_marginal_{last}_over_{first}_rules": ratio(
            per[last]["sql_chain"]["cpu_marginal_us_per_message"],
            per[first]["sql_chain"]["cpu_marginal_us_per_message"],
        ),
    }
    crossover = {}
    for count, tb in out["tables"].items():
        c, r = tb["variants"]["compiled"], tb["variants"]["reference_udf"]
        gain = r["marginal_us_per_message"] - c["marginal_us_per_message"]
        extra = c["fixed_s"] - r["fixed_s"]
        crossover[count] = round(extra / gain * 1e6) if gain > 0 and extra > 0 else (0 if gain > 0 else None)
    out["compiled_wins_above_messages"] = crossover
    big.unpersist()
    df.unpersist()
    return out
