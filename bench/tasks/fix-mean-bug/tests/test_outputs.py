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


TEST_FILE = """from stats import mean, spread


def test_mean():
    assert mean([2, 4, 6]) == 4


def test_spread():
    assert spread([3, 9, 1]) == 8
"""


def test_tests_untouched() -> None:
    assert (WORK / "test_stats.py").read_text() == TEST_FILE


def test_suite_passes() -> None:
    result = python("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_stats.py")
    assert result.returncode == 0, result.stdout


def test_mean_on_other_values() -> None:
    result = python("-c", "from stats import mean; print(mean([1, 2]), mean([5]))")
    assert result.stdout.split() == ["1.5", "5.0"], result.stderr
