"""The UI's state as a plain function of (state, event): no I/O, no clock, no prompt_toolkit."""

from __future__ import annotations

from typing import Any, Final, Literal, assert_never

import msgspec
from msgspec.structs import replace

from dashfloat.catalogue import EXECUTE_COMMAND, mutates
from dashfloat.protocol import (
    AgentReady,
    AgentToUi,
    ApprovalMode,
    ChangeRecorded,
    ConfirmRequested,
    ConfirmSubject,
    ContextChanged,
    Decision,
    JobExited,
    JobOutput,
    JobStarted,
    LastResultShown,
    Level,
    MalformedCall,
    PathsFound,
    Phase,
    PhaseChanged,
    PromptFile,
    PromptRestored,
    PromptsListed,
    ReasoningReceived,
    RestoreEnded,
    ResultStatus,
    SandboxState,
    SessionCleared,
    SessionInfo,
    SessionsListed,
    SessionStarted,
    SystemEntry,
    TokenReceived,
    ToolArgs,
    ToolCallShown,
    ToolOutputShown,
    ToolResultShown,
    TurnEnded,
    UsageShown,
    UserPromptShown,
    WindowSource,
)
from dashfloat.ui._blocks import _ink, _plain, _source_cut, finished_blocks
from dashfloat.ui._jobs_view import JobRow
from dashfloat.ui._jobs_view import updated as jobs_updated
from dashfloat.ui._markdown import render_markdown
from dashfloat.ui._notices import onboarding, prompt_list
from dashfloat.ui._text import Row

HISTORY_MAX_ENTRIES = 1000
"""Input history kept in memory (the agent persists its own bounded copy)."""
DOUBLE_CTRL_C_S = 1.0
"""A second Ctrl-C on an empty, idle input within this many seconds exits."""
LIVE_RESERVED_ROWS = 4
"""Rows kept free below the live text for the status bar, the input and a hint."""
MIN_LIVE_ROWS = 3
LIVE_OUTPUT_MAX_LINES = 8
"""Lines of a running command's output shown in the live region (its newest)."""
LIVE_OUTPUT_MAX_LINE_CHARS = 1000
"""Characters kept of one live output line (a line without a newline grows no further)."""
CONFIRM_TEXT_HINT: Final = "a confirmation is waiting: your text stays; clear it to answer"
"""Said while a confirmation waits and the input holds text; cleared with either (hints follow the state now)."""
DEMO_PROVIDER: Final = "demo"
"""The offline demo's provider: it has its own first words, so no onboarding line."""
CHANGES_MAX = 1000
"""Changes of a session kept for /diff (each holds at most the 50-line preview window)."""
CONFIRM_GUARD_S = 0.6
"""A confirmation takes no decision key until its preview has been on screen this long (ADR 0025): longer
than the gap between two keys of someone typing a sentence, short enough not to feel like a wait."""


# ---------------------------------------------------------------- transcript entries


class UserPrompt(msgspec.Struct, frozen=True):
    """A prompt the user submitted (or a replayed one)."""

    text: str


class Prose(msgspec.Struct, frozen=True):
    """Finished Markdown blocks of an assistant answer."""

    source: str


class Reasoning(msgspec.Struct, frozen=True):
    """Reasoning text, shown dim."""

    text: str


class ProseRows(msgspec.Struct, frozen=True):
    """Rows of a still-open block that no longer fit on screen, committed as they were drawn."""

    rows: tuple[Row, ...]


class ToolCall(msgspec.Struct, frozen=True):
    """A ⚙ tool row."""

    args: ToolArgs | MalformedCall


class ToolResult(msgspec.Struct, frozen=True):
    """The → row under a tool call, with its verbatim excerpt."""

    name: str
    status: ResultStatus
    output: str


class DecisionRecord(msgspec.Struct, frozen=True):
    """What a confirmation collapsed to once answered."""

    subject: ConfirmSubject
    decision: Decision | Literal["cancelled"]


