"""Grades the task: run by tests/test.sh with the task's working directory as the current directory."""

from __future__ import annotations

import json
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


def test_count() -> None:
    result = python("todo.py", "--count")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "3"


def test_count_follows_the_file() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copy(WORK / "todo.py", scratch)
        Path(scratch, "todo.json").write_text(json.dumps(["a", "b", "c", "d", "e"]))
        assert python("todo.py", "--count", cwd=Path(scratch)).stdout.strip() == "5"


def test_list_still_works() -> None:
    result = python("todo.py", "--list")
    assert result.stdout.splitlines() == ["- buy milk", "- call the bank", "- water the plants"]
