"""Every message that crosses a process boundary, and nothing else.

Channels (see docs/architecture.md):  UI <-> Agent,  Agent <-> LLM stream,  Agent <-> Executor.
Each direction is one tagged union (``"type"`` is the snake_case class name). Requests are verbs,
events are nouns or past tense. Long work is keyed by an id and always ends in one finishing message.
"""

from __future__ import annotations

import functools
import re
from typing import Annotated, Any, Final, Literal, assert_never

import msgspec

Phase = Literal["idle", "streaming", "compacting", "confirming", "running"]
Decision = Literal["approve", "reject", "reject_stop", "approve_always"]
ApprovalMode = Literal["ask", "edits", "all", "plan"]
ResultStatus = Literal["ok", "error", "rejected", "cancelled"]
Level = Literal["info", "warning", "error"]
ToolCallMode = Literal["native", "text", "auto"]
ReasoningField = Literal["reasoning_content", "reasoning", "think"]
"""Where a server put its reasoning: a delta field, or ``<think>`` at the start of the answer text (never echoed)."""
ReasoningEcho = Literal["auto", "always", "never"]
ReasoningEffort = Literal["low", "medium", "high", "none"]
"""How a provider's tool calls are read: native ``tool_calls`` only, text forms too, or text forms only while
the provider has sent no native call (docs/providers.md)."""
StreamFailureKind = Literal[
    "connection_refused",
    "dns",
    "tls",
    "connect_timeout",
    "idle_timeout",
    "bad_request",
    "auth",
    "not_found",
    "rate_limited",
    "server_error",
    "not_sse",
    "malformed_frame",
    "provider_error",
    "truncated",
    "frame_too_large",
    "episode_too_large",
    "too_many_calls",
    "redirected",
    "repeating",
    "cancelled",
    "internal",
    "crashed",
    "context_exceeded",
    "first_byte_timeout",
]
"""Every way a stream can fail (docs/providers.md "Failure kinds"); ``crashed``: the LLM process died."""
SandboxMode = Literal["workspace-write", "read-only", "off"]
NetworkMode = Literal["registries", "on", "off"]
"""The network of sandboxed commands that run without a keypress (issue 35, ADR 0082): the package registries through
the allowlisting proxy, all of it, or none."""
WindowSource = Literal["config", "server", "table", "assumed"]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Message(msgspec.Struct, frozen=True, tag_field="type", tag=_snake, omit_defaults=True):
    """Base of every wire message."""


# ---------------------------------------------------------------- shared values (not messages)


class ProviderConfig(msgspec.Struct, frozen=True, omit_defaults=True):
    """Where and how to reach one OpenAI-compatible endpoint (the key itself never travels)."""

    name: str
    base_url: str
    model: str
    api_key_env: str | None = None
    context_window: int | None = None
    context_window_from: str = ""
    """Where ``context_window`` was set, in words (/usage says it in its brackets): a config file's field, the demo
    model's own; empty: "configured"."""
    headers: dict[str, str] = {}
    max_tokens: int | None = None
    """The answer bound sent as ``max_tokens``; None: derived from the window; 0: never sent."""
    tool_calls: ToolCallMode = "auto"
    reasoning_echo: ReasoningEcho = "auto"
    """Kept reasoning sent back: ``auto`` on tool-call messages of the current turn, ``always`` on every assistant
    message that kept some, ``never`` (ADR 0077)."""
    reasoning_effort: ReasoningEffort | None = None
    """Sent as ``reasoning_effort`` when set (``none``: thinking off, as Ollama requires)."""
    # Sampling per provider (issue 39, ADR 0092): None / empty: the server's own default.
    temperature: float | None = None
    """Sent as ``temperature`` when set."""
    top_p: float | None = None
    """Sent as ``top_p`` when set."""
    extra_body: dict[str, Any] = {}
    """Server-specific request fields merged into every request (``top_k``, ``repeat_penalty``, ...); never one the
    request itself writes (config.py refuses those)."""


class SandboxPolicy(msgspec.Struct, frozen=True, omit_defaults=True):
    """How one execute_command call is confined (``RunTool.sandbox``); the session's mode is the ceiling.

    A call can ask for less than the session allows (``read-only`` in a ``workspace-write`` session, e.g. an
    allowlisted command run unasked), never more; in an ``off`` session nothing is confined.
    """

    mode: Literal["workspace-write", "read-only"] = "workspace-write"
    network: bool = False
    """True only for a call a person approved with a keypress, or when ``--network``/config enables it."""
    private_home: bool = False
    """Give the call an empty home (``SandboxState.home``): a command run unasked follows symlinks in the
    tree that its checked arguments cannot show, so what it reads stays out of the user's files."""
    writable: list[str] = []
    """Paths this one call may write besides the session's (issue 35: a person's keypress after the sandbox refused
    a write there); the executor still refuses one that can never be writable (``dashfloat.sandbox_access``)."""


class CommandLimits(msgspec.Struct, frozen=True, omit_defaults=True):
    """Config ``[limits]``: a command's bounds as the user set them (None: the executor's constant, ADR 0062)."""

    max_processes: int | None = None
    max_memory_mib: int | None = None
    max_process_memory_mib: int | None = None
    max_file_mib: int | None = None


