"""results.json -> Markdown (pure)."""

from __future__ import annotations


def _f(value, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _per_connection(size: dict) -> str:
    """Each replay connection's puts, with the seconds its task put for where measured."""
    puts = size.get("pipeline_puts_per_connection") or []
    seconds = size.get("pipeline_replay_s_per_connection") or []
    if len(seconds) != len(puts):
        return " / ".join(map(str, puts)) or "-"
    return " / ".join(f"{n} ({s} s)" for n, s in zip(puts, seconds)) or "-"


def _table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(_f(c) for c in row) + " |" for row in rows]
    return out + [""]


def _error(doc: dict, key: str) -> list[str]:
    return [f"**failed**: {doc[key]['error']}", ""] if "error" in doc.get(key, {}) else []


def machine_lines(doc: dict) -> list[str]:
    m = doc["machine"]
    return [
        f"Machine: {m['cores']} cores ({m['cpu']}), {m['memory_gb']} GB, load average at start "
        f"{m['load_average_at_start']}; Python {m['python']}, {m['java']}, Spark {m['spark']}, "
        f"pyarrow {m['pyarrow']}, pandas {m['pandas']}. Mode `{doc['mode']}`, medians of "
        f"{doc['sizes']['repeats']} runs (end to end: {doc['sizes']['e2e_repeats']}); "
        f"command `{doc['command'].strip()}`.",
        "",
    ]


def origin(doc: dict, name: str) -> dict:
    """The run a section's figures come from: its own (``--merge``), else the file's."""
    return (doc.get("measured_apart") or {}).get(name) or doc


def provenance_lines(doc: dict) -> list[str]:
    """Which Spark and which machine produced each section (the file's run, or its own)."""
    rows = []
    for key, title, _ in SECTIONS:
        if key not in doc:
            continue
        run = origin(doc, key)
        m = run["machine"]
        rows.append([title, run["started_at"], m["spark"], f"{m['cores']} cores ({m['cpu']}), {m['memory_gb']} GB"])
    return _table(["section", "measured", "Spark", "machine"], rows)


def _measured_apart(doc: dict, key: str) -> list[str]:
    """A section merged in from a later run (``--merge``) says when, how and how loaded."""
    m = (doc.get("measured_apart") or {}).get(key)
    if not m:
        return []
    return [
        f"*Measured in a later run ({m['started_at']}, load average at start "
        f"{m['machine']['load_average_at_start']}, Spark {m['machine']['spark']}): "
        f"`{m['command'].strip()}`.*",
        "",
    ]


def decode_lines(d: dict) -> list[str]:
    rows = [
        [name, v["seconds"], v["per_s"], v["us_per_message"], v.get("cpu_us_per_message"), v.get("mb_per_s")]
        for name, v in d["variants"].items()
    ]
    cov = d["jvm_expressions_coverage"]
    cpu = d.get("cpu_ratios") or {}
    return _table(["decode variant", "s", "messages/s", "µs/message", "CPU µs/message", "payload MB/s"], rows) + [
        f"{d['messages']:,} messages ({d['distinct_messages']:,} distinct, mean payload "
        f"{d['mean_payload_bytes']:,} B, {d['payload_mb']:,} MB). Ratios: "
        + ", ".join(f"{k} **{_f(v)}**" for k, v in d["ratios"].items())
        + (". In CPU time: " + ", ".join(f"{k} {_f(v)}" for k, v in cpu.items()) if cpu else "")
        + f". The JVM expressions decode only {cov['handled_fraction']:.0%} of the messages "
        f"(little-endian ASCII), agreeing on {cov['agree']:,} of {cov['handled']:,}.",
        "",
    ]


def classify_lines(d: dict) -> list[str]:
    rows = []
    for count, t in d["tables"].items():
        c, r = t["variants"]["compiled"], t["variants"]["reference_udf"]
        chain = t["variants"].get("sql_chain", {})
        rows.append(
            [
                int(count),
                c["marginal_us_per_message"],
                chain.get("marginal_us_per_message"),
                r["marginal_us_per_message"],
                t["reference_over_compiled_marginal"],
                c["build_and_plan_s"],
                chain.get("build_and_plan_s"),
                c["fixed_s"],
                r["fixed_s"],
                d["compiled_wins_above_messages"].get(count),
                t["mean_rules_scanned_by_reference"],
                f"{t['agreement']['agree']}/{t['agreement']['rows']}",
            ]
        )
    return _table(
        [
            "rules",
            "ours µs/msg (marginal)",
            "SQL chain µs/msg (marginal)",
            "reference UDF µs/msg (marginal)",
            "reference / ours",
            "ours build + plan s",
            "SQL chain build + plan s",
            "ours fixed s",
            "reference fixed s",
            "ours faster above (messages)",
            "rules the reference tries (mean)",
            "same decisions",
        ],
        rows,
    ) + [
        f"Marginal cost: the slope between {d['messages']:,} and {d['messages_large']:,} messages (queries "
        "built and planned before timing); fixed cost: build + plan time plus the intercept. Growth: "
        + ", ".join(f"{k} {_f(v)}" for k, v in d["growth"].items()),
        "",
    ]


