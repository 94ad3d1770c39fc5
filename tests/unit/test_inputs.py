"""Which input files a landing reads (`ingest.inputs`): the plan against the files table, a
file that changes while it is read, where archive moves a file, and the listing's entries."""

from __future__ import annotations

import datetime as dt
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dlq_pipeline import fs
from dlq_pipeline.fs.base import Entry
from dlq_pipeline.ingest.inputs import (
    InputFile,
    LandedFile,
    archive_uri,
    bytes_to_land,
    changed,
    clean_sources,
    inside,
    plan_inputs,
    same_file,
)

NOW = dt.datetime(2026, 12, 6, 12, 0, 0, tzinfo=dt.UTC)


def entry(name: str, size: int = 10, age: float = 3600.0, version: str | None = None) -> Entry:
    return Entry(name, False, size, NOW - dt.timedelta(seconds=age), version)


def row(e: Entry, quarantined: int = 0) -> LandedFile:
    return LandedFile(e.uri, e.size, e.modified, e.version, "R1", 5, quarantined)


def test_a_file_landed_whole_and_unchanged_is_skipped_and_every_other_kind_is_read_or_deferred():
    same, grown, touched, rewritten, new, fresh = (
        entry("/in/same"),
        entry("/in/grown", size=20),
        entry("/in/touched", age=60),
        entry("/in/rewritten", version="2"),
        entry("/in/new"),
        entry("/in/fresh", age=5),
    )
    landed = {
        "/in/same": row(same),
        "/in/grown": row(entry("/in/grown", size=10)),
        "/in/touched": row(entry("/in/touched")),
        "/in/rewritten": row(entry("/in/rewritten", version="1")),
    }
    listed = [InputFile(e.uri, e) for e in (same, grown, touched, rewritten, new, fresh)]
    plan = plan_inputs(listed, landed, now=NOW, settle_seconds=30)
    assert [f.name for f in plan.skipped] == ["/in/same"]
    assert [f.name for f in plan.read] == ["/in/grown", "/in/touched", "/in/rewritten", "/in/new"]
    assert list(plan.deferred) == ["/in/fresh"] and "settle_seconds" in plan.deferred["/in/fresh"]
    assert plan.sizes == {e.uri: e.size for e in (same, grown, touched, rewritten, new, fresh)}

    everything = plan_inputs(listed, landed, now=NOW, reread=True)
    assert [f.name for f in everything.read] == [f.name for f in listed] and not everything.skipped


def test_a_version_counts_only_where_both_sides_have_one():
    e = entry("/x", version=None)
    assert same_file(e, row(entry("/x", version="7")))
    assert not same_file(entry("/x", version="8"), row(entry("/x", version="7")))
    # the time compares to the microsecond a Spark timestamp keeps
    finer = Entry("/x", False, 10, e.modified + dt.timedelta(microseconds=0.4))
    assert same_file(finer, row(e))


@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),  # size
            st.integers(0, 3),  # age in minutes
            st.sampled_from([None, "a", "b"]),
            st.sampled_from(["none", "same", "other"]),  # the files table's row
        ),
        max_size=12,
    ),
    st.integers(0, 300),
    st.booleans(),
)
def test_every_listed_file_is_read_skipped_or_deferred_exactly_once(files, settle, reread):
    listed, landed = [], {}
    for n, (size, age, version, kind) in enumerate(files):
        e = entry(f"/in/{n}", size, age * 60.0, version)
        listed.append(InputFile(e.uri, e))
        if kind == "same":
            landed[e.uri] = row(e)
        elif kind == "other":
            landed[e.uri] = row(entry(e.uri, size + 1, age * 60.0, version))
    plan = plan_inputs(listed, landed, now=NOW, settle_seconds=settle, reread=reread)
    names = [f.name for f in plan.read] + [f.name for f in plan.skipped] + list(plan.deferred)
    assert sorted(names) == sorted(f.name for f in listed)
    for f in plan.skipped:  # skipped only when landed whole and unchanged, and never on reread
        assert not reread and same_file(f.entry, landed[f.name])
    for f in plan.read:  # read only once settled
        assert NOW - f.entry.modified >= dt.timedelta(seconds=settle) or settle == 0


