"""The offline demo model: its moves as a pure function, and the whole loop through the real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec

from dashfloat.catalogue import call_name
from dashfloat.demo import respond
from dashfloat.demo._model import DEMO_FILE
from dashfloat.protocol import (
    ChatMessage,
    EditFileArgs,
    FunctionCall,
    ListDirectoryArgs,
    ReadFileArgs,
    ToolArgs,
    ToolCallRecord,
    WriteFileArgs,
)


def conversation(prompt: str, *steps: tuple[ToolArgs, dict[str, Any]]) -> list[ChatMessage]:
    messages = [ChatMessage("system", "s"), ChatMessage("user", prompt)]
    for n, (args, result) in enumerate(steps):
        arguments = msgspec.json.encode(args).decode()
        call = ToolCallRecord(f"c{n}", FunctionCall(call_name(args), arguments))
        messages.append(ChatMessage("assistant", "", tool_calls=[call]))
        messages.append(ChatMessage("tool", json.dumps(result), tool_call_id=f"c{n}"))
    return messages


LISTING = {
    "ok": True,
    "entries": [{"name": "README.md", "type": "file", "size": 20}, {"name": "src", "type": "dir", "size": 0}],
}


def walk_tour(listing: dict[str, Any]) -> tuple[list[str], str]:
    steps: list[tuple[ToolArgs, dict[str, Any]]] = []
    names = []
    for _ in range(6):
        reply = respond(conversation("tour", *steps))
        if not reply.calls:
            break
        [args] = reply.calls
        names.append(call_name(args))
        result: dict[str, Any] = {"ok": True}
        if isinstance(args, ListDirectoryArgs):
            result = listing
        elif isinstance(args, ReadFileArgs):
            result = {"ok": True, "path": args.path, "content": "# Title\n"}
        elif call_name(args) == "execute_command":
            result = {"ok": True, "exit_code": 0, "output": "4 dashfloat-demo.md\n"}
        steps.append((args, result))
    return names, reply.text


def test_tour_walks_list_read_write_edit_command_then_answers() -> None:
    names, text = walk_tour(LISTING)
    assert names == ["list_directory", "read_file", "write_file", "edit_file", "execute_command"]
    assert "```sh" in text and "Tour complete" in text


def test_a_tour_of_an_empty_directory_writes_its_file_once() -> None:
    """Found in tmux: `tour` in an empty directory asked to write dashfloat-demo.md a second time."""
    names, text = walk_tour({"ok": True, "entries": []})
    assert names == ["list_directory", "write_file", "edit_file", "execute_command"]
    assert "Tour complete" in text


def test_a_rejection_stops_the_demo_politely() -> None:
    messages = conversation(
        "tour", (ListDirectoryArgs(), LISTING), (WriteFileArgs("a", "b"), {"ok": False, "rejected": True})
    )
    reply = respond(messages)
    assert reply.calls == [] and "left that alone" in reply.text


def test_fix_proposes_a_unique_one_line_edit() -> None:
    read = {"ok": True, "path": "README.md", "content": "intro\nthis is teh bug\n"}
    reply = respond(conversation("please fix it", (ListDirectoryArgs(), LISTING), (ReadFileArgs("README.md"), read)))
    assert reply.calls == [EditFileArgs("README.md", search_block="this is teh bug", replace_block="this is the bug")]


def test_hello_and_unknown_prompts_explain_how_to_configure() -> None:
    for prompt in ("hello", "what is the weather"):
        reply = respond(conversation(prompt))
        assert reply.calls == [] and "--base-url" in reply.text and "OPENAI_API_KEY" in reply.text


def test_run_the_tests_runs_a_command() -> None:
    reply = respond(conversation("run the tests", (ListDirectoryArgs(), LISTING)))
    [args] = reply.calls
    assert call_name(args) == "execute_command"


def test_headless_demo_tour_through_the_real_processes(tmp_path: Path, isolated_env: dict[str, str]) -> None:
    tree = tmp_path / "work"
    tree.mkdir()
    (tree / "README.md").write_text("# A project\n")
    env = {**isolated_env, "DASHFLOAT_DEMO_DELAY_MS": "0"}
    command = [sys.executable, "-m", "dashfloat", "--cwd", str(tree), "--yes", "-p", "tour"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert "offline demo model" in result.stderr  # nothing configured: the demo says so
    # The demo counts its prompt as a real server does, tools included: no "tools dropped" scare on first use.
    assert "does not seem to pass the tools" not in result.stderr, result.stderr
    assert "Tour complete" in result.stdout
    assert "edited through a confirmation" in (tree / DEMO_FILE).read_text()
    assert sorted(p.name for p in tree.iterdir()) == ["README.md", DEMO_FILE]


def test_explain_counts_files_and_directories_in_words_that_agree() -> None:
    # It said "1 directories" (found in tmux on the demo).
    entries = [{"name": "a.py", "type": "file", "size": 1}, {"name": "src", "type": "dir", "size": 0}]
    listing: dict[str, Any] = {"ok": True, "entries": entries}
    steps: list[tuple[ToolArgs, dict[str, Any]]] = [(ListDirectoryArgs(path="."), listing)]
    steps.append((ReadFileArgs(path="a.py", limit=60), {"ok": True, "path": "a.py", "content": "x = 1\n"}))
    assert "holds **1 file** and **1 directory**." in respond(conversation("explain this project", *steps)).text
    listing["entries"] = []
    assert "holds **0 files** and **0 directories**." in respond(conversation("explain this project", steps[0])).text
