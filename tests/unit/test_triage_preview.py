"""Body previews for the triage notebook (pure)."""

from __future__ import annotations

from dlq_pipeline.mq.codepages import encode
from dlq_pipeline.triage.charts import body_preview

DLH = b"DLH " + b"\x00" * 168  # only its length matters here


def test_preview_skips_the_dlh_and_decodes_with_the_data_ccsid():
    assert body_preview(DLH + encode("Hello, z/OS", 500), 500, has_dlh=True) == "Hello, z/OS"
    assert body_preview(b"plain\x01text", 819, has_dlh=False) == "plain.text"


def test_preview_is_cut_at_the_limit_and_marks_more():
    assert body_preview(DLH + b"abcdefghij", 819, has_dlh=True, limit=4) == "abcd…"
    # the stored head is shorter than the message: the data length says there is more
    assert body_preview(DLH + b"abc", 819, has_dlh=True, limit=10, data_length=172 + 500) == "abc…"


def test_redacted_preview_shows_only_the_size():
    assert body_preview(DLH + b"secret", 819, has_dlh=True, redact=True) == "<redacted: 6 bytes>"
    assert body_preview(DLH + b"sec", 819, has_dlh=True, redact=True, data_length=1172) == "<redacted: 1000 bytes>"
    assert body_preview(b"", 819, has_dlh=False) == ""