class Notice(msgspec.Struct, frozen=True):
    """A dim system line (from the agent, or local: /help, errors)."""

    text: str
    level: Level = "info"


class SessionTable(msgspec.Struct, frozen=True):
    """The /sessions listing."""

    sessions: tuple[SessionInfo, ...]


class ChangeRecord(msgspec.Struct, frozen=True):
    """What a landed mutation changed and who let it run; its diff when no key was pressed."""

    change: ChangeRecorded
    approved_here: bool = False
    """The person approved it with a key: the one row of the approval, its diff collapsed (issue 37)."""
    full: bool = False
    """Ctrl-O or /last: the whole diff kept."""


class FullResult(msgspec.Struct, frozen=True):
    """/last or Ctrl-O: all the agent kept of the newest tool result."""

    name: str
    status: ResultStatus
    output: str


class ChangesTable(msgspec.Struct, frozen=True):
    """/diff: what this session changed so far, file by file."""

    changes: tuple[ChangeRecorded, ...]


Entry = (
    ChangeRecord
    | FullResult
    | ChangesTable
    | UserPrompt
    | Prose
    | Reasoning
    | ProseRows
    | ToolCall
    | ToolResult
    | DecisionRecord
    | Notice
    | SessionTable
)

# ---------------------------------------------------------------- UI-internal events (never on the wire)


class Tick(msgspec.Struct, frozen=True):
    """The single timer fired: current time and terminal size."""

    now: float
    width: int
    height: int


class Submitted(msgspec.Struct, frozen=True):
    """The user submitted ``text`` as a prompt."""

    text: str


class LocalNotice(msgspec.Struct, frozen=True):
    """A line the UI itself adds (command help, a parse error, a hint)."""

    text: str
    level: Level = "info"


class Hint(msgspec.Struct, frozen=True):
    """A transient line above the input (None clears it)."""

    text: str | None


class InputChanged(msgspec.Struct, frozen=True):
    """The input became empty or non-empty (decision keys act only on an empty input)."""

    empty: bool


class ShowChanges(msgspec.Struct, frozen=True):
    """/diff: print what this session changed so far."""


class Refused(msgspec.Struct, frozen=True):
    """A command the UI refused (unknown, a wrong argument): said, and kept in the history for Up (issue 37)."""

    text: str
    error: str


class ShowLast(msgspec.Struct, frozen=True):
    """Ctrl-O or /last when the newest thing to expand is a change: its whole diff (else the agent is asked)."""


class ModeRequested(msgspec.Struct, frozen=True):
    """Shift-Tab asked the agent for ``mode``: shown at once, so a second quick press cycles on from it."""

    mode: ApprovalMode


UiEvent = Tick | Submitted | LocalNotice | Hint | InputChanged | ShowChanges | Refused | ShowLast | ModeRequested
Event = AgentToUi | UiEvent


class LiveOutput(msgspec.Struct, frozen=True):
    """The newest lines of a running command, drawn in the live region until its result row arrives."""

    call_id: str
    since: float
    lines: tuple[str, ...] = ()
    partial: str = ""
    total_lines: int = 0


def _feed_live(live: LiveOutput, text: str) -> LiveOutput:
    """``live`` after ``text``: complete lines appended (the newest kept), the unfinished one held."""
    pieces = (live.partial + text).split("\n")
    *complete, partial = pieces
    lines = (*live.lines, *(line[:LIVE_OUTPUT_MAX_LINE_CHARS] for line in complete[-LIVE_OUTPUT_MAX_LINES:]))
    return replace(
        live,
        lines=lines[-LIVE_OUTPUT_MAX_LINES:],
        partial=partial[-LIVE_OUTPUT_MAX_LINE_CHARS:],
        total_lines=live.total_lines + len(complete),
    )


# ---------------------------------------------------------------- the state


