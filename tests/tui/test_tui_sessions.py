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
        assert term.wait_for("tokens in 1 turn"), term.text()
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
        assert term.wait_exit() == 0, term.text()
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
        assert term.wait_exit() == 0, term.text()
    finally:
        term.close()
    term = launch(server, tmp_path / "work", env, "--continue")
    try:
        assert term.wait_for("the original question"), term.text()
        assert term.wait_for("an answer worth keeping"), term.text()
    finally:
        term.close()


def one_session(server: ScriptedServer, cwd: Path, env: dict[str, str], prompt: str) -> str:
    """Run one turn headless in ``cwd``; the id of the session it saved."""
    import subprocess

    cwd.mkdir(exist_ok=True)
    server.enqueue(text_reply(f"answer to {prompt}"))
    done = subprocess.run(dashfloat_argv(server, cwd, "-p", prompt), env=env, capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    sessions = Path(env["XDG_STATE_HOME"]) / "dashfloat" / "sessions"
    [path] = [p for p in sessions.glob("*.jsonl") if prompt in p.read_text()]
    return path.name.removesuffix(".jsonl")


def test_resume_of_an_unknown_or_ambiguous_id_exits_2_naming_the_candidates(
    tmp_path: Path, env: dict[str, str], server: ScriptedServer
) -> None:
    import subprocess

    first = one_session(server, tmp_path / "work", env, "first question")
    second = one_session(server, tmp_path / "work", env, "second question")
    unknown = subprocess.run(
        dashfloat_argv(server, tmp_path / "work", "--resume", "zz-no-such", "-p", "hi"),
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
    assert "no session 'zz-no-such'" in unknown.stderr and first in unknown.stderr and second in unknown.stderr
    assert str(tmp_path / "work") in unknown.stderr
    common = next(i for i in range(len(first)) if first[i] != second[i])
    assert common > 0  # ids start with the date: a shared prefix
    ambiguous = subprocess.run(
        dashfloat_argv(server, tmp_path / "work", "--resume", first[:common], "-p", "hi"),
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert ambiguous.returncode == 2 and "ambiguous" in ambiguous.stderr, ambiguous.stderr
    assert first in ambiguous.stderr and second in ambiguous.stderr
    assert len(server.requests) == 2  # neither failed resume asked the model anything


def test_resume_from_another_directory_warns_and_sessions_show_the_cwd(
    tmp_path: Path, env: dict[str, str], server: ScriptedServer
) -> None:
    elsewhere = tmp_path / "elsewhere-project"
    session_id = one_session(server, elsewhere, env, "question from elsewhere")
    term = launch(server, tmp_path / "work", env)
    try:
        submit(term, "/sessions")
        assert term.wait_for(f"{session_id}  "), term.text()
        [row] = [line for line in term.lines() if line.startswith(session_id)]
        assert "elsewhere-project" in row, term.text()
        assert any(line.split()[:5] == ["id", "last", "activity", "msgs", "cwd"] for line in term.lines())
        submit(term, f"/resume {session_id}")
        assert term.wait_for("resumed session"), term.text()
        flat = " ".join(line.removeprefix("· ").strip() for line in term.lines())  # the warning wraps
        assert f"this session was started in {elsewhere}; its tools now work in {tmp_path / 'work'}" in flat, flat
    finally:
        term.close()
