"""Where the live region's top is after the terminal re-wrapped it on a resize (ADR 0033).

Pure: a function of the cells drawn, the cursor and the new width. A reflowing terminal (tmux, VTE,
kitty, iTerm2, Alacritty, WezTerm, Windows Terminal, xterm.js...) re-wraps every line printed at the old
width when the window narrows: a line of N cells becomes as many rows as it takes at the new width,
whether or not it was printed with wrapping. The cursor rides along with the cell it was on. Erasing
"as many rows up as were drawn" then starts too low and leaves stale rows above the redrawn region.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def terminal_reflows(env: Mapping[str, str]) -> bool:
    """Whether the terminal we draw into re-wraps its lines when it narrows (most do).

    xterm (it sets XTERM_VERSION), st and the Linux console cut lines at the new width instead, and the
    cursor keeps its row there. Inside tmux, tmux is the terminal we draw into, and it re-wraps.
    """
    if env.get("TMUX"):
        return True
    term = env.get("TERM", "")
    return not (env.get("XTERM_VERSION") or term == "linux" or term == "st" or term.startswith("st-"))


TMUX_RESIZE_SETTLE_S = 0.4
"""How long the UI draws nothing after a size change inside tmux. tmux re-wraps its grid at once but sets
the pane's size (so SIGWINCH) at most every 250 ms, holding a quicker resize until then; a frame drawn in
between is placed for the old size. 400 ms covers tmux's 250 ms and some lateness of a loaded machine."""


def terminal_wraps_erased_cells(env: Mapping[str, str]) -> bool:
    """Whether the terminal re-wraps a row by every cell ever written on it since the whole line was cleared.

    tmux does (measured, 3.3a): an erase to the end of the line (EL, ED, ECH, DCH) blanks cells but keeps them,
    so a short row drawn over a once-wide one splits into blank rows when the window narrows. Only a whole-line
    clear (EL 2, or ED/EL from the first column) forgets them. Other terminals were not measured.
    """
    return bool(env.get("TMUX"))


def overlaid_cells(kept: Sequence[int], drawn: Sequence[int]) -> list[int]:
    """The cells a row holds after ``drawn`` is written over ``kept`` and the rest erased to the end of the line.

    As terminals that wrap erased cells see it: the drawn cells, then blank cells up to the kept row's width.
    """
    short = sum(kept) - sum(drawn)
    return [*drawn, *([1] * short)] if short > 0 else list(drawn)


def resize_settle_s(env: Mapping[str, str]) -> float:
    """Seconds to draw nothing after a size change: tmux tells the program of a resize late (0 elsewhere)."""
    return TMUX_RESIZE_SETTLE_S if env.get("TMUX") else 0.0


def rewrapped_rows(cells: Sequence[int], columns: int) -> int:
    """Rows a line of cells (their widths, 1 or 2) takes once the terminal re-wraps it at ``columns``.

    Greedy, as terminals split: a row takes cells while they fit; a wide cell that does not fit moves
    whole to the next row. An empty line is still one row.
    """
    columns = max(1, columns)
    rows, used = 1, 0
    for width in cells:
        if used + width > columns and used > 0:
            rows += 1
            used = 0
        used += width
    return rows


def rows_above_cursor(lines: Sequence[Sequence[int]], cursor_row: int, cursor_col: int, columns: int) -> int:
    """Rows between the first line's top and the cursor once the terminal re-wrapped ``lines`` at ``columns``.

    ``lines`` are the cells written on each row of the region (trailing unwritten cells excluded);
    the cursor was at (``cursor_row``, ``cursor_col``) when they were drawn. The cursor stays on its
    cell, so on its own line it moves down by the rows its column now needs.
    """
    above = sum(rewrapped_rows(line, columns) for line in lines[:cursor_row])
    line = lines[cursor_row] if cursor_row < len(lines) else ()
    before = list(line[:cursor_col]) + [1] * max(0, cursor_col - len(line))
    return above + rewrapped_rows([*before, 1], columns) - 1


def stranded_rows(rows_above: int, cursor_row: int) -> int:
    """Rows of the live region above the cursor that are no longer on the screen after a resize.

    ``rows_above`` is where the region's top is above the cursor once re-wrapped (``rows_above_cursor``),
    ``cursor_row`` the cursor's row on the screen as a cursor-position report says it (1 = the top row). What
    does not fit above the cursor went into the terminal's history (a shorter window, or a narrower one with a
    tall region), where no cursor movement reaches it.
    """
    return max(0, rows_above - max(0, cursor_row - 1))


def cells_in_rows(cells: Sequence[int], rows: int, columns: int) -> int:
    """How many of a line's cells (their widths) the first ``rows`` rows hold once re-wrapped at ``columns``."""
    columns = max(1, columns)
    row, used = 0, 0
    for index, width in enumerate(cells):
        if used + width > columns and used > 0:
            row += 1
            used = 0
        if row >= rows:
            return index
        used += width
    return len(cells)


def stranded_lines(lines: Sequence[Sequence[int]], stranded: int, columns: int) -> tuple[int, int]:
    """Which drawn lines the ``stranded`` top rows (re-wrapped at ``columns``) hold: (whole lines, cells of the
    next line); the rest of that line is still on the screen."""
    for index, line in enumerate(lines):
        rows = rewrapped_rows(line, columns)
        if stranded < rows:
            return index, cells_in_rows(line, stranded, columns)
        stranded -= rows
    return len(lines), 0
