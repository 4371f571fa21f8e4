"""Scrollback printing: finished entries are drawn live until printed above the live region, once; then they are the
terminal's. A resize that pushes live rows into the terminal's history makes them the scrollback's too."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace
from prompt_toolkit.formatted_text import StyleAndTextTuples

from dashfloat.ui import _ptk_private as ptk
from dashfloat.ui._markdown import render_markdown
from dashfloat.ui._reflow import stranded_lines
from dashfloat.ui._text import Row, row_width, sanitize
from dashfloat.ui.render import confirm_block, render_entry, to_formatted
from dashfloat.ui.state import Entry, ProseRows, UiState, strand_open

if TYPE_CHECKING:
    from prompt_toolkit.application import Application
    from prompt_toolkit.layout import Window
    from prompt_toolkit.layout.screen import Screen

    from dashfloat.ui._resize import ResizeGuard

LiveDrawn = tuple[UiState, tuple[Entry, ...], int, list[Row]]
"""What the live region's rows were last made from: the state, the pending entries, the width; and the rows."""


class Scrollback:
    """The entries on their way into the terminal's scrollback, and their printing there."""

    def __init__(
        self, app: Application[Any], guard: ResizeGuard, live_window: Window, live_rows: Callable[[], list[Row]]
    ) -> None:
        self._app = app
        self._guard = guard
        self._live_window = live_window
        self._live_rows = live_rows
        self.pending: tuple[Entry, ...] = ()
        """Entries taken from the outbox, drawn live until they are printed into the scrollback."""
        self._drawn: tuple[Screen, list[Row]] | None = None
        """The renderer's screen after the last frame, and the live rows that frame drew at its top."""

    def print_pending(self) -> bool:
        """Print the pending entries above the live region, once; whether the region is to be drawn again.

        Not ``run_in_terminal``: that switches the tty to cooked mode while printing, so keys typed
        meanwhile would be echoed and Enter would arrive as a newline. Erase, print, redraw is all
        it needs, and it stays in raw mode.
        """
        if not self.pending or not self._app.is_running or self._guard.settling():
            return False
        self._guard.erase_if_resized()
        batch, self.pending = self.pending, ()
        width = self._app.output.get_size().columns
        rows = [scrub(row) for entry in batch for row in render_entry(entry, width)]
        if self._scroll_drawn(rows, width):
            return True
        renderer, output = self._app.renderer, self._app.output
        # Back to the top of the live region, then overwrite it (each row cleared whole first) and erase
        # only what is left below. renderer.erase() would erase downwards from the region's top, and when that
        # is the screen's top row tmux (scroll-on-clear) copies the stale frame into its history.
        cursor = ptk.frame_cursor(renderer)
        output.cursor_backward(cursor.x)
        output.cursor_up(cursor.y)
        output.reset_attributes()
        text: StyleAndTextTuples = []
        for row in rows:
            # The whole line first: tmux re-wraps a row by every cell written on it since (ADR 0035).
            text.extend([("[ZeroWidthEscape]", "\x1b[2K"), *row, ("", "\n")])
        self._app.print_text(text)
        output.erase_down()
        output.enable_autowrap()
        output.flush()
        renderer.reset()
        renderer.request_absolute_cursor_position()
        return True

    def print_remaining(self, entries: tuple[Entry, ...]) -> None:
        """At exit the live region is erased; what it still held (and ``entries``) goes to the scrollback."""
        batch, self.pending = self.pending + entries, ()
        if batch:
            width = self._app.output.get_size().columns
            rows = [scrub(row) for entry in batch for row in render_entry(entry, width)]
            self._app.print_text([*to_formatted(rows), ("", "\n")])

    def note_drawn(self) -> None:
        """After each frame: what it drew, for ``_scroll_drawn``."""
        screen = self._app.renderer.last_rendered_screen
        self._drawn = (screen, self._live_rows()) if screen else None

    def _scroll_drawn(self, rows: list[Row], width: int) -> bool:
        """When the rows to print are exactly the top rows the last frame drew, leave them where they are: the
        region's top moves below them and the renderer diffs the next frame against what stays on screen.

        A stream that overflows the screen commits rows every tick; printing them again and redrawing the whole
        region from an erased screen was the largest cost of a frame (issue 19, ADR 0036). Any doubt (another
        frame drew since, a row that wraps, the live rows not at the region's top) prints them as before.
        """
        renderer, drawn, count = self._app.renderer, self._drawn, len(rows)
        screen, info = renderer.last_rendered_screen, self._live_window.render_info
        if drawn is None or screen is None or drawn[0] is not screen or drawn[1][:count] != rows or info is None:
            return False
        cursor = ptk.frame_cursor(renderer)
        if ptk.window_top(info) or info.vertical_scroll or info.window_height < count or cursor.y < count:
            return False
        if any(row_width(row) > width for row in rows):
            return False
        ptk.move_region_top_down(renderer, count)
        self._guard.region_moved_down(count)
        self._drawn = None
        return True

    def strand(
        self, live: LiveDrawn | None, state: UiState, lines: list[list[int]], stranded: int, columns: int
    ) -> UiState:
        """The region's top ``stranded`` rows are in the terminal's history, so they are the scrollback's now:
        entries waiting to be printed there (``strand_pending``) and the open block's rows (``strand_open``: the
        state returned). Other live rows there (a tool row, a preview: rare) are drawn again."""
        if live is None or live[2] != state.width:
            return state
        rows, width = live[3], live[2]
        whole_lines, cells = stranded_lines(lines, stranded, columns)
        done = y = 0  # live rows wholly in the history; a row wider than the screen took more lines
        while done < len(rows) and y + (span := max(1, -(-row_width(rows[done]) // max(1, width)))) <= whole_lines:
            y += span
            done += 1
        partial = cells if done < len(rows) and y == whole_lines else 0
        drawn_pending = live[1]
        if drawn_pending and self.pending[: len(drawn_pending)] == drawn_pending:
            self.pending = strand_pending(drawn_pending, done, width) + self.pending[len(drawn_pending) :]
        drawn_state = live[0]
        if drawn_state.confirm is not None and drawn_state.confirm == state.confirm and state.viewer is None:
            # The confirmation is the region's last block: its top rows in the history are not drawn again.
            top = len(rows) - len(confirm_block(drawn_state, width))
            if done > top:
                return replace(state, confirm_stranded=state.confirm_stranded + done - top)
        if not drawn_state.open_prose.strip():
            return state
        prose = render_markdown(drawn_state.open_prose.rstrip(), width)[drawn_state.open_skip :]
        starts = range(len(rows) - len(prose), -1, -1)
        start = next((i for i in starts if tuple(rows[i : i + len(prose)]) == prose), None)
        if start is None or not prose or done < start:
            return state  # not all of the block was drawn (taller than its budget), or none of it is in the history
        whole = min(done - start, len(prose))
        cells = partial if whole < len(prose) else 0
        # Text may have arrived since that frame: only what it drew is in the history.
        if state.open_skip != drawn_state.open_skip or not state.open_prose.startswith(drawn_state.open_prose.rstrip()):
            return state
        now = render_markdown(state.open_prose.rstrip(), width)[state.open_skip :]
        same = 0
        while same < min(len(now), len(prose)) and now[same] == prose[same]:
            same += 1
        if whole > same:  # the first row that changed since (the last one grew): its drawn part only
            drawn, grown = _text_of(prose[same]), _text_of(now[same]) if same < len(now) else ""
            whole, cells = same, len(drawn) if grown.startswith(drawn) else 0
        elif cells and (whole >= len(now) or _text_of(now[whole])[:cells] != _text_of(prose[whole])[:cells]):
            cells = 0
        return strand_open(state, whole, cells)


def scrub(row: Row) -> Row:
    """The last guard before the scrollback: no fragment may carry a line break or a control character.

    The live region shows control characters in caret form, but printed text goes to the terminal as is.
    """
    if "".join([text for _, text in row]).isprintable():
        return row  # what sanitize leaves as it is (no line break either): a streamed paragraph's rows, every tick
    return tuple((style, sanitize(text.replace("\n", " "))) for style, text in row)


def _text_of(row: Row) -> str:
    return "".join(text for _, text in row)


def strand_pending(pending: tuple[Entry, ...], rows: int, width: int) -> tuple[Entry, ...]:
    """Entries waiting to be printed, less their top ``rows`` rows (drawn at ``width``) that a resize pushed
    into the terminal's history: a whole entry there is printed already, of one cut across only the rest is."""
    left: list[Entry] = []
    for entry in pending:
        drawn = render_entry(entry, width)
        if rows >= len(drawn):
            rows -= len(drawn)
        elif rows > 0:
            left.append(ProseRows(tuple(drawn[rows:])))
            rows = 0
        else:
            left.append(entry)
    return tuple(left)
