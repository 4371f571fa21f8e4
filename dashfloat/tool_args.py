"""The model's JSON arguments become a typed ``ToolArgs``, or the error text the model reads (docs/tools.md).

This is the only place arguments are checked: a call is parsed where it is assembled (``llm.toolcalls``,
``llm.textcalls``) and by the standalone executor; everything after takes the Struct.
"""

from __future__ import annotations

import math
from typing import Final

import msgspec

from dashfloat.catalogue import (
    EDIT_FILE,
    EXECUTE_COMMAND,
    JOB_KILL,
    JOB_OUTPUT,
    LIST_DIRECTORY,
    READ_FILE,
    TOOL_NAMES,
    WRITE_FILE,
    parameter_schemas,
)
from dashfloat.jsonvalue import JsonObject, JsonValue
from dashfloat.protocol import (
    MCP_SEARCH,
    MCP_TOOL_PREFIX,
    AssembledCall,
    EditFileArgs,
    ExecuteCommandArgs,
    JobKillArgs,
    JobOutputArgs,
    ListDirectoryArgs,
    McpCallArgs,
    McpSearchArgs,
    ReadFileArgs,
    ToolArgs,
    WriteFileArgs,
)

_SCHEMAS: Final = parameter_schemas()
_ARGUMENTS_ENCODER: Final = msgspec.json.Encoder()


def _check(tool: str, key: str, value: JsonValue, schema: JsonObject) -> str | None:
    kind = schema["type"]
    low, high = schema.get("minimum"), schema.get("maximum")
    assert low is None or isinstance(low, int | float)
    assert high is None or isinstance(high, int | float)
    if kind == "string":
        return None if isinstance(value, str) else f"{tool}: {key} must be a string"
    if kind == "boolean":  # execute_command's background (issue 36)
        return None if isinstance(value, bool) else f"{tool}: {key} must be true or false"
    if kind == "number":
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            return f"{tool}: {key} must be a number"
        if low is not None and value < low:
            return f"{tool}: {key} must be >= {low:g}, got {value:g}"
        if high is not None and value > high:
            return f"{tool}: {key} must be <= {high:g}, got {value:g}"
        return None
    if kind == "integer":
        # bool is an int subclass in Python but not a JSON integer.
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{tool}: {key} must be an integer"
        if low is not None and value < low:
            return f"{tool}: {key} must be >= {low}, got {value}"
        if high is not None and value > high:
            return f"{tool}: {key} must be <= {high}, got {value}"
        return None
    raise AssertionError(f"catalogue type {kind!r} has no validator")  # a catalogue edit forgot us


def _checked(name: str, args: JsonObject) -> JsonObject | str:
    """The arguments with every catalogue check passed (absent optional ones left out), or the first error."""
    schema = _SCHEMAS[name]
    properties = schema["properties"]
    required = schema["required"]
    assert isinstance(properties, dict) and isinstance(required, list)
    unknown = sorted(str(k) for k in args if k not in properties)
    if unknown:
        return f"{name}: unknown parameter(s): {', '.join(unknown)}"
    present: JsonObject = {}
    for key, prop in properties.items():
        assert isinstance(prop, dict)
        if key not in args:
            if key in required:
                return f"{name}: missing required parameter {key}"
            continue  # the Struct's default: the catalogue's (one source, pinned by a test), or the runtime's
        error = _check(name, key, args[key], prop)
        if error:
            return error
        present[key] = args[key]
    return present


def parse_args(name: object, args: object) -> ToolArgs | str:
    """The typed arguments of a call of tool ``name`` (defaults filled in), or the error message saying why not."""
    if isinstance(name, str) and (name.startswith(MCP_TOOL_PREFIX) or name == MCP_SEARCH):
        return mcp_args(name, args)
    if not isinstance(name, str) or name not in TOOL_NAMES:
        return f"unknown tool: {name!r} (tools: {', '.join(TOOL_NAMES)})"
    if not isinstance(args, dict):
        return f"{name}: arguments must be a JSON object"
    checked = _checked(name, args)
    if isinstance(checked, str):
        return checked
    if name == EXECUTE_COMMAND and not str(checked["command"]).strip():
        return "execute_command: command is empty (nothing to run)"
    if name == EDIT_FILE and checked["search_block"] == "":
        return "edit_file: search_block is empty (it would match everywhere)"
    if name == EDIT_FILE and checked["search_block"] == checked["replace_block"]:
        return "edit_file: search_block and replace_block are identical (the edit would change nothing)"
    if name == EXECUTE_COMMAND and not checked.get("background", False):
        ready = [key for key in ("ready_pattern", "ready_port", "ready_timeout") if key in checked]
        if ready:  # background jobs (issue 36): a foreground command has no readiness to wait for
            said = ", ".join(ready)
            return f"execute_command: {said}: only with background: true (a foreground command has no readiness)"
    if name == EXECUTE_COMMAND and isinstance(checked.get("ready_pattern"), str):
        import re  # already loaded by the protocol module: no cost

        try:
            re.compile(str(checked["ready_pattern"]))
        except re.error as exc:
            return f"execute_command: ready_pattern is not a valid regular expression ({exc})"
    return _typed(name, checked)


