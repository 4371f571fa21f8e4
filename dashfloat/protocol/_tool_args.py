"""The protocol's tool args: see dashfloat/protocol/__init__.py for the whole contract."""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

# ---------------------------------------------------------------- tool arguments (docs/tools.md)
#
# The model's JSON arguments become one of these where the call is assembled (``dashfloat.tool_args``), after
# the checks whose error texts the model reads; everything after that takes the Struct. The constraints below
# repeat those checks, so a decoder on any pipe refuses what the parser never builds.

READ_DEFAULT_OFFSET: Final = 1
READ_DEFAULT_LIMIT: Final = 2000
READ_MAX_LIMIT: Final = 10_000
EXEC_TIMEOUT_MAX_S: Final = 600.0
"""The longest timeout a call may ask for (a real project's `make test`)."""
JOB_READY_TIMEOUT_MAX_S: Final = 600.0
"""The longest readiness wait a background job's start may ask for (issue 36)."""


class ToolArgsBase(msgspec.Struct, frozen=True, tag_field="tool", omit_defaults=True, forbid_unknown_fields=True):
    """Base of every tool's arguments (the tag is the tool's name)."""


class ReadFileArgs(ToolArgsBase, frozen=True, tag="read_file"):
    """read_file: the 1-based line window ``offset`` .. ``offset + limit - 1`` of ``path``."""

    path: str
    offset: Annotated[int, msgspec.Meta(ge=1)] = READ_DEFAULT_OFFSET
    limit: Annotated[int, msgspec.Meta(ge=1, le=READ_MAX_LIMIT)] = READ_DEFAULT_LIMIT


class WriteFileArgs(ToolArgsBase, frozen=True, tag="write_file"):
    """write_file: ``content`` becomes the whole of ``path``."""

    path: str
    content: str


class EditFileArgs(ToolArgsBase, frozen=True, tag="edit_file"):
    """edit_file: the one occurrence of ``search_block`` in ``path`` becomes ``replace_block`` (never equal)."""

    path: str
    search_block: Annotated[str, msgspec.Meta(min_length=1)]
    replace_block: str


class ExecuteCommandArgs(ToolArgsBase, frozen=True, tag="execute_command"):
    """execute_command: ``command`` run by ``sh -c`` in ``cwd``; ``timeout`` None: the session's default."""

    command: str
    cwd: str = "."
    timeout: Annotated[float, msgspec.Meta(ge=1, le=EXEC_TIMEOUT_MAX_S)] | None = None
    # background jobs (issue 36, ADR 0080): the command is started as a job and the call returns at once
    background: bool = False
    ready_pattern: str | None = None
    """A job: wait until a line of its output matches this regular expression (or ``ready_timeout`` passes)."""
    ready_port: Annotated[int, msgspec.Meta(ge=1, le=65535)] | None = None
    """A job: wait until this TCP port accepts on the session's loopback (or ``ready_timeout`` passes)."""
    ready_timeout: Annotated[float, msgspec.Meta(gt=0, le=JOB_READY_TIMEOUT_MAX_S)] | None = None


class ListDirectoryArgs(ToolArgsBase, frozen=True, tag="list_directory"):
    """list_directory: the entries of ``path``."""

    path: str = "."


# ---- MCP client (ADR 0086): a call of a tool an MCP server offers, and the search over those tools.

MCP_TOOL_PREFIX: Final = "mcp__"
"""Every MCP tool reaches the model as ``mcp__<server>__<tool>`` (rules name it so too)."""
MCP_SEARCH: Final = "mcp_search"
"""The tool the model gets instead of the MCP tools' schemas when they would cost too much of the window."""


class McpCallArgs(ToolArgsBase, frozen=True, tag="mcp"):
    """A call of MCP tool ``name`` (``mcp__<server>__<tool>``) with ``arguments``, a JSON object's text."""

    name: str
    arguments: str = "{}"

    @property
    def server(self) -> str:
        """The server's name, as configured."""
        return self.name.removeprefix(MCP_TOOL_PREFIX).partition("__")[0]

    @property
    def tool(self) -> str:
        """The tool's name, as the server lists it."""
        return self.name.removeprefix(MCP_TOOL_PREFIX).partition("__")[2]


class McpSearchArgs(ToolArgsBase, frozen=True, tag="mcp_search"):
    """mcp_search: the MCP tools whose names or descriptions hold the words of ``query``, with their schemas."""

    query: str


class JobOutputArgs(ToolArgsBase, frozen=True, tag="job_output"):
    """job_output (issue 36): job ``id``'s state and output since byte ``cursor`` (None: all that is kept)."""

    id: Annotated[int, msgspec.Meta(ge=1)]
    cursor: Annotated[int, msgspec.Meta(ge=0)] | None = None


class JobKillArgs(ToolArgsBase, frozen=True, tag="job_kill"):
    """job_kill (issue 36): stop job ``id``'s whole process tree."""

    id: Annotated[int, msgspec.Meta(ge=1)]


