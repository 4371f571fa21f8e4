"""Hooks end to end (ADR 0088): real agent, LLM and executor processes, the scripted SSE server, a real tree."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from dashfloat.hooks import Hook, HookSet
from dashfloat.protocol import PromptRestored, SubmitPrompt, SystemEntry
from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import agent_tree, collect, outcome, turn_over

PY = sys.executable


def tool_result(body: dict[str, Any]) -> dict[str, Any]:
    [tool] = [m for m in body["messages"] if m["role"] == "tool"]
    decoded: dict[str, Any] = json.loads(tool["content"])
    return decoded


def python_hook(event: Any, code: str, matcher: str = "") -> Hook:
    return Hook(event, f"{PY} -c '{code}'", matcher, 20.0, "config.toml")


BLOCK = (
    "import json,sys; d=json.load(sys.stdin); "
    'sys.stderr.write("no commands here: " + d["hook_event_name"] + " " + d["tool_name"] + " " + '
    'd["tool_input"]["command"]); sys.exit(2)'
)
CONTEXT = (
    "import json,sys; d=json.load(sys.stdin); "
    'print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse", '
    '"additionalContext": "the linter read " + d["tool_response"]["content"].strip()}}))'
)


def test_a_blocking_pre_tool_use_hook_stops_the_command_and_the_model_reads_why(tree: Path) -> None:
    hooks = HookSet([python_hook("PreToolUse", BLOCK, "execute_command|write_file")])
    with ScriptedServer() as server, agent_tree(server, tree, approval="all", hooks=hooks) as link:
        server.enqueue(
            tool_calls_reply([("c1", "execute_command", {"command": "touch made.txt"})]),
            text_reply("understood"),
        )
        link.send(SubmitPrompt(text="make a file"))
        got = collect(link, turn_over)
        assert outcome(got) == "completed"
    assert not (tree / "made.txt").exists()
    result = tool_result(server.requests[1])
    assert result == {
        "ok": False,
        "error": "not run: a PreToolUse hook blocked it: no commands here: PreToolUse execute_command touch made.txt",
    }


def test_a_post_tool_use_hook_adds_context_the_model_reads(tree: Path) -> None:
    hooks = HookSet([python_hook("PostToolUse", CONTEXT, "read_.*"), python_hook("PreToolUse", BLOCK, "execute_.*")])
    with ScriptedServer() as server, agent_tree(server, tree, hooks=hooks) as link:
        server.enqueue(tool_calls_reply([("r1", "read_file", {"path": "a.txt"})]), text_reply("ok"))
        link.send(SubmitPrompt(text="read a.txt"))
        assert outcome(collect(link, turn_over)) == "completed"
    result = tool_result(server.requests[1])
    assert result["ok"] is True and result["content"] == "hello\n"  # the call itself ran as ever
    assert result["hook_context"] == "the linter read hello"


def test_a_failing_hook_is_told_to_the_user_and_the_call_goes_on(tree: Path) -> None:
    hooks = HookSet([Hook("PreToolUse", "echo broken >&2; exit 1", "", 20.0, "config.toml")])
    with ScriptedServer() as server, agent_tree(server, tree, hooks=hooks) as link:
        server.enqueue(tool_calls_reply([("r1", "read_file", {"path": "a.txt"})]), text_reply("ok"))
        link.send(SubmitPrompt(text="read a.txt"))
        got = collect(link, turn_over)
    warnings = [m.text for m in got if isinstance(m, SystemEntry) and m.level == "warning"]
    assert "PreToolUse hook `echo broken >&2; exit 1` exited 1: broken" in warnings
    assert tool_result(server.requests[1])["content"] == "hello\n"


def test_prompt_hooks_add_context_or_block_and_the_session_start_speaks_first(tree: Path) -> None:
    prompt_hook = (
        'import json,sys; d=json.load(sys.stdin); p=d["prompt"]; '
        'sys.exit(sys.stderr.write("no secrets in prompts") and 2) if "secret" in p else '
        'print(json.dumps({"hookSpecificOutput": '
        '{"additionalContext": "branch: main (" + d["hook_event_name"] + ")"}}))'
    )
    hooks = HookSet(
        [
            Hook("SessionStart", "echo 'started: read NOTES.md first'", "", 20.0, "config.toml"),
            python_hook("UserPromptSubmit", prompt_hook),
            Hook("Stop", "echo 'turn over' >&2; exit 1", "", 20.0, "config.toml"),
        ]
    )
    with ScriptedServer() as server, agent_tree(server, tree, hooks=hooks) as link:
        server.enqueue(text_reply("hi"))
        link.send(SubmitPrompt(text="hello"))
        got = collect(link, turn_over)
        assert outcome(got) == "completed"
        collect(link, lambda m: isinstance(m, SystemEntry) and "Stop hook" in m.text)
        link.send(SubmitPrompt(text="the secret is 42"))
        got = collect(link, turn_over)
        assert outcome(got) == "stopped"
    errors = [m.text for m in got if isinstance(m, SystemEntry) and m.level == "error"]
    assert errors == ["not sent: no secrets in prompts"]
    assert [m.text for m in got if isinstance(m, PromptRestored)] == ["the secret is 42"]
    [request] = server.requests  # the blocked prompt never reached the model
    user = [m["content"] for m in request["messages"] if m["role"] == "user"]
    assert user == ["started: read NOTES.md first\n\nbranch: main (UserPromptSubmit)\n\nhello"]
