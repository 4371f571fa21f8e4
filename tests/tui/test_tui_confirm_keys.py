"""Keys typed into Ctrl-R's search while a confirmation waits search; they never answer it (real TUI, pty)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv, wait_for
from tests.pty_harness import Terminal


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def _input_row(term: Terminal) -> str:
    return [line for line in term.visible().splitlines() if line.startswith("❯")][-1]


def test_search_keys_during_a_confirmation_search_and_decide_nothing(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    server.enqueue(
        text_reply("noted"),
        tool_calls_reply([("w1", "write_file", {"path": "new.txt", "content": "x\n"})]),
        text_reply("not written"),
    )
    term = Terminal(dashfloat_argv(server, tree), isolated_env, cols=100, rows=30)
    try:
        assert term.wait_for("Idle", visible_only=True, timeout_s=20), term.text()
        term.send("yes ship it\r")
        assert term.wait_for("noted"), term.text()
        assert term.wait_for("Idle", visible_only=True), term.text()
        term.send("write it\r")
        assert term.wait_for("y/Enter approve", visible_only=True), term.text()  # armed: y would answer now
        term.send("\x12")  # Ctrl-R: from here keys are a search query
        assert term.wait_for("reverse-i-search", visible_only=True), term.text()
        term.send("y")
        assert term.wait_for("(reverse-i-search)`y'", visible_only=True), term.text()
        # The input row (the last prompt mark), not the transcript's row of the same prompt above it.
        assert wait_for(lambda: term.pump() and _input_row(term) == "❯ yes ship it"), term.text()
        term.send("\x1b")  # Esc ends the search (the draft, empty, comes back); it does not answer
        assert wait_for(lambda: term.pump() and "reverse-i-search" not in term.visible(), timeout_s=10)
        term.send("\x12")
        assert term.wait_for("reverse-i-search", visible_only=True), term.text()
        term.send("\r")  # Enter ends the search; it does not approve
        assert wait_for(lambda: term.pump() and "reverse-i-search" not in term.visible(), timeout_s=10)
        term.settle()
        assert "approved" not in term.text() and "rejected" not in term.text()
        assert not (tree / "new.txt").exists()
        assert len(server.requests) == 2  # the call is still waiting for its answer
        term.send("n")
        assert term.wait_for("not written"), term.text()
        assert not (tree / "new.txt").exists()
    finally:
        term.close()


def test_a_search_begun_during_a_turn_stays_shown_when_the_turn_ends(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    # The end of a turn clears the hint line; a search still taking keys must still say so, or the next prompt
    # typed goes into the search unseen and Enter merely keeps a match (the prompt is never sent).
    server.enqueue(text_reply("earlier answer"), text_reply("a slow answer " * 20, delay_s=0.05))
    term = Terminal(dashfloat_argv(server, tree), isolated_env, cols=100, rows=30)
    try:
        assert term.wait_for("Idle", visible_only=True, timeout_s=20), term.text()
        term.send("an earlier prompt\r")
        assert term.wait_for("earlier answer"), term.text()
        assert term.wait_for("Idle", visible_only=True), term.text()
        term.send("tell me slowly\r")
        assert term.wait_for("Streaming", visible_only=True), term.text()
        term.send("\x12")  # Ctrl-R while the answer streams
        assert term.wait_for("(reverse-i-search)", visible_only=True), term.text()
        assert term.wait_for("Idle", visible_only=True, timeout_s=30), term.text()
        term.settle()
        assert term.wait_for("(reverse-i-search)", visible_only=True), term.text()
    finally:
        term.close()


def test_keys_the_viewer_does_not_use_never_reach_the_input(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    """Found in tmux: `y` pressed while reading the whole change (`v`) went into the input, and the typed `y`
    then held the confirmation back once the viewer closed."""
    content = "".join(f"line {i}\n" for i in range(80))
    server.enqueue(tool_calls_reply([("w1", "write_file", {"path": "big.txt", "content": content})]), text_reply("ok"))
    term = Terminal(dashfloat_argv(server, tree), isolated_env, cols=100, rows=30)
    try:
        assert term.wait_for("Idle", visible_only=True, timeout_s=20), term.text()
        term.send("write it\r")
        assert term.wait_for("y/Enter approve", visible_only=True), term.text()
        term.send("v")
        assert term.wait_for("q or v back to the keys", visible_only=True), term.text()
        term.send("y")
        term.send("x")
        term.send("q")
        assert term.wait_for("y/Enter approve", visible_only=True), term.text()
        term.settle()
        assert _input_row(term) == "❯", term.visible()
        assert not (tree / "big.txt").exists() and len(server.requests) == 1
        term.send("y")
        assert term.wait_for("wrote big.txt"), term.text()  # the change's record row (the key's own row is transient)
        assert wait_for(lambda: (tree / "big.txt").exists())
    finally:
        term.close()
