"""`dlq-pipeline inspect`: look at dumps and listings now, without Spark or Java.

Reads each file with the reader its content needs (`sources.read_source`), prints every
message as it is read (so a large dump streams), and carries on past bad records.
"""

from __future__ import annotations

import json
from dataclasses import replace

import click

from dlq_pipeline import exitcodes
from dlq_pipeline.cli.common import Command, reading_config
from dlq_pipeline.config.settings import IngestSettings, PrivacySettings
from dlq_pipeline.dumps.describe import describe, format_message, format_summary, printable, summarize
from dlq_pipeline.dumps.records import RecordError
from dlq_pipeline.report.redact import redact_snippet

# RecordError codes that say the whole file is not a dump or listing (the readers report
# these once, in place of any message): such a file is unreadable, not a bad record.
FILE_LEVEL_CODES = frozenset({"empty_file", "unknown_format", "missing_header", "not_a_message_dump"})


def _json_line(obj) -> str:
    # ASCII escapes keep any byte that came from the dump (surrogate escapes included)
    # printable on every terminal; jq decodes them.
    return json.dumps(obj, ensure_ascii=True)


def _error_object(error: RecordError) -> dict:
    return {
        "error": {
            "file": error.file,
            "line": error.line,
            "offset": error.offset,
            "code": error.code,
            "message": error.message,
            "index": error.index,
        }
    }


@click.command("inspect", cls=Command)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line per message, in file order.")
@click.option(
    "--summary", is_flag=True, help="Only counts: by reason, by destination, messages without an MQDLH by problem."
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, metavar="N", help="Stop after N messages (over all files)."
)
@click.option(
    "--redact",
    is_flag=True,
    help="Show no message data: no preview, and bad records without their text (bodies may hold "
    "personal data; privacy.redact_payloads in the --config file does the same).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Configuration file: its ingest limits (max_message_bytes, max_line_length) apply, "
    "as in a run, and privacy.redact_payloads (default: the default limits, bodies shown).",
)
@click.option("--profile", default=None, help="Profile in the configuration file.")
def inspect_cmd(files, as_json, summary, limit, redact, config_path, profile):
    """Decode dmpmqmsg dumps and amqsbcg listings: MQMD, MQDLH (with reason names) and a
    preview of each message's data, decoded in its own code page.

    \b
    Examples:
      dlq-pipeline inspect dlq.dmp
      dlq-pipeline inspect --limit 5 dlq-*.dmp
      dlq-pipeline inspect --json dlq.dmp | jq -r 'select(.dlh) | .dlh.reason_name'
      dlq-pipeline inspect --summary dlq.dmp
      dlq-pipeline inspect --summary --json dlq.dmp     (the counts as one JSON object)

    \b
    --json objects carry: index (0-based in its file), file, line, format, encoding, ccsid,
    msg_id, correl_id (upper-case hex), msg_type, persistence, backout_count, put_appl_type,
    put_appl_name, put_date, put_time, reply_to_q, reply_to_qmgr, user_id, data_length,
    truncated, has_dlh, dlh_problem, dlh (null, or reason, reason_name, dest_q, dest_qmgr,
    encoding, ccsid, format, put_appl_type, put_appl_name, put_date, put_time, chain),
    flags, notes and preview (offset, hex, text). Character fields have trailing blanks and
    NULs removed; NUL padding is listed in flags (nul_padded:dest_q, ...).

    \b
    A bad record is reported on stderr as FILE:LINE: CODE: MESSAGE and, with --json, also
    on stdout in its place as {"error": {file, line, offset, code, message, index}}; the
    rest of the file is still read.

    \b
    A message larger than ingest.max_message_bytes (100 MB unless --config says otherwise) is
    a bad record (message_too_large), as it is in a run.

    \b
    Exit status: 0 all read; 3 some records were bad; 2 a file could not be read or is not
    a dump or listing (or bad usage).
    """
    config = reading_config(config_path, profile)
    state = _Tally()
    descs = _describe_all(
        files,
        limit,
        state,
        errors_inline=as_json and not summary,
        redact=redact or PrivacySettings.from_config(config).redact_payloads,
        limits=IngestSettings.from_config(config),
    )
    if summary:
        counts = summarize(descs)  # streams: nothing is kept per message
        counts["bad_records"] = state.bad_records
        click.echo(_json_line(counts) if as_json else format_summary(counts))
    else:
        for desc in descs:
            click.echo(_json_line(desc) if as_json else format_message(desc) + "\n")
    if state.unreadable:
        return exitcodes.USAGE
    return exitcodes.ATTENTION if state.bad_records else exitcodes.OK


class _Tally:
    bad_records = 0
    unreadable = False


def _describe_all(
    files,
    limit: int | None,
    state: _Tally,
    *,
    errors_inline: bool,
    redact: bool = False,
    limits: IngestSettings = IngestSettings(),
):
    """`describe` objects of every message, in file order, up to ``limit``. Bad records go
    to stderr as they are met (and inline on stdout as error objects when asked); ``limits``
    are the ingest limits (``max_line_length``, ``max_message_bytes``) a run would apply."""
    from dlq_pipeline.dumps.sources import read_source

    shown = 0
    for path in files:
        try:
            for record in read_source(
                path, name=path, max_line_length=limits.max_line_length, max_message_bytes=limits.max_message_bytes
            ):
                if isinstance(record, RecordError):
                    if redact:
                        record = replace(record, snippet=redact_snippet(record.snippet))
                    click.echo(printable(str(record)), err=True)
                    if record.code in FILE_LEVEL_CODES:
                        state.unreadable = True
                    else:
                        state.bad_records += 1
                    if errors_inline:
                        click.echo(_json_line(_error_object(record)))
                    continue
                if limit is not None and shown >= limit:
                    return
                shown += 1
                yield describe(record, path, redact=redact)
        except OSError as exc:
            click.echo(printable(f"{path}: cannot read: {exc.strerror or exc}"), err=True)
            state.unreadable = True
