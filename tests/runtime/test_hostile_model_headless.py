"""What a demanding daily user met running `dashfloat -p` against odd model output (real server, real CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dashfloat.catalogue import UNNAMED_CALL
from dashfloat.llm.toolcalls import EMPTY_CALL_ERROR
from dashfloat.runtime.printer import EXIT_BROKEN_PIPE
from dashfloat.testing.sse_server import Reply, ScriptedServer, sse_event, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv


def chunk(delta: dict[str, object], finish_reason: str | None = None) -> bytes:
    return sse_event({"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]})


def run(server: ScriptedServer, tree: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    argv = dashfloat_argv(server, tree, *extra)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_a_tool_call_with_every_field_null_is_an_error_result_the_model_reads(
    tree: Path, isolated_env: dict[str, str]
) -> None:
    empty = {"index": 0, "id": None, "type": "function", "function": {"name": None, "arguments": None}}
    body = [chunk({"role": "assistant", "content": None}), chunk({"tool_calls": [empty]})]
    with ScriptedServer() as server:
        server.enqueue(
            Reply(body=[*body, chunk({}, "tool_calls"), sse_event("[DONE]")]), text_reply("I will name it this time.")
        )
        result = run(server, tree, isolated_env, "-p", "go")
        assert result.returncode == 0, result.stderr
        assert "[model returned nothing]" not in result.stderr
        assert f"⚙ {UNNAMED_CALL}" in result.stderr, result.stderr
        assert f"→ error: {EMPTY_CALL_ERROR}" in result.stderr, result.stderr
        assert result.stdout == "I will name it this time.\n"
        [_, second] = server.requests
        assistant, tool = second["messages"][-2:]
        assert tool["role"] == "tool" and tool["tool_call_id"] == assistant["tool_calls"][0]["id"]
        assert json.loads(tool["content"]) == {"ok": False, "error": EMPTY_CALL_ERROR}


def test_an_empty_command_is_an_error_result_not_a_confirmation(tree: Path, isolated_env: dict[str, str]) -> None:
    """Found running hostile arguments headless: `""` was asked for (and, headless, rejected) as a command."""
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c1", "execute_command", {"command": ""}), ("c2", "execute_command", {"command": " "})]),
            text_reply("understood"),
        )
        result = run(server, tree, isolated_env, "-p", "go")
        assert result.returncode == 0, result.stderr
        assert "rejected" not in result.stderr, result.stderr
        [_, second] = server.requests
        results = [json.loads(m["content"]) for m in second["messages"] if m["role"] == "tool"]
        error = "execute_command: command is empty (nothing to run)"
        assert results == [{"ok": False, "error": error}] * 2


def test_sessions_into_a_closed_pipe_leaves_quietly(tree: Path, isolated_env: dict[str, str]) -> None:
    """Found running `dashfloat sessions | head -2`: a BrokenPipeError traceback."""
    with ScriptedServer() as server:
        server.enqueue(text_reply("one"))
        assert run(server, tree, isolated_env, "-p", "first").returncode == 0
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first row is written
    try:
        listing = subprocess.run(
            [sys.executable, "-m", "dashfloat", "sessions"],
            env=isolated_env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=30,
            check=False,
        )
    finally:
        os.close(write_end)
    assert listing.returncode == EXIT_BROKEN_PIPE, listing.stderr
    assert listing.stderr == ""


def test_a_sessions_title_is_the_prompt_as_typed_not_its_attachments(tree: Path, isolated_env: dict[str, str]) -> None:
    """Found in `dashfloat sessions` after `explain @a.txt`: the title ran on into "[DashFloat attached what…"."""
    with ScriptedServer() as server:
        server.enqueue(text_reply("it says hello"))
        assert run(server, tree, isolated_env, "-p", "explain @a.txt").returncode == 0
    listing = subprocess.run(
        [sys.executable, "-m", "dashfloat", "sessions"], env=isolated_env, capture_output=True, text=True, timeout=30
    )
    [row] = listing.stdout.splitlines()
    assert row.endswith(f"{tree}  explain @a.txt"), row


def test_a_failed_commands_row_names_its_exit_code(tree: Path, isolated_env: dict[str, str]) -> None:
    with ScriptedServer() as server:
        server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": "echo out; exit 3"})]), text_reply("ok"))
        result = run(server, tree, isolated_env, "--yes", "-p", "go")
        assert result.returncode == 0, result.stderr
        assert "→ error: exit code 3\n  out\n" in result.stderr, result.stderr


def test_an_answer_of_only_reasoning_is_named_not_nothing(tree: Path, isolated_env: dict[str, str]) -> None:
    with ScriptedServer() as server:
        server.enqueue(text_reply("", reasoning="the answer is 42, but I never say it"))
        result = run(server, tree, isolated_env, "-p", "go")
        assert result.returncode == 0, result.stderr
        assert result.stdout == ""
        assert "[model returned nothing]" not in result.stderr
        assert "the model only reasoned (36 characters) and gave no answer text" in result.stderr, result.stderr
