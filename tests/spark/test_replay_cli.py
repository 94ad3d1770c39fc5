"""`run --target sim:` and `run --target dry-run` + `replay --target dir:` on a generated DLQ,
end to end through the CLI: the ledger agrees with what the queue manager received and with
the dmpmqmsg files read back by the project's own reader; a second replay sends nothing."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest
from click.testing import CliRunner

from dlq_pipeline.cli import cli
from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump
from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.dumps.sources import read_source
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.replay.rebuild import rebuild
from dlq_pipeline.replay.targets import LOCAL_QMGR_DIR, safe_file_name
from dlq_pipeline.tables.identity import data_digest, message_key
from dlq_pipeline.warehouse.storage import Storage
from tests.support import REPO

pytestmark = pytest.mark.spark
STARTER = str(REPO / "dlq_pipeline" / "data" / "rules" / "starter.rules")


def invoke(*args):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result, json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("gen")
    paths = [str(p) for p in write_generated(root / "dumps", 120, seed=21, files=2, max_size=8 * 1024)]
    originals = {}
    for path in paths:
        for msg in read_source(path):
            originals[message_key(msg.md, data_digest(msg.data))] = msg
    return paths, originals


def test_run_to_the_sim_puts_each_delivered_message_once(spark, generated, tmp_path):
    paths, originals = generated
    wh = tmp_path / "wh"
    qm = SimQueueManager(wh / "_sim" / "SIM.sqlite", "SIM", {"remote_qmgrs": ["*"]})
    args = [
        "run",
        *sum((["--input", p] for p in paths), []),
        "--rules",
        STARTER,
        "--warehouse",
        str(wh),
        "--target",
        "sim:",
        "--json",
    ]
    result, summary = invoke(*args)
    assert result.exit_code == 3 and summary["outcomes"]["delivered"] > 0
    storage = Storage(spark, path=str(wh))
    decisions = {r["message_key"]: r for r in storage.read("decisions").collect()}
    delivered = [r for r in storage.read("ledger").collect() if r["outcome"] == "delivered"]
    expected = Counter()
    for row in delivered:
        md, data = rebuild(
            originals[row["message_key"]].md, originals[row["message_key"]].data, decisions[row["message_key"]]
        )
        expected[(row["target_qmgr"].rstrip(" ") or "SIM", row["target_q"], md, data)] += 1
    received = Counter((r.qmgr, r.queue, r.md, r.data) for r in qm.put_log())
    assert received == expected and set(received.values()) == {1}

    again, second = invoke(*args)  # nothing delivered is put again
    assert second["outcomes"].get("delivered", 0) == 0 and len(qm.put_log()) == len(delivered)


def test_replay_a_dry_run_to_dmpmqmsg_files_then_replay_again_sends_nothing(spark, generated, tmp_path):
    paths, originals = generated
    wh, out = tmp_path / "wh", tmp_path / "out"
    result, dry = invoke(
        "run",
        *sum((["--input", p] for p in paths), []),
        "--rules",
        STARTER,
        "--warehouse",
        str(wh),
        "--target",
        "dry-run",
        "--json",
    )
    result, replayed = invoke("replay", "--warehouse", str(wh), "--target", f"dir:{out}", "--json")
    assert replayed["decisions_run_id"] == dry["run_id"] and replayed["run_id"].startswith(dry["run_id"] + ".replay-")
    puts = dry["decisions"].get("RETRY", 0) + dry["decisions"].get("FWD", 0)
    assert dry["outcomes"]["dry_run"] == puts + dry["decisions"].get("DISCARD", 0)  # a dry run ends nothing
    outcomes = replayed["outcomes"]
    # the generated messages with a lifetime of under an hour ran out long after their dumps were taken
    assert outcomes["expired"] > 0
    assert replayed["stale"] == 0 and outcomes["delivered"] + outcomes.get("failed", 0) + outcomes["expired"] == puts

    storage = Storage(spark, path=str(wh))
    decisions = {r["message_key"]: r for r in storage.read("decisions").collect()}
    ledger = [r for r in storage.read("ledger").collect() if r["run_id"] == replayed["run_id"]]
    assert len(ledger) == len(decisions) == dry["pending"]  # one ledger row per decision
    files = defaultdict(list)
    for row in sorted(
        (r for r in ledger if r["outcome"] == "delivered"),
        key=lambda r: (decisions[r["message_key"]]["source_file"], decisions[r["message_key"]]["source_index"]),
    ):
        qmgr = row["target_qmgr"].rstrip(" ")
        path = (
            out
            / replayed["run_id"]
            / (safe_file_name(qmgr) if qmgr else LOCAL_QMGR_DIR)
            / (safe_file_name(row["target_q"]) + ".dmp")
        )
        original = originals[row["message_key"]]
        files[path].append(rebuild(original.md, original.data, decisions[row["message_key"]]))
    written = sorted(out.rglob("*.dmp"))
    assert written == sorted(files)
    for path, expected in files.items():
        assert [(m.md, m.data) for m in read_dump(str(path))] == expected  # byte for byte, in DLQ order

    result, again = invoke("replay", "--warehouse", str(wh), "--target", "sim:", "--run-id", dry["run_id"], "--json")
    assert again["stale"] == puts and again["outcomes"].get("delivered", 0) == 0 and result.exit_code == 3
    assert SimQueueManager(wh / "_sim" / "SIM.sqlite", "SIM").put_log() == []
