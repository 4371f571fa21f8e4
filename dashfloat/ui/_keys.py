"""The TUI's keys: each a named function of the shell and the key press, and ``bindings``, which says which keys call
which and when. For the same keys the binding made later wins (prompt_toolkit's rule), so the order is kept."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Final

from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.filters import Condition, FilterOrBool, has_completions
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys

from dashfloat.protocol import Cancel, Decision
from dashfloat.ui import _queue as queue
from dashfloat.ui._confirm import close_viewer, confirm_key, ctrl_c, open_viewer, rearmed, scroll_viewer
from dashfloat.ui._history import ReverseSearch
from dashfloat.ui._mentions import partial_in
from dashfloat.ui.state import CONFIRM_TEXT_HINT, Hint

if TYPE_CHECKING:
    from dashfloat.ui._app import TuiShell

Key = Callable[["TuiShell", KeyPressEvent], None]

DECISION_KEYS: Final[tuple[tuple[str, Decision], ...]] = (
    ("y", "approve"),
    ("Y", "approve"),
    ("enter", "approve"),
    ("n", "reject"),
    ("N", "reject"),
    ("escape", "reject_stop"),
    ("a", "approve_always"),
    ("A", "approve_always"),
)
"""The keys that answer a confirmation, and their answers."""
VIEWER_SCROLL_KEYS: Final = (
    ("up", -1, False), ("k", -1, False), ("down", 1, False), ("j", 1, False), ("enter", 1, False),
    ("pageup", -1, True), ("pagedown", 1, True), ("space", 1, True), ("home", -(10**9), False), ("end", 10**9, False),
)  # fmt: skip
"""The change viewer's keys: (key, rows or pages to move, whether in pages)."""
VIEWER_PAGE_MARGIN_ROWS = 5
"""A page of the viewer is the screen's height less this many rows (at least one row)."""


def bindings(shell: TuiShell) -> KeyBindings:
    """Every key the TUI handles (over prompt_toolkit's basic ones, which type text)."""
    confirming = Condition(lambda: shell.state.confirm is not None)
    searching = Condition(lambda: shell.search is not None)
    viewing = Condition(lambda: shell.state.viewer is not None)
    can_view = Condition(lambda: shell.state.confirm is not None and shell.buffer.text == "")
    kb = KeyBindings()

    def bind(key: Key, *keys: str, when: FilterOrBool = True, eager: bool = False) -> None:
        kb.add(*keys, filter=when, eager=eager)(partial(key, shell))

    bind(enter, "enter", when=~confirming)
    bind(newline, "c-j")  # and Alt-Enter, read as Ctrl-J when its two bytes come together (ui/_ptk_private.py)
    bind(escape, "escape", when=~confirming)
    bind(interrupt, "c-c")
    bind(exit_or_delete, "c-d")
    bind(up, "up", when=~has_completions)
    bind(down, "down", when=~has_completions)
    bind(complete, "tab")
    bind(complete_previous_or_mode, "s-tab")
    bind(line_start, "c-a")
    bind(line_end, "c-e")
    bind(delete_to_line_start, "c-u")
    bind(delete_to_line_end, "c-k")
    bind(delete_word, "c-w")
    # ---- daily habits (issue 17), kept together
    bind(edit_in_editor, "c-g", when=~searching)
    bind(edit_in_editor, "c-x", "c-e")
    bind(search_type, Keys.Any, when=searching)
    bind(search_older, "c-r")
    bind(search_erase, "backspace", when=searching)
    bind(search_accept, "enter", when=searching)
    bind(search_cancel, "c-g", when=searching)
    bind(search_cancel, "escape", when=searching, eager=True)
    bind(suspend, "c-z")
    # ---- the daily hour (issue 37): the last result in full, the queue sent now
    bind(expand_last, "c-o", when=~searching)
    bind(send_queue_now, "c-s", when=~searching)
    # ---- the change viewer and the confirmation's answers
    bind(view_open, "v", when=confirming & can_view & ~viewing & ~searching)
    for key in ("escape", "v", "q"):
        bind(view_close, key, when=viewing)
    bind(view_ignore, Keys.Any, when=viewing)
    for key, step, paged in VIEWER_SCROLL_KEYS:
        bind(partial(view_scroll, step=step, paged=paged), key, when=viewing)
    for key, value in DECISION_KEYS:
        # Not while Ctrl-R searches: its keys are a query (a "y" searched for would otherwise approve).
        bind(partial(answer, key=key, value=value), key, when=confirming & ~viewing & ~searching)
    return kb


# ------------------------------------------------------------ the input


def enter(shell: TuiShell, event: KeyPressEvent) -> None:
    """Take the completion chosen in the menu, else submit the input."""
    state = shell.buffer.complete_state
    if state is not None and state.current_completion is not None:
        shell.buffer.apply_completion(state.current_completion)
        if shell.paths.candidates(partial_in(shell.buffer.document))[0]:
            shell.show_paths()  # a directory was chosen: what is in it, at once
        return
    shell.submit()


