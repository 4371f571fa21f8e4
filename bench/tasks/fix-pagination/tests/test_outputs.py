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


def test_suite_passes() -> None:
    result = python("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_paginate.py")
    assert result.returncode == 0, result.stdout


def test_other_pages() -> None:
    code = "from paginate import page; print(page(list('abcdef'), 2, 2), page(list('ab'), 2, 2))"
    result = python("-c", code)
    assert result.stdout.strip() == "['c', 'd'] []", result.stderr
