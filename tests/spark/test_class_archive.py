"""The JVM class archives: built once per local class path (Parquet; Delta, with Delta's jars)
from a small pipeline run, then mapped by every local JVM `get_spark` starts with that class
path (half of a cold Spark start-up is loading classes)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dlq_pipeline.engine import class_archive
from dlq_pipeline.engine.jars import JARS_ENV, cache_root
from dlq_pipeline.engine.session import local_classpath

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``python -m dlq_pipeline.engine.class_archive``: under `make test`, into the cache its
    `make class-archive` filled (the same command, which exits 0 even when the build fails,
    so this checks what it built, and that it is kept, not built again: a build costs a
    minute of the suite); without that archive, into a cache of its own (a build), which sees
    the jars `make delta-jars` fetched."""
    made = class_archive.archive_path(local_classpath({"format": "parquet"}))
    if made is not None and made.is_file():
        cache = made.parent.parent
    else:
        cache = tmp_path_factory.mktemp("cache")
        (cache / "jars").symlink_to(cache_root(), target_is_directory=True)
    env = {**os.environ, JARS_ENV: str(cache / "jars"), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "dlq_pipeline.engine.class_archive"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return cache, env, done


def test_an_archive_is_built_once_under_the_cache_for_each_class_path(built, monkeypatch):
    cache, env, done = built
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv(JARS_ENV, str(cache / "jars"))
    paths = [class_archive.archive_path(local_classpath({"format": f})) for f in class_archive.storage_formats()]
    assert len(set(paths)) == len(paths)  # Delta's jars (when cached) make a class path of their own
    for path in paths:
        assert path.parent == cache / "cds" and path.is_file() and path.stat().st_size > 50 * 2**20
        assert f"class archive: {path} (" in done.stdout
        assert not list(path.parent.glob(f"{path.name}.*"))  # no partial file left behind
    assert class_archive.existing(local_classpath({"format": "parquet"})) == str(paths[0])
    stamps = [path.stat().st_mtime_ns for path in paths]
    again = subprocess.run(
        [sys.executable, "-m", "dlq_pipeline.engine.class_archive"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0 and [p.stat().st_mtime_ns for p in paths] == stamps  # there: nothing to do


def test_get_spark_starts_a_jvm_that_loads_spark_from_the_archive_quietly(built, tmp_path):
    cache, env, done = built
    assert done.returncode == 0, done.stderr
    # the JVM's class-load log names where each class came from: "shared objects file (top)"
    # is the archive this project built (the JDK's own base archive is "(base)")
    child = textwrap.dedent("""
        import logging, sys
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s %(message)s")
        from dlq_pipeline.engine.session import get_spark
        spark = get_spark({"master": "local[1]", "format": "delta"})
        print(spark.range(3).count())
        print(spark.sparkContext.getConf().get("spark.driver.extraJavaOptions"))
        spark.stop()
    """)
    env = {**env, "JAVA_TOOL_OPTIONS": f"-Xlog:class+load=info:file={tmp_path}/load-%p.log"}
    ran = subprocess.run([sys.executable, "-c", child], env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    count, options = ran.stdout.splitlines()[-2:]
    assert count == "3"
    assert f"-XX:SharedArchiveFile={cache / 'cds'}/" in options  # after Spark's own default options
    logs = "".join(p.read_text(errors="replace") for p in tmp_path.glob("load-*.log"))
    assert "org.apache.spark.SparkContext source: shared objects file (top)" in logs
    assert "io.delta.sql.DeltaSparkSessionExtension source: shared objects file (top)" in logs  # Delta's too
    # nothing about the archive on stderr (its cds log is off); JAVA_TOOL_OPTIONS announces itself
    noise = [line for line in ran.stderr.splitlines() if "Picked up JAVA_TOOL_OPTIONS" not in line]
    assert not [line for line in noise if "cds" in line.lower() or "shared archive" in line.lower()], noise


def test_a_stale_archive_is_ignored_and_the_session_still_works(tmp_path):
    """An archive that does not match this JVM (here: not an archive at all) costs nothing."""
    bogus = tmp_path / "stale.jsa"
    bogus.write_bytes(b"\0" * 4096)
    child = textwrap.dedent(f"""
        from dlq_pipeline.engine.session import get_spark
        spark = get_spark({{"master": "local[1]", "class_archive": {str(bogus)!r}}})
        print(spark.range(5).count())
    """)
    ran = subprocess.run(
        [sys.executable, "-c", child],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[-1] == "5"
    assert "shared archive" not in ran.stderr.lower()
