"""The shared pty harness, answering cursor-position requests as a real terminal does."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dashfloat.ui import FRAME_MARKS_ENV
from tests.pty_harness import Terminal

REPO = Path(__file__).resolve().parents[2]
ENTER, ESC, CTRL_C, CTRL_D = "\r", "\x1b", "\x03", "\x04"


class Term(Terminal):
    """A pty terminal that replies to CPR (prompt_toolkit asks where the cursor is before drawing)."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], cols: int = 80, rows: int = 24) -> None:
        super().__init__(argv, env, cols, rows)
        self.screen.write_process_input = self._reply  # type: ignore[method-assign]

    def _reply(self, data: str) -> None:
        os.write(self.fd, data.encode())


def fake_app(
    tmp_path: Path, cols: int = 80, rows: int = 24, *extra: str, frame_marks: bool = False
) -> tuple[Term, Path]:
    """The test launcher (run_tui + a scripted fake agent process) in a pty, cwd ``tmp_path``; ``frame_marks``:
    the UI marks the end of every frame, so the harness sees frames one by one (``Terminal.watch``)."""
    log = tmp_path / "fake.log"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    env.pop(FRAME_MARKS_ENV, None)
    if frame_marks:
        env[FRAME_MARKS_ENV] = "1"
    argv = [sys.executable, "-m", "tests.ui.fake_agent_app", "--log", str(log), "--cwd", str(tmp_path), *extra]
    return Term(argv, env, cols, rows), log


def received(log: Path) -> list[dict[str, Any]]:
    """What the fake agent received, in order."""
    if not log.exists():
        return []
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [r["recv"] for r in records if "recv" in r]
