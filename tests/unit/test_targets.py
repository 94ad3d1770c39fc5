"""Replay targets: spec parsing, safe file names, dmpmqmsg directory output, sim and dry run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import ReplaySettings, mq_qmgrs
from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump, read_dump_info
from dlq_pipeline.dumps.records import DumpedMessage
from dlq_pipeline.mq.client import MQClientMissing
from dlq_pipeline.replay.checkpoints import Checkpoint
from dlq_pipeline.replay.rebuild import rebuild
from dlq_pipeline.replay.targets import LOCAL_QMGR_DIR, TargetError, open_target, parse_target, safe_file_name
from dlq_pipeline.replay.writer import WorkItem, replay_partition
from tests.profiles import examples

from ..conftest import dump_tree

sys.path.insert(0, str(Path(__file__).parent))
from test_writer import NOW, FakeClock, dead_letter, item  # noqa: E402


def checkpoint_for(target, run_id="R1", partition_id=0):
    """The partition's checkpoint as replay makes it, in a ``_checkpoints`` folder beside the
    target's output (None for the dry run, as in replay)."""
    if not target.resumable:
        return None
    return Checkpoint.for_partition(target.location.rpartition("/")[0] + "/_checkpoints", run_id, partition_id)


def run(target, items, run_id="R1", partition_id=0):
    """One partition as a replay task runs it."""
    clock = FakeClock()
    checkpoint = checkpoint_for(target, run_id, partition_id)
    with target.partition(run_id, partition_id, checkpoint) as part:
        return list(
            replay_partition(
                items,
                part.connect,
                ReplaySettings(batch_size=2),
                run_id=run_id,
                partition_id=partition_id,
                checkpoint=part.checkpoint,
                clock=clock,
                sleep=clock.sleep,
                now=NOW,
            )
        )


@pytest.mark.parametrize(
    "spec,expected",
    [
        ("dry-run", ("dry-run", "")),
        ("dir:out/replay", ("dir", "out/replay")),
        ("sim:", ("sim", "SIM")),
        ("sim:QM.TEST_1", ("sim", "QM.TEST_1")),
        ("mq:QM1", ("mq", "QM1")),
    ],
)
def test_parse_target(spec, expected):
    assert parse_target(spec) == expected


@pytest.mark.parametrize(
    "spec", ["", "dryrun", "dir:", "mq:", "ftp:x", "sim:../x", "sim:.hidden", "mq:a b", "sim:" + "Q" * 49]
)
def test_bad_target_specs_say_what_is_accepted(spec):
    with pytest.raises(TargetError):
        parse_target(spec)


def test_open_target(tmp_path):
    sim = open_target("sim:", warehouse=tmp_path)
    assert (sim.kind, sim.name, Path(sim.location)) == ("sim", "SIM", tmp_path / "_sim" / "SIM.sqlite")
    assert sim.resumable and not sim.dry_run
    assert open_target("dir:x", warehouse=tmp_path).resumable  # its checkpoint records what it published
    assert (
        not open_target("dry-run", warehouse=tmp_path).resumable and open_target("dry-run", warehouse=tmp_path).dry_run
    )
    with pytest.raises(TargetError, match=r"\[mq.qmgrs.QM1\]"):
        open_target("mq:QM1", warehouse=tmp_path, qmgrs=mq_qmgrs(load_config()))
    config = load_config(overrides={"mq": {"qmgrs": {"QM1": {"channel": "APP.SVRCONN", "conn_name": "mq(1414)"}}}})
    mq = open_target("mq:QM1", warehouse=tmp_path, qmgrs=mq_qmgrs(config))
    assert (mq.kind, mq.location, dict(mq.settings)) == (
        "mq",
        "QM1",
        {"channel": "APP.SVRCONN", "conn_name": "mq(1414)"},
    )
    with pytest.raises(MQClientMissing, match=r"pip install 'dlq-pipeline\[mq\]'"):
        mq.preflight()  # no MQ client on this machine: one clear error before any task starts


