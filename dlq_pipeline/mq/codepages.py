"""Character sets MQ uses for header fields: CCSID -> text and back (docs/message-formats.md §3).

The tables follow IBM's published CDRA mappings (the RPMAP/TPMAP tables behind ICU's
ibm-NNN.ucm files): the EBCDIC pages are written out here as CCSID 37 plus each page's
differences; the ASCII-based pages start from Python's codec for the same standard and apply
IBM's differences. Where implementations disagree with IBM, IBM wins, because that is what a
queue manager's own conversion does (tests/unit/test_codepages.py asserts each exception):

* EBCDIC 0x15 is NL (U+0085) and 0x25 is LF (U+000A) in every EBCDIC page, 1047 included.
  Java decodes 0x15 as LF (and, in IBM1047 only, 0x25 as NL: the z/OS UNIX "LF/NL swap").
* EBCDIC 0xBC in 273 is the macron U+00AF, as in every other page; Python's cp273 says U+203E.
* IBM's 1250, 1251 and 1252 predate the euro: the bytes Windows later gave to €, Ž and ž, and
  the bytes Windows leaves unassigned, are the C1 controls of the same value. 5346, 5347 and
  5348 are the euro versions (Windows-1250/1251/1252); their unassigned bytes are C1 controls
  too (inferred from 1250-1252), so every byte decodes and every table round-trips.
* IBM's PC code pages map 0x1A, 0x1C, 0x7F to U+001C, U+007F, U+001A (read from IBM's 850
  table; 437 follows the same PC-data convention). Python and Java keep them in place.

Unknown CCSIDs never fail: only the invariant characters are decoded (see `INVARIANT`), every
other byte becomes U+FFFD, one character per byte, and `exact` is False. 1051 (HP Roman-8) is
unknown on purpose: IBM's own table maps three bytes onto characters that other bytes already
have (0xA9 and 0x60 are both U+0060), so it cannot be decoded and re-encoded exactly.
"""

from __future__ import annotations

import codecs

# charmap_decode's "no character at this byte".
_UNDEFINED = "\ufffe"
_REPLACEMENT = "\ufffd"

# MQ object names use only these (A-Z a-z 0-9 . / _ %); they are IBM's syntactic character set,
# which sits at the same byte in every EBCDIC page and every ASCII-based page.
INVARIANT = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 +<=>%&*\"'(),_-./:;?"

