import pytest

from dlq_pipeline.config import OPTIONS, defaults, load_config
from dlq_pipeline.config.options import options_table, qmgr_keys_table
from dlq_pipeline.errors import ConfigError
from dlq_pipeline.runtime.secrets import secret
from tests.support import REPO


def write(tmp_path, text):
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_defaults_without_a_file():
    config = load_config(None)
    assert config.values == defaults()
    assert config.get("storage", "format") == "parquet"


def test_shipped_example_is_valid_in_every_profile():
    for profile in ("", "local", "cluster", "databricks"):
        config = load_config(REPO / "conf" / "dlq-pipeline.toml", profile=profile)
        assert config.profile == profile
    databricks = load_config(REPO / "conf" / "dlq-pipeline.toml", profile="databricks")
    assert databricks.section("storage") == {
        "format": "delta",
        "path": "./warehouse",
        "catalog": "main",
        "schema": "dlq",
        "lock": True,
        "lease_seconds": 120,
        "lease_wait": 0,
    }
    assert databricks.get("mq", "qmgrs")["QM1"]["password_env"] == "DLQ_MQ_PASSWORD"
    cluster = load_config(REPO / "conf" / "dlq-pipeline.toml", profile="cluster")  # a Delta warehouse on HDFS
    assert (
        cluster.get("storage", "format"),
        cluster.get("storage", "path"),
        cluster.get("storage", "lock"),
        cluster.get("hdfs", "webhdfs"),
    ) == ("delta", "hdfs://NAMENODE:8020/dlq-pipeline/warehouse", False, "http://NAMENODE:9870")


def test_layers_apply_in_order(tmp_path):
    path = write(tmp_path, "[replay]\nbatch_size = 50\n[profiles.p.replay]\nbatch_size = 70\n")
    assert load_config(path).get("replay", "batch_size") == 50
    assert load_config(path, profile="p").get("replay", "batch_size") == 70
    over = load_config(path, profile="p", overrides={"replay": {"batch_size": 90}})
    assert over.get("replay", "batch_size") == 90


def test_profile_from_environment(tmp_path, monkeypatch):
    path = write(tmp_path, '[profiles.p.storage]\npath = "/x"\n')
    monkeypatch.setenv("DLQ_PIPELINE_PROFILE", "p")
    assert load_config(path).get("storage", "path") == "/x"


def test_every_problem_is_reported_at_once(tmp_path):
    path = write(
        tmp_path,
        '[replay]\nbatchsize = 3\nmax_connections = "four"\n'
        '[storage]\nformat = "orc"\n'
        "[reprot]\n"
        '[pipeline]\ntarget = "ftp:x"\n'
        '[mq.qmgrs.QM1]\npassword = "hunter2"\n',
    )
    with pytest.raises(ConfigError) as err:
        load_config(path, profile="missing")
    problems = err.value.problems
    assert problems == [
        f"{path}: unknown key 'replay.batchsize' (did you mean 'batch_size'?)",
        f"{path}: 'replay.max_connections' must be int, not str",
        f"{path}: unknown section [reprot] (did you mean 'report'?)",
        f"{path}: no profile 'missing' (profiles here: none)",
        f"{path}: 'pipeline.target' must be dry-run, dir:PATH, sim:[NAME] or mq:QMGR, not 'ftp:x'",
        f"{path}: 'storage.format' must be parquet or delta, not 'orc'",
        f"{path}: unknown key 'mq.qmgrs.QM1.password' (secrets never go in the file: "
        "name an environment variable with 'password_env')",
    ]
    assert "hunter2" not in str(err.value)


def test_bool_is_not_an_int_and_ranges_are_checked(tmp_path):
    path = write(tmp_path, "[replay]\nbatch_size = true\nmax_connections = 0\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.problems == [
        f"{path}: 'replay.batch_size' must be int, not bool",
        f"{path}: 'replay.max_connections' must be at least 1",
    ]