class SandboxState(msgspec.Struct, frozen=True, omit_defaults=True):
    """The session's command sandbox as detected at start: what the status bar and confirmations say."""

    mode: SandboxMode = "off"
    network: bool = False
    """``--network``: commands that run without a keypress may use the network too."""
    unavailable: str = ""
    """Why this machine cannot sandbox (then ``mode`` is ``off`` and commands run unconfined)."""
    deny_read: list[str] = []
    """Absolute paths hidden from sandboxed commands (credential stores, config ``[sandbox] deny_read``)."""
    hide_env: list[str] = []
    """Environment variables no command ever gets (the providers' API key variables; ``dashfloat.command_env``)."""
    pass_env: list[str] = []
    """Secret-named variables commands get anyway (config ``[sandbox] pass_env``; never one of ``hide_env``)."""
    home: list[str] = []
    """The user's home directories, emptied for a call with ``SandboxPolicy.private_home``."""
    home_keep: list[str] = []
    """``PATH`` directories inside ``home``, kept readable in an emptied home (a ``~/.cargo/bin/rg``)."""
    limits: CommandLimits = msgspec.field(default_factory=CommandLimits)
    """Every command's bounds (config ``[limits]``), sandboxed or not: confinement the executor applies."""
    # The registries and the tool caches (issue 35, ADR 0082).
    network_mode: NetworkMode = "off"
    """``--network``: what commands that run without a keypress reach (``network`` is True when it is ``on``)."""
    allow_domains: list[str] = []
    """The hosts the proxy lets ``registries`` commands reach (the defaults and ``[sandbox] allow_domains``)."""
    deny_domains: list[str] = []
    """Hosts the proxy refuses whatever the allowlist says (``[sandbox] deny_domains``)."""
    writable: list[str] = []
    """Absolute paths every workspace-write command may write besides the workspace (presets and ``writable``)."""
    escalation: bool = False
    """A person is there to grant a refused command one re-run (the TUI; a headless run never asks, it reports)."""


class SandboxGrant(msgspec.Struct, frozen=True, omit_defaults=True):
    """What the sandbox refused one command, and what re-running it with a person's keypress adds (issue 35)."""

    refused: str
    """One line: what was refused (a write under ~/.npm, a host the proxy refused, the network)."""
    writable: list[str] = []
    """Directories the re-run may write (each the refused path's first directory under the home)."""
    network: bool = False
    """The re-run gets the whole network (a host off the allowlist, a program that ignores the proxy)."""


# hooks (ADR 0088): what the agent sends the executor to run around one tool call


class HookCommand(msgspec.Struct, frozen=True, omit_defaults=True):
    """One configured hook to run (``dashfloat.hooks``): its command line, its timeout, where it was configured."""

    command: str
    timeout_s: float
    source: str = ""
    """The file that configured it (named in what the user is told of its failures)."""


class ToolHooks(msgspec.Struct, frozen=True, omit_defaults=True):
    """The hooks whose matcher names one call's tool: run before it (``pre``) and after it (``post``)."""

    pre: list[HookCommand] = []
    post: list[HookCommand] = []
    session_id: str = ""
    tool_name: str = ""
    """The tool's name as the model called it (what a matcher matched)."""


class FunctionCall(msgspec.Struct, frozen=True):
    """The function part of an assistant tool call: arguments as a JSON string (canonical form)."""

    name: str
    arguments: str


class ToolCallRecord(msgspec.Struct, frozen=True):
    """One tool call in an assistant message, exactly as sent back to the provider."""

    id: str
    function: FunctionCall
    type: str = "function"


class ChatMessage(msgspec.Struct, frozen=True, omit_defaults=True):
    """One conversation message in the provider's chat/completions shape."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCallRecord] | None = None
    tool_call_id: str | None = None
    reasoning: str | None = None
    """The assistant's reasoning, kept (bounded) and echoed as the server requires (ADR 0077); never answer text."""
    reasoning_field: ReasoningField | None = None
    """The field ``reasoning`` arrived in, and goes back in."""
    reasoning_details: str | None = None
    """OpenRouter's ``reasoning_details`` as JSON text, echoed with the reasoning."""


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


# ---------------------------------------------------------------- tool results (docs/tools.md)
#
# One Struct per outcome, produced by the executor (or the agent, for calls it never ran), carried in
# ToolFinished, kept in the conversation and the session log as is. ``result_json`` is the only place
# that turns one into the JSON object the model reads.

EntryType = Literal["file", "dir", "symlink", "other"]


class ToolResultBase(msgspec.Struct, frozen=True, tag_field="type", omit_defaults=True):
    """Base of every tool result."""


class ReadFileResult(ToolResultBase, frozen=True, tag="read_file"):
    """read_file: a window of a text file; ``truncated`` when more exists past it (see ``content``'s marker)."""

    path: str
    content: str
    offset: int
    lines: int
    total_lines: int | None
    total_bytes: int
    truncated: bool


class WriteFileResult(ToolResultBase, frozen=True, tag="write_file"):
    """write_file: ``bytes`` written to ``path``; ``created`` when nothing was there."""

    path: str
    bytes: int
    created: bool


class EditFileResult(ToolResultBase, frozen=True, tag="edit_file"):
    """edit_file: the match started at ``line``; ``bytes`` is the file's new size."""

    path: str
    line: int
    bytes: int


class DirectoryEntry(msgspec.Struct, frozen=True, omit_defaults=True):
    """One list_directory entry; ``escaped`` when the name was not UTF-8 (shown with \\xNN escapes)."""

    name: str
    type: EntryType
    size: int
    escaped: bool = False


class ListDirectoryResult(ToolResultBase, frozen=True, tag="list_directory"):
    """list_directory: the sorted head of the entries; ``total`` counts them all."""

    path: str
    entries: list[DirectoryEntry]
    total: int
    truncated: bool


