"""Settings built at the edge from a validated configuration (`dlq_pipeline.config.settings`)."""

from __future__ import annotations

import dataclasses

import pytest

from dlq_pipeline.config import load_config
from dlq_pipeline.config.settings import (
    ClassifySettings,
    DrainSettings,
    IngestSettings,
    LogSettings,
    PrivacySettings,
    ReplaySettings,
    ReportSettings,
    RunSettings,
    StorageSettings,
    mq_qmgrs,
)
from dlq_pipeline.errors import ConfigError

STAGE_SETTINGS = [
    StorageSettings,
    IngestSettings,
    ClassifySettings,
    ReplaySettings,
    DrainSettings,
    ReportSettings,
    PrivacySettings,
    LogSettings,
]


@pytest.mark.parametrize("kind", STAGE_SETTINGS + [RunSettings], ids=lambda k: k.__name__)
def test_the_defaults_are_the_configurations_defaults(kind):
    """A library function called without settings behaves as a command run without a file."""
    assert kind.from_config(load_config()) == kind()


@pytest.mark.parametrize("kind", STAGE_SETTINGS + [RunSettings], ids=lambda k: k.__name__)
def test_settings_are_frozen(kind):
    settings = kind()
    name = dataclasses.fields(kind)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(settings, name, getattr(settings, name))


def test_every_value_comes_from_its_section():
    qm1 = {"channel": "APP.SVRCONN", "conn_name": "mq(1414)"}
    config = load_config(
        overrides={
            "storage": {"format": "delta", "path": "/dbfs/wh", "catalog": "main", "schema": "dlq", "lock": False},
            "ingest": {"split_bytes": 4096, "max_line_length": 1000, "max_message_bytes": 5000},
            "classify": {"retry_interval": 30},
            "replay": {
                "batch_size": 7,
                "rate_limit": 2,
                "breaker_threshold": 9,
                "depth_check": True,
                "depth_headroom": 0.5,
                "reconnect_attempts": 1,
                "reconnect_backoff": 0.25,
                "max_connections": 3,
            },
            "drain": {"source": "sim:QM1", "mode": "move", "queue": "MY.DLQ", "qmgr": "QM1", "batch_size": 11},
            "report": {"top": 4, "html": "r.html"},
            "privacy": {"redact_payloads": True},
            "log": {"format": "json", "level": "info"},
            "metrics": {"textfile": "/tmp/m.prom"},
            "mq": {"qmgrs": {"QM1": qm1}},
        }
    )
    run = RunSettings.from_config(config)
    assert run == RunSettings(
        storage=StorageSettings(format="delta", path="/dbfs/wh", catalog="main", schema="dlq", lock=False),
        ingest=IngestSettings(split_bytes=4096, max_line_length=1000, max_message_bytes=5000),
        classify=ClassifySettings(retry_interval=30),
        replay=ReplaySettings(
            batch_size=7,
            rate_limit=2.0,
            breaker_threshold=9,
            depth_check=True,
            depth_headroom=0.5,
            reconnect_attempts=1,
            backoff_initial=0.25,
            max_connections=3,
        ),
        drain=DrainSettings(source="sim:QM1", mode="move", queue="MY.DLQ", qmgr="QM1", batch_size=11),
        qmgrs={"QM1": qm1},
        metrics_textfile="/tmp/m.prom",
    )
    assert ReportSettings.from_config(config) == ReportSettings(top=4, html="r.html")
    assert PrivacySettings.from_config(config) == PrivacySettings(redact_payloads=True)
    assert LogSettings.from_config(config) == LogSettings(format="json", level="info")
    assert mq_qmgrs(config) == {"QM1": qm1}


def test_retry_interval_not_set_keeps_the_rules_tables_and_a_negative_one_is_refused():
    assert ClassifySettings.from_config(load_config()) == ClassifySettings(retry_interval=None)
    assert ClassifySettings.from_config(load_config(overrides={"classify": {"retry_interval": 0}})) == ClassifySettings(
        retry_interval=0
    )
    with pytest.raises(ConfigError) as bad:
        load_config(overrides={"classify": {"retry_interval": -1}})
    assert bad.value.problems == ["<defaults>: 'classify.retry_interval' must be at least 0"]


def test_blank_catalog_and_schema_mean_tables_by_path():
    assert StorageSettings.from_config(
        load_config(overrides={"storage": {"catalog": "", "schema": ""}})
    ) == StorageSettings(catalog=None, schema=None)