def test_bad_toml_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[replay\n"))
    with pytest.raises(ConfigError, match="no such configuration file"):
        load_config(tmp_path / "nope.toml")


def test_secret_reads_environment_and_never_shows_values(monkeypatch):
    monkeypatch.setenv("MY_PW", "s3cr3t")
    assert secret("MY_PW", "mq.qmgrs.QM1.password_env") == "s3cr3t"


def test_a_password_pasted_into_password_env_is_not_echoed(monkeypatch):
    """'Passw0rd_2024' passes as a variable name; when no such variable is set the error
    names the setting that holds it, never the value."""
    monkeypatch.delenv("Passw0rd_2024", raising=False)
    with pytest.raises(ConfigError) as caught:
        secret("Passw0rd_2024", "mq.qmgrs.QM1.password_env")
    assert caught.value.problems == [
        "the environment variable that 'mq.qmgrs.QM1.password_env' names is not set (its name is not "
        "shown, in case a password was put there by mistake)"
    ]
    assert "Passw0rd" not in str(caught.value)


def _table(doc: str, header: str) -> str:
    """The Markdown table of ``doc`` that starts with the line ``header``."""
    lines = doc.splitlines()
    start = lines.index(header)
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[start:end]) + "\n"


def test_the_option_tables_are_the_declarations():
    """docs/configuration.md's tables are `options_table()` and `qmgr_keys_table()`: paste
    their output there after changing an option."""
    doc = (REPO / "docs" / "configuration.md").read_text()
    assert _table(doc, "| option | type | default | allowed | meaning |") == options_table()
    assert _table(doc, "| key | meaning |") == qmgr_keys_table()
    assert [row.split(" | ")[0] for row in options_table().splitlines()[2:]] == [
        f"| `{s}.{k}`" for s, keys in OPTIONS.items() for k in keys
    ]


def test_a_declared_choice_or_range_is_checked_with_its_own_words():
    """The checks and the page's "allowed" column come from one declaration."""
    drain_mode = OPTIONS["drain"]["mode"]
    assert drain_mode.choices == ("browse", "move")
    with pytest.raises(ConfigError) as bad:
        load_config(overrides={"drain": {"mode": "peek"}, "replay": {"depth_headroom": 0.0}, "log": {"level": "Trace"}})
    assert bad.value.problems == [
        "<defaults>: 'replay.depth_headroom' must be in (0, 1]",
        "<defaults>: 'drain.mode' must be browse or move, not 'peek'",
        "<defaults>: 'log.level' must be debug, info, warning or error, not 'Trace'",
    ]
    assert OPTIONS["replay"]["depth_headroom"].range_text() == "in (0, 1]"
    assert load_config(overrides={"log": {"level": "DEBUG"}}).get("log", "level") == "DEBUG"  # any case
    from dlq_pipeline.warehouse.storage import FORMATS

    assert OPTIONS["storage"]["format"].choices == FORMATS  # the warehouse writes what the option offers


def test_lease_settings_are_checked_and_reach_the_storage_settings():
    from dlq_pipeline.config.settings import StorageSettings

    with pytest.raises(ConfigError) as bad:
        load_config(overrides={"storage": {"lease_seconds": 2, "lease_wait": -1}})
    assert bad.value.problems == [
        "<defaults>: 'storage.lease_seconds' must be at least 5 (a heartbeat renews it every third)",
        "<defaults>: 'storage.lease_wait' must be at least 0",
    ]
    with pytest.raises(ConfigError, match="'storage.lease_seconds' must be int or float, not str"):
        load_config(overrides={"storage": {"lease_seconds": "long"}})
    settings = StorageSettings.from_config(load_config(overrides={"storage": {"lease_seconds": 30, "lease_wait": 7.5}}))
    assert (settings.lease_seconds, settings.lease_wait) == (30.0, 7.5)


