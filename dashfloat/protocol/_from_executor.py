"""The protocol's from executor: see dashfloat/protocol/__init__.py for the whole contract."""

from __future__ import annotations

from dashfloat.protocol._agent_to_ui import PathsFound
from dashfloat.protocol._base import Message
from dashfloat.protocol._jobs import JobExited, JobExposed, JobOutput, JobStarted
from dashfloat.protocol._mcp import McpServersListed
from dashfloat.protocol._tool_args import Checkpoint, CommandChanges, RestoreOutcome, RestorePreview
from dashfloat.protocol._tool_results import ToolResult
from dashfloat.protocol._values import SandboxGrant

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
