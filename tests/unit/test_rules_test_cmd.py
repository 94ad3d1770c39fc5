"""`dlq-pipeline rules test`: the what-if decisions, compared as whole outputs."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from dlq_pipeline.cli import cli
from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.dumps.records import DumpedMessage
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.mq.structures import DeadLetterHeader, encode_dlh
from dlq_pipeline.rules.parser import parse_rules
from dlq_pipeline.rules.whatif import OUTPUT_KEYS, decide_message
from tests.profiles import examples
from tests.support import REPO

FIXTURES = REPO / "tests" / "fixtures"
SHIPPED_RULES = REPO / "dlq_pipeline" / "data" / "rules"


def run(*args: str):
    return CliRunner().invoke(cli, ["rules", "test", *args])


def dead_letter(
    dest_q: str,
    *,
    reason: int = 2053,
    dest_qmgr: str = "QM1",
    reply_to_q: str = "",
    reply_to_qmgr: str = "",
    persistence: int = 1,
    encoding: int = 546,
    ccsid: int = 819,
    user_id: str = "app",
    body: bytes = b"hello",
) -> DumpedMessage:
    dlh = DeadLetterHeader(
        reason=reason,
        dest_q=dest_q.ljust(48),
        dest_qmgr=dest_qmgr.ljust(48),
        encoding=encoding,
        ccsid=ccsid,
        format="MQSTR   ",
    )
    md = MQMD(
        format="MQDEAD",
        encoding=encoding,
        ccsid=ccsid,
        persistence=persistence,
        reply_to_q=reply_to_q.ljust(48),
        reply_to_qmgr=reply_to_qmgr.ljust(48),
        user_id=user_id.ljust(12),
    )
    return DumpedMessage(md, encode_dlh(dlh, encoding, ccsid) + body)


def plain(text: bytes) -> DumpedMessage:
    return DumpedMessage(MQMD(format="MQSTR", encoding=546, ccsid=819), text)


def dump(path: Path, messages: list[DumpedMessage]) -> str:
    write_dump(messages, path, qmgr="QM1", queue="SYSTEM.DEAD.LETTER.QUEUE")
    return str(path)


def table(tmp_path: Path, text: str, name: str = "t.rules") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def decision(
    file: str,
    index: int,
    action: str,
    rule_line=None,
    target_q=None,
    target_qmgr=None,
    header=None,
    putaut=None,
    ignore_reason=None,
) -> dict:
    return dict(
        zip(OUTPUT_KEYS, (file, index, action, rule_line, target_q, target_qmgr, header, putaut, ignore_reason))
    )


def json_lines(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


CHAIN = """\
* A then B: cumulative RETRY
DESTQ(APP.*) ACTION(RETRY) RETRY(3)
REASON(MQRC_Q_FULL) ACTION(FWD) FWDQ(OVERFLOW) FWDQM(QM9) HEADER(NO)
"""


def test_cumulative_retry_chain_via_attempts(tmp_path):
    """A RETRY(3), B RETRY(1): attempts 0-2 choose A, 3 chooses B, 4 and more nothing."""
    rules = table(tmp_path, CHAIN)
    dlq = dump(tmp_path / "dlq.dmp", [dead_letter("APP.IN")])
    got = {n: json_lines(run(rules, "--input", dlq, "--json", "--attempts", str(n))) for n in range(6)}
    a = decision(dlq, 0, "RETRY", 2, "APP.IN", "QM1", None, "DEF")
    b = decision(dlq, 0, "FWD", 3, "OVERFLOW", "QM9", False, "DEF")
    done = decision(dlq, 0, "IGNORE", ignore_reason="retries_exhausted")
    assert got == {0: [a], 1: [a], 2: [a], 3: [b], 4: [done], 5: [done]}


def test_json_decides_every_message_in_input_order(tmp_path):
    rules = table(
        tmp_path,
        """\
