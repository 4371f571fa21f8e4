"""`--session-id` and the session lock through the real CLI: refusals, concurrent runs, a killed run continued."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from dashfloat.protocol import ChatMessage, ConversationEntry
from dashfloat.sessions.log import SESSION_ID_MAX_CHARS, load
from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, sse_event, text_reply, tool_calls_reply
from tests.e2e import assert_no_dangling, dashfloat_argv, isolated_environment, wait_for
from tests.pty_harness import Terminal
from tests.runtime.test_headless_composes import processes_with

RUN_WAIT_S = 120.0
CONCURRENT_RUNS = 8
HELD_S = 300.0
"""How long a scripted reply holds a run mid-turn: far past any test, which stops the run itself."""


_START = {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}


def sessions_of(tmp_path: Path) -> Path:
    return tmp_path / "state" / "dashfloat" / "sessions"


def texts(entries: list[ConversationEntry]) -> list[str | None]:
    return [m.content for m in entries if isinstance(m, ChatMessage)]


def held_reply() -> Reply:
    """A stream that starts and then says nothing: the run stays mid-turn until it is stopped."""
    return Reply(body=[sse_event(_START), Pause(HELD_S)])


def start(argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def kill_marked(marker: str, run: subprocess.Popen[str] | None = None) -> None:
    """SIGKILL ``run`` and every other process of it (DashFloat's and its commands'), and wait until all are gone.
    ``run`` is waited for by its Popen (psutil's wait would reap it first and leave Popen no exit status)."""
    if run is not None:
        run.kill()
        run.communicate(timeout=RUN_WAIT_S)
    for process in processes_with(marker):
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    assert wait_for(lambda: not processes_with(marker), RUN_WAIT_S)


def test_a_second_run_on_a_session_in_use_is_refused_naming_the_holder(tree: Path, tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    env = {**isolated_environment(tmp_path), "DASHFLOAT_TEST_MARKER": marker}
    with ScriptedServer() as server:
        server.enqueue(held_reply())
        first = start(dashfloat_argv(server, tree, "-p", "work", "--session-id", "job-7"), env)
        try:
            assert server.wait_requests(1, RUN_WAIT_S), first.stderr.read() if first.stderr else ""
            second = subprocess.run(
                dashfloat_argv(server, tree, "-p", "work too", "--session-id", "job-7", "--json"),
                env=env,
                capture_output=True,
                text=True,
                timeout=RUN_WAIT_S,
                check=False,
            )
            tree_pids = {first.pid, *(p.pid for p in psutil.Process(first.pid).children(recursive=True))}
            assert second.returncode == 2, second.stderr
            assert second.stdout == ""
            (line,) = second.stderr.splitlines()
            assert line.startswith("dashfloat: session job-7 is in use by process "), line
            holder_pid = int(line.split("in use by process ")[1].split()[0])
            assert holder_pid in tree_pids and f" on {socket.gethostname()} " in line
            assert "Traceback" not in second.stderr
            # --resume names it too, and in the TUI the refusal comes before any screen
            resumed = subprocess.run(
                dashfloat_argv(server, tree, "-p", "x", "--resume", "job-7"),
                env=env,
                capture_output=True,
                text=True,
                timeout=RUN_WAIT_S,
                check=False,
            )
            assert resumed.returncode == 2 and "session job-7 is in use by process" in resumed.stderr
            term = Terminal(dashfloat_argv(server, tree, "--session-id", "job-7"), env)
            try:
                assert term.wait_for("is in use by process"), term.text()
                assert term.wait_exit(RUN_WAIT_S) == 2
            finally:
                term.close()
            assert len(server.requests) == 1  # neither refused run asked the model anything
        finally:
            kill_marked(marker, first)


def _echo(body: dict[str, Any]) -> Reply:
    """Answer with the prompt the run was given, so each run can be told apart."""
    prompt = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return text_reply(f"echo {prompt}")


def test_eight_concurrent_runs_in_one_directory_each_complete_with_their_own_session(
    tree: Path, tmp_path: Path
) -> None:
    env = isolated_environment(tmp_path)
    with ScriptedServer() as server:
        server.handler = _echo
        runs = []
        for n in range(CONCURRENT_RUNS):
            named = ["--session-id", f"run-{n}"] if n % 2 else []  # half named, half given an id
            runs.append(start(dashfloat_argv(server, tree, "-p", f"prompt {n}", "--json", *named), env))
        outputs = [run.communicate(timeout=RUN_WAIT_S) for run in runs]
    ids = set()
    for n, (run, (stdout, stderr)) in enumerate(zip(runs, outputs, strict=True)):
        assert run.returncode == 0, stderr
        events = [json.loads(line) for line in stdout.splitlines()]
        (started,) = [e for e in events if e["type"] == "session_started"]
        text = "".join(e["text"] for e in events if e["type"] == "token_received")
        assert text == f"echo prompt {n}", events
        if n % 2:
            assert started["session_id"] == f"run-{n}"
        ids.add(started["session_id"])
        loaded = load(sessions_of(tmp_path) / f"{started['session_id']}.jsonl")
        assert texts(loaded.transcript) == [f"prompt {n}", f"echo prompt {n}"]
        assert loaded.notices == []
    assert len(ids) == CONCURRENT_RUNS
    assert len(list(sessions_of(tmp_path).glob("*.jsonl"))) == CONCURRENT_RUNS


def test_a_run_killed_mid_command_continues_under_its_session_id(tree: Path, tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    env = {**isolated_environment(tmp_path), "DASHFLOAT_TEST_MARKER": marker}
    command = {"command": f"touch started && sleep {HELD_S:g}"}
    with ScriptedServer() as server:
        server.enqueue(tool_calls_reply([("c1", "execute_command", command)], content="Running it."))
        argv = dashfloat_argv(server, tree, "-p", "run the slow thing", "--yes", "--session-id", "retry-me")
        first = start(argv, env)
        try:
            assert wait_for(lambda: (tree / "started").exists(), RUN_WAIT_S), first.stderr
        finally:
            kill_marked(marker, first)  # SIGKILL, the whole run: nothing answers the call it had started
        assert first.returncode == -signal.SIGKILL
        server.enqueue(text_reply("Picked up where it stopped."))
        again = subprocess.run(
            dashfloat_argv(server, tree, "-p", "continue", "--yes", "--session-id", "retry-me"),
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_WAIT_S,
            check=False,
        )
        kill_marked(marker)
    assert again.returncode == 0, again.stderr
    assert again.stdout == "Picked up where it stopped.\n"
    assert "marked 1 unanswered tool call as cancelled: c1" in again.stderr
    messages = server.requests[-1]["messages"]
    assert_no_dangling(messages)
    roles = [(m["role"], m.get("tool_call_id")) for m in messages if m["role"] != "system"]
    assert roles == [("user", None), ("assistant", None), ("tool", "c1"), ("user", None)]
    loaded = load(sessions_of(tmp_path) / "retry-me.jsonl")
    assert loaded.notices == [] and loaded.header.id == "retry-me"


@pytest.mark.parametrize(
    ("session_id", "why"),
    [
        ("../up", "use letters, digits"),
        ("", "it is empty"),
        ("a" * (SESSION_ID_MAX_CHARS + 1), f"at most {SESSION_ID_MAX_CHARS}"),
    ],
)
def test_a_bad_session_id_is_a_usage_error(tree: Path, tmp_path: Path, session_id: str, why: str) -> None:
    with ScriptedServer() as server:
        result = subprocess.run(
            dashfloat_argv(server, tree, "-p", "x", "--session-id", session_id),
            env=isolated_environment(tmp_path),
            capture_output=True,
            text=True,
            timeout=RUN_WAIT_S,
            check=False,
        )
    assert result.returncode == 2 and why in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert server.requests == []
    assert not sessions_of(tmp_path).exists() or not any(sessions_of(tmp_path).iterdir())


def test_a_session_id_naming_a_foreign_file_is_refused_and_a_torn_one_repaired(tree: Path, tmp_path: Path) -> None:
    sessions = sessions_of(tmp_path)
    sessions.mkdir(parents=True)
    (sessions / "junk.jsonl").write_text("not a session\n")
    env = isolated_environment(tmp_path)
    with ScriptedServer() as server:
        refused = subprocess.run(
            dashfloat_argv(server, tree, "-p", "x", "--session-id", "junk"),
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_WAIT_S,
            check=False,
        )
        assert refused.returncode == 2, refused.stderr
        assert "--session-id junk: " in refused.stderr and "not a DashFloat session" in refused.stderr
        assert "move the file away or choose another id" in refused.stderr
        assert (sessions / "junk.jsonl").read_text() == "not a session\n"
        server.enqueue(text_reply("first"), text_reply("second"))
        for prompt in ("one", "two"):
            done = subprocess.run(
                dashfloat_argv(server, tree, "-p", prompt, "--session-id", "torn"),
                env=env,
                capture_output=True,
                text=True,
                timeout=RUN_WAIT_S,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            with open(sessions / "torn.jsonl", "a") as f:
                f.write('{"kind": "message", "message": {"role": "us')  # a writer that died mid-line
    assert "dropped a torn last line" in done.stderr
    assert texts(load(sessions / "torn.jsonl").transcript) == ["one", "first", "two", "second"]


def test_restoring_a_session_id_that_does_not_exist_creates_nothing(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        result = subprocess.run(
            dashfloat_argv(server, tree, "--undo", "--session-id", "never-was"),
            env=isolated_environment(tmp_path),
            capture_output=True,
            text=True,
            timeout=RUN_WAIT_S,
            check=False,
        )
    assert result.returncode == 2 and "no such session" in result.stderr, result.stderr
    assert not (sessions_of(tmp_path) / "never-was.jsonl").exists()


def test_session_id_with_resume_or_continue_is_a_usage_error(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        for other in (["--resume", "x"], ["--continue"]):
            result = subprocess.run(
                dashfloat_argv(server, tree, "-p", "x", "--session-id", "a", *other),
                env=isolated_environment(tmp_path),
                capture_output=True,
                text=True,
                timeout=RUN_WAIT_S,
                check=False,
            )
            assert result.returncode == 2 and "without --resume or --continue" in result.stderr, result.stderr


def test_continue_on_a_session_in_use_is_refused(tree: Path, tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    env = {**isolated_environment(tmp_path), "DASHFLOAT_TEST_MARKER": marker}
    with ScriptedServer() as server:
        server.enqueue(held_reply())
        first = start(dashfloat_argv(server, tree, "-p", "work"), env)
        try:
            assert server.wait_requests(1, RUN_WAIT_S)
            second = subprocess.run(
                dashfloat_argv(server, tree, "-p", "more", "--continue"),
                env=env,
                capture_output=True,
                text=True,
                timeout=RUN_WAIT_S,
                check=False,
            )
            assert second.returncode == 2 and "is in use by process" in second.stderr, second.stderr
        finally:
            kill_marked(marker, first)
