"""The tables as a concept, without Spark: their schemas, the column vocabulary every stage
shares, and a message turned into the row the tables store.

The schema files (``dlq_pipeline/data/schemas/<table>.json``: Spark's JSON schema plus
``table``, ``key`` and ``description``) are the single source of truth; `warehouse.schemas`
turns them into Spark types, `rules test` and the replay writer use the column names from
here, so no stage restates a table by hand.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from dlq_pipeline.dumps.records import DumpedMessage
from dlq_pipeline.errors import DlqPipelineError
from dlq_pipeline.mq.dlh_decoder import dlh_head
from dlq_pipeline.mq.mqmd import MQMD, MQMD_CHAR_LENGTHS, MQMD_FIELDS, bytes_to_text, stored_text, text_to_bytes
from dlq_pipeline.tables.identity import data_digest, message_key

TABLES = ("messages", "decisions", "ledger", "quarantine", "files", "landings", "keys", "decoded", "leases")
STORED_TABLES = ("messages", "decisions", "ledger", "quarantine", "files", "landings", "keys", "leases")
# The writer lease of a Delta warehouse (`dlq_pipeline.warehouse.lease`): its table and the name it leases.
LEASES_TABLE = "leases"
WAREHOUSE_LEASE = "warehouse"

_NAME = re.compile(r"[a-z][a-z0-9_]*")


class SchemaError(DlqPipelineError, ValueError):
    """A table or column that the schemas do not know, or a schema file that is wrong."""


# --- the schema files ------------------------------------------------------------------------


def schema_files():
    """The package's schema directory (an importlib.resources Traversable): the wheel carries it."""
    return resources.files("dlq_pipeline").joinpath("data", "schemas")


def _read_text(name: str) -> tuple[str, str]:
    """(text, where) of ``<name>.json``."""
    if not _NAME.fullmatch(name):
        raise SchemaError(f"not a table name: {name!r}")
    packaged = schema_files().joinpath(f"{name}.json")
    if not packaged.is_file():
        raise SchemaError(f"no schema for table {name!r} (known tables: {', '.join(TABLES)})")
    return packaged.read_text(encoding="utf-8"), str(packaged)


@cache
def table_document(name: str) -> dict[str, Any]:
    """The parsed schema file of ``name`` (``table``, ``description``, ``key``, ``schema``)."""
    text, where = _read_text(name)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"{where}: not JSON: {exc}") from None
    for field in ("schema", "key", "description"):
        if field not in doc:
            raise SchemaError(f"{where}: no {field!r}")
    return doc


def table_key(name: str) -> list[str]:
    """The columns that identify a row of ``name`` (empty for the append-only ledger)."""
    return list(table_document(name)["key"])


def table_description(name: str) -> str:
    return table_document(name)["description"]


def table_columns(name: str) -> tuple[str, ...]:
    """The column names of ``name``, in schema order."""
    return tuple(field["name"] for field in table_document(name)["schema"]["fields"])


# --- the column vocabulary -------------------------------------------------------------------

# MQMD field -> `messages` column (MQMD.Version is `md_version` there: `version` would be ambiguous).
MD_COLUMNS = {name: ("md_version" if name == "version" else name) for name in MQMD_FIELDS}

# Every `decisions.ignore_reason` of an implicit IGNORE (an IGNORE rule leaves it null).
IGNORE_REASONS = ("no_dlh", "truncated", "no_match", "retries_exhausted")
# Every `ledger.outcome`.
OUTCOMES = ("delivered", "discarded", "expired", "ignored", "failed", "deferred", "held", "dry_run")
# A put that reached MQ, or was refused by it: an attempt that counts against RETRY(n).
ATTEMPT_OUTCOMES = ("delivered", "failed")
# The message's processing is over: it is never decided again (an expired message is one MQ
# itself would have discarded).
ENDED_OUTCOMES = ("delivered", "discarded", "expired")
# Outcomes that make a run exit 3 (done, but something needs attention).
ATTENTION_OUTCOMES = ("failed", "deferred", "held")