def ingest_lines(d: dict) -> list[str]:
    rows = [
        ["python, 1 core", name, v["seconds"], v["mb_per_s"], v["per_s"]]
        for name, v in d["python_one_core"]["variants"].items()
    ]
    for master, variants in d["spark"].items():
        rows += [[master, name, v["seconds"], v["mb_per_s"], v["per_s"]] for name, v in variants.items()]
    for master, variants in d.get("large", {}).get("spark", {}).items():
        rows += [
            [f"{master}, {d['large']['dump_mb']:,} MB", name, v["seconds"], v["mb_per_s"], v["per_s"]]
            for name, v in variants.items()
        ]
    return _table(["where", "variant", "s", "MB/s", "messages/s"], rows) + [
        f"One dump of {d['dump_mb']:,} MB, {d['messages']:,} messages, split into byte ranges of "
        f"{d['split_bytes']:,} B (and, for the scaling, one of four times as many messages). `parse` is the "
        "JVM reader, `parse_python_reader` the Python reader through the `mqdump` data source (ingest's work "
        "items), `parse_python_map_in_arrow` the same reader by `mapInArrow` (Spark before 4.0), `data_source` "
        '`spark.read.format("mqdump")` as a user reads the dump (one task for the file), '
        "`parse_and_store` the parse's message rows "
        "written to the table in one pass (the limit of any store), `ingest_store` ingest itself. Ratios: "
        + ", ".join(f"{k} **{_f(v)}**" for k, v in d["ratios"].items()),
        "",
    ]


def replay_lines(d: dict) -> list[str]:
    rows = []
    for parts, p in d["partitions"].items():
        v = p["variants"]
        rows.append(
            [
                int(parts),
                v["writer_to_sim"]["seconds"],
                v["writer_to_sim"]["per_s"],
                p["puts_per_s"],
                v.get("writer_dry_run", {}).get("seconds"),
                v["iterate_only"]["seconds"],
                p["overhead_us_per_put"],
                p.get("writer_own_us_per_message"),
                p.get("sim_and_checkpoints_us_per_put"),
                p["writer_over_iterate"],
            ]
        )
    return (
        _table(
            [
                "partitions",
                "writer s",
                "messages/s",
                "puts/s",
                "dry-run writer s",
                "iterate only s",
                "overhead µs/put",
                "writer's own µs/message",
                "sim + checkpoints µs/put",
                "writer / iterate",
            ],
            rows,
        )
        + [
            f"{d['messages']:,} decisions, {d['puts']:,} puts; sim latency (ms) {d['latency_ms']}. "
            + ", ".join(f"{k} **{_f(v)}**" for k, v in d["ratios"].items()),
            "",
        ]
        + _read_path_lines(d.get("read_path"))
    )


def _read_path_lines(read: dict | None) -> list[str]:
    """Replay's read path (the tables to the dry-run writer's items), where measured."""
    if not read:
        return []
    names = {
        "bodies_in_place": "bodies read where they lie (ours)",
        "bodies_joined": "bodies carried through join, shuffle and sort (obvious)",
        "scan_and_iterate": "no bodies, plus a scan of them (limit)",
    }
    rows = [[names.get(k, k), v["seconds"], v["per_s"]] for k, v in read["variants"].items()]
    return _table(["read path", "s", "messages/s"], rows) + [
        f"{read['messages']:,} decisions' work items to the dry-run writer in {read['partitions']} partitions.",
        "",
    ]


def _crossing(where: str, c: dict) -> str:
    """One sentence: the measured crossover (what the target judges) and the fitted lines."""
    return (
        f"In {where}: crossover at **{_f(c['crossover_messages'])} messages** as measured ({c['note']}); "
        f"fitted lines: run {c['pipeline_fixed_s']} s + {c['pipeline_ms_per_message']} ms/message, reference "
        f"{c['reference_fixed_s']} s + {c['reference_ms_per_message']} ms/message, meeting at "
        f"{_f(c['fitted_crossover_messages'])} messages."
    )


