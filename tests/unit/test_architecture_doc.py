"""docs/architecture.md is true to the code: its module list is the package's modules, and
its message path names functions that exist, taking `run_pipeline`'s stages in order.

The page's format, which these tests read:

- "## Every module": one table row per module, its first cell the backticked path relative
  to ``dlq_pipeline/`` (`` | `mq/structures.py` | ... ``). A package's ``__init__.py`` that
  holds only its docstring is not listed; one with code (``cli/__init__.py``,
  ``config/__init__.py``, the root's ``__version__``) is.
- "## One message, from a dump to its ledger row": numbered steps naming what they call as
  backticked dotted names relative to ``dlq_pipeline.`` (`` `ingest.spark.ingest` ``,
  `` `warehouse.storage.Storage.append` ``; a ``dlq_pipeline.`` prefix is accepted). A
  backticked dotted name whose first part is a module or package of the package is a
  reference; anything else (`` `messages.data_head` ``) is prose.

Beyond the page: every page of docs/, the README and every module's own text (docstrings,
comments) cite only what is there: a backticked ``module.name`` resolves (an option, cited
as ``section.key``, is an option), a file path names a file, ``test_x.py::test_y`` a test,
and ``docs/x.md, "Title"`` a heading (or a paragraph's bold lead) of that page.

Pure: the message-path check imports modules that import pyspark, but starts no Spark and
no Java.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from tests.support import REPO

PACKAGE = "dlq_pipeline"
ROOT = REPO / PACKAGE
DOC = REPO / "docs" / "architecture.md"
MODULES_HEADING = "## Every module"
PATH_HEADING = "## One message, from a dump to its ledger row"

MODULE_ROW = re.compile(r"^\|\s*`([^`]+\.py)`\s*\|")
DOTTED = re.compile(r"`((?:dlq_pipeline\.)?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`")
STEP = re.compile(r"^\d+\.\s")
# What a message's path is made of; `runtime` is what every command runs with (clocks,
# progress), not a step of a message.
NOT_STEPS = ("runtime",)


def section(heading: str) -> str:
    """The text of the page's section under ``heading``, up to the next ``## `` heading."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    assert heading in lines, f"docs/architecture.md has no {heading!r} section"
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end])