@pytest.mark.parametrize(
    "name,expected",
    [
        ("APP.ORDERS.IN", "APP.ORDERS.IN"),
        ("Q%1_X", "Q%1_X"),
        ("DEV.QUEUE.1      ", "DEV.QUEUE.1"),
        ("dev.q", "-64-65-76.-71"),
        ("a/b", "-61-2F-62"),
        ("..", "-2E-2E"),
        (".HIDDEN", "-2EHIDDEN"),
        ("END.", "END-2E"),
        ("CON", "-43ON"),
        ("NUL.Q", "-4EUL.Q"),
        ("COM1", "-43OM1"),
        ("CONX", "CONX"),
        ("A-B", "A-2DB"),
        ("../../etc/passwd", "-2E.-2F..-2F-65-74-63-2F-70-61-73-73-77-64"),
        ("", "-"),
        ("Q\x00\x00", "Q-00-00"),
        ("ÄQ", "-C3-84Q"),
    ],
)
def test_safe_file_name_examples(name, expected):
    assert safe_file_name(name) == expected


def test_long_names_are_cut_with_a_digest():
    a, b = safe_file_name("x" * 48), safe_file_name("x" * 47 + "y")
    assert len(a) <= 120 and a != b and "~" in a


HOSTILE = st.text(
    alphabet=st.sampled_from(list('AZaz09./_%-\\:~ *?<>|"\x00\n\t\u00e9\u2603\udc80')) | st.characters(), max_size=48
)


@settings(max_examples=examples(400), deadline=None)
@given(name=HOSTILE)
def test_safe_file_names_are_one_harmless_component(name):
    out = safe_file_name(name)
    assert out and len(out) <= 120
    assert set(out) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%-~")  # no separators, no lower case
    assert out not in (".", "..") and not out.startswith(".") and not out.endswith(".")
    devices = {"CON", "PRN", "AUX", "NUL"} | {f"{d}{i}" for d in ("COM", "LPT") for i in range(10)}
    assert out.split(".")[0] not in devices
    root = Path("/srv/out")
    assert (root / out).resolve().parent == root


@settings(max_examples=examples(300), deadline=None)
@given(a=HOSTILE, b=HOSTILE)
def test_distinct_names_get_distinct_files(a, b):
    if a.rstrip(" ") != b.rstrip(" "):
        assert safe_file_name(a) != safe_file_name(b)
        assert safe_file_name(a).upper() != safe_file_name(b).upper()  # case-insensitive file systems too


def test_dir_target_writes_loadable_dumps_equal_to_the_rebuilt_messages(tmp_path):
    target = open_target(f"dir:{tmp_path / 'out'}", warehouse=tmp_path)
    items = [
        item(0),
        item(1, "FWD", "FWD.Q", header=True),
        item(2),
        item(3, "FWD", "FWD.Q", header=False),
        item(4, "DISCARD"),
        WorkItem("k005", "FWD", *dead_letter(5), target_q="REMOTE.Q", target_qmgr="QM2", header=True),
    ]
    rows = run(target, items)
    assert {r["message_key"]: r["outcome"] for r in rows} == {
        "k000": "delivered",
        "k001": "delivered",
        "k002": "delivered",
        "k003": "delivered",
        "k004": "discarded",
        "k005": "delivered",
    }
    root = tmp_path / "out" / "R1"
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert files == [f"{LOCAL_QMGR_DIR}/APP.IN.dmp", f"{LOCAL_QMGR_DIR}/FWD.Q.dmp", "QM2/REMOTE.Q.dmp"]

    def read(path):
        got = list(read_dump(str(path)))
        assert all(isinstance(m, DumpedMessage) for m in got)
        return [(m.md, m.data) for m in got]

    assert read(root / LOCAL_QMGR_DIR / "APP.IN.dmp") == [
        rebuild(*dead_letter(0), items[0]),
        rebuild(*dead_letter(2), items[2]),
    ]
    assert read(root / LOCAL_QMGR_DIR / "FWD.Q.dmp") == [dead_letter(1), rebuild(*dead_letter(3), items[3])]
    assert read(root / "QM2" / "REMOTE.Q.dmp") == [dead_letter(5)]
    info = read_dump_info(str(root / "QM2" / "REMOTE.Q.dmp"))
    assert (info.tool, info.qmgr, info.queue) == ("DMPMQMSG", "QM2", "REMOTE.Q")
    assert not any(p.name.startswith(".") for p in root.rglob("*"))  # no staging or temporary files left


