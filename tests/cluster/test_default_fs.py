"""A scheme-less storage.path when Spark's fs.defaultFS is HDFS (the bed's): Spark would put
the tables on HDFS while the lock, replay's checkpoints and the run summaries use the local
directory of that name, so the command stops with exit 2 naming both and the URIs to write
(`dlq_pipeline.runtime.paths.default_fs_problem`), before any table is written."""

from __future__ import annotations

import getpass

from tests.cluster.runs import cli, write_config


def test_a_scheme_less_warehouse_with_hdfs_as_default_fs_is_exit_2_naming_both(bed, dumps, tmp_path):
    config = write_config(
        tmp_path / "hdfs-default.toml",
        {
            "spark": {"master": "local[1]", "conf": {"spark.hadoop.fs.defaultFS": bed.hdfs.uri}},
            "storage": {"path": "./warehouse"},
        },
    )
    done = cli(["ingest", "--config", str(config), str(dumps)], bed.spark_env(), tmp_path, ok=(2,))
    on_hdfs = f"{bed.hdfs.uri}/user/{getpass.getuser()}/warehouse"
    local = (tmp_path / "warehouse").as_posix()
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: storage.path './warehouse' has no scheme and Spark's default file system (fs.defaultFS) is "
        f"{bed.hdfs.uri}: Spark would keep the tables in {on_hdfs} while the lock, replay's checkpoints and the "
        f'run summaries would use the local directory {local}. Write the full URI: storage.path = "{on_hdfs}" '
        f'(on HDFS: storage.format = "delta", storage.lock = false) or "file://{local}" (a directory every '
        "node mounts)"
    )
    assert "Traceback" not in done.stderr
    assert not [f for f in bed.hdfs.list("/") if f["pathSuffix"] == "user"]  # nothing written on HDFS
    assert not (tmp_path / "warehouse" / "messages").exists()
