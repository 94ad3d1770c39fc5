"""Character sets MQ uses for header fields: CCSID -> text and back.

STUB (to be completed): the final module keeps exactly this API.
"""

from __future__ import annotations

_PYTHON_CODECS = {
    37: "cp037", 273: "cp273", 500: "cp500", 1140: "cp1140",
    437: "cp437", 850: "cp850", 1252: "cp1252", 819: "latin-1", 1208: "utf-8",
}


def is_known(ccsid: int) -> bool:
    """True when this module can decode every byte of this CCSID exactly."""
    return ccsid in _PYTHON_CODECS


def is_ebcdic(ccsid: int) -> bool:
    return ccsid in {37, 273, 277, 278, 280, 284, 285, 297, 500, 871, 1047} or 1140 <= ccsid <= 1149


def decode(raw: bytes, ccsid: int, *, ebcdic: bool | None = None) -> tuple[str, bool]:
    """Decode ``raw``; returns (text, exact). Never raises.

    For an unknown CCSID only invariant characters are decoded (others become U+FFFD) and
    ``exact`` is False; ``ebcdic`` says which family to assume when the CCSID does not tell.
    """
    codec = _PYTHON_CODECS.get(ccsid)
    if codec:
        return raw.decode(codec, "replace"), True
    return raw.decode("cp500" if ebcdic else "latin-1", "replace"), False


def encode(text: str, ccsid: int) -> bytes:
    """Encode ``text`` in ``ccsid``; raises ValueError for an unknown CCSID or character."""
    codec = _PYTHON_CODECS.get(ccsid)
    if not codec:
        raise ValueError(f"unknown CCSID {ccsid}")
    return text.encode(codec)
