"""End to end: the real ``python -m dashfloat`` in a pty against the scripted SSE server, read through pyte."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, sse_event, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv, tui_environment
from tests.ui.ui_pty import CTRL_D, ENTER, ESC, Term


@dataclass
class Session:
    term: Term
    server: ScriptedServer
    tree: Path


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("alpha\nbeta\n")
    with ScriptedServer() as server:
        term = Term(dashfloat_argv(server, tree), tui_environment(tmp_path), cols=90, rows=26)
        try:
            assert term.wait_for("● Idle · m", 20), term.text()
            yield Session(term, server, tree)
        finally:
            term.close()


def test_streamed_text_appears(session: Session) -> None:
    session.server.enqueue(text_reply("Streaming **works** with `code` too.\n\nSecond paragraph.", delay_s=0.005))
    session.term.send("say something" + ENTER)
    assert session.term.wait_for("Streaming works with code too."), session.term.text()
    assert session.term.wait_for("Second paragraph.")
    assert session.term.wait_for("● Idle", visible_only=True)


def test_a_tool_row_and_its_result(session: Session) -> None:
    session.server.enqueue(tool_calls_reply([("c1", "read_file", {"path": "a.txt"})]), text_reply("read it"))
    session.term.send("read a.txt" + ENTER)
    assert session.term.wait_for("⚙ read_file a.txt"), session.term.text()
    assert session.term.wait_for("  → ok") and session.term.wait_for("read it"), session.term.text()


def test_y_approves_and_the_file_changes(session: Session) -> None:
    call = ("w1", "write_file", {"path": "new.txt", "content": "hello\n"})
    session.server.enqueue(tool_calls_reply([call]), text_reply("written"))
    session.term.send("write it" + ENTER)
    assert session.term.wait_for("a always allow write_file", visible_only=True), session.term.text()
    session.term.send("y")
    # The key's own row ("✓ approved write_file new.txt") lives until the result replaces it with the change's record
    # row: on a loaded machine no frame may show the first, so the test waits for what stays.
    assert session.term.wait_for("approved by you"), session.term.text()
    assert session.term.wait_for("written")
    assert (session.tree / "new.txt").read_text() == "hello\n"


@pytest.mark.parametrize(("key", "record"), [("n", "✗ rejected write_file"), (ESC, "✗ rejected and stopped")])
def test_n_and_esc_reject(session: Session, key: str, record: str) -> None:
    call = ("w1", "write_file", {"path": "a.txt", "content": "clobbered\n"})
    session.server.enqueue(tool_calls_reply([call]), text_reply("ok, left it"))
    session.term.send("overwrite a.txt" + ENTER)
    assert session.term.wait_for("a always allow write_file", visible_only=True), session.term.text()
    session.term.send(key)
    assert session.term.wait_for(record), session.term.text()
    assert session.term.wait_for("→ rejected")
    assert session.term.wait_for("● Idle", visible_only=True)
    assert (session.tree / "a.txt").read_text() == "alpha\nbeta\n"


def test_esc_cancels_a_stream(session: Session) -> None:
    chunk = {"choices": [{"index": 0, "delta": {"content": "partial answer"}, "finish_reason": None}]}
    session.server.enqueue(Reply(body=[sse_event(chunk), Pause(20)]), text_reply("fresh answer"))
    session.term.send("long one" + ENTER)
    assert session.term.wait_for("partial answer"), session.term.text()
    assert session.term.wait_for("Streaming", visible_only=True)
    session.term.send(ESC)
    assert session.term.wait_for("● Idle", visible_only=True, timeout_s=10), session.term.text()
    session.term.send("again" + ENTER)
    assert session.term.wait_for("fresh answer"), session.term.text()


def test_agent_death_shows_a_system_entry_and_the_next_prompt_works(session: Session) -> None:
    agents = [p for p in psutil.Process(session.term.pid).children() if "agent" in p.name()]
    assert agents, [p.name() for p in psutil.Process(session.term.pid).children()]
    agents[0].kill()
    session.term.send("still there?" + ENTER)
    assert session.term.wait_for("the agent process stopped"), session.term.text()
    session.server.enqueue(text_reply("yes, still here"))
    session.term.send("hello again" + ENTER)
    assert session.term.wait_for("yes, still here"), session.term.text()


def test_slash_commands_through_the_real_agent(session: Session) -> None:
    session.server.enqueue(text_reply("first answer", usage=(50, 7)))
    session.term.send("first" + ENTER)
    assert session.term.wait_for("first answer")
    session.term.send("/sessions" + ENTER)
    assert session.term.wait_for("last activity"), session.term.text()
    session.term.send("/approve edits" + ENTER)
    assert session.term.wait_for("approve: edits", visible_only=True), session.term.text()
    session.term.send("/clear" + ENTER)
    assert session.term.wait_for("new session"), session.term.text()


def test_resize_stays_sane(session: Session) -> None:
    words = " ".join(f"word{i}" for i in range(120))
    session.server.enqueue(text_reply(words, delay_s=0.01))
    session.term.send("talk" + ENTER)
    assert session.term.wait_for("word10"), session.term.text()
    session.term.resize(40, 20)
    session.term.settle(0.2)
    session.term.resize(90, 26)
    assert session.term.wait_for("word119"), session.term.text()
    assert session.term.wait_for("● Idle", visible_only=True)
    session.term.settle(0.3)
    visible = [line for line in session.term.visible().splitlines() if line.strip()]
    assert sum("● Idle" in line for line in visible) == 1, session.term.visible()
    assert visible[-1].startswith("● Idle") and visible[-2].startswith("❯")


def test_esc_cancels_a_running_command(session: Session) -> None:
    call = ("x1", "execute_command", {"command": "sleep 30"})
    session.server.enqueue(tool_calls_reply([call]), text_reply("stopped waiting"))
    session.term.send("/approve all" + ENTER)
    assert session.term.wait_for("approve: all", visible_only=True)
    session.term.send("wait a while" + ENTER)
    assert session.term.wait_for("⚙ execute_command sleep 30"), session.term.text()
    assert session.term.wait_for("Running", visible_only=True), session.term.text()
    session.term.send(ESC)
    assert session.term.wait_for("→ cancelled", timeout_s=10), session.term.text()
    assert session.term.wait_for("● Idle", visible_only=True)


def test_continue_replays_the_transcript_into_the_scrollback(session: Session, tmp_path: Path) -> None:
    session.server.enqueue(text_reply("I will **remember** this."))
    session.term.send("remember me" + ENTER)
    assert session.term.wait_for("I will remember this.")
    session.term.send(CTRL_D)
    assert session.term.wait_exit(10) == 0
    argv = dashfloat_argv(session.server, session.tree, "--continue")
    again = Term(argv, tui_environment(tmp_path), cols=90, rows=26)
    try:
        assert again.wait_for("● Idle · m", 20), again.text()
        assert again.wait_for("❯ remember me") and again.wait_for("I will remember this."), again.text()
        assert again.wait_for("resumed session"), again.text()
    finally:
        again.close()
