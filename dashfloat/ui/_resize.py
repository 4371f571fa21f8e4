"""Resize handling: the live region erased from where the terminal's re-wrap left its top, and no frame drawn while
a resize is still to be erased or settles (ADR 0033, 0035).

prompt_toolkit's own resize erase counts the rows it drew, not the rows the terminal re-wrapped them into; a key or
the tick may also draw before SIGWINCH is handled. So the shell routes every frame through ``ResizeGuard.draw``,
every size the renderer reads through ``output_size`` and every cursor-position report through ``on_cursor_row``
(ui/_ptk_private.py replaces them).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from prompt_toolkit.renderer import CPR_Support

from dashfloat.ui import _ptk_private as ptk
from dashfloat.ui._reflow import (
    overlaid_cells,
    resize_settle_s,
    rows_above_cursor,
    stranded_rows,
    terminal_reflows,
    terminal_wraps_erased_cells,
)

if TYPE_CHECKING:
    from prompt_toolkit.application import Application
    from prompt_toolkit.data_structures import Size
    from prompt_toolkit.layout.screen import Screen

ERASE_BELOW = "\r\x1b[2K\x1b[C\x1b[J\r"
"""Erase the cursor's row and all below it, never with ED at the screen's first cell: tmux (scroll-on-clear)
copies a screen erased from its home position into its history, stale frame and all."""
CPR_WAIT_S = 2.0
"""How long after a resize the erase waits for the cursor-position report it asked for; then it erases
without it (a terminal that stopped answering), and rows in the terminal's history may show twice."""
UNWRAPPED_COLUMNS = 1 << 20
"""A width no row reaches: how a terminal that cuts lines (xterm) keeps each row on a resize."""

Strand = Callable[[list[list[int]], int, int], None]
"""Told that a resize pushed the live region's top rows into the terminal's history: (the cells drawn on each line
above the cursor, how many of them went, the columns they were re-wrapped at)."""


