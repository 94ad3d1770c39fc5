"""A first run on a machine without a class archive: the claim that lets one process build it
for the next run, and `dlq-pipeline setup`'s steps and lines (the builds and fetches
themselves run in tests/spark/test_class_archive.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from dlq_pipeline.cli import cli
from dlq_pipeline.engine import class_archive, jars

pytestmark = pytest.mark.unit


@pytest.fixture
def archive(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "cds" / "spark-4.2.0-0123456789abcdef.jsa"
    monkeypatch.setattr(class_archive, "archive_path", lambda classpath=(): path)
    monkeypatch.delenv(class_archive.FOR_NEXT_ENV, raising=False)
    return path


def test_one_process_at_a_time_holds_the_claim_to_build_the_missing_archive(archive):
    first = class_archive.claim()
    assert first is not None and first.archive == archive and first.path == archive.with_name(archive.name + ".claim")
    assert json.loads(first.path.read_text()) == {"pid": os.getpid()}
    assert class_archive.claim() is None  # a second run while the first builds: no second build
    first.done()
    assert not first.path.exists()
    assert class_archive.claim() is not None  # given back: the next run without an archive may build


def test_a_failed_build_keeps_its_claim_until_it_expires(archive):
    held = class_archive.claim()
    assert held is not None
    held.failed("RuntimeError: the JVM wrote no archive")
    assert json.loads(held.path.read_text())["failed"] == "RuntimeError: the JVM wrote no archive"
    mtime = held.path.stat().st_mtime
    assert class_archive.claim(now=mtime + class_archive.CLAIM_TTL_S - 1) is None  # not retried by every run
    again = class_archive.claim(now=mtime + class_archive.CLAIM_TTL_S + 1)
    assert again is not None and json.loads(again.path.read_text()) == {"pid": os.getpid()}


def test_no_claim_when_the_archive_exists_or_building_is_off_or_the_cache_cannot_be_written(archive, monkeypatch):
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"archive")
    assert class_archive.claim() is None
    archive.unlink()
    monkeypatch.setenv(class_archive.FOR_NEXT_ENV, "off")
    assert class_archive.claim() is None
    monkeypatch.delenv(class_archive.FOR_NEXT_ENV)
    archive.parent.rmdir()
    archive.parent.write_text("")  # a cache that cannot hold the archive (as a read-only one)
    assert class_archive.claim() is None


def test_the_build_for_the_next_run_starts_detached_as_the_process_exits(archive, monkeypatch):
    held = class_archive.claim()
    assert held is not None
    registered, started = [], []
    monkeypatch.setattr("atexit.register", lambda fn, *args: registered.append((fn, args)))
    monkeypatch.setattr("subprocess.Popen", lambda command, **kwargs: started.append((command, kwargs)))
    held.build_after_exit("delta", True)
    assert not started  # nothing during the run itself
    ((fn, args),) = registered
    fn(*args)
    ((command, kwargs),) = started
    assert command[1:] == ["-m", "dlq_pipeline.class_archive_dump", "delta", "--claim", str(held.path), "--s3a"]
    assert kwargs["start_new_session"] and kwargs["stdin"] is not None


# --- dlq-pipeline setup ------------------------------------------------------------------------


def test_setup_on_databricks_has_nothing_to_do(monkeypatch):
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "17.3")
    done = CliRunner().invoke(cli, ["setup"])
    assert done.exit_code == 0, done.output
    assert done.output == "setup: nothing to do on Databricks: its runtime has Delta, S3 and its own JVMs\n"


def test_setup_offline_says_so_in_one_line_and_sets_up_the_rest(monkeypatch, tmp_path):
    """The jars cannot be fetched: one error line naming what and how to retry, Ivy's own
    lines indented below it, the class archive still built, exit 1."""
    from dlq_pipeline.cli import setup as setup_module
    from dlq_pipeline.engine import delta

    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    monkeypatch.setattr(delta, "cached_jars", lambda version=None: [])
    monkeypatch.setattr(delta, "jar_dir", lambda version=None: tmp_path / "delta")
    monkeypatch.setattr("dlq_pipeline.ingest.jvm_reader.existing", lambda: "/pkg/dlq-pipeline-reader.jar")

    ivy = "Server access error at url https://repo1.maven.org/maven2/ (java.net.UnknownHostException: repo1.maven.org)"

    def offline(package, folder, *, repositories=None):
        raise jars.JarsError(f"could not fetch {package} from Maven Central:\n{ivy}")

    monkeypatch.setattr(jars, "fetch", offline)
    archives = []
    monkeypatch.setattr(setup_module, "_class_archive", lambda f, s3a, force: archives.append((f, s3a, force)))
    done = CliRunner().invoke(cli, ["setup", "--delta"])
    assert done.exit_code == 1, done.output
    package = delta.package_for()
    assert done.output.splitlines() == [
        "JVM reader: /pkg/dlq-pipeline-reader.jar",
        f"Delta Lake's jars: fetching {package} from Maven Central into {tmp_path / 'delta'} ...",
        f"error: Delta Lake's jars: could not fetch {package}: is this machine offline? It needs Maven Central "
        "(or a mirror: --repositories URL) once; run `dlq-pipeline setup --delta` again where it is reachable",
        f"  {ivy}",
        "error: setup: some jars are missing (above); the rest is set up",
    ]
    assert archives == [("parquet", False, False)]  # Delta's class path needs Delta's jars: Parquet's only
