"""Session files written before tool results were typed still resume, and the model sees the same bytes.

``fixtures/session-format1.jsonl`` was written by a real agent tree (scripted SSE server, real executor)
on 2026-12-03, before the change: three turns using all five tools, with an approval, a rejection, a
reject-and-stop, a failed read, a path escape, bad arguments, a non-zero exit, a signal, a timeout and a
command cancelled while it ran.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from dashfloat.protocol import (
    CommandExited,
    CommandTimedOut,
    ExecuteCommandArgs,
    ListDirectoryArgs,
    ListDirectoryResult,
    MalformedCall,
    ReadFileArgs,
    ResumeSession,
    SubmitPrompt,
    ToolCallShown,
    ToolCancelled,
    ToolFailed,
    ToolRejected,
    ToolReply,
    ToolResultShown,
    result_json,
)
from dashfloat.sessions.log import FORMAT_VERSION, load
from dashfloat.testing.sse_server import ScriptedServer, text_reply
from tests.e2e import agent_tree, collect, turn_over

FIXTURE = Path(__file__).parent / "fixtures" / "session-format1.jsonl"
SESSION_ID = "20261203-121545-23617f"

# What the user saw for each call when it ran: its status word and its excerpt (captured before the change).
EXCERPTS = {
    "call_ls": "a.txt  12\ncaf\\xe9.txt  1\nleak@  11\nsrc/  4096",  # a symlink marked since (daily-use fix)
    "call_read": "hello\n[truncated: showing lines 1-1 of 2 lines, 12 bytes; at most 2000 lines / 65536 bytes per call;"
    " continue with offset=2]",
    "call_missing": "file not found: nope.txt",
    "call_escape": "path escapes the working directory: leak (through a symlink)",
    "call_write": "",
    "call_edit": "",
    "call_reject": "",
    "call_exit": "exit code 3\nout\nerr",  # since a failed command's row leads with why (daily-use fix)
    "call_ok": "fine",
    "call_signal": "killed by SIGKILL",
    "call_timeout": "timed out after 1s\nbefore",
    "call_badargs": "read_file: offset must be >= 1, got 0",
    "call_cancel": "started",
    "call_stop": "",
    "call_after": "",
}
STATUSES = {
    "call_ls": "ok",
    "call_read": "ok",
    "call_missing": "error",
    "call_escape": "error",
    "call_write": "ok",
    "call_edit": "ok",
    "call_reject": "rejected",
    "call_exit": "error",
    "call_ok": "ok",
    "call_signal": "error",
    "call_timeout": "error",
    "call_badargs": "error",
    "call_cancel": "cancelled",
    "call_stop": "rejected",
    "call_after": "rejected",
}


def written_results() -> dict[str, str]:
    """The tool messages' content exactly as the file holds it (what the model saw when they ran)."""
    results = {}
    for line in FIXTURE.read_text().splitlines():
        entry = json.loads(line)
        if entry["kind"] == "message" and entry["message"]["role"] == "tool":
            results[entry["message"]["tool_call_id"]] = entry["message"]["content"]
    return results


def written_calls() -> list[Any]:
    """The assistant messages' tool calls exactly as the file holds them (what the provider got back)."""
    calls = []
    for line in FIXTURE.read_text().splitlines():
        entry = json.loads(line)
        if entry["kind"] == "message" and entry["message"].get("tool_calls"):
            calls += entry["message"]["tool_calls"]
    return calls


