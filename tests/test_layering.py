"""Packages match processes: the process packages never import each other, nobody reaches into another
package's private modules, and each package says what it exports."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import dashfloat

PROCESS_PACKAGES = {"ui", "agent", "llm", "executor", "mcp"}  # mcp: the MCP host (ADR 0086)
MAIN_PROCESS_MODULES = {"runtime", "cli", "launch", "demo"}
LIBRARY_PACKAGES = {"sessions", "_startup", "protocol"}
"""Shared by several processes; they import only the contract modules and each other, never a process's code."""
SPAWN_POINTS = {
    "agent/_workers.py": {"dashfloat.llm", "dashfloat.llm.serve", "dashfloat.executor", "dashfloat.executor.serve"}
}
"""The one place a process package names another: the agent forks its workers and must name their entry points."""
ROOT = Path(dashfloat.__file__).parent
PACKAGES = sorted(p.parent.name for p in ROOT.glob("*/__init__.py"))


def imported_modules(path: Path) -> set[str]:
    """Every absolute module an import names, with ``from x import y`` also giving ``x.y`` (y may be a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def owner(path: Path) -> str:
    """The top-level package (or module) under dashfloat/ that a source file belongs to."""
    return path.relative_to(ROOT).parts[0].removesuffix(".py")


def all_sources() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def test_process_packages_import_only_themselves_and_shared_modules() -> None:
    offenders = []
    for package in PROCESS_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for module in imported_modules(path):
                parts = module.split(".")
                forbidden = PROCESS_PACKAGES - {package} | MAIN_PROCESS_MODULES
                spawned = module in SPAWN_POINTS.get(str(path.relative_to(ROOT)), set())
                if parts[0] == "dashfloat" and len(parts) > 1 and parts[1] in forbidden and not spawned:
                    offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offenders == []


def test_library_packages_import_no_process_code() -> None:
    offenders = []
    for package in LIBRARY_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for module in imported_modules(path):
                parts = module.split(".")
                if parts[0] == "dashfloat" and len(parts) > 1 and parts[1] in PROCESS_PACKAGES | MAIN_PROCESS_MODULES:
                    offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offenders == []


def test_no_module_imports_another_packages_private_module() -> None:
    offenders = []
    for path in all_sources():
        for module in imported_modules(path):
            parts = module.split(".")
            if parts[0] != "dashfloat" or len(parts) < 3:
                continue
            private = any(part.startswith("_") and not part.startswith("__") for part in parts[2:])
            if private and parts[1] != owner(path):
                offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offenders == []


def test_the_private_module_check_sees_both_import_forms(tmp_path: Path) -> None:
    source = tmp_path / "probe.py"
    source.write_text("import dashfloat.runtime._run\nfrom dashfloat.agent import _core\n")
    assert {"dashfloat.runtime._run", "dashfloat.agent._core"} <= imported_modules(source)


def test_every_package_declares_exactly_what_it_exports() -> None:
    """``__all__`` lists every public name the package's ``__init__`` binds, and each one resolves."""
    problems = []
    for name in PACKAGES:
        package = importlib.import_module(f"dashfloat.{name}")
        exported = getattr(package, "__all__", None)
        if exported is None:
            problems.append(f"dashfloat.{name} has no __all__")
            continue
        for item in exported:
            if not hasattr(package, item):
                try:
                    importlib.import_module(f"dashfloat.{name}.{item}")
                except ImportError:
                    problems.append(f"dashfloat.{name}.__all__ names {item}, which does not exist")
        init = ROOT / name / "__init__.py"
        bound = {  # names the package takes from its own modules (eagerly or under TYPE_CHECKING, then lazily)
            alias.asname or alias.name
            for node in ast.walk(ast.parse(init.read_text()))
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"dashfloat.{name}.")
            for alias in node.names
        }
        unlisted = sorted(b for b in bound if not b.startswith("_") and b not in exported)
        if unlisted:
            problems.append(f"dashfloat.{name} imports {unlisted} but does not list them in __all__")
    assert problems == []


def test_protocol_imports_no_other_dashfloat_module() -> None:
    """The contract stands alone: its modules import only each other (and msgspec, the standard library)."""
    outside = {
        f"{path.name} imports {module}"
        for path in (ROOT / "protocol").glob("*.py")
        for module in imported_modules(path)
        if module.startswith("dashfloat") and not module.startswith("dashfloat.protocol")
    }
    assert outside == set()


