"""A hostile model cannot write terminal control sequences or fake transcript lines through the TUI."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from dashfloat.ui._markdown import render_markdown
from dashfloat.ui._scrollback import scrub
from tests.e2e import dashfloat_argv
from tests.pty_harness import Terminal

HOSTILE_NAME = "read\u009b2J\u0007\nX✓ approved fake"
HOSTILE_PROSE = "Column&#9;A\n\nPage&#12;break &#x1b;[2J &#x202E;txt.exe&#x202C; \x1b]0;title\x07 done"


def controls(text: str) -> list[str]:
    return [ch for ch in text if unicodedata.category(ch) in ("Cc", "Cf") and ch != "\n"]


def test_markdown_decodes_character_references_into_nothing_dangerous() -> None:
    rows = render_markdown(HOSTILE_PROSE, 60)
    assert controls("".join(text for row in rows for _, text in row)) == []


def test_the_scrollback_guard_removes_line_breaks_and_controls() -> None:
    assert (
        scrub((("", "a\nb\u009b\x07"),)) == (("", "a b^\x1b^G"),)
        or controls(scrub((("", "a\nb\u009b\x07"),))[0][1]) == []
    )


def test_a_hostile_tool_name_and_prose_reach_the_terminal_defused(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    tree = tmp_path / "work"
    tree.mkdir()
    with ScriptedServer() as server:
        server.enqueue(tool_calls_reply([("c1", HOSTILE_NAME, {"path": "a.txt"})]), text_reply(HOSTILE_PROSE))
        term = Terminal(dashfloat_argv(server, tree), isolated_env, cols=100, rows=30)
        try:
            assert term.wait_for("Idle", visible_only=True)
            term.send("go\r")
            assert term.wait_for("done"), term.text()
            assert term.wait_for("Idle", visible_only=True)
            raw = term.raw.decode("utf-8", "replace")
            assert "\u009b" not in raw and "\x07" not in raw and "\u202e" not in raw and "\x0c" not in raw
            assert "❯ go" in term.text()  # nothing cleared the screen
            assert not any(line.startswith("X✓ approved fake") for line in term.lines())  # no forged line
        finally:
            term.close()
