"""A day's habits through the real TUI in a pty, against the scripted server (issue 17)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from dashfloat.ui.state import LIVE_OUTPUT_MAX_LINES
from tests.e2e import dashfloat_argv
from tests.pty_harness import Terminal


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def launch(server: ScriptedServer, cwd: Path, env: dict[str, str], *extra: str, cols: int = 100) -> Terminal:
    term = Terminal(dashfloat_argv(server, cwd, *extra), env, cols=cols, rows=30)
    assert term.wait_for("Idle", visible_only=True, timeout_s=20), term.text()
    return term


def test_a_long_result_excerpt_names_how_many_lines_were_cut(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": "seq 1 100"})]), text_reply("counted"))
    term = launch(server, tree, isolated_env, "--yes")
    try:
        term.send("count\r")
        assert term.wait_for("counted"), term.text()
        lines = term.lines()
        assert "    … 71 more lines" in lines, term.text()  # 29 lines shown, the marker is the 30th
        assert "    29" in lines and "    30" not in lines
        assert not any(line.strip() == "… 1 more lines" for line in lines)
    finally:
        term.close()


def test_a_running_command_shows_its_newest_lines_live(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    ticker = "i=0; while [ ! -e stop ]; do i=$((i+1)); echo tick $i; sleep 0.1; done; echo stopped"
    server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": ticker})]), text_reply("ticked"))
    term = launch(server, tree, isolated_env, "--yes")
    try:
        term.send("tick\r")
        assert term.wait_for("tick 12", visible_only=True), term.text()
        assert term.wait_for("⋯ running", visible_only=True), term.text()
        visible = term.visible().splitlines()
        ticks = [line for line in visible if line.strip().startswith("tick ")]
        assert 1 <= len(ticks) <= LIVE_OUTPUT_MAX_LINES, visible  # the newest lines only, bounded
        assert "  → ok" not in term.text()  # all of this while the command still runs
        (tree / "stop").touch()
        assert term.wait_for("ticked"), term.text()
        assert term.wait_for("Idle", visible_only=True)
        assert "⋯ running" not in term.visible() and "    stopped" in term.lines()
    finally:
        term.close()