def end_to_end_lines(d: dict) -> list[str]:
    rows = []
    for n, s in d["sizes"].items():
        stages = s.get("pipeline_jobs_per_stage") or {}
        rows.append(
            [
                int(n),
                s["pipeline_wall_s"]["seconds"],
                round(s["pipeline_spark_start_s"] + s.get("pipeline_trivial_job_s", 0), 2),
                s.get("pipeline_run_s"),
                _f(s.get("warm_run_s")),
                {True: "C1 only", False: "tiered"}.get(s.get("pipeline_quick_jit"), "-")
                + {True: ", class archive", False: ""}.get(s.get("pipeline_class_archive"), ""),
                s.get("pipeline_jobs"),
                " / ".join(f"{k} {v}" for k, v in stages.items()),
                " / ".join(f"{k} {round(v, 1)}" for k, v in (s.get("pipeline_stage_s") or {}).items()),
                _per_connection(s),
                s["reference_wall_s"]["seconds"],
                s["reference_over_pipeline"],
                _f(s.get("reference_over_warm_run")),
            ]
        )
    c = d["crossover"]
    warm = d.get("crossover_warm_session")
    lines = _table(
        [
            "messages",
            "run, fresh process (wall s)",
            "Spark start-up + trivial job s",
            "pipeline s",
            "pipeline s, warm session",
            "JVM",
            "Spark jobs",
            "jobs per stage",
            "stage s",
            "puts per connection (its task s)",
            "sequential reference (wall s)",
            "reference / run",
            "reference / warm run",
        ],
        rows,
    ) + [
        f"Sim latency (ms) {d['latency_ms']}, `run` on {d['master']}"
        + (f" with replay {d['replay']}" if d.get("replay") else "")
        + ". "
        + _crossing("a fresh process", c)
        + (
            " "
            + _crossing(
                "a warm session (the same run again after a first one, in a child whose "
                "session is started as a notebook's, a running cluster's or a Spark Connect "
                "server's: JIT tiered)",
                warm,
            )
            if warm
            else ""
        ),
        "",
    ]
    sim = d.get("sim_put_cost")
    if sim:
        rounds = sim.get("rounds", 1)
        lines += [
            f"Simulated queue manager, no latency, {sim['puts']:,} puts"
            + (f" of the end-to-end runs' messages (mean {sim['mean_bytes']:,} B)" if "mean_bytes" in sim else "")
            + (f" to the {sim['queues']} queues their MQDLHs name, each MsgId its own" if "queues" in sim else "")
            + f" in units of work of {sim['unit_of_work']}"
            + (f", the median of {rounds} rounds" if rounds > 1 else "")
            + ": "
            + "; ".join(
                f"at depth {int(k):,} {v['wall_us_per_put']} µs/put wall ({v['cpu_us_per_put']} CPU"
                + (
                    f"; rounds {', '.join(map(str, v['rounds_cpu_us_per_put']))}"
                    if "rounds_cpu_us_per_put" in v
                    else ""
                )
                + ")"
                for k, v in sim["depths"].items()
            )
            + ".",
            "",
        ]
    targets = d.get("targets")
    if targets:
        lines += _table(
            ["target", "measured", "limit", "holds"],
            [
                [k, v["value"], v["limit"], {True: "yes", False: "no"}.get(v["holds"], "not measured")]
                for k, v in targets.items()
            ],
        ) + [""]
        floor = targets["crossover_messages"].get("start_up_and_cold_stages_floor")
        if floor is not None:
            lines += [
                f"The crossover's floor in a fresh process: the reference handles **{_f(floor)} messages** in "
                "the time Spark's start-up, a trivial job and Spark's own cold stages of a run's shape take "
                "here (the start-ups' median over this run's fresh processes, on the reference's fitted line); "
                "no `run` in a fresh process can cross below it on this machine, and the target is 500 "
                "messages above it.",
                "",
            ]
        fixed = targets["cold_run_over_spark_cold_stages_at_1000"]
        at = d["sizes"].get("1000") or {}
        if fixed.get("spark_cold_stages_s") is not None:
            lines += [
                f"Spark's own cold stages after the same start-up, over the same 1,000 messages: "
                f"**{fixed['spark_cold_stages_s']} s** ("
                + ", ".join(f"{k} {v} s" for k, v in (at.get("spark_cold_stage_s") or {}).items())
                + "; one plain job each: the dumps' text lines to Parquet, an Arrow UDF over them, a Python "
                f"function per partition), against the run's {fixed['run_s']} s after start-up.",
                "",
            ]
    return lines


def memory_lines(d: dict) -> list[str]:
    rows = []
    for name, c in d["cases"].items():
        p = c["peak_rss_mb"]
        rows.append(
            [
                name,
                c["seconds"],
                p.get("jvm"),
                p.get("python_workers"),
                c["peak_hwm_one_process_mb"].get("python_workers"),
            ]
        )
    return (
        _table(["case", "s", "JVM peak RSS MB", "Python workers peak RSS MB (sum)", "largest Python worker MB"], rows)
        + [
            f"{d['messages']:,} messages of {d['small_payload_bytes']:,} B vs {d['large_payload_bytes']:,} B. "
            + ", ".join(f"{k} **{_f(v)}**" for k, v in d["ratios"].items())
            + (f". {d['note']}" if d.get("note") else ""),
            "",
        ]
        + _pipeline_memory_lines(d.get("pipeline"))
    )