LEDGER_COLUMNS = table_columns("ledger")

# --- a message as the tables store it ----------------------------------------------------------

NOTE_NOT_UTF8 = "char_field_not_utf8"
# The `messages` column holding the exact bytes of the MQMD character fields that are not UTF-8.
CHAR_BYTES_COLUMN = "md_char_bytes"
# The `messages` column holding what the MQDLH decoder reads of `data` (`dlh_decoder.dlh_head`):
# decode and classify read it instead of `data`, which may be 100 MB.
HEAD_COLUMN = "data_head"


def stored_md(md: MQMD) -> MQMD:
    """The MQMD as the ``messages`` table's columns show it (character fields through
    ``stored_text``): what rules match, in `rules test` and in Spark alike."""
    changed = {
        name: stored_text(getattr(md, name))
        for name in MQMD_CHAR_LENGTHS
        if stored_text(getattr(md, name)) != getattr(md, name)
    }
    return md.replace(**changed) if changed else md


def char_bytes(md: MQMD) -> dict[str, bytes] | None:
    """The exact bytes of ``md``'s character fields that ``stored_text`` would change
    (MQMD attribute -> bytes), or None when there are none: the ``md_char_bytes`` column,
    which lets replay put the MQMD back byte for byte."""
    exact = {}
    for name in MQMD_CHAR_LENGTHS:
        value = getattr(md, name)
        if value is not None and stored_text(value) != value:
            exact[name] = text_to_bytes(value)
    return exact or None


def exact_md(md: MQMD, exact: Mapping[str, bytes] | None) -> MQMD:
    """The MQMD as got, from its stored columns (``md``) and ``md_char_bytes``: the inverse
    of `message_row` for the descriptor. Unknown names in ``exact`` are an error."""
    if not exact:
        return md
    unknown = sorted(set(exact) - set(MQMD_CHAR_LENGTHS))
    if unknown:
        raise ValueError(f"{CHAR_BYTES_COLUMN} names no MQMD character field: {', '.join(unknown)}")
    return md.replace(**{name: bytes_to_text(bytes(raw)) for name, raw in exact.items()})


_MD_COLUMN_NAMES = tuple(MD_COLUMNS.values())
_md_values = operator.attrgetter(*MD_COLUMNS)  # every MQMD field, in MD_COLUMNS' order
_char_values = operator.attrgetter(*MQMD_CHAR_LENGTHS)


def _all_utf8(md: MQMD) -> bool:
    """Whether every character field of ``md`` is stored as it is (no ``stored_text`` change):
    one encode of them all instead of one per field (ingest's cost per message)."""
    try:
        "".join(value for value in _char_values(md) if value is not None).encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def message_row(msg: DumpedMessage) -> dict[str, Any]:
    """A message's `messages` columns that come from the message itself (ingest and drain add
    where and when it was landed). The size limit was applied by the reader. A character
    field that is not UTF-8 is stored readable (U+FFFD) with a note, and exactly in
    ``md_char_bytes``."""
    md = msg.md
    data = bytes(msg.data)
    length = msg.total_length if msg.truncated and msg.total_length is not None else len(data)
    digest = data_digest(data)
    notes = list(msg.notes)
    if _all_utf8(md):  # the usual case: nothing for stored_text to change
        exact, shown = None, md
    else:
        exact = char_bytes(md)
        notes += [f"{NOTE_NOT_UTF8}:{name}" for name in exact or ()]
        shown = stored_md(md)
    row: dict[str, Any] = {"rec": "message", **dict(zip(_MD_COLUMN_NAMES, _md_values(shown)))}
    row[CHAR_BYTES_COLUMN] = exact
    row[HEAD_COLUMN] = dlh_head(data)
    row.update(
        data=data,
        data_length=length,
        data_digest=digest,
        message_key=message_key(md, digest),
        truncated=bool(msg.truncated),
        notes=notes,
        reader_index=msg.index,
        reader_line=msg.line,
        source_offset=msg.offset,
    )
    return row
