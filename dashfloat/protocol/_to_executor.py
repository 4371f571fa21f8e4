"""The protocol's to executor: see dashfloat/protocol/__init__.py for the whole contract."""

from __future__ import annotations

import msgspec

from dashfloat.protocol._base import Message
from dashfloat.protocol._tool_args import RestoreFile, ToolArgs
from dashfloat.protocol._values import SandboxPolicy, ToolHooks

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