def _pipeline_memory_lines(p: dict | None) -> list[str]:
    if not p:
        return []
    head = (
        f"`run` (ingest -> decode -> classify -> replay to `dir:`) over {p['messages']:,} messages of "
        f"{p['payload_bytes']:,} B"
    )
    if p.get("error"):
        first = " / ".join(line.strip() for line in p["error"].split("\n...\n")[0].splitlines()[:3])
        log = f" (the child's whole stderr: `{p['stderr_log']}`)" if p.get("stderr_log") else ""
        return [f"{head}: **failed**: {first[:400]}{log}", ""]
    peak = p["peak_rss_mb"]
    return [
        f"{head} with a {p['heap']} heap: **{'passed' if p['passed'] else 'failed'}** in {_f(p['seconds'])} s; "
        f"peak RSS JVM **{_f(peak.get('jvm'))} MB**, Python workers {_f(peak.get('python_workers'))} MB "
        f"(largest worker {_f(p['peak_hwm_one_process_mb'].get('python_workers'))} MB); outcomes {p['outcomes']}.",
        "",
    ]


def _outcomes(counts: dict) -> str:
    return ", ".join(f"{k} {_f(v)}" for k, v in counts.items()) or "-"


def storm_lines(d: dict) -> list[str]:
    """The Q_FULL retry storm (benchmarks/storm.py): `run` against the sequential reference's
    time extrapolated from its sample."""
    run, ref, storm, made = d["run"], d["reference"], d["storm"], d["input"]
    n = d["messages"]
    ms = ref["s_per_message"] * 1e3 if ref.get("s_per_message") is not None else None
    rows = []
    if "error" not in run:
        peak, one = run["peak_rss_mb"], run["peak_hwm_one_process_mb"]
        rows.append(
            [
                f"`run`, fresh process, {d['heap']} heap",
                n,
                run["wall_s"],
                round(run["wall_s"] / n * 1e3, 3),
                # the JVM's own high-water mark: one JVM here, and a sample taken while it spawns
                # a process (a Python worker) counts its memory twice in the sum
                one.get("jvm"),
                peak.get("python_workers"),
                one.get("python_workers"),
                _outcomes(run["outcomes"]),
            ]
        )
    no_peak = [None, None, None]  # the reference's process is not sampled
    rows += [
        ["sequential reference, sample", ref["messages"], ref["run_s"], ms, *no_peak, _outcomes(ref["outcomes"])],
        ["sequential reference, extrapolated", n, ref["extrapolated_s"], ms, *no_peak, "-"],
    ]
    lines = _table(
        [
            "storm",
            "messages",
            "s",
            "ms/message",
            "JVM peak RSS MB",
            "Python workers peak RSS MB (sum)",
            "largest Python worker MB",
            "outcomes",
        ],
        rows,
    )
    scene = (
        f"{made['storm_messages']:,} of the {n:,} messages (mean {made['mean_payload_bytes']:,} B, a "
        f"{made['dump_bytes'] / 1e6:,.0f} MB dump generated at {_f(made['generated_per_s'])} messages/s) were "
        f"dead-lettered with {storm['reason']} for {storm['queue']} on {storm['qmgr']}, which has room "
        f"for {storm['room']:.0%} of them (MAXDEPTH {storm['maxdepth']:,}); sim latency (ms) {d['latency_ms']}. "
    )
    if "error" in run:
        first = " / ".join(line.strip() for line in run["error"].split("\n...\n")[0].splitlines()[:3])
        log = f" (the child's whole stderr: `{run['stderr_log']}`)" if run.get("stderr_log") else ""
        return lines + [scene + f"`run` **failed**: {first[:400]}{log}", ""]
    queue, peak, one = run["storm_queue"], run["peak_rss_mb"], run["peak_hwm_one_process_mb"]
    adds_up = sum(run["outcomes"].values()) == run["landed"]
    return lines + [
        scene + f"`run` took **{_f(run['wall_s'])} s** in a fresh process ({_f(run['seconds'])} s after Spark's "
        f"start-up; stages {' / '.join(f'{k} {v:.1f}' for k, v in run['durations'].items())} s), peak RSS JVM "
        f"**{_f(one.get('jvm'))} MB** and Python workers {_f(peak.get('python_workers'))} MB with a "
        f"{d['heap']} heap; its outcomes ({_outcomes(run['outcomes'])}) "
        f"{'add up to' if adds_up else 'do not add up to'} the {run['landed']:,} messages landed. The storm's "
        f"queue took {_f(queue['outcomes'].get('delivered', 0))} (depth {queue['depth']:,} of {queue['maxdepth']:,}); "
        f"the writer met 2053 on {_f(queue['failed_q_full'])} puts (`failed`) and its circuit breaker"
        + (f" (which opens after {storm['breaker_threshold']} in a row)" if storm.get("breaker_threshold") else "")
        + f" deferred {_f(queue['deferred_by_breaker'])} to the next run. The sequential reference's time is "
        f"**extrapolated** linearly from {ref['messages']:,} evenly spread messages of the same dump "
        f"({ref['storm_messages']:,} of the storm, MAXDEPTH {ref['maxdepth']:,}): {_f(ms, 3)} ms a message, "
        f"{_f(ref['extrapolated_s'], 1)} s for {n:,}, **{_f(d.get('reference_over_run'))}x** the run's time"
        + (f". {d['note']}" if d.get("note") else "")
        + ".",
        "",
    ]


