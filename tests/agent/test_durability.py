"""Sessions survive a SIGKILL of the agent at any point of a multi-tool turn, and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashfloat.agent import provider_message
from dashfloat.protocol import SubmitPrompt, ToolResultShown
from dashfloat.sessions import log as session_log
from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import agent_tree, assert_no_dangling, collect, dashfloat_argv, wait_for


def slow(reply: Reply, seconds: float) -> Reply:
    return Reply(status=reply.status, headers=reply.headers, body=[Pause(seconds), *reply.body])


def as_dicts(messages: list[Any]) -> list[dict[str, Any]]:
    return [msgspec.to_builtins(m) for m in messages]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kill_after_s=st.floats(min_value=0.0, max_value=0.5))
def test_sigkill_of_the_agent_at_any_point_loses_nothing_that_was_sent_or_shown(
    tmp_path: Path, kill_after_s: float
) -> None:
    case = tmp_path / f"case-{time.monotonic_ns()}"
    tree, state = case / "work", case / "state"
    tree.mkdir(parents=True)
    (tree / "a.txt").write_text("alpha\n")
    with ScriptedServer() as server, agent_tree(server, tree, approval="all", state_dir=state) as link:
        server.enqueue(
            slow(tool_calls_reply([("c1", "read_file", {"path": "a.txt"}), ("c2", "list_directory", {})]), 0.1),
            slow(tool_calls_reply([("c3", "execute_command", {"command": "sleep 0.2; echo hi"})]), 0.1),
            slow(text_reply("all done", delay_s=0.01), 0.05),
        )
        link.send(SubmitPrompt(text="work"))
        shown: list[Any] = []
        deadline = time.monotonic() + kill_after_s
        while time.monotonic() < deadline:
            shown += link.receive()
            time.sleep(0.005)
        os.kill(link.pid or 0, signal.SIGKILL)
        collect(link, lambda m: type(m).__name__ == "AgentReady", into=shown)
        requests = list(server.requests)
    files = list((state / "sessions").glob("*.jsonl"))
    if not files:  # killed before the prompt was recorded: then nothing was sent or shown either
        assert requests == [] and not any(isinstance(m, ToolResultShown) for m in shown)
        return
    [path] = files
    logged = as_dicts([provider_message(m) for m in session_log.load(path).messages])
    # On the wire an assistant message always has content ("" beside tool calls: docs/decisions/0013).
    wire = [m if m["role"] != "assistant" or "content" in m else {**m, "content": ""} for m in logged]
    for body in requests:  # everything sent to the provider was durable first
        if body == {} or "_undecodable" in body:
            continue  # the kill took the LLM worker mid-send: the server read a cut body, nothing was sent whole
        sent = body["messages"][1:]
        assert wire[: len(sent)] == sent
    for message in shown:  # every result shown as final is in the log
        if isinstance(message, ToolResultShown):
            assert any(m.get("tool_call_id") == message.id for m in logged)
    assert_no_dangling(logged)


def headless(server: ScriptedServer, tree: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(dashfloat_argv(server, tree, *args), env=env, capture_output=True, text=True, timeout=20)


def test_continue_and_resume_carry_the_conversation(tmp_path: Path) -> None:
    tree = tmp_path / "work"
    tree.mkdir()
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    with ScriptedServer() as server:
        server.enqueue(text_reply("one"), text_reply("two"), text_reply("three"))
        assert headless(server, tree, env, "-p", "first").returncode == 0
        assert headless(server, tree, env, "--continue", "-p", "second").returncode == 0
        contents = [m.get("content") for m in server.requests[1]["messages"][1:]]
        assert contents == ["first", "one", "second"]
        listing = subprocess.run(
            [sys.executable, "-m", "dashfloat", "sessions"], env=env, capture_output=True, text=True, timeout=20
        )
        [row] = listing.stdout.splitlines()
        session_id = row.split()[0]
        assert "first" in row and str(tree) in row
        assert headless(server, tree, env, "--resume", session_id[:17], "-p", "third").returncode == 0
        contents = [m.get("content") for m in server.requests[2]["messages"][1:]]
        assert contents == ["first", "one", "second", "two", "third"]


def test_resume_of_a_torn_session_repairs_and_reports(tmp_path: Path) -> None:
    tree = tmp_path / "work"
    tree.mkdir()
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    with ScriptedServer() as server:
        server.enqueue(tool_calls_reply([("c1", "read_file", {"path": "x"})]), text_reply("done"), text_reply("ok"))
        assert headless(server, tree, env, "-p", "first").returncode == 0
        [path] = (tmp_path / "state" / "dashfloat" / "sessions").glob("*.jsonl")
        lines = path.read_bytes().splitlines(keepends=True)
        # drop the tool result and the answer, then tear the last line: a crash mid-turn
        kept = [line for line in lines if b'"kind":"tool_result"' not in line and b'"content":"done"' not in line]
        path.write_bytes(b"".join(kept) + b'{"kind":"message","mess')
        result = headless(server, tree, env, "--continue", "-p", "again")
        assert result.returncode == 0, result.stderr
        assert "torn" in result.stderr.lower() or "incomplete" in result.stderr.lower()
        messages = server.requests[2]["messages"]
        assert_no_dangling(messages)
        assert json.loads(messages[3]["content"]) == {"ok": False, "cancelled": True}


def test_agents_md_reaches_the_system_message(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "AGENTS.md").write_text("Always answer in haiku.\n")
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "AGENTS.md").write_text("Tests live in pkg/tests.\n")
    with ScriptedServer() as server, agent_tree(server, sub) as link:
        server.enqueue(text_reply("ok"))
        link.send(SubmitPrompt(text="hi"))
        assert wait_for(lambda: len(server.requests) == 1)
        system = server.requests[0]["messages"][0]["content"]
        assert system.index("Always answer in haiku.") < system.index("Tests live in pkg/tests.")