# CCSID 37 (EBCDIC US/Canada), IBM CDRA; row = high nibble of the byte.
_CP037 = "".join(
    map(
        chr,
        (
            # _0    _1    _2    _3    _4    _5    _6    _7    _8    _9    _A    _B    _C    _D    _E    _F
            0x00,
            0x01,
            0x02,
            0x03,
            0x9C,
            0x09,
            0x86,
            0x7F,
            0x97,
            0x8D,
            0x8E,
            0x0B,
            0x0C,
            0x0D,
            0x0E,
            0x0F,  # 0_
            0x10,
            0x11,
            0x12,
            0x13,
            0x9D,
            0x85,
            0x08,
            0x87,
            0x18,
            0x19,
            0x92,
            0x8F,
            0x1C,
            0x1D,
            0x1E,
            0x1F,  # 1_
            0x80,
            0x81,
            0x82,
            0x83,
            0x84,
            0x0A,
            0x17,
            0x1B,
            0x88,
            0x89,
            0x8A,
            0x8B,
            0x8C,
            0x05,
            0x06,
            0x07,  # 2_
            0x90,
            0x91,
            0x16,
            0x93,
            0x94,
            0x95,
            0x96,
            0x04,
            0x98,
            0x99,
            0x9A,
            0x9B,
            0x14,
            0x15,
            0x9E,
            0x1A,  # 3_
            0x20,
            0xA0,
            0xE2,
            0xE4,
            0xE0,
            0xE1,
            0xE3,
            0xE5,
            0xE7,
            0xF1,
            0xA2,
            0x2E,
            0x3C,
            0x28,
            0x2B,
            0x7C,  # 4_
            0x26,
            0xE9,
            0xEA,
            0xEB,
            0xE8,
            0xED,
            0xEE,
            0xEF,
            0xEC,
            0xDF,
            0x21,
            0x24,
            0x2A,
            0x29,
            0x3B,
            0xAC,  # 5_
            0x2D,
            0x2F,
            0xC2,
            0xC4,
            0xC0,
            0xC1,
            0xC3,
            0xC5,
            0xC7,
            0xD1,
            0xA6,
            0x2C,
            0x25,
            0x5F,
            0x3E,
            0x3F,  # 6_
            0xF8,
            0xC9,
            0xCA,
            0xCB,
            0xC8,
            0xCD,
            0xCE,
            0xCF,
            0xCC,
            0x60,
            0x3A,
            0x23,
            0x40,
            0x27,
            0x3D,
            0x22,  # 7_
            0xD8,
            0x61,
            0x62,
            0x63,
            0x64,
            0x65,
            0x66,
            0x67,
            0x68,
            0x69,
            0xAB,
            0xBB,
            0xF0,
            0xFD,
            0xFE,
            0xB1,  # 8_
            0xB0,
            0x6A,
            0x6B,
            0x6C,
            0x6D,
            0x6E,
            0x6F,
            0x70,
            0x71,
            0x72,
            0xAA,
            0xBA,
            0xE6,
            0xB8,
            0xC6,
            0xA4,  # 9_
            0xB5,
            0x7E,
            0x73,
            0x74,
            0x75,
            0x76,
            0x77,
            0x78,
            0x79,
            0x7A,
            0xA1,
            0xBF,
            0xD0,
            0xDD,
            0xDE,
            0xAE,  # A_
            0x5E,
            0xA3,
            0xA5,
            0xB7,
            0xA9,
            0xA7,
            0xB6,
            0xBC,
            0xBD,
            0xBE,
            0x5B,
            0x5D,
            0xAF,
            0xA8,
            0xB4,
            0xD7,  # B_
            0x7B,
            0x41,
            0x42,
            0x43,
            0x44,
            0x45,
            0x46,
            0x47,
            0x48,
            0x49,
            0xAD,
            0xF4,
            0xF6,
            0xF2,
            0xF3,
            0xF5,  # C_
            0x7D,
            0x4A,
            0x4B,
            0x4C,
            0x4D,
            0x4E,
            0x4F,
            0x50,
            0x51,
            0x52,
            0xB9,
            0xFB,
            0xFC,
            0xF9,
            0xFA,
            0xFF,  # D_
            0x5C,
            0xF7,
            0x53,
            0x54,
            0x55,
            0x56,
            0x57,
            0x58,
            0x59,
            0x5A,
            0xB2,
            0xD4,
            0xD6,
            0xD2,
            0xD3,
            0xD5,  # E_
            0x30,
            0x31,
            0x32,
            0x33,
            0x34,
            0x35,
            0x36,
            0x37,
            0x38,
            0x39,
            0xB3,
            0xDB,
            0xDC,
            0xD9,
            0xDA,
            0x9F,  # F_
        ),
    )
)