INPUTQM(' ') INPUTQ(' ') RETRYINT(60) WAIT(NO)
DESTQ(KEEP.*) ACTION(IGNORE)
DESTQ(APP.*) REASON(MQRC_Q_FULL) ACTION(RETRY) RETRY(2) PUTAUT(CTX)
REPLYQM('?*') ACTION(FWD) FWDQ(&REPLYQ) FWDQM(&REPLYQM)
DESTQ(MY.Q*) ACTION(FWD) FWDQ(NUL.PADDED) FWDQM(' ')
DESTQ('STRASSE.ÄÖÜß') ACTION(FWD) FWDQ(&DESTQ) FWDQM(&DESTQM)
PERSIST(MQPER_NOT_PERSISTENT) ACTION(DISCARD)
""",
    )
    first = dump(
        tmp_path / "a.dmp",
        [
            dead_letter("APP.IN"),  # RETRY, alternate user
            dead_letter("KEEP.ME"),  # explicit IGNORE
            dead_letter("OTHER", reason=2035, reply_to_q="R.Q", reply_to_qmgr="QMR"),  # &REPLYQ/&REPLYQM
            plain(b"no header here"),  # implicit IGNORE: no_dlh
            dead_letter("OTHER", reason=2035),  # nothing matches
        ],
    )
    second = dump(
        tmp_path / "b.dmp",
        [
            dead_letter("MY.Q\0\0\0"),  # NUL padding: MY.Q* only
            dead_letter("STRASSE.ÄÖÜß", dest_qmgr="QMZ", encoding=785, ccsid=273),  # z/OS EBCDIC (German)
            dead_letter("OTHER", reason=2035, persistence=0),  # DISCARD
        ],
    )
    result = run(rules, "--input", first, "--input", second, "--json")
    assert result.exit_code == 0, result.stderr
    assert json_lines(result) == [
        decision(first, 0, "RETRY", 3, "APP.IN", "QM1", None, "CTX"),
        decision(first, 1, "IGNORE", 2),
        decision(first, 2, "FWD", 4, "R.Q", "QMR", True, "DEF"),
        decision(first, 3, "IGNORE", ignore_reason="no_dlh"),
        decision(first, 4, "IGNORE", ignore_reason="no_match"),
        decision(second, 0, "FWD", 5, "NUL.PADDED", "", True, "DEF"),
        decision(second, 1, "FWD", 6, "STRASSE.ÄÖÜß", "QMZ", True, "DEF"),
        decision(second, 2, "DISCARD", 7),
    ]
    # the table's warnings are shown as `rules check` shows them; they do not stop the test
    assert result.stderr == (
        f"{rules}:7:1: warning: the last rule is not a catch-all, so messages no rule takes "
        "stay on the DLQ; end the table with a rule such as ACTION(FWD) "
        "FWDQ(REALLY.DEAD.QUEUE) HEADER(YES) [no_catch_all]\n"
    )


def test_text_output_table_counts_and_unused_rules(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rules = table(tmp_path, CHAIN + "DESTQ(NEVER.SEEN) ACTION(DISCARD)\nACTION(FWD) FWDQ(DEADQ.MANUAL)\n")
    (tmp_path / "in").mkdir()
    dump(tmp_path / "in" / "dlq.dmp", [dead_letter("APP.IN"), dead_letter("X", reason=2035), plain(b"x")])
    result = run(rules, "--input", "in", "--attempts", "3")
    assert result.exit_code == 0
    assert (
        result.stdout
        == """\
FILE        INDEX  ACTION   RULE  TARGET / REASON
in/dlq.dmp      0  FWD         3  OVERFLOW at QM9  HEADER(NO)
in/dlq.dmp      1  IGNORE      -  left on the DLQ: retries_exhausted
in/dlq.dmp      2  IGNORE      -  left on the DLQ: no_dlh

3 messages, 3 prior attempts each: RETRY 0, FWD 1, DISCARD 0, IGNORE 2

per rule (chosen: messages it decided; matched: messages its pattern matched)
  rule  line action   chosen  matched
     1     2 RETRY         0        1
     2     3 FWD           1        1
     3     4 DISCARD       0        0
     4     5 FWD           0        2

left on the DLQ by no rule (implicit IGNORE): no_dlh 1, retries_exhausted 1

rules that matched nothing:
  line 4: DESTQ(NEVER.SEEN) ACTION(DISCARD)
