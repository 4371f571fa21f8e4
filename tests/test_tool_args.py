"""The model's JSON arguments become typed arguments, or the error text the model reads (dashfloat.tool_args)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashfloat.catalogue import (
    EXEC_TIMEOUT_MAX_S,
    READ_DEFAULT_LIMIT,
    READ_DEFAULT_OFFSET,
    READ_MAX_LIMIT,
    TOOL_NAMES,
    parameter_schemas,
)
from dashfloat.protocol import (
    AssembledCall,
    EditFileArgs,
    ExecuteCommandArgs,
    JobKillArgs,
    JobOutputArgs,
    ListDirectoryArgs,
    ReadFileArgs,
    RunTool,
    ToolArgs,
    WriteFileArgs,
)
from dashfloat.tool_args import assemble, explained, parse_args
from tests.executor.conftest import run_json


def test_defaults_are_filled_in() -> None:
    assert parse_args("read_file", {"path": "a"}) == ReadFileArgs(path="a", offset=1, limit=READ_DEFAULT_LIMIT)
    assert parse_args("list_directory", {}) == ListDirectoryArgs(path=".")
    assert parse_args("execute_command", {"command": "true"}) == ExecuteCommandArgs("true", cwd=".", timeout=None)


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("rm_rf", {}, "unknown tool"),
        (None, {}, "unknown tool"),
        ("read_file", [], "must be a JSON object"),
        ("read_file", {}, "missing required parameter path"),
        ("read_file", {"path": 3}, "path must be a string"),
        ("read_file", {"path": "a", "offset": 0}, "offset must be >= 1"),
        ("read_file", {"path": "a", "offset": True}, "offset must be an integer"),
        ("read_file", {"path": "a", "offset": 1.0}, "offset must be an integer"),
        ("read_file", {"path": "a", "limit": 0}, "limit must be >= 1"),
        ("read_file", {"path": "a", "limit": READ_MAX_LIMIT + 1}, f"limit must be <= {READ_MAX_LIMIT}"),
        ("read_file", {"path": "a", "bogus": 1}, "unknown parameter(s): bogus"),
        ("write_file", {"path": "a"}, "missing required parameter content"),
        ("edit_file", {"path": "a", "search_block": "", "replace_block": "x"}, "search_block is empty"),
        ("edit_file", {"path": "a", "search_block": "x", "replace_block": "x"}, "identical"),
        ("execute_command", {"command": ["ls"]}, "command must be a string"),
        ("execute_command", {"command": ""}, "command is empty"),
        ("execute_command", {"command": " \n\t"}, "command is empty"),
        ("list_directory", {"path": None}, "path must be a string"),
    ],
)
def test_bad_calls_are_refused(name: Any, args: Any, message: str) -> None:
    error = parse_args(name, args)
    assert isinstance(error, str)
    assert message in error


def test_limit_range_edges_accepted() -> None:
    assert parse_args("read_file", {"path": "a", "limit": 1}) == ReadFileArgs("a", limit=1)
    assert parse_args("read_file", {"path": "a", "limit": READ_MAX_LIMIT}) == ReadFileArgs("a", limit=READ_MAX_LIMIT)


def test_bad_arguments_execute_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    result = run_json("execute_command", {"command": f"touch {marker}", "extra": 1}, str(tmp_path))
    assert result["ok"] is False
    assert "unknown parameter" in result["error"]
    assert not marker.exists()


def test_the_timeout_is_a_number_between_1_and_the_maximum() -> None:
    assert parse_args("execute_command", {"command": "true", "timeout": 120.5}) == ExecuteCommandArgs(
        "true", timeout=120.5
    )
    assert parse_args("execute_command", {"command": "t", "timeout": 60}) == ExecuteCommandArgs("t", timeout=60.0)
    assert parse_args("execute_command", {"command": "t", "timeout": EXEC_TIMEOUT_MAX_S}) == ExecuteCommandArgs(
        "t", timeout=EXEC_TIMEOUT_MAX_S
    )
    assert parse_args("execute_command", {"command": "t", "timeout": EXEC_TIMEOUT_MAX_S + 0.5}) == (
        "execute_command: timeout must be <= 600, got 600.5"
    )
    assert parse_args("execute_command", {"command": "t", "timeout": 0}) == (
        "execute_command: timeout must be >= 1, got 0"
    )
    assert (
        parse_args("execute_command", {"command": "t", "timeout": True}) == "execute_command: timeout must be a number"
    )
    assert (
        parse_args("execute_command", {"command": "t", "timeout": "60"}) == "execute_command: timeout must be a number"
    )


def test_the_structs_say_what_the_catalogue_says() -> None:
    """Fields, required ones, defaults and bounds of each Struct are the model's schema (one source each)."""
    structs: dict[str, type[ToolArgs]] = {
        "read_file": ReadFileArgs,
        "write_file": WriteFileArgs,
        "edit_file": EditFileArgs,
        "execute_command": ExecuteCommandArgs,
        "list_directory": ListDirectoryArgs,
        "job_output": JobOutputArgs,
        "job_kill": JobKillArgs,
    }
    assert set(structs) == set(TOOL_NAMES)
    for name, schema in parameter_schemas().items():
        fields = {f.name: f for f in msgspec.structs.fields(structs[name])}
        properties = schema["properties"]
        assert isinstance(properties, dict)
        assert set(fields) == set(properties), name
        required = schema["required"]
        assert isinstance(required, list)
        assert sorted(f.name for f in fields.values() if f.required) == sorted(str(r) for r in required)
        for key, prop in properties.items():
            assert isinstance(prop, dict)
            default = fields[key].default
            assert prop.get("default") == (None if default is msgspec.NODEFAULT else default), (name, key)
    assert ReadFileArgs("a").offset == READ_DEFAULT_OFFSET


