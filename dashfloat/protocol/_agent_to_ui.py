"""The protocol's agent to ui: see dashfloat/protocol/__init__.py for the whole contract."""

from __future__ import annotations

from typing import Literal

import msgspec

from dashfloat.protocol._base import ApprovalMode, Level, Message, Phase, ResultStatus, WindowSource
from dashfloat.protocol._jobs import JobExited, JobOutput, JobStarted
from dashfloat.protocol._tool_args import ConfirmSubject, MalformedCall, PromptInfo, SessionInfo, ToolArgs, Usage
from dashfloat.protocol._values import SandboxState

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