# The other Latin-1 EBCDIC pages are 37 with national characters moved: byte -> character
# wherever the page differs from 37 (IBM CDRA tables).
_EBCDIC_DIFFERENCES_FROM_037: dict[int, dict[int, str]] = {
    273: {  # Germany, Austria
        0x43: "{",
        0x4A: "Ä",
        0x4F: "!",
        0x59: "~",
        0x5A: "Ü",
        0x5F: "^",
        0x63: "[",
        0x6A: "ö",
        0x7C: "§",
        0xA1: "ß",
        0xB0: "¢",
        0xB5: "@",
        0xBA: "¬",
        0xBB: "|",
        0xC0: "ä",
        0xCC: "¦",
        0xD0: "ü",
        0xDC: "}",
        0xE0: "Ö",
        0xEC: "\\",
        0xFC: "]",
    },
    277: {  # Denmark, Norway
        0x47: "}",
        0x4A: "#",
        0x4F: "!",
        0x5A: "¤",
        0x5B: "Å",
        0x5F: "^",
        0x67: "$",
        0x6A: "ø",
        0x70: "¦",
        0x7B: "Æ",
        0x7C: "Ø",
        0x80: "@",
        0x9C: "{",
        0x9E: "[",
        0x9F: "]",
        0xA1: "ü",
        0xB0: "¢",
        0xBA: "¬",
        0xBB: "|",
        0xC0: "æ",
        0xD0: "å",
        0xDC: "~",
    },
    278: {  # Finland, Sweden
        0x43: "{",
        0x47: "}",
        0x4A: "§",
        0x4F: "!",
        0x51: "`",
        0x5A: "¤",
        0x5B: "Å",
        0x5F: "^",
        0x63: "#",
        0x67: "$",
        0x6A: "ö",
        0x71: "\\",
        0x79: "é",
        0x7B: "Ä",
        0x7C: "Ö",
        0x9F: "]",
        0xA1: "ü",
        0xB0: "¢",
        0xB5: "[",
        0xBA: "¬",
        0xBB: "|",
        0xC0: "ä",
        0xCC: "¦",
        0xD0: "å",
        0xDC: "~",
        0xE0: "É",
        0xEC: "@",
    },
    280: {  # Italy
        0x44: "{",
        0x48: "\\",
        0x4A: "°",
        0x4F: "!",
        0x51: "]",
        0x54: "}",
        0x58: "~",
        0x5A: "é",
        0x5F: "^",
        0x6A: "ò",
        0x79: "ù",
        0x7B: "£",
        0x7C: "§",
        0x90: "[",
        0xA1: "ì",
        0xB0: "¢",
        0xB1: "#",
        0xB5: "@",
        0xBA: "¬",
        0xBB: "|",
        0xC0: "à",
        0xCD: "¦",
        0xD0: "è",
        0xDD: "`",
        0xE0: "ç",
    },
    284: {  # Spain, Latin America
        0x49: "¦",
        0x4A: "[",
        0x5A: "]",
        0x69: "#",
        0x6A: "ñ",
        0x7B: "Ñ",
        0xA1: "¨",
        0xB0: "¢",
        0xBA: "^",
        0xBB: "!",
        0xBD: "~",
    },
    285: {  # United Kingdom
        0x4A: "$",
        0x5B: "£",
        0xA1: "¯",
        0xB0: "¢",
        0xB1: "[",
        0xBA: "^",
        0xBC: "~",
    },
    297: {  # France
        0x44: "@",
        0x48: "\\",
        0x4A: "°",
        0x4F: "!",
        0x51: "{",
        0x54: "}",
        0x5A: "§",
        0x5F: "^",
        0x6A: "ù",
        0x79: "µ",
        0x7B: "£",
        0x7C: "à",
        0x90: "[",
        0xA0: "`",
        0xA1: "¨",
        0xB0: "¢",
        0xB1: "#",
        0xB5: "]",
        0xBA: "¬",
        0xBB: "|",
        0xBD: "~",
        0xC0: "é",
        0xD0: "è",
        0xDD: "¦",
        0xE0: "ç",
    },
    500: {  # International (z/OS's usual queue manager CCSID)
        0x4A: "[",
        0x4F: "!",
        0x5A: "]",
        0x5F: "^",
        0xB0: "¢",
        0xBA: "¬",
        0xBB: "|",
    },
    871: {  # Iceland
        0x4A: "Þ",
        0x4F: "!",
        0x5A: "Æ",
        0x5F: "Ö",
        0x79: "ð",
        0x7C: "Ð",
        0x8C: "`",
        0x8E: "{",
        0x9C: "}",
        0x9E: "]",
        0xA1: "ö",
        0xAC: "@",
        0xAE: "[",
        0xB0: "¢",
        0xBA: "¬",
        0xBB: "|",
        0xBE: "\\",
        0xC0: "þ",
        0xCC: "~",
        0xD0: "æ",
        0xE0: "´",
        0xEC: "^",
    },
    1047: {  # Latin-1 Open Systems (z/OS UNIX): 37 with [ ] ^ ¬ Ý ¨ moved
        0x5F: "^",
        0xAD: "[",
        0xB0: "¬",
        0xBA: "Ý",
        0xBB: "¨",
        0xBD: "]",
    },
}

# The euro pages are their national page with € where the page had the currency sign ¤.
_EURO_PAGE_OF = {
    1140: 37,
    1141: 273,
    1142: 277,
    1143: 278,
    1144: 280,
    1145: 284,
    1146: 285,
    1147: 297,
    1148: 500,
    1149: 871,
}


