"""Fixtures shared by the end-to-end tests: a small working tree and an isolated environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e import isolated_environment


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A working directory with one small file, ``a.txt``."""
    root = tmp_path / "work"
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    return root


@pytest.fixture
def isolated_env(tmp_path: Path) -> dict[str, str]:
    """The environment for a `dashfloat` subprocess: private XDG dirs, no provider from the developer's shell."""
    return isolated_environment(tmp_path)
