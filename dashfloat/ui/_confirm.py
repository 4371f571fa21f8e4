"""A pending confirmation's keys, its full view, and Ctrl-C: pure functions of the UI state."""

from __future__ import annotations

from typing import Literal

from msgspec.structs import replace

from dashfloat.protocol import ConfirmRequested, DecideConfirmation, Decision, EditFileArgs, WriteFileArgs
from dashfloat.ui._text import diff_line_rows, sanitize
from dashfloat.ui.state import DOUBLE_CTRL_C_S, DecisionRecord, UiState, commit, no_confirm


def decide(state: UiState, decision: Decision) -> tuple[UiState, DecideConfirmation | None]:
    """Answer the pending confirmation: the reply to send, the preview collapsed to a record."""
    confirm = state.confirm
    if confirm is None:
        return state, None
    record = DecisionRecord(confirm.subject, decision)
    if decision in ("approve", "approve_always") and isinstance(confirm.subject, WriteFileArgs | EditFileArgs):
        # Held, drawn live: with the change's record it becomes one row, its diff collapsed (issue 37).
        state = replace(commit(no_confirm(state)), held_decision=record, held_decision_id=confirm.id)
    else:
        state = commit(no_confirm(state), record)
    return state, DecideConfirmation(ref=confirm.ref, decision=decision)


def rearmed(state: UiState) -> UiState:
    """The pending confirmation's guard started again (its keys wait once more before they answer)."""
    return replace(state, confirm_since=None, confirm_armed=False) if state.confirm is not None else state


KeyAction = Literal["decide", "type", "ignore"]


def confirm_key(state: UiState, printable: bool) -> KeyAction:
    """What a decision key (y n a, Enter, Esc) does while a confirmation is pending.

    It answers only on purpose: on an empty input, once the guard has passed. Otherwise a printable key is
    typing (it goes into the draft, nothing is eaten) and Enter or Esc does nothing: never queued for later.
    """
    if state.confirm is None:
        return "type" if printable else "ignore"
    if state.viewer is not None:
        return "ignore"  # the full view is open: its own keys scroll and close it
    if state.input_empty and state.confirm_armed:
        return "decide"
    return "type" if printable else "ignore"


CtrlC = Literal["cancel", "clear", "exit", "arm"]


def ctrl_c(state: UiState, now: float, input_empty: bool) -> tuple[UiState, CtrlC]:
    """Ctrl-C: cancel when busy, clear a non-empty input, exit on a second press within a second (after a cancel
    too, busy or idle again: Ctrl-C twice quits, as in Claude Code and Codex)."""
    # The text in the input when the exit was armed is no reason not to exit (the hint said the next press exits;
    # a turn that stops at once, a rejected confirmation, is idle by then); text typed since is cleared first.
    typed_since = not input_empty and not state.ctrl_c_draft
    if state.last_ctrl_c is not None and now - state.last_ctrl_c <= DOUBLE_CTRL_C_S and (state.busy or not typed_since):
        return state, "exit"
    if state.busy:
        armed = replace(state, last_ctrl_c=now, ctrl_c_draft=not input_empty)
        return replace(armed, hint="press Ctrl-C again to exit"), "cancel"
    if not input_empty:
        return replace(state, last_ctrl_c=None, hint=None), "clear"
    return replace(state, last_ctrl_c=now, ctrl_c_draft=False, hint="press Ctrl-C again to exit"), "arm"


def full_preview_lines(confirm: ConfirmRequested, width: int) -> list[str]:
    """The whole preview the executor sent (the inline lines when it sent no more), in rows of the full view
    (``width`` less its indent): a long line is broken, a diff line's marker keeping its column."""
    lines = confirm.full.split("\n") if confirm.full else list(confirm.lines)
    room = max(2, width - 2)
    return [row for line in lines for row in diff_line_rows(sanitize(line), room)]


def viewer_rows(state: UiState) -> int:
    """Rows of the full view: the screen less the header, the footer, the input and the status bar."""
    return max(3, state.height - 4)


def open_viewer(state: UiState) -> UiState:
    """Open the full preview at its top (only while a confirmation is pending)."""
    return replace(state, viewer=0) if state.confirm is not None else state


def close_viewer(state: UiState) -> UiState:
    return replace(state, viewer=None)


def scroll_viewer(state: UiState, delta: int) -> UiState:
    """Scroll the full view by ``delta`` lines, kept between the top and the last screenful."""
    if state.viewer is None or state.confirm is None:
        return state
    last = max(0, len(full_preview_lines(state.confirm, state.width)) - viewer_rows(state))
    return replace(state, viewer=min(last, max(0, state.viewer + delta)))
