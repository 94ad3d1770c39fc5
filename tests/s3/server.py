"""A real S3 API for the `s3` tier: moto's server mode, started and stopped by the tests, on
127.0.0.1 only. It checks signatures against the IAM users it holds (moto's
``INITIAL_NO_AUTH_ACTION_COUNT``: the first three requests create the user the tests sign
with, every later one is authenticated), so a wrong key is refused as AWS refuses it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.cluster.bed import free_port

REGION = "us-east-1"
_SETUP_REQUESTS = 3  # create the user, its key and its policy: unauthenticated; nothing after


@dataclass
class S3Server:
    """A running server: its endpoint, and the key the tests' user signs with."""

    process: subprocess.Popen
    endpoint: str
    key_id: str = ""
    secret: str = ""

    def env(self, **changes: str) -> dict[str, str]:
        """This process's environment with only the AWS SDKs' standard variables for S3: the
        endpoint, the key, the region (and nothing of the caller's AWS settings)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(
            AWS_ENDPOINT_URL=self.endpoint,
            AWS_ACCESS_KEY_ID=self.key_id,
            AWS_SECRET_ACCESS_KEY=self.secret,
            AWS_REGION=REGION,
        )
        env.update(changes)
        return env

    def client(self, service: str = "s3", **keys: str):
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=keys.get("key_id", self.key_id),
            aws_secret_access_key=keys.get("secret", self.secret),
        )

    def upload(self, local: Path, bucket: str, prefix: str) -> str:
        """Every file below ``local`` to ``s3a://bucket/prefix/...``; the prefix's URI."""
        s3 = self.client()
        for path in sorted(p for p in local.rglob("*") if p.is_file()):
            s3.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(local).as_posix()}")
        return f"s3a://{bucket}/{prefix}"

    def download(self, bucket: str, prefix: str, local: Path) -> Path:
        """Every object under ``prefix/`` into ``local`` (directory markers skipped)."""
        s3 = self.client()
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
            for item in page.get("Contents", []):
                if item["Key"].endswith("/"):
                    continue
                target = local / item["Key"][len(prefix) + 1 :]
                target.parent.mkdir(parents=True, exist_ok=True)
                s3.download_file(bucket, item["Key"], str(target))
        return local

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        s3 = self.client()
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start(log: Path) -> S3Server:
    """Start moto's server and make the user the tests sign with (allowed everything)."""
    port = free_port()
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(_SETUP_REQUESTS)}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    server = S3Server(process, f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{server.endpoint}/moto-api/", timeout=2).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"moto's server did not start: {log.read_text()[-2000:]}") from None
            time.sleep(0.2)
    iam = server.client("iam", key_id="setup", secret="setup")
    iam.create_user(UserName="dlq-pipeline")
    key = iam.create_access_key(UserName="dlq-pipeline")["AccessKey"]
    everything = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    iam.put_user_policy(UserName="dlq-pipeline", PolicyName="all", PolicyDocument=json.dumps(everything))
    server.key_id, server.secret = key["AccessKeyId"], key["SecretAccessKey"]
    return server