def test_a_call_that_did_not_parse_keeps_what_the_model_wrote() -> None:
    call = assemble("c1", "read_file", {"path": 3})
    error = explained("read_file", "read_file: path must be a string")
    assert call == AssembledCall("c1", "read_file", '{"path":3}', error=error)
    broken = assemble("c2", "read_file", None, "the arguments are not valid JSON: '{'")
    assert broken.arguments == "{}" and broken.args is None
    assert assemble("c3", "list_directory", {}).args == ListDirectoryArgs()


def test_a_pipe_decoder_refuses_what_the_parser_never_builds() -> None:
    decoder = msgspec.msgpack.Decoder(RunTool)
    for bad in (
        {"tool": "read_file", "path": "a", "offset": 0},
        {"tool": "edit_file", "path": "a", "search_block": ""},
    ):
        frame = msgspec.msgpack.encode({"type": "run_tool", "call_id": "c", "args": bad})
        with pytest.raises(msgspec.ValidationError):
            decoder.decode(frame)


# ---------------------------------------------------------------- the parser against the validator it replaced


def _schemas() -> dict[str, Any]:
    schemas: dict[str, Any] = parameter_schemas()
    return schemas


def _old_check(tool: str, key: str, value: Any, schema: dict[str, Any]) -> str | None:
    kind = schema["type"]
    if kind == "string":
        return None if isinstance(value, str) else f"{tool}: {key} must be a string"
    if kind == "boolean":  # execute_command's background (issue 36): new with it
        return None if isinstance(value, bool) else f"{tool}: {key} must be true or false"
    if kind == "number":
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            return f"{tool}: {key} must be a number"
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and value < low:
            return f"{tool}: {key} must be >= {low:g}, got {value:g}"
        if high is not None and value > high:
            return f"{tool}: {key} must be <= {high:g}, got {value:g}"
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        return f"{tool}: {key} must be an integer"
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and value < low:
        return f"{tool}: {key} must be >= {low}, got {value}"
    if high is not None and value > high:
        return f"{tool}: {key} must be <= {high}, got {value}"
    return None


def old_validate(name: Any, args: Any) -> dict[str, Any] | str:
    """The executor's validator before arguments were typed (executor/_validate.py), kept as the oracle."""
    if not isinstance(name, str) or name not in TOOL_NAMES:
        return f"unknown tool: {name!r} (tools: {', '.join(TOOL_NAMES)})"
    if not isinstance(args, dict):
        return f"{name}: arguments must be a JSON object"
    schema = _schemas()[name]
    properties: dict[str, Any] = schema["properties"]
    unknown = sorted(str(k) for k in args if k not in properties)
    if unknown:
        return f"{name}: unknown parameter(s): {', '.join(unknown)}"
    normalized: dict[str, Any] = {}
    for key, prop in properties.items():
        if key not in args:
            if key in schema["required"]:
                return f"{name}: missing required parameter {key}"
            normalized[key] = prop.get("default")
            continue
        error = _old_check(name, key, args[key], prop)
        if error:
            return error
        normalized[key] = args[key]
    if name == "execute_command" and not normalized["command"].strip():
        return "execute_command: command is empty (nothing to run)"
    if name == "edit_file":
        if normalized["search_block"] == "":
            return "edit_file: search_block is empty (it would match everywhere)"
        if normalized["search_block"] == normalized["replace_block"]:
            return "edit_file: search_block and replace_block are identical (the edit would change nothing)"
    if name == "execute_command" and not normalized["background"]:  # issue 36: readiness is a job's
        ready = [key for key in ("ready_pattern", "ready_port", "ready_timeout") if key in args]
        if ready:
            said = ", ".join(ready)
            return f"execute_command: {said}: only with background: true (a foreground command has no readiness)"
    if name == "execute_command" and isinstance(normalized["ready_pattern"], str):
        try:
            re.compile(normalized["ready_pattern"])
        except re.error as exc:
            return f"execute_command: ready_pattern is not a valid regular expression ({exc})"
    return normalized


_json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
_json = st.recursive(
    _json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_values = (
    st.sampled_from(["", "a", "x", ".", "src/a.py"])
    | st.integers(-2, READ_MAX_LIMIT + 2)
    | st.sampled_from([0.5, 1.0, 1.5, 599.5, 600.0, 600.5, math.inf, math.nan, 10**30])
    | _json
)


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A tool name and an object mostly of that tool's own parameters (so many parse), sometimes more."""
    name = draw(st.sampled_from([*TOOL_NAMES, "nope"]))
    own = list(_schemas().get(name, {"properties": {"path": {}}})["properties"])
    keys = (
        st.sampled_from(own) | st.sampled_from(["extra", "path", "command"])
        if draw(st.booleans())
        else st.sampled_from(own)
    )
    strings = st.sampled_from(["", "a", "x", ".", "src/a.py"])
    return name, draw(
        st.dictionaries(keys, strings | _values if draw(st.booleans()) else strings | st.integers(-1, 700), max_size=5)
    )


@settings(max_examples=1000, deadline=None)
@given(call=calls())
def test_any_json_object_parses_or_gets_the_error_text_the_model_got_before(call: tuple[str, dict[str, Any]]) -> None:
    name, args = call
    old = old_validate(name, args)
    new = parse_args(name, args)
    if isinstance(old, str):
        assert new == old
        return
    assert not isinstance(new, str)
    assert {f: getattr(new, f) for f in new.__struct_fields__} == old


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(TOOL_NAMES), args=_json)
def test_any_json_value_as_arguments_parses_or_gets_the_old_error(name: str, args: Any) -> None:
    old = old_validate(name, args)
    new = parse_args(name, args)
    assert new == old if isinstance(old, str) else not isinstance(new, str)