def incremental_lines(d: dict) -> list[str]:
    """Incremental runs (benchmarks/incremental.py): the unchanged rerun against its floor and
    the run after one new dump against the same run into an empty warehouse."""
    runs, targets = d["runs"], d["targets"]

    def stages(run: dict) -> str:
        return " / ".join(f"{k} {v:.1f}" for k, v in run["durations"].items())

    inc, empty, same, hist = runs["incremental"], runs["empty"], runs["unchanged"], runs["history"]
    ratio_t, rerun_t = targets["incremental_over_empty"], targets["unchanged_rerun_s"]
    return [
        f"A warehouse of {d['history_messages']:,} messages from {d['dumps']:,} landed dumps (landed by one "
        f"`run` in {_f(hist['run_s'])} s), then one new dump of {d['messages_per_dump']:,} messages in the same "
        "directory; each run below in a fresh process, into a `dir:` target.",
        "",
        "| run | files read / skipped | run s | stages s |",
        "|---|---|---|---|",
        f"| unchanged directory | {same['input_files'].get('read', 0)} / {same['input_files'].get('skipped', 0)} "
        f"| {_f(same['run_s'])} | {stages(same)} |",
        f"| after one new dump | {inc['input_files'].get('read', 0)} / {inc['input_files'].get('skipped', 0)} "
        f"| {_f(inc['run_s'])} | {stages(inc)} |",
        f"| the new dump alone, empty warehouse | {empty['input_files'].get('read', 0)} / 0 | {_f(empty['run_s'])} "
        f"| {stages(empty)} |",
        "",
        f"After one new dump: **{_f(ratio_t['value'])}x** the run into an empty warehouse (target "
        f"≤ {ratio_t['limit']}x: {'holds' if ratio_t['holds'] else 'does not hold'}). The unchanged rerun: "
        f"{_f(rerun_t['value'])} s from the process's start, against {_f(rerun_t['limit'])} s for Spark's start-up, "
        f"a trivial first job and the listing of {runs['floor']['files_listed']:,} files in a process of its own "
        f"({'holds' if rerun_t['holds'] else 'does not hold'}).",
        "",
    ]


def first_run_lines(d: dict) -> list[str]:
    """The first run (benchmarks/first_run.py): `run` in fresh processes with and without the
    class archive, against a plain Spark start and trivial job."""
    walls = d["wall_s"]
    names = {
        "plain": "plain Spark start and one trivial job",
        "spark_stages": "Spark started as `run` starts it, then its own three stages of a run's shape",
        "with_archive": "`run`, class archive built (`dlq-pipeline setup`)",
        "no_archive": "`run`, no archive, none built",
        "building_for_next": "`run`, no archive, building it for the next as it exits",
        "next": "`run` after it, from the archive that run left",
    }
    lines = [
        f"{d['messages']:,} messages into a `dir:` target, each a fresh process as a shell starts it.",
        "",
        "| process | wall s (median) | runs |",
        "|---|---|---|",
        *[f"| {names[k]} | {_f(v['median'])} | {', '.join(map(str, v['runs']))} |" for k, v in walls.items()],
        "",
    ]
    if "archive_built_after_s" in d:
        lines += [
            f"The archive the run left was ready {_f(d['archive_built_after_s'], 1)} s after it returned "
            f"({'built' if d['archive_built'] else 'not built'}); it saves the next run {_f(d['archive_saves_s'])} s.",
            "",
        ]
    return lines


def targets_lines(doc: dict) -> list[str]:
    """Every target of the document, with its limit, its value and whether it holds."""
    rows = [
        [name, v.get("value"), v.get("limit"), {True: "yes", False: "no"}.get(v.get("holds"), "not measured")]
        for name, v in (doc.get("targets") or {}).items()
    ]
    return _table(["target", "measured", "limit", "holds"], rows) + [""] if rows else []


SECTIONS = (
    ("decode", "1. Decode", decode_lines),
    ("classify", "2. Classify", classify_lines),
    ("ingest", "3. Ingest", ingest_lines),
    ("replay", "4. Replay", replay_lines),
    ("end_to_end", "5. End to end", end_to_end_lines),
    ("memory", "6. Memory", memory_lines),
    ("storm", "7. Q_FULL retry storm", storm_lines),
    ("incremental", "8. Incremental runs", incremental_lines),
    ("first_run", "9. The first run", first_run_lines),
)


def markdown(doc: dict) -> str:
    lines = ["# Benchmark results", ""] + machine_lines(doc) + provenance_lines(doc)
    if doc.get("targets"):
        lines += ["## Targets", ""] + targets_lines(doc)
    for key, title, render in SECTIONS:
        if key not in doc:
            continue
        lines += [f"## {title}", ""]
        lines += _measured_apart(doc, key)
        lines += _error(doc, key) or render(doc[key])
    return "\n".join(lines)