def newline(shell: TuiShell, event: KeyPressEvent) -> None:
    """Esc Enter (Alt-Enter) or Ctrl-J: a line break in the input."""
    shell.buffer.insert_text("\n")


def escape(shell: TuiShell, event: KeyPressEvent) -> None:
    """Close the completion menu, else cancel the running turn (its queued prompts come back to the input)."""
    if shell.buffer.complete_state is not None:
        shell.buffer.cancel_completion()
    elif shell.state.busy:
        shell.show(queue.stopped_by_user(shell.state))
        shell.link.send(Cancel())


def interrupt(shell: TuiShell, event: KeyPressEvent) -> None:
    """Ctrl-C: cancel the turn, clear the input, or exit when pressed twice (``state.ctrl_c`` decides)."""
    state, action = ctrl_c(shell.state, shell.clock(), shell.buffer.text == "")
    shell.show(state)
    match action:
        case "cancel":
            shell.show(queue.stopped_by_user(shell.state))
            shell.link.send(Cancel())
            shell.tick()  # its hint drawn now (see "arm")
        case "clear":
            shell.buffer.reset()
            shell.history.reset()
        case "exit":
            shell.app.exit(result=0)
        case "arm":
            # Drawn now, not by the next tick: the hint lives a second from the key, and a tick delayed past
            # that (a loaded machine) cleared it before any frame had shown it.
            shell.tick()


def exit_or_delete(shell: TuiShell, event: KeyPressEvent) -> None:
    """Ctrl-D: exit on an empty input, else delete the character under the cursor."""
    if shell.buffer.text == "":
        shell.app.exit(result=0)
    else:
        shell.buffer.delete()


def up(shell: TuiShell, event: KeyPressEvent) -> None:
    """The line above in the input; on an empty input the newest queued prompt, to edit; else the older prompt."""
    if shell.buffer.document.cursor_position_row > 0:
        shell.buffer.cursor_up()
        return
    if shell.buffer.text == "" and shell.state.queued:
        state, text = queue.take_last(shell.state)
        shell.show(state)
        shell.set_text(text or "")
        return
    text = shell.history.older(shell.state.history, shell.buffer.text)
    if text is not None:
        shell.set_text(text)


def down(shell: TuiShell, event: KeyPressEvent) -> None:
    """The line below in the input, or from its last line the newer prompt."""
    doc = shell.buffer.document
    if doc.cursor_position_row < doc.line_count - 1:
        shell.buffer.cursor_down()
        return
    text = shell.history.newer(shell.state.history)
    if text is not None:
        shell.set_text(text)


def complete(shell: TuiShell, event: KeyPressEvent) -> None:
    """Tab: the next entry of an open menu; else complete, at once when only one completion fits."""
    if shell.buffer.complete_state is not None and shell.buffer.complete_state.completions:
        shell.buffer.complete_next()
        return
    # Computed here, not in the background: a Tab typed right after the text must still complete.
    request = CompleteEvent(completion_requested=True)
    found = list(shell.completer.get_completions(shell.buffer.document, request))
    if len(found) == 1:
        shell.buffer.apply_completion(found[0])
    elif found:
        shell.buffer.start_completion(select_first=True)


def complete_previous_or_mode(shell: TuiShell, event: KeyPressEvent) -> None:
    """Shift-Tab: the previous entry of an open menu, else the next approval mode (ui/_modes.py)."""
    if shell.buffer.complete_state is not None:
        shell.buffer.complete_previous()
    else:
        shell.cycle_mode()


def expand_last(shell: TuiShell, event: KeyPressEvent) -> None:
    """Ctrl-O: the newest tool result in full, or the newest change's whole diff (as /last)."""
    shell.show_last()


def send_queue_now(shell: TuiShell, event: KeyPressEvent) -> None:
    """Ctrl-S: the input's text (if any) joins the queue, and the turn is stopped so that the queue goes now."""
    if shell.buffer.text.strip():
        shell.submit()  # queued when busy; submitted at once when idle
    if shell.state.queued and shell.state.busy:
        shell.show(queue.send_now(shell.state))
        shell.link.send(Cancel())


def line_start(shell: TuiShell, event: KeyPressEvent) -> None:
    """Ctrl-A: to the start of the cursor's line."""
    shell.buffer.cursor_position += shell.buffer.document.get_start_of_line_position()


def line_end(shell: TuiShell, event: KeyPressEvent) -> None:
    """Ctrl-E: to the end of the cursor's line."""
    shell.buffer.cursor_position += shell.buffer.document.get_end_of_line_position()


def delete_to_line_start(shell: TuiShell, event: KeyPressEvent) -> None:
    """Ctrl-U: delete back to the line's start; at its start, the line break before it (as readline's own)."""
    document = shell.buffer.document
    if document.cursor_position_col == 0:
        shell.buffer.delete_before_cursor(1)
    else:
        shell.buffer.delete_before_cursor(-document.get_start_of_line_position())