class CapturedOutput(msgspec.Struct, frozen=True):
    """What a command printed (stdout and stderr combined): the kept text and the total it produced."""

    output: str
    truncated: bool
    total_bytes: int
    cut_bytes: int = 0
    """Bytes dropped between the kept head and tail (ADR 0022); 0 when nothing was cut."""
    cut_lines: int = 0
    """Newlines in the dropped middle."""


class CommandExited(ToolResultBase, frozen=True, tag="execute_command"):
    """execute_command ran to its end; ``signal`` names the signal that killed the shell, if one did."""

    exit_code: int
    output: CapturedOutput
    signal: str | None = None


class CommandTimedOut(ToolResultBase, frozen=True, tag="timed_out"):
    """execute_command was killed at ``timeout_s``; ``exit_code`` when the shell had exited already."""

    timeout_s: float
    output: CapturedOutput
    exit_code: int | None = None

    @property
    def error(self) -> str:
        """The model-facing error message."""
        return f"timed out after {self.timeout_s:g}s"


class ToolFailed(ToolResultBase, frozen=True, tag="failed"):
    """The call failed or was never run; ``error`` says why, for the model."""

    error: str


JobState = Literal["running", "exited", "killed"]
"""A background job's state: running, exited by itself (``exit_code``), or stopped (job_kill, /jobs, the end)."""


class JobReport(ToolResultBase, frozen=True, tag="job"):
    """A background job (issue 36, ADR 0080): its state and its output from the call's cursor up to ``cursor``.

    ``ready``: the start's readiness wait succeeded (False: it timed out, the job still runs); None: none was asked."""

    job_id: int
    state: JobState
    output: CapturedOutput
    cursor: int
    """Bytes the job has printed so far: pass it to job_output to read only what comes after."""
    exit_code: int | None = None
    ready: bool | None = None
    note: str = ""


class ToolRejected(ToolResultBase, frozen=True, tag="rejected"):
    """The user declined the confirmation."""


class ToolCancelled(ToolResultBase, frozen=True, tag="cancelled"):
    """Cancelled by the user (Esc) or never answered; a running command's output so far, if it ran."""

    output: CapturedOutput | None = None


class McpToolResult(ToolResultBase, frozen=True, tag="mcp"):
    """An MCP tool's (or mcp_search's) result as text, images and resources named with their size, capped head+tail."""

    text: str
    is_error: bool = False
    """The server said the call failed (``isError``)."""
    truncated: bool = False
    total_bytes: int = 0
    """The whole text's size before the cap."""


ToolResult = (
    ReadFileResult
    | WriteFileResult
    | EditFileResult
    | ListDirectoryResult
    | CommandExited
    | CommandTimedOut
    | ToolFailed
    | ToolRejected
    | ToolCancelled
    | McpToolResult
    | JobReport  # issue 36
)


class ToolReply(msgspec.Struct, frozen=True, omit_defaults=True):
    """A conversation entry: the result of tool call ``call_id`` (sent as a ``role: "tool"`` message)."""

    call_id: str
    name: str
    result: ToolResult
    context: str = ""
    """What the call's hooks added for the model (ADR 0088); the model reads it as ``hook_context``."""


ConversationEntry = ChatMessage | ToolReply


def _command_output(output: CapturedOutput) -> dict[str, object]:
    shown: dict[str, object] = {
        "output": output.output,
        "truncated": output.truncated,
        "total_bytes": output.total_bytes,
    }
    if output.cut_bytes:  # where the output was cut: the marker line says it too
        shown |= {"cut_bytes": output.cut_bytes, "cut_lines": output.cut_lines}
    return shown


def result_object(result: ToolResult) -> dict[str, object]:
    """The seed's JSON object for ``result`` (docs/tools.md), key order included."""
    match result:
        case ReadFileResult() | WriteFileResult() | EditFileResult() | ListDirectoryResult():
            fields = msgspec.to_builtins(result)
            del fields["type"]  # the union's tag is ours, not the model's
            return {"ok": True, **fields}
        case CommandExited(exit_code=code, output=output, signal=signal):
            exited: dict[str, object] = {"ok": code == 0, "exit_code": code, **_command_output(output)}
            if signal is not None:
                exited["signal"] = signal
            return exited
        case CommandTimedOut(output=output, exit_code=code):
            timed_out = {"ok": False, "error": result.error, **_command_output(output)}
            if code is not None:
                timed_out["exit_code"] = code
            return timed_out
        case ToolFailed(error=error):
            return {"ok": False, "error": error}
        case ToolRejected():
            return {"ok": False, "rejected": True}
        case ToolCancelled(output=output):
            return {"ok": False, "cancelled": True, **(_command_output(output) if output is not None else {})}
        case JobReport(job_id=job_id, state=state, exit_code=code, ready=ready, note=note):
            job: dict[str, object] = {"ok": code in (None, 0) and ready is not False, "job_id": job_id, "state": state}
            if code is not None:
                job["exit_code"] = code
            if ready is not None:
                job["ready"] = ready
            job |= {**_command_output(result.output), "cursor": result.cursor}
            return job | ({"note": note} if note else {})
        case McpToolResult(text=text, is_error=is_error, truncated=truncated, total_bytes=total):
            return {"ok": not is_error, "content": text, "truncated": truncated, "total_bytes": total}
        case _:
            assert_never(result)


