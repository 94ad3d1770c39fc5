"""Shared fixtures. The SparkSession is started once for the whole suite (it takes ~5 s); it
has Delta Lake (the jars `make delta-jars` fetched), so one session serves Parquet and Delta.

Storage kinds: the tests of storage, ingest, pipeline, replay, crash and idempotency run on
``parquet``, ``delta`` (tables by path) and ``delta-name`` (tables by catalog name in
Spark's built-in catalog, managed under the session's ``spark.sql.warehouse.dir``: no Hive
metastore needed). The Delta kinds carry the ``delta`` marker.
"""

from __future__ import annotations

import os
import re
import secrets
import sys
from pathlib import Path

import pytest

from tests import profiles  # noqa: F401 - loads the Hypothesis profile DLQ_TEST_PROFILE names
from tests.support import REPO

REAL_FIXTURES = REPO / "tests" / "fixtures" / "real"
# The suite's commands start hundreds of short local JVMs, many with class paths of their
# own (other Spark tiers, temporary jar caches, S3A): none builds a class archive for the
# next run in the background (tests/spark/test_class_archive.py turns it on where it tests it).
os.environ["DLQ_PIPELINE_CLASS_ARCHIVE"] = "off"
CREATED = re.compile(rb"Created:[^\n]*")  # the line of a dmpmqmsg dump saying when it was written


def without_created(data: bytes) -> bytes:
    """A dump's bytes without its creation time: two runs writing the same messages compare equal."""
    return CREATED.sub(b"", data)


def dump_tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (its POSIX path relative to ``root``), without the dumps' creation time."""
    return {
        p.relative_to(root).as_posix(): without_created(p.read_bytes()) for p in sorted(root.rglob("*")) if p.is_file()
    }


# A test's tier is the heaviest of these markers it carries, "unit" when it carries none: the
# pure tests `make check` runs (no Java, no Spark, no network). Tests in a tier's folder, and
# tests that take a tier's fixture, get its marker here: a test cannot reach Spark or Java
# and still count as pure.
TIERS = ("cluster", "s3", "compat", "connect", "deploy", "browser", "delta", "spark", "java")
TIER_OF_FOLDER = {"cluster": "cluster", "s3": "s3", "browser": "browser"}
TIER_OF_FIXTURE = {"spark": "spark", "connect_url": "connect", "java_tables": "java", "bed": "cluster", "s3": "s3"}


def tier(item: pytest.Item) -> str:
    return next((name for name in TIERS if item.get_closest_marker(name)), "unit")


def pytest_collection_modifyitems(config, items):
    for item in items:
        folder = item.path.relative_to(REPO / "tests").parts[0]
        if folder in TIER_OF_FOLDER:
            item.add_marker(TIER_OF_FOLDER[folder])
        for fixture in set(getattr(item, "fixturenames", ())) & TIER_OF_FIXTURE.keys():
            item.add_marker(TIER_OF_FIXTURE[fixture])
        name = tier(item)
        if name == "unit":
            item.add_marker("unit")
        # read from the reports, a worker's too
        item.user_properties.append(("tier", name))
        item.user_properties.append(("documented", bool(getattr(getattr(item, "obj", None), "__doc__", None))))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`make test` runs pytest-xdist workers: a file's tests stay on one worker, so its module
    fixtures are made once, and the whole cluster tier stays on one (one test bed of HDFS and a
    standalone cluster per session), as does the whole s3 tier (one S3 server)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = str(nodeid).split("::", 1)[0]
            return next((tier for tier in ("tests/cluster", "tests/s3") if path.startswith(tier + "/")), path)

    return ByFile(config, log)


