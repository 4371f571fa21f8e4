"""Tool calls written as text: each form, the prose kept, and the near misses that must not run."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashfloat.llm.textcalls import text_tool_calls
from tests.llm.conftest import written


def calls_of(text: str) -> list[tuple[str, dict[str, Any] | None, str | None]]:
    return [(c.name, written(c), c.error) for c in text_tool_calls(text)[1]]


READ = {"name": "read_file", "arguments": {"path": "notes.txt"}}


def test_a_fenced_json_call_as_qwen_writes_it() -> None:
    text = f"I will read the file.\n\n```json\n{json.dumps(READ)}\n```\n\nThen I will summarize it."
    prose, calls = text_tool_calls(text)
    assert [(c.id, c.name, written(c), c.error) for c in calls] == [
        ("text_call_0", "read_file", {"path": "notes.txt"}, None)
    ]
    assert prose == "I will read the file.\n\nThen I will summarize it."


def test_a_fence_without_a_language_and_arguments_as_a_string() -> None:
    call = {"name": "list_directory", "arguments": json.dumps({"path": "src"})}
    assert calls_of(f"```\n{json.dumps(call)}\n```") == [("list_directory", {"path": "src"}, None)]


def test_two_fenced_calls_in_order() -> None:
    second = {"name": "execute_command", "arguments": {"command": "ls"}}
    text = f"```json\n{json.dumps(READ)}\n```\nand\n```json\n{json.dumps(second)}\n```"
    assert [name for name, _, _ in calls_of(text)] == ["read_file", "execute_command"]


def test_a_whole_answer_that_is_one_call_object() -> None:
    assert text_tool_calls(json.dumps(READ)) == ("", text_tool_calls(json.dumps(READ))[1])
    assert calls_of(f"  {json.dumps(READ)}\n") == [("read_file", {"path": "notes.txt"}, None)]


def test_hermes_and_qwen_tool_call_tags() -> None:
    second = {"name": "list_directory", "arguments": {}}
    text = f"Let me look.\n<tool_call>\n{json.dumps(READ)}\n</tool_call>\n<tool_call>{json.dumps(second)}</tool_call>"
    prose, calls = text_tool_calls(text)
    assert prose == "Let me look."
    assert [(c.name, written(c)) for c in calls] == [("read_file", {"path": "notes.txt"}), ("list_directory", {})]


def test_a_tag_left_open_at_the_end_of_the_answer() -> None:
    assert calls_of(f"<tool_call>{json.dumps(READ)}") == [("read_file", {"path": "notes.txt"}, None)]


def test_mistral_tool_calls_marker_with_a_list_and_with_name_args_pairs() -> None:
    second = {"name": "list_directory", "arguments": {"path": "."}}
    prose, calls = text_tool_calls(f"Sure.[TOOL_CALLS][{json.dumps(READ)}, {json.dumps(second)}]")
    assert prose == "Sure." and [c.name for c in calls] == ["read_file", "list_directory"]
    pairs = '[TOOL_CALLS]read_file[ARGS]{"path": "a"}[TOOL_CALLS]list_directory[ARGS]{}'
    assert calls_of(pairs) == [("read_file", {"path": "a"}, None), ("list_directory", {}, None)]


def test_a_malformed_marked_call_is_an_error_for_the_model_not_silence() -> None:
    (broken,) = calls_of('<tool_call>{"name": "read_file", "arguments": {"path": </tool_call>')
    assert broken[0] == "read_file" and broken[2] is not None and "not valid JSON" in broken[2]
    assert "The tool takes: read_file(path: string" in broken[2]
    (nameless,) = calls_of('<tool_call>{"arguments": {"path": </tool_call>')
    assert nameless[0] == "" and nameless[2] is not None and "not valid JSON" in nameless[2]
    (no_object,) = calls_of('<tool_call>{"name": "read_file", "arguments": [1]}</tool_call>')
    assert no_object[0] == "read_file" and no_object[2] is not None and "not a JSON object" in no_object[2]
    (garbage,) = calls_of("[TOOL_CALLS] definitely not json")
    assert garbage[2] is not None


@pytest.mark.parametrize(
    ("block", "name", "error"),
    [
        ({"name": "read_file", "arguments": {"path": "a"}, "id": "x"}, "read_file", None),  # OpenAI's id: a call
        ({"name": "open_file", "arguments": {"path": "a"}}, "open_file", "unknown tool: 'open_file'"),
        ({"name": "read_file", "arguments": {}}, "read_file", "missing required parameter path"),
        ({"name": "read_file", "arguments": {"path": 3}}, "read_file", "path must be a string"),
        ({"name": "read_file", "arguments": {"path": "a", "mode": "r"}}, "read_file", "unknown parameter(s): mode"),
        ({"name": "read_file", "arguments": "{not json"}, "read_file", "not a JSON object"),
    ],
)
def test_a_near_miss_in_a_fence_is_a_call_answered_with_an_error(block: Any, name: str, error: str | None) -> None:
    """ADR 0079 (reversing 0014's near misses): a call the model got wrong is answered, so it can correct it."""
    text = f"Let me do it:\n```json\n{json.dumps(block)}\n```\nDone."
    prose, calls = text_tool_calls(text)
    assert prose == "Let me do it:\n\nDone."
    [(got_name, _, got_error)] = [(c.name, written(c), c.error) for c in calls]
    assert got_name == name
    assert (got_error is None) if error is None else (got_error is not None and error in got_error)


@pytest.mark.parametrize(
    "block",
    [
        {"name": "read_file"},  # no arguments at all: an object that names a tool, not a call
        {"tool": "read_file", "arguments": {"path": "a"}},  # not the call shape
        {"name": "read_file", "arguments": {"path": "a"}, "note": "x"},  # a key no call carries
        [READ],  # a list of calls in a fence: an example, not a call
    ],
)
def test_json_that_is_not_written_as_a_call_stays_prose(block: Any) -> None:
    text = f"For example:\n```json\n{json.dumps(block)}\n```\nbut I am not calling it."
    assert text_tool_calls(text) == (text, [])


def test_a_call_shown_inside_a_larger_json_example_does_not_run() -> None:
    example = {"messages": [{"role": "assistant", "tool_calls": [READ]}]}
    text = f"The request body:\n```json\n{json.dumps(example, indent=2)}\n```"
    assert text_tool_calls(text) == (text, [])
    assert text_tool_calls('Use {"name": "read_file", "arguments": {"path": "a"}} to read.')[1] == []


def test_no_calls_leaves_the_text_untouched() -> None:
    text = "Plain answer.\n\n\n\nWith blank lines kept as they were."
    assert text_tool_calls(text) == (text, [])


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_any_text_without_markers_or_fences_is_never_a_call(text: str) -> None:
    if "<tool_call>" in text or "[TOOL_CALLS]" in text or "```" in text:
        return
    prose, calls = text_tool_calls(text)
    if calls:  # only possible when the whole text starts with a call attempt
        assert text.lstrip().startswith("{")
    else:
        assert prose == text


def test_calls_one_per_line_in_a_tools_block_then_an_invented_result_is_dropped() -> None:
    second = {"name": "list_directory", "arguments": {}}
    text = f"<tools>\n{json.dumps(READ)}\n{json.dumps(second)}\n{json.dumps({'result': 'made up'})}\n</tools>\nok"
    prose, calls = text_tool_calls(text)
    assert [c.name for c in calls] == ["read_file", "list_directory"] and prose == "ok"


def test_a_fenced_block_that_starts_as_a_call_but_is_no_json_is_a_broken_call() -> None:
    [(name, _, error)] = calls_of('```json\n{"name": "read_file", "arguments": {"path": "a",\n```')
    assert name == "read_file" and error is not None and "not valid JSON" in error


def test_a_whole_answer_that_is_a_call_of_an_unknown_tool_is_a_call() -> None:
    prose, [call] = text_tool_calls('{"name": "create_gitignore", "parameters": {"entries": ["*.pyc"]}}')
    assert prose == "" and call.name == "create_gitignore" and call.error is not None
    assert call.error.startswith("unknown tool: 'create_gitignore'; the call was not run.")


def test_an_answer_that_is_only_a_call_object_is_a_call_whatever_else_it_carries() -> None:
    """Seen from the 0.5B model: ``{"name": "timeout", "arguments": "30", "features": [...]}`` as its whole answer."""
    [call] = text_tool_calls('{"name": "timeout", "arguments": "30", "features": ["export"]}')[1]
    assert call.name == "timeout" and call.error is not None and call.error.startswith("unknown tool: 'timeout'")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"command": " "}, "execute_command: command is empty (nothing to run)"),
        ({"command": "ls", "timeout": 601}, "execute_command: timeout must be <= 600, got 601"),
        ({"command": "ls", "timeout": 0}, "execute_command: timeout must be >= 1, got 0"),
    ],
)
def test_an_error_about_one_value_names_the_fix_and_gets_no_signature(args: dict[str, Any], error: str) -> None:
    [(_, _, got)] = calls_of(f"```json\n{json.dumps({'name': 'execute_command', 'arguments': args})}\n```")
    assert got == error
