"""Grades the task: run by tests/test.sh with the task's working directory as the current directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

WORK = Path.cwd()


def run(*args: str, cwd: Path = WORK) -> subprocess.CompletedProcess[str]:
    """A command in the working directory, its output captured (never raises on a non-zero exit)."""
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=30, check=False)


def python(*args: str, cwd: Path = WORK) -> subprocess.CompletedProcess[str]:
    """The grading interpreter (the one running pytest) on ``args``."""
    return run(sys.executable, *args, cwd=cwd)


def test_module_renamed() -> None:
    assert not (WORK / "helpers.py").exists()
    assert (WORK / "formatting.py").is_file()
    assert "helpers" not in (WORK / "app.py").read_text()


def test_app_still_works() -> None:
    result = python("app.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["=============", "Weekly report", "============="]
