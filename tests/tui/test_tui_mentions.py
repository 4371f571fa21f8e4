"""@path mentions through the real TUI in a pty, as a person types them, against the scripted server."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashfloat.testing.sse_server import ScriptedServer, text_reply
from tests.e2e import dashfloat_argv, wait_for
from tests.pty_harness import Terminal


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def launch(server: ScriptedServer, cwd: Path, env: dict[str, str]) -> Terminal:
    term = Terminal(dashfloat_argv(server, cwd), env, cols=100, rows=30)
    assert term.wait_for("Idle", visible_only=True, timeout_s=20), term.text()
    return term


def user_content(server: ScriptedServer, request: int = 0) -> str:
    [user] = [m for m in server.requests[request]["messages"] if m["role"] == "user"]
    content = user["content"]
    assert isinstance(content, str)
    return content


def test_typing_at_read_offers_the_readme_and_accepting_it_attaches_the_file(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    (tree / "README.md").write_text("# Demo\nThe answer is forty-two.\n")
    (tree / "notes").mkdir()
    (tree / "notes" / "reading-list.txt").write_text("books\n")
    server.enqueue(text_reply("It says forty-two."))
    term = launch(server, tree, isolated_env)
    try:
        term.send("explain @READ")
        # the menu, under the input: the best match first
        assert term.wait_for("README.md", visible_only=True), term.text()
        menu = [line for line in term.visible().splitlines() if "README.md" in line and "❯" not in line]
        assert menu, term.visible()
        term.send("\t")  # choose the first
        assert term.wait_for("❯ explain @README.md", visible_only=True), term.text()
        term.send("\r")  # accept it: the menu closes
        assert wait_for(lambda: term.pump() and "reading-list" not in term.visible(), timeout_s=10), term.visible()
        assert not server.requests
        term.send("\r")  # send
        assert term.wait_for("It says forty-two."), term.text()
        assert "⚙ read_file README.md" in term.text()
        content = user_content(server)
        assert content.startswith("explain @README.md")
        assert "The answer is forty-two." in content
    finally:
        term.close()


def test_a_path_with_a_space_is_quoted_and_a_missing_one_still_sends(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    (tree / "my notes.md").write_text("remember the milk\n")
    server.enqueue(text_reply("noted"))
    term = launch(server, tree, isolated_env)
    try:
        term.send("see @mynot")
        assert term.wait_for("my notes.md", visible_only=True), term.text()
        term.send("\t\r")
        assert term.wait_for('❯ see @"my notes.md"', visible_only=True), term.text()
        term.send("and @gone.txt\r")
        assert term.wait_for("noted"), term.text()
        text = term.text()
        assert "⚙ read_file my notes.md" in text and "⚙ read_file gone.txt" in text
        assert "→ error: " in text
        content = user_content(server)
        assert "remember the milk" in content and "@gone.txt could not be attached" in content
    finally:
        term.close()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_gitignored_files_are_not_offered_and_a_directory_opens_onto_its_files(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    git_env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q", "."], cwd=tree, check=True, env=git_env)
    (tree / ".gitignore").write_text("*.secret\n")
    (tree / "keys.secret").write_text("hunter2\n")
    (tree / "keystore").mkdir()
    (tree / "keystore" / "notes.md").write_text("about keys\n")
    server.enqueue(text_reply("done"))
    term = launch(server, tree, isolated_env)
    try:
        term.send("@keys")
        assert term.wait_for("keystore/", visible_only=True), term.text()
        term.settle()
        assert "keys.secret" not in term.visible()  # ignored by .gitignore: never offered
        term.send("\t\r")  # choose and accept the directory: the menu goes on inside it

        def menu() -> list[str]:
            """The rows under the input line, down to the status bar."""
            lines = term.visible().splitlines()
            start = next((i for i, line in enumerate(lines) if line.startswith("❯")), len(lines))
            rows = [line.strip() for line in lines[start + 1 :]]
            return [row for row in rows[: next((i for i, r in enumerate(rows) if r.startswith("●")), len(rows))] if row]

        # the new menu: what is in keystore/, without keystore/ itself (the old one offered both)
        assert wait_for(lambda: term.pump() and menu()[:1] == ["keystore/notes.md"], timeout_s=10), term.visible()
        term.send("\t\r\r")
        assert term.wait_for("done"), term.text()
        assert "⚙ read_file keystore/notes.md" in term.text(), term.text()
        [user] = [m for m in server.requests[0]["messages"] if m["role"] == "user"]
        assert "about keys" in user["content"]
    finally:
        term.close()
