"""The fixed five-tool catalogue (seed record §1): names, parameter schemas, defaults."""

from __future__ import annotations

import copy
from typing import Final, assert_never

import msgspec

from dashfloat.jsonvalue import JsonObject, JsonValue
from dashfloat.protocol import EXEC_TIMEOUT_MAX_S as EXEC_TIMEOUT_MAX_S
from dashfloat.protocol import JOB_READY_TIMEOUT_MAX_S as JOB_READY_TIMEOUT_MAX_S
from dashfloat.protocol import (
    MCP_SEARCH,
    MCP_TOOL_PREFIX,
    ConfirmSubject,
    EditFileArgs,
    ExecuteCommandArgs,
    JobKillArgs,
    JobOutputArgs,
    ListDirectoryArgs,
    MalformedCall,
    McpCallArgs,
    McpSearchArgs,
    McpServerInfo,
    McpTool,
    ReadFileArgs,
    RestoreConflict,
    RewindConversation,
    ToolArgs,
    UndoChanges,
    WriteFileArgs,
)
from dashfloat.protocol import READ_DEFAULT_LIMIT as READ_DEFAULT_LIMIT
from dashfloat.protocol import READ_DEFAULT_OFFSET as READ_DEFAULT_OFFSET
from dashfloat.protocol import READ_MAX_LIMIT as READ_MAX_LIMIT

READ_FILE: Final = "read_file"
WRITE_FILE: Final = "write_file"
EDIT_FILE: Final = "edit_file"
EXECUTE_COMMAND: Final = "execute_command"
LIST_DIRECTORY: Final = "list_directory"
JOB_OUTPUT: Final = "job_output"  # background jobs (issue 36, ADR 0080)
JOB_KILL: Final = "job_kill"

TOOL_NAMES: Final = (READ_FILE, WRITE_FILE, EDIT_FILE, EXECUTE_COMMAND, LIST_DIRECTORY, JOB_OUTPUT, JOB_KILL)

# READ_DEFAULT_OFFSET, READ_DEFAULT_LIMIT, READ_MAX_LIMIT and EXEC_TIMEOUT_MAX_S (imported above) live beside the
# argument Structs in dashfloat/protocol/_tool_args.py, whose defaults and bounds they are; the schemas below are
# built from them.
EXEC_TIMEOUT_DEFAULT_S: Final = 30.0
"""execute_command's timeout when neither the call nor --exec-timeout names one."""
# Bounds the model is told about: the executor enforces exactly these (it imports them from here), and the
# descriptions below are built from them, so the text cannot disagree with what runs.
READ_MAX_LINES: Final = 2000
READ_MAX_BYTES: Final = 64 * 1024
LIST_MAX_ENTRIES: Final = 501
EXEC_OUTPUT_MAX_BYTES: Final = 32 * 1024
# The 32 KiB are split: the start of the output (what ran) and its end (the summary, the failure).
EXEC_OUTPUT_HEAD_BYTES: Final = 8 * 1024
EXEC_OUTPUT_TAIL_BYTES: Final = EXEC_OUTPUT_MAX_BYTES - EXEC_OUTPUT_HEAD_BYTES
# Background jobs (issue 36, ADR 0080): at most this many run at once (a start past it is refused, naming it), and a
# start's readiness wait lasts this long unless the call says otherwise.
JOBS_MAX_RUNNING: Final = 8
JOB_READY_TIMEOUT_DEFAULT_S: Final = 30.0


def _kib(n: int) -> str:
    return f"{n // 1024} KiB"


def _string(description: str) -> JsonObject:
    return {"type": "string", "description": description}


def _tool(name: str, description: str, properties: JsonObject, required: list[JsonValue]) -> JsonObject:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


TOOLS: Final[list[JsonObject]] = [
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
            # background jobs (issue 36, ADR 0080)
            "background": {
                "type": "boolean",
                "description": "Start it as a job; returns its id at once.",
                "default": False,
            },
            "ready_pattern": _string("With background: wait for an output line matching this regex."),
            "ready_port": {
                "type": "integer",
                "minimum": 1,
                "maximum": 65535,
                "description": "With background: wait until this localhost port accepts.",
            },
            "ready_timeout": {
                "type": "number",
                "minimum": 0.1,
                "maximum": JOB_READY_TIMEOUT_MAX_S,
                "description": f"Seconds to wait (default {JOB_READY_TIMEOUT_DEFAULT_S:g}); the job runs on after.",
            },
        },
        ["command"],
    ),
    _tool(
        LIST_DIRECTORY,
        f"List a directory: sorted names with type and size (at most {LIST_MAX_ENTRIES} entries).",
        {"path": {"type": "string", "description": "Directory path.", "default": "."}},
        [],
    ),
    _tool(
        JOB_OUTPUT,
        f"A job's state, exit code and output after `cursor` (from its last result; head and tail, "
        f"{_kib(EXEC_OUTPUT_MAX_BYTES)}).",
        {
            "id": {"type": "integer", "minimum": 1},
            "cursor": {"type": "integer", "minimum": 0},
        },
        ["id"],
    ),
    _tool(
        JOB_KILL,
        "Stop a job and every process it started.",
        {"id": {"type": "integer", "minimum": 1}},
        ["id"],
    ),
]