def result_json(result: ToolResult, context: str = "") -> str:
    """The ``content`` of the ``role: "tool"`` message for ``result``: exactly what the model reads (``context``:
    what the call's hooks added, ADR 0088)."""
    shown = result_object(result)
    if context:
        shown["hook_context"] = context
    return _RESULT_ENCODER.encode(shown).decode()


# ---------------------------------------------------------------- UI -> Agent


class SubmitPrompt(Message, frozen=True):
    """The user submitted a prompt; starts a turn (replies: the display events below)."""

    text: str


class DecideConfirmation(Message, frozen=True):
    """The user's keypress on the confirmation ``ref``."""

    ref: int
    decision: Decision


class Cancel(Message, frozen=True):
    """Stop whatever is running (stream, confirmation or command); replies PhaseChanged(idle)."""


class SetModel(Message, frozen=True):
    """/model NAME: use this model from the next request on (refused when the server lists others only)."""

    model: str
    """Empty: keep the model, change only ``effort`` (``/model @high``)."""
    effort: ReasoningEffort | Literal["default"] | None = None
    """``/model NAME@EFFORT``: the session's ``reasoning_effort`` from the next request on; ``default``: back to the
    launch's (config.toml or ``--reasoning-effort``); None: unchanged (ADR 0077)."""


class ShowModels(Message, frozen=True):
    """/model: list the server's models (``GET /models``); replies a SystemEntry and AgentReady with ``models``."""


class SetApproval(Message, frozen=True):
    """/approve MODE: change the approval policy for this session."""

    mode: ApprovalMode


class ListPermissions(Message, frozen=True):
    """/permissions: replies SystemEntry listing the numbered session and saved rules."""


class RemovePermission(Message, frozen=True):
    """/permissions remove N: drop rule N (a saved one from its file too); replies SystemEntry and AgentReady."""

    number: int


class SavePermission(Message, frozen=True):
    """/permissions save N: keep session rule N in the user's rule file; replies SystemEntry and AgentReady."""

    number: int


class ClearSession(Message, frozen=True):
    """/clear: start a new, empty session (replies SessionStarted)."""


class ListSessions(Message, frozen=True):
    """/sessions: replies SessionsListed."""


class RunUserCommand(Message, frozen=True):
    """!command: run the user's own shell command (no confirmation); its output joins the next prompt."""

    command: str


class ResumeSession(Message, frozen=True):
    """/resume ID: load a saved session (replies SessionStarted and the replayed transcript)."""

    session_id: str


class ShowMcp(Message, frozen=True):
    """/mcp: replies SystemEntry listing the MCP servers, their state, their tools and the tokens their schemas cost."""

    approve: bool = False
    """``/mcp approve``: first approve the project's proposed servers (.dashfloat/mcp.toml) and start them."""


class ShowUsage(Message, frozen=True):
    """/usage: replies SystemEntry with the window, where it came from, the fill, tokens by turn."""


# ---- the daily hour (issue 37): /status and /last


class ShowStatus(Message, frozen=True):
    """/status: replies SystemEntry with the provider, model, window, usage, approval, rules, sandbox and session."""


class ShowLastResult(Message, frozen=True):
    """/last or Ctrl-O: replies LastResultShown with the whole kept output of the newest tool result."""


class CompactConversation(Message, frozen=True):
    """/compact [focus]: shrink and summarise the conversation now (replies PhaseChanged, SystemEntry)."""

    focus: str = ""


class UndoTurn(Message, frozen=True):
    """/undo: revert the newest change set not yet reverted (preview, then ConfirmRequested, then RestoreEnded)."""


class ListPrompts(Message, frozen=True):
    """/rewind without a number: replies PromptsListed."""


class RewindTo(Message, frozen=True):
    """/rewind N: restore files and truncate the conversation to just before prompt ``prompt``.

    ``prompt`` is the 1-based number from PromptsListed; a negative number counts back from the newest
    prompt (-1: the last one). ``session_id`` is the session the number was read in ("" for the current one).
    """

    prompt: int
    session_id: str = ""


class FindPaths(Message, frozen=True):
    """@ completion: workspace paths matching ``query`` (UI -> agent -> executor); replies PathsFound, same ``ref``."""

    ref: int
    query: str
    refresh: bool = False
    """A new mention began: the executor rebuilds its file index if the index is not fresh."""


class Shutdown(Message, frozen=True):
    """Stop cleanly: answer open work, stop children, exit (sent by the supervisor on any channel)."""


# ---- background jobs (issue 36, ADR 0080): started by execute_command's ``background``, in every direction


class JobStarted(Message, frozen=True):
    """Executor -> agent -> UI: job ``job_id`` (call ``call_id``) runs in process group ``pgid``."""

    job_id: int
    call_id: str
    command: str
    pgid: int


class JobOutput(Message, frozen=True):
    """Executor -> agent -> UI: job ``job_id``'s newest output (≤ 4 KiB, ≤ 10/s per job); not the model's result."""

    job_id: int
    text: str
    skipped_bytes: int = 0


class JobExited(Message, frozen=True):
    """Executor -> agent -> UI: job ``job_id`` ended: exited by itself (``exit_code``), or was stopped (killed)."""

    job_id: int
    state: JobState
    exit_code: int | None = None
    last_line: str = ""
    command: str = ""
    """The job's command line, for the row that says it ended."""


class StopJob(Message, frozen=True):
    """UI -> agent: /jobs stop: kill job ``job_id`` (its JobExited follows)."""

    job_id: int


class ExposeJob(Message, frozen=True):
    """UI -> agent -> executor: /jobs expose: job ``job_id``'s ports on this machine's loopback; replies JobExposed."""

    job_id: int