def _with(base: str, changes: dict[int, str]) -> str:
    chars = list(base)
    for byte, char in changes.items():
        chars[byte] = char
    return "".join(chars)


def _with_euro(page: str) -> str:
    if page.count("¤") != 1:
        raise AssertionError("a euro page needs exactly one currency sign to replace")
    return page.replace("¤", "€")


def _python_page(codec: str) -> str:
    """A Python codec's table; bytes it leaves unassigned become the C1 control of that value
    (what IBM's tables do for Windows code pages)."""
    return "".join(bytes([b]).decode(codec, "ignore") or chr(b) for b in range(256))


def _without(page: str, positions: tuple[int, ...]) -> str:
    """IBM's pre-euro Windows pages: these bytes are the C1 control of the same value."""
    return _with(page, {b: chr(b) for b in positions})


_EBCDIC_TABLES: dict[int, str] = {37: _CP037}
_EBCDIC_TABLES.update((ccsid, _with(_CP037, changes)) for ccsid, changes in _EBCDIC_DIFFERENCES_FROM_037.items())
_EBCDIC_TABLES.update((ccsid, _with_euro(_EBCDIC_TABLES[base])) for ccsid, base in _EURO_PAGE_OF.items())

_ASCII = "".join(map(chr, range(128))) + _UNDEFINED * 128
_IBM_PC_CONTROLS = {0x1A: "\x1c", 0x1C: "\x7f", 0x7F: "\x1a"}
_WINDOWS_1250, _WINDOWS_1251, _WINDOWS_1252 = map(_python_page, ("cp1250", "cp1251", "cp1252"))
_ASCII_TABLES: dict[int, str] = {
    367: _ASCII,  # US-ASCII
    646: _ASCII,  # ISO 646 IRV
    819: "".join(map(chr, range(256))),  # ISO 8859-1
    912: _python_page("iso8859_2"),  # ISO 8859-2
    923: _python_page("iso8859_15"),  # ISO 8859-15
    437: _with(_python_page("cp437"), _IBM_PC_CONTROLS),  # PC US
    850: _with(_python_page("cp850"), _IBM_PC_CONTROLS),  # PC Latin-1
    1250: _without(_WINDOWS_1250, (0x80,)),
    1251: _without(_WINDOWS_1251, (0x88,)),
    1252: _without(_WINDOWS_1252, (0x80, 0x8E, 0x9E)),
    5346: _WINDOWS_1250,
    5347: _WINDOWS_1251,
    5348: _WINDOWS_1252,
}

_SINGLE_BYTE: dict[int, str] = {**_EBCDIC_TABLES, **_ASCII_TABLES}
_ENCODING_MAPS = {ccsid: codecs.charmap_build(page) for ccsid, page in _SINGLE_BYTE.items()}
# UTF-16 CCSIDs take their byte order from MQ's Encoding field, which decode() is not given;
# header fields are never UTF-16, so these assume CDRA's default, big-endian, and keep a BOM.
_UNICODE_CODECS = {1208: "utf-8", 1200: "utf-16-be", 13488: "utf-16-be", 17584: "utf-16-be"}

KNOWN_CCSIDS: tuple[int, ...] = tuple(sorted([*_SINGLE_BYTE, *_UNICODE_CODECS]))

# CCSIDs we cannot decode but whose family we know. 930 and 1390 are Japanese Katakana: their
# single-byte page (290) has katakana where other EBCDIC pages have a-z.
_UNMAPPED_FAMILY = {930: True, 933: True, 935: True, 937: True, 939: True, 1390: True, 1399: True, 1051: False}
_KATAKANA = {930, 1390}


def _invariant_page(page: str, allowed: str) -> str:
    return "".join(c if c in allowed or c == "\0" else _REPLACEMENT for c in page)


_ASCII_INVARIANT = _invariant_page(_ASCII, INVARIANT)
_EBCDIC_INVARIANT = _invariant_page(_CP037, INVARIANT)
_KATAKANA_INVARIANT = _invariant_page(_CP037, INVARIANT.translate({ord(c): None for c in "abcdefghijklmnopqrstuvwxyz"}))
_NOT_ASCII_INVARIANT = bytes(b for b in range(256) if _ASCII_INVARIANT[b] in (_REPLACEMENT, "\0"))
_NOT_EBCDIC_INVARIANT = bytes(b for b in range(256) if _EBCDIC_INVARIANT[b] in (_REPLACEMENT, "\0"))


