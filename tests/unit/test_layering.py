"""The package's layering, read from the source with `ast` (nothing is imported):

- pyspark (or py4j, delta) is imported only where Spark is the point: the ``engine/`` and
  ``warehouse/`` packages, ``pipeline.py`` (the run's sequencing), ``class_archive_dump.py``
  (the run a class archive is recorded from) and each concept's ``spark.py``
  (``mq/spark.py``, ``ingest/spark.py``, ``rules/spark.py`` ...), at module level or inside
  a function (imports for type checkers only do not count);
- the command-line edge (``dlq_pipeline/cli/``, ``dlq_pipeline/jobs.py``) imports a module
  that reaches pyspark only inside the function of a command that runs Spark, so
  ``inspect``, ``generate`` and ``rules`` start without Java; no other module outside those
  homes imports one at all;
- only ``dlq_pipeline/mq/`` imports an MQ client library (ibmmq, pymqi);
- only the edge (the command line, jobs) and ``dlq_pipeline/config/`` read the
  configuration: library code is given typed settings, never a ``Config``;
- no module imports a private name (``_x``) from another module, nor reaches one through an
  imported module (``module._x``);
- the modules import each other without a cycle (lazy imports inside functions included: a
  cycle broken only by import order is still two modules that need each other);
- the packages sit in one order (`LAYERS`), a concept's ``spark.py`` above the warehouse and
  its meaning below it, and a module imports only from its own layer or those below;
- the benchmarks (``benchmarks/``) keep the last two rules as well.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import REPO

PACKAGE = "dlq_pipeline"
ROOT = REPO / PACKAGE
SPARK_LIBRARIES = ("pyspark", "py4j", "delta")
MQ_LIBRARIES = ("ibmmq", "pymqi")
EDGE = ("dlq_pipeline.cli", "dlq_pipeline.jobs")
CONFIG_READERS = (*EDGE, "dlq_pipeline.config")
SPARK_PACKAGES = (
    "dlq_pipeline.engine",
    "dlq_pipeline.warehouse",
    "dlq_pipeline.pipeline",
    "dlq_pipeline.class_archive_dump",
)


def spark_home(module: str) -> bool:
    """Where pyspark may be imported: the Spark packages, and a concept's ``spark.py``."""
    return any(_under(module, p) for p in SPARK_PACKAGES) or module.rpartition(".")[2] == "spark"


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the module imported (for `from X import name`: X.name when that is a module, else X)
    name: str | None  # the name taken from ``target`` (None for `import X` and for a submodule)
    line: int
    lazy: bool  # inside a function


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(p): p for p in sorted(root.rglob("*.py"))}