# ------------------------------------------------------------------ no import cycles

CYCLE_EXEMPT: dict[str, str] = {}
"""Import edges the cycle check leaves out, as ``"dashfloat/x/_a.py -> dashfloat.x._b": "why"``, one line each.
Empty: no cycle is held apart by an import inside a function any more (docs/decisions/0071); a new one is fixed in
the modules (the base defines the interface, a small module of its own chooses the implementation), not listed."""


class Edge(NamedTuple):
    """One import of a dashfloat module by another: where it is written, and when it runs."""

    source: str
    target: str
    path: str
    line: int
    when: str
    """``top`` (as the module is imported), ``function`` (when the function runs) or ``lazy export``."""

    def __str__(self) -> str:
        where = {"top": "", "function": " (in a function)", "lazy export": " (a lazy export)"}[self.when]
        return f"{self.path}:{self.line} imports {self.target}{where}"


def module_name(root: Path, path: Path) -> str:
    """The dotted name of a source file under ``root`` (a package is its ``__init__.py``)."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of imports under ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): they never run."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            skipped.update(id(inner) for branch in node.body for inner in ast.walk(branch))
    return skipped


def _in_functions(tree: ast.Module) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inside.update(id(inner) for inner in ast.walk(node) if inner is not node)
    return inside


def _lazy_exports(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """The submodules a package's ``lazy_exports(__name__, {name: "submodule[:name]"})`` imports on first use."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("lazy_exports"):
            for homes in node.args[1:2]:
                if isinstance(homes, ast.Dict):
                    for value in homes.values:
                        if isinstance(value, ast.Constant) and isinstance(value.value, str):
                            yield value.value.partition(":")[0], value.lineno


def import_edges(root: Path) -> list[Edge]:
    """Every import of one module under ``root`` by another: top-level, inside functions and lazy exports (not those
    under TYPE_CHECKING). ``from x import y`` names ``x.y`` when that is a module, else ``x``; a module's implicit
    import of its parent package is no edge (a package's ``__init__`` runs before any of its modules)."""
    sources = {module_name(root, path): path for path in sorted(root.rglob("*.py"))}

    def known(name: str) -> str | None:
        while name and name not in sources:
            name = name.rpartition(".")[0]
        return name or None

    edges: list[Edge] = []
    for source, path in sources.items():
        tree = ast.parse(path.read_text())
        skipped, inside = _type_checking_only(tree), _in_functions(tree)
        package = source if path.name == "__init__.py" else source.rpartition(".")[0]
        found: list[tuple[str | None, int, str]] = []
        for node in ast.walk(tree):
            if id(node) in skipped or not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            when = "function" if id(node) in inside else "top"
            if isinstance(node, ast.Import):
                found += [(known(alias.name), node.lineno, when) for alias in node.names]
                continue
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.append((submodule if submodule in sources else known(base), node.lineno, when))
        if path.name == "__init__.py":
            found += [(known(f"{source}.{home}"), line, "lazy export") for home, line in _lazy_exports(tree)]
        relative = str(path.relative_to(root.parent))
        seen: set[str] = set()
        for target, line, when in found:
            if target is not None and target != source and target not in seen:
                seen.add(target)  # one edge per imported module: its outermost import (ast.walk is breadth first)
                edges.append(Edge(source, target, relative, line, when))
    return edges


