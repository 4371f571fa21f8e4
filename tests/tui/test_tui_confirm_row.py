"""A call that waits for a confirmation is named once: by the confirmation's header, not also by a tool row
above it; after the key, by the decision's row. A call that runs without asking keeps its tool row (real TUI,
pty)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv
from tests.pty_harness import Terminal

CALL = "write_file new.txt"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def _naming(lines: list[str]) -> list[str]:
    return [line for line in lines if CALL in line]


def test_a_confirmation_names_its_call_once(tree: Path, isolated_env: dict[str, str], server: ScriptedServer) -> None:
    server.enqueue(tool_calls_reply([("w1", "write_file", {"path": "new.txt", "content": "x\n"})]), text_reply("done"))
    term = Terminal(dashfloat_argv(server, tree), isolated_env, cols=100, rows=30)
    try:
        assert term.wait_for("Idle", visible_only=True, timeout_s=20), term.text()
        term.send("write it\r")
        assert term.wait_for("y/Enter approve", visible_only=True), term.text()
        term.settle()
        waiting = _naming(term.lines())
        assert len(waiting) == 1 and waiting[0].startswith("⚙ write_file new.txt · new file · +1"), term.text()
        term.send("y")
        assert term.wait_for("done"), term.text()
        assert term.wait_for("Idle", visible_only=True), term.text()
        # issue 37: one record row with the approved diff, not "approved", "→ ok" and the change's line
        assert _naming(term.lines()) == [], term.text()
        lines = term.lines()
        row = lines.index("  ✓ wrote new.txt new file · +1 · 2 bytes · approved by you")
        assert lines[row + 1] == "    +x" and not any(line.strip().startswith("→ ok") for line in lines)
        assert (tree / "new.txt").read_text() == "x\n"
    finally:
        term.close()


def test_a_call_run_without_asking_keeps_its_tool_row(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    server.enqueue(tool_calls_reply([("w1", "write_file", {"path": "new.txt", "content": "x\n"})]), text_reply("done"))
    term = Terminal(dashfloat_argv(server, tree, "--yes"), isolated_env, cols=100, rows=30)
    try:
        assert term.wait_for("Idle", visible_only=True, timeout_s=20), term.text()
        term.send("write it\r")
        assert term.wait_for("done"), term.text()
        assert term.wait_for("Idle", visible_only=True), term.text()
        lines = term.lines()
        assert _naming(lines) == ["⚙ write_file new.txt"], term.text()
        # in order: the call's row, then what it did, then the answer
        row = lines.index("⚙ write_file new.txt")
        assert any(line.startswith("  → ") for line in lines[row + 1 :]), term.text()
        assert lines.index("done") > row, term.text()
        assert (tree / "new.txt").read_text() == "x\n"
    finally:
        term.close()