def test_dir_mode_is_checked_and_reaches_the_replay_and_storage_settings():
    from dlq_pipeline.config.settings import ReplaySettings, StorageSettings

    assert ReplaySettings.from_config(load_config()).dir_mode == 0o600  # today's owner-only files by default
    assert ReplaySettings.from_config(load_config(overrides={"replay": {"dir_mode": "0640"}})).dir_mode == 0o640
    assert ReplaySettings.from_config(load_config(overrides={"replay": {"dir_mode": "644"}})).dir_mode == 0o644
    for bad, problem in [
        ("rw-r-----", "must be an octal file mode such as \"0640\", not 'rw-r-----'"),
        (
            "0755",
            "'0755' must let the owner read and write, make nothing executable and let no one else write "
            '(e.g. "0600" or "0640")',
        ),
        (
            "0400",
            "'0400' must let the owner read and write, make nothing executable and let no one else write "
            '(e.g. "0600" or "0640")',
        ),
        (
            "0666",
            "'0666' must let the owner read and write, make nothing executable and let no one else write "
            '(e.g. "0600" or "0640")',
        ),
    ]:
        with pytest.raises(ConfigError) as caught:
            load_config(overrides={"replay": {"dir_mode": bad}})
        assert caught.value.problems == [f"<defaults>: 'replay.dir_mode' {problem}"]
    webhdfs = load_config(overrides={"hdfs": {"webhdfs": "http://nn:50070"}})
    assert StorageSettings.from_config(webhdfs).hdfs.webhdfs == "http://nn:50070"  # the warehouse's files go there too


def test_one_webhdfs_address_serves_the_warehouse_and_the_inputs():
    from dlq_pipeline.config.settings import HdfsSettings, IngestSettings, RunSettings

    run = RunSettings.from_config(load_config(overrides={"hdfs": {"webhdfs": "http://nn:50070"}}))
    assert run.storage.hdfs == run.ingest.hdfs == HdfsSettings(webhdfs="http://nn:50070")
    assert (run.storage.hdfs.webhdfs, run.ingest.hdfs.webhdfs) == ("http://nn:50070", "http://nn:50070")
    assert IngestSettings().hdfs.webhdfs == ""


def test_async_put_is_on_by_default_and_can_be_turned_off():
    from dlq_pipeline.config.settings import ReplaySettings

    assert ReplaySettings.from_config(load_config()).async_put is True
    assert ReplaySettings.from_config(load_config(overrides={"replay": {"async_put": False}})).async_put is False
    with pytest.raises(ConfigError, match="'replay.async_put' must be bool, not str"):
        load_config(overrides={"replay": {"async_put": "no"}})


@pytest.mark.parametrize("section", ["pipeline", "drain"])
def test_a_live_source_is_mq_or_sim_in_either_section(section):
    assert load_config(overrides={section: {"source": "sim:QM1"}}).get(section, "source") == "sim:QM1"
    with pytest.raises(ConfigError) as raised:
        load_config(overrides={section: {"source": "dir:/tmp/dlq"}})
    assert raised.value.problems == [f"<defaults>: '{section}.source' must be mq:QMGR or sim:NAME, not 'dir:/tmp/dlq'"]


def test_the_configuration_knows_which_options_were_given(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[replay]\nbatch_size = 200\n[profiles.p]\nreport = { top = 3 }\n")
    config = load_config(path, profile="p", overrides={"storage": {"path": "./warehouse"}})
    assert config.given == {"replay.batch_size", "report.top", "storage.path"}  # default values, but given
    assert config.is_given("storage", "path") and not config.is_given("storage", "format")
    assert load_config().given == frozenset()


def test_the_dump_time_zone_is_an_iana_name_and_reaches_the_ingest_settings(tmp_path):
    from click.testing import CliRunner

    from dlq_pipeline.cli import cli
    from dlq_pipeline.config.settings import IngestSettings

    assert IngestSettings.from_config(load_config()).dump_time_zone == "UTC"
    zoned = load_config(overrides={"ingest": {"dump_time_zone": "Europe/Berlin"}})
    assert IngestSettings.from_config(zoned).dump_time_zone == "Europe/Berlin"
    conf = write(tmp_path, '[ingest]\ndump_time_zone = "CEST"\n')
    with pytest.raises(ConfigError) as bad:
        load_config(conf)
    assert bad.value.problems == [
        f"{conf}: 'ingest.dump_time_zone': 'CEST' is not an IANA time zone name such as 'Europe/Berlin' or 'UTC'"
    ]
    result = CliRunner().invoke(cli, ["ingest", "--config", str(conf), str(tmp_path)])
    assert result.exit_code == 2 and "'ingest.dump_time_zone': 'CEST' is not an IANA time zone name" in result.output
