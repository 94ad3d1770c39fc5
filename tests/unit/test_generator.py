"""The realistic DLQ generator: deterministic, covers its mix, and every message it makes is
what it says it is (read back from the dump byte for byte, decoded to the MQDLH encoded)."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq_pipeline.cli import cli
from dlq_pipeline.dumps.dmpmqmsg_reader import read_dump, read_dump_info
from dlq_pipeline.dumps.generator import (
    DEFAULT_END,
    DEFAULT_SPAN,
    FLEET,
    HUB_QMGR,
    HUB_QUEUE,
    PAYLOADS,
    PLATFORMS,
    generate,
    generate_messages,
    parse_mix,
    split_counts,
    write_generated,
)
from dlq_pipeline.dumps.records import RecordError
from dlq_pipeline.mq import codepages
from dlq_pipeline.mq.dlh_decoder import decode_dlh
from dlq_pipeline.mq.structures import DLH_LENGTH
from tests.profiles import examples

SMALL = 32 * 1024  # keeps samples fast; the size tests use the real default

# What each platform's queue manager writes: (MQMD Encoding, CCSIDs, StrucId + Version bytes).
PLATFORM_HEADERS = {
    "zos": (785, {500, 37, 1047}, bytes.fromhex("C4D3C840 00000001")),
    "aix": (273, {819}, bytes.fromhex("444C4820 00000001")),
    "linux": (546, {1208, 819}, bytes.fromhex("444C4820 01000000")),
    "windows": (546, {1252}, bytes.fromhex("444C4820 01000000")),
}


@pytest.fixture(scope="module")
def sample():
    """A moderate sample with the default mix."""
    return list(generate(800, seed=20261121, max_size=SMALL, nul_padded_rate=0.05))


def _stamp(date: str, time: str) -> dt.datetime:
    return dt.datetime.strptime(date + time[:6], "%Y%m%d%H%M%S") + dt.timedelta(milliseconds=10 * int(time[6:8]))


def _read_all(paths) -> list:
    records = [r for path in paths for r in read_dump(path)]
    assert not [r for r in records if isinstance(r, RecordError)]
    return records


# --- determinism --------------------------------------------------------------------------


def test_same_seed_same_bytes_and_other_seed_other_bytes(tmp_path):
    first = write_generated(tmp_path / "a", 120, 7, files=3, max_size=SMALL)
    again = write_generated(tmp_path / "b", 120, 7, files=3, max_size=SMALL)
    other = write_generated(tmp_path / "c", 120, 8, files=3, max_size=SMALL)
    assert [p.name for p in first] == ["dlq-0000.dmp", "dlq-0001.dmp", "dlq-0002.dmp"]
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again]
    assert all(a.read_bytes() != c.read_bytes() for a, c in zip(first, other))


def test_generation_does_not_depend_on_global_random_state():
    import random

    random.seed(1)
    first = [(m.md, m.data) for m in generate_messages(40, 3, max_size=SMALL)]
    random.seed(2)
    second = [(m.md, m.data) for m in generate_messages(40, 3, max_size=SMALL)]
    assert first == second


# --- the mix ----------------------------------------------------------------------------------


def test_every_platform_and_payload_is_present(sample):
    assert {g.platform for g in sample} == set(PLATFORMS)
    assert {g.payload for g in sample} == set(PAYLOADS)
    assert {g.home_qmgr for g in sample} == {qm.name for qm in FLEET}


def test_the_common_reasons_are_present_and_q_full_leads(sample):
    reasons = Counter(g.dlh.reason for g in sample if g.dlh)
    assert {2053, 2085, 2035, 2051, 2030, 2189, 2087, 2052, 2048, 265, 258, 2218, 2362} <= set(reasons)
    assert reasons.most_common(1)[0][0] == 2053


def test_each_platform_writes_its_own_encoding_ccsid_and_byte_order(sample):
    for g in sample:
        encoding, ccsids, head = PLATFORM_HEADERS[g.platform]
        md = g.message.md
        assert (md.encoding, md.ccsid in ccsids) == (encoding, True), g
        if g.dlh is not None:
            assert g.message.data[:8] == head
            assert md.format == "MQDEAD  "


def test_zos_dead_letters_keep_the_mqdlh_raw_ebcdic_with_readable_mqmd(sample):
    zos = [g for g in sample if g.platform == "zos" and g.dlh is not None]
    assert zos
    for g in zos:
        md, data = g.message.md, g.message.data
        assert data[:4] == codepages.encode("DLH ", md.ccsid)
        assert data[12:60] == codepages.encode(g.dlh.dest_q, md.ccsid)
        assert md.put_appl_name.isascii() and md.user_id.isascii()


def test_header_chains_are_the_ones_generated(sample):
    chains = Counter(g.chain for g in sample if g.dlh is not None)
    assert {
        ("MQSTR",),
        ("",),
        ("MQHRF2", "MQSTR"),
        ("MQXMIT", "MQSTR"),
        ("MQXMIT", ""),
        ("MQXMIT", "MQHRF2", "MQSTR"),
        ("MQTRIG",),
    } == set(chains)
    for g in sample:
        expected = {
            "jms": {("MQHRF2", "MQSTR")},
            "trigger": {("MQTRIG",)},
            "text": {("MQSTR",)},
            "binary": {("",)},
        }.get(g.payload)
        if expected:
            assert g.chain in expected
        if g.payload == "xmit":
            assert g.chain[0] == "MQXMIT"


def test_mix_can_select_one_platform_and_one_payload():
    messages = list(
        generate(
            60,
            5,
            {
                "aix": 0,
                "linux": 0,
                "windows": 0,
                "text": 0,
                "binary": 0,
                "jms": 0,
                "trigger": 0,
                "no_dlh": 0,
                "empty": 0,
            },
            max_size=SMALL,
        )
    )
    assert {(g.platform, g.payload) for g in messages} == {("zos", "xmit")}
    assert all(g.message.md.encoding == 785 for g in messages)


def test_parse_mix():
    assert parse_mix("zos=5, jms=0,") == {"zos": 5.0, "jms": 0.0}
    assert parse_mix("") == {}
    for bad, words in [
        ("zos", "NAME=WEIGHT"),
        ("os2=1", "unknown mix name"),
        ("zos=x", "not a number"),
        ("zos=-1", ">= 0"),
    ]:
        with pytest.raises(ValueError, match=words):
            parse_mix(bad)


def test_an_axis_with_only_zero_weights_is_refused():
    with pytest.raises(ValueError, match="every platform weight is 0"):
        generate(1, 1, {name: 0 for name in PLATFORMS})
    with pytest.raises(ValueError, match="every payload weight is 0"):
        generate(1, 1, {name: 0 for name in PAYLOADS})
    with pytest.raises(ValueError, match="max_size"):
        generate(1, 1, max_size=100)


# --- every message is what it says it is -----------------------------------------------------


def _check_decodes_as_generated(g) -> None:
    md, data = g.message.md, g.message.data
    result = decode_dlh(data, md.encoding, md.ccsid, md.format)
    if g.dlh is None:
        assert (result.has_dlh, result.problem) == (False, g.problem)
        return
    assert (result.has_dlh, result.problem, result.dlh, result.chain) == (True, None, g.dlh, g.chain)
    assert ("nul_padded:dest_q" in result.flags) == g.nul_padded
    assert not [f for f in result.flags if f.startswith(("unknown_ccsid", "ccsid_mismatch", "chain_stopped"))]


def test_every_message_reads_back_from_its_dump_and_decodes_to_the_encoded_dlh(tmp_path):
    options = dict(max_size=SMALL, nul_padded_rate=0.05)
    generated = list(generate(500, 11, **options))
    paths = write_generated(tmp_path, 500, 11, files=4, **options)
    read = _read_all(paths)
    assert len(read) == len(generated)
    for g, back in zip(generated, read):
        assert back.same_message(g.message)
        _check_decodes_as_generated(g)
    assert {g.platform for g in generated if g.dlh} == set(PLATFORMS)


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**64), count=st.integers(min_value=0, max_value=25))
def test_any_seed_round_trips_and_decodes(tmp_path_factory, seed, count):
    directory = tmp_path_factory.mktemp("gen")
    generated = list(generate(count, seed, max_size=8192, nul_padded_rate=0.2))
    (path,) = write_generated(directory, count, seed, max_size=8192, nul_padded_rate=0.2)
    read = _read_all([path])
    assert [r.index for r in read] == list(range(count))
    assert all(back.same_message(g.message) for g, back in zip(generated, read))
    assert len(read) == count
    for g in generated:
        _check_decodes_as_generated(g)


def test_nul_padded_destinations_are_flagged_and_really_nul_padded(sample):
    padded = [g for g in sample if g.nul_padded]
    assert padded and len(padded) < len(sample) // 5
    for g in padded:
        assert g.dlh.dest_q.endswith("\x00") and g.message.data[12 + 47] == 0
        result = decode_dlh(g.message.data, g.message.md.encoding, g.message.md.ccsid)
        assert "nul_padded:dest_q" in result.flags
        assert g.dlh.put_appl_type != 7  # an application wrote it, not the queue manager


def test_messages_without_a_dlh_have_each_problem(sample):
    without = [g for g in sample if g.dlh is None]
    assert Counter(g.problem for g in without).keys() == {"bad_strucid", "too_short", "bad_version"}
    empty = [g for g in sample if g.payload == "empty"]
    assert empty and all(g.message.data == b"" and g.problem == "too_short" for g in empty)


# --- realistic descriptors -------------------------------------------------------------------


def test_times_dlh_after_original_and_arrivals_in_order_within_the_span(sample):
    start, end = DEFAULT_END - DEFAULT_SPAN, DEFAULT_END
    arrivals = []
    for g in sample:
        md = g.message.md
        original = _stamp(md.put_date, md.put_time)
        if g.dlh is None:
            arrivals.append(original)
            continue
        dead_lettered = _stamp(g.dlh.put_date, g.dlh.put_time)
        assert original < dead_lettered
        arrivals.append(dead_lettered)
    assert arrivals == sorted(arrivals) and len(set(arrivals)) == len(arrivals)
    assert start <= arrivals[0] and arrivals[-1] < end


def test_msg_ids_are_unique_and_made_like_queue_managers_make_them(sample):
    ids = [g.message.md.msg_id for g in sample]
    assert len(set(ids)) == len(ids)
    names = {qm.name for qm in FLEET}
    for msg_id in ids:
        if msg_id.startswith(b"AMQ "):
            assert msg_id[4:16].decode("ascii").rstrip() in names
        else:
            assert msg_id[:4] == codepages.encode("CSQ ", 500)
            assert codepages.decode(msg_id[4:16], 500)[0].rstrip() in names


def test_requests_carry_reply_to_queues_some_to_aaaa_gateways(sample):
    requests = [g.message.md for g in sample if g.message.md.msg_type == 1]
    assert requests and all(md.reply_to_q.strip() for md in requests)
    reply_qmgrs = {md.reply_to_qmgr.strip() for md in requests}
    assert "" in reply_qmgrs and any(q.startswith("AAAA.") for q in reply_qmgrs)
    assert {g.message.md.persistence for g in sample} == {0, 1}
    assert {g.message.md.msg_type for g in sample} == {1, 2, 4, 8}


def test_qmgr_dead_letters_name_the_queue_manager_or_a_channel_program(sample):
    writers = {
        (g.dlh.put_appl_type, g.dlh.put_appl_name.strip(), g.home_qmgr)
        for g in sample
        if g.dlh is not None and g.dlh.put_appl_type == 7
    }
    assert any(name == home for _, name, home in writers)
    assert any(name in ("amqrmppa", "amqrmppa.exe", home + "CHIN") for _, name, home in writers)


def test_sizes_are_long_tailed_from_zero_to_megabytes_and_capped():
    binary_only = {name: 0 for name in PAYLOADS if name != "binary"}
    cap = 3 * 1024 * 1024
    sizes = sorted(len(m.data) - DLH_LENGTH for m in generate_messages(1500, 2, binary_only, max_size=cap))
    assert sizes[0] == 0 and sizes[len(sizes) // 2] < 4096
    assert sizes[-1] > 256 * 1024 and sizes[-1] <= cap - DLH_LENGTH
    small = [len(m.data) for m in generate_messages(300, 2, max_size=4096)]
    assert max(small) <= 4096


def test_dumps_have_headers_and_created_stamps_after_their_last_message(tmp_path):
    paths = write_generated(tmp_path, 90, 4, files=3, max_size=SMALL)
    counts = split_counts(90, 3)
    assert counts == [30, 30, 30]
    generated = iter(generate(90, 4, max_size=SMALL))
    for path, n in zip(paths, counts):
        info = read_dump_info(path)
        assert (info.tool, info.qmgr, info.queue) == ("DMPMQMSG", HUB_QMGR, HUB_QUEUE)
        created = dt.datetime.strptime(info.created, "%a %b %d %H:%M:%S %Y")
        for _ in range(n):
            g = next(generated)
            md = g.message.md
            date, time = (g.dlh.put_date, g.dlh.put_time) if g.dlh else (md.put_date, md.put_time)
            assert _stamp(date, time) < created
    assert split_counts(7, 3) == [3, 2, 2]


# --- the command -------------------------------------------------------------------------------


def test_generate_command_writes_and_reports(tmp_path):
    out = tmp_path / "dumps"
    result = CliRunner().invoke(
        cli,
        [
            "generate",
            "--out",
            str(out),
            "--count",
            "25",
            "--seed",
            "3",
            "--files",
            "2",
            "--max-size",
            "16K",
            "--mix",
            "zos=1,aix=0",
        ],
    )
    assert result.exit_code == 0, result.output
    paths = sorted(out.iterdir())
    assert [p.name for p in paths] == ["dlq-0000.dmp", "dlq-0001.dmp"]
    assert result.output.splitlines() == [
        f"{paths[0]}  13 messages  {paths[0].stat().st_size} bytes",
        f"{paths[1]}  12 messages  {paths[1].stat().st_size} bytes",
        f"wrote 25 messages (seed 3) in 2 file(s) under {out}",
    ]
    expected = list(generate_messages(25, 3, {"zos": 1, "aix": 0}, max_size=16 * 1024))
    read = _read_all(paths)
    assert all(a.same_message(b) for a, b in zip(expected, read)) and len(read) == 25


@pytest.mark.parametrize(
    "args, words",
    [
        (["--mix", "os2=1"], "unknown mix name"),
        (["--max-size", "12Q"], "is not a size"),
        (["--max-size", "100"], "max_size must be"),
    ],
)
def test_generate_command_refuses_bad_options(tmp_path, args, words):
    result = CliRunner().invoke(cli, ["generate", "--out", str(tmp_path / "x"), "--count", "3", "--seed", "1", *args])
    assert result.exit_code == 2 and words in result.output
    assert not (tmp_path / "x").exists()


# --- arrival patterns: a steady trickle plus storms --------------------------------------------


def _arrival(g) -> dt.datetime:
    md = g.message.md
    return _stamp(g.dlh.put_date, g.dlh.put_time) if g.dlh else _stamp(md.put_date, md.put_time)


def test_storms_are_bursts_of_their_reason_on_their_queue_inside_their_window():
    from dlq_pipeline.dumps.generator import STORMS
    from dlq_pipeline.mq.constants import reason_name
    from dlq_pipeline.report.arrivals import timeline

    generated = list(generate(6000, seed=4, max_size=4096))
    start = DEFAULT_END - DEFAULT_SPAN
    for storm in STORMS:
        members = [g for g in generated if g.storm == storm.name]
        first = start + DEFAULT_SPAN * storm.at
        assert abs(len(members) - storm.share * 6000) < 4 * (storm.share * 6000) ** 0.5
        for g in members:
            assert first <= _arrival(g) < first + dt.timedelta(hours=storm.hours)
            assert (g.dlh.reason, g.dlh.dest_q.rstrip(), g.dlh.dest_qmgr.rstrip(), g.home_qmgr) == (
                storm.reason,
                storm.dest_q,
                storm.home,
                storm.home,
            )
            assert g.message.md.reply_to_qmgr.rstrip() in dict(storm.origins)  # the sender, not the hub
    rows = [
        {
            "at": _arrival(g),
            "reason": reason_name(g.dlh.reason) if g.dlh else "(no MQDLH)",
            "qmgr": g.message.md.reply_to_qmgr.rstrip(),
            "dest": "",
            "count": 1,
        }
        for g in generated
    ]
    found = timeline(rows)
    assert found["bucket"] == "hour"
    assert [b["reasons"][0]["reason"] for b in found["bursts"]] == ["MQRC_UNKNOWN_OBJECT_NAME", "MQRC_Q_FULL"]
    q_full = found["bursts"][1]
    assert q_full["hours"] >= 3 and q_full["qmgrs"][0]["qmgr"] == "CSQ1"


def test_a_mix_without_text_messages_has_no_storms():
    assert not [g for g in generate(300, 2, {"text": 0}, max_size=SMALL) if g.storm]


def test_storms_can_be_chosen_even_one_that_is_most_of_the_dlq():
    import dataclasses

    from dlq_pipeline.dumps.generator import STORMS

    q_full = dataclasses.replace(STORMS[0], share=0.85)
    made = list(generate(2000, seed=3, max_size=4096, storms=(q_full,)))
    assert abs(sum(g.storm == "q_full" for g in made) - 1700) < 4 * 1700**0.5
    assert {g.storm for g in made} == {"q_full", None}
    assert not [g for g in generate(300, 3, max_size=4096, storms=()) if g.storm]
    # the default is STORMS: the same bytes as without the option
    assert [g.message for g in generate(50, 9, max_size=4096, storms=STORMS)] == [
        g.message for g in generate(50, 9, max_size=4096)
    ]
    with pytest.raises(ValueError, match="storm shares"):
        generate(10, 1, storms=(q_full, q_full))
