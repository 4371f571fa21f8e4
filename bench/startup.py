"""Start-up: launch to the first paint of the input prompt in a pseudo-terminal, against the interpreter floor."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench.common import Figure
from dashfloat.testing.sse_server import ScriptedServer
from tests.pty_harness import Terminal

FLOOR = [sys.executable, "-c", "import prompt_toolkit, requests, msgspec"]
PROMPT_GLYPH = "❯"


def _first_paint(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    term = Terminal(argv, env)
    try:
        while PROMPT_GLYPH not in term.visible():
            if not term.pump(0.005) or time.perf_counter() - started > 10:
                raise RuntimeError(f"no prompt painted: {term.text()!r}")
        return (time.perf_counter() - started) * 1000
    finally:
        term.close()


def run(quick: bool) -> list[Figure]:
    runs = 5 if quick else 15
    floor: list[float] = []
    paint: list[float] = []
    demo: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, ScriptedServer() as server:
        env = {**os.environ, "XDG_STATE_HOME": f"{tmp}/state", "XDG_CONFIG_HOME": f"{tmp}/cfg"}
        env.pop("OPENAI_API_KEY", None)
        env.pop("OPENAI_BASE_URL", None)
        command = [sys.executable, "-m", "dashfloat", "--cwd", tmp]
        for _ in range(runs + 1):  # the first of each warms the page cache; dropped
            started = time.perf_counter()
            subprocess.run(FLOOR, check=True)
            floor.append((time.perf_counter() - started) * 1000)
            paint.append(_first_paint([*command, "--base-url", server.base_url, "--model", "m"], env))
            demo.append(_first_paint(command, env))
    floor, paint, demo = floor[1:], paint[1:], demo[1:]
    target = 2 * statistics.median(floor)
    return [
        Figure(
            "start-up: launch to the first paint of the prompt (pty)",
            "ms",
            paint,
            "python -c 'import prompt_toolkit, requests, msgspec'",
            floor,
            target="≤ 2× the interpreter floor",
            met=statistics.median(paint) <= target,
        ),
        Figure(
            "start-up on the offline demo provider (forks its server too)",
            "ms",
            demo,
            "python -c 'import prompt_toolkit, requests, msgspec'",
            floor,
            target="≤ 2× the interpreter floor",
            met=statistics.median(demo) <= target,
        ),
    ]