class UiState(msgspec.Struct, frozen=True):
    """Everything the renderer needs; finished entries wait in ``outbox`` until printed once."""

    model: str = ""
    provider: str = ""
    cwd: str = ""
    approval: ApprovalMode = "ask"
    rules: int = 0
    sandbox: SandboxState | None = None
    """The session's command sandbox, for the status bar; None until the agent is ready."""
    context_window: int | None = None
    window_source: WindowSource | None = None
    context_tokens: int | None = None
    waiting: str = ""
    """What the server does before the first token, as the agent says it (ContextChanged.waiting, ADR 0092)."""
    history: tuple[str, ...] = ()
    session_id: str | None = None
    ready: bool = False
    phase: Phase = "idle"
    phase_since: float = 0.0
    answered: bool = False
    """Something arrived since the phase became streaming (before that: the model reads the prompt)."""
    now: float = 0.0
    width: int = 80
    height: int = 24
    open_prose: str = ""
    open_skip: int = 0
    open_reasoning: str = ""
    confirm: ConfirmRequested | None = None
    confirm_since: float | None = None
    """The tick that first drew the pending confirmation (None: not drawn yet)."""
    confirm_stranded: int = 0
    """Top rows of the pending confirmation that a resize pushed into the terminal's history: not drawn again."""
    confirm_armed: bool = False
    """The guard since ``confirm_since`` has passed: decision keys on an empty input now answer."""
    input_empty: bool = True
    prompt_files: tuple[PromptFile, ...] = ()
    """/NAME prompt files the agent found (project and user)."""
    models: tuple[str, ...] = ()
    """The server's models, once the agent listed them: /model completes them."""
    live_output: LiveOutput | None = None
    """A running command's newest output (its result row replaces it)."""
    changes: tuple[ChangeRecorded, ...] = ()
    """Every mutation of this session that landed, for /diff."""
    jobs: tuple[JobRow, ...] = ()
    """Background jobs as they started, printed and ended: /jobs and the status bar's count (issue 36)."""
    viewer: int | None = None
    """The full preview is open, scrolled to this row (None: the inline preview)."""
    last_call_id: str | None = None
    """The latest tool row shown: a confirmation of that same call needs no second header."""
    held_call: ToolCall | None = None
    """The row of a call that may be confirmed (``last_call_id``), drawn live until it is known whether a
    confirmation follows: its header then names the call, so the row is dropped rather than shown twice."""
    outbox: tuple[Entry, ...] = ()
    hint: str | None = None
    last_ctrl_c: float | None = None
    ctrl_c_draft: bool = False
    """The input held text when ``last_ctrl_c`` armed the exit: that text does not hold the second press back."""
    prompts_session: str | None = None
    """The session whose prompts /rewind listed last: ``/rewind N`` means prompt N of that list."""
    input_restore: str | None = None
    """Text a rewind put back: the shell moves it into the input (and clears this)."""
    # ---- issue 37: queued prompts, the approval's one record row, what Ctrl-O expands
    queued: tuple[str, ...] = ()
    """Prompts entered while busy, oldest first: the next goes when the agent is idle (ui/_queue.py)."""
    queue_now: bool = False
    """The turn was cancelled to send the queue now: no longer held back by that cancel."""
    queue_back: bool = False
    """The user cancelled the turn (Esc, Ctrl-C): the queue comes back into the input rather than going."""
    held_decision: DecisionRecord | None = None
    """A key approved a file change: its row waits for the change's record, and becomes that one row."""
    held_decision_id: str = ""
    last_change: ChangeRecorded | None = None
    """The newest change shown, when it is newer than the newest tool result: Ctrl-O shows its whole diff."""
    onboarded: bool = False
    """The first screen's line was said (once, with a real provider, in a new session)."""
    planned: bool = False
    """A turn ran in plan mode since it was entered: leaving plan offers to act on that plan (nothing to act on
    without one: passing plan on the way round offers nothing)."""

    @property
    def busy(self) -> bool:
        return self.phase != "idle" or self.confirm is not None

    def live_budget(self) -> int:
        """Rows the streaming entry may use before its top rows are committed."""
        return max(MIN_LIVE_ROWS, self.height - LIVE_RESERVED_ROWS)