SLOW_TEST_S = 60  # a test that takes longer says why in its docstring


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    """The time each tier took (setup, call and teardown of its tests), after the slowest tests."""
    seconds: dict[str, float] = {}
    tests: dict[str, set[str]] = {}
    per_test: dict[str, float] = {}
    documented: dict[str, bool] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if isinstance(report, pytest.TestReport):
                properties = dict(report.user_properties)
                name = properties.get("tier", "unit")
                seconds[name] = seconds.get(name, 0.0) + report.duration
                tests.setdefault(name, set()).add(report.nodeid)
                per_test[report.nodeid] = per_test.get(report.nodeid, 0.0) + report.duration
                documented[report.nodeid] = properties.get("documented", False)
    if seconds:
        terminalreporter.write_sep("=", "time per tier")
        for name, spent in sorted(seconds.items(), key=lambda kv: -kv[1]):
            terminalreporter.write_line(f"{spent:8.1f} s  {name:<8} {len(tests[name]):5d} tests")
    unexplained = sorted(node for node, spent in per_test.items() if spent > SLOW_TEST_S and not documented[node])
    if unexplained:
        terminalreporter.write_sep("=", f"over {SLOW_TEST_S} s with no docstring saying why")
        for node in unexplained:
            terminalreporter.write_line(f"{per_test[node]:8.1f} s  {node}")


@pytest.fixture(scope="session")
def real_fixtures() -> Path:
    """The files from real MQ installations, kept in the repository (tests/fixtures/real,
    with where each came from in its README.md): a clone needs nothing beside it."""
    return REAL_FIXTURES


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One local SparkSession for the whole suite, built by the project's session factory
    with Delta (when its jars have been fetched: the Delta tests fail otherwise)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from dlq_pipeline.engine.session import get_spark

    catalog_dir = tmp_path_factory.mktemp("spark-catalog")
    session = get_spark(
        {
            "master": "local[2]",
            "app_name": "dlq-pipeline-tests",
            "format": "delta",
            "spark_conf": {"spark.sql.warehouse.dir": str(catalog_dir)},
        }
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def built_wheel() -> Path:
    """The wheel `make package` builds, from the suite's one build of its dist/ (tests/packed.py:
    keyed by the sources, built by ``make test``'s set-up, shared by the pytest workers)."""
    from tests.packed import packed_dist

    [wheel] = packed_dist().glob("*.whl")
    return wheel


STORAGE_KINDS = [
    pytest.param("parquet"),
    pytest.param("delta", marks=pytest.mark.delta),
    pytest.param("delta-name", marks=pytest.mark.delta),
]


def require_delta(spark) -> None:
    from dlq_pipeline.engine.delta import FETCH_COMMAND
    from dlq_pipeline.engine.session import delta_available

    if not delta_available(spark):
        pytest.fail(f"Delta Lake is not on the test session's classpath: run `make delta-jars` ({FETCH_COMMAND})")


def storage_settings(kind: str, warehouse) -> dict:
    """The [storage] settings of a fresh warehouse of this kind (a new schema for each call by name)."""
    if kind == "parquet":
        return {"format": "parquet", "path": str(warehouse)}
    if kind == "delta":
        return {"format": "delta", "path": str(warehouse)}
    return {
        "format": "delta",
        "path": str(warehouse),
        "catalog": "spark_catalog",
        "schema": f"dlq_{secrets.token_hex(4)}",
    }


def make_storage(spark, kind: str, warehouse):
    from dlq_pipeline.warehouse.storage import Storage

    return Storage(spark, **storage_settings(kind, warehouse))


@pytest.fixture(params=STORAGE_KINDS)
def storage_kind(request, spark) -> str:
    """parquet | delta | delta-name: a test taking it runs once per kind."""
    if request.param != "parquet":
        require_delta(spark)
    return request.param


@pytest.fixture(scope="session")
def connect_url(tmp_path_factory):
    """A local Spark Connect server (tests/connect_server.py) shared by the whole session:
    its ``sc://`` URL. Started on first use, stopped by its process group at the end."""
    from .connect_server import connect_server

    with connect_server(tmp_path_factory.mktemp("connect-server")) as url:
        yield url
