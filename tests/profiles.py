"""How many examples a property test draws: the ``full`` profile (``make test``, CI) or the
``quick`` one (``make check``, the inner loop), chosen by ``DLQ_TEST_PROFILE``.

Each property test states its full count with ``examples(n)``; the quick profile draws a
fifth of it (at least 10, at most the full count), so a test's weight relative to the others
stays as its author chose. A test that states no count draws ``DEFAULT_EXAMPLES`` (its quick
share under ``quick``). No deadline in either profile: a slow moment on a loaded machine is not
a failure.
"""

from __future__ import annotations

import os

from hypothesis import settings

PROFILE = os.environ.get("DLQ_TEST_PROFILE", "full")
if PROFILE not in ("full", "quick"):
    raise ValueError(f"DLQ_TEST_PROFILE={PROFILE!r}: expected 'full' or 'quick'")
QUICK_SHARE = 0.2
DEFAULT_EXAMPLES = 100


def examples(full: int) -> int:
    """The number of examples of a property test whose full count is ``full``."""
    return full if PROFILE == "full" else min(full, max(10, round(full * QUICK_SHARE)))


settings.register_profile(PROFILE, max_examples=examples(DEFAULT_EXAMPLES), deadline=None)
settings.load_profile(PROFILE)