# --- the figures docs/performance.md shows (benchmarks/figures.py writes them there) -----------

SECTION_ORDER = {key: n for n, (key, _, _) in enumerate(SECTIONS)}


def _g(value) -> str:
    """A limit or a setting as written: 1.6, 50, 2,626 ("–" when not measured)."""
    if value is None:
        return "–"
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def _heap(heap: str) -> str:
    """``"2g"`` -> "2 GB" (a JVM's heap setting, for people)."""
    return f"{heap[:-1]} {heap[-1].upper()}B" if heap[-1:].lower() in ("g", "m") else heap


def _latency(latency_ms: dict) -> str:
    return ", ".join(f"{op} {_g(ms)}" for op, ms in latency_ms.items()) or "none"


def _each(values) -> str:
    """``[1.0, 2.5]`` -> "1.00 / 2.50": one figure per size, in the sizes' order."""
    return " / ".join(_f(v) for v in values)


def _target_title(key: str, t: dict, doc: dict) -> tuple[str, str, str]:
    """(what the target compares, its measured value with what it is made of, its limit)."""
    value, limit = t.get("value"), t.get("limit")
    if key == "end_to_end.cold_run_over_spark_cold_stages_at_1000":
        return (
            "cold `run` of 1,000 messages after start-up, over Spark's own cold stages of its shape",
            f"{_f(value)} ({_f(t.get('run_s'))} s, {_f(t.get('jobs'))} jobs, "
            f"against {_f(t.get('spark_cold_stages_s'))} s)",
            f"≤ {_g(limit)}",
        )
    if key == "end_to_end.crossover_messages":
        fitted = ((doc.get("end_to_end") or {}).get("crossover") or {}).get("fitted_crossover_messages")
        return (
            "crossover with the sequential reference in a fresh process, messages",
            f"{_f(value)} (fitted {_f(fitted)})",
            f"≤ {_g(limit)} (the start-up and cold stages floor {_f(t.get('start_up_and_cold_stages_floor'))} + 500)",
        )
    if key == "end_to_end.warm_run_over_its_bound_at_100000":
        parts = " + ".join(_f(t.get(k)) for k in ("busiest_connection_s", "spark_ingest_s", "decode_limit_s"))
        return (
            "warm `run` of 100,000 messages over its bound: the busiest connection's puts + Spark's "
            "ingest-shaped stage + decode's limit",
            f"{_f(value)} ({_f(t.get('run_s'))} s against {parts} s)",
            f"≤ {_g(limit)}",
        )
    if key == "end_to_end.sim_cpu_us_per_put":
        return "the simulated queue manager's own CPU per put, µs", _g(value), f"≤ {_g(limit)}"
    if key == "ingest.ingest_speedup_over_store_limit_speedup":
        large = ((doc.get("ingest") or {}).get("large") or {}).get("dump_mb")
        return (
            f"ingest's 1 → 2 core speed-up over the store limit's own (a {_f(large, 1)} MB dump)",
            f"{_f(value)} ({_f(t.get('ingest_speedup'))} against {_f(t.get('store_limit_speedup'))})",
            f"≥ {_g(limit)}",
        )
    if key == "storm.storm_million_messages_in_2g_heaps":
        run = (doc.get("storm") or {}).get("run") or {}
        return (
            f"the Q_FULL storm through one `run` with {_heap(t.get('heap', ''))} heaps, messages landed",
            f"{_f(value)} in {_f(run.get('wall_s'))} s" if run.get("wall_s") is not None else _f(value),
            _g(limit),
        )
    if key == "incremental.incremental_over_empty":
        return "the run after one new dump, over the same run into an empty warehouse", _f(value), f"≤ {_g(limit)}"
    if key == "incremental.unchanged_rerun_s":
        return (
            "the rerun over an unchanged directory, s",
            _f(value),
            f"≤ {_g(limit)} ({t.get('limit_is', 'its floor')})",
        )
    walls = (doc.get("first_run") or {}).get("wall_s") or {}

    def median_of(name: str) -> str:
        return _f((walls.get(name) or {}).get("median"))

    if key == "first_run.first_run_over_plain_start_s":
        return (
            "a cold 1,000-message `run` with the class archive, over a plain Spark start and trivial job, s",
            f"+{_f(value)} ({median_of('with_archive')} against {median_of('plain')})",
            f"≤ +{_g(limit)}",
        )
    if key == "first_run.building_for_next_slowdown_s":
        return (
            "the run that builds the class archive for the next, over one that does not, s",
            f"+{_f(value)} ({median_of('building_for_next')} against {median_of('no_archive')})",
            f"≤ +{_g(limit)}",
        )
    return f"`{key}`", _f(value), _g(limit)


