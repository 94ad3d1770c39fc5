"""docs/deploy.md's spark-submit commands, as written, on the test bed.

Both ``sh`` blocks of the "## spark-submit" section are read from the markdown (the doc and
this test cannot drift), the placeholders the doc lists are replaced (each must be there) and
every command runs with the real ``spark-submit`` against the standalone cluster and HDFS of
tests/cluster/bed.py, with the packed environment (tests/packed.py) shipped by
``--archives`` and the shipped ``cluster`` profile of conf/dlq-pipeline.toml as ``prod.toml``.
What they leave in the HDFS warehouse must equal what ``run_pipeline`` of the same dumps, with
the same profile, leaves in a local one (in this process's session): the decisions, and for
the one-job block, which replays to a ``dir:`` folder on HDFS, the ledger and the dmpmqmsg files
(with ``replay.dir_mode``'s permissions) too, and no replay checkpoint left behind.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import RunSettings
from dlq_pipeline.pipeline import run_pipeline
from dlq_pipeline.rules.parser import load_rules
from tests.cluster.bed import QUICK_JIT
from tests.cluster.runs import STARTER, decisions, hdfs_tree, ledger
from tests.conftest import dump_tree, require_delta
from tests.support import REPO

RUN_ID = "nightly-20261126"  # the stage block's --set pipeline.run_id


def spark_submit_blocks(markdown: str) -> list[str]:
    """The ``sh`` code blocks of the "## spark-submit" section, subsections included (pure)."""
    section = markdown.split("\n## spark-submit\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def commands(block: str) -> tuple[str, list[str]]:
    """(the lines before the first spark-submit, each spark-submit command as one line) (pure)."""
    lines = block.replace("\\\n", " ").splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(("spark-submit", "$SUBMIT")))
    return "\n".join(lines[:first]), [line for line in lines[first:] if line.strip()]


def replace(text: str, placeholders: dict[str, str]) -> str:
    """``text`` with each placeholder (a regular expression) replaced; each must be there (pure)."""
    for pattern, value in placeholders.items():
        text, n = re.subn(pattern, lambda _m, v=value: v, text)
        assert n, f"placeholder {pattern!r} is not in {text!r}"
    return text


class Submitter:
    """Runs the doc's commands in a directory laid out as the doc assumes: ``jobs/`` and
    ``dist/`` there, the configuration in an /etc-like directory, SPARK_CONF_DIR the bed's."""

    def __init__(self, bed, packed_env: Path, root: Path, warehouse: str, target: str = "dry-run"):
        self.bed, self.root = bed, root
        self.etc = root / "etc-dlq-pipeline"
        self.etc.mkdir(parents=True)
        (root / "jobs").symlink_to(REPO / "jobs")
        (root / "dist").symlink_to(packed_env.parent)
        authority = bed.hdfs.uri.removeprefix("hdfs://")
        shipped = (REPO / "conf" / "dlq-pipeline.toml").read_text()
        (self.etc / "prod.toml").write_text(
            replace(
                shipped,
                {
                    r"NAMENODE:8020/dlq-pipeline/warehouse": f"{authority}{warehouse}",
                    r"http://NAMENODE:9870": bed.hdfs.http,
                },
            )
        )
        (self.etc / "prod.rules").write_text(Path(STARTER).read_text())
        conf = root / "spark-conf"  # the cluster's own defaults (not part of the doc's commands)
        conf.mkdir()
        (conf / "spark-defaults.conf").write_text(
            "spark.executor.memory 768m\nspark.ui.enabled false\n"
            f"spark.driver.extraJavaOptions {QUICK_JIT}\n"
            f"spark.executor.extraJavaOptions {QUICK_JIT}\n"
        )
        self.placeholders = {
            r"--master yarn": f"--master {bed.master}",
            r"\bpython3\b": sys.executable,
            r"dlq-pipeline-env-[^#\s]+\.tar\.gz": packed_env.name,
            r"/etc/dlq-pipeline/": f"{self.etc}/",
            r"NAMENODE:8020": authority,
            r"mq:QM1": target,
        }
        self.env = {
            **self.bed.spark_env(),
            "SPARK_CONF_DIR": str(conf),  # pyspark's spark-submit on PATH
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }
        # PYTHONPATH makes this checkout the driver's dlq_pipeline (the doc's "wheel installed");
        # executors get none (bed.start) and import the package from the archive only.

    def run(self, block: str) -> list[subprocess.CompletedProcess]:
        preamble, lines = commands(replace(block, self.placeholders))
        done = []
        for line in lines:
            done.append(
                subprocess.run(
                    ["bash", "-euo", "pipefail", "-c", f"{preamble}\n{line}"],
                    cwd=self.root,
                    env=self.env,
                    capture_output=True,
                    text=True,
                    timeout=900,
                )
            )
        return done


@pytest.fixture(scope="module")
def blocks() -> dict[str, str]:
    found = spark_submit_blocks((REPO / "docs" / "deploy.md").read_text())
    assert len(found) == 2, found
    [run] = [b for b in found if "jobs/run.py" in b]
    [stages] = [b for b in found if "jobs/ingest.py" in b]
    return {"run": run, "stages": stages}