def test_a_file_that_changed_while_it_was_read_says_how():
    before = entry("/x", size=10)
    assert changed(before, before) is None
    assert "vanished" in changed(before, None)
    assert "size 10 -> 20" in changed(before, entry("/x", size=20))
    assert "modification time" in changed(before, entry("/x", age=1))
    assert "version" in changed(entry("/x", version="1"), entry("/x", version="2"))


def test_archive_keeps_the_path_below_the_input_and_refuses_to_nest():
    item = InputFile("/in/2026/12/a.dmp", entry("/in/2026/12/a.dmp"), "/in")
    assert archive_uri(item, "/arch") == "/arch/2026/12/a.dmp"
    assert archive_uri(InputFile("/in/a.dmp", entry("/in/a.dmp"), "/in/a.dmp"), "/arch") == "/arch/a.dmp"
    assert archive_uri(InputFile("s3a://b/in/x/a.dmp", entry("s3a://b/in/x/a.dmp"), "s3a://b/in/"), "s3a://b/old") == (
        "s3a://b/old/x/a.dmp"
    )
    assert inside("/in/old", "/in") and inside("/in", "/in/") and not inside("/inbox", "/in")


def test_clean_moves_only_committed_unchanged_files_without_bad_records(tmp_path):
    src, arch = tmp_path / "in", tmp_path / "arch"
    (src / "sub").mkdir(parents=True)
    for name in ("ok.dmp", "sub/ok2.dmp", "bad.dmp", "unrecorded.dmp", "grown.dmp"):
        (src / name).write_bytes(b"x" * 10)
    listed = [InputFile(name, e, str(src)) for name, e in fs.list_entries(str(src))]
    by_name = {os.path.relpath(f.name, src): f for f in listed}
    landed = {f.name: row(Entry(f.name, False, f.size, f.entry.modified)) for f in listed}
    landed[by_name["bad.dmp"].name] = row(by_name["bad.dmp"].entry, quarantined=1)
    del landed[by_name["unrecorded.dmp"].name]
    landed[by_name["grown.dmp"].name] = row(
        Entry(by_name["grown.dmp"].name, False, 5, by_name["grown.dmp"].entry.modified)
    )

    done = clean_sources(listed, landed, mode="archive", archive_dir=str(arch))
    assert sorted(os.path.relpath(n, src) for n in done) == ["ok.dmp", "sub/ok2.dmp"]
    assert sorted(str(p.relative_to(arch)) for p in arch.rglob("*.dmp")) == ["ok.dmp", "sub/ok2.dmp"]
    assert sorted(str(p.relative_to(src)) for p in src.rglob("*.dmp")) == ["bad.dmp", "grown.dmp", "unrecorded.dmp"]

    # a move a kill interrupted after the copy: the copy is there, the source too
    (src / "ok.dmp").write_bytes((arch / "ok.dmp").read_bytes())
    again = [InputFile(n, e, str(src)) for n, e in fs.list_entries(str(src))]
    landed = {f.name: row(f.entry) for f in again}
    done = clean_sources(again, landed, mode="archive", archive_dir=str(arch), quarantined_too=True)
    assert sorted(os.path.relpath(n, src) for n in done) == ["bad.dmp", "grown.dmp", "ok.dmp", "unrecorded.dmp"]
    assert not list(src.rglob("*.dmp"))

    (src / "gone.dmp").write_bytes(b"y")
    last = [InputFile(n, e, str(src)) for n, e in fs.list_entries(str(src))]
    assert clean_sources(last, {f.name: row(f.entry) for f in last}, mode="delete") == {
        str(src / "gone.dmp"): "deleted"
    }
    assert not (src / "gone.dmp").exists()


