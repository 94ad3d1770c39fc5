"""docs/deploy.md's spark-submit commands, as written, on the test bed.

Both ``sh`` blocks of the "## spark-submit" section are read from the markdown (the doc and
this test cannot drift), the placeholders the doc lists are replaced (each must be there) and
every command runs with the real ``spark-submit`` against the standalone cluster and HDFS of
tests/cluster/bed.py, with the packed environment (tests/cluster/packed.py) shipped by
``--archives`` and the shipped ``cluster`` profile of conf/dlq-pipeline.toml as ``prod.toml``.
The decisions in the HDFS warehouse must equal those of the same dumps decided in local mode.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dlq_pipeline.clock import utc_now
from dlq_pipeline.rules.parser import load_rules
from dlq_pipeline.settings import IngestSettings, StorageSettings
from dlq_pipeline.spark.classify import decide_pending
from dlq_pipeline.spark.ingest import ingest
from dlq_pipeline.spark.storage import open_storage
from tests.cluster.test_pipeline import STARTER, _decisions
from tests.conftest import REPO, require_delta

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

    def __init__(self, bed, packed_env: Path, root: Path, warehouse: str):
        self.bed, self.root = bed, root
        self.etc = root / "etc-dlq-pipeline"
        self.etc.mkdir(parents=True)
        (root / "jobs").symlink_to(REPO / "jobs")
        (root / "dist").symlink_to(packed_env.parent)
        authority = bed.hdfs.uri.removeprefix("hdfs://")
        shipped = (REPO / "conf" / "dlq-pipeline.toml").read_text()
        (self.etc / "prod.toml").write_text(replace(shipped, {
            r"NAMENODE:8020/dlq-pipeline/warehouse": f"{authority}{warehouse}",
            r"http://NAMENODE:9870": bed.hdfs.http}))
        (self.etc / "prod.rules").write_text(Path(STARTER).read_text())
        conf = root / "spark-conf"  # the cluster's own defaults (not part of the doc's commands)
        conf.mkdir()
        (conf / "spark-defaults.conf").write_text("spark.executor.memory 768m\nspark.ui.enabled false\n")
        self.placeholders = {
            r"--master yarn": f"--master {bed.master}",
            r"\bpython3\b": sys.executable,
            r"dlq-pipeline-env-[^#\s]+\.tar\.gz": packed_env.name,
            r"/etc/dlq-pipeline/": f"{self.etc}/",
            r"NAMENODE:8020": authority,
            r"mq:QM1": "dry-run",
        }
        self.env = {**self.bed.spark_env(), "SPARK_CONF_DIR": str(conf),  # pyspark's spark-submit on PATH
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
        # PYTHONPATH makes this checkout the driver's dlq_pipeline (the doc's "wheel installed");
        # executors get none (bed.start) and import the package from the archive only.

    def run(self, block: str) -> list[subprocess.CompletedProcess]:
        preamble, lines = commands(replace(block, self.placeholders))
        done = []
        for line in lines:
            done.append(subprocess.run(["bash", "-euo", "pipefail", "-c", f"{preamble}\n{line}"], cwd=self.root,
                                       env=self.env, capture_output=True, text=True, timeout=900))
        return done


@pytest.fixture(scope="module")
def blocks() -> dict[str, str]:
    found = spark_submit_blocks((REPO / "docs" / "deploy.md").read_text())
    assert len(found) == 2, found
    [run] = [b for b in found if "jobs/run.py" in b]
    [stages] = [b for b in found if "jobs/ingest.py" in b]
    return {"run": run, "stages": stages}


@pytest.fixture(scope="module")
def local_decisions(spark, dumps, tmp_path_factory) -> list[dict]:
    """The dumps ingested and classified in this process's local session (no extra JVM)."""
    require_delta(spark)
    warehouse = str(tmp_path_factory.mktemp("local-deploy") / "warehouse")
    storage = open_storage(spark, StorageSettings(format="delta", path=warehouse))
    ingest(spark, storage, [str(dumps)], run_id="local", settings=IngestSettings(split_bytes=65536))
    decide_pending(spark, storage, load_rules(STARTER), run_id="local", now=utc_now()).unpersist()
    return _decisions(spark, warehouse, None)


@pytest.fixture(scope="module")
def stages(bed, packed_env, hdfs_dumps, blocks, tmp_path_factory) -> dict:
    """Every command of the stage-by-stage block, in order (4 spark-submits)."""
    submitter = Submitter(bed, packed_env, tmp_path_factory.mktemp("deploy-stages"), "/dlq-pipeline/warehouse")
    preamble, lines = commands(blocks["stages"])
    assert [re.search(r"jobs/(\w+)\.py", line).group(1) for line in lines] == ["ingest", "classify", "replay",
                                                                             "report"]
    done = submitter.run(blocks["stages"])
    return {"root": submitter.root, "warehouse": f"{bed.hdfs.uri}/dlq-pipeline/warehouse",
            **dict(zip(["ingest", "classify", "replay", "report"], done))}


def _ok(done: subprocess.CompletedProcess, status: int = 0) -> None:
    assert done.returncode == status, (done.stdout[-3000:], done.stderr[-3000:])


def test_stage_by_stage_commands_decide_on_the_cluster_as_in_local_mode(bed, spark, dumps, hdfs_dumps, stages,
                                                                        local_decisions):
    _ok(stages["ingest"], 3)  # the stray notes.txt is quarantined: exit 3, attention
    _ok(stages["classify"])
    assert bed.hdfs.list("/dlq-pipeline/warehouse/decisions")  # the tables are on HDFS
    decided = _decisions(spark, stages["warehouse"], (hdfs_dumps, str(dumps)))
    assert len(local_decisions) > 210
    assert decided == local_decisions

    _ok(stages["report"])
    html = (stages["root"] / "report.html").read_text()
    assert RUN_ID in html


def test_stage_by_stage_replay_command_dry_runs_what_was_decided(stages, local_decisions):
    _ok(stages["replay"])


def test_the_run_command_runs_the_whole_pipeline_on_the_cluster(bed, spark, dumps, hdfs_dumps, packed_env, blocks,
                                                               local_decisions, tmp_path):
    [done] = Submitter(bed, packed_env, tmp_path, "/dlq-pipeline/run-warehouse").run(blocks["run"])
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    _ok(done, summary["exit_status"])
    decided = _decisions(spark, f"{bed.hdfs.uri}/dlq-pipeline/run-warehouse", (hdfs_dumps, str(dumps)))
    assert decided == local_decisions
    actions = {}
    for row in local_decisions:
        actions[row["action"]] = actions.get(row["action"], 0) + 1
    assert summary["decisions"] == actions
    assert summary["outcomes"]["dry_run"] == actions.get("RETRY", 0) + actions.get("FWD", 0)