def _dir_items():
    return [
        item(0),
        item(1, "FWD", "FWD.Q", header=True),
        item(2),
        item(3, "FWD", "FWD.Q", header=False),
        item(4, "DISCARD"),
        WorkItem("k005", "FWD", *dead_letter(5), target_q="REMOTE.Q", target_qmgr="QM2", header=True),
    ]


def test_local_dir_target_links_its_dumps_into_place_without_copying_them(tmp_path, monkeypatch):
    """A partition's dump can be as large as its messages twice over (hex): on the local
    filesystem it is written once, in scratch space, and linked into staging and place."""
    from dlq_pipeline.fs import local

    copied = run(open_target(f"dir:{tmp_path / 'copied' / 'out'}", warehouse=tmp_path), _dir_items())

    copy = local.copy_source

    def no_file_copy(source, out):
        if isinstance(source, str):
            raise AssertionError(f"copied {source}")
        copy(source, out)  # small records (the checkpoint's) are written from bytes

    monkeypatch.setattr(local, "copy_source", no_file_copy)
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    linked = run(open_target(f"dir:{tmp_path / 'linked' / 'out'}", warehouse=tmp_path), _dir_items())
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("started_at", "finished_at")} for r in rs]  # noqa: E731
    assert strip(linked) == strip(copied)
    assert dump_tree(tmp_path / "linked" / "out") == dump_tree(tmp_path / "copied" / "out")
    assert len(dump_tree(tmp_path / "linked" / "out")) == 3
    assert not list((tmp_path / "scratch").rglob("*"))  # the scratch files are gone too


@pytest.mark.parametrize("where", ["webhdfs", "object-store"])
def test_dir_target_on_hdfs_and_object_storage_writes_what_a_local_one_writes(tmp_path, where):
    import pyarrow.fs as pafs
    from webhdfs_fake import FakeWebHdfs

    from dlq_pipeline import fs as files

    local = open_target(f"dir:{tmp_path / 'local' / 'out'}", warehouse=tmp_path)
    expected_rows = run(local, _dir_items())
    remote_root = tmp_path / "remote"
    remote_root.mkdir()
    if where == "webhdfs":
        server = FakeWebHdfs(remote_root).__enter__()
        base = server.uri
    else:
        files.mount("s3a", pafs.SubTreeFileSystem(str(remote_root), pafs.LocalFileSystem()))
        base = "s3a:/"
    try:
        target = open_target(f"dir:{base}/bucket/out", warehouse=tmp_path, file_mode=0o640)
        assert target.location == f"{base}/bucket/out"
        target.preflight()
        rows = run(target, _dir_items())
        again = run(target, _dir_items())  # a retried task: re-emits what the checkpoint says was published
    finally:
        server.__exit__() if where == "webhdfs" else files.mount("s3a", None)
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("started_at", "finished_at")} for r in rs]  # noqa: E731
    assert strip(rows) == strip(expected_rows) and again == rows
    assert dump_tree(remote_root / "bucket" / "out") == dump_tree(
        tmp_path / "local" / "out"
    )  # no staging left, same bytes
    records = sorted(p.name for p in (remote_root / "bucket" / "_checkpoints" / "R1" / "partition-00000").iterdir())
    # the first attempt's staging and publish records, then the retry's staging record (it published nothing)
    assert records == ["00000000.json", "00000001.json", "00000002.json"]
    if where == "webhdfs":
        dumps = [p for p in (remote_root / "bucket" / "out").rglob("*.dmp")]
        assert {oct(p.stat().st_mode & 0o777) for p in dumps} == {"0o640"}


def test_dir_mode_makes_files_group_readable_and_their_new_directories_reachable(tmp_path):
    from dlq_pipeline.replay.targets import dir_modes

    assert (dir_modes(0o600), dir_modes(0o640), dir_modes(0o644)) == (0o700, 0o750, 0o755)
    target = open_target(f"dir:{tmp_path / 'out'}", warehouse=tmp_path, file_mode=0o640)
    run(target, _dir_items())
    made = [tmp_path / "out" / "R1", *[p for p in (tmp_path / "out").rglob("*") if p.is_dir()]]
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert len(written) == 3 and {oct(p.stat().st_mode & 0o777) for p in written} == {"0o640"}
    assert {oct(p.stat().st_mode & 0o777) for p in made} == {"0o750"}
    default = open_target(f"dir:{tmp_path / 'other' / 'private'}", warehouse=tmp_path)  # its own checkpoints
    run(default, _dir_items())
    assert {oct(p.stat().st_mode & 0o777) for p in (tmp_path / "other" / "private").rglob("*")} == {"0o600", "0o700"}


