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


def test_function_works() -> None:
    code = (
        "from textutils import is_palindrome as p; "
        "print(p('Never odd or even'), p('Racecar'), p('abc'), p('ab ba'), p('python'))"
    )
    result = python("-c", code)
    assert result.stdout.split() == ["True", "True", "False", "True", "False"], result.stderr


def test_a_test_was_added() -> None:
    text = (WORK / "test_textutils.py").read_text()
    assert "is_palindrome" in text
    assert text.count("def test_") >= 2


def test_suite_passes() -> None:
    result = python("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_textutils.py")
    assert result.returncode == 0, result.stdout
