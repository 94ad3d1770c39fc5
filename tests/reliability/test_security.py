"""Secrets stay in the environment, TLS settings are checked, output is owner-only, message
bodies can be kept out of what is shown."""

from __future__ import annotations

import logging
import stat
import traceback
from pathlib import Path

import pytest
from click.testing import CliRunner

from dlq_pipeline.cli import cli
from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import PrivacySettings, RunSettings
from dlq_pipeline.dumps.dmpmqmsg_writer import write_dump
from dlq_pipeline.dumps.generator import write_generated
from dlq_pipeline.errors import ConfigError
from dlq_pipeline.mq.client import MQClientMissing
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.report.redact import REDACTED, payloads_visible, redact_preview, redact_snippet
from dlq_pipeline.rules.parser import parse_rules

PASSWORD = "Pw-9f3e1c-never-shown"
STASH = "Stash-77a0b2-never-shown"
QM1 = {
    "channel": "APP.SVRCONN",
    "conn_name": "mq1(1414)",
    "user": "app",
    "password_env": "DLQ_TEST_MQ_PW",
    "cipher_spec": "ANY_TLS13_OR_HIGHER",
    "key_repository": "/keys/client",
    "key_stash_password_env": "DLQ_TEST_MQ_STASH",
}


def problems(qm: dict) -> list[str]:
    try:
        load_config(overrides={"mq": {"qmgrs": {"QM1": qm}}})
    except ConfigError as exc:
        return [p.split(": ", 1)[1] for p in exc.problems]
    return []


@pytest.mark.parametrize(
    "change,expected",
    [
        ({}, []),
        (
            {"key_repository": None},
            [
                "'mq.qmgrs.QM1.cipher_spec' needs key_repository (the TLS key repository stem) too",
                "'mq.qmgrs.QM1.key_stash_password_env' is set but no key_repository",
            ],
        ),
        (
            {"cipher_spec": None},
            ["'mq.qmgrs.QM1.key_repository' is set but no cipher_spec: the channel would not use TLS"],
        ),
        (
            {"cipher_spec": "TLS_RSA_WITH_3DES_EDE_CBC_SHA"},
            [
                "'mq.qmgrs.QM1.cipher_spec' TLS_RSA_WITH_3DES_EDE_CBC_SHA is deprecated as insecure: "
                "use ANY_TLS13_OR_HIGHER, "
                "ANY_TLS12_OR_HIGHER or a TLS 1.2/1.3 CipherSpec"
            ],
        ),
        (
            {"cipher_spec": "any tls"},
            [
                "'mq.qmgrs.QM1.cipher_spec' 'any tls' is not a CipherSpec name "
                "(e.g. ANY_TLS13_OR_HIGHER, TLS_AES_256_GCM_SHA384)"
            ],
        ),
        (
            {"key_repository": "/keys/client.kdb"},
            [
                "'mq.qmgrs.QM1.key_repository' is the stem without the extension "
                "(e.g. /var/mqm/ssl/client for client.kdb)"
            ],
        ),
        (
            {"password_env": None},
            ["'mq.qmgrs.QM1' names a user but no password_env (the variable that holds the password)"],
        ),
        ({"user": None}, ["'mq.qmgrs.QM1.password_env' is set but no user: the password would not be sent"]),
    ],
)
def test_tls_and_credential_settings_are_checked_together(change, expected):
    qm = {k: v for k, v in {**QM1, **change}.items() if v is not None}
    assert problems(qm) == expected


def test_a_secret_pasted_where_a_variable_name_belongs_is_refused_without_showing_it():
    got = problems({**QM1, "password_env": PASSWORD + " !", "key_stash_password_env": STASH + "$"})
    assert len(got) == 2 and all("not the secret itself" in p for p in got)
    assert not any(PASSWORD in p or STASH in p for p in got)
    with pytest.raises(ConfigError) as err:
        load_config(overrides={"mq": {"qmgrs": {"QM1": {**QM1, "password": PASSWORD}}}})
    assert PASSWORD not in str(err.value) and "password_env" in str(err.value)


def test_redaction_helpers():
    assert payloads_visible(PrivacySettings.from_config(load_config())) and not payloads_visible(
        PrivacySettings.from_config(load_config(overrides={"privacy": {"redact_payloads": True}}))
    )
    assert redact_preview({"offset": 172, "hex": "C1C2", "text": "AB"}) == {"offset": 172, "hex": "", "text": REDACTED}
    assert [redact_snippet(s) for s in ("X 4A6F686E20446F65", 'S "John Doe"', "A USR john", "garbage", None)] == [
        f"X {REDACTED}",
        f"S {REDACTED}",
        f"A USR {REDACTED}",
        REDACTED,
        None,
    ]


