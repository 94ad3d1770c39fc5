"""The JVM class archives: built once per local class path (Parquet; Delta, with Delta's jars)
from a small pipeline run, then mapped by every local JVM `get_spark` starts with that class
path (half of a cold Spark start-up is loading classes)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dlq_pipeline.engine import class_archive
from dlq_pipeline.engine.jars import JARS_ENV, cache_root
from dlq_pipeline.engine.session import local_classpath
from tests.support import REPO, repo_env

pytestmark = pytest.mark.spark


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
    env = {**repo_env(keep_path=False), JARS_ENV: str(cache / "jars")}
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
        env=repo_env(keep_path=False),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[-1] == "5"
    assert "shared archive" not in ran.stderr.lower()


def test_a_run_without_an_archive_leaves_one_for_the_next(tmp_path):
    """A `run` in a cache with no archive returns as soon as its own work is done, holding
    the claim; the build it started as it exited (detached, about 40 s) writes the archive of
    the run's class path and gives the claim back. Over a minute: the build is a pipeline run."""
    import time

    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "jars").symlink_to(cache_root(), target_is_directory=True)
    env = {**repo_env(keep_path=False), JARS_ENV: str(cache / "jars"), class_archive.FOR_NEXT_ENV: "auto"}
    cli = [str(Path(sys.executable).with_name("dlq-pipeline"))]
    subprocess.run(
        [*cli, "generate", "--out", str(tmp_path / "dumps"), "--count", "40", "--seed", "5"], env=env, check=True
    )
    rules = tmp_path / "starter.rules"
    rules.write_text(
        subprocess.run([*cli, "rules", "example", "starter"], env=env, capture_output=True, text=True).stdout
    )
    run = [*cli, "run", "--input", str(tmp_path / "dumps"), "--rules", str(rules), "--warehouse", str(tmp_path / "wh")]
    ran = subprocess.run([*run, "--target", "dry-run"], env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode in (0, 3), ran.stderr
    claims = list((cache / "cds").glob("*.jsa.claim"))
    assert len(claims) == 1 and not list((cache / "cds").glob("*.jsa"))  # building, after the run returned
    archive = claims[0].with_name(claims[0].name.removesuffix(".claim"))
    probe = (
        "from dlq_pipeline.engine import class_archive as a, session as s; print(a.archive_path(s.local_classpath({})))"
    )
    expected = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert expected.stdout.strip() == str(archive)  # the class path of the run's own sessions
    deadline = time.monotonic() + 600
    while claims[0].exists() and time.monotonic() < deadline:
        time.sleep(1)
    assert archive.is_file() and archive.stat().st_size > 50 * 2**20, (
        claims[0].read_text() if claims[0].exists() else ""
    )
    assert sorted(p.name for p in (cache / "cds").iterdir()) == [archive.name]  # no claim, log or partial left
    again = subprocess.run(
        [*run, "--target", "dry-run", "--reread"], env=env, capture_output=True, text=True, timeout=300
    )
    assert again.returncode in (0, 3), again.stderr
    assert sorted(p.name for p in (cache / "cds").iterdir()) == [archive.name]  # it had one: no second build


def test_setup_is_idempotent_and_says_what_is_there(built, monkeypatch):
    """`dlq-pipeline setup` where `make test` (or the fixture) built everything: one line per
    step, nothing built or fetched again."""
    cache, env, done = built
    assert done.returncode == 0, done.stderr
    paths = {p: p.stat().st_mtime_ns for p in (cache / "cds").glob("*.jsa")}
    ran = subprocess.run(
        [str(Path(sys.executable).with_name("dlq-pipeline")), "setup", "--delta"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stderr.splitlines()
    from dlq_pipeline.engine import delta

    monkeypatch.setenv(JARS_ENV, env[JARS_ENV])
    assert lines[0].startswith("JVM reader: ") and lines[0].endswith(".jar")
    assert lines[1] == f"Delta Lake's jars: {len(delta.cached_jars())} jars in {delta.jar_dir()}"
    assert [line.split(": ")[0] for line in lines[2:]] == [
        "class archive for Parquet",
        "class archive for Delta",
        "setup",
    ]
    assert lines[-1] == "setup: done" and all("building" not in line for line in lines)
    assert {p: p.stat().st_mtime_ns for p in (cache / "cds").glob("*.jsa")} == paths
