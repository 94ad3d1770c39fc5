"""Redaction of message bodies wherever the pipeline shows them (pure functions).

Message bodies may hold personal data. With ``privacy.redact_payloads = true`` (or
``inspect --redact``) nothing derived from a message body is shown: `redact_preview`
replaces the ``inspect`` preview, `redact_snippet` the start of a bad record in
``quarantine.snippet``. MQMD and MQDLH fields stay visible (they say where a message was
going and why it failed, which is what operators need). Notebooks use
`dlq_pipeline.report.spark.redact_frame` on any table DataFrame, or `payloads_visible(privacy_settings)`
to decide whether to show ``data`` at all.
"""

from __future__ import annotations

import re
from typing import overload

REDACTED = "[redacted]"
# A dump line's kind is its first token: keep "X", "S", "T" or "A CCC", never what follows.
_KIND = re.compile(r"^(A [A-Z]{3}|[A-Z](?= |$))")


def payloads_visible(privacy) -> bool:
    """False when the ``[privacy]`` settings (`dlq_pipeline.config.settings.PrivacySettings`) ask
    for bodies never to be shown (``redact_payloads``)."""
    return not privacy.redact_payloads


def redact_preview(preview: dict) -> dict:
    """An ``inspect`` preview with the data bytes and text replaced (the offset is kept)."""
    return {**preview, "hex": "", "text": REDACTED}


@overload
def redact_snippet(snippet: str) -> str: ...
@overload
def redact_snippet(snippet: None) -> None: ...
def redact_snippet(snippet: str | None) -> str | None:
    """A quarantine snippet reduced to the kind of line it was (``X``, ``A PER``, ...)."""
    if snippet is None:
        return None
    kind = _KIND.match(snippet)
    return f"{kind.group(1)} {REDACTED}" if kind else REDACTED