def test_inspect_redact_shows_no_message_data(tmp_path):
    md = MQMD(format="MQSTR   ", ccsid=819)
    secret_body = b"Name: John Doe, IBAN DE89370400440532013000"
    path = tmp_path / "pii.dmp"
    write_dump([(md, secret_body), (md, b"second")], path)
    lines = path.read_bytes().split(b"\n")
    x = [i for i, line in enumerate(lines) if line.startswith(b"X ")][-1]
    lines[x] += b"F"  # the second message becomes a bad record
    path.write_bytes(b"\n".join(lines))
    shown = CliRunner().invoke(cli, ["inspect", str(path)])
    assert "John Doe" in shown.stdout  # without --redact the preview shows the body
    redacting = tmp_path / "privacy.toml"
    redacting.write_text("[privacy]\nredact_payloads = true\n")
    for args in (
        ["inspect", "--redact", str(path)],
        ["inspect", "--redact", "--json", str(path)],
        ["inspect", "--config", str(redacting), str(path)],  # the configuration asks it of every viewer
    ):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 3
        everything = result.stdout + result.stderr
        assert "John" not in everything and secret_body.hex().upper()[:20] not in everything
        assert REDACTED in result.stdout and "odd_length_hex" in result.stderr


@pytest.mark.spark
def test_redact_frame_for_notebooks(spark):
    from dlq_pipeline.report.spark import redact_frame

    df = spark.createDataFrame(
        [(b"John Doe", "X 4A6F686E", "k1"), (None, None, "k2")], "data binary, snippet string, message_key string"
    )
    assert [tuple(r) for r in redact_frame(df).collect()] == [(None, f"X {REDACTED}", "k1"), (None, None, "k2")]
    assert redact_frame(df, enabled=False).collect() == df.collect()


def _owner_only(root: Path) -> list[str]:
    """Paths under ``root`` that others could read (group/other bits set)."""
    bad = []
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & 0o077:
            bad.append(f"{oct(mode)} {path.relative_to(root)}")
    return bad


@pytest.mark.spark
def test_secrets_never_leak_and_output_is_owner_only(spark, tmp_path, monkeypatch, caplog, capfd):
    """A run with a password in the environment: a sim run (owner-only files everywhere:
    tables, summaries, the sim database, dir: dumps) and an mq: run that fails because this
    machine has no MQ client. The password appears in no log, table, summary, file or error."""
    from dlq_pipeline.pipeline import run_pipeline

    monkeypatch.setenv("DLQ_TEST_MQ_PW", PASSWORD)
    monkeypatch.setenv("DLQ_TEST_MQ_STASH", STASH)
    caplog.set_level(logging.DEBUG, logger="dlq_pipeline")
    inputs = [str(p) for p in write_generated(tmp_path / "in", 30, seed=8, max_size=2048)]
    warehouse = tmp_path / "wh"
    config = load_config(overrides={"storage": {"path": str(warehouse)}, "mq": {"qmgrs": {"QM1": QM1}}})
    table = parse_rules("ACTION(FWD) FWDQ(HOLD) HEADER(YES)\n", "t.rules")
    run_pipeline(spark, RunSettings.from_config(config), table, inputs=inputs, target="sim:", run_id="SIMRUN")
    config2 = load_config(overrides={"storage": {"path": str(tmp_path / "wh2")}})
    run_pipeline(
        spark, RunSettings.from_config(config2), table, inputs=inputs, target=f"dir:{tmp_path / 'out'}", run_id="DIRRUN"
    )
    with pytest.raises(MQClientMissing) as err:
        run_pipeline(spark, RunSettings.from_config(config), table, inputs=inputs, target="mq:QM1", run_id="MQRUN")
    text = "".join(traceback.format_exception(err.value)) + caplog.text + "".join(capfd.readouterr())
    assert "ibmmq" in str(err.value) and PASSWORD not in text and STASH not in text
    for path in [*warehouse.rglob("*"), *(tmp_path / "wh2").rglob("*"), *(tmp_path / "out").rglob("*")]:
        if path.is_file():
            content = path.read_bytes()
            assert PASSWORD.encode() not in content and STASH.encode() not in content, path
    assert _owner_only(warehouse) == _owner_only(tmp_path / "wh2") == _owner_only(tmp_path / "out") == []
    assert sorted(p.name for p in (tmp_path / "out" / "DIRRUN" / "@local").iterdir()) == ["HOLD.dmp"]
