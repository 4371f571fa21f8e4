"""The tool loop end to end: real agent, LLM and executor processes, the real SSE server, a real tree."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from dashfloat.protocol import (
    Cancel,
    ConfirmRequested,
    DecideConfirmation,
    Decision,
    PhaseChanged,
    SubmitPrompt,
    TokenReceived,
    ToolResultShown,
    UsageShown,
)
from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, sse_event, text_reply, tool_calls_reply
from tests.e2e import agent_tree, assert_no_dangling, collect, outcome, turn_over


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def test_read_file_round_trip_request_bodies(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree) as link:
        server.enqueue(
            tool_calls_reply([("call_1", "read_file", {"path": "a.txt"})], usage=(10, 5)),
            text_reply("It says hello.", usage=(30, 4)),
        )
        link.send(SubmitPrompt(text="read a.txt"))
        got = collect(link, turn_over)
        assert outcome(got) == "completed"
        assert next(m for m in got if isinstance(m, UsageShown) and not m.request).usage.total_tokens == 34
        first, second = server.requests
        assert first["stream"] is True and first["stream_options"] == {"include_usage": True}
        assert [t["function"]["name"] for t in first["tools"]] == [
            "read_file",
            "write_file",
            "edit_file",
            "execute_command",
            "list_directory",
            "job_output",  # background jobs (issue 36)
            "job_kill",
        ]
        assert "tool_choice" not in first and "parallel_tool_calls" not in first
        roles = [m["role"] for m in second["messages"]]
        assert roles == ["system", "user", "assistant", "tool"]
        assistant = second["messages"][2]
        assert assistant["tool_calls"][0]["id"] == "call_1"
        assert assistant["tool_calls"][0]["function"]["arguments"] == '{"path":"a.txt"}'
        tool = second["messages"][3]
        assert tool["tool_call_id"] == "call_1"
        result = json.loads(tool["content"])
        assert result["ok"] is True and result["content"] == "hello\n"
        assert str(tree) in second["messages"][0]["content"]


def confirm(link: Any, got: list[Any], decision: Decision) -> None:
    ask = collect(link, lambda m: isinstance(m, ConfirmRequested), into=got)[-1]
    assert isinstance(ask, ConfirmRequested)
    link.send(DecideConfirmation(ref=ask.ref, decision=decision))


def test_approve_writes_the_file(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree) as link:
        server.enqueue(
            tool_calls_reply([("w", "write_file", {"path": "new/b.txt", "content": "bee\n"})]),
            text_reply("done"),
        )
        link.send(SubmitPrompt(text="write"))
        got: list[Any] = []
        confirm(link, got, "approve")
        ask = next(m for m in got if isinstance(m, ConfirmRequested))
        assert "+bee" in ask.lines
        collect(link, turn_over, into=got)
        assert (tree / "new" / "b.txt").read_text() == "bee\n"
        assert json.loads(tool_messages(server.requests[1])[0]["content"])["ok"] is True


def test_reject_tells_the_model_and_goes_on(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree) as link:
        server.enqueue(
            tool_calls_reply([("w", "write_file", {"path": "b.txt", "content": "x"})]),
            text_reply("ok, not writing"),
        )
        link.send(SubmitPrompt(text="write"))
        got: list[Any] = []
        confirm(link, got, "reject")
        collect(link, turn_over, into=got)
        assert not (tree / "b.txt").exists()
        assert json.loads(tool_messages(server.requests[1])[0]["content"]) == {"ok": False, "rejected": True}
        assert outcome(got) == "completed"


def test_reject_and_stop_ends_the_turn_and_the_next_prompt_is_valid(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree) as link:
        calls = [("w1", "write_file", {"path": "b", "content": "x"}), ("r", "read_file", {"path": "a.txt"})]
        server.enqueue(tool_calls_reply(calls), text_reply("understood"))
        link.send(SubmitPrompt(text="write"))
        got: list[Any] = []
        confirm(link, got, "reject_stop")
        collect(link, turn_over, into=got)
        assert outcome(got) == "stopped" and len(server.requests) == 1
        link.send(SubmitPrompt(text="do it differently"))
        collect(link, turn_over)
        body = server.requests[1]
        assert_no_dangling(body["messages"])
        assert [json.loads(m["content"]) for m in tool_messages(body)] == [{"ok": False, "rejected": True}] * 2


def test_cancel_while_streaming_keeps_partial_content(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree) as link:
        chunk = {"choices": [{"index": 0, "delta": {"content": "partial answer"}, "finish_reason": None}]}
        server.enqueue(Reply(body=[sse_event(chunk), Pause(20)]), text_reply("fresh"))
        link.send(SubmitPrompt(text="talk"))
        got = collect(link, lambda m: isinstance(m, TokenReceived))
        started = time.monotonic()
        link.send(Cancel())
        collect(link, turn_over, into=got)
        assert time.monotonic() - started < 10.0  # far below the 20 s pause; the benchmark measures the real figure
        assert outcome(got) == "cancelled"
        assert server.disconnected.wait(2.0)
        link.send(SubmitPrompt(text="again"))
        collect(link, turn_over)
        messages = server.requests[1]["messages"]
        assert {"role": "assistant", "content": "partial answer"} in messages


def test_cancel_while_a_command_runs_kills_it_and_cancels_the_rest(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree, approval="all") as link:
        calls = [("c", "execute_command", {"command": "sleep 30"}), ("r", "read_file", {"path": "a.txt"})]
        server.enqueue(tool_calls_reply(calls), text_reply("next"))
        link.send(SubmitPrompt(text="run"))
        got = collect(link, lambda m: isinstance(m, PhaseChanged) and m.phase == "running")
        time.sleep(0.2)
        link.send(Cancel())
        collect(link, turn_over, into=got)
        assert outcome(got) == "cancelled"
        statuses = [m.status for m in got if isinstance(m, ToolResultShown)]
        assert statuses == ["cancelled", "cancelled"]
        link.send(SubmitPrompt(text="again"))
        collect(link, turn_over)
        body = server.requests[1]
        assert_no_dangling(body["messages"])
        assert [json.loads(m["content"])["cancelled"] for m in tool_messages(body)] == [True, True]


def test_an_edit_that_cannot_land_is_an_error_without_asking(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree) as link:
        edit = {"path": "a.txt", "search_block": "absent", "replace_block": "x"}
        server.enqueue(tool_calls_reply([("e", "edit_file", edit)]), text_reply("hm"))
        link.send(SubmitPrompt(text="edit"))
        got = collect(link, turn_over)
        assert not any(isinstance(m, ConfirmRequested) for m in got)
        result = json.loads(tool_messages(server.requests[1])[0]["content"])
        assert result["ok"] is False and "search block not found" in result["error"]


def test_a_path_outside_the_tree_is_refused(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree) as link:
        server.enqueue(tool_calls_reply([("r", "read_file", {"path": "../../etc/passwd"})]), text_reply("no"))
        link.send(SubmitPrompt(text="read"))
        collect(link, turn_over)
        result = json.loads(tool_messages(server.requests[1])[0]["content"])
        assert result["ok"] is False and result["error"].startswith("path escapes the working directory")


def test_provider_failure_is_a_system_entry_and_idle(tree: Path) -> None:
    with ScriptedServer() as server, agent_tree(server, tree) as link:
        server.enqueue(Reply(status=401, headers={"Content-Type": "application/json"}, body=[b'{"error":{}}']))
        link.send(SubmitPrompt(text="hi"))
        got = collect(link, turn_over)
        assert outcome(got) == "failed"
