"""/undo and /rewind through the real TUI in a pseudo-terminal: the reverse preview, y, the prompt given back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv
from tests.pty_harness import Terminal

KEYS_LINE = "y/Enter approve"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def test_undo_then_rewind_in_the_real_tui(tmp_path: Path, isolated_env: dict[str, str], server: ScriptedServer) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("alpha\n")
    server.enqueue(
        tool_calls_reply(
            [
                ("c1", "edit_file", {"path": "a.txt", "search_block": "alpha", "replace_block": "beta"}),
                ("c2", "write_file", {"path": "made.txt", "content": "new\n"}),
            ]
        ),
        text_reply("changed both"),
        tool_calls_reply([("c3", "write_file", {"path": "second.txt", "content": "2\n"})]),
        text_reply("wrote second"),
        text_reply("answered again"),
    )
    term = Terminal(dashfloat_argv(server, work, "--approve", "all"), isolated_env, cols=110, rows=40)
    try:
        assert term.wait_for("Idle", visible_only=True), term.text()
        term.send("change both files\r")
        assert term.wait_for("changed both"), term.text()
        assert term.wait_for("Idle", visible_only=True)
        term.send("/undo\r")
        assert term.wait_for("undo of turn 1: 2 files to restore"), term.text()
        assert term.wait_for("+alpha") and term.wait_for("-beta")
        assert term.wait_for(KEYS_LINE, visible_only=True), term.text()
        term.send("y")
        # issue 37: made.txt was DashFloat's own: deleted, and said so
        assert term.wait_for("undo of turn 1: restored 1 file, deleted 1 file DashFloat had created"), term.text()
        assert "deleted made.txt" in term.text() and "restored a.txt" in term.text()
        assert (work / "a.txt").read_text() == "alpha\n" and not (work / "made.txt").exists()

        assert term.wait_for("Idle", visible_only=True)
        term.send("write the second file\r")
        assert term.wait_for("wrote second"), term.text()
        assert term.wait_for("Idle", visible_only=True)
        term.send("/rewind\r")
        assert term.wait_for("/rewind N restores files"), term.text()
        term.send("/rewind 2\r")
        assert term.wait_for("rewind to just before prompt 2"), term.text()
        assert term.wait_for(KEYS_LINE, visible_only=True), term.text()
        term.send("y")
        assert term.wait_for("“write the second file”): deleted 1 file DashFloat had created"), term.text()
        assert not (work / "second.txt").exists()
        # the prompt is back in the input: Enter resends it on the truncated conversation
        assert term.wait_for("write the second file", visible_only=True), term.text()
        term.send("\r")
        assert term.wait_for("answered again"), term.text()
        roles = [(m["role"], m.get("content")) for m in server.requests[-1]["messages"][1:]]
        assert roles[0] == ("user", "change both files")
        assert roles[-1] == ("user", "write the second file")
        assert ("assistant", "wrote second") not in roles
    finally:
        term.close()
