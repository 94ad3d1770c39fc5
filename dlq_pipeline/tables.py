"""The tables as a concept, without Spark: the column vocabulary shared by every stage and the
conversion of a message to what the tables store."""

from __future__ import annotations


def stored_text(text: str | None) -> str | None:
    """``text`` as the tables store it (valid UTF-8, as Spark strings must be): each byte that
    was not UTF-8 in the dump (kept by ``MQMD_TEXT`` (formats.mqmd) as a surrogate escape) becomes U+FFFD."""
    if text is None:
        return None
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
