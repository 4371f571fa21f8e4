"""The protocol's tool results: see dashfloat/protocol/__init__.py for the whole contract."""

from __future__ import annotations

from typing import Literal, assert_never

import msgspec

from dashfloat.protocol._values import ChatMessage

# ---------------------------------------------------------------- tool results (docs/tools.md)
#
# One Struct per outcome, produced by the executor (or the agent, for calls it never ran), carried in
# ToolFinished, kept in the conversation and the session log as is. ``result_json`` is the only place
# that turns one into the JSON object the model reads.

_RESULT_ENCODER = msgspec.json.Encoder()


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