def figures_targets_lines(doc: dict) -> list[str]:
    """Every target of the document, by section, each with what it compares and its limit."""
    found = doc.get("targets") or {}
    ordered = sorted(found, key=lambda k: SECTION_ORDER.get(k.split(".", 1)[0], len(SECTION_ORDER)))
    rows = []
    for key in ordered:
        t = found[key]
        title, measured, limit = _target_title(key, t, doc)
        rows.append([title, measured, limit, {True: "yes", False: "no"}.get(t.get("holds"), "not measured")])
    return _table(["target", "measured", "limit", "holds"], rows) if rows else []


def _section_rows(doc: dict) -> list[list]:
    """One row per headline figure of each section measured: ours, the obvious way, the limit."""
    rows: list[list] = []

    def measured(key: str) -> dict | None:
        d = doc.get(key)
        return d if isinstance(d, dict) and "error" not in d else None

    if d := measured("decode"):
        v = d["variants"]

        def us(name: str) -> str:
            return f"{_f(v[name]['us_per_message'])} ({_f(v[name].get('cpu_us_per_message'))})"

        rows.append(
            [
                "1 decode",
                f"µs (CPU µs) a message, {d['messages']:,} messages",
                us("ours"),
                f"row UDF {us('row_udf')}",
                f"JVM expressions {us('jvm_expressions')}; a scan of `data` {us('scan_only')}",
            ]
        )
    if d := measured("classify"):
        tables = d["tables"]
        counts = list(tables)

        def per_table(variant: str, field: str) -> str:
            return _each(tables[c]["variants"][variant][field] for c in counts)

        rules = " / ".join(counts)
        rows.append(
            [
                "2 classify",
                f"marginal µs a message at {rules} rules",
                per_table("compiled", "marginal_us_per_message"),
                f"reference UDF {per_table('reference_udf', 'marginal_us_per_message')}; "
                f"SQL chain {per_table('sql_chain', 'marginal_us_per_message')}",
                "–",
            ]
        )
        rows.append(
            [
                "2 classify",
                f"build + plan s at {rules} rules",
                per_table("compiled", "build_and_plan_s"),
                f"SQL chain {per_table('sql_chain', 'build_and_plan_s')}",
                "–",
            ]
        )
    if d := measured("ingest"):
        one, two = d["spark"]["local[1]"], d["spark"]["local[2]"]

        def rate(name: str) -> str:
            return f"{_f(one[name]['mb_per_s'], 0)} / {_f(two[name]['mb_per_s'], 0)}"

        rows.append(
            [
                "3 ingest",
                f"MB/s over a {_f(d['dump_mb'], 1)} MB dump, 1 / 2 cores",
                f"`ingest` {rate('ingest_store')}; the JVM reader's parse {rate('parse')}",
                f"the Python reader {rate('parse_python_reader')}",
                f"text lines {rate('text_lines')}; the parse stored in one pass {rate('parse_and_store')}",
            ]
        )
    if d := measured("replay"):
        partitions = d["partitions"]
        parts = list(partitions)

        def seconds(variant: str) -> str:
            return _each(partitions[p]["variants"][variant]["seconds"] for p in parts)

        rows.append(
            [
                "4 replay",
                f"s for {d['messages']:,} decisions ({d['puts']:,} puts) at {' / '.join(parts)} partitions",
                f"the writer into the sim {seconds('writer_to_sim')}",
                "–",
                f"the dry-run writer {seconds('writer_dry_run')}; iterated only {seconds('iterate_only')}",
            ]
        )
        read = d.get("read_path")
        if read:
            v = read["variants"]
            rows.append(
                [
                    "4 replay",
                    f"read path s, {read['messages']:,} decisions in {read['partitions']} partitions",
                    f"bodies read where they lie {_f(v['bodies_in_place']['seconds'])}",
                    f"bodies carried through the join {_f(v['bodies_joined']['seconds'])}",
                    f"no bodies, plus a scan of them {_f(v['scan_and_iterate']['seconds'])}",
                ]
            )
    if d := measured("memory"):
        cases = d["cases"]

        def peaks(case: str) -> str:
            one = cases[case]["peak_hwm_one_process_mb"]
            return f"{_f(one.get('jvm'), 0)} / {_f(one.get('python_workers'), 0)}"

        rows.append(
            [
                "6 memory",
                f"peak RSS MB of one process, JVM / largest Python worker, {d['messages']:,} messages of "
                f"{d['large_payload_bytes'] / 2**20:g} MiB",
                f"the header slice {peaks('large_payload')}",
                f"the whole data to the UDF {peaks('large_payload_whole_data_udf')}",
                f"messages of {d['small_payload_bytes'] / 2**10:g} KiB {peaks('small_payload')}",
            ]
        )
        p = d.get("pipeline")
        if p and not p.get("error"):
            one = p["peak_hwm_one_process_mb"]
            rows.append(
                [
                    "6 memory",
                    f"`run` over {p['messages']:,} messages of {p['payload_bytes'] / 2**20:g} MiB, "
                    f"a {_heap(p['heap'])} heap",
                    f"{'passes' if p['passed'] else 'fails'} in {_f(p['seconds'], 0)} s; peak RSS JVM "
                    f"{_f(one.get('jvm'), 0)} MB, largest Python worker {_f(one.get('python_workers'), 0)} MB",
                    "–",
                    "–",
                ]
            )
    if (d := measured("storm")) and "error" not in d.get("run", {"error": None}):
        ref = d["reference"]
        rows.append(
            [
                "7 storm",
                f"s for {d['messages']:,} messages, {_heap(d['heap'])} heaps",
                f"`run` {_f(d['run']['wall_s'])}",
                f"the sequential reference {_f(ref['extrapolated_s'], 1)}, extrapolated from "
                f"{ref['extrapolated_from']:,} messages",
                "–",
            ]
        )
    if d := measured("incremental"):
        runs = d["runs"]
        floor = runs["floor"]
        rows.append(
            [
                "8 incremental",
                f"s in a fresh process over {d['dumps']:,} landed dumps",
                f"unchanged: start-up {_f(runs['unchanged']['spark_start_s'])} + run "
                f"{_f(runs['unchanged']['run_s'])}; after one new dump {_f(runs['incremental']['run_s'])}",
                "–",
                f"start-up {_f(floor['spark_start_s'])} + a trivial job {_f(floor['trivial_job_s'])} + the "
                f"listing {_f(floor['listing_s'])}; the new dump into an empty warehouse {_f(runs['empty']['run_s'])}",
            ]
        )
    if d := measured("first_run"):
        walls = d["wall_s"]

        def median_of(name: str) -> str:
            return _f((walls.get(name) or {}).get("median"))

        rows.append(
            [
                "9 first run",
                f"s, a fresh process, {d['messages']:,} messages (median)",
                f"`run` with the class archive {median_of('with_archive')}, without it {median_of('no_archive')}",
                "–",
                f"a plain Spark start and trivial job {median_of('plain')}; Spark's own three stages of a "
                f"run's shape {median_of('spark_stages')}",
            ]
        )
    return rows