def test_a_listing_gives_each_file_its_size_and_time(tmp_path):
    (tmp_path / "a").write_bytes(b"12345")
    (tmp_path / "_hidden").write_bytes(b"1")
    os.utime(tmp_path / "a", ns=(0, 1_700_000_000_123_456_000))
    [(name, found)] = fs.list_entries(str(tmp_path))
    assert name == str(tmp_path / "a") and found.size == 5
    assert found.modified == dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=dt.UTC)
    assert fs.stat(str(tmp_path / "a")) == found and fs.stat(str(tmp_path / "nothing")) is None


def test_a_session_is_sized_by_the_bytes_a_landing_will_read(tmp_path):
    """What `dlq-pipeline run` tells the session it will read: the inputs not landed whole and
    unchanged in the Parquet warehouse at a local path, its ``files`` table read without Spark."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dlq_pipeline.ingest.spark import landed_files_at
    from dlq_pipeline.warehouse.schemas import arrow_schema

    inbox, warehouse = tmp_path / "in", tmp_path / "wh"
    inbox.mkdir()
    for name, size in (("a.dmp", 100), ("b.dmp", 200), ("c.dmp", 400)):
        (inbox / name).write_bytes(b"x" * size)
    listed = {name: e for name, e in fs.list_entries(str(inbox))}
    a, b = listed[str(inbox / "a.dmp")], listed[str(inbox / "b.dmp")]
    rows = [(a.uri, a.size, a.modified, None, "R1", NOW, 1, 0), (b.uri, 150, b.modified, None, "R1", NOW, 1, 0)]
    (warehouse / "files").mkdir(parents=True)
    columns = [list(c) for c in zip(*rows)]
    pq.write_table(pa.Table.from_arrays(columns, schema=arrow_schema("files")), warehouse / "files" / "part-0.parquet")

    landed = landed_files_at(str(warehouse))
    assert set(landed) == {a.uri, b.uri} and landed[a.uri] == LandedFile(a.uri, 100, a.modified, None, "R1", 1, 0)
    assert bytes_to_land([str(inbox)], landed) == 600  # b grew since it landed; c is new
    assert bytes_to_land([str(inbox)], {}) == 700
    assert landed_files_at(None) == {} and landed_files_at(str(tmp_path / "none")) == {}
    (warehouse / "files" / "part-1.parquet").write_bytes(b"not parquet")
    assert landed_files_at(str(warehouse)) == {}  # a hint: an unreadable table is none
    assert bytes_to_land([str(tmp_path / "missing")], landed) is None


@pytest.mark.parametrize("status", [{"type": "FILE", "length": 7, "modificationTime": 1700000000123, "fileId": 16390}])
def test_webhdfs_gives_its_file_id_as_the_version(status):
    from dlq_pipeline.fs.webhdfs import _entry

    found = _entry("webhdfs://nn:9870/x", status)
    assert found.version == "16390" and found.size == 7
    assert found.modified == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)


@given(
    st.dictionaries(st.sampled_from([f"part-{i}.parquet" for i in range(12)]), st.sampled_from("ABCD")),
    st.sets(st.sampled_from([f"part-{i}.parquet" for i in range(16)])),
    st.sets(st.sampled_from("ABCD")),
)
def test_a_read_of_open_landings_opens_their_files_and_every_unnamed_one(recorded, present, runs):
    """Whatever the record says, no present file that may hold a message of ``runs`` is left
    out: a file named for another landing is the only one skipped."""
    from dlq_pipeline.warehouse.landings import files_to_read

    chosen = files_to_read(sorted(present), recorded, sorted(runs))
    assert chosen == sorted(chosen) and set(chosen) <= present
    assert {name for name in present if name not in chosen} == {
        name for name in present if name in recorded and recorded[name] not in runs
    }
