"""Grades the task: run by tests/test.sh with the task's working directory as the current directory."""

from __future__ import annotations

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


def test_counts_words() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        sample = Path(scratch, "sample.txt")
        sample.write_text("the quick  brown fox\njumps over\n\tthe lazy dog\n")
        result = python("wc.py", str(sample))
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "9"
        empty = Path(scratch, "empty.txt")
        empty.write_text("")
        assert python("wc.py", str(empty)).stdout.strip() == "0"
