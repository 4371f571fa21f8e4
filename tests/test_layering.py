"""Packages match processes: the process packages never import each other, nobody reaches into another
package's private modules, and each package says what it exports."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import dashfloat

PROCESS_PACKAGES = {"ui", "agent", "llm", "executor"}
MAIN_PROCESS_MODULES = {"runtime", "cli", "launch", "demo"}
LIBRARY_PACKAGES = {"sessions"}
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
    assert not any(m.startswith("dashfloat") for m in imported_modules(ROOT / "protocol.py"))
