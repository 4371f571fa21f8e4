"""Grades the task: run by tests/test.sh with the task's working directory as the current directory."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WORK = Path.cwd()


def run(*args: str, cwd: Path = WORK) -> subprocess.CompletedProcess[str]:
    """A command in the working directory, its output captured (never raises on a non-zero exit)."""
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=30, check=False)


def python(*args: str, cwd: Path = WORK) -> subprocess.CompletedProcess[str]:
    """The grading interpreter (the one running pytest) on ``args``."""
    return run(sys.executable, *args, cwd=cwd)


MUTANTS = {
    "no clamping": "def clamp(value, low, high):\n    return value\n",
    "no upper bound": "def clamp(value, low, high):\n    return max(low, value)\n",
    "no lower bound": "def clamp(value, low, high):\n    return min(value, high)\n",
}


def run_tests_against(module_text: str | None) -> int:
    """The exit code of the agent's tests run against ``mathx.py`` (or a mutant of it) in a scratch copy."""
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copy(WORK / "test_mathx.py", scratch)
        if module_text is None:
            shutil.copy(WORK / "mathx.py", scratch)
        else:
            Path(scratch, "mathx.py").write_text(module_text)
        return python("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_mathx.py", cwd=Path(scratch)).returncode


def test_tests_exist_and_pass() -> None:
    assert (WORK / "test_mathx.py").is_file()
    assert run_tests_against(None) == 0


def test_tests_catch_every_mutant() -> None:
    survivors = [name for name, text in MUTANTS.items() if run_tests_against(text) == 0]
    assert not survivors, f"the tests pass against a broken clamp: {survivors}"