def _end_to_end_size_lines(d: dict) -> list[str]:
    """`run` against the sequential reference at each size."""
    rows = []
    for n, s in d["sizes"].items():
        rows.append(
            [
                int(n),
                s["pipeline_wall_s"]["seconds"],
                round(s["pipeline_spark_start_s"] + s.get("pipeline_trivial_job_s", 0), 2),
                s.get("pipeline_run_s"),
                s.get("warm_run_s"),
                s.get("pipeline_jobs"),
                s["reference_wall_s"]["seconds"],
                s["reference_over_pipeline"],
                s.get("reference_over_warm_run"),
            ]
        )
    return _table(
        [
            "messages",
            "fresh process s",
            "start-up + trivial job s",
            "pipeline s, cold",
            "pipeline s, warm",
            "jobs",
            "reference s",
            "reference / fresh run",
            "reference / warm run",
        ],
        rows,
    )


def figures(doc: dict) -> str:
    """The figures docs/performance.md shows, from one results document: where they were
    measured, every target against its limit, each section's headline figures against the
    obvious way and the limit, and `run` against the sequential reference at each size."""
    m = doc["machine"]
    apart = sorted(doc.get("measured_apart") or {})
    lines = [
        f"Mode `{doc['mode']}` on {m['cores']} cores ({m['cpu']}), {m['memory_gb']} GB; Python {m['python']}, "
        f"{m['java']}, Spark {m['spark']}, pyarrow {m['pyarrow']}."
        + (
            " Measured in a run of their own (`measured_apart`): "
            + ", ".join(
                f"`{name}` (Spark {origin(doc, name)['machine']['spark']}, "
                f"{origin(doc, name)['machine']['cores']} cores, {origin(doc, name)['machine']['cpu']})"
                for name in apart
            )
            + "."
            if apart
            else ""
        ),
        "",
    ]
    lines += figures_targets_lines(doc)
    lines += _table(["section", "figure", "ours", "the obvious way", "the limit"], _section_rows(doc))
    e2e = doc.get("end_to_end")
    if isinstance(e2e, dict) and "sizes" in e2e:
        c, warm = e2e["crossover"], e2e.get("crossover_warm_session")
        lines += [
            f"5 end to end, `run` against the sequential reference: `{e2e['master']}`, sim latency (ms) "
            f"{_latency(e2e['latency_ms'])}; fitted lines: a fresh run {_g(c['pipeline_fixed_s'])} s + "
            f"{_g(c['pipeline_ms_per_message'])} ms a message, the reference {_g(c['reference_fixed_s'])} s + "
            f"{_g(c['reference_ms_per_message'])} ms a message"
            + (f"; the warm session's crossover {_f(warm['crossover_messages'])} messages" if warm else "")
            + ".",
            "",
        ]
        lines += _end_to_end_size_lines(e2e)
    return "\n".join(lines).rstrip("\n") + "\n"
