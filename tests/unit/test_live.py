"""Which live queue a drain or settle works on, and the per-queue lock (no Spark)."""

from __future__ import annotations

import pytest

from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import mq_qmgrs
from dlq_pipeline.live.loops import (
    LiveError,
    QueueLock,
    QueueLocked,
    live_queue,
    lock_path,
    parse_source,
    resolve_queue,
)
from dlq_pipeline.mq.sim import SimQueueManager
from dlq_pipeline.replay.targets import TargetError
from dlq_pipeline.rules.model import ControlData

CONTROL = ControlData(inputq="APP.DLQ", inputqm="QM7")


def test_command_line_wins_over_the_rules_tables_control_data(tmp_path):
    chosen = live_queue("sim:", warehouse=tmp_path, control=CONTROL)
    assert (chosen.spec, chosen.qmgr, chosen.queue) == ("sim:QM7", "QM7", "APP.DLQ")
    assert chosen.target.location == str(tmp_path.absolute() / "_sim" / "QM7.sqlite")
    chosen = live_queue("sim:QM1", warehouse=tmp_path, control=CONTROL, queue="OTHER.DLQ", qmgr="QM9")
    assert (chosen.qmgr, chosen.queue) == ("QM1", "OTHER.DLQ")  # the source's name, then --qmgr, then INPUTQM
    chosen = live_queue("sim:", warehouse=tmp_path, control=CONTROL, qmgr="QM9")
    assert (chosen.qmgr, chosen.queue) == ("QM9", "APP.DLQ")
    blank = ControlData(inputq=" ", inputqm=" ")
    chosen = live_queue("sim:", warehouse=tmp_path, control=blank)
    assert (chosen.qmgr, chosen.queue) == ("SIM", "")  # blank INPUTQ: the queue manager's DEADQ, asked later


def test_blank_inputq_means_the_queue_managers_deadq(tmp_path):
    qm = SimQueueManager(tmp_path / "_sim" / "QM1.sqlite", "QM1")
    chosen = live_queue("sim:QM1", warehouse=tmp_path)
    assert resolve_queue(chosen, qm.connect()).queue == "SYSTEM.DEAD.LETTER.QUEUE"
    qm.configure({"deadq": "MY.DLQ"})
    assert resolve_queue(chosen, qm.connect()).queue == "MY.DLQ"
    qm.configure({"deadq": " "})
    with pytest.raises(LiveError, match="has no dead-letter queue"):
        resolve_queue(chosen, qm.connect())


def test_mq_sources_need_a_queue_manager_and_its_settings(tmp_path):
    config = load_config(overrides={"mq": {"qmgrs": {"QM1": {"channel": "C", "conn_name": "h(1414)"}}}})
    chosen = live_queue("mq:QM1", warehouse=tmp_path, qmgrs=mq_qmgrs(config), queue="DLQ")
    assert (chosen.kind, chosen.target.kind, chosen.target.settings["channel"]) == ("mq", "mq", "C")
    with pytest.raises(TargetError, match="names no queue manager"):
        live_queue("mq:", warehouse=tmp_path, qmgrs=mq_qmgrs(config))
    with pytest.raises(TargetError, match=r"\[mq.qmgrs.QM2\]"):
        live_queue("mq:", warehouse=tmp_path, qmgrs=mq_qmgrs(config), control=ControlData(inputqm="QM2"))
    for bad in ("dir:/tmp", "QM1", "dry-run", "sim:bad/name"):
        with pytest.raises(TargetError):
            parse_source(bad)


def test_the_lock_names_its_holder_and_is_released(tmp_path):
    path = lock_path(tmp_path, "QM1", "a/b")
    assert path.parent == tmp_path / "_locks" and path.name == "QM1@-61-2F-62.lock"
    with QueueLock(path, what="queue a/b on QM1", command="drain (browse)", run_id="R1"):
        with pytest.raises(
            QueueLocked,
            match=r"queue a/b on QM1 is already being worked on by drain \(browse\) "
            r"\(pid \d+ on .*, run R1, since",
        ):
            with QueueLock(path, what="queue a/b on QM1", command="settle", run_id="R2"):
                pass
    with QueueLock(path, what="queue a/b on QM1", command="settle", run_id="R2"):
        pass
