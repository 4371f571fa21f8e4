"""Grades the task: run by tests/test.sh with the task's working directory as the current directory."""

from __future__ import annotations

import re
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


def test_old_name_gone() -> None:
    for path in WORK.glob("*.py"):
        assert not re.search(r"\bget_usr\b", path.read_text()), path.name


def test_new_name_defined() -> None:
    result = python("-c", "from users import get_user; print(get_user(3)['id'])")
    assert result.stdout.strip() == "3", result.stderr


def test_main_still_works() -> None:
    result = python("main.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "7 User7"
