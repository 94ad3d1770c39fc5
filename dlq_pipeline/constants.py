"""MQ constants: name <-> number for MQRC_, MQFB_, MQMT_, MQPER_, MQAT_, MQENC_, MQFMT_.

STUB (to be completed): the final module keeps exactly this API.
"""

from __future__ import annotations

MQRC: dict[str, int] = {"MQRC_NONE": 0, "MQRC_Q_FULL": 2053, "MQRC_PUT_INHIBITED": 2051,
                        "MQRC_NOT_AUTHORIZED": 2035, "MQRC_UNKNOWN_OBJECT_NAME": 2085}
MQFB: dict[str, int] = {"MQFB_NONE": 0, "MQFB_APPL_CANNOT_BE_STARTED": 265}
MQMT: dict[str, int] = {"MQMT_REQUEST": 1, "MQMT_REPLY": 2, "MQMT_REPORT": 4, "MQMT_DATAGRAM": 8}
MQPER: dict[str, int] = {"MQPER_NOT_PERSISTENT": 0, "MQPER_PERSISTENT": 1,
                         "MQPER_PERSISTENCE_AS_Q_DEF": 2, "MQPER_PERSISTENCE_AS_PARENT": -1}
MQAT: dict[str, int] = {"MQAT_UNKNOWN": -1, "MQAT_NO_CONTEXT": 0, "MQAT_QMGR": 7}
MQENC: dict[str, int] = {"MQENC_NATIVE": 546}
MQFMT: dict[str, str] = {"MQFMT_DEAD_LETTER_HEADER": "MQDEAD  ", "MQFMT_STRING": "MQSTR   "}

FAMILIES: dict[str, dict] = {"MQRC": MQRC, "MQFB": MQFB, "MQMT": MQMT, "MQPER": MQPER,
                             "MQAT": MQAT, "MQENC": MQENC, "MQFMT": MQFMT}


def name_of(family: str, value) -> str | None:
    """The constant name for ``value`` in ``family`` ("MQRC", "MQFB", ...), or None."""
    for name, v in FAMILIES[family].items():
        if v == value:
            return name
    return None


def reason_name(value: int) -> str | None:
    """Name of an MQDLH Reason: it may hold an MQRC_ or an MQFB_ value."""
    return name_of("MQRC", value) or name_of("MQFB", value)


def lookup(name: str) -> tuple[str, int | str] | None:
    """(family, value) for a constant name, case-insensitive; None when unknown."""
    upper = name.upper()
    family = upper.split("_", 1)[0]
    table = FAMILIES.get(family)
    if table is None or upper not in table:
        return None
    return family, table[upper]


def suggest(name: str, families: tuple[str, ...], limit: int = 3) -> list[str]:
    """The known names nearest to ``name`` in the given families, best first."""
    import difflib
    pool = [n for f in families for n in FAMILIES[f]]
    return difflib.get_close_matches(name.upper(), pool, n=limit, cutoff=0.6)