class JobExposed(Message, frozen=True):
    """Executor -> agent: what ExposeJob ``job_id`` did, in words for the transcript (``ok`` False: why not)."""

    job_id: int
    text: str
    ok: bool = True


class KillJobs(Message, frozen=True):
    """Agent -> executor: kill these jobs (empty: every one, at /clear); each running one replies JobExited."""

    job_ids: list[int] = []


class ShowHooks(Message, frozen=True):
    """/hooks: replies SystemEntry listing the hooks in force and a project's untrusted ones (ADR 0088)."""

    trust: bool = False
    """``/hooks trust``: first trust the project's .dashfloat/hooks.toml as it is now (remembered for its content)."""


UiToAgent = (
    SubmitPrompt
    | DecideConfirmation
    | Cancel
    | SetModel
    | ShowModels
    | SetApproval
    | ListPermissions
    | RemovePermission
    | SavePermission
    | ClearSession
    | ListSessions
    | ResumeSession
    | ShowUsage
    | UndoTurn
    | ListPrompts
    | RewindTo
    | CompactConversation
    | Shutdown
    | RunUserCommand
    | FindPaths
    | ShowMcp  # MCP client (ADR 0086)
    | ShowStatus  # issue 37
    | ShowLastResult  # issue 37
    | StopJob  # issue 36
    | ShowHooks  # hooks (ADR 0088)
    | ExposeJob  # issue 36
)

# ---------------------------------------------------------------- Agent -> UI (display contract)


class PromptFile(msgspec.Struct, frozen=True):
    """A prompt file (.dashfloat/prompts/NAME.md): typed as /NAME [args]."""

    name: str
    text: str
    source: str


class AgentReady(Message, frozen=True):
    """The agent is up (first start or restart): what the status bar shows, input history."""

    model: str
    provider: str
    cwd: str
    approval: ApprovalMode
    context_window: int | None = None
    window_source: WindowSource | None = None
    history: list[str] = []
    sandbox: SandboxState = msgspec.field(default_factory=SandboxState)
    rules: int = 0
    """Permission rules in force (session grants and saved rules): the status bar says so."""
    prompt_files: list[PromptFile] = []
    """Prompt files of the project and the user (the UI reads no files): /NAME expands them."""
    models: list[str] = []
    """The models the server listed, once asked (/model completes them)."""


class SessionStarted(Message, frozen=True):
    """A session is now current (new, resumed or reloaded)."""

    session_id: str
    resumed: bool = False


class SessionCleared(Message, frozen=True):
    """/clear took effect: no session is current until the next message is saved (a restart starts empty)."""


class UserPromptShown(Message, frozen=True):
    """A user prompt of a replayed transcript (live prompts are drawn by the UI itself)."""

    text: str


class TokenReceived(Message, frozen=True):
    """Assistant prose text to append to the current assistant entry."""

    text: str


class ReasoningReceived(Message, frozen=True):
    """Reasoning text, shown dim and apart from the answer."""

    text: str


class PhaseChanged(Message, frozen=True):
    """The agent's phase changed; ``idle`` also closes any open assistant entry."""

    phase: Phase


class ToolCallShown(Message, frozen=True):
    """A tool row: the model's call ``id`` with its ``args`` (a malformed call as the model wrote it)."""

    id: str
    args: ToolArgs | MalformedCall


class ToolResultShown(Message, frozen=True):
    """The outcome row under tool call ``id``; ``output`` is at most 30 lines."""

    id: str
    name: str
    status: ResultStatus
    output: str


class ToolOutputShown(Message, frozen=True):
    """Live output of running tool call ``id``, for the live region (``skipped_bytes`` came before it unseen)."""

    id: str
    text: str
    skipped_bytes: int = 0


class ConfirmRequested(Message, frozen=True):
    """Ask the user about a mutation; replies DecideConfirmation with the same ``ref``."""

    ref: int
    id: str
    subject: ConfirmSubject
    lines: list[str]
    summary: str = ""
    """``+N −M`` of an edit, the size of a write, or ``in CWD`` for a command: always on screen."""
    full: str = ""
    """The whole preview (diff, written content or command), bounded by the executor's cap."""
    scope: str = ""
    """The rule "always allow" would add (``execute_command(npm test)``); empty: it cannot be scoped."""
    no_scope: str = ""
    """Why no "always" is offered when ``scope`` is empty (shown on the key line)."""
    always_asks: str = ""
    """Why no mode or rule may let this call run unasked (a write inside ``.git``): it is asked every time."""


class ChangeRecorded(Message, frozen=True):
    """A mutation landed (after its ToolResultShown): what changed and who let it run.

    ``diff`` is the bounded preview (50-line window) of a write or edit; for a command ``summary`` is the command.
    """

    id: str
    name: str
    path: str
    summary: str
    approved_by: Literal["keypress", "rule", "flag"]
    rule: str = ""
    """The allow rule that let it run (approved_by "rule"), or the mode (approved_by "flag")."""
    diff: list[str] = []
    before_sha256: str | None = None
    """A write or edit: sha256 of the file before it (None: there was none, or its pre-image was not kept)."""
    after_sha256: str | None = None
    """A write or edit: sha256 of the bytes it left."""


class UsageShown(Message, frozen=True):
    """Usage of the final episode of a turn (sent before the phase goes idle), or of one request as its answer ends."""

    usage: Usage
    request: bool = False
    """True: one model request's usage, sent as its answer arrives (a run's total is their sum, a budget is checked
    against it mid-turn); False: the turn's final episode again, at its end."""


