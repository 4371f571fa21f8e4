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
