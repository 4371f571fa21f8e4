"""Fixtures for the executor tests: a real temporary tree and a way to run Python in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from dashfloat.executor import run_tool
from dashfloat.executor.path_policy import Root
from dashfloat.protocol import result_json

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The working directory under test, with an `outside` and a sibling `root-evil` next to it."""
    (tmp_path / "root").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret\n")
    (tmp_path / "root-evil").mkdir()
    (tmp_path / "root-evil" / "x.txt").write_text("evil\n")
    return tmp_path / "root"


def run_json(name: str, args: Any, root: Root | str, *rest: Any, **options: Any) -> dict[str, Any]:
    """``run_tool``'s result as the model reads it: the documented JSON object (docs/tools.md)."""
    decoded: dict[str, Any] = json.loads(result_json(run_tool(name, args, root, *rest, **options)))
    return decoded


def run_python(code: str, timeout_s: float = 50) -> str:
    """Run ``code`` in a fresh interpreter (so its peak RSS is its own) and return its stdout."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


EXIT_WAIT_S = 30.0
"""How long a test waits for killed processes to exit. A SIGKILL takes effect when the process next runs, so on a
loaded machine a killed process can still be running for a while after the kill (and after the result that follows
it): tests poll for exits, with this generous bound, and never assert them at once."""

_NOT_LIVE = (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
"""Exited: a zombie, or one being reaped (``X`` in /proc, for a moment)."""


def live_in_group(pgid: int) -> list[int]:
    """Pids of live (not exited) processes in process group ``pgid`` (read from the process table)."""
    found = []
    for proc in psutil.process_iter(["status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] not in _NOT_LIVE:
                found.append(proc.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return found


def group_gone(pgid: int, within_s: float = EXIT_WAIT_S) -> bool:
    """Whether every process of group ``pgid`` has exited within ``within_s`` (see EXIT_WAIT_S)."""
    return within(lambda: live_in_group(pgid) == [], within_s)


def gone(pid: int, within_s: float = EXIT_WAIT_S) -> bool:
    """Whether ``pid`` is dead (or a zombie) within ``within_s`` (see EXIT_WAIT_S)."""
    return within(lambda: not alive(pid), within_s)


def within(done: Callable[[], bool], within_s: float) -> bool:
    """Whether ``done()`` holds within ``within_s`` (polled)."""
    deadline = time.monotonic() + within_s
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live (not exited) process."""
    try:
        return bool(psutil.Process(pid).status() not in _NOT_LIVE)
    except psutil.NoSuchProcess:
        return False


# A child's own peak RSS: ru_maxrss is no good here, Linux carries the forking parent's peak across exec.
PEAK_RSS_SNIPPET = (
    "def PEAK_RSS_KIB():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            return int(line.split()[1])\n"
    "    raise RuntimeError('no VmHWM in /proc/self/status')\n"
)