def tools_catalogue(exec_timeout_s: float = EXEC_TIMEOUT_DEFAULT_S) -> list[JsonObject]:
    """The catalogue sent to the model, its execute_command text naming the default timeout in force."""
    tools = copy.deepcopy(TOOLS)
    for tool in tools:
        function = _object(tool["function"])
        if function["name"] == EXECUTE_COMMAND:
            function["description"] = (
                f"Run a shell command line with sh -c semantics. It is killed after {exec_timeout_s:g} s unless "
                f"`timeout` asks for longer (at most {EXEC_TIMEOUT_MAX_S:g} s): pass it for builds and test "
                f"suites. Output: the first {_kib(EXEC_OUTPUT_HEAD_BYTES)} and the last {_kib(EXEC_OUTPUT_TAIL_BYTES)} "
                f"of stdout+stderr are kept. `background`: a job (server, watcher; at most {JOBS_MAX_RUNNING}) that "
                "later commands reach on localhost."
            )
            timeout = _object(_object(_object(function["parameters"])["properties"])["timeout"])
            timeout["description"] = (
                f"Seconds before the command is killed (default {exec_timeout_s:g}, maximum {EXEC_TIMEOUT_MAX_S:g})."
            )
    return tools


def _object(value: JsonValue) -> JsonObject:
    """A catalogue part known to be an object (the catalogue is ours: anything else is a bug here)."""
    assert isinstance(value, dict)
    return value


def parameter_schemas() -> dict[str, JsonObject]:
    """Each tool's ``parameters`` schema by tool name."""
    functions = [_object(tool["function"]) for tool in TOOLS]
    return {str(f["name"]): _object(f["parameters"]) for f in functions}


UNNAMED_CALL = "(unnamed call)"
"""What a row shows for a call the model sent without a function name."""


CUT_OFF_MARK = "(cut off)"
"""Before the arguments of a call the stream's failure cut off (what had come of them follows)."""


def call_name(call: ConfirmSubject | MalformedCall) -> str:
    """The name a row shows for a call or a confirmation's subject: the tool's, or the restore's."""
    match call:
        case ReadFileArgs():
            return READ_FILE
        case WriteFileArgs():
            return WRITE_FILE
        case EditFileArgs():
            return EDIT_FILE
        case ExecuteCommandArgs():
            return EXECUTE_COMMAND
        case ListDirectoryArgs():
            return LIST_DIRECTORY
        case JobOutputArgs():
            return JOB_OUTPUT
        case JobKillArgs():
            return JOB_KILL
        case MalformedCall(name=name):
            return name or UNNAMED_CALL
        case McpCallArgs(name=name):
            return name
        case McpSearchArgs():
            return MCP_SEARCH
        case UndoChanges():
            return "undo"
        case RewindConversation():
            return "rewind"
        case RestoreConflict():
            return "restore conflicting file"
        case _:
            assert_never(call)


def mutates(args: ToolArgs) -> bool:
    """Whether the call may change the workspace (asked for, unless a rule or mode lets it run)."""
    match args:
        case WriteFileArgs() | EditFileArgs() | ExecuteCommandArgs() | McpCallArgs():
            return True  # an MCP tool's effects cannot be previewed: it is asked like a mutation (ADR 0086)
        case ReadFileArgs() | ListDirectoryArgs() | McpSearchArgs():
            return False
        case JobOutputArgs() | JobKillArgs():
            return False  # only the session's own jobs: reading one changes nothing, stopping one is unasked (issue 36)
        case _:
            assert_never(args)


def _subject_text(call: ConfirmSubject | MalformedCall) -> str:
    match call:
        case (
            ReadFileArgs(path=path) | WriteFileArgs(path=path) | EditFileArgs(path=path) | ListDirectoryArgs(path=path)
        ):
            return path
        case ExecuteCommandArgs(command=command):
            return command
        case MalformedCall(arguments=arguments) | McpCallArgs(arguments=arguments):
            return arguments  # what the model wrote, since no field of it can be trusted to be there
        case McpSearchArgs(query=query):
            return query
        case JobOutputArgs(id=job_id) | JobKillArgs(id=job_id):
            return str(job_id)
        case UndoChanges() | RewindConversation() | RestoreConflict():
            return ""  # the confirmation's lines say what and where
        case _:
            assert_never(call)