def initial(now: float, width: int = 80, height: int = 24, **fields: Any) -> UiState:
    """A fresh state (``fields`` seed options known before AgentReady, e.g. the model)."""
    return UiState(now=now, phase_since=now, width=width, height=height, **fields)


def commit(state: UiState, *entries: Entry) -> UiState:
    """``entries`` finished: they wait in the outbox (after a held call row, which they show was not confirmed)."""
    if state.held_call is not None:  # anything after a held call row means no confirmation replaced it
        entries = (state.held_call, *entries)
    if state.held_decision is not None:  # anything else first: the approval's record is its own row
        entries = (state.held_decision, *entries)
    return replace(state, outbox=state.outbox + entries, held_call=None, held_decision=None, held_decision_id="")


def _flush_open(state: UiState) -> UiState:
    """Close the open assistant entry: what is left of it becomes finished entries."""
    entries: list[Entry] = []
    if state.open_reasoning.strip():
        entries.append(Reasoning(state.open_reasoning.strip("\n")))
    if state.open_prose.strip():
        if state.open_skip:
            rows = render_markdown(state.open_prose.rstrip(), state.width)
            if rows[state.open_skip :]:
                entries.append(ProseRows(rows[state.open_skip :]))
        else:
            entries.append(Prose(state.open_prose.strip("\n")))
    state = replace(state, open_prose="", open_skip=0, open_reasoning="")
    return commit(state, *entries)


def close_open(state: UiState) -> UiState:
    """The state at exit: the open answer and any pending confirmation closed into entries."""
    return _drop_confirm(_flush_open(state))


def _drop_confirm(state: UiState) -> UiState:
    """A confirmation the agent closed without a key from us is recorded as cancelled."""
    if state.confirm is None:
        return state
    record = DecisionRecord(state.confirm.subject, "cancelled")
    return commit(no_confirm(state), record)


def no_confirm(state: UiState) -> UiState:
    """The state without its pending confirmation (answered, or closed by the agent)."""
    hint = None if state.hint == CONFIRM_TEXT_HINT else state.hint  # about this confirmation: gone with it
    return replace(
        state, confirm=None, confirm_since=None, confirm_armed=False, viewer=None, hint=hint, confirm_stranded=0
    )


def take_outbox(state: UiState) -> tuple[UiState, tuple[Entry, ...]]:
    """The entries to print now, and the state without them."""
    return replace(state, outbox=()), state.outbox


def _ready_history(state: UiState, saved: list[str]) -> tuple[str, ...]:
    """The saved history, then what was typed before the agent was first ready (it is not saved yet); after a
    restart the UI's own history is already complete."""
    if state.ready:
        return state.history
    return (*saved, *state.history)[-HISTORY_MAX_ENTRIES:]


def _owes_onboarding(state: UiState) -> bool:
    """A new session with a real provider has not said its first line yet (the demo says its own words)."""
    return state.ready and not state.onboarded and not state.session_id and state.provider != DEMO_PROVIDER


def _onboard(state: UiState) -> UiState:
    """The first screen's line: model, window, sandbox, three keys (issue 37)."""
    line = onboarding(state.model, state.context_window, state.sandbox)
    return commit(replace(state, onboarded=True), Notice(line))


