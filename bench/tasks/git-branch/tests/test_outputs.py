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


def test_on_branch() -> None:
    assert run("git", "symbolic-ref", "--short", "HEAD").stdout.strip() == "feature/search"
    assert run("git", "rev-parse", "feature/search").stdout == run("git", "rev-parse", "main").stdout
