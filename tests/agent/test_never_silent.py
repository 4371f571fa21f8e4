"""Never silent (issue 39, ADR 0079): a call DashFloat cannot run is answered with an error the model can act on.

Each test replays, through a real agent tree (scripted SSE server, real executor), a failure seen from
Qwen2.5-Coder-0.5B behind llama-server in bench/eval-results.md, and reads what the model was sent next.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dashfloat.protocol import SubmitPrompt
from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import agent_tree, collect, turn_over


def fenced(call: dict[str, Any], after: str = "") -> str:
    return f"I will do that.\n\n```json\n{json.dumps(call)}\n{after}```\n"


def run_turn(tmp_path: Path, *answers: Any) -> list[dict[str, Any]]:
    """The requests the model got for one prompt answered by ``answers`` (then "done")."""
    tree = tmp_path / "proj"
    tree.mkdir()
    (tree / "notes.txt").write_text("hello\n")
    with ScriptedServer() as server, agent_tree(server, tree, approval="all") as link:
        server.enqueue(*answers, text_reply("done"))
        link.send(SubmitPrompt(text="go"))
        collect(link, turn_over)
        return list(server.requests)


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def test_a_text_call_of_a_tool_that_does_not_exist_is_answered_with_the_tools(tmp_path: Path) -> None:
    call = {"name": "is_palindrome", "arguments": {"s": "abba"}}
    _, second = run_turn(tmp_path, text_reply(fenced(call)))
    [result] = tool_messages(second)
    error = json.loads(result)["error"]
    assert error.startswith("unknown tool: 'is_palindrome'; the call was not run.")
    assert "execute_command(command: string, cwd?: string, timeout?: number, background?: boolean" in error
    assert "write_file(path: string, content: string)" in error
    [call_message] = [m for m in second["messages"] if m["role"] == "assistant"]
    assert call_message["tool_calls"][0]["function"]["name"] == "is_palindrome"
    assert "is_palindrome" not in (call_message.get("content") or "")  # the call, not prose about it


def test_a_native_call_of_a_tool_that_does_not_exist_is_answered_with_the_tools(tmp_path: Path) -> None:
    _, second = run_turn(tmp_path, tool_calls_reply([("c1", "wc.py", {"path": "notes.txt"})]))
    [result] = tool_messages(second)
    assert "unknown tool: 'wc.py'" in result and "list_directory(path?: string)" in result


def test_an_argument_the_tool_does_not_take_is_refused_with_what_it_takes(tmp_path: Path) -> None:
    call = {
        "name": "edit_file",
        "arguments": {"path": "notes.txt", "search_block": "hello", "replace_block": "bye", "timeout": 5, "count": 1},
    }
    _, second = run_turn(tmp_path, text_reply(fenced(call)))
    [result] = tool_messages(second)
    error = json.loads(result)["error"]
    assert error.startswith("edit_file: unknown parameter(s): count, timeout; the call was not run.")
    assert "edit_file(path: string, search_block: string, replace_block: string)" in error
    assert error.endswith("Call edit_file again without count, timeout.")
    assert (tmp_path / "proj" / "notes.txt").read_text() == "hello\n"


def test_a_schema_key_copied_into_the_arguments_is_refused_by_name(tmp_path: Path) -> None:
    call = {"name": "execute_command", "arguments": {"command": "ls", "required": ["command"]}}
    _, second = run_turn(tmp_path, text_reply(fenced(call)))
    [result] = tool_messages(second)
    assert "Call execute_command again without required." in result


def test_a_text_call_that_is_broken_json_is_answered(tmp_path: Path) -> None:
    text = 'Reading it:\n```json\n{"name": "read_file", "arguments": {"path": "notes.txt"\n```'
    _, second = run_turn(tmp_path, text_reply(text))
    [result] = tool_messages(second)
    assert "not valid JSON" in result


def test_a_result_the_model_invented_after_its_call_is_dropped_and_the_real_one_sent(tmp_path: Path) -> None:
    call = {"name": "read_file", "arguments": {"path": "notes.txt"}}
    invented = json.dumps({"content": "a made-up file"}) + "\n"
    _, second = run_turn(tmp_path, text_reply(fenced(call, invented)))
    [result] = tool_messages(second)
    assert "hello" in result
    assert "made-up" not in json.dumps(second["messages"])


def test_a_result_invented_in_tool_response_tags_is_dropped(tmp_path: Path) -> None:
    call = {"name": "read_file", "arguments": {"path": "notes.txt"}}
    text = f"<tool_call>\n{json.dumps(call)}\n</tool_call>\n<tool_response>\nmade-up\n</tool_response>\nSo."
    _, second = run_turn(tmp_path, text_reply(text))
    assert "hello" in tool_messages(second)[0]
    [assistant] = [m for m in second["messages"] if m["role"] == "assistant"]
    assert "<tool_response>" not in (assistant.get("content") or "")
