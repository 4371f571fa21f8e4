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
    assert broken[0] == "" and broken[2] is not None and "not valid JSON" in broken[2]
    (no_object,) = calls_of('<tool_call>{"name": "read_file", "arguments": [1]}</tool_call>')
    assert no_object[0] == "read_file" and no_object[2] is not None and "not a JSON object" in no_object[2]
    (garbage,) = calls_of("[TOOL_CALLS] definitely not json")
    assert garbage[2] is not None


@pytest.mark.parametrize(
    "block",
    [
        {"name": "read_file", "arguments": {"path": "a"}, "id": "x"},  # an extra key: not exactly a call
        {"name": "open_file", "arguments": {"path": "a"}},  # not one of the five tools
        {"name": "read_file", "arguments": {}},  # a required argument is missing
        {"name": "read_file", "arguments": {"path": 3}},  # wrong type
        {"name": "read_file", "arguments": {"path": "a", "mode": "r"}},  # an unknown argument
        {"name": "read_file"},  # no arguments at all
        {"tool": "read_file", "arguments": {"path": "a"}},  # not the call shape
        [READ],  # a list of calls in a fence: an example, not a call
        {"name": "read_file", "arguments": "{not json"},
    ],
)
def test_near_misses_in_a_fence_stay_prose_and_never_run(block: Any) -> None:
    text = f"For example, a call looks like:\n```json\n{json.dumps(block)}\n```\nbut I am not calling it."
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
    if calls:  # only possible when the whole text is exactly one valid call object
        assert json.loads(text)["name"] in {"read_file", "write_file", "edit_file", "execute_command", "list_directory"}
    else:
        assert prose == text
