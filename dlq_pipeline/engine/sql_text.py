"""SQL text built by the pipeline: literals and quoted names that mean the same under every
parser setting. The classifier writes the rules' outputs as SQL with these; storage and schemas quote
column names with them."""

from __future__ import annotations

import json
import re

_PLAIN = re.compile(r"[A-Za-z0-9 ._%/&#@:+=,;<>!?*-]*")


def sql_string(text: str) -> str:
    """A SQL string literal for ``text``, read the same under every parser setting.

    Without backslashes or quotes a plain literal is safe; anything else (NULs, national
    characters, backslashes) goes in as UTF-8 hex, so ``escapedStringLiterals`` and the
    like cannot alter it."""
    if _PLAIN.fullmatch(text):
        return f"'{text}'"
    return f"CAST(X'{text.encode('utf-8').hex().upper()}' AS STRING)"


def sql_column(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_json_array(values, type_: str) -> str:
    """A literal array of ``type_`` elements, as one JSON string literal read by ``from_json``,
    which the optimizer folds into a literal array. A table's outputs are arrays of hundreds
    of values used several times: written as ``array(v1, ..., vN)`` each value would be an
    expression the parser and the analyzer visit for every use (about 0.4 s at 500 rules),
    as JSON it is a single literal."""
    return f"from_json({sql_string(json.dumps(list(values)))}, 'ARRAY<{type_}>')"
