"""Slash commands and resume through the real TUI in a pseudo-terminal, against the scripted server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dashfloat.testing.sse_server import ScriptedServer, text_reply
from tests.e2e import dashfloat_argv
from tests.pty_harness import Terminal


@pytest.fixture
def env(isolated_env: dict[str, str]) -> dict[str, str]:
    return isolated_env


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def launch(server: ScriptedServer, cwd: Path, env: dict[str, str], *extra: str) -> Terminal:
    cwd.mkdir(exist_ok=True)
    term = Terminal(dashfloat_argv(server, cwd, *extra), env, cols=110, rows=40)
    assert term.wait_for("Idle", visible_only=True), term.text()
    return term


def submit(term: Terminal, text: str) -> None:
    term.send(text + "\r")


def test_slash_commands_in_the_real_tui(tmp_path: Path, env: dict[str, str], server: ScriptedServer) -> None:
    server.enqueue(text_reply("first answer", usage=(120, 30)), text_reply("second answer"))
    term = launch(server, tmp_path / "work", env)
    try:
        submit(term, "/help")
        assert term.wait_for("/resume ID"), term.text()
        submit(term, "hello there")
        assert term.wait_for("first answer"), term.text()
        assert term.wait_for("Idle", visible_only=True)
        submit(term, "/usage")
        assert term.wait_for("1 turns"), term.text()
        submit(term, "/model other-model")
        assert term.wait_for("other-model", visible_only=True), term.text()
        submit(term, "/approve all")
        assert term.wait_for("approve: all", visible_only=True), term.text()
        submit(term, "/sessoins")
        assert term.wait_for("did you mean /sessions?"), term.text()  # the closest known command is named
        term.send("\x15")  # Ctrl-U: the mistyped command stays in the input to be fixed; drop it
        submit(term, "again")
        assert term.wait_for("second answer"), term.text()
        assert server.requests[1]["model"] == "other-model"
        submit(term, "/sessions")
        assert term.wait_for("hello there", timeout_s=5)
        submit(term, "/exit")
        assert term.wait_exit(5) == 0
    finally:
        term.close()


def test_clear_then_resume_replays_the_transcript(tmp_path: Path, env: dict[str, str], server: ScriptedServer) -> None:
    server.enqueue(text_reply("remembered answer"), text_reply("fresh answer"), text_reply("resumed answer"))
    term = launch(server, tmp_path / "work", env)
    try:
        submit(term, "remember this")
        assert term.wait_for("remembered answer"), term.text()
        assert term.wait_for("Idle", visible_only=True)
        submit(term, "/clear")
        assert term.wait_for("new session"), term.text()
        submit(term, "fresh start")
        assert term.wait_for("fresh answer")
        assert [m.get("content") for m in server.requests[1]["messages"][1:]] == ["fresh start"]
        files = (tmp_path / "state" / "dashfloat" / "sessions").glob("*.jsonl")
        [first] = [f for f in files if "remember this" in f.read_text()]  # ids share a second: pick by content
        session_id = first.name.removesuffix(".jsonl")
        submit(term, f"/resume {session_id[:-1]}")  # a unique prefix is enough
        assert term.wait_for("Idle", visible_only=True)
        term.settle()
        submit(term, "and now?")
        assert term.wait_for("resumed answer"), term.text()
        contents = [m.get("content") for m in server.requests[2]["messages"][1:]]
        assert contents == ["remember this", "remembered answer", "and now?"]
    finally:
        term.close()


def test_continue_replays_into_scrollback(tmp_path: Path, env: dict[str, str], server: ScriptedServer) -> None:
    server.enqueue(text_reply("an answer worth keeping"))
    term = launch(server, tmp_path / "work", env)
    try:
        submit(term, "the original question")
        assert term.wait_for("an answer worth keeping")
        term.send("\x04")
        assert term.wait_exit(5) == 0
    finally:
        term.close()
    term = launch(server, tmp_path / "work", env, "--continue")
    try:
        assert term.wait_for("the original question"), term.text()
        assert term.wait_for("an answer worth keeping"), term.text()
    finally:
        term.close()