"""
    )
    assert result.stderr == ""


def test_invalid_table_exits_2_with_the_check_diagnostics_before_reading(tmp_path):
    rules = table(tmp_path, "REASON(MQRC_Q_FULL) ACTION(RETRY) RETRIES(3)\nDESTQ(A) ACTION(FWD)\n")
    not_a_dump = tmp_path / "junk.bin"
    not_a_dump.write_bytes(b"\0\1\2")
    result = run(rules, "--input", str(not_a_dump), "--json")
    check = CliRunner().invoke(cli, ["rules", "check", rules])
    assert (result.exit_code, check.exit_code) == (2, 2)  # the same status for the same bad table
    assert result.stdout == ""
    assert result.stderr == check.stderr  # nothing about junk.bin: it was never read
    assert f"{rules}:1:35: error:" in result.stderr and f"{rules}:2:10: error:" in result.stderr


def test_bad_records_are_reported_and_the_rest_is_decided(tmp_path):
    rules = table(tmp_path, "ACTION(DISCARD)\n")
    good = dump(tmp_path / "dlq.dmp", [dead_letter("A"), dead_letter("B"), dead_letter("C")])
    lines = Path(good).read_text().splitlines(keepends=True)
    second_md = [n for n, line in enumerate(lines) if line.startswith("A VER")][1]
    second_x = next(n for n in range(second_md, len(lines)) if lines[n].startswith("X "))
    lines[second_x] = "X 4D5\n"  # odd-length hex: the second message cannot be read
    Path(good).write_text("".join(lines))
    other = tmp_path / "notes.txt"
    other.write_text("not a dump\n")
    result = run(rules, "--input", good, "--input", str(other), "--json")
    assert result.exit_code == 3
    assert json_lines(result) == [decision(good, 0, "DISCARD", 1), decision(good, 2, "DISCARD", 1)]
    errors = result.stderr.splitlines()
    assert len(errors) == 2
    assert errors[0].startswith(f"{good}:{second_md + 1}: odd_length_hex: ")  # where the record starts
    assert errors[1].startswith(f"{other}:1: unknown_format: ")


def test_missing_input_is_a_usage_error(tmp_path):
    rules = table(tmp_path, "ACTION(DISCARD)\n")
    result = run(rules, "--input", str(tmp_path / "nowhere.dmp"))
    assert result.exit_code == 2
    assert result.stderr == f"error: no such file or directory: '{tmp_path / 'nowhere.dmp'}'\n"


def test_real_dump_and_listings_with_ibms_example_table(real_fixtures):
    """The real MQ 10 dump has no MQDLH; the listings hold Linux, big-endian and NUL-padded
    dead letters (tests/fixtures/README.md)."""
    real = str(real_fixtures / "mq10-dmpmqmsg-stdout.dmp")
    old, new = str(FIXTURES / "amqsbcg-old.txt"), str(FIXTURES / "amqsbcg-94.txt")
    result = run(
        str(SHIPPED_RULES / "ibm-distributed-example.rules"), "--input", real, "--input", old, "--input", new, "--json"
    )
    assert json_lines(result) == [
        decision(real, 0, "IGNORE", ignore_reason="no_dlh"),
        decision(old, 0, "RETRY", 20, "DLQ.TARGET", "QM1", None, "DEF"),  # MQRC_PUT_INHIBITED
        decision(old, 1, "IGNORE", ignore_reason="no_dlh"),
        decision(new, 0, "RETRY", 20, "DLQ.TARGET", "QM1", None, "DEF"),
        decision(new, 1, "RETRY", 16, "APP.REPLY", "QMZ", None, "DEF"),  # big-endian MQRC_Q_FULL
        # MQRC_NOT_AUTHORIZED, NUL-padded header: to the reply-to queue manager's manual queue
        decision(new, 2, "FWD", 49, "DEADQ.MANUAL.INTERVENTION", "QM1", True, "DEF"),
        decision(new, 3, "IGNORE", ignore_reason="no_dlh"),
    ]
    # amqsbcg could not get message 5: reported with where it is, the rest still decided
    assert (
        result.stderr == f"{new}:219: listing_get_failed: amqsbcg could not get message 5 "
        "(CompCode 2, Reason 2009): it is not in the listing\n"
    )
    assert result.exit_code == 3


def test_real_fixtures_directory_reads_every_file(real_fixtures):
    """A directory is read as ingest reads it: its README is not a dump (a bad record)."""
    result = run(str(SHIPPED_RULES / "starter.rules"), "--input", str(real_fixtures), "--json")
    dmp = str(real_fixtures / "mq10-dmpmqmsg-stdout.dmp")
    assert json_lines(result) == [decision(dmp, 0, "IGNORE", ignore_reason="no_dlh")]
    assert result.stderr.startswith(f"{real_fixtures / 'README.md'}:1: unknown_format: ")
    assert result.exit_code == 3


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=5), st.integers(0, 20))
def test_attempts_walk_the_chain_of_matching_rules(retries, attempts):
    """§8: with every rule matching, the chosen rule is the first whose running RETRY total
    exceeds the attempts made; past the sum of all of them the message stays (implicit)."""
    text = "".join(f"DESTQ(APP.*) ACTION(RETRY) RETRY({r})\n" for r in retries)
    rules = parse_rules(text, "chain.rules")
    outcome = decide_message(rules, dead_letter("APP.IN"), "dlq.dmp", attempts)
    totals = [sum(retries[: i + 1]) for i in range(len(retries))]
    expected = next((i for i, total in enumerate(totals) if total > attempts), None)
    assert outcome.decision.rule_index == expected
    assert outcome.decision.ignore_reason == (None if expected is not None else "retries_exhausted")
    assert outcome.matched == tuple(range(len(retries)))


def test_undecodable_mqmd_bytes_are_seen_as_ingest_stores_them(tmp_path):
    """A ReplyToQ byte that is not UTF-8 in the dump lands as U+FFFD (spark/ingest.py), so
    &REPLYQ resolves to the name the pipeline would put to."""
    rules = table(tmp_path, "ACTION(FWD) FWDQ(&REPLYQ) FWDQM(&REPLYQM)\n")
    odd = dead_letter("A", reply_to_q="R\udcffQ", reply_to_qmgr="QM\udce92")  # bytes 0xFF, 0xE9
    dlq = dump(tmp_path / "dlq.dmp", [odd])
    result = run(rules, "--input", dlq, "--json")
    assert json_lines(result) == [decision(dlq, 0, "FWD", 1, "R\ufffdQ", "QM\ufffd2", True, "DEF")]


def test_configured_ingest_limit_applies_as_in_a_run(tmp_path):
    """A message over ingest.max_message_bytes is quarantined by a run, so rules test reports
    it instead of deciding it."""
    rules = table(tmp_path, "ACTION(DISCARD)\n")
    conf = tmp_path / "c.toml"
    conf.write_text("[ingest]\nmax_message_bytes = 100\n")
    dlq = dump(tmp_path / "dlq.dmp", [dead_letter("A"), plain(b"small")])
    result = run(rules, "--input", dlq, "--json", "--config", str(conf))
    assert result.exit_code == 3
    assert json_lines(result) == [decision(dlq, 1, "IGNORE", ignore_reason="no_dlh")]
    # the error names the X line that crosses the limit, not where the read block began
    content, size, at = Path(dlq).read_bytes(), 0, 0
    for line in content.split(b"\n"):
        if line.startswith(b"X ") and size <= 100:
            size, crossing = size + (len(line) - 2) // 2, at
        at += len(line) + 1
    assert size > 100
    assert result.stderr == (
        f"{dlq}:5: message_too_large: the message data reaches byte {size} at the line at "
        f"byte {crossing}, more than the 100-byte limit (ingest.max_message_bytes); the "
        "message was skipped\n"
    )


def test_text_output_is_terminal_safe(tmp_path):
    """A ReplyToQ holding ESC ]0;...BEL (it would retitle the terminal) is shown with the
    control characters replaced, as inspect shows it; --json keeps the exact value."""
    rules = table(tmp_path, "ACTION(FWD) FWDQ(&REPLYQ) HEADER(NO)\n")
    dlq = dump(tmp_path / "dlq.dmp", [dead_letter("A", reply_to_q="\x1b]0;pwned\x07Q")])
    result = run(rules, "--input", dlq)
    assert result.exit_code == 0
    row = result.stdout.splitlines()[1]
    assert row.endswith("FWD         1  .]0;pwned.Q (local resolution)  HEADER(NO)")
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert json_lines(run(rules, "--input", dlq, "--json"))[0]["target_q"] == "\x1b]0;pwned\x07Q"


def test_bad_record_lines_are_terminal_safe(tmp_path):
    rules = table(tmp_path, "ACTION(DISCARD)\n")
    name = tmp_path / "evil\x1b]0;x\x07.dmp"
    name.write_bytes(b"not a dump\n")
    result = run(rules, "--input", str(name))
    assert result.exit_code == 3
    assert (
        result.stderr == f"{tmp_path}/evil.]0;x..dmp:1: unknown_format: no '* DMPMQMSG'/'* QLOAD' header "
        "and no 'AMQSBCG0' banner near the start: neither a dmpmqmsg dump nor an amqsbcg listing\n"
    )