def reduce(state: UiState, event: Event) -> UiState:
    """The state after ``event`` (an agent message or a UI-internal event)."""
    match event:
        case AgentReady():
            state = replace(
                state,
                model=event.model,
                provider=event.provider,
                cwd=event.cwd,
                approval=event.approval,
                planned=state.planned and event.approval == "plan",
                rules=event.rules,
                sandbox=event.sandbox,
                context_window=event.context_window,
                window_source=event.window_source,
                history=_ready_history(state, event.history),
                prompt_files=tuple(event.prompt_files),
                models=tuple(event.models),
                ready=True,
            )
            # The first line waits until it can say the window: a local server reports it a moment after the
            # start ("window not known yet" then contradicted the status bar).
            if _owes_onboarding(state) and state.context_window is not None:
                return _onboard(state)
            return state
        case SessionStarted():
            changed = state.session_id is not None and state.session_id != event.session_id
            state = replace(state, session_id=event.session_id)
            if event.resumed:
                return commit(_flush_open(state), Notice(f"resumed session {event.session_id}"))
            if changed:
                state = replace(state, context_tokens=None, changes=())
                return commit(_flush_open(state), Notice(f"new session {event.session_id}"))
            return state
        case SessionCleared():
            if state.session_id:  # the agent's own entry says the conversation starts empty
                state = replace(state, context_tokens=None, changes=())
            return replace(state, session_id="")
        case UserPromptShown():
            return commit(_flush_open(state), UserPrompt(event.text))
        case TokenReceived():
            return _stream(state, event.text)
        case ReasoningReceived():
            state = replace(state, answered=True)
            if state.open_prose:
                state = _flush_open(state)
            return replace(state, open_reasoning=state.open_reasoning + event.text)
        case PhaseChanged():
            if event.phase == "idle" and state.phase != "idle" and state.approval == "plan":
                state = replace(state, planned=True)
            if event.phase != state.phase:
                state = replace(state, phase=event.phase, phase_since=state.now, answered=False)
            if event.phase == "idle":
                state = replace(_drop_confirm(_flush_open(state)), live_output=None)
                if state.last_ctrl_c is None:
                    state = replace(state, hint=None)  # e.g. "busy": no longer true
            return state
        case ToolCallShown():
            state = replace(_flush_open(state), last_call_id=event.id, answered=True)
            if not isinstance(event.args, MalformedCall) and mutates(event.args):
                return replace(state, held_call=ToolCall(event.args))
            return commit(state, ToolCall(event.args))
        case ToolOutputShown():
            live = state.live_output
            if live is None or live.call_id != event.id:
                live = LiveOutput(call_id=event.id, since=state.now)
            return replace(state, live_output=_feed_live(live, event.text))
        case ToolResultShown():
            held, state = _unhold(state, event.id)
            state = replace(_flush_open(state), live_output=None, last_change=None)
            if state.confirm is not None and state.confirm.id == event.id:
                state = _drop_confirm(state)  # answered elsewhere (a cancel): the record goes first
            if held is not None and event.status == "ok" and not event.output.strip():
                return replace(state, held_decision=held, held_decision_id=event.id)  # its change record follows
            result = ToolResult(event.name, event.status, event.output)
            return commit(state, held, result) if held is not None else commit(state, result)
        case ConfirmRequested():
            if event.id == state.last_call_id:
                state = replace(state, held_call=None)  # the confirmation's header names the call
            # A new confirmation starts its own guard, even if it replaces one already armed.
            fresh = {"confirm_since": None, "confirm_armed": False, "viewer": None, "confirm_stranded": 0}
            return replace(_flush_open(state), confirm=event, **fresh)
        case ChangeRecorded():
            held, state = _unhold(state, event.id)
            state = replace(_flush_open(state), changes=(*state.changes, event)[-CHANGES_MAX:])
            if event.diff:  # a file's change: Ctrl-O shows its whole diff (a command's: its result, from the agent)
                state = replace(state, last_change=event)
            if held is not None:  # the approval and its change: one row (issue 37)
                return commit(state, ChangeRecord(event, approved_here=True))
            if event.approved_by == "keypress" and event.name == EXECUTE_COMMAND:
                return state  # "✓ approved execute_command …" and its result said it already
            return commit(state, ChangeRecord(event))
        case UsageShown():
            return replace(state, context_tokens=event.usage.total_tokens)
        case ContextChanged():
            return replace(state, context_tokens=event.tokens, waiting=event.waiting)
        case SystemEntry():
            return commit(_flush_open(state), Notice(event.text, event.level))
        case TurnEnded():
            return _flush_open(state)
        case SessionsListed():
            return commit(_flush_open(state), SessionTable(tuple(event.sessions)))
        case PromptsListed():
            state = replace(_flush_open(state), prompts_session=event.session_id)
            return commit(state, Notice(prompt_list(event)))
        case PromptRestored():
            return replace(state, input_restore=event.text)
        case RestoreEnded():
            return _flush_open(state)
        case LastResultShown():
            if not event.name:
                return commit(_flush_open(state), Notice("no tool result in this session yet: nothing to show"))
            return commit(_flush_open(state), FullResult(event.name, event.status, event.output))
        case PathsFound():
            return state  # @ completion's answer: the shell's completer keeps it (ui/_mentions.py)
        case JobStarted() | JobOutput() | JobExited():  # background jobs (issue 36); an end's row is a SystemEntry
            return replace(state, jobs=jobs_updated(state.jobs, event, state.now))
        case Tick():
            skip = _reflowed_skip(state, event.width) if event.width != state.width else state.open_skip
            state = replace(state, now=event.now, width=event.width, height=event.height, open_skip=skip)
            if state.last_ctrl_c is not None and event.now - state.last_ctrl_c > DOUBLE_CTRL_C_S:
                state = replace(state, last_ctrl_c=None, hint=None)
            if state.confirm is not None:
                since = state.confirm_since if state.confirm_since is not None else event.now
                armed = event.now - since >= CONFIRM_GUARD_S
                state = replace(state, confirm_since=since, confirm_armed=armed)
            return _overflow(state)
        case InputChanged():
            if event.empty and state.hint == CONFIRM_TEXT_HINT:
                state = replace(state, hint=None)  # it said to clear the input: done
            return replace(state, input_empty=event.empty)
        case Refused():
            state = replace(state, history=remembered(state.history, event.text))
            return commit(_flush_open(state), Notice(event.error, "error"))
        case ShowLast():
            if state.last_change is None:
                return state
            return commit(_flush_open(state), ChangeRecord(state.last_change, full=True))
        case ShowChanges():
            return commit(_flush_open(state), ChangesTable(state.changes))
        case Submitted():
            if _owes_onboarding(state):
                state = _onboard(state)  # a prompt before the window was known: the line goes first, as it is
            history = remembered(state.history, event.text)
            return commit(replace(_flush_open(state), history=history, hint=None), UserPrompt(event.text))
        case LocalNotice():
            return commit(_flush_open(state), Notice(event.text, event.level))
        case Hint():
            return replace(state, hint=event.text)
        case ModeRequested():
            return replace(state, approval=event.mode, planned=state.planned and event.mode == "plan")
        case _:
            assert_never(event)


