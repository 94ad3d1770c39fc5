"""`dlq-pipeline generate`: write a realistic, reproducible DLQ as dmpmqmsg dumps."""

from __future__ import annotations

import re

import click

from dlq_pipeline.cli.common import Command
from dlq_pipeline.dumps.generator import (
    DEFAULT_MAX_SIZE,
    MIN_MAX_SIZE,
    PAYLOADS,
    PLATFORMS,
    parse_mix,
    split_counts,
    write_generated,
)

_SIZE = re.compile(r"\s*(\d+)\s*([kKmM]?)\s*")


class Size(click.ParamType):
    """Bytes, with an optional K or M (1024-based) suffix."""

    name = "BYTES"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        match = _SIZE.fullmatch(str(value))
        if not match:
            self.fail(f"{value!r} is not a size (e.g. 65536, 64K, 4M)", param, ctx)
        number, unit = int(match.group(1)), match.group(2).upper()
        return number * {"": 1, "K": 1024, "M": 1024 * 1024}[unit]


class _Mix(click.ParamType):
    name = "NAME=WEIGHT,..."

    def convert(self, value, param, ctx):
        if isinstance(value, dict):
            return value
        try:
            return parse_mix(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


_HELP = """Write a realistic dead-letter queue as dmpmqmsg dumps, the same bytes for the same seed.

\b
The DLQ of a hub queue manager that collects the dead letters of a fleet: MQDLHs written
by z/OS (EBCDIC, big-endian: Encoding 785, CCSID 500/37/1047), AIX (273, 819) and
Linux/Windows (546, 1208/819/1252) queue managers; the common reasons (MQRC_Q_FULL,
MQRC_UNKNOWN_OBJECT_NAME, MQRC_NOT_AUTHORIZED, ..., MQFB_APPL_CANNOT_BE_STARTED);
transmission-queue messages (MQXMIT + MQXQH), JMS messages (MQHRF2 + MQSTR), text and
binary bodies from 0 bytes to megabytes, requests with reply-to queues, messages put
without an MQDLH, and NUL-padded destination names (APAR IT31856).

\b
--mix weights, two independent axes (names left out keep their default):
  platform that dead-lettered it: {platforms}
  what the message is:            {payloads}

\b
Examples:
  dlq-pipeline generate --out dumps --count 1000 --seed 42
  dlq-pipeline generate --out dumps --count 20000 --seed 7 --files 4 --max-size 64K
  dlq-pipeline generate --out zos --count 500 --seed 1 --mix aix=0,linux=0,windows=0
  dlq-pipeline inspect --summary dumps/dlq-0000.dmp
""".format(
    platforms=", ".join(f"{k}={v}" for k, v in PLATFORMS.items()),
    payloads=", ".join(f"{k}={v}" for k, v in PAYLOADS.items()),
)


@click.command("generate", cls=Command, help=_HELP)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory for the dumps (created if needed).",
)
@click.option("--count", required=True, type=click.IntRange(min=0), help="Messages to generate.")
@click.option("--seed", required=True, type=int, help="Same seed and options, same bytes.")
@click.option(
    "--files",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="Dumps to spread the messages over (consecutive slices).",
)
@click.option("--mix", type=_Mix(), default=None, help="Weights to change, e.g. zos=5,jms=0 (see below).")
@click.option(
    "--max-size",
    type=Size(),
    default=DEFAULT_MAX_SIZE,
    show_default=True,
    help=f"Largest message data, in bytes (K/M suffixes; at least {MIN_MAX_SIZE}).",
)
def generate_cmd(out_dir, count, seed, files, mix, max_size):
    try:
        paths = write_generated(out_dir, count, seed, files=files, mix=mix, max_size=max_size)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    for path, n in zip(paths, split_counts(count, files)):
        click.echo(f"{path}  {n} messages  {path.stat().st_size} bytes")
    click.echo(f"wrote {count} messages (seed {seed}) in {len(paths)} file(s) under {out_dir}")
