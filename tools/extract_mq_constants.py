"""Regenerate dlq_pipeline/data/mq_constants.json from IBM's published MQI declarations.

The source is the Python rendering of IBM's cmqc.h that ships in the `ibmmq` wheel (the
project's optional `mq` dependency), read as *text*: nothing from it is imported or run.

    pip download ibmmq==2.1.2 --no-deps --only-binary :all: -d /tmp/ibmmq
    python -m zipfile -e /tmp/ibmmq/ibmmq-2.1.2-*.whl /tmp/ibmmq/x
    python tools/extract_mq_constants.py /tmp/ibmmq/x/ibmmq/_CMQC_linux_x64.py \
        /tmp/ibmmq/x/ibmmq/CMQSTRC.py > dlq_pipeline/data/mq_constants.json

`_CMQC_linux_x64.py` gives every name and value (MQENC_NATIVE is the x86-64 Linux value, 546).
`CMQSTRC.py` is IBM's own value -> name table; it names the *primary* constant for each value
(no *_FIRST/*_LAST markers, one name per synonym group). It has no table for MQFMT, so there the
first name in header order is primary.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

FAMILIES = ("MQRC", "MQFB", "MQMT", "MQPER", "MQAT", "MQENC", "MQFMT")
_ASSIGNMENT = re.compile(r"^(MQ(?:RC|FB|MT|PER|AT|ENC|FMT)_\w+)\s*=\s*(.*)$")
_BUILD = re.compile(r"(Generated on|Build Level):\s*(.+?)\s*$", re.M)


def _evaluate(expression: str, known: dict[str, int | str], where: str) -> int | str:
    """Values are literals, earlier names, `|`, `+` and unary minus; anything else is refused."""

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
            return node.value.decode("ascii")
        if isinstance(node, ast.Name) and node.id in known:
            return known[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return value(node.left) | value(node.right)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return value(node.left) + value(node.right)
        raise ValueError(f"{where}: cannot evaluate {ast.unparse(node)!r}")

    return value(ast.parse(expression.strip(), mode="eval").body)


def _as_mqlong(value: int | str) -> int | str:
    """Hex literals such as 0xfffff000 are written unsigned; an MQLONG is a signed 32-bit integer."""
    if isinstance(value, int) and value >= 2**31:
        return value - 2**32
    return value


def read_declarations(text: str, path: str) -> dict[str, dict[str, int | str]]:
    """name -> value per family, in header order (a declaration may span lines in parentheses)."""
    families: dict[str, dict[str, int | str]] = {family: {} for family in FAMILIES}
    known: dict[str, int | str] = {}
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        match = _ASSIGNMENT.match(lines[index])
        start = index + 1
        index += 1
        if not match or match.group(1).endswith("_ARRAY"):
            continue
        name, expression = match.groups()
        while expression.count("(") > expression.count(")"):
            expression += " " + lines[index].strip()
            index += 1
        known[name] = _as_mqlong(_evaluate(expression, known, f"{path}:{start}"))
        families[name.split("_", 1)[0]][name] = known[name]
    return families


def read_primary_names(text: str, path: str) -> dict[str, dict[int, str]]:
    """value -> name from IBM's CMQSTRC tables, per family (there is none for MQFMT)."""
    primary = {}
    for family in FAMILIES:
        if family == "MQFMT":
            continue
        block = re.search(rf"^{family}_DICT = \{{(.*?)^\}}", text, re.S | re.M)
        if block is None:
            raise ValueError(f"{path}: no {family}_DICT table")
        pairs = re.findall(r'^\s*(-?\d+): "(\w+)",', block.group(1), re.M)
        primary[family] = {int(value): name for value, name in pairs}
    return primary


def build(cmqc_path: Path, cmqstrc_path: Path) -> dict:
    cmqc = cmqc_path.read_text("utf-8")
    declarations = read_declarations(cmqc, str(cmqc_path))
    primary = read_primary_names(cmqstrc_path.read_text("utf-8"), str(cmqstrc_path))
    primary["MQFMT"] = {}
    for name, value in declarations["MQFMT"].items():
        primary["MQFMT"].setdefault(value, name)
    for family, names in primary.items():
        wrong = [(v, n) for v, n in names.items() if declarations[family].get(n) != v]
        if wrong:
            raise ValueError(f"{cmqstrc_path}: {family} names whose value differs from {cmqc_path}: {wrong}")
    build_info = {key: " ".join(value.split()) for key, value in _BUILD.findall(cmqc)}
    return {
        "source": {
            "what": "IBM MQ MQI constants (cmqc.h) as rendered in the ibmmq wheel",
            "package": "ibmmq 2.1.2 (PyPI), files ibmmq/_CMQC_linux_x64.py and ibmmq/CMQSTRC.py",
            "mq_build_level": build_info.get("Build Level"),
            "generated_on": build_info.get("Generated on"),
            "platform_note": "MQENC_NATIVE is the x86-64 Linux value",
            "generator": "tools/extract_mq_constants.py",
        },
        "families": {
            family: {"values": declarations[family], "primary": list(primary[family].values())} for family in FAMILIES
        },
    }


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    data = build(Path(argv[1]), Path(argv[2]))
    sys.stdout.write(json.dumps(data, indent=1, ensure_ascii=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