def delete_to_line_end(shell: TuiShell, event: KeyPressEvent) -> None:
    """Ctrl-K: delete to the line's end."""
    shell.buffer.delete(shell.buffer.document.get_end_of_line_position())


def delete_word(shell: TuiShell, event: KeyPressEvent) -> None:
    """Ctrl-W: delete the word before the cursor."""
    start = shell.buffer.document.find_start_of_previous_word()
    if start:
        shell.buffer.delete_before_cursor(-start)


def edit_in_editor(shell: TuiShell, event: KeyPressEvent) -> None:
    """Ctrl-X Ctrl-E or Ctrl-G: the input in $VISUAL / $EDITOR."""
    # prompt_toolkit's temp file, in the UI process (ADR 0023). Not submitted on return: the text comes back into
    # the input to read once more and send with Enter.
    shell.buffer.open_in_editor(validate_and_handle=False)


def suspend(shell: TuiShell, event: KeyPressEvent) -> None:
    """Ctrl-Z: suspend like any shell program (the agent and its workers stop with us; ``fg`` continues all)."""
    # prompt_toolkit erases the live region first and draws it again on SIGCONT.
    event.app.suspend_to_background()


# ------------------------------------------------------------ Ctrl-R: the search through earlier prompts


def search_type(shell: TuiShell, event: KeyPressEvent) -> None:
    """While searching, a printable key extends the query; any other ends the search with the match in the input."""
    search = shell.search
    assert search is not None
    data = event.key_sequence[0].data
    if data.isprintable() and len(data) == 1:
        _show_match(shell, search.type(shell.state.history, data))
        shell.apply(Hint(search.prompt(shell.state.history)))
        return
    shell.search = None
    shell.apply(Hint(None))


def search_older(shell: TuiShell, event: KeyPressEvent) -> None:
    """Ctrl-R: start a search, or find the next older match."""
    search = shell.search
    if search is None:
        search = shell.search = ReverseSearch(shell.buffer.text, len(shell.state.history))
    else:
        _show_match(shell, search.again(shell.state.history))
    shell.apply(Hint(search.prompt(shell.state.history)))


def search_erase(shell: TuiShell, event: KeyPressEvent) -> None:
    """Backspace while searching: the query's last character."""
    assert shell.search is not None
    _show_match(shell, shell.search.erase(shell.state.history))
    shell.apply(Hint(shell.search.prompt(shell.state.history)))


def search_accept(shell: TuiShell, event: KeyPressEvent) -> None:
    """Enter while searching: the match stays in the input, to edit or to submit with the next Enter."""
    shell.search = None
    shell.apply(Hint(None))


def search_cancel(shell: TuiShell, event: KeyPressEvent) -> None:
    """Esc or Ctrl-G while searching: the input as it was before the search."""
    assert shell.search is not None
    shell.set_text(shell.search.draft)
    shell.search = None
    shell.apply(Hint(None))


def _show_match(shell: TuiShell, match: str | None) -> None:
    if match is not None:
        shell.set_text(match)


# ------------------------------------------------------------ a confirmation: its answers and the change viewer


def answer(shell: TuiShell, event: KeyPressEvent, *, key: str, value: Decision) -> None:
    """One of ``DECISION_KEYS`` while a confirmation waits: the answer, or typing when the input holds text."""
    shell.on_text_changed()
    match confirm_key(shell.state, printable=len(key) == 1):
        case "decide" if value == "approve_always" and not (shell.state.confirm and shell.state.confirm.scope):
            shell.apply(Hint("no always for this call (shell syntax or inline code): y approves it once"))
        case "decide":
            shell.decide(value)
        case "type":
            shell.buffer.insert_text(key)
        case "ignore" if key == "enter" and shell.buffer.text.strip():
            # A prompt typed while the confirmation waits is queued, never an answer; the keys wait once more.
            shell.submit()
            shell.show(rearmed(shell.state))
        case "ignore":
            if shell.buffer.text:
                shell.apply(Hint(CONFIRM_TEXT_HINT))


def view_open(shell: TuiShell, event: KeyPressEvent) -> None:
    """v while a confirmation waits: its changes in the viewer."""
    shell.show(open_viewer(shell.state))


def view_close(shell: TuiShell, event: KeyPressEvent) -> None:
    """q, v or Esc in the viewer: back to the confirmation."""
    shell.show(close_viewer(shell.state))


def view_ignore(shell: TuiShell, event: KeyPressEvent) -> None:
    """Any other key in the viewer does nothing."""
    # The viewer is modal: a key it does not use must not type into the input hidden behind it (a "y" meant to
    # approve landed there, and the typed text then held the confirmation back).


def view_scroll(shell: TuiShell, event: KeyPressEvent, *, step: int, paged: bool) -> None:
    """One of ``VIEWER_SCROLL_KEYS`` in the viewer: move by ``step`` rows, or pages when ``paged``."""
    page = max(1, shell.state.height - VIEWER_PAGE_MARGIN_ROWS)
    shell.show(scroll_viewer(shell.state, step * page if paged else step))
