"""Issue 35: a command the sandbox refused a write is offered one re-run with that directory writable; one key re-runs
exactly that command, and nothing re-runs without it (the real TUI in a pty, real bwrap, a home outside /tmp)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv
from tests.pty_harness import Terminal

COMMAND = "mkdir -p ~/.npm/_cacache && touch ~/.npm/_cacache/entry && echo cached-it"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


@pytest.fixture
def home() -> Iterator[Path]:
    """A home the sandbox shows read-only (under /tmp it would be the sandbox's own private, writable /tmp)."""
    path = Path(tempfile.mkdtemp(prefix="dashfloat-home-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _start(server: ScriptedServer, tree: Path, env: dict[str, str], home: Path) -> Terminal:
    server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": COMMAND})]), text_reply("all done"))
    term = Terminal(dashfloat_argv(server, tree, "--yes"), {**env, "HOME": str(home)}, cols=120, rows=40)
    assert term.wait_for("Idle", visible_only=True, timeout_s=20), term.text()
    term.send("cache it\r")
    assert term.wait_for("the sandbox refused: writing", visible_only=True, timeout_s=30), term.text()
    assert term.wait_for(f"{home}/.npm writable", visible_only=True), term.text()
    term.settle()
    assert not (home / ".npm").exists()  # offered, not re-run: nothing without the key
    return term


def test_one_key_reruns_the_refused_command_with_the_directory_writable(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer, home: Path
) -> None:
    term = _start(server, tree, isolated_env, home)
    try:
        term.send("y")
        assert term.wait_for("all done", timeout_s=30), term.text()
        assert (home / ".npm" / "_cacache" / "entry").exists()
        bodies = [body for body in server.requests if "cached-it" in str(body)]
        assert bodies, "the model read the re-run's output"
    finally:
        term.close()


def test_declined_nothing_reruns_and_the_model_reads_the_refusal(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer, home: Path
) -> None:
    term = _start(server, tree, isolated_env, home)
    try:
        term.send("n")
        assert term.wait_for("all done", timeout_s=30), term.text()
        assert not (home / ".npm").exists()
        assert any("[sandbox refused: writing" in str(body) for body in server.requests)
    finally:
        term.close()