def summarize_call(call: ConfirmSubject | MalformedCall, width: int = 80) -> str:
    """A tool row's one-line summary: ``read_file lib/foo.py``, ``execute_command pytest -q``."""
    name = call_name(call)
    text = " ".join(_subject_text(call).split())
    if isinstance(call, MalformedCall) and call.cut:
        text = f"{CUT_OFF_MARK} {text}".rstrip()  # first: the row's end may be cut to its width
    if len(text) > width:
        text = text[: width - 1] + "…"
    return f"{name} {text}".rstrip()


# ---------------------------------------------------------------- MCP tools (ADR 0086)

MCP_SCHEMA_WINDOW_SHARE: Final = 0.10
"""The share of the context window the MCP tools' schemas may take; past it the model gets ``mcp_search`` instead."""
MCP_SCHEMA_WINDOW_ASSUMED: Final = 32_768
"""The window the share is taken of while the real one is not known."""
MCP_SEARCH_MAX_TOOLS: Final = 8
"""Tools one ``mcp_search`` returns (with their schemas), best first."""
MCP_NAME_MAX_CHARS: Final = 64
"""The longest function name providers take (OpenAI: ``^[a-zA-Z0-9_-]{1,64}$``)."""


def mcp_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, with what a provider refuses in a function name made ``_``, cut at its bound."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in tool)
    return f"{MCP_TOOL_PREFIX}{server}__{safe}"[:MCP_NAME_MAX_CHARS]


def mcp_tool_object(server: str, tool: McpTool) -> JsonObject:
    """One MCP tool as the catalogue lists it to the model: its schema as the server gave it (an object)."""
    try:
        schema = msgspec.json.decode(tool.schema)
    except msgspec.DecodeError:
        schema = None
    parameters: JsonObject = schema if isinstance(schema, dict) else {"type": "object", "properties": {}}
    description = f"[MCP {server}] {tool.description}".strip()
    return {
        "type": "function",
        "function": {"name": mcp_name(server, tool.name), "description": description, "parameters": parameters},
    }


def tokens_of(value: object) -> int:
    """A rough token count of a catalogue part as sent (4 bytes a token, as the context estimate counts)."""
    return len(msgspec.json.encode(value)) // 4


def mcp_search_tool(servers: list[McpServerInfo]) -> JsonObject:
    """The small tool the model gets instead of every MCP schema: its text names each server and its tool count."""
    listed = ", ".join(
        f"{s.name} ({len(s.tools)} tools)" if s.state == "ready" else f"{s.name} (not started: a search starts it)"
        for s in servers
    )
    return _tool(
        MCP_SEARCH,
        f"Find tools of the MCP servers ({listed}) by words in their names and descriptions. Returns up to "
        f"{MCP_SEARCH_MAX_TOOLS} matching tools with their input schemas; then call one by its name, "
        "mcp__<server>__<tool>, with arguments that follow its schema.",
        {"query": _string("Words to look for, e.g. 'git log' or 'time zone'.")},
        ["query"],
    )


def mcp_catalogue(servers: list[McpServerInfo], window: int | None) -> tuple[list[JsonObject], bool]:
    """The MCP part of the catalogue: every ready server's tools unless their schemas would take more than
    MCP_SCHEMA_WINDOW_SHARE of the window, and ``mcp_search`` then, or while a server is not ready (starting, lazy,
    failed: a search starts it); True: the search is in."""
    if not servers:
        return [], False
    tools = [mcp_tool_object(s.name, t) for s in servers if s.state == "ready" for t in s.tools]
    over = sum(tokens_of(t) for t in tools) > (window or MCP_SCHEMA_WINDOW_ASSUMED) * MCP_SCHEMA_WINDOW_SHARE
    if over or any(s.state != "ready" for s in servers):
        return [*([] if over else tools), mcp_search_tool(servers)], True
    return tools, False


def describe_change(name: str, path: str, summary: str, approved_by: str, rule: str) -> str:
    """``✎ edited a.py +3 −1 · 120 bytes · by rule edit_file``: the one line a landed mutation leaves (TUI and
    headless alike)."""
    verb = {WRITE_FILE: "wrote", EDIT_FILE: "edited", EXECUTE_COMMAND: "ran"}.get(name, name)
    what = summary if name == EXECUTE_COMMAND else f"{path} {summary}".strip()
    by = {"keypress": "approved by keypress", "rule": f"by rule {rule}", "flag": f"by {rule}"}.get(approved_by, "")
    return f"✎ {verb} {what} · {by}"