@pytest.fixture(scope="module")
def local_run(spark, dumps, tmp_path_factory) -> dict:
    """The dumps run in this process's local session (no extra JVM) with the shipped ``cluster``
    profile, the warehouse a local directory, replayed to a local ``dir:`` folder."""
    require_delta(spark)
    root = tmp_path_factory.mktemp("local-deploy")
    config = load_config(
        REPO / "conf" / "dlq-pipeline.toml",
        profile="cluster",
        overrides={"storage": {"path": str(root / "warehouse")}, "hdfs": {"webhdfs": ""}},
    )
    summary = run_pipeline(
        spark,
        RunSettings.from_config(config),
        load_rules(STARTER),
        inputs=[str(dumps)],
        target=f"dir:{root / 'out'}",
        run_id="local",
    )
    return {
        "summary": summary,
        "decisions": decisions(spark, str(root / "warehouse"), None),
        "ledger": ledger(spark, str(root / "warehouse")),
        "files": dump_tree(root / "out" / "local"),
    }


@pytest.fixture(scope="module")
def stages(bed, packed_env, hdfs_dumps, blocks, tmp_path_factory) -> dict:
    """Every command of the stage-by-stage block, in order (4 spark-submits)."""
    submitter = Submitter(bed, packed_env, tmp_path_factory.mktemp("deploy-stages"), "/dlq-pipeline/warehouse")
    preamble, lines = commands(blocks["stages"])
    assert [re.search(r"jobs/(\w+)\.py", line).group(1) for line in lines] == ["ingest", "classify", "replay", "report"]
    done = submitter.run(blocks["stages"])
    return {
        "root": submitter.root,
        "warehouse": f"{bed.hdfs.uri}/dlq-pipeline/warehouse",
        **dict(zip(["ingest", "classify", "replay", "report"], done)),
    }


def _ok(done: subprocess.CompletedProcess, status: int = 0) -> None:
    assert done.returncode == status, (done.stdout[-3000:], done.stderr[-3000:])


def test_stage_by_stage_commands_decide_on_the_cluster_as_in_local_mode(
    bed, spark, dumps, hdfs_dumps, stages, local_run
):
    """Its set-up, the `stages` fixture, takes about three minutes: four spark-submits, each a
    driver JVM with executors of its own on the bed that unpack the packed environment, as
    the doc's scheduler tasks do; the submits are the subject."""
    _ok(stages["ingest"], 3)  # the stray notes.txt is quarantined: exit 3, attention
    _ok(stages["classify"])
    assert bed.hdfs.list("/dlq-pipeline/warehouse/decisions")  # the tables are on HDFS
    decided = decisions(spark, stages["warehouse"], (hdfs_dumps, str(dumps)), bed.hdfs.http)
    assert len(local_run["decisions"]) > 210
    assert decided == local_run["decisions"]

    _ok(stages["report"])
    html = (stages["root"] / "report.html").read_text()
    assert RUN_ID in html


def test_stage_by_stage_replay_command_dry_runs_what_was_decided(bed, spark, stages, local_run):
    """Shares the stage block's four spark-submits (the `stages` fixture) with the test above."""
    _ok(stages["replay"])
    dry = [r for r in ledger(spark, stages["warehouse"], bed.hdfs.http) if r["outcome"] == "dry_run"]
    assert len(dry) == local_run["summary"].outcomes["delivered"] > 20  # what the local run delivered


def test_the_run_command_runs_the_whole_pipeline_on_the_cluster(
    bed, spark, dumps, hdfs_dumps, packed_env, blocks, local_run, tmp_path
):
    """The one-job block, replaying to a dir: folder on HDFS: the decisions, the ledger and the
    files of the local run; the files owner-only (replay.dir_mode), no checkpoint left. About
    a minute: one spark-submit of the whole pipeline on the bed."""
    out = "/dlq-pipeline/run-out"
    [done] = Submitter(bed, packed_env, tmp_path, "/dlq-pipeline/run-warehouse", f"dir:{bed.hdfs.uri}{out}").run(
        blocks["run"]
    )
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    _ok(done, summary["exit_status"])
    warehouse = f"{bed.hdfs.uri}/dlq-pipeline/run-warehouse"
    assert decisions(spark, warehouse, (hdfs_dumps, str(dumps)), bed.hdfs.http) == local_run["decisions"]
    assert ledger(spark, warehouse, bed.hdfs.http) == local_run["ledger"]
    for key in ("decisions", "outcomes", "messages_landed", "quarantined", "exit_status"):
        assert summary[key] == getattr(local_run["summary"], key), key
    assert [s["pathSuffix"] for s in bed.hdfs.list(out)] == [summary["run_id"]]  # dir:'s folder of the run
    written = hdfs_tree(bed.hdfs, f"{out}/{summary['run_id']}")
    assert {k: v for k, (v, _) in written.items()} == local_run["files"]  # no staging name left either
    assert {mode for _, mode in written.values()} == {"600"}
    assert [s["pathSuffix"] for s in bed.hdfs.list("/dlq-pipeline/run-warehouse/_checkpoints")] == []