def only_docstring(path: Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return not body


def package_modules() -> set[str]:
    """Every ``.py`` file of the package, relative to ``dlq_pipeline/``, less the
    ``__init__.py`` files that only hold their package's docstring."""
    return {
        p.relative_to(ROOT).as_posix()
        for p in ROOT.rglob("*.py")
        if not (p.name == "__init__.py" and only_docstring(p))
    }


def listed_modules() -> list[str]:
    return [m.group(1) for line in section(MODULES_HEADING).splitlines() if (m := MODULE_ROW.match(line))]


TOP_LEVEL = {p.stem for p in ROOT.glob("*.py") if p.name != "__init__.py"} | {
    p.parent.name for p in ROOT.glob("*/__init__.py")
}


def references(text: str) -> list[str]:
    """The dotted names ``text`` refers to, relative to the package, in order of appearance."""
    found = []
    for m in DOTTED.finditer(text):
        name = m.group(1).removeprefix(f"{PACKAGE}.")
        if name.split(".")[0] in TOP_LEVEL:
            found.append(name)
    return found


def module_of(name: str) -> tuple[str, list[str]]:
    """The longest leading part of ``name`` that is a module of the package, and the rest."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        path = ROOT.joinpath(*parts[:n])
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            return ".".join(parts[:n]), parts[n:]
    return "", parts


def problem(name: str) -> str | None:
    """Why ``name`` is not a public function (or class, constant) of a module of the package."""
    module, attributes = module_of(name)
    if not attributes:
        return f"{name}: a module; name the function"
    if any(a.startswith("_") for a in attributes):
        return f"{name}: a private name"
    obj = importlib.import_module(f"{PACKAGE}.{module}")
    for i, attribute in enumerate(attributes):
        if not hasattr(obj, attribute):
            return f"{name}: {PACKAGE}.{module} has no {'.'.join(attributes[: i + 1])}"
        obj = getattr(obj, attribute)
    return None


def stage_calls() -> list[str]:
    """The package's functions `dlq_pipeline.pipeline` calls inside its ``with stage(...)``
    blocks, relative to the package, in the order of the source (``runtime`` helpers left
    out): the stages of a run and what each one runs, in the order they run."""
    path = ROOT / "pipeline.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    known = {n.name: f"pipeline.{n.name}" for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{PACKAGE}."):
            for alias in node.names:
                known[alias.asname or alias.name] = f"{node.module.removeprefix(f'{PACKAGE}.')}.{alias.name}"
    calls: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        in_stage = isinstance(node, ast.With) and any(
            isinstance(item.context_expr, ast.Call)
            and isinstance(item.context_expr.func, ast.Name)
            and item.context_expr.func.id == "stage"
            for item in node.items
        )
        if not in_stage:
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id in known:
                name = known[inner.func.id]
                if name.split(".")[0] not in NOT_STEPS:
                    # by where the call ends: an argument's call runs before the call it is in
                    calls.append((inner.end_lineno or 0, inner.end_col_offset or 0, name))
    ordered: list[str] = []
    for _, _, name in sorted(calls):
        if name not in ordered:
            ordered.append(name)
    return ordered


def test_the_readers_of_the_page_see_it():
    """The parsing above finds what the page holds: module rows, references, numbered steps,
    and the stages of `run_pipeline`."""
    assert "mq/structures.py" in listed_modules() and "config/__init__.py" in listed_modules()
    assert "ingest.spark.ingest" in references(section(PATH_HEADING))
    assert references("`dlq_pipeline.fs.delete`, `messages.data_head`") == ["fs.delete"]
    assert module_of("warehouse.storage.Storage.append") == ("warehouse.storage", ["Storage", "append"])
    assert problem("pipeline.no_such_function") and problem("mq.structures") and problem("pipeline._Stages")
    assert {"ingest.spark.ingest", "classify.spark.decide_pending", "replay.spark.replay"} <= set(stage_calls())


def test_the_module_list_is_every_module_of_the_package():
    """The page lists each module of dlq_pipeline/ once, and nothing that is not one."""
    listed = listed_modules()
    assert sorted(m for m in set(listed) if listed.count(m) > 1) == [], "listed twice"
    actual = package_modules()
    assert sorted(actual - set(listed)) == [], "modules the page does not list"
    assert sorted(set(listed) - actual) == [], "listed modules that do not exist (or only hold a docstring)"


def test_every_step_of_the_message_path_names_a_function():
    """Each numbered step of the message path names at least one module.function."""
    steps: list[list[str]] = []
    for line in section(PATH_HEADING).splitlines():
        if STEP.match(line):
            steps.append([line])
        elif steps and line.startswith("   "):
            steps[-1].append(line)
    assert len(steps) >= 10
    bare = [lines[0] for lines in steps if not references("\n".join(lines))]
    assert bare == []


def test_every_function_the_message_path_names_exists():
    """Every module.function the message path names is a public attribute of that module."""
    names = references(section(PATH_HEADING))
    assert names
    problems = [p for name in dict.fromkeys(names) if (p := problem(name))]
    assert problems == []


def test_the_message_path_takes_the_stages_in_the_order_run_pipeline_runs_them():
    """The path names every function `run_pipeline`'s stages call, first mentioned in the
    order the pipeline calls them."""
    names = references(section(PATH_HEADING))
    stages = stage_calls()
    assert [s for s in stages if s not in names] == [], "stage calls the path does not name"
    first = sorted(stages, key=names.index)
    assert first == stages


# -- every name the docs and the package's own text cite ------------------------------------

DOCS = sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]
SOURCES = sorted(ROOT.rglob("*.py"))
FILE_PATH = re.compile(
    r"(?<![\w/.-])((?:dlq_pipeline|tests|benchmarks|tools|docs|constraints)/[\w/.-]*\w\.(?:py|md|txt|toml|json))"
)
BACKTICKED_FILE = re.compile(r"``?([\w/-]+\.py)(?:::\w+)?``?")
TEST_NAME = re.compile(r"((?:tests/)?[\w/]*test_\w+\.py)::(\w+)")
PROJECT_DIRS = ("dlq_pipeline", "tests", "benchmarks", "tools", "docs")  # not the virtual environment
SECTION = re.compile(r"((?:docs/)?[\w-]+\.md),? \(?\"([^\s\"'][^\"]*)\"")


def cited_texts() -> list[tuple[str, str]]:
    """Every page of docs/ (and the README) and every module of the package, as (where, text)."""
    return [(p.relative_to(REPO).as_posix(), p.read_text(encoding="utf-8")) for p in DOCS + SOURCES]


def headings(doc: Path) -> list[str]:
    """The page's headings and the bold leads of its paragraphs (``**Large messages need
    heap.**``), a leading section number (``6. ``) left off."""
    found = []
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            found.append(line.lstrip("#").strip())
        elif line.startswith("**") and "**" in line[2:]:
            found.append(line[2 : line.index("**", 2)].rstrip("."))
    return [re.sub(r"^\d+\.\s+", "", h) for h in found]


def has_section(doc: Path, title: str) -> bool:
    """A heading of ``doc`` is ``title``, or starts with it and goes on after a word
    (``### After installing: `dlq-pipeline setup```)."""
    return doc.is_file() and any(
        h == title or (h.startswith(title) and not h[len(title)].isalnum()) for h in headings(doc)
    )


def cited_title(raw: str) -> str:
    """A quoted title as one line: a title wrapped over lines of a comment (``#``) or of a
    Python list of strings (``',`` ... ``'``) is joined."""
    joined = " ".join(re.sub(r"['\"],\s*['\"]", " ", raw).replace("#", " ").split())
    return re.sub(r"^\d+\.\s+", "", joined)


def file_problem(path: str) -> str | None:
    """Why a cited file path names no file: relative to the repository, or (a bare
    ``x/y.py``) to the package, or (a bare ``y.py``) the name of some file of the repository."""
    if (REPO / path).exists() or (ROOT / path).exists():
        return None
    if "/" not in path and any(any((REPO / d).glob(f"**/{path}")) for d in PROJECT_DIRS):
        return None
    return f"{path}: no such file"


def option_names() -> set[str]:
    """Every configuration option as ``section.key`` (``mq.qmgrs`` included), the names docs
    cite settings by."""
    from dlq_pipeline.config import OPTIONS

    return {f"{section}.{key}" for section, keys in OPTIONS.items() for key in keys} | {"mq.qmgrs"}


# Settings of Hadoop and Spark a page may cite, whose first part reads like a module's name.
OUTSIDE_SETTINGS = ("fs.defaultFS",)
FILE_NAME = re.compile(r"\.(?:py|md|toml|json|txt|jar|java)$")


def reference_problems(where: str, text: str) -> list[str]:
    found = []
    options = option_names()
    for name in dict.fromkeys(references(text)):
        if FILE_NAME.search(name) or name in OUTSIDE_SETTINGS:
            continue
        if ".".join(name.split(".")[:2]) in options:
            continue
        module, attributes = module_of(name)
        obj = importlib.import_module(f"{PACKAGE}.{module}") if module else None
        for i, attribute in enumerate(attributes):
            if obj is None or not hasattr(obj, attribute):
                found.append(f"{where}: `{name}`: {PACKAGE}.{module} has no {'.'.join(attributes[: i + 1])}")
                break
            obj = getattr(obj, attribute)
    for path in dict.fromkeys(FILE_PATH.findall(text) + BACKTICKED_FILE.findall(text)):
        if problem_ := file_problem(path):
            found.append(f"{where}: {problem_}")
    for path, test in dict.fromkeys(TEST_NAME.findall(text)):
        files = [REPO / path] if path.startswith("tests/") else list((REPO / "tests").glob(f"**/{path}"))
        if files and not any(
            re.search(rf"^(?:async )?def {test}\b", f.read_text(encoding="utf-8"), re.M) for f in files if f.is_file()
        ):
            found.append(f"{where}: {path}::{test}: no such test")
    for page, raw in dict.fromkeys(SECTION.findall(text)):
        title = cited_title(raw)
        docs = [REPO / page] if page.startswith("docs/") else list((REPO / "docs").glob(f"*{page}"))
        if not any(has_section(d, title) for d in docs):
            found.append(f'{where}: {page}, "{title}": no such section')
    return found


def test_the_reference_reader_finds_what_is_cited():
    text = 'see `warehouse.ledger.not_ended`, `mq/nothing.py`, docs/replay.md, "No such title", ``compiler.py``'
    problems = reference_problems("x", text)
    assert [p.split(": ")[1] for p in problems] == ["mq/nothing.py", "compiler.py", 'docs/replay.md, "No such title"']
    assert reference_problems("x", '`warehouse.ledger.nothing` docs/replay.md, "Expiry"') == [
        "x: `warehouse.ledger.nothing`: dlq_pipeline.warehouse.ledger has no nothing"
    ]


def test_every_name_path_and_section_the_docs_and_the_package_cite_exists():
    """A backticked ``module.name`` (relative to the package), a file path, a test
    (``test_x.py::test_y``) and a section (``docs/x.md, "Title"``) cited by a page of docs/, the
    README or a module's docstrings and comments is there."""
    problems = [p for where, text in cited_texts() for p in reference_problems(where, text)]
    assert problems == []
