"""The bundle's jobs through Databricks' own Python models for bundles (the `databricks-bundles`
package: `databricks.bundles.jobs.Job` and the dataclasses it is made of), in every target, so
that a field or a value Databricks refuses fails here and not at a user's `bundle deploy`.

`Job.from_dict` refuses an unknown field, an enum value that is not a member and a number it
cannot parse, but it stops at the first problem without naming its path, and it converts what
the CLI refuses (a mapping where a string goes, `true` or 2.5 where an integer goes). So the
check walks the YAML against the model's own dataclass fields and type hints, with the CLI's
rules for scalars, names every problem by its YAML path, and then hands the job to
`Job.from_dict` for the last word. (`databricks-sdk`'s `JobSettings.from_dict` is no help
here: it ignores unknown keys and turns an unknown enum value into None.)

Each target is checked as the CLI assembles it: the target's `resources` merged onto the jobs,
its variables over the declared defaults, `${var.x}` replaced by the value. References known
only at deploy (`${bundle.target}`, `${workspace.file_path}`) are accepted where the model
takes a reference (the whole value) and inside a string.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import enum
import functools
import re
import types
import typing
from typing import Any

import pytest
from databricks.bundles.core import Variable
from databricks.bundles.jobs import Job, PauseStatus, PythonWheelTask, RunIf

from .test_bundle import load_bundle

BUNDLE, _ = load_bundle()

# A reference as the CLI reads one (libs/dyn/dynvar); `$${...}` is an escaped, literal one.
REFERENCE = re.compile(r"(?<!\$)\$\{([A-Za-z_][\w\-]*(?:\.[A-Za-z_][\w\-]*(?:\[\d+\])*)*)\}")
# Sequences of jobs the CLI merges element by element on this key after a target's override
# (MergeJobTasks, MergeJobClusters, MergeJobParameters); any other sequence is appended to.
MERGED_BY_KEY = {"tasks": "task_key", "job_clusters": "job_cluster_key", "parameters": "name"}
# The strings the CLI reads as booleans (normalizeBool); YAML's own true/false arrive as bool.
BOOLEAN_STRINGS = {"true", "True", "TRUE", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON"}
BOOLEAN_STRINGS |= {"false", "False", "FALSE", "n", "N", "no", "No", "NO", "off", "Off", "OFF"}
SCALARS = {str: "a string", int: "an integer", float: "a number", bool: "a boolean"}


# --- a target as the CLI assembles it ---------------------------------------------------


def _merge(base: Any, override: Any, path: str) -> Any:
    """The CLI's merge of a target onto the bundle: mappings key by key, sequences appended,
    a scalar replaced; null on either side keeps the other; a mapping onto a sequence (or
    the reverse) is an error."""
    if base is None:
        return copy.deepcopy(override)
    if override is None:
        return base
    if isinstance(base, dict) != isinstance(override, dict) or isinstance(base, list) != isinstance(override, list):
        raise ValueError(f"{path}: cannot merge {type(override).__name__} onto {type(base).__name__}")
    if isinstance(base, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = _merge(base.get(key), value, f"{path}.{key}")
        return merged
    if isinstance(base, list):
        return [*base, *copy.deepcopy(override)]
    return copy.deepcopy(override)


def _merge_by_key(items: list, key: str, path: str) -> list:
    """Elements with the same key merged into the first one's place, later ones winning."""
    merged: dict[Any, Any] = {}
    for item in items:
        k = item.get(key) if isinstance(item, dict) else None
        merged[k] = _merge(merged[k], item, path) if k in merged else item
    return list(merged.values())


def target_jobs(bundle: dict, target: str) -> dict[str, dict]:
    """The jobs of one target: its `resources.jobs` merged onto the bundle's."""
    jobs = copy.deepcopy(bundle.get("resources", {}).get("jobs", {}))
    overrides = ((bundle["targets"][target] or {}).get("resources") or {}).get("jobs") or {}
    for name, override in overrides.items():
        jobs[name] = _merge(jobs.get(name), override, f"resources.jobs.{name}")
    for name, job in jobs.items():
        for field, key in MERGED_BY_KEY.items():
            if isinstance(job.get(field), list):
                job[field] = _merge_by_key(job[field], key, f"resources.jobs.{name}.{field}")
    return jobs


