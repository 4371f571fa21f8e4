"""The real CLI in a pseudo-terminal: start-up to the first paint of the prompt, and TUI stream throughput."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench.common import TOKEN_CHARS, Figure, distinct_token
from dashfloat.testing.sse_server import ScriptedServer, text_reply
from tests.e2e import dashfloat_argv
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


def _paragraphs(tokens: int) -> str:
    """Prose of ``tokens`` one-token words in paragraphs of 60, ending in a marker to wait for."""
    words = [distinct_token(i).rstrip() for i in range(tokens - 1)]  # never repeating: see distinct_token
    paras = [" ".join(words[i : i + 60]) for i in range(0, len(words), 60)]
    return " ".join(["\n\n".join(paras), "ENDMARK"])


def tui_stream(quick: bool, env: dict[str, str], server: ScriptedServer, cwd: str) -> Figure:
    """Tokens per second from Enter to the last token on screen, the real TUI in a pty."""
    tokens = 5_000 if quick else 20_000
    rates: list[float] = []
    for _ in range(2 if quick else 4):
        server.enqueue(text_reply(_paragraphs(tokens), chunk_size=TOKEN_CHARS))  # one token per chunk
        term = Terminal(dashfloat_argv(server, cwd), env)
        try:
            if not term.wait_for(PROMPT_GLYPH, visible_only=True):
                raise RuntimeError("no prompt")
            term.send("go\r")
            started = time.perf_counter()
            if not term.wait_for("ENDMARK", timeout_s=120):
                raise RuntimeError("the stream never finished on screen")
            rates.append(tokens / (time.perf_counter() - started))
        finally:
            term.close()
    return Figure(
        "TUI: stream throughput, Enter to the last token on screen (pty)",
        "tokens/s",
        rates,
        target="≥ 10 000 tokens/s",
        met=statistics.median(rates) >= 10_000,
        note=f"{tokens} tokens in paragraphs of 60 words, Markdown-rendered, read back through pyte",
    )


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
        streaming = tui_stream(quick, env, server, tmp)
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
        streaming,
    ]