def test_dir_target_contains_hostile_reply_queue_names(tmp_path):
    target = open_target(f"dir:{tmp_path / 'out'}", warehouse=tmp_path)
    names = ["../../escape", "/etc/cron.d/x", "CON", "q1", "Q1", "a\nb"]
    items = [item(n, "FWD", name, header=True) for n, name in enumerate(names)]
    rows = run(target, items)
    assert [r["outcome"] for r in rows] == ["delivered"] * 6
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert len(written) == 6 and all((tmp_path / "out" / "R1" / LOCAL_QMGR_DIR) == p.parent for p in written)
    assert len({p.name.upper() for p in written}) == 6
    newline = next(p for p in written if p.name == "a-0Ab.dmp".replace("a", "-61").replace("b", "-62"))
    assert read_dump_info(str(newline)).queue == ""  # an unprintable name stays out of the header


def test_dir_target_refuses_what_a_dump_cannot_hold_per_message(tmp_path):
    target = open_target(f"dir:{tmp_path / 'out'}", warehouse=tmp_path)
    bad = item(1, "FWD", "Q", header=True, md={"reply_to_q": "R\x00".ljust(48)})
    rows = run(target, [item(0, "FWD", "Q", header=True), bad])
    assert [(r["outcome"], r["reason_code"]) for r in rows] == [("failed", 2026), ("delivered", 0)]
    assert len(read_dump_info(str(tmp_path / "out" / "R1" / LOCAL_QMGR_DIR / "Q.dmp")).queue) == 1


def test_dir_target_retried_partition_writes_each_message_once(tmp_path):
    target = open_target(f"dir:{tmp_path / 'out'}", warehouse=tmp_path)
    items = [item(n) for n in range(5)]
    with pytest.raises(RuntimeError):
        with target.partition("R1", 7, checkpoint_for(target, "R1", 7)) as part:
            for n, _row in enumerate(
                replay_partition(
                    items,
                    part.connect,
                    ReplaySettings(batch_size=2),
                    run_id="R1",
                    partition_id=7,
                    checkpoint=part.checkpoint,
                    now=NOW,
                )
            ):
                if n == 3:
                    raise RuntimeError("task killed")
    assert not [p for p in (tmp_path / "out").rglob("*.dmp")]  # nothing appears from a failed attempt
    assert checkpoint_for(target, "R1", 7).load().rows == {}  # and nothing is recorded
    outcomes = []
    for _attempt in range(2):  # the retry, and an accidental second evaluation (re-emits, writes nothing)
        outcomes.append([(r["message_key"], r["outcome"]) for r in run(target, items, partition_id=7)])
        (dump,) = (tmp_path / "out").rglob("*.dmp")
        assert [m.md.msg_id for m in read_dump(str(dump))] == [dead_letter(n)[0].msg_id for n in range(5)]
    assert outcomes[0] == outcomes[1] == [(f"k{n:03d}", "delivered") for n in range(5)]
    assert [p.name for p in (tmp_path / "out" / "R1").iterdir()] == [LOCAL_QMGR_DIR]
    with pytest.raises(TargetError):
        with target.partition("../R2", 0, checkpoint_for(target)):
            pass
    with pytest.raises(TargetError, match="checkpoint"):
        with target.partition("R3", 0):
            pass


def test_sim_target_puts_into_the_warehouse_database(tmp_path):
    from dlq_pipeline.mq.sim import SimQueueManager

    target = open_target("sim:QMX", warehouse=tmp_path)
    rows = run(target, [item(0), item(1)])
    assert [r["outcome"] for r in rows] == ["delivered"] * 2
    log = SimQueueManager(tmp_path / "_sim" / "QMX.sqlite", "QMX").put_log()
    assert [(r.queue, r.md, r.data) for r in log] == [("APP.IN", *rebuild(*dead_letter(n), item(n))) for n in (0, 1)]


def test_dry_run_target_records_without_putting(tmp_path):
    rows = run(open_target("dry-run", warehouse=tmp_path), [item(0), item(1, "IGNORE")])
    assert [r["outcome"] for r in rows] == ["dry_run", "ignored"]
    assert os.listdir(tmp_path) == []
