"""Character sets: every table against Java's and Python's independent implementations, with
IBM's published CDRA mapping deciding where they disagree; round trips; unknown CCSIDs."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlq_pipeline.mq import codepages
from dlq_pipeline.mq.codepages import INVARIANT, KNOWN_CCSIDS, decode, encode, table
from tests.profiles import examples
from tests.support import REPO

FFFD = "\ufffd"

EBCDIC = [37, 273, 277, 278, 280, 284, 285, 297, 500, 871, 1047, *range(1140, 1150)]
ASCII_FAMILY = [367, 646, 819, 912, 923, 437, 850, 1250, 1251, 1252, 5346, 5347, 5348]
UNICODE = [1200, 1208, 13488, 17584]
SINGLE_BYTE = EBCDIC + ASCII_FAMILY

JAVA_NAME = {ccsid: f"Cp{ccsid:03d}" for ccsid in EBCDIC}
JAVA_NAME.update(
    {
        367: "US-ASCII",
        646: "US-ASCII",
        819: "ISO-8859-1",
        912: "ISO-8859-2",
        923: "ISO-8859-15",
        437: "Cp437",
        850: "Cp850",
        1250: "windows-1250",
        1251: "windows-1251",
        1252: "windows-1252",
        5346: "windows-1250",
        5347: "windows-1251",
        5348: "windows-1252",
    }
)

# Where Java and IBM's published CDRA table disagree: byte -> (IBM = ours, Java).
NL_LF = {0x15: ("\x85", "\n")}  # Java decodes EBCDIC NL as LF
SWAPPED_1047 = {0x15: ("\x85", "\n"), 0x25: ("\n", "\x85")}  # Java's 1047 swaps NL and LF
PC_CONTROLS = {0x1A: ("\x1c", "\x1a"), 0x1C: ("\x7f", "\x1c"), 0x7F: ("\x1a", "\x7f")}


def _unassigned(*positions):
    """Bytes Windows leaves unassigned: IBM gives them the C1 control, Java U+FFFD."""
    return {b: (chr(b), FFFD) for b in positions}


HOLES_1250 = _unassigned(0x81, 0x83, 0x88, 0x90, 0x98)
HOLES_1251 = _unassigned(0x98)
HOLES_1252 = _unassigned(0x81, 0x8D, 0x8F, 0x90, 0x9D)
JAVA_EXCEPTIONS = {ccsid: NL_LF for ccsid in EBCDIC}
JAVA_EXCEPTIONS.update(
    {
        1047: SWAPPED_1047,
        437: PC_CONTROLS,
        850: PC_CONTROLS,
        5346: HOLES_1250,
        1250: {**HOLES_1250, 0x80: ("\x80", "€")},
        5347: HOLES_1251,
        1251: {**HOLES_1251, 0x88: ("\x88", "€")},
        5348: HOLES_1252,
        1252: {**HOLES_1252, 0x80: ("\x80", "€"), 0x8E: ("\x8e", "Ž"), 0x9E: ("\x9e", "ž")},
    }
)


@pytest.fixture(scope="session")
def java_tables() -> dict[str, str]:
    """All the tables Java has, from one run of tests/java/DumpCodePage.java."""
    java = shutil.which("java")
    if java is None:
        pytest.fail("java is not on PATH: the code page tables are checked against Java 17's")
    names = sorted(set(JAVA_NAME.values()))
    result = subprocess.run(
        [java, "tests/java/DumpCodePage.java", *names], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    tables = {}
    for line in result.stdout.splitlines():
        name, *points = line.split()
        assert len(points) == 256, name
        tables[name] = "".join(chr(int(point, 16)) for point in points)
    assert sorted(tables) == names
    return tables


def test_the_ccsid_lists_are_what_this_module_knows():
    assert sorted(SINGLE_BYTE + UNICODE) == list(KNOWN_CCSIDS)
    assert all(codepages.is_known(c) for c in KNOWN_CCSIDS)
    assert all(codepages.is_single_byte(c) for c in SINGLE_BYTE)
    assert not any(codepages.is_single_byte(c) for c in UNICODE + [930, 9999, 0])


@pytest.mark.parametrize("ccsid", SINGLE_BYTE)
def test_table_equals_java_except_where_ibm_publishes_otherwise(ccsid, java_tables):
    ours, java = table(ccsid), java_tables[JAVA_NAME[ccsid]]
    exceptions = JAVA_EXCEPTIONS.get(ccsid, {})
    assert {b: (ours[b], java[b]) for b in exceptions} == exceptions
    assert {b: (ours[b], java[b]) for b in range(256) if ours[b] != java[b]} == exceptions


@pytest.mark.parametrize("ccsid", SINGLE_BYTE)
def test_decode_of_every_byte_is_the_table(ccsid):
    text, exact = decode(bytes(range(256)), ccsid)
    assert text == table(ccsid) and len(text) == 256
    assert exact is (FFFD not in text)


@pytest.mark.parametrize(
    "ccsid, codec, differences",
    [
        (37, "cp037", {}),
        (500, "cp500", {}),
        (1140, "cp1140", {}),
        (273, "cp273", {0xBC: ("¯", "\u203e")}),  # IBM's 273 has the macron, like every CECP page
        (819, "latin-1", {}),
        (912, "iso8859_2", {}),
        (923, "iso8859_15", {}),
        (437, "cp437", {b: (ours, python) for b, (ours, python) in PC_CONTROLS.items()}),
        (850, "cp850", {b: (ours, python) for b, (ours, python) in PC_CONTROLS.items()}),
        (5346, "cp1250", {}),
        (5347, "cp1251", {}),
        (5348, "cp1252", {}),
        (1250, "cp1250", {0x80: ("\x80", "€")}),
        (1251, "cp1251", {0x88: ("\x88", "€")}),
        (1252, "cp1252", {0x80: ("\x80", "€"), 0x8E: ("\x8e", "Ž"), 0x9E: ("\x9e", "ž")}),
        (367, "ascii", {}),
        (646, "ascii", {}),
    ],
)
def test_table_equals_pythons_codec_on_every_byte_python_defines(ccsid, codec, differences):
    ours = table(ccsid)
    python = {b: bytes([b]).decode(codec) for b in range(256) if _defines(codec, b)}
    found = {b: (ours[b], char) for b, char in python.items() if ours[b] != char}
    assert found == differences
    undefined_in_python = [b for b in range(256) if b not in python]
    assert all(ours[b] in (chr(b), FFFD) for b in undefined_in_python)


def _defines(codec: str, byte: int) -> bool:
    try:
        bytes([byte]).decode(codec)
        return True
    except UnicodeDecodeError:
        return False


def test_well_known_bytes():
    assert encode("[]^¬", 1047) == b"\xad\xbd\x5f\xb0"
    assert encode("[]^¬", 37) == b"\xba\xbb\xb0\x5f"
    assert encode("[]!", 500) == b"\x4a\x5a\x4f"
    assert encode("€", 1141) == encode("€", 1140) == encode("€", 1148) == b"\x9f"
    assert encode("€", 1142) == encode("€", 1143) == b"\x5a"  # where 277/278 have ¤
    assert encode("ÄÖÜäöüß", 273) == b"\x4a\xe0\x5a\xc0\x6a\xd0\xa1"
    assert encode("£", 285) == b"\x5b" and encode("$", 285) == b"\x4a"
    assert encode("DLH ", 500) == b"\xc4\xd3\xc8\x40"
    assert encode("€", 5348) == b"\x80" and encode("Ž", 5348) == b"\x8e"
    assert decode(b"\x15\x25", 37) == ("\x85\n", True)
    assert decode(b"\x15\x25", 1047) == ("\x85\n", True)


@pytest.mark.parametrize(
    "ccsid, base",
    [
        (1140, 37),
        (1141, 273),
        (1142, 277),
        (1143, 278),
        (1144, 280),
        (1145, 284),
        (1146, 285),
        (1147, 297),
        (1148, 500),
        (1149, 871),
    ],
)
def test_every_euro_page_is_its_national_page_with_the_euro(ccsid, base):
    differences = [(b, table(base)[b], table(ccsid)[b]) for b in range(256) if table(base)[b] != table(ccsid)[b]]
    assert len(differences) == 1 and differences[0][1:] == ("¤", "€")


@pytest.mark.parametrize("ccsid", SINGLE_BYTE)
def test_invariant_characters_sit_where_the_family_puts_them(ccsid):
    page = table(ccsid)
    home = table(37) if codepages.is_ebcdic(ccsid) else "".join(map(chr, range(128)))
    assert all(page[home.index(c)] == c for c in INVARIANT)
    assert page[0] == "\0"


# --- round trips ------------------------------------------------------------------------


def _repertoire(ccsid: int) -> list[str]:
    return sorted(set(table(ccsid)) - {FFFD}) if codepages.is_single_byte(ccsid) else []


@pytest.mark.parametrize("ccsid", SINGLE_BYTE)
@settings(max_examples=examples(150), deadline=None)
@given(data=st.data())
def test_decode_inverts_encode_over_the_repertoire(ccsid, data):
    text = data.draw(st.text(alphabet=st.sampled_from(_repertoire(ccsid)), max_size=80))
    raw = encode(text, ccsid)
    assert len(raw) == len(text)
    assert decode(raw, ccsid) == (text, True)


@pytest.mark.parametrize("ccsid", SINGLE_BYTE)
@settings(max_examples=examples(150), deadline=None)
@given(data=st.data())
def test_encode_inverts_decode_byte_for_byte(ccsid, data):
    defined = [b for b in range(256) if table(ccsid)[b] != FFFD]
    raw = bytes(data.draw(st.lists(st.sampled_from(defined), max_size=80)))
    text, exact = decode(raw, ccsid)
    assert exact and encode(text, ccsid) == raw


@pytest.mark.parametrize("ccsid", UNICODE)
@settings(max_examples=examples(200), deadline=None)
@given(text=st.text(max_size=60))
def test_unicode_ccsids_round_trip(ccsid, text):
    assert decode(encode(text, ccsid), ccsid) == (text, True)


def test_unicode_ccsids_are_big_endian_utf16_and_utf8():
    assert encode("A€", 1200) == b"\x00A\x20\xac" == encode("A€", 13488) == encode("A€", 17584)
    assert encode("A€", 1208) == b"A\xe2\x82\xac"
    assert decode(b"\xfe\xff\x00A", 1200) == ("\ufeffA", True)  # a BOM is kept, not obeyed


def test_malformed_unicode_is_replaced_and_not_exact():
    assert decode(b"ok\xff", 1208) == ("ok" + FFFD, False)
    assert decode(b"\xed\xa0\x80", 1208)[1] is False  # an encoded surrogate
    assert decode(b"\x00A\x00", 1200) == ("A" + FFFD, False)  # odd length
    assert decode(b"\xd8\x00\x00A", 1200) == (FFFD + "A", False)  # lone surrogate


@settings(max_examples=examples(500), deadline=None)
@given(
    raw=st.binary(max_size=64),
    ccsid=st.one_of(
        st.sampled_from(KNOWN_CCSIDS + (930, 939, 1051, 0, -1, -2, 9999)),
        st.integers(min_value=-(2**31), max_value=2**31 - 1),
    ),
    ebcdic=st.sampled_from([None, True, False]),
)
def test_decode_never_raises_and_keeps_one_character_per_byte(raw, ccsid, ebcdic):
    text, exact = decode(raw, ccsid, ebcdic=ebcdic)
    assert isinstance(text, str) and isinstance(exact, bool)
    if not codepages.is_known(ccsid):
        assert not exact
    if codepages.is_single_byte(ccsid) or not codepages.is_known(ccsid):
        assert len(text) == len(raw)
    assert decode(bytearray(raw), ccsid, ebcdic=ebcdic) == (text, exact)


# --- unknown CCSIDs ---------------------------------------------------------------------

LOWERCASE = "abcdefghijklmnopqrstuvwxyz"


def _invariant_only(text: str, allowed: str = INVARIANT) -> str:
    return "".join(c if c in allowed or c == "\0" else FFFD for c in text)


@settings(max_examples=examples(300), deadline=None)
@given(raw=st.binary(max_size=64), ccsid=st.sampled_from([9999, 0, 65535, 1051, 930, 939]))
def test_unknown_ccsids_decode_invariant_characters_of_the_family_given(raw, ccsid):
    """Oracle: Python's cp500 and latin-1, keeping only the invariant characters (and, for
    the Katakana CCSID 930, no lowercase letters in EBCDIC)."""
    ebcdic_allowed = "".join(c for c in INVARIANT if c not in LOWERCASE) if ccsid == 930 else INVARIANT
    assert decode(raw, ccsid, ebcdic=True) == (_invariant_only(raw.decode("cp500"), ebcdic_allowed), False)
    assert decode(raw, ccsid, ebcdic=False) == (_invariant_only(raw.decode("latin-1")), False)


def test_the_family_comes_from_the_hint_then_the_ccsid_then_the_bytes():
    ascii_name, ebcdic_name = b"DLQ.TARGET  ", "DLQ.TARGET  ".encode("cp500")
    assert decode(ascii_name, 9999) == ("DLQ.TARGET  ", False)
    assert decode(ebcdic_name, 9999) == ("DLQ.TARGET  ", False)
    assert decode(ebcdic_name, 939) == ("DLQ.TARGET  ", False)  # 939 is EBCDIC
    assert decode(b"AB", 939)[0] == FFFD * 2  # ... so ASCII letters are not read
    assert decode(b"AB", 1051)[0] == "AB"  # HP Roman-8 is ASCII-based
    assert decode(ebcdic_name, 9999, ebcdic=False)[0] == _invariant_only(ebcdic_name.decode("latin-1"))
    assert decode(b"", 9999) == ("", False)
    assert decode(b"\0\0", 9999) == ("\0\0", False)


def test_japanese_katakana_ccsids_have_no_lowercase_invariants():
    # CCSID 930's single-byte page (290) has katakana at 0x81.. where EBCDIC has a-z.
    raw = "Queue.A1".encode("cp500")
    assert decode(raw, 930) == ("Q" + FFFD * 4 + ".A1", False)
    assert decode(raw, 1390)[0] == decode(raw, 930)[0]
    assert decode(raw, 939) == ("Queue.A1", False)


def test_unknown_ccsids_replace_national_characters():
    assert decode("Q.ÄB#$@".encode("cp273"), 9999, ebcdic=True) == ("Q." + FFFD + "B" + FFFD * 3, False)
    assert decode("Q_1%/ ".encode("cp500"), 9999, ebcdic=True) == ("Q_1%/ ", False)


@pytest.mark.parametrize("ccsid", KNOWN_CCSIDS)
def test_nul_is_u0000_in_every_ccsid(ccsid):
    raw = encode("Q1", ccsid) + encode("\0", ccsid) * 3
    text, exact = decode(raw, ccsid)
    assert (text, exact) == ("Q1\0\0\0", True)


def test_family_predicates():
    assert all(codepages.is_ebcdic(c) for c in EBCDIC + [930, 933, 935, 937, 939, 1390, 1399])
    assert not any(codepages.is_ebcdic(c) for c in ASCII_FAMILY + UNICODE + [1051, 9999, 0])
    assert not any(codepages.is_known(c) for c in (930, 939, 1051, 9999, 0, -1, -2))


# --- errors -----------------------------------------------------------------------------


def test_encode_names_the_ccsid_and_the_character_it_cannot_encode():
    with pytest.raises(ValueError, match=r"CCSID 1252 has no code for '€' \(U\+20AC\) at position 2 of 'x €'"):
        encode("x €", 1252)
    with pytest.raises(ValueError, match=r"CCSID 367 has no code for 'é' \(U\+00E9\) at position 0"):
        encode("é", 367)
    with pytest.raises(ValueError, match=r"CCSID 1208 has no code for '\\ud800'"):
        encode("\ud800", 1208)
    with pytest.raises(ValueError, match=r"cannot encode in CCSID 930: not a CCSID this module knows"):
        encode("A", 930)


def test_table_refuses_ccsids_without_a_single_byte_table():
    for ccsid in (1208, 1200, 930, 9999):
        with pytest.raises(ValueError, match=f"CCSID {ccsid} has no single-byte table"):
            table(ccsid)


# --- the real fixture --------------------------------------------------------------------


def test_the_real_dump_decodes_exactly_in_its_ccsid(real_fixtures):
    """The real MQ 10 dump: CCSID 1208, blank-filled ApplIdentityData, a JSON body."""
    fields, data = {}, b""
    for line in (real_fixtures / "mq10-dmpmqmsg-stdout.dmp").read_text("utf-8").splitlines():
        if line.startswith("A "):
            fields[line[2:5]] = line[6:]
        elif line.startswith("X "):
            data += bytes.fromhex(line[2:])
    ccsid = int(fields["CCS"])
    assert codepages.is_known(ccsid) and not codepages.is_single_byte(ccsid)
    assert decode(bytes.fromhex(fields["AIX"]), ccsid) == (" " * 32, True)
    text, exact = decode(data, ccsid)
    assert exact and len(data) == 238
    assert json.loads(text)["erro"]["codigo"] == 2951
    assert encode(text, ccsid) == data
    for field in ("USR", "PAN", "RTM"):  # the character fields survive an EBCDIC round trip
        assert decode(encode(fields[field], 500), 500) == (fields[field], True)