def _unhold(state: UiState, call_id: str) -> tuple[DecisionRecord | None, UiState]:
    """The approval held for call ``call_id`` (if it is that call's), and the state without it."""
    if state.held_decision is None or state.held_decision_id != call_id:
        return None, state
    return state.held_decision, replace(state, held_decision=None, held_decision_id="")


def remembered(history: tuple[str, ...], text: str) -> tuple[str, ...]:
    """``history`` with ``text`` last (not twice in a row, never blank), bounded."""
    if text.strip() and (not history or history[-1] != text):
        return (*history, text)[-HISTORY_MAX_ENTRIES:]
    return history


def _stream(state: UiState, text: str) -> UiState:
    """Append answer text; blocks that are now finished leave the live region for the scrollback."""
    entries: list[Entry] = []
    if state.open_reasoning:
        entries.append(Reasoning(state.open_reasoning.strip("\n")))
    source = state.open_prose + text
    # A block can only finish at a line end or at the first character after one, so a token inside a
    # line skips the scan (which is linear in the open block: a long code block streams many tokens).
    if "\n" in text or state.open_prose.endswith("\n") or not state.open_prose:
        blocks, rest = finished_blocks(source)
    else:
        blocks, rest = [], source
    skip = state.open_skip
    for finished in blocks:  # each alone: the same entries however the text was chunked
        if not finished.strip():
            continue
        if skip:
            rows = render_markdown(finished.rstrip(), state.width)
            if rows[skip:]:
                entries.append(ProseRows(rows[skip:]))
        else:
            entries.append(Prose(finished.strip("\n")))
        skip = 0
    # One replace a message (each copies the state's every field, and the tokens of a paced
    # stream arrive every few milliseconds); committing nothing with no call held changes nothing.
    state = replace(state, answered=True, open_prose=rest, open_skip=skip, open_reasoning="")
    return commit(state, *entries) if entries or state.held_call is not None else state