def import_cycles(edges: list[Edge]) -> list[list[Edge]]:
    """One shortest cycle through each edge that lies on any (duplicates dropped), each as its chain of imports."""
    graph: dict[str, list[Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge)

    def path_back(start: str, goal: str) -> list[Edge] | None:
        """The shortest chain of imports from ``start`` to ``goal`` (breadth first)."""
        came: dict[str, Edge | None] = {start: None}
        frontier = [start]
        while frontier:
            following = []
            for module in frontier:
                for edge in graph.get(module, []):
                    if edge.target in came:
                        continue
                    came[edge.target] = edge
                    if edge.target == goal:
                        chain = []
                        step: Edge | None = edge
                        while step is not None:
                            chain.append(step)
                            step = came[step.source]
                        return chain[::-1]
                    following.append(edge.target)
            frontier = following
        return None

    cycles: dict[frozenset[Edge], list[Edge]] = {}
    for edge in edges:
        back = path_back(edge.target, edge.source)
        if back is not None:
            cycle = [edge, *back]
            first = min(range(len(cycle)), key=lambda index: cycle[index].path)
            cycles.setdefault(frozenset(cycle), cycle[first:] + cycle[:first])
    return sorted(cycles.values(), key=lambda cycle: [str(edge) for edge in cycle])


def exempt(edges: list[Edge]) -> list[Edge]:
    return [edge for edge in edges if f"{edge.path} -> {edge.target}" not in CYCLE_EXEMPT]


def test_no_import_cycles_between_dashfloat_modules() -> None:
    """Any cycle, whether its imports run at import or inside a function: a cycle held apart by an import inside a
    function breaks as soon as someone moves that import to the top, and it hides which module is the base."""
    chains = [" -> ".join(str(edge) for edge in cycle) for cycle in import_cycles(exempt(import_edges(ROOT)))]
    assert not chains, "import cycles (each import in the chain, with its line):\n" + "\n".join(chains)


def test_every_exempt_edge_still_exists_and_says_why() -> None:
    edges = {f"{edge.path} -> {edge.target}" for edge in import_edges(ROOT)}
    assert sorted(name for name in CYCLE_EXEMPT if name not in edges) == []
    assert all(why.strip() and "\n" not in why for why in CYCLE_EXEMPT.values())


def test_the_cycle_check_sees_imports_in_functions_and_lazy_exports_but_not_type_checking(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        'from pkg._lazy import lazy_exports\n__getattr__ = lazy_exports(__name__, {"Thing": "_c:Thing"})\n'
    )
    (package / "_lazy.py").write_text("def lazy_exports(*args): ...\n")
    (package / "_a.py").write_text("from pkg import _b\n")
    (package / "_b.py").write_text("import os\n\n\ndef later():\n    from pkg._a import thing\n")
    (package / "_c.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg import _a\n"
        "if not TYPE_CHECKING:\n    import pkg._b\n"
    )
    (package / "_d.py").write_text("from pkg import Thing\n")
    edges = import_edges(package)
    assert [" -> ".join(str(edge) for edge in cycle) for cycle in import_cycles(edges)] == [
        "pkg/_a.py:1 imports pkg._b -> pkg/_b.py:5 imports pkg._a (in a function)",
    ]
    whens = {(edge.source, edge.target): edge.when for edge in edges}
    assert whens[("pkg._b", "pkg._a")] == "function"
    assert whens[("pkg", "pkg._c")] == "lazy export"
    assert whens[("pkg._d", "pkg")] == "top"  # a name the package exports, not a module
    assert ("pkg._c", "pkg._a") not in whens  # under TYPE_CHECKING: it never runs
    assert whens[("pkg._c", "pkg._b")] == "top"  # under ``not TYPE_CHECKING``: it does
    (package / "_c.py").write_text("from pkg import _d\n")  # _d imports the package, whose lazy export is _c
    assert [" -> ".join(str(edge) for edge in cycle) for cycle in import_cycles(import_edges(package))] == [
        "pkg/__init__.py:2 imports pkg._c (a lazy export) -> pkg/_c.py:1 imports pkg._d -> pkg/_d.py:1 imports pkg",
        "pkg/_a.py:1 imports pkg._b -> pkg/_b.py:5 imports pkg._a (in a function)",
    ]


def test_the_llm_transport_base_knows_no_implementation() -> None:
    """``llm/_transport.py`` says what a transport is; the implementations import it, ``_route`` chooses between them
    (docs/decisions/0071)."""
    edges = import_edges(ROOT)
    base = {edge.target for edge in edges if edge.source == "dashfloat.llm._transport"}
    assert base <= {"dashfloat.llm._chunked", "dashfloat.llm._errors", "dashfloat.llm._limits"}
    implementations = {"dashfloat.llm._http", "dashfloat.llm._plain"}
    # the stream's choice (_route), and the discovery's getters (through requests or http.client, by the same rule)
    choosers = {edge.source for edge in edges if edge.target in implementations}
    assert choosers == {"dashfloat.llm._route", "dashfloat.llm._discover"}
