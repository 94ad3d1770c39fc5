"""A class-data-sharing archive of the classes a pipeline run loads: a local JVM then
starts in about half the time.

Most of a cold Spark start-up is the JVM loading and verifying the ~15,000 classes of
pyspark's jars, and a cold Delta command's first table operations load Delta's
(docs/performance.md, "The JVM class-data-sharing archive"). Java 13+ dumps the classes a
JVM loaded into an archive when it exits (``-XX:ArchiveClassesAtExit``) and maps that archive into later JVMs
(``-XX:SharedArchiveFile``), for classes of its class path (not of ``spark.jars``, which a
class loader of Spark's own reads: `get_spark` puts the JVM reader's and Delta's jars on the
class path of a local JVM). ``python -m dlq_pipeline.engine.class_archive`` (``make
class-archive``; ``make test`` and ``make bench`` run it) builds one archive per class path a
local session has here, from a small pipeline run: Parquet with the JVM reader's jar, and
Delta with Delta's jars too when they are cached; next to the jar cache
(``~/.cache/dlq-pipeline/cds/``). `get_spark` starts every local JVM with the one made for
its class path.

Only start-up time depends on it: the JVM checks the archive against its own class path
and Java and ignores one that does not match (quietly: its ``cds`` log is off), and the
archive's name changes with Java, pyspark, pyspark's jar folder and the jars on the class
path, so a stale one is simply not found.

Where no archive exists for its class path, a command builds one for the next run
(`claim`, `Claim.build_after_exit`): as the command's process exits, after its own work,
it starts the same build `build` runs, detached and at a low priority (about 40 s of CPU).
The command's own JVM is left as it is: a JVM that records its classes itself
(``-XX:ArchiveClassesAtExit``) starts and runs seconds slower (docs/performance.md, "The
first run"). A claim file beside the archive keeps a second command from building the
same archive at the same time, and a failed build from being retried by every run before
`CLAIM_TTL_S` has passed. ``DLQ_PIPELINE_CLASS_ARCHIVE=off`` turns this off.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dlq_pipeline.engine.jars import cache_root

QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # a mismatch or a dump says nothing on stderr
BUILD_TIMEOUT_S = 900
FOR_NEXT_ENV = "DLQ_PIPELINE_CLASS_ARCHIVE"  # "off": no command builds an archive for the next
CLAIM_TTL_S = 24 * 3600  # a claim older than this is a build that died or failed: another may start
CLAIM_SUFFIX = ".claim"  # the claim's file: the archive's name and this


def _java() -> Path | None:
    """The java spark-submit starts (``$JAVA_HOME/bin/java``, else the one on PATH)."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return Path(os.path.realpath(found)) if found and os.path.exists(found) else None


def archive_path(classpath: Sequence[str] = ()) -> Path | None:
    """Where the archive for this Java, this pyspark and the jars ``classpath`` adds lives
    (it may not exist); None without a java."""
    import pyspark

    java = _java()
    if java is None:
        return None
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    identity = [
        str(java),
        java.stat().st_mtime_ns,
        pyspark.__version__,
        str(jars),
        jars.stat().st_mtime_ns if jars.is_dir() else 0,
        *[(jar, os.stat(jar).st_mtime_ns if os.path.exists(jar) else 0) for jar in classpath],
    ]
    key = hashlib.sha256(repr(identity).encode()).hexdigest()[:16]
    return archive_dir() / f"spark-{pyspark.__version__}-{key}.jsa"


def archive_dir() -> Path:
    """Where the archives live: ``cds/`` beside the jar cache (`dlq_pipeline.engine.jars`),
    never inside the installed package."""
    return cache_root().parent / "cds"


def existing(classpath: Sequence[str] = ()) -> str | None:
    """The archive a new local JVM with ``classpath`` should map, when one was built."""
    path = archive_path(classpath)
    return str(path) if path is not None and path.is_file() else None


def storage_formats() -> list[str]:
    """The storage formats whose sessions have a class path of their own here: Parquet, and
    Delta when its jars are cached (`dlq_pipeline.engine.delta`)."""
    from dlq_pipeline.engine.delta import cached_jars

    return ["parquet", "delta"] if cached_jars() else ["parquet"]


def java_options(archive: str) -> str:
    """The JVM options that map ``archive``."""
    return f"-XX:SharedArchiveFile={shlex.quote(archive)} {QUIET}"


# --- building an archive for the next run ------------------------------------------------------


def for_next_enabled() -> bool:
    return os.environ.get(FOR_NEXT_ENV, "").strip().lower() != "off"