def target_variables(bundle: dict, target: str) -> dict[str, Any]:
    """Each declared variable's value in the target: the target's (a value, or a mapping with
    a default) over the declaration's default; None for one that is given only at deploy."""
    values = {name: (decl or {}).get("default") for name, decl in bundle.get("variables", {}).items()}
    for name, value in ((bundle["targets"][target] or {}).get("variables") or {}).items():
        values[name] = value["default"] if isinstance(value, dict) and "default" in value else value
    return values


def resolve(value: Any, variables: dict[str, Any]) -> Any:
    """`${var.x}` replaced by x's value: a whole reference by the value as YAML typed it, a
    reference inside a string by its text. Undeclared variables, and those without a value,
    stay references (the walk reports the undeclared ones)."""
    if isinstance(value, dict):
        return {key: resolve(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve(item, variables) for item in value]
    if not isinstance(value, str):
        return value

    def known(path: str) -> bool:
        return path.startswith("var.") and variables.get(path[4:]) is not None

    whole = REFERENCE.fullmatch(value)
    if whole and known(whole[1]):
        return resolve(copy.deepcopy(variables[whole[1][4:]]), variables)
    return REFERENCE.sub(lambda m: str(resolve(variables[m[1][4:]], variables)) if known(m[1]) else m[0], value)


# --- the walk against the model -------------------------------------------------------------


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _required(field: dataclasses.Field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


def _undeclared(value: str, path: str, variables: dict[str, Any]) -> list[str]:
    names = [m[4:] for m in REFERENCE.findall(value) if m.startswith("var.")]
    return [f"{path}: ${{var.{name}}} is not a declared variable" for name in names if name not in variables]


def _is_union(tpe: Any) -> bool:
    return typing.get_origin(tpe) in (typing.Union, types.UnionType)


def model_problems(tpe: Any, value: Any, path: str, variables: dict[str, Any]) -> list[str]:
    """Every way `value` (YAML at `path`) is not a `tpe` of the model, one line each."""
    if tpe is Any:
        return []
    origin = typing.get_origin(tpe)
    if _is_union(tpe):
        args = typing.get_args(tpe)
        takes_reference = any(typing.get_origin(a) is Variable for a in args)
        if isinstance(value, str) and REFERENCE.fullmatch(value) and takes_reference:
            return _undeclared(value, path, variables)
        if value is None:
            # Optional, or a list/mapping the model reads null as empty
            if type(None) in args or any(typing.get_origin(a) in (list, dict) for a in args):
                return []
            return [f"{path}: null is not allowed here"]
        options = [a for a in args if typing.get_origin(a) is not Variable and a is not type(None)]
        if not options:
            return [f"{path}: {value!r} is not a reference"]
        found = [model_problems(a, value, path, variables) for a in options]
        return min(found, key=len)  # [] when any option fits
    if dataclasses.is_dataclass(tpe):
        assert isinstance(tpe, type)
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not a mapping ({tpe.__name__})"]
        fields = {f.name: f for f in dataclasses.fields(tpe)}
        problems = []
        for key, item in value.items():
            if key in fields:
                problems += model_problems(_hints(tpe)[key], item, f"{path}.{key}", variables)
            else:
                close = difflib.get_close_matches(str(key), fields, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                problems.append(f"{path}.{key}: unknown field of {tpe.__name__}{hint}")
        problems += [
            f"{path}: {tpe.__name__} needs {name}" for name, f in fields.items() if _required(f) and name not in value
        ]
        return problems
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: {value!r} is not a list"]
        [item_type] = typing.get_args(tpe)
        return [p for i, item in enumerate(value) for p in model_problems(item_type, item, f"{path}[{i}]", variables)]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: {value!r} is not a mapping"]
        _, item_type = typing.get_args(tpe)
        return [p for k, item in value.items() for p in model_problems(item_type, item, f"{path}.{k}", variables)]
    if isinstance(value, dict | list) or value is None:
        return [f"{path}: {value!r} is not {_kind(tpe)}"]
    if isinstance(value, str) and REFERENCE.search(value):
        # Known at deploy only (or a variable given then): text around it is not judged here.
        return _undeclared(value, path, variables)
    if isinstance(tpe, type) and issubclass(tpe, enum.Enum):
        allowed = [m.value for m in tpe]
        ok = isinstance(value, str) and value in allowed
        return [] if ok else [f"{path}: {value!r} is not {_kind(tpe)} (one of {', '.join(allowed)})"]
    if tpe not in SCALARS:
        return [f"{path}: the check has no rule for {tpe!r}"]
    return [] if _scalar_fits(tpe, value) else [f"{path}: {value!r} is not {_kind(tpe)}"]


def _kind(tpe: Any) -> str:
    return SCALARS.get(tpe) or f"a {getattr(tpe, '__name__', tpe)}"


def _scalar_fits(tpe: type, value: Any) -> bool:
    """The CLI's conversions (libs/dyn/convert/normalize.go): any scalar is a string; an
    integer is an int, a whole float or a string of digits, never a boolean."""
    if tpe is str:
        return True
    if tpe is bool:
        return isinstance(value, bool) or value in BOOLEAN_STRINGS
    if isinstance(value, bool):
        return False
    if tpe is int:
        return (
            isinstance(value, int)
            or (isinstance(value, float) and value.is_integer())
            or (isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value) is not None)
        )
    if isinstance(value, int | float):
        return True
    try:
        float(value)
    except ValueError:
        return False
    return True


def job_problems(name: str, job: dict, variables: dict[str, Any]) -> list[str]:
    """The walk's problems with one (resolved) job; when it finds none, `Job.from_dict` still
    has to take the job."""
    path = f"resources.jobs.{name}"
    problems = model_problems(Job, job, path, variables)
    if not problems:
        try:
            Job.from_dict(copy.deepcopy(job))
        except (ValueError, TypeError) as e:
            problems = [f"{path}: Job.from_dict refuses it: {e}"]
    return problems


def resolved_jobs(bundle: dict, target: str) -> dict[str, dict]:
    return resolve(target_jobs(bundle, target), target_variables(bundle, target))


def bundle_problems(bundle: dict) -> list[str]:
    """Every job in every target, each problem naming the target, the job and the path."""
    problems = []
    for target in bundle["targets"]:
        try:
            jobs = resolved_jobs(bundle, target)
        except ValueError as e:
            problems.append(f"target {target}: {e}")
            continue
        variables = target_variables(bundle, target)
        for name, job in jobs.items():
            problems += [f"target {target}: job {name}: {p}" for p in job_problems(name, job, variables)]
    return problems


# --- the real bundle ----------------------------------------------------------------------

TARGET_JOBS = [(t, j) for t in BUNDLE["targets"] for j in target_jobs(BUNDLE, t)]


@pytest.mark.parametrize(("target", "name"), TARGET_JOBS, ids=[f"{t}-{j}" for t, j in TARGET_JOBS])
def test_every_job_in_every_target_is_what_databricks_job_model_takes(target, name):
    job = resolved_jobs(BUNDLE, target)[name]
    assert job_problems(name, job, target_variables(BUNDLE, target)) == []
    model = Job.from_dict(copy.deepcopy(job))
    assert [t.task_key for t in model.tasks] == [t["task_key"] for t in BUNDLE["resources"]["jobs"][name]["tasks"]]


def test_every_target_has_every_job():
    assert {t for t, _ in TARGET_JOBS} == {"dev", "prod"}
    assert set(TARGET_JOBS) == {(t, j) for t in ("dev", "prod") for j in BUNDLE["resources"]["jobs"]}
    assert bundle_problems(BUNDLE) == []


def test_a_targets_overrides_and_variables_reach_the_model():
    """prod's schedules are merged onto its jobs, and each target's variables are the ones
    the tasks are given."""
    prod = {name: Job.from_dict(copy.deepcopy(job)) for name, job in resolved_jobs(BUNDLE, "prod").items()}
    dev = {name: Job.from_dict(copy.deepcopy(job)) for name, job in resolved_jobs(BUNDLE, "dev").items()}
    assert prod["dlq_pipeline_serverless"].schedule.pause_status is PauseStatus.PAUSED
    assert prod["dlq_pipeline"].schedule.pause_status is None
    assert dev["dlq_pipeline"].schedule is None and dev["dlq_pipeline_serverless"].schedule is None
    assert prod["dlq_pipeline"].job_clusters[0].new_cluster.spark_version == "17.3.x-scala2.13"
    [ingest_dev, ingest_prod] = (jobs["dlq_pipeline"].tasks[0].python_wheel_task for jobs in (dev, prod))
    assert isinstance(ingest_dev, PythonWheelTask) and "storage.schema=dlq_dev" in ingest_dev.parameters
    assert "storage.schema=dlq" in ingest_prod.parameters
    assert "${workspace.file_path}/conf/dlq-pipeline.toml" in ingest_prod.parameters  # known at deploy


def test_a_targets_tasks_merge_by_task_key_as_the_cli_merges_them():
    bundle = copy.deepcopy(BUNDLE)
    prod = bundle["targets"]["prod"]["resources"]["jobs"]["dlq_pipeline"]
    prod["tasks"] = [{"task_key": "replay", "max_retries": 2, "run_if": "ALL_DONE"}]
    prod["tags"] = {"team": "mq"}
    jobs = target_jobs(bundle, "prod")
    assert [t["task_key"] for t in jobs["dlq_pipeline"]["tasks"]] == ["ingest", "classify", "replay", "report"]
    replay = jobs["dlq_pipeline"]["tasks"][2]
    assert (replay["max_retries"], replay["run_if"], replay["job_cluster_key"]) == (2, "ALL_DONE", "dlq")
    assert bundle_problems(bundle) == []
    prod["tasks"][0]["run_if"] = "SOMETIMES"
    assert bundle_problems(bundle) == [
        "target prod: job dlq_pipeline: resources.jobs.dlq_pipeline.tasks[2].run_if: 'SOMETIMES' is not a RunIf"
        f" (one of {', '.join(m.value for m in RunIf)})"
    ]


# --- what Databricks refuses ----------------------------------------------------------------


def _classic_task(bundle: dict, i: int) -> dict:
    return bundle["resources"]["jobs"]["dlq_pipeline"]["tasks"][i]


def _cluster(bundle: dict) -> dict:
    return bundle["resources"]["jobs"]["dlq_pipeline"]["job_clusters"][0]["new_cluster"]


def _both(problem: str) -> list[str]:
    return [f"target {t}: {problem}" for t in ("dev", "prod")]


RUN_IF = ", ".join(m.value for m in RunIf)
CLASSIC = "job dlq_pipeline: resources.jobs.dlq_pipeline"
SERVERLESS = "job dlq_pipeline_serverless: resources.jobs.dlq_pipeline_serverless"

# name -> (break the bundle, the problems, whether Job.from_dict itself refuses the job)
BROKEN = {
    "unknown task field": (
        lambda b: _classic_task(b, 0).update(spark_python_tsk={"python_file": "x.py"}),
        _both(f"{CLASSIC}.tasks[0].spark_python_tsk: unknown field of Task (did you mean spark_python_task?)"),
        True,
    ),
    "unknown job field": (
        lambda b: b["resources"]["jobs"]["dlq_pipeline_serverless"].update(max_concurent_runs=2),
        _both(f"{SERVERLESS}.max_concurent_runs: unknown field of Job (did you mean max_concurrent_runs?)"),
        True,
    ),
    "bad run_if": (
        lambda b: b["resources"]["jobs"]["dlq_pipeline_serverless"]["tasks"][1].update(run_if="SOMETIMES"),
        _both(f"{SERVERLESS}.tasks[1].run_if: 'SOMETIMES' is not a RunIf (one of {RUN_IF})"),
        True,
    ),
    "bad pause_status in prod's override": (
        lambda b: b["targets"]["prod"]["resources"]["jobs"]["dlq_pipeline_serverless"]["schedule"].update(
            pause_status="STOPPED"
        ),
        [f"target prod: {SERVERLESS}.schedule.pause_status: 'STOPPED' is not a PauseStatus (one of UNPAUSED, PAUSED)"],
        True,
    ),
    "max_retries not a number": (
        lambda b: _classic_task(b, 2).update(max_retries="three"),
        _both(f"{CLASSIC}.tasks[2].max_retries: 'three' is not an integer"),
        True,
    ),
    "a boolean for an integer": (
        lambda b: _cluster(b).update(num_workers=True),
        _both(f"{CLASSIC}.job_clusters[0].new_cluster.num_workers: True is not an integer"),
        False,  # Job.from_dict reads it as 1
    ),
    "a fraction for an integer": (
        lambda b: _classic_task(b, 1).update(timeout_seconds=2.5),
        _both(f"{CLASSIC}.tasks[1].timeout_seconds: 2.5 is not an integer"),
        False,  # Job.from_dict reads it as 2
    ),
    "a mapping for a string": (
        lambda b: _cluster(b)["spark_env_vars"].update(DLQ_PIPELINE_LOG_FORMAT={"format": "json"}),
        _both(
            f"{CLASSIC}.job_clusters[0].new_cluster.spark_env_vars.DLQ_PIPELINE_LOG_FORMAT: {{'format': 'json'}}"
            " is not a string"
        ),
        False,  # Job.from_dict makes it the string "{'format': 'json'}"
    ),
    "a list for a mapping": (
        lambda b: _classic_task(b, 3).update(python_wheel_task=["dlq_pipeline"]),
        _both(f"{CLASSIC}.tasks[3].python_wheel_task: ['dlq_pipeline'] is not a mapping (PythonWheelTask)"),
        True,
    ),
    "a required field missing": (
        lambda b: _classic_task(b, 0)["python_wheel_task"].pop("entry_point"),
        _both(f"{CLASSIC}.tasks[0].python_wheel_task: PythonWheelTask needs entry_point"),
        True,
    ),
    "a variable's value of the wrong type, in one target": (
        lambda b: (
            b["variables"].update(workers={"description": "workers", "default": "two"}),
            b["targets"]["prod"]["variables"].update(workers=4),
            _cluster(b).update(num_workers="${var.workers}"),
        ),
        [f"target dev: {CLASSIC}.job_clusters[0].new_cluster.num_workers: 'two' is not an integer"],
        True,
    ),
    "an undeclared variable": (
        lambda b: _cluster(b).update(node_type_id="${var.node}"),
        _both(f"{CLASSIC}.job_clusters[0].new_cluster.node_type_id: ${{var.node}} is not a declared variable"),
        False,  # the CLI refuses it when it resolves references; the model takes any reference
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_what_databricks_refuses_fails_naming_the_job_the_path_and_what_is_wrong(case):
    breaks, expected, model_refuses = BROKEN[case]
    bundle = copy.deepcopy(BUNDLE)
    breaks(bundle)
    assert bundle_problems(bundle) == expected
    [(target, name)] = {re.match(r"target (\S+): job (\S+):", p).groups() for p in expected[:1]}
    job = resolved_jobs(bundle, target)[name]
    if model_refuses:  # Databricks' model refuses it too, only without the path
        with pytest.raises((ValueError, TypeError)):
            Job.from_dict(copy.deepcopy(job))
    else:
        Job.from_dict(copy.deepcopy(job))


def test_references_and_what_the_cli_converts_are_taken_where_the_model_wants_no_string():
    """A whole reference to a variable is judged by the variable's value; one known only at
    deploy, or a variable given only then, is taken as the model takes it; scalars the CLI
    converts (a string of digits, "true") are taken."""
    bundle = copy.deepcopy(BUNDLE)
    bundle["variables"].update(
        workers={"description": "workers", "default": 2},
        retries={"description": "given at deploy: --var retries=N"},
    )
    _cluster(bundle).update(num_workers="${var.workers}", enable_elastic_disk="true")
    _classic_task(bundle, 0).update(max_retries="${var.retries}", timeout_seconds="3600")
    _classic_task(bundle, 1).update(max_retries="${bundle.target}", retry_on_timeout="${var.workers}")
    _classic_task(bundle, 2).update(min_retry_interval_millis=1000.0)
    assert bundle_problems(bundle) == [
        f"target {t}: {CLASSIC}.tasks[1].retry_on_timeout: 2 is not a boolean" for t in ("dev", "prod")
    ]
    del _classic_task(bundle, 1)["retry_on_timeout"]
    assert bundle_problems(bundle) == []
    model = Job.from_dict(copy.deepcopy(resolved_jobs(bundle, "dev")["dlq_pipeline"]))
    assert model.job_clusters[0].new_cluster.num_workers == 2
    assert isinstance(model.tasks[0].max_retries, Variable) and model.tasks[0].max_retries.path == "var.retries"


def test_the_check_has_a_rule_for_every_type_in_the_job_model():
    """Every leaf type reachable from Job is one the walk judges, so a newer package with a
    new kind of field fails here rather than being passed unchecked."""
    seen: set[type] = set()
    leaves: set[Any] = set()

    def walk(tpe: Any) -> None:
        if typing.get_origin(tpe) is not None:
            for arg in typing.get_args(tpe):
                walk(arg)
        elif dataclasses.is_dataclass(tpe):
            assert isinstance(tpe, type)
            if tpe not in seen:
                seen.add(tpe)
                for f in dataclasses.fields(tpe):
                    walk(_hints(tpe)[f.name])
        else:
            leaves.add(tpe)

    walk(Job)
    unruled = {t for t in leaves if t not in SCALARS and t not in (Any, type(None))}
    unruled = {t for t in unruled if not (isinstance(t, type) and issubclass(t, enum.Enum))}
    assert unruled == set()
    assert len(seen) > 50  # the walk reached the task, cluster and environment models