class ContextChanged(Message, frozen=True):
    """The fill the status bar shows changed: a compaction, or a request sent (with the prompt it carries)."""

    tokens: int
    waiting: str = ""
    """While a request waits for its first token: what the server is doing, in words (``reading prompt 3,200/5,500
    tokens``); empty: nothing known (issue 39, ADR 0092)."""


class SystemEntry(Message, frozen=True):
    """A dim system line in the transcript: failures, notices, what to do next."""

    text: str
    level: Level = "info"


class TurnEnded(Message, frozen=True):
    """The turn is over (sent just before PhaseChanged("idle")); ``outcome`` says how it ended."""

    outcome: Literal["completed", "failed", "cancelled", "stopped", "limit"]


class SessionsListed(Message, frozen=True):
    """Reply to ListSessions."""

    sessions: list[SessionInfo]


class PromptsListed(Message, frozen=True):
    """Reply to ListPrompts: the prompts of session ``session_id``, oldest first."""

    session_id: str
    prompts: list[PromptInfo]


class PromptRestored(Message, frozen=True):
    """A rewind removed this prompt from the conversation: put its text back into the input."""

    text: str


class PathsFound(Message, frozen=True):
    """Reply to FindPaths ``ref`` (executor -> agent -> UI): the best paths, best first; directories end in ``/``."""

    ref: int
    query: str
    paths: list[str]
    notice: str = ""
    """Why the answer may be incomplete (the index stopped at its bound, the executor restarted)."""


class RestoreEnded(Message, frozen=True):
    """An undo or rewind is over: ``restored`` files, ``skipped`` ones (listed), or nothing applied."""

    outcome: Literal["restored", "skipped", "declined", "nothing", "refused"]
    restored: int = 0
    skipped: list[str] = []


class LastResultShown(Message, frozen=True):
    """Reply to ShowLastResult: the newest tool result's whole kept output (``name`` empty: there is none yet)."""

    name: str
    status: ResultStatus
    output: str


AgentToUi = (
    AgentReady
    | SessionStarted
    | SessionCleared
    | UserPromptShown
    | TokenReceived
    | ReasoningReceived
    | PhaseChanged
    | ToolCallShown
    | ToolOutputShown
    | ToolResultShown
    | ConfirmRequested
    | ChangeRecorded
    | UsageShown
    | ContextChanged
    | SystemEntry
    | TurnEnded
    | SessionsListed
    | PromptsListed
    | PromptRestored
    | RestoreEnded
    | PathsFound
    | LastResultShown  # issue 37
    | JobStarted  # issue 36
    | JobOutput  # issue 36
    | JobExited  # issue 36
)

# ---------------------------------------------------------------- Agent -> LLM stream


class StartStream(Message, frozen=True):
    """Stream one completion for ``messages`` (replies deltas, then StreamDone or StreamFailed)."""

    request_id: int
    provider: ProviderConfig
    messages: list[ChatMessage]
    idle_timeout_s: float
    """Longest gap between two events once the first one arrived (keep-alive comments are no progress)."""
    idle_timeout_from: str = ""
    """Where the idle timeout was set (named in the timeout's message); empty: the default."""
    exec_timeout_s: float | None = None
    """execute_command's default timeout in force, named in the catalogue's text (None: the catalogue's)."""
    first_byte_timeout_s: float = 600.0
    """Longest wait for the first event (a local server reads the whole prompt before answering)."""
    extra_tools: str = ""
    """MCP tools (ADR 0086): a JSON array of tool objects appended to the catalogue ("": none)."""


class DiscoverWindow(Message, frozen=True):
    """Ask the server how large the model's context window is; replies WindowFound."""

    request_id: int
    provider: ProviderConfig


class CancelStream(Message, frozen=True):
    """Stop request ``request_id`` now; replies StreamFailed(kind="cancelled") with partial content."""

    request_id: int


AgentToLlm = StartStream | DiscoverWindow | CancelStream | Shutdown

# ---------------------------------------------------------------- LLM stream -> Agent


class ContentDelta(Message, frozen=True):
    """Answer text streamed for ``request_id``."""

    request_id: int
    text: str


class ReasoningDelta(Message, frozen=True):
    """Reasoning text streamed for ``request_id``."""

    request_id: int
    text: str


class StreamStatus(Message, frozen=True):
    """A notice about the stream (a retry, a dropped option, a server that drops the tools): a system entry."""

    request_id: int
    text: str
    level: Level = "info"


class PromptProgress(Message, frozen=True):
    """Before the first token: how far the server has read the prompt, or (``busy``) that a cancelled one is first."""

    request_id: int
    processed: int = 0
    """Prompt tokens read so far, the cached ones included."""
    total: int = 0
    """Prompt tokens in all (0: not reported)."""
    cached: int = 0
    """Prompt tokens the server had cached from the previous request."""
    busy: bool = False


class StreamDone(Message, frozen=True):
    """The stream finished: the whole content, the assembled calls, why it stopped, usage."""

    request_id: int
    content: str
    tool_calls: list[AssembledCall]
    finish_reason: str
    usage: Usage | None = None
    reasoning: str = ""
    """The reasoning kept with the answer (bounded, marked when cut); its field and OpenRouter's details."""
    reasoning_field: ReasoningField | None = None
    reasoning_details: str = ""


class StreamFailed(Message, frozen=True):
    """The stream failed (``kind`` names the class of failure); what arrived before is kept."""

    request_id: int
    kind: StreamFailureKind
    message: str
    content: str = ""
    tool_calls: list[AssembledCall] = []