def _reflowed_skip(state: UiState, width: int) -> int:
    """The committed rows of the open block, counted again at a new width.

    Rows are matched by the visible (non-space) characters already committed; a row only partly
    committed is shown again rather than lost.
    """
    if not state.open_skip:
        return 0
    source = state.open_prose.rstrip()
    done = _ink(render_markdown(source, state.width)[: state.open_skip])
    skip = total = 0
    for row in render_markdown(source, width):
        total += _ink((row,))
        if total > done:
            break
        skip += 1
    return skip


def strand_open(state: UiState, rows: int, cells: int) -> UiState:
    """The open block's top rows that a resize pushed into the terminal's history: the scrollback's now.

    ``rows`` drawn rows (counted from ``open_skip``, at ``state.width``) and the first ``cells`` characters of
    the next one went out of reach of any erase, so drawing them again would show them twice. When the rows
    show the source's own characters (plain prose) the source is cut right after them and the rest is drawn
    anew from its own first row, so nothing repeats; otherwise the whole rows count as committed.
    """
    if not state.open_prose.strip() or (rows <= 0 and cells <= 0):
        return state
    drawn = render_markdown(state.open_prose.rstrip(), state.width)
    done = min(state.open_skip + max(0, rows), len(drawn))
    shown = "".join(text for row in drawn[:done] for _, text in row)
    if done < len(drawn):
        shown += "".join(text for _, text in drawn[done])[: max(0, cells)]
    cut = _cut_after(state, shown, _plain(drawn))
    if cut is not None:
        return cut
    # The last row may still grow as text arrives, so it stays live: one row shown twice rather than text lost.
    return replace(state, open_skip=max(state.open_skip, min(done, len(drawn) - 1)))


def _cut_after(state: UiState, shown: str, whole: str) -> UiState | None:
    """The open block with its source cut right after ``shown`` (its rows now in the scrollback), or None.

    Only where it is safe: the rows show the source's own characters (spaces aside: plain prose, no markup
    before the cut), and the rest renders as the rest of ``whole`` (the block's text as drawn). Rows are then
    never matched again at another width, so none is shown twice.
    """
    cut = _source_cut(state.open_prose, shown)
    if cut is None:
        return None
    rest = state.open_prose[cut:].lstrip()
    ink = "".join(whole.split())
    if "".join(_plain(render_markdown(rest.rstrip(), state.width)).split()) != ink[len("".join(shown.split())) :]:
        return None
    return replace(state, open_prose=rest, open_skip=0)


def _overflow(state: UiState) -> UiState:
    """Commit the top rows of an open block taller than the screen allows."""
    if not state.open_prose:
        return state
    rows = render_markdown(state.open_prose.rstrip(), state.width)
    # The last row may still change as text arrives, so it always stays live.
    excess = len(rows) - state.open_skip - state.live_budget()
    if excess <= 0:
        return state
    keep_from = state.open_skip + excess
    committed = ProseRows(rows[keep_from - excess : keep_from])
    cut = _cut_after(state, _plain(rows[:keep_from]), _plain(rows))
    return commit(cut or replace(state, open_skip=keep_from), committed)