MODULES = all_modules()
BENCHMARKS = all_modules(ROOT.parent / "benchmarks")
KNOWN = {**MODULES, **BENCHMARKS}  # what an import may name as a module, in either scan


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names (relative imports included)."""
    if not node.level:
        return node.module or ""
    is_package = KNOWN.get(module, Path()).name == "__init__.py"
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[Import] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child):
                continue
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend(Import(module, a.name, None, child.lineno, lazy) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                source = _resolve(module, child)
                for alias in child.names:
                    sub = f"{source}.{alias.name}"
                    if sub in KNOWN:
                        found.append(Import(module, sub, None, child.lineno, lazy))
                    else:
                        found.append(Import(module, source, alias.name, child.lineno, lazy))
            visit(child, inner)

    visit(tree, False)
    return found


IMPORTS = {m: imports_of(m, p) for m, p in MODULES.items()}
# The package and the benchmarks, each with its imports: the private-name and cycle checks run over both.
SCANS = {
    PACKAGE: (MODULES, IMPORTS),
    "benchmarks": (BENCHMARKS, {m: imports_of(m, p) for m, p in BENCHMARKS.items()}),
}


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _where(i: Import) -> str:
    return f"{KNOWN[i.module].relative_to(ROOT.parent)}:{i.line}: {i.target}{'.' + i.name if i.name else ''}"


def _reaches_spark() -> set[str]:
    """The modules that import a Spark library when they are imported: directly, or through a
    module of the package they import at module level."""
    found = {
        m
        for m, imports in IMPORTS.items()
        if any(_under(i.target, lib) for i in imports if not i.lazy for lib in SPARK_LIBRARIES)
    }
    grew = True
    while grew:
        more = {
            m
            for m, imports in IMPORTS.items()
            if m not in found and any(not i.lazy and i.target in found for i in imports)
        }
        found |= more
        grew = bool(more)
    return found


REACHES_SPARK = _reaches_spark()


def test_the_scan_sees_the_package():
    """The checks below are only as good as the scan: it must find the modules and their
    imports, lazy ones included, and which of them bring pyspark in."""
    assert "dlq_pipeline.ingest.spark" in MODULES and "dlq_pipeline.cli.stages" in MODULES
    spark_imports = [i for i in IMPORTS["dlq_pipeline.ingest.spark"] if _under(i.target, "pyspark")]
    assert spark_imports and not any(i.lazy for i in spark_imports)
    assert any(i.lazy and i.target in REACHES_SPARK for i in IMPORTS["dlq_pipeline.cli.stages"])
    assert {"dlq_pipeline.pipeline", "dlq_pipeline.engine.session"} <= REACHES_SPARK
    assert "dlq_pipeline.tables" not in REACHES_SPARK  # a pure module of a Spark package


def test_only_the_spark_homes_import_pyspark():
    bad = [
        _where(i)
        for imports in IMPORTS.values()
        for i in imports
        if any(_under(i.target, lib) for lib in SPARK_LIBRARIES) and not spark_home(i.module)
    ]
    assert bad == []


def test_what_reaches_spark_is_imported_lazily_by_the_edge_and_not_at_all_elsewhere():
    bad = []
    for imports in IMPORTS.values():
        for i in imports:
            if i.target not in REACHES_SPARK or spark_home(i.module):
                continue
            at_edge = any(_under(i.module, edge) for edge in EDGE)
            if not at_edge or not i.lazy:
                bad.append(_where(i))
    assert bad == []


def test_only_mq_imports_an_mq_client_library():
    bad = [
        _where(i)
        for imports in IMPORTS.values()
        for i in imports
        if any(_under(i.target, lib) for lib in MQ_LIBRARIES) and not _under(i.module, "dlq_pipeline.mq")
    ]
    assert bad == []


def _config_reads(module: str) -> list[str]:
    """Where ``module`` imports `Config`/`load_config`, or reads a configuration section the
    way `Config` offers it (``x.get("section", "key")``, ``x.section("section")``)."""
    from dlq_pipeline.config import OPTIONS

    path = MODULES[module]
    found = [
        _where(i) for i in IMPORTS[module] if i.target == "dlq_pipeline.config" and i.name in ("Config", "load_config")
    ]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
            continue
        first = node.args[0]
        names_section = isinstance(first, ast.Constant) and first.value in OPTIONS
        if names_section and (node.func.attr == "section" or (node.func.attr == "get" and len(node.args) == 2)):
            found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: .{node.func.attr}({first.value!r}, ...)")
    return found


def test_the_config_scan_sees_reads():
    assert _config_reads("dlq_pipeline.config.settings") and _config_reads("dlq_pipeline.cli.common")


def test_only_the_edge_reads_the_configuration():
    bad = [
        where
        for module in MODULES
        if not any(_under(module, edge) for edge in CONFIG_READERS)
        for where in _config_reads(module)
    ]
    assert bad == []


def _private(name: str | None) -> bool:
    return bool(name) and name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_the_scan_sees_the_benchmarks():
    modules, imports = SCANS["benchmarks"]
    assert {"benchmarks.run", "benchmarks.sections", "benchmarks.storm"} <= set(modules)
    assert "benchmarks.sections" in {i.target for i in imports["benchmarks.run"]}


@pytest.mark.parametrize("scan", SCANS)
def test_no_private_name_is_imported_from_another_module(scan):
    bad = [
        _where(i)
        for imports in SCANS[scan][1].values()
        for i in imports
        if (_under(i.target, PACKAGE) or _under(i.target, scan)) and i.target != i.module and _private(i.name)
    ]
    assert bad == []


@pytest.mark.parametrize("scan", SCANS)
def test_no_private_name_is_reached_through_an_imported_module(scan):
    bad = []
    for module, path in SCANS[scan][0].items():
        aliases = {}
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if _under(a.name, PACKAGE) or _under(a.name, scan):
                        aliases[a.asname or a.name] = a.name
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(module, node)
                for a in node.names:
                    if f"{source}.{a.name}" in KNOWN:
                        aliases[a.asname or a.name] = f"{source}.{a.name}"
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and _private(node.attr)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and aliases[node.value.id] != module
            ):
                bad.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    assert bad == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(found)


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("scan", SCANS)
def test_no_import_cycles_between_modules(scan):
    modules, found = SCANS[scan]
    graph = {m: {i.target for i in imports if i.target in modules and i.target != m} for m, imports in found.items()}
    assert _cycles(graph) == []


# The package's layers, lowest first. A module's layer is its package (``dlq_pipeline.X``),
# a root module's its own name, and a concept's ``spark.py`` (``X/spark.py``) a layer of its
# own: a concept's meaning sits low, where the warehouse can store it, and the Spark stage
# that reads and writes its tables sits above the warehouse. The facade (the root
# ``__init__``), which exports everything lazily, is the top.
LAYERS = (
    "exitcodes",
    "errors",
    "runtime",
    "fs",
    "mq",
    "report",
    "dumps",
    "tables",
    "ingest",
    "config",
    "rules",
    "replay",
    "engine",
    "warehouse",
    "live",
    "mq.spark",
    "dumps.spark",
    "rules.spark",
    "classify",
    "classify.spark",
    "ingest.spark",
    "replay.spark",
    "live.spark",
    "report.spark",
    "triage",
    "triage.spark",
    "pipeline",
    "class_archive_dump",
    "cli",
    "jobs",
    "",
)


def layer(module: str) -> str:
    """The layer ``module`` belongs to (see `LAYERS`)."""
    parts = module.split(".")[1:]
    if len(parts) == 2 and parts[1] == "spark":
        return f"{parts[0]}.spark"
    return parts[0] if parts else ""


def test_every_module_has_a_layer():
    assert sorted({layer(m) for m in MODULES} - set(LAYERS)) == []


def test_a_layer_imports_only_layers_below_it():
    rank = {name: i for i, name in enumerate(LAYERS)}
    bad = [
        f"{_where(i)} ({layer(i.module)} imports {layer(i.target)})"
        for imports in IMPORTS.values()
        for i in imports
        if _under(i.target, PACKAGE)
        and not (i.target == PACKAGE and i.name == "__version__")  # the facade's constant
        and rank.get(layer(i.target), -1) > rank.get(layer(i.module), -1)
    ]
    assert bad == []
