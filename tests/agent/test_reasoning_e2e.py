"""Reasoning kept and echoed (ADR 0077), end to end: the real CLI, its agent, LLM and executor processes, against a
real HTTP server shaped like DeepSeek's thinking mode, which answers 400 to a tool-call turn sent back without its
``reasoning_content``."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dashfloat.protocol import ChatMessage, ReasoningReceived
from dashfloat.sessions import log as session_log
from dashfloat.testing.sse_server import Reply, ScriptedServer, error_reply, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv, isolated_environment

DEEPSEEK_400 = "The `reasoning_content` in the thinking mode must be passed back to the API."  # DeepSeek's words
FILES = ("a.txt", "b.txt", "c.txt")


def current_turn(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages after the last user message (DeepSeek's "current turn")."""
    messages: list[dict[str, Any]] = body["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    return messages[last_user + 1 :]


def deepseek(replies: Iterator[Reply]) -> Any:
    """A handler that checks every request as DeepSeek does, then answers with the next reply."""

    def handle(body: dict[str, Any]) -> Reply:
        for message in current_turn(body):
            if message["role"] == "assistant" and message.get("tool_calls") and not message.get("reasoning_content"):
                return error_reply(400, DEEPSEEK_400)
        return next(replies)

    return handle


def three_reads() -> Iterator[Reply]:
    for n, name in enumerate(FILES):
        yield tool_calls_reply([(f"call_{n}", "read_file", {"path": name})], reasoning=f"I should read {name} next.")
    yield text_reply("All three say hello.", reasoning="I have read all three.")


def run(server: ScriptedServer, tree: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(dashfloat_argv(server, tree, *args), env=env, capture_output=True, text=True, timeout=60)


def setup(tmp_path: Path, provider_lines: str = "") -> tuple[Path, dict[str, str]]:
    tree = tmp_path / "work"
    tree.mkdir()
    for name in FILES:
        (tree / name).write_text("hello\n")
    env = isolated_environment(tmp_path)
    if provider_lines:
        config = tmp_path / "cfg" / "dashfloat" / "config.toml"
        config.parent.mkdir(parents=True)
        config.write_text(f'[providers.ds]\nbase_url = "http://127.0.0.1:1/v1"\nmodel = "m"\n{provider_lines}')
    return tree, env


def test_a_three_call_task_completes_against_a_server_that_requires_the_echo(tmp_path: Path) -> None:
    tree, env = setup(tmp_path)
    with ScriptedServer() as server:
        server.handler = deepseek(three_reads())
        done = run(server, tree, env, "-p", "read a.txt, b.txt and c.txt")
        assert done.returncode == 0, done.stderr
        assert "All three say hello." in done.stdout
        assert len(server.requests) == 4  # no 400, no retry
        last = current_turn(server.requests[3])
        echoed = [m["reasoning_content"] for m in last if m["role"] == "assistant"]
        assert echoed == [f"I should read {name} next." for name in FILES]
        assert all("reasoning" not in m and "reasoning_field" not in m for m in server.requests[3]["messages"])

        # The next prompt is a new turn: the last one's reasoning stays in the log, not in the request.
        server.handler = deepseek(iter([text_reply("Yes.", reasoning="Easy.")]))
        again = run(server, tree, env, "--continue", "-p", "did they all say hello?")
        assert again.returncode == 0, again.stderr
        assert not any("reasoning_content" in m for m in server.requests[4]["messages"])

    [path] = (tmp_path / "state" / "dashfloat" / "sessions").glob("*.jsonl")
    loaded = session_log.load(path)
    kept = [(m.reasoning, m.reasoning_field) for m in loaded.messages if isinstance(m, ChatMessage) and m.reasoning]
    assert kept == [
        *((f"I should read {name} next.", "reasoning_content") for name in FILES),
        ("I have read all three.", "reasoning_content"),
        ("Easy.", "reasoning_content"),
    ]


def test_the_same_server_refuses_the_second_request_without_the_echo(tmp_path: Path) -> None:
    """What DashFloat did before ADR 0077 (and does with ``reasoning_echo = "never"``): the second request is a 400."""
    tree, env = setup(tmp_path, 'reasoning_echo = "never"\n')
    with ScriptedServer() as server:
        server.handler = deepseek(three_reads())
        done = run(server, tree, env, "-p", "read a.txt, b.txt and c.txt")
        assert done.returncode != 0
        assert "must be passed back" in done.stderr + done.stdout
        assert len(server.requests) == 2


def test_a_server_that_rejects_the_echoed_field_gets_one_retry_without_it_and_a_warning(tmp_path: Path) -> None:
    tree, env = setup(tmp_path)
    replies = three_reads()

    def strict(body: dict[str, Any]) -> Reply:
        if any("reasoning_content" in m for m in body["messages"]):
            return error_reply(400, "messages[2]: unknown field `reasoning_content`")
        return next(replies)

    with ScriptedServer() as server:
        server.handler = strict
        done = run(server, tree, env, "-p", "read a.txt, b.txt and c.txt")
        assert done.returncode == 0, done.stderr
        assert "All three say hello." in done.stdout
        warnings = [line for line in done.stderr.splitlines() if "rejected the reasoning sent back" in line]
        assert len(warnings) == 1
        echoing = ["reasoning_content" in str(body["messages"]) for body in server.requests]
        assert echoing == [False, True, False, False, False]  # one refusal, then never again for this server


def test_a_resumed_session_shows_and_keeps_its_reasoning(tmp_path: Path) -> None:
    tree, env = setup(tmp_path)
    with ScriptedServer() as server:
        server.handler = deepseek(three_reads())
        assert run(server, tree, env, "-p", "read them").returncode == 0
        [path] = (tmp_path / "state" / "dashfloat" / "sessions").glob("*.jsonl")
        server.handler = deepseek(iter([text_reply("Again.", reasoning="Resumed.")]))
        resumed = run(server, tree, env, "--resume", path.stem, "-p", "once more")
        assert resumed.returncode == 0, resumed.stderr
        messages = server.requests[-1]["messages"]
        assert [m["role"] for m in messages].count("assistant") == 4  # the resumed turn's answers, sent back
        assert not any("reasoning_content" in m for m in messages)  # an earlier turn: its reasoning stays home

    from dashfloat.agent._replay import replay_rows  # what /resume shows in the TUI

    loaded = session_log.load(path)
    shown = [m.text for m in replay_rows(loaded.transcript) if isinstance(m, ReasoningReceived)]
    assert shown == [*(f"I should read {name} next." for name in FILES), "I have read all three.", "Resumed."]


def test_vllm_interleaved_reasoning_tool_call_reasoning_answer(tmp_path: Path) -> None:
    """vLLM >= 0.19 says ``reasoning``: it goes back in ``reasoning`` on the tool-call turn (interleaved thinking)."""
    tree, env = setup(tmp_path)
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply(
                [("c1", "read_file", {"path": "a.txt"})], reasoning="Read it.", reasoning_field="reasoning"
            ),
            text_reply("It says hello.", reasoning="It is read.", reasoning_field="reasoning"),
        )
        done = run(server, tree, env, "-p", "what does a.txt say?")
        assert done.returncode == 0, done.stderr
        assert "It says hello." in done.stdout
        [call_turn] = [m for m in server.requests[1]["messages"] if m["role"] == "assistant"]
        assert call_turn["reasoning"] == "Read it." and "reasoning_content" not in call_turn


def test_the_effort_flag_and_config_reach_the_request_and_are_absent_when_unset(tmp_path: Path) -> None:
    tree, env = setup(tmp_path, 'reasoning_effort = "high"\n')
    with ScriptedServer() as server:
        server.enqueue(text_reply("one"), text_reply("two"))
        assert run(server, tree, env, "-p", "hi").returncode == 0
        assert run(server, tree, env, "--reasoning-effort", "none", "-p", "hi").returncode == 0
        assert [body.get("reasoning_effort") for body in server.requests] == ["high", "none"]
    bare = tmp_path / "bare"
    bare.mkdir()
    tree, env = setup(bare)
    with ScriptedServer() as server:
        server.enqueue(text_reply("three"))
        assert run(server, tree, env, "-p", "hi").returncode == 0
        assert "reasoning_effort" not in server.requests[0]


def test_a_misspelt_echo_mode_is_refused_with_the_choices(tmp_path: Path) -> None:
    tree, env = setup(tmp_path, 'reasoning_echo = "sometimes"\n')
    with ScriptedServer() as server:
        done = run(server, tree, env, "-p", "hi")
    assert done.returncode != 0
    assert "providers.ds.reasoning_echo" in done.stderr and "auto, always, never" in done.stderr