class ResizeGuard:
    """One application's live region across resizes: when to erase it, from where, and when frames may be drawn."""

    def __init__(
        self,
        app: Application[Any],
        env: Mapping[str, str],
        *,
        draw: ptk.Redraw,
        terminal_size: Callable[[], Size],
        report_cursor_row: Callable[[int], None],
        changed: Callable[[], None],
        strand: Strand,
    ) -> None:
        """``draw``, ``terminal_size``, ``report_cursor_row``: the application's own, which this guard's replace;
        ``changed``: something is to be drawn; ``strand``: rows went into the terminal's history."""
        self._app = app
        self._draw = draw
        self._terminal_size = terminal_size
        self._report_cursor_row = report_cursor_row
        self._changed = changed
        self._strand = strand
        self._reflows = terminal_reflows(env)
        self._settle_s = resize_settle_s(env)
        self._wraps_erased = terminal_wraps_erased_cells(env)
        self._kept_widths: dict[int, int] = {}
        """Per row of the live region: the widest drawing since the renderer last erased from the region's top,
        which the terminal still holds as cells (what tmux re-wraps on a resize)."""
        self._resized_at = 0.0
        self._probe_sent: float | None = None
        self._probe_row: int | None = None
        self._size_seen: Size | None = None
        self._settle_until = 0.0
        self._frame_size: Size | None = None

    def waiting(self) -> bool:
        """Whether time alone will bring a frame: a probe's answer is awaited, or a resize settles."""
        return self._probe_sent is not None or time.monotonic() < self._settle_until

    def tick_size(self) -> Size:
        """The size the tick lays the state out at: while a resize settles, the size the region was drawn at."""
        size = self._app.output.get_size()
        if self.settling() and (drawn_at := ptk.frame_size(self._app.renderer)) is not None:
            size = drawn_at  # the region is still to be erased as it was drawn: keep its size
        return size

    def region_moved_down(self, rows: int) -> None:
        """The live region's top ``rows`` rows were left to the scrollback: the widths kept move up with it."""
        self._kept_widths = {y - rows: width for y, width in self._kept_widths.items() if y >= rows}

    def draw(self, render_as_done: bool = False) -> None:
        """Every frame: none while a resize settles (the tick draws once it has: ``changed``).

        The frame is drawn at the size just checked, even if the window changes while it is drawn: a size read
        anew by the renderer would draw the new size over a region not yet erased for it (seen under load).
        """
        if not render_as_done and self.settling():
            self._changed()
            return
        self._frame_size = self._size_seen
        try:
            self._draw(render_as_done)
        finally:
            self._frame_size = None

    def output_size(self) -> Size:
        """The terminal's size; during a frame, the size that frame was checked at."""
        return self._frame_size or self._terminal_size()

    def settling(self) -> bool:
        """Whether the live region must not be drawn yet: a resize is still to be erased, or settles.

        Inside tmux a resize reaches the program up to 250 ms after tmux re-wrapped its screen, so a frame
        drawn soon after one resize may meet the re-wrap of the next one, unannounced (ADR 0035).
        """
        return self.erase_if_resized() or time.monotonic() < self._settle_until

    def before_render(self) -> None:
        """Before each frame: erase first if the window changed size."""
        self.erase_if_resized()
        if self._app.renderer.last_rendered_screen is None:
            # A reset renderer draws after erasing from the region's top (ED from the first column): the
            # terminal forgets every cell below, so the rows hold only what is drawn from now on.
            self._kept_widths.clear()

    def after_render(self) -> None:
        """Note how wide each row was drawn (tmux re-wraps by the widest drawing, not by the last frame)."""
        screen = self._app.renderer.last_rendered_screen
        if not self._wraps_erased or screen is None:
            return
        has_style = ptk.styles_drawn(self._app.renderer)
        kept = self._kept_widths
        for y in range(screen.height):
            width = drawn_width(screen, y, has_style)
            if width > kept.get(y, 0):
                kept[y] = width

    def on_cursor_row(self, row: int) -> None:
        """A cursor-position report: the answer to the probe sent after a resize, else the renderer's."""
        if self._probe_sent is not None and self._probe_row is None:
            self._probe_row = row
            self.erase_if_resized()
            self._changed()
            return
        self._report_cursor_row(row)

    def erase_if_resized(self) -> bool:
        """Erase the live region if the window changed size since it was drawn; whether that still waits.

        First the cursor's row is asked for (CPR, where the terminal answers them): rows of the region that
        went into the terminal's history are then known, and are not drawn again (ADR 0035).
        """
        size = self._app.output.get_size()
        now = time.monotonic()
        if size != self._size_seen:
            if self._size_seen is not None:
                self._resized_at = now
                if self._settle_s:
                    self._settle_until = now + self._settle_s
            self._size_seen = size
        renderer = self._app.renderer
        last = ptk.frame_size(renderer)
        if last is None or last == size:
            return False
        if renderer.cpr_support == CPR_Support.SUPPORTED and now - self._resized_at < CPR_WAIT_S:
            if self._probe_sent is None:
                if renderer.waiting_for_cpr:
                    return True  # the renderer's own request is answered first: ask after it
                self._probe_sent, self._probe_row = now, None
                self._app.output.ask_for_cpr()
                return True
            if self._probe_row is None:
                return True
        self._erase(size, self._probe_row)
        self._probe_sent = self._probe_row = None
        return False

    def _erase(self, size: Size, cursor_row: int | None) -> None:
        renderer = self._app.renderer
        screen, cursor, output = renderer.last_rendered_screen, ptk.frame_cursor(renderer), self._app.output
        up, lines = cursor.y, []
        if screen is not None:
            has_style = ptk.styles_drawn(renderer)
            if self._wraps_erased:
                lines = [
                    overlaid_cells([1] * self._kept_widths.get(y, 0), drawn_cells(screen, y, has_style))
                    for y in range(cursor.y + 1)
                ]
            else:
                lines = [drawn_cells(screen, y, has_style) for y in range(cursor.y + 1)]
        columns = size.columns if self._reflows else UNWRAPPED_COLUMNS
        if self._reflows and lines:
            up = rows_above_cursor(lines, cursor.y, cursor.x, columns)
        if cursor_row is not None:
            stranded = stranded_rows(up, cursor_row)
            if stranded:
                self._strand(lines[: cursor.y], stranded, columns)
                up -= stranded
        output.write_raw("\r")
        output.cursor_up(up)
        output.write_raw(ERASE_BELOW)
        output.reset_attributes()
        output.enable_autowrap()
        output.flush()
        renderer.reset(leave_alternate_screen=False)
        renderer.request_absolute_cursor_position()
        self._changed()


def drawn_width(screen: Screen, y: int, has_style: Mapping[str, bool] | None) -> int:
    """The columns prompt_toolkit wrote on row ``y`` (``drawn_cells``' total), found from the row's end: per frame."""
    row = screen.data_buffer[y]
    if not row:
        return 0
    x = max(row)
    while x >= 0:
        ch = row.get(x)
        if ch is not None and (ch.char != " " or (has_style is not None and has_style[ch.style])):
            return x + max(1, ch.width)
        x -= 1
    return 0


def drawn_cells(screen: Screen, y: int, has_style: Mapping[str, bool] | None) -> list[int]:
    """The widths of the cells prompt_toolkit wrote on row ``y`` (it skips trailing unstyled blanks)."""
    row = screen.data_buffer[y]
    written = [x for x, ch in row.items() if ch.char != " " or (has_style is not None and has_style[ch.style])]
    end = max(written, default=-1)
    cells: list[int] = []
    x = 0
    while x <= end:
        width = max(1, row[x].width)
        cells.append(width)
        x += width
    return cells
