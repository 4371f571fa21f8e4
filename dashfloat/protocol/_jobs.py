"""The protocol's jobs: see dashfloat/protocol/__init__.py for the whole contract."""

from __future__ import annotations

from dashfloat.protocol._base import Message
from dashfloat.protocol._tool_results import JobState
from dashfloat.protocol._ui_to_agent import (
    Cancel,
    ClearSession,
    CompactConversation,
    DecideConfirmation,
    FindPaths,
    ListPermissions,
    ListPrompts,
    ListSessions,
    RemovePermission,
    ResumeSession,
    RewindTo,
    RunUserCommand,
    SavePermission,
    SetApproval,
    SetModel,
    ShowLastResult,
    ShowMcp,
    ShowModels,
    ShowStatus,
    ShowUsage,
    Shutdown,
    SubmitPrompt,
    UndoTurn,
)

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
