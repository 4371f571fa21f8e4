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


def test_committed() -> None:
    assert run("git", "log", "-1", "--format=%s").stdout.strip() == "Fix greeting"
    assert run("git", "rev-list", "--count", "HEAD").stdout.strip() == "2"
    assert "Hello, world" in run("git", "show", "HEAD:hello.py").stdout
    assert run("git", "show", "HEAD:NOTES.md").returncode == 0


def test_tree_clean() -> None:
    assert run("git", "status", "--porcelain").stdout == ""
