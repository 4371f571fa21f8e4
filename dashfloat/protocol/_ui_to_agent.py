"""The protocol's ui to agent: see dashfloat/protocol/__init__.py for the whole contract."""

from __future__ import annotations

from typing import Literal

from dashfloat.protocol._base import ApprovalMode, Decision, Message, ReasoningEffort

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