def test_a_session_written_by_the_old_format_resumes_with_the_same_model_facing_bytes(tmp_path: Path) -> None:
    tree, sessions = tmp_path / "proj", tmp_path / "state" / "sessions"
    tree.mkdir()
    sessions.mkdir(parents=True)
    shutil.copy(FIXTURE, sessions / FIXTURE.name.replace("session-format1", SESSION_ID))
    with ScriptedServer() as server, agent_tree(server, tree, state_dir=tmp_path / "state") as link:
        server.enqueue(text_reply("resumed"))
        link.send(ResumeSession(session_id=SESSION_ID))
        replayed: list[Any] = collect(link, turn_over)
        rows = [m for m in replayed if isinstance(m, ToolResultShown)]
        # Each saved call's row parses its arguments again; the one the model got wrong shows what it wrote.
        shown = {m.id: m.args for m in replayed if isinstance(m, ToolCallShown)}
        assert shown["call_read"] == ReadFileArgs(path="a.txt", limit=1)
        assert shown["call_ls"] == ListDirectoryArgs()
        assert shown["call_badargs"] == MalformedCall("read_file", '{"path":"a.txt","offset":0}')
        assert {m.id: m.status for m in rows} == STATUSES
        assert {m.id: m.output for m in rows} == EXCERPTS
        link.send(SubmitPrompt(text="go on"))
        collect(link, turn_over)
        [body] = server.requests
    sent = {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}
    assert sent == written_results()
    sent_calls = [c for m in body["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert sent_calls == written_calls()  # the arguments' text too, byte for byte
    roles = [m["role"] for m in body["messages"]]
    assert roles.count("user") == 4 and roles[-1] == "user"


def test_every_old_result_is_read_as_the_member_that_writes_the_same_bytes() -> None:
    loaded = load(FIXTURE)
    assert json.loads(FIXTURE.read_text().splitlines()[0])["format"] == 1 and loaded.notices == []
    replies = {e.call_id: e for e in loaded.messages if isinstance(e, ToolReply)}
    assert {call_id: result_json(r.result) for call_id, r in replies.items()} == written_results()
    assert isinstance(replies["call_ls"].result, ListDirectoryResult) and replies["call_ls"].name == "list_directory"
    assert isinstance(replies["call_timeout"].result, CommandTimedOut)
    assert (
        isinstance(replies["call_signal"].result, CommandExited) and replies["call_signal"].result.signal == "SIGKILL"
    )
    assert isinstance(replies["call_cancel"].result, ToolCancelled) and replies["call_cancel"].result.output
    assert isinstance(replies["call_reject"].result, ToolRejected)
    assert isinstance(replies["call_missing"].result, ToolFailed)


def test_resuming_rewrites_the_file_in_the_current_format_and_keeps_every_result(tmp_path: Path) -> None:
    tree, sessions = tmp_path / "proj", tmp_path / "state" / "sessions"
    tree.mkdir()
    sessions.mkdir(parents=True)
    path = sessions / f"{SESSION_ID}.jsonl"
    shutil.copy(FIXTURE, path)
    with ScriptedServer() as server, agent_tree(server, tree, state_dir=tmp_path / "state") as link:
        link.send(ResumeSession(session_id=SESSION_ID))
        collect(link, turn_over)
    kinds = [json.loads(line)["kind"] for line in path.read_text().splitlines()]
    assert json.loads(path.read_text().splitlines()[0])["format"] == FORMAT_VERSION
    assert kinds.count("tool_result") == len(STATUSES) and kinds.count("message") == 7
    again = load(path)
    assert again.notices == [] and again.messages == load(FIXTURE).messages


def test_a_result_no_member_writes_is_kept_as_text_with_a_notice(tmp_path: Path) -> None:
    lines = FIXTURE.read_text().splitlines()
    odd = '{"ok":true,"path":"a.txt","something":"new"}'
    lines[3] = json.dumps({"kind": "message", "message": {"role": "tool", "content": odd, "tool_call_id": "call_ls"}})
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n")
    loaded = load(path)
    reply = next(e for e in loaded.messages if isinstance(e, ToolReply) and e.call_id == "call_ls")
    assert reply.result == ToolFailed(error=f"unreadable saved result: {odd}")
    assert loaded.notices == ["odd.jsonl: 1 saved tool result not understood: call_ls"]


# ``fixtures/session-format3.jsonl`` was written by a real agent tree (scripted SSE server, real executor,
# --approve all) on 2026-12-03 just before tool arguments were typed (ADR 0034): every tool once, then four
# calls the model got wrong. ``session-format3-request.json`` holds the messages (after the system prompt,
# which names the working directory) of the request that code sent after resuming it and one more prompt.
FORMAT3 = Path(__file__).parent / "fixtures" / "session-format3.jsonl"
FORMAT3_REQUEST = Path(__file__).parent / "fixtures" / "session-format3-request.json"


def test_a_session_written_before_typed_arguments_resumes_with_the_same_request(tmp_path: Path) -> None:
    session_id = json.loads(FORMAT3.read_text().splitlines()[0])["id"]
    tree, sessions = tmp_path / "proj", tmp_path / "state" / "sessions"
    tree.mkdir()
    sessions.mkdir(parents=True)
    shutil.copy(FORMAT3, sessions / f"{session_id}.jsonl")
    with ScriptedServer() as server, agent_tree(server, tree, state_dir=tmp_path / "state") as link:
        server.enqueue(text_reply("resumed"))
        link.send(ResumeSession(session_id=session_id))
        replayed: list[Any] = collect(link, turn_over)
        link.send(SubmitPrompt(text="go on"))
        collect(link, turn_over)
        [body] = server.requests
    shown = {m.id: m.args for m in replayed if isinstance(m, ToolCallShown)}
    assert shown["t3_read"] == ReadFileArgs(path="a.txt", limit=1)
    assert shown["t3_cmd"] == ExecuteCommandArgs(command="echo hi", cwd=".", timeout=5.0)
    assert shown["t3_unknown"] == MalformedCall("rm_rf", '{"path":"/"}')
    assert shown["t3_nocmd"] == MalformedCall("execute_command", '{"cwd":"src"}')
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][1:] == json.loads(FORMAT3_REQUEST.read_text())