ToolArgs = (
    ReadFileArgs
    | WriteFileArgs
    | EditFileArgs
    | ExecuteCommandArgs
    | ListDirectoryArgs
    | McpCallArgs
    | McpSearchArgs
    | JobOutputArgs  # issue 36
    | JobKillArgs  # issue 36
)


class MalformedCall(ToolArgsBase, frozen=True, tag="malformed"):
    """A call that did not parse (its error went to the model): the name and arguments as the model wrote them."""

    name: str
    arguments: str
    cut: bool = False
    """The stream ended while the call was arriving: ``arguments`` is what had come."""


class UndoChanges(ToolArgsBase, frozen=True, tag="undo"):
    """/undo: revert the changes of ``turns``."""

    turns: list[int]


class RewindConversation(ToolArgsBase, frozen=True, tag="rewind"):
    """/rewind: go back to just before prompt ``prompt``."""

    prompt: int


class RestoreConflict(ToolArgsBase, frozen=True, tag="restore_conflict"):
    """An undo or rewind would overwrite ``path``, which changed since DashFloat wrote it."""

    path: str


ConfirmSubject = ToolArgs | UndoChanges | RewindConversation | RestoreConflict
"""What a confirmation asks about: a tool call, or a restore the user started."""


class AssembledCall(msgspec.Struct, frozen=True):
    """A tool call assembled from stream deltas: ``args`` when it parsed, else ``error`` says why it cannot run."""

    id: str
    name: str
    arguments: str
    """The arguments as sent back to the provider (canonical JSON; ``{}`` when they were no JSON object)."""
    args: ToolArgs | None = None
    error: str | None = None
    written: str = ""
    """The arguments as they came when they were no JSON object (the start of them), for the call's row."""
    cut: bool = False
    """The stream ended while these arguments were arriving: the call is incomplete, and never runs."""


class Usage(msgspec.Struct, frozen=True):
    """Token usage reported by the provider for one episode."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int | None = None
    """``prompt_tokens_details.cached_tokens``, when reported."""
    reasoning_tokens: int | None = None
    """``completion_tokens_details.reasoning_tokens``, when reported."""


class Checkpoint(msgspec.Struct, frozen=True, omit_defaults=True):
    """What one applied write_file / edit_file changed and how to take it back (docs/sessions.md)."""

    path: str
    """The file's real path relative to the working directory's real path."""
    existed: bool
    """Whether a file was there before the mutation (False: undo deletes it)."""
    after: str
    """sha256 of the bytes the mutation left: anything else there at undo time is a conflict."""
    before: str | None = None
    """sha256 of the pre-image, the name of its object in the store; None when there was no file or it is lost."""
    mode: int | None = None
    """Permission bits of the file before the mutation."""
    size: int = 0
    """Bytes of the pre-image."""
    created_dirs: list[str] = []
    """Parent directories the write created, deepest first (a restore removes them when empty)."""
    lost: str = ""
    """Why the pre-image was not kept (over the per-file cap, the store over its cap, an I/O failure)."""


class CommandChanges(msgspec.Struct, frozen=True, omit_defaults=True):
    """Workspace files an execute_command created, changed or deleted, told by size and mtime."""

    paths: list[str] = []
    """Relative paths, sorted, at most COMMAND_CHANGES_MAX_PATHS."""
    more: int = 0
    """Changed files beyond ``paths``."""
    unknown: str = ""
    """Why the changes could not be told (the workspace is over the scan bound); then ``paths`` is empty."""


ABSENT_DIGEST = "absent"
"""The digest of "no file here" (executor previews, checkpoints and restores share it)."""

RestoreStatus = Literal["restore", "delete", "unchanged", "conflict", "missing", "unrestorable", "error"]


class RestoreFile(msgspec.Struct, frozen=True, omit_defaults=True):
    """One file of a planned undo or rewind: the state to bring back and what DashFloat left there."""

    path: str
    existed: bool
    """The state to bring back: a file (True) or no file (False)."""
    expect: str
    """sha256 of what DashFloat's newest write left (``after`` of the newest checkpoint)."""
    before: str | None = None
    mode: int | None = None
    created_dirs: list[str] = []
    lost: str = ""
    """Set: the pre-image is not kept, the file cannot be restored (the reason)."""
    interleaved: bool = False
    """Something other than DashFloat changed the file between its writes in these turns."""


class RestorePreview(msgspec.Struct, frozen=True, omit_defaults=True):
    """What restoring one file would do, as the executor sees the file now."""

    path: str
    status: RestoreStatus
    lines: list[str] = []
    """The reverse change: a diff from the current bytes to the pre-image, or what is deleted."""
    digest: str = ""
    """sha256 of the current bytes (``absent``): applying checks the file is still that."""
    reason: str = ""


class RestoreOutcome(msgspec.Struct, frozen=True, omit_defaults=True):
    """What applying the restore of one file did."""

    path: str
    ok: bool
    error: str = ""


class PromptInfo(msgspec.Struct, frozen=True):
    """One user prompt of the session, for /rewind's list."""

    number: int
    text: str


class SessionInfo(msgspec.Struct, frozen=True):
    """One row of the session list."""

    id: str
    last_activity: str
    cwd: str
    messages: int
    title: str
