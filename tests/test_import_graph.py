"""Architecture rules on softhard's own import graph (docs/ARCHITECTURE.md, "Dependency direction").

Every module under ``constructions/``, ``bounds/`` and ``solver/`` is parsed with :mod:`ast` (no
import is executed); every ``import`` / ``from ... import`` of one of our modules — relative
imports resolved, imports inside functions included — becomes an edge of the graph.  For the
packages in :data:`CHECKED_PACKAGES`:

(a) the graph has no cycle (the failure message lists each cycle);
(b) no function imports one of our modules (fix a cycle by moving the shared piece into a lower
    module, not by hiding the import in a function; optional heavy third-party dependencies may
    stay lazy);
(c) no module is longer than :data:`MAX_LINES` lines;
(d) no private name (leading underscore) is imported from another of our modules.

and, for the command line (``solver/cli/``):

(e) the modules that build the parser (``solver/cli/*.py``, not ``solver/cli/handlers/``) reach
    no pipeline stage through our imports, so ``softhard --help`` stays fast (the third-party side
    — no NumPy, SymPy, Z3 loaded — is tested by running it, in tests/solver/test_cli.py);
(f) every handler in the driver's ``COMMANDS`` table is one of our modules (the driver imports it
    by name, which this graph cannot see).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
#: import name -> folder, as pyproject.toml's [tool.setuptools] package-dir maps them
PACKAGE_DIRS = {
    "softhard.constructions": ROOT / "constructions",
    "softhard.bounds": ROOT / "bounds",
    "softhard.solver": ROOT / "solver",
}
#: the packages the rules apply to
CHECKED_PACKAGES = ["softhard.constructions", "softhard.bounds", "softhard.solver"]
MAX_LINES = 600


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` (both our modules) at ``line``; ``names``: the imported names."""

    source: str
    target: str
    line: int
    in_function: bool
    names: tuple[str, ...]


def _modules() -> dict[str, Path]:
    """Our module names -> files (``pkg/__init__.py`` is the package ``pkg`` itself)."""
    out = {}
    for pkg, folder in PACKAGE_DIRS.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([pkg, *parts])] = path
    return out


MODULES = _modules()


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _checked(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in CHECKED_PACKAGES)


class _ImportCollector(ast.NodeVisitor):
    def __init__(self, module: str):
        self.module = module
        self.depth = 0  # > 0 inside a function body
        self.edges: list[Edge] = []

    def _function(self, node) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _add(self, target: str, line: int, names: tuple[str, ...]) -> None:
        if target in MODULES and target != self.module:
            self.edges.append(Edge(self.module, target, line, self.depth > 0, names))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno, ())

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            package = self.module if _is_package(self.module) else self.module.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{node.module}" if node.module else package
        else:
            base = node.module or ""
        plain = []
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            if sub in MODULES:  # ``from . import counting``: the submodule itself
                self._add(sub, node.lineno, ())
            else:
                plain.append(alias.name)
        if plain:
            self._add(base, node.lineno, tuple(plain))


@functools.cache
def edges() -> list[Edge]:
    """Every import statement of the package's modules (parsed on first use: not at collection, which
    every xdist worker pays)."""
    edges = []
    for module, path in MODULES.items():
        collector = _ImportCollector(module)
        collector.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        edges.extend(collector.edges)
    return edges



def _where(e: Edge) -> str:
    return f"{MODULES[e.source].relative_to(ROOT)}:{e.line}"


def test_graph_is_not_vacuous():
    """The parser finds the packages and resolves relative imports (guards the rules below)."""
    assert {"softhard.constructions.errors", "softhard.bounds.core", "softhard.solver.cli"} <= set(MODULES)
    assert any(e.source.startswith("softhard.bounds.") and e.target.startswith("softhard.constructions.")
               for e in edges())
    assert any(e.source.startswith("softhard.solver.cli.handlers.") and e.target.startswith("softhard.bounds.")
               for e in edges())  # four dots from a sub-subpackage
    probe = _ImportCollector("softhard.solver.api")  # an import inside a function is seen as one
    probe.visit(ast.parse("def f():\n    from .pipeline import build\n"))
    assert [(e.target, e.in_function) for e in probe.edges] == [("softhard.solver.pipeline", True)]


def test_no_import_cycles():
    g = nx.DiGraph()
    g.add_nodes_from(m for m in MODULES if _checked(m))
    for e in edges():
        if _checked(e.source) and _checked(e.target):
            g.add_edge(e.source, e.target, where=_where(e))
    cycles = []
    for scc in nx.strongly_connected_components(g):
        if len(scc) > 1:
            cyc = nx.find_cycle(g.subgraph(scc))
            cycles.append(" -> ".join([u for u, _ in cyc] + [cyc[0][0]])
                          + "  (" + ", ".join(g.edges[u, v]["where"] for u, v in cyc) + ")")
    assert not cycles, "import cycles among " + ", ".join(CHECKED_PACKAGES) + ":\n  " + "\n  ".join(cycles)


def test_no_function_level_imports_of_our_modules():
    bad = [f"{_where(e)}: imports {e.target} inside a function" for e in edges() if e.in_function and _checked(e.source)]
    assert not bad, "move these imports to the top of the module (fix a cycle by moving code down):\n  " + "\n  ".join(bad)


def test_no_private_names_imported_across_modules():
    bad = [f"{_where(e)}: imports {', '.join(n for n in e.names if n.startswith('_'))} from {e.target}"
           for e in edges() if _checked(e.source) and any(n.startswith("_") for n in e.names)]
    assert not bad, "make shared names public (drop the underscore):\n  " + "\n  ".join(bad)


def test_module_size():
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in MODULES.items() if _checked(m)}
    big = [f"{MODULES[m].relative_to(ROOT)}: {k} lines" for m, k in sorted(sizes.items()) if k > MAX_LINES]
    assert not big, f"modules over {MAX_LINES} lines; split them by responsibility:\n  " + "\n  ".join(big)


#: what the command line's parser modules may import of ours (the parser needs no stage; paths:
#: the standard library's path probes that never raise)
CLI_PARSER_IMPORTS = {"softhard.constructions.errors", "softhard.constructions.parameters",
                      "softhard.constructions.paths"}


def test_cli_parser_modules_reach_no_stage():
    cli = "softhard.solver.cli"
    light = {m for m in MODULES if (m == cli or m.startswith(cli + ".")) and not m.startswith(cli + ".handlers")}
    closed = light | CLI_PARSER_IMPORTS  # no edge may leave this set
    bad = [f"{_where(e)}: imports {e.target}" for e in edges() if e.source in closed and e.target not in closed]
    assert not bad, ("the CLI's parser modules must not import a stage (move the import into "
                     "solver/cli/handlers/):\n  " + "\n  ".join(bad))


def test_cli_handlers_are_our_modules():
    tree = ast.parse(MODULES["softhard.solver.cli"].read_text(encoding="utf-8"))
    table = next(node.value for node in tree.body if isinstance(node, ast.AnnAssign)
                 and getattr(node.target, "id", None) == "COMMANDS")
    handlers = {c.value for c in ast.walk(table) if isinstance(c, ast.Constant) and isinstance(c.value, str)
                and c.value.startswith("softhard.")}
    assert len(handlers) == len(table.keys) >= 7
    assert handlers <= set(MODULES), handlers - set(MODULES)
    assert all(h.startswith("softhard.solver.cli.handlers.") for h in handlers)