class WindowFound(Message, frozen=True):
    """Reply to DiscoverWindow: the window, its source and field, a notice if the server said nonsense."""

    request_id: int
    window: int
    source: WindowSource
    detail: str = ""
    notice: str = ""
    models: list[str] = []
    """The model ids the server's ``GET /models`` listed (empty: it listed none, or was not asked)."""


LlmToAgent = ContentDelta | ReasoningDelta | StreamStatus | PromptProgress | StreamDone | StreamFailed | WindowFound

# ---------------------------------------------------------------- Agent -> Executor


class PreviewTool(Message, frozen=True):
    """Build the confirmation preview of a mutation; replies PreviewReady."""

    call_id: str
    args: ToolArgs


class RunTool(Message, frozen=True):
    """Execute a tool call; replies ToolFinished (after CommandStarted for execute_command).

    ``expect_digest`` is the PreviewReady digest: the file must still be what the user approved.
    ``sandbox`` confines an execute_command call (ignored by the file tools, which the root fd confines).
    """

    call_id: str
    args: ToolArgs
    expect_digest: str | None = None
    sandbox: SandboxPolicy = msgspec.field(default_factory=SandboxPolicy)
    checkpoint_store: str = ""
    """Where to keep a write/edit's pre-image, and to track a command's changes ("": do neither)."""
    hooks: ToolHooks | None = None
    """The PreToolUse and PostToolUse hooks to run around it (ADR 0088)."""


class CancelTool(Message, frozen=True):
    """Kill call ``call_id`` if it runs; its ToolFinished then carries ToolCancelled."""

    call_id: str


class PreviewRestore(Message, frozen=True):
    """Build the reverse preview of an undo or rewind; replies RestorePreviewed."""

    ref: int
    store: str
    files: list[RestoreFile]


class ApplyRestore(Message, frozen=True):
    """Restore ``files`` (each only if its bytes are still ``digests[i]``); replies RestoreApplied."""

    ref: int
    store: str
    files: list[RestoreFile]
    digests: list[str]


# ---- MCP client (ADR 0086): the servers the executor's MCP host runs, and what they offer.

McpServerState = Literal["stopped", "starting", "ready", "failed", "awaiting_approval"]
MCP_CALL_TIMEOUT_S: Final = 120.0
"""How long one MCP call may take before it is abandoned and its server stopped (``timeout_s`` changes it)."""


class McpServerConfig(msgspec.Struct, frozen=True, omit_defaults=True):
    """One ``[mcp.servers.NAME]``: a stdio server (``command``, ``args``, ``env``) or an HTTP one (``url``)."""

    name: str
    command: str = ""
    args: list[str] = []
    env: dict[str, str] = {}
    url: str = ""
    headers_env: dict[str, str] = {}
    """HTTP headers by name, each read from the environment variable named (the value never travels)."""
    start: Literal["lazy", "startup"] = "startup"
    sandbox: bool = True
    """Run a stdio server in the command sandbox (the session's; ``off`` sessions run it unconfined)."""
    network: bool = False
    """A sandboxed server may use the network (so may every one when the session has ``--network``)."""
    timeout_s: float = MCP_CALL_TIMEOUT_S
    """How long one call may take before it is abandoned (the server is then stopped, restarted at its next use)."""
    source: str = ""
    """Where it was configured (the user's config file, or a project file the person approved)."""


class McpTool(msgspec.Struct, frozen=True, omit_defaults=True):
    """One tool a server lists: its name, description and input schema (JSON text)."""

    name: str
    description: str = ""
    schema: str = "{}"


class McpServerInfo(msgspec.Struct, frozen=True, omit_defaults=True):
    """What /mcp shows of one server: its state, its tools, and why it failed."""

    name: str
    state: McpServerState = "stopped"
    tools: list[McpTool] = []
    error: str = ""
    pid: int | None = None
    """The server's process (a stdio server's bwrap, when sandboxed): tests and /mcp name it."""
    start: Literal["lazy", "startup"] = "startup"


class ConfigureMcp(Message, frozen=True):
    """Run these MCP servers (the executor starts its MCP host; replies McpServersListed as they change)."""

    servers: list[McpServerConfig]


class McpCall(Message, frozen=True):
    """Executor -> MCP host: call ``tool`` of ``server``; replies McpCallDone with the same ``call_id``."""

    call_id: str
    server: str
    tool: str
    arguments: str
    """A JSON object's text."""


class McpSearch(Message, frozen=True):
    """Executor -> MCP host: the tools matching ``query`` (lazy servers are started first); replies McpCallDone."""

    call_id: str
    query: str


class McpCancel(Message, frozen=True):
    """Executor -> MCP host: stop call ``call_id``; its McpCallDone then says it was cancelled."""

    call_id: str


class McpCallDone(Message, frozen=True):
    """MCP host -> executor: the result of ``call_id`` (``cancelled``: it was stopped before its answer)."""

    call_id: str
    result: McpToolResult
    cancelled: bool = False


class McpServersListed(Message, frozen=True):
    """Every configured MCP server's state and tools (sent whenever one changes)."""

    servers: list[McpServerInfo]


ExecutorToMcp = ConfigureMcp | McpCall | McpSearch | McpCancel | Shutdown
McpToExecutor = McpCallDone | McpServersListed


class RunHooks(Message, frozen=True):
    """Run an event's hooks that name no tool, ``payload`` on their stdin; replies HooksRan (ADR 0088)."""

    ref: int
    event: str
    hooks: list[HookCommand]
    payload: str


