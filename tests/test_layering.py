"""The process packages never import each other: only the shared contract modules cross."""

from __future__ import annotations

import ast
from pathlib import Path

import dashfloat

PROCESS_PACKAGES = {"ui", "agent", "llm", "executor"}
ROOT = Path(dashfloat.__file__).parent


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_process_packages_import_only_themselves_and_shared_modules() -> None:
    offenders = []
    for package in PROCESS_PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for module in imported_modules(path):
                parts = module.split(".")
                forbidden = PROCESS_PACKAGES - {package} | {"runtime", "cli", "launch", "demo"}
                if parts[0] == "dashfloat" and len(parts) > 1 and parts[1] in forbidden:
                    offenders.append(f"{path.relative_to(ROOT)} imports {module}")
    assert offenders == []


def test_protocol_imports_no_other_dashfloat_module() -> None:
    assert not any(m.startswith("dashfloat") for m in imported_modules(ROOT / "protocol.py"))