def is_known(ccsid: int) -> bool:
    """True when this module can decode every byte of this CCSID exactly."""
    return ccsid in _SINGLE_BYTE or ccsid in _UNICODE_CODECS


def is_ebcdic(ccsid: int) -> bool:
    """True for EBCDIC CCSIDs, including the Asian mixed ones this module cannot decode."""
    return ccsid in _EBCDIC_TABLES or _UNMAPPED_FAMILY.get(ccsid) is True


def is_single_byte(ccsid: int) -> bool:
    """True when `table(ccsid)` exists: one byte is one character."""
    return ccsid in _SINGLE_BYTE


def table(ccsid: int) -> str:
    """The 256 characters bytes 0x00-0xFF decode to (U+FFFD where the CCSID has none), so a
    vectorized decoder gives exactly what `decode` gives."""
    page = _SINGLE_BYTE.get(ccsid)
    if page is None:
        raise ValueError(f"CCSID {ccsid} has no single-byte table (known: {KNOWN_CCSIDS})")
    return page.replace(_UNDEFINED, _REPLACEMENT)


def _looks_ebcdic(raw: bytes) -> bool:
    """More bytes read as invariant characters in EBCDIC than in ASCII (a tie means ASCII)."""
    return len(raw.translate(None, _NOT_EBCDIC_INVARIANT)) > len(raw.translate(None, _NOT_ASCII_INVARIANT))


def _decode_invariant(raw: bytes, ccsid: int, ebcdic: bool | None) -> str:
    if ebcdic is None:
        ebcdic = _UNMAPPED_FAMILY.get(ccsid)
    if ebcdic is None:
        ebcdic = _looks_ebcdic(raw)
    if not ebcdic:
        page = _ASCII_INVARIANT
    else:
        page = _KATAKANA_INVARIANT if ccsid in _KATAKANA else _EBCDIC_INVARIANT
    return codecs.charmap_decode(raw, "strict", page)[0]


def decode(raw: bytes, ccsid: int, *, ebcdic: bool | None = None) -> tuple[str, bool]:
    """Decode ``raw``; returns (text, exact). Never raises.

    ``exact`` is True when the CCSID is known and every byte decoded to a character of it.
    Bytes a known CCSID does not define (ASCII above 0x7F, malformed UTF-8/16) become U+FFFD.
    For an unknown CCSID only invariant characters are decoded, one character per byte, and
    ``ebcdic`` says which family to read them in; when None, the family known for the CCSID,
    else a guess from the bytes. NUL is U+0000 everywhere, so NUL padding stays visible.
    """
    raw = bytes(raw)
    if ccsid in _SINGLE_BYTE:
        page = _SINGLE_BYTE[ccsid]
        try:
            return codecs.charmap_decode(raw, "strict", page)[0], True
        except UnicodeDecodeError:
            return codecs.charmap_decode(raw, "replace", page)[0], False
    if ccsid in _UNICODE_CODECS:
        codec = _UNICODE_CODECS[ccsid]
        try:
            return raw.decode(codec), True
        except UnicodeDecodeError:
            return raw.decode(codec, "replace"), False
    return _decode_invariant(raw, ccsid, ebcdic), False


def encode(text: str, ccsid: int) -> bytes:
    """Encode ``text`` in ``ccsid``, the exact inverse of `decode`; raises ValueError naming
    the CCSID and the character when the CCSID is unknown or has no code for a character."""
    try:
        if ccsid in _ENCODING_MAPS:
            return codecs.charmap_encode(text, "strict", _ENCODING_MAPS[ccsid])[0]
        if ccsid in _UNICODE_CODECS:
            return text.encode(_UNICODE_CODECS[ccsid])
    except UnicodeEncodeError as error:
        char = text[error.start]
        raise ValueError(
            f"CCSID {ccsid} has no code for {char!r} (U+{ord(char):04X}) at position {error.start} of {text!r}"
        ) from None
    raise ValueError(f"cannot encode in CCSID {ccsid}: not a CCSID this module knows (known: {KNOWN_CCSIDS})")
