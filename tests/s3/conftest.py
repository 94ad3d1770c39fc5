"""The `s3` tier: the pipeline against a real S3 API (tests/s3/server.py), each run its own
`dlq-pipeline` process given nothing but the AWS SDKs' standard variables. Needs Hadoop's
S3A connector in the jar cache (`make s3a-jars`)."""

from __future__ import annotations

import pytest

from dlq_pipeline.engine import s3a
from tests.s3.server import S3Server, start


@pytest.fixture(scope="session")
def s3(tmp_path_factory) -> S3Server:
    if not s3a.cached_jars():
        pytest.fail(f"Hadoop's S3A connector is not in the jar cache: run `make s3a-jars` ({s3a.FETCH_COMMAND})")
    server = start(tmp_path_factory.mktemp("s3-server") / "moto.log")
    yield server
    server.stop()