def mcp_args(name: str, args: object) -> McpCallArgs | McpSearchArgs | str:
    """An MCP call's arguments (ADR 0086): any JSON object, kept as its text (the server checks it against its schema;
    whether the tool exists is the executor's to say), or the search's query."""
    if not isinstance(args, dict):
        return f"{name}: arguments must be a JSON object"
    if name == MCP_SEARCH:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            return f"{MCP_SEARCH}: query must be a non-empty string (words of the tool's name or description)"
        return McpSearchArgs(query=query)
    server, _, tool = name.removeprefix(MCP_TOOL_PREFIX).partition("__")
    if not server or not tool:
        return f"{name}: an MCP tool is named mcp__<server>__<tool>"
    return McpCallArgs(name=name, arguments=_ARGUMENTS_ENCODER.encode(args).decode())


def _typed(name: str, checked: JsonObject) -> ToolArgs:
    # Every field is checked above, so the conversion cannot fail (the Structs' constraints are the same).
    if name == READ_FILE:
        return msgspec.convert(checked, ReadFileArgs)
    if name == WRITE_FILE:
        return msgspec.convert(checked, WriteFileArgs)
    if name == EDIT_FILE:
        return msgspec.convert(checked, EditFileArgs)
    if name == EXECUTE_COMMAND:
        return msgspec.convert(checked, ExecuteCommandArgs)
    if name == LIST_DIRECTORY:
        return msgspec.convert(checked, ListDirectoryArgs)
    if name == JOB_OUTPUT:
        return msgspec.convert(checked, JobOutputArgs)
    if name == JOB_KILL:
        return msgspec.convert(checked, JobKillArgs)
    raise AssertionError(f"tool {name!r} has no argument Struct")  # a catalogue edit forgot us


def signature(name: str) -> str:
    """``edit_file(path: string, search_block: string, replace_block: string)``: what a tool takes, optional
    arguments marked with ``?``, in the order the catalogue lists them."""
    schema = _SCHEMAS[name]
    properties, required = schema["properties"], schema["required"]
    assert isinstance(properties, dict) and isinstance(required, list)
    params = []
    for key, prop in properties.items():
        assert isinstance(prop, dict)
        params.append(f"{key}{'' if key in required else '?'}: {prop['type']}")
    return f"{name}({', '.join(params)})"


_NAMES_THE_FIX: Final = (" must be >= ", " must be <= ", " is empty (", " are identical (")
"""``parse_args`` errors about a value, not the call's shape: they say what to change already, so no signature."""
_ONLY_TOOLS: Final = "; ".join(signature(name) for name in TOOL_NAMES)


def explained(name: str, error: str) -> str:
    """``error`` (from ``parse_args``) with what the model can do about it: the tool's signature, or the list of
    tools when the name is none of them (ADR 0079: a small model corrects a call it is shown how to write); an
    error about one value's range or emptiness is left as it is."""
    if name.startswith(MCP_TOOL_PREFIX) or name == MCP_SEARCH:
        return f"{error}; the call was not run"  # its schema is the server's: mcp_search shows it (ADR 0086)
    if name not in TOOL_NAMES:
        run = " To run a program or a script, call execute_command with a shell command line." if name else ""
        return (
            f"unknown tool: {name!r}; the call was not run. The only tools are: {_ONLY_TOOLS} (? marks an optional "
            f"argument).{run} Call one of these by its exact name."
        )
    if any(phrase in error for phrase in _NAMES_THE_FIX):
        return error
    unknown = error.partition(": unknown parameter(s): ")[2]
    if unknown:
        return (
            f"{error}; the call was not run. The tool takes only: {signature(name)} (? marks an optional argument). "
            f"Call {name} again without {unknown}."
        )
    return f"{error}; the call was not run. The tool takes: {signature(name)} (? marks an optional argument)."


def assemble(
    call_id: str, name: str, args: JsonObject | None, error: str | None = None, written: str = "", cut: bool = False
) -> AssembledCall:
    """A call as the agent gets it: the arguments' canonical JSON (what goes back to the provider) and either
    the parsed arguments or why it cannot run (``error`` given: the arguments did not even decode; ``written``:
    what came instead, ``cut``: the stream ended while they were arriving)."""
    arguments = _ARGUMENTS_ENCODER.encode(args if args is not None else {}).decode()
    if error is None:
        parsed = parse_args(name, args)
        if isinstance(parsed, str):
            error = explained(name, parsed)
        else:
            return AssembledCall(call_id, name, arguments, args=parsed)
    return AssembledCall(call_id, name, arguments, error=error, written=written, cut=cut)
