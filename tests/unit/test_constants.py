"""MQ constants: the generated tables, primary names, lookups and suggestions."""

from __future__ import annotations

import importlib.util
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlq_pipeline.mq import constants
from dlq_pipeline.mq.constants import FAMILIES, lookup, name_of, reason_name, suggest
from tests.profiles import examples
from tests.support import REPO

ALL_NAMES = sorted((name, family) for family, table in FAMILIES.items() for name in table)
RANGE_MARKER = re.compile(r"_(FIRST|LAST)$")


def _load_extractor():
    spec = importlib.util.spec_from_file_location("extract_mq_constants", REPO / "tools" / "extract_mq_constants.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_family_is_complete_enough_to_be_the_real_table():
    counts = {family: len(table) for family, table in FAMILIES.items()}
    assert counts["MQRC"] > 550  # every reason code, not a sample
    assert counts["MQFB"] >= 55 and counts["MQAT"] >= 40 and counts["MQFMT"] >= 20
    assert (counts["MQMT"], counts["MQPER"]) == (10, 5)
    for family, table in FAMILIES.items():
        assert all(name.startswith(family + "_") for name in table), family
    assert all(isinstance(v, int) for f, t in FAMILIES.items() if f != "MQFMT" for v in t.values())
    assert all(isinstance(v, str) and len(v) == 8 for v in constants.MQFMT.values())


def test_the_data_file_states_its_source():
    assert constants.SOURCE["package"].startswith("ibmmq 2.1.2")
    assert constants.SOURCE["mq_build_level"] == "p1001-L260922"
    assert constants.SOURCE["generator"] == "tools/extract_mq_constants.py"


@pytest.mark.parametrize(
    "value, name",
    [
        (0, "MQRC_NONE"),
        (2001, "MQRC_ALIAS_BASE_Q_TYPE_ERROR"),
        (2009, "MQRC_CONNECTION_BROKEN"),
        (2030, "MQRC_MSG_TOO_BIG_FOR_Q"),
        (2033, "MQRC_NO_MSG_AVAILABLE"),
        (2035, "MQRC_NOT_AUTHORIZED"),
        (2051, "MQRC_PUT_INHIBITED"),
        (2052, "MQRC_Q_DELETED"),
        (2053, "MQRC_Q_FULL"),
        (2056, "MQRC_Q_SPACE_NOT_AVAILABLE"),
        (2080, "MQRC_TRUNCATED_MSG_FAILED"),
        (2082, "MQRC_UNKNOWN_ALIAS_BASE_Q"),
        (2085, "MQRC_UNKNOWN_OBJECT_NAME"),
        (2087, "MQRC_UNKNOWN_REMOTE_Q_MGR"),
        (2110, "MQRC_FORMAT_ERROR"),
        (2119, "MQRC_NOT_CONVERTED"),
        (2189, "MQRC_CLUSTER_RESOLUTION_ERROR"),
        (2218, "MQRC_MSG_TOO_BIG_FOR_CHANNEL"),
    ],
)
def test_well_known_reason_codes(value, name):
    assert constants.MQRC[name] == value
    assert name_of("MQRC", value) == name
    assert reason_name(value) == name


def test_well_known_values_of_the_small_families():
    assert {n: constants.MQMT[n] for n in ("MQMT_REQUEST", "MQMT_REPLY", "MQMT_REPORT", "MQMT_DATAGRAM")} == {
        "MQMT_REQUEST": 1,
        "MQMT_REPLY": 2,
        "MQMT_REPORT": 4,
        "MQMT_DATAGRAM": 8,
    }
    assert constants.MQPER == {
        "MQPER_PERSISTENCE_AS_PARENT": -1,
        "MQPER_NOT_PERSISTENT": 0,
        "MQPER_PERSISTENT": 1,
        "MQPER_PERSISTENCE_AS_Q_DEF": 2,
        "MQPER_PERSISTENCE_AS_TOPIC_DEF": 2,
    }
    assert (
        constants.MQAT["MQAT_QMGR"],
        constants.MQAT["MQAT_UNKNOWN"],
        constants.MQAT["MQAT_NO_CONTEXT"],
        constants.MQAT["MQAT_CICS"],
        constants.MQAT["MQAT_ZOS"],
        constants.MQAT["MQAT_WINDOWS_NT"],
        constants.MQAT["MQAT_JAVA"],
        constants.MQAT["MQAT_USER_FIRST"],
    ) == (7, -1, 0, 1, 2, 11, 28, 65536)
    assert (
        constants.MQENC["MQENC_NATIVE"],
        constants.MQENC["MQENC_NORMAL"],
        constants.MQENC["MQENC_REVERSED"],
        constants.MQENC["MQENC_S390"],
        constants.MQENC["MQENC_TNS"],
        constants.MQENC["MQENC_RESERVED_MASK"],
    ) == (546, 273, 546, 785, 1041, -4096)
    assert (
        constants.MQFB["MQFB_NONE"],
        constants.MQFB["MQFB_EXPIRATION"],
        constants.MQFB["MQFB_COA"],
        constants.MQFB["MQFB_APPL_CANNOT_BE_STARTED"],
    ) == (0, 258, 259, 265)


def test_format_names_are_the_eight_character_strings():
    assert constants.MQFMT["MQFMT_DEAD_LETTER_HEADER"] == "MQDEAD  "
    assert constants.MQFMT["MQFMT_XMIT_Q_HEADER"] == "MQXMIT  "
    assert constants.MQFMT["MQFMT_STRING"] == "MQSTR   "
    assert constants.MQFMT["MQFMT_RF_HEADER_2"] == "MQHRF2  "
    assert constants.MQFMT["MQFMT_NONE"] == " " * 8
    assert name_of("MQFMT", "MQDEAD  ") == "MQFMT_DEAD_LETTER_HEADER"
    assert name_of("MQFMT", "MQDEAD") is None  # the field value is exactly 8 characters


@pytest.mark.parametrize(
    "family, value, primary, synonyms",
    [
        ("MQRC", 2120, "MQRC_CONVERTED_MSG_TOO_BIG", ["MQRC_TRUNCATED"]),
        ("MQRC", 2192, "MQRC_STORAGE_MEDIUM_FULL", ["MQRC_PAGESET_FULL"]),
        ("MQAT", 2, "MQAT_ZOS", ["MQAT_MVS", "MQAT_OS390"]),
        ("MQAT", 6, "MQAT_UNIX", ["MQAT_AIX", "MQAT_DEFAULT"]),
        ("MQAT", 13, "MQAT_NSK", ["MQAT_GUARDIAN"]),
        ("MQAT", 26, "MQAT_QMGR_PUBLISH", ["MQAT_BROKER"]),
        ("MQPER", 2, "MQPER_PERSISTENCE_AS_Q_DEF", ["MQPER_PERSISTENCE_AS_TOPIC_DEF"]),
        ("MQENC", 546, "MQENC_REVERSED", ["MQENC_NATIVE"]),
        ("MQFMT", "MQHRF   ", "MQFMT_RF_HEADER", ["MQFMT_RF_HEADER_1"]),
    ],
)
def test_synonyms_share_a_value_and_name_of_gives_the_primary(family, value, primary, synonyms):
    named = sorted(n for n, v in FAMILIES[family].items() if v == value)
    assert named == sorted([primary, *synonyms])
    assert name_of(family, value) == primary
    assert all(lookup(name) == (family, value) for name in named)


def test_range_markers_are_looked_up_but_never_named():
    assert lookup("MQRC_APPL_FIRST") == ("MQRC", 900)
    assert lookup("mqat_user_last") == ("MQAT", 999999999)
    assert lookup("MQFB_SYSTEM_LAST") == ("MQFB", 65535)
    assert name_of("MQRC", 900) is None
    assert name_of("MQAT", 65536) is None
    assert name_of("MQMT", 65535) is None
    assert reason_name(65535) is None


def test_encoding_zero_has_no_single_name():
    undefined = sorted(n for n, v in constants.MQENC.items() if v == 0)
    assert undefined == ["MQENC_DECIMAL_UNDEFINED", "MQENC_FLOAT_UNDEFINED", "MQENC_INTEGER_UNDEFINED"]
    assert name_of("MQENC", 0) is None


def test_every_name_round_trips_through_lookup_and_name_of():
    unnamed = set()
    for family, table in FAMILIES.items():
        for name, value in table.items():
            assert lookup(name) == (family, value)
            assert lookup(name.lower()) == (family, value)
            primary = name_of(family, value)
            if primary is None:
                unnamed.add((family, value))
            else:
                assert table[primary] == value and not RANGE_MARKER.search(primary)
    # Values with no primary name: only those named by range markers alone, and MQENC 0.
    for family, value in unnamed - {("MQENC", 0)}:
        names = [n for n, v in FAMILIES[family].items() if v == value]
        assert all(RANGE_MARKER.search(n) for n in names), (family, value, names)


def test_each_value_has_exactly_one_primary_name():
    for family in FAMILIES:
        primaries = constants._DATA["families"][family]["primary"]
        values = [FAMILIES[family][name] for name in primaries]
        assert len(values) == len(set(values)), family


def test_reason_name_tries_reason_codes_then_feedback_codes():
    assert reason_name(2053) == "MQRC_Q_FULL"
    assert reason_name(265) == "MQFB_APPL_CANNOT_BE_STARTED"
    assert reason_name(258) == "MQFB_EXPIRATION"
    assert reason_name(0) == "MQRC_NONE"  # MQFB_NONE is 0 too; MQRC comes first
    assert reason_name(12345) is None
    assert reason_name(-1) is None
    shared = {v for v in constants.MQRC.values()} & {v for v in constants.MQFB.values()}
    assert shared == {0}  # so the order only matters for 0


def test_lookup_refuses_unknown_and_foreign_names():
    assert lookup("MQRC_NO_SUCH_THING") is None
    assert lookup("MQRCCF_CFH_TYPE_ERROR") is None  # PCF reason codes are another family
    assert lookup("MQ_Q_NAME_LENGTH") is None
    assert lookup("") is None
    assert lookup("Q_FULL") is None


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_lookup_ignores_case(data):
    name, family = data.draw(st.sampled_from(ALL_NAMES))
    flips = data.draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    mixed = "".join(c.swapcase() if flip else c for c, flip in zip(name, flips))
    assert lookup(mixed) == (family, FAMILIES[family][name])


def test_suggest_finds_the_intended_name_for_typos():
    assert suggest("MQRC_Q_FUL", ("MQRC",))[0] == "MQRC_Q_FULL"
    assert suggest("mqrc_q_ful", ("MQRC", "MQFB"))[0] == "MQRC_Q_FULL"
    assert suggest("MQRC_NOT_AUTHORISED", ("MQRC", "MQFB"))[0] == "MQRC_NOT_AUTHORIZED"
    assert suggest("MQAT_WINDOWS_N", ("MQAT",))[0] == "MQAT_WINDOWS_NT"
    assert suggest("MQPER_PERSISTANT", ("MQPER",))[0] == "MQPER_PERSISTENT"


def test_suggest_stays_within_the_families_and_the_limit():
    assert all(n.startswith("MQFB_") for n in suggest("MQRC_Q_FUL", ("MQFB",)))
    assert len(suggest("MQRC_Q_FULL", ("MQRC",), limit=1)) == 1
    assert len(suggest("MQRC_Q_", ("MQRC",), limit=5)) == 5
    assert suggest("XYZZY", ("MQRC", "MQFB")) == []


def test_an_unknown_family_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown constant family 'MQXX'"):
        name_of("MQXX", 1)
    with pytest.raises(ValueError, match="unknown constant family 'MQRCCF'"):
        suggest("MQRC_Q_FULL", ("MQRC", "MQRCCF"))


def test_the_real_dump_fields_have_the_expected_names(real_fixtures):
    """The MQMD attribute lines of a real MQ 10 dmpmqmsg dump, named through the tables."""
    fields = {}
    for line in (real_fixtures / "mq10-dmpmqmsg-stdout.dmp").read_text("utf-8").splitlines():
        if line.startswith("A "):
            fields[line[2:5]] = line[6:]
    assert name_of("MQMT", int(fields["MST"])) == "MQMT_DATAGRAM"
    assert name_of("MQPER", int(fields["PER"])) == "MQPER_PERSISTENT"
    assert name_of("MQAT", int(fields["PAT"])) == "MQAT_UNIX"
    assert reason_name(int(fields["FDB"])) == "MQRC_NONE"
    assert int(fields["ENC"]) == constants.MQENC["MQENC_NATIVE"]
    assert name_of("MQFMT", fields["FMT"]) == "MQFMT_STRING"


# --- the generator in tools/ -----------------------------------------------------------

SAMPLE_CMQC = """
# Encodings
MQENC_NATIVE                             = 0x00000222
MQENC_INTEGER_NORMAL                     = 0x00000001
MQENC_DECIMAL_NORMAL                     = 0x00000010
MQENC_FLOAT_IEEE_NORMAL                  = 0x00000100
MQENC_RESERVED_MASK                      = 0xfffff000
MQENC_NORMAL                             = ( MQENC_FLOAT_IEEE_NORMAL
                                           | MQENC_DECIMAL_NORMAL
                                           | MQENC_INTEGER_NORMAL )
MQFMT_RF_HEADER                          = b"MQHRF   "
MQFMT_RF_HEADER_1                        = b"MQHRF   "
MQFMT_RF_HEADER_ARRAY                    = [b"M", b"Q", b"H", b"R", b"F", b" ", b" ", b" "]
MQPER_PERSISTENCE_AS_PARENT              = (-1)
MQRC_NONE                                = 0
MQRCCF_CFH_TYPE_ERROR                    = 3001
MQXX_OTHER                               = 7
"""
SAMPLE_CMQSTRC = """
MQRC_DICT = {
    0: "MQRC_NONE",
}
MQFB_DICT = {
}
MQMT_DICT = {
}
MQPER_DICT = {
    -1: "MQPER_PERSISTENCE_AS_PARENT",
}
MQAT_DICT = {
}
MQENC_DICT = {
    -4096: "MQENC_RESERVED_MASK",
    273: "MQENC_NORMAL",
}
"""


def test_the_generator_reads_declarations_as_text(tmp_path):
    extractor = _load_extractor()
    cmqc, cmqstrc = tmp_path / "cmqc.py", tmp_path / "cmqstrc.py"
    cmqc.write_text(SAMPLE_CMQC)
    cmqstrc.write_text(SAMPLE_CMQSTRC)
    families = extractor.build(cmqc, cmqstrc)["families"]
    assert families["MQENC"] == {
        "values": {
            "MQENC_NATIVE": 546,
            "MQENC_INTEGER_NORMAL": 1,
            "MQENC_DECIMAL_NORMAL": 16,
            "MQENC_FLOAT_IEEE_NORMAL": 256,
            "MQENC_RESERVED_MASK": -4096,
            "MQENC_NORMAL": 273,
        },
        "primary": ["MQENC_RESERVED_MASK", "MQENC_NORMAL"],
    }
    assert families["MQFMT"] == {
        "values": {"MQFMT_RF_HEADER": "MQHRF   ", "MQFMT_RF_HEADER_1": "MQHRF   "},
        "primary": ["MQFMT_RF_HEADER"],
    }
    assert families["MQPER"]["values"] == {"MQPER_PERSISTENCE_AS_PARENT": -1}
    assert families["MQRC"]["values"] == {"MQRC_NONE": 0}


def test_the_generator_refuses_a_primary_name_with_another_value(tmp_path):
    extractor = _load_extractor()
    cmqc, cmqstrc = tmp_path / "cmqc.py", tmp_path / "cmqstrc.py"
    cmqc.write_text(SAMPLE_CMQC)
    cmqstrc.write_text(SAMPLE_CMQSTRC.replace('273: "MQENC_NORMAL"', '274: "MQENC_NORMAL"'))
    with pytest.raises(ValueError, match=r"MQENC names whose value differs.*274, 'MQENC_NORMAL'"):
        extractor.build(cmqc, cmqstrc)


def test_the_generator_refuses_what_it_cannot_evaluate(tmp_path):
    extractor = _load_extractor()
    cmqc, cmqstrc = tmp_path / "cmqc.py", tmp_path / "cmqstrc.py"
    cmqc.write_text("MQRC_NONE = 0\nMQRC_ODD = MQRC_NONE * 2\n")
    cmqstrc.write_text(SAMPLE_CMQSTRC)
    with pytest.raises(ValueError, match=r"cmqc.py:2: cannot evaluate 'MQRC_NONE \* 2'"):
        extractor.build(cmqc, cmqstrc)


def test_the_committed_data_file_is_formatted_as_the_generator_writes_it():
    """A hand edit that does not go through the generator shows up as a formatting change."""
    text = (REPO / "dlq_pipeline" / "data" / "mq_constants.json").read_text("utf-8")
    data = json.loads(text)
    assert text == json.dumps(data, indent=1, ensure_ascii=True) + "\n"
    assert list(data["families"]) == list(_load_extractor().FAMILIES)
