"""The match view of one message: the row the rules look at, without Spark.

Column names and values are those of the ``messages`` table plus the decode columns
(`dlq_pipeline.tables`), so the reference matcher and the rules in Spark
(`rules.spark`) read the same names. Character values are decoded and kept unstripped,
because trailing blanks and NULs decide matches.
"""

from __future__ import annotations

from typing import Any

from dlq_pipeline.mq import dlh_decoder
from dlq_pipeline.mq.mqmd import MQMD
from dlq_pipeline.tables import MD_COLUMNS


def match_view(md: MQMD, data: bytes, *, truncated: bool = False) -> dict[str, Any]:
    """Every MQMD field (as landed), the decoded MQDLH columns (``has_dlh``, ``dlh_problem``,
    ``dlh_*``, ...) read with the MQMD's Encoding and CCSID, and ``truncated``."""
    view = {column: getattr(md, name) for name, column in MD_COLUMNS.items()}
    header = dlh_decoder.decode_dlh(data, md.encoding, md.ccsid, md.format)
    view.update(dlh_decoder.to_columns(header))
    view["truncated"] = bool(truncated)
    return view