@dataclass(frozen=True)
class Claim:
    """This process's right to build ``archive`` for the next run: the file ``path`` beside
    it, which no other process can create while it exists."""

    archive: Path
    path: Path

    def build_after_exit(self, storage_format: str, s3a: bool) -> None:
        """As this process exits, start the detached build of the archive of a local class
        path for ``storage_format`` (and S3A's jars): `dlq_pipeline.class_archive_dump`
        at a low priority, its errors into a log beside the claim. Costs this process a fork."""
        import atexit

        atexit.register(self._start, storage_format, s3a)

    @classmethod
    def at(cls, path: Path) -> Claim:
        """The claim held in the file ``path``."""
        return cls(path.with_name(path.name.removesuffix(CLAIM_SUFFIX)), path)

    def _start(self, storage_format: str, s3a: bool) -> None:
        try:
            with open(self.path.with_suffix(".log"), "wb") as log:
                subprocess.Popen(
                    dump_command(storage_format, s3a, "--claim", str(self.path)),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    start_new_session=True,  # not stopped with this process's group, nor by its Ctrl-C
                    close_fds=True,
                )
        except OSError:  # the next run tries again once the claim has expired
            pass

    def done(self) -> None:
        self.path.unlink(missing_ok=True)
        self.path.with_suffix(".log").unlink(missing_ok=True)

    def failed(self, why: str) -> None:
        """Keep the claim, with ``why``, until `CLAIM_TTL_S` has passed: a build that fails is
        not started again by every run."""
        with contextlib.suppress(OSError):
            self.path.write_text(json.dumps({"pid": os.getpid(), "failed": why}))


def claim(classpath: Sequence[str] = (), now: float | None = None) -> Claim | None:
    """The right to build the archive for ``classpath`` for the next run, when none exists,
    building for the next is on (`FOR_NEXT_ENV`), its folder can be written and no other
    process holds it (a claim older than `CLAIM_TTL_S` is taken over); else None."""
    if not for_next_enabled():
        return None
    archive = archive_path(classpath)
    if archive is None or archive.is_file():
        return None
    held = archive.with_name(archive.name + CLAIM_SUFFIX)
    now = time.time() if now is None else now
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            if now - held.stat().st_mtime > CLAIM_TTL_S:
                held.unlink()
        fd = os.open(held, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:  # held by another process, or a cache that cannot be written: no build
        return None
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps({"pid": os.getpid()}))
    return Claim(archive, held)


def dump_command(storage_format: str, s3a: bool, *options: str) -> list[str]:
    """The child process that builds one archive (`dlq_pipeline.class_archive_dump`)."""
    return [
        sys.executable,
        "-m",
        "dlq_pipeline.class_archive_dump",
        storage_format,
        *options,
        *(["--s3a"] if s3a else []),
    ]


def build(force: bool = False, targets: Sequence[tuple[str, bool]] | None = None) -> list[Path]:
    """Build the archive of each local class path, (storage format, S3A's jars) in
    ``targets`` (default: each of `storage_formats`, without S3A), for this Java and pyspark
    (a no-op for one that exists, unless ``force``): a child process,
    `dlq_pipeline.class_archive_dump`, writes it under a temporary name, which becomes
    the archive only once the JVM has written it whole. Raises RuntimeError with the child's
    last lines."""
    if _java() is None:
        raise RuntimeError("no java found (JAVA_HOME, PATH): Spark cannot start either")
    built = []
    for storage_format, s3a in targets if targets is not None else [(f, False) for f in storage_formats()]:
        done = subprocess.run(
            dump_command(storage_format, s3a, *(["--force"] if force else [])),
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_S,
        )
        if done.returncode != 0:
            tail = "\n".join((done.stderr or "").strip().splitlines()[-15:])
            raise RuntimeError(f"the class archive was not written (exit {done.returncode}):\n{tail}")
        built.append(Path(done.stdout.strip().splitlines()[-1]))
    return built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dlq_pipeline.engine.class_archive",
        description="Build the JVM class archive local Spark sessions start with.",
    )
    parser.add_argument("--force", action="store_true", help="build it again even when it exists")
    args = parser.parse_args(argv)
    try:
        paths = build(force=args.force)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        # only start-up time depends on it: say why, and let the caller (make) go on
        print(f"class archive: not built, local Spark starts without it: {exc}", file=sys.stderr)
        return 0
    for path in dict.fromkeys(paths):
        print(f"class archive: {path} ({path.stat().st_size // 2**20} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