AgentToExecutor = (
    PreviewTool
    | RunTool
    | CancelTool
    | PreviewRestore
    | ApplyRestore
    | FindPaths
    | Shutdown
    | ConfigureMcp
    | KillJobs  # issue 36
    | RunHooks  # hooks (ADR 0088)
    | ExposeJob  # issue 36
)

# ---------------------------------------------------------------- Executor -> Agent


class PreviewReady(Message, frozen=True):
    """Preview lines for ``call_id``; ``error`` set when the call would fail (no confirmation)."""

    call_id: str
    lines: list[str]
    digest: str | None = None
    error: str | None = None
    summary: str = ""
    """``+N −M · B bytes`` of a write or edit, ``in CWD`` of a command."""
    full: str = ""
    """The whole preview (diff, written content or command), cut at the executor's PREVIEW_FULL_MAX_BYTES."""
    protected: str = ""
    """Why this write is always asked, whatever the mode or rules (it lands inside ``.git``); empty: it is not."""


class CommandStarted(Message, frozen=True):
    """execute_command ``call_id`` runs in process group ``pgid`` (killed by the agent if we die)."""

    call_id: str
    pgid: int


class CommandOutput(Message, frozen=True):
    """New output of running execute_command ``call_id`` (its newest ≤ 4 KiB, ≤ 10/s); not the model's result."""

    call_id: str
    text: str
    skipped_bytes: int = 0


class ToolFinished(Message, frozen=True):
    """The typed result of ``call_id`` (the model reads it as ``result_json(result)``)."""

    call_id: str
    result: ToolResult
    checkpoint: Checkpoint | None = None
    """A write/edit that landed: how to take it back."""
    changes: CommandChanges | None = None
    """An execute_command: the workspace files it changed."""
    notice: str = ""
    """Something the user should know about the checkpoint store (oldest pre-images dropped, ...)."""
    hook_context: str = ""
    """What its hooks added for the model (a PreToolUse's block reason is the ``ToolFailed`` error instead)."""
    hook_notices: list[str] = []
    """What the user should know of its hooks (one failed, timed out, printed too much; ADR 0088)."""
    refused: SandboxGrant | None = None
    """An execute_command the sandbox refused something (issue 35): what a person may grant it for one re-run."""


class RestorePreviewed(Message, frozen=True):
    """The reverse preview of PreviewRestore ``ref``, one entry per file in the same order."""

    ref: int
    files: list[RestorePreview]


class RestoreApplied(Message, frozen=True):
    """The outcome of ApplyRestore ``ref``, one entry per file in the same order."""

    ref: int
    outcomes: list[RestoreOutcome]


class FrameRejected(Message, frozen=True):
    """A frame on the agent->executor channel could not be decoded (``error`` says why); serving goes on."""

    error: str


class HooksRan(Message, frozen=True):
    """What RunHooks ``ref``'s hooks said: a block and its reason, context for the model, notices for the user."""

    ref: int
    blocked: bool = False
    reason: str = ""
    context: str = ""
    notices: list[str] = []


ExecutorToAgent = (
    PreviewReady
    | CommandStarted
    | CommandOutput
    | ToolFinished
    | RestorePreviewed
    | RestoreApplied
    | PathsFound
    | FrameRejected
    | McpServersListed
    | JobStarted  # issue 36
    | JobOutput  # issue 36
    | JobExited  # issue 36
    | HooksRan  # hooks (ADR 0088)
    | JobExposed  # issue 36
)

# ---------------------------------------------------------------- Main process <-> patch keeper (headless --patch)


class PatchedFile(msgspec.Struct, frozen=True):
    """One file a run changed, as its patch says: digests (None: absent at that end) and lines added and removed."""

    path: str
    """Relative to the working directory."""
    before_sha256: str | None
    after_sha256: str | None
    added: int = 0
    removed: int = 0
    binary: bool = False


class WritePatch(Message, frozen=True):
    """Write every change since the starting tree to ``path`` as one git patch; replies PatchWritten."""

    path: str


PatchToKeeper = WritePatch | Shutdown


class BaselineKept(Message, frozen=True):
    """The keeper holds the starting tree (``files`` files, ``size`` bytes), or ``error`` says why it cannot."""

    files: int = 0
    size: int = 0
    error: str = ""


class PatchWritten(Message, frozen=True):
    """WritePatch's reply: the files the patch changes and its size, or ``error`` (then nothing was written)."""

    files: list[PatchedFile] = []
    size: int = 0
    error: str = ""


KeeperToMain = BaselineKept | PatchWritten


# ---------------------------------------------------------------- wire forms

ALL_MESSAGE_TYPES: tuple[type[Message], ...] = tuple(
    cls for cls in Message.__subclasses__() if cls.__module__ == __name__
)


@functools.cache
def msgpack_decoder(union: Any) -> msgspec.msgpack.Decoder[Any]:
    """The pipe decoder for one direction's union: one per process (a child forked after it was built uses the one
    it inherits: building it writes msgspec's type information into every message class, ADR 0046)."""
    return msgspec.msgpack.Decoder(union)


def json_decoder(union: Any) -> msgspec.json.Decoder[Any]:
    """The JSON decoder (debugging, standalone executor, headless --json) for one union."""
    return msgspec.json.Decoder(union)


MSGPACK_ENCODER = msgspec.msgpack.Encoder()
_RESULT_ENCODER = msgspec.json.Encoder()
JSON_ENCODER = msgspec.json.Encoder()
