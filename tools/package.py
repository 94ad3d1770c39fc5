"""Build what a Spark cluster needs to run dlq-pipeline (``make package``):

- ``DIST/dlq_pipeline-<version>-py3-none-any.whl``: the wheel (code, schemas, MQ constants,
  console scripts). Databricks installs it as a job library; ``pip install`` it anywhere.
- ``DIST/dlq-pipeline-reader.jar``: ingest's JVM reader (`dlq_pipeline.ingest.jvm_reader`),
  the jar the wheel carries too (its build backend compiles it, tools/build_backend.py):
  ``spark-submit --jars``, a Databricks cluster library.
- ``DIST/dlq-pipeline-env-<version>.tar.gz``: a packed virtual environment (venv-pack) with
  the wheel and its runtime dependencies (numpy, pandas, pyarrow, click; ``--extra mq`` adds
  IBM's ``ibmmq`` binding, which needs the MQ C client headers to build), for
  ``spark-submit --archives DIST/dlq-pipeline-env-<version>.tar.gz#environment``.
  ``--py-files`` cannot carry these: they are compiled extensions. PySpark itself is left
  out (the cluster's Spark provides it, matching its JVM); ``--with-pyspark`` puts it in.
  The versions are those of a constraints file (``--constraints``, default the tested
  ``constraints/spark-4.2.txt``; pick the file of the cluster's Spark tier).

    python tools/package.py --dist dist [--extra mq] [--with-pyspark] [--constraints FILE] [--compress-level 4]

Run with the project's virtual environment (it needs ``build`` and ``venv-pack``: the
``package`` extra, and pyspark and a JDK for the jar). Prints the paths it wrote.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LEFT_OUT = {"pyspark", "py4j"}  # provided by the cluster's Spark
DEFAULT_CONSTRAINTS = REPO / "constraints" / "spark-4.2.txt"


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].strip().lower().replace("_", "-")


def runtime_requirements(pyproject: dict, extras: list[str], with_pyspark: bool = False) -> list[str]:
    """The requirements (ranges) the packed environment installs; the constraints file pins them (pure)."""
    project = pyproject["project"]
    requirements = list(project["dependencies"])
    for extra in [*extras, *(["spark"] if with_pyspark else [])]:
        requirements += project["optional-dependencies"][extra]
    return [r for r in requirements if with_pyspark or _name(r) not in LEFT_OUT]


def run(cmd: list[str], **kwargs) -> None:
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, **kwargs)


def build_wheel(dist: Path) -> Path:
    egg_info = REPO / "dlq_pipeline.egg-info"
    had_egg_info = egg_info.exists()  # an editable install's metadata: leave it alone
    had_build = (REPO / "build").exists()
    with tempfile.TemporaryDirectory(prefix="dlq-wheel-") as out:
        # --no-isolation: build with this environment's pinned setuptools (works offline)
        run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", out, str(REPO)])
        [wheel] = Path(out).glob("*.whl")
        target = dist / wheel.name
        shutil.copy2(wheel, target)
    if not had_build:
        shutil.rmtree(REPO / "build", ignore_errors=True)  # setuptools' scratch directory
    if not had_egg_info:
        shutil.rmtree(egg_info, ignore_errors=True)
    return target


def pack_environment(
    wheel: Path, dist: Path, requirements: list[str], compress_level: int, constraints: Path = DEFAULT_CONSTRAINTS
) -> Path:
    version = wheel.name.split("-")[1]
    target = dist / f"dlq-pipeline-env-{version}.tar.gz"
    with tempfile.TemporaryDirectory(prefix="dlq-env-") as tmp:
        env = Path(tmp) / "env"
        run([sys.executable, "-m", "venv", str(env)])
        pip = [str(env / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        run([*pip, "-c", str(constraints), *requirements])
        run([*pip, "--no-deps", str(wheel)])
        if target.exists():
            target.unlink()
        run(
            [
                str(Path(sys.executable).with_name("venv-pack")),
                "--prefix",
                str(env),
                "--output",
                str(target),
                "--compress-level",
                str(compress_level),
                "--quiet",
            ]
        )
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", default=str(REPO / "dist"), help="output directory (default: dist/)")
    parser.add_argument("--extra", action="append", default=[], help="also install this extra (e.g. mq)")
    parser.add_argument("--with-pyspark", action="store_true", help="put PySpark in the environment too")
    parser.add_argument(
        "--constraints",
        default=str(DEFAULT_CONSTRAINTS),
        help="pins for the packed environment (default: constraints/spark-4.2.txt)",
    )
    parser.add_argument("--compress-level", type=int, default=4, help="gzip level of the archive (0-9)")
    parser.add_argument("--wheel-only", action="store_true", help="build only the wheel")
    args = parser.parse_args(argv)
    dist = Path(args.dist).resolve()
    dist.mkdir(parents=True, exist_ok=True)
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    from dlq_pipeline.ingest import jvm_reader

    print(jvm_reader.copy_to(dist))  # the jar the wheel's build compiles too (tools/build_backend.py)
    wheel = build_wheel(dist)
    print(wheel)
    if not args.wheel_only:
        requirements = runtime_requirements(pyproject, args.extra, args.with_pyspark)
        print(pack_environment(wheel, dist, requirements, args.compress_level, Path(args.constraints).resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
