"""Fixtures shared by the end-to-end tests: a small working tree and an isolated environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROVIDER_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "DASHFLOAT_PROVIDER", "DASHFLOAT_MODEL")


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
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_VARIABLES}
    return {**env, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
