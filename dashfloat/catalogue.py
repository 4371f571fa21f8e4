"""The fixed five-tool catalogue (seed record §1): names, parameter schemas, defaults."""

from __future__ import annotations

import copy
from typing import Any, Final

READ_FILE: Final = "read_file"
WRITE_FILE: Final = "write_file"
EDIT_FILE: Final = "edit_file"
EXECUTE_COMMAND: Final = "execute_command"
LIST_DIRECTORY: Final = "list_directory"

TOOL_NAMES: Final = (READ_FILE, WRITE_FILE, EDIT_FILE, EXECUTE_COMMAND, LIST_DIRECTORY)
MUTATING_TOOLS: Final = frozenset({WRITE_FILE, EDIT_FILE, EXECUTE_COMMAND})
EDIT_TOOLS: Final = frozenset({WRITE_FILE, EDIT_FILE})

READ_DEFAULT_OFFSET: Final = 1
READ_DEFAULT_LIMIT: Final = 2000
READ_MAX_LIMIT: Final = 10_000
EXEC_TIMEOUT_DEFAULT_S: Final = 30.0
"""execute_command's timeout when neither the call nor --exec-timeout names one."""
EXEC_TIMEOUT_MAX_S: Final = 600.0
"""The longest timeout a call may ask for (a real project's `make test`)."""
# Bounds the model is told about: the executor enforces exactly these (it imports them from here), and the
# descriptions below are built from them, so the text cannot disagree with what runs.
READ_MAX_LINES: Final = 2000
READ_MAX_BYTES: Final = 64 * 1024
LIST_MAX_ENTRIES: Final = 501
EXEC_OUTPUT_MAX_BYTES: Final = 32 * 1024
# The 32 KiB are split: the start of the output (what ran) and its end (the summary, the failure).
EXEC_OUTPUT_HEAD_BYTES: Final = 8 * 1024
EXEC_OUTPUT_TAIL_BYTES: Final = EXEC_OUTPUT_MAX_BYTES - EXEC_OUTPUT_HEAD_BYTES


def _kib(n: int) -> str:
    return f"{n // 1024} KiB"


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


TOOLS: Final[list[dict[str, Any]]] = [
    _tool(
        READ_FILE,
        f"Read a text file as a 1-based line window (at most {READ_MAX_LINES} lines / {_kib(READ_MAX_BYTES)} "
        "per call).",
        {
            "path": _string("File path relative to the working directory."),
            "offset": {"type": "integer", "minimum": 1, "default": READ_DEFAULT_OFFSET},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": READ_MAX_LIMIT,
                "default": READ_DEFAULT_LIMIT,
            },
        },
        ["path"],
    ),
    _tool(
        WRITE_FILE,
        "Create or overwrite a file with the given content; parent directories are created.",
        {
            "path": _string("File path relative to the working directory."),
            "content": _string("The complete new file content."),
        },
        ["path", "content"],
    ),
    _tool(
        EDIT_FILE,
        "Replace one exact occurrence of search_block with replace_block; it must match exactly once.",
        {
            "path": _string("File path relative to the working directory."),
            "search_block": _string("Exact text to find; must occur exactly once."),
            "replace_block": _string("Text to put in its place."),
        },
        ["path", "search_block", "replace_block"],
    ),
    _tool(
        EXECUTE_COMMAND,
        "",  # filled in by tools_catalogue: the text names the real default timeout
        {
            "command": _string("The shell command line."),
            "cwd": {"type": "string", "description": "Directory to run in.", "default": "."},
            "timeout": {"type": "number", "minimum": 1, "maximum": EXEC_TIMEOUT_MAX_S},
        },
        ["command"],
    ),
    _tool(
        LIST_DIRECTORY,
        f"List a directory: sorted names with type and size (at most {LIST_MAX_ENTRIES} entries).",
        {"path": {"type": "string", "description": "Directory path.", "default": "."}},
        [],
    ),
]


def tools_catalogue(exec_timeout_s: float = EXEC_TIMEOUT_DEFAULT_S) -> list[dict[str, Any]]:
    """The catalogue sent to the model, its execute_command text naming the default timeout in force."""
    tools = copy.deepcopy(TOOLS)
    for tool in tools:
        function = tool["function"]
        if function["name"] == EXECUTE_COMMAND:
            function["description"] = (
                f"Run a shell command line with sh -c semantics. It is killed after {exec_timeout_s:g} s unless "
                f"`timeout` asks for longer (at most {EXEC_TIMEOUT_MAX_S:g} s): pass it for builds and test "
                f"suites. Output: the first {_kib(EXEC_OUTPUT_HEAD_BYTES)} and the last {_kib(EXEC_OUTPUT_TAIL_BYTES)} "
                "of stdout+stderr are kept."
            )
            function["parameters"]["properties"]["timeout"]["description"] = (
                f"Seconds before the command is killed (default {exec_timeout_s:g}, maximum {EXEC_TIMEOUT_MAX_S:g})."
            )
    return tools


SUMMARY_KEYS: Final = {
    READ_FILE: "path",
    WRITE_FILE: "path",
    EDIT_FILE: "path",
    EXECUTE_COMMAND: "command",
    LIST_DIRECTORY: "path",
}


def summarize_call(name: str, args: dict[str, Any], width: int = 80) -> str:
    """A tool row's one-line summary: ``read_file lib/foo.py``, ``execute_command pytest -q``."""
    key = SUMMARY_KEYS.get(name)
    value = args.get(key) if key else None
    if value is None and name == LIST_DIRECTORY:
        value = "."
    text = " ".join(str(value).split()) if value is not None else ""
    if len(text) > width:
        text = text[: width - 1] + "…"
    return f"{name} {text}".rstrip()


def describe_change(name: str, path: str, summary: str, approved_by: str, rule: str) -> str:
    """``✎ edited a.py +3 −1 · 120 bytes · by rule edit_file``: the one line a landed mutation leaves (TUI and
    headless alike)."""
    verb = {WRITE_FILE: "wrote", EDIT_FILE: "edited", EXECUTE_COMMAND: "ran"}.get(name, name)
    what = summary if name == EXECUTE_COMMAND else f"{path} {summary}".strip()
    by = {"keypress": "approved by keypress", "rule": f"by rule {rule}", "flag": f"by {rule}"}.get(approved_by, "")
    return f"✎ {verb} {what} · {by}"
