"""The live region in prompt_toolkit: a control that shows rows as they are (one line each, its content built once
per rows list) and a window that copies plain rows into the screen in one pass."""

from __future__ import annotations

from collections.abc import Callable

from prompt_toolkit.formatted_text import AnyFormattedText, StyleAndTextTuples
from prompt_toolkit.layout.containers import WindowAlign
from prompt_toolkit.layout.controls import GetLinePrefixCallable, UIContent, UIControl
from prompt_toolkit.layout.screen import Char, Screen, WritePosition
from prompt_toolkit.utils import get_cwidth

from dashfloat.ui._ptk_private import CHAR_CACHE, CopiedBody, CopyingWindow
from dashfloat.ui._text import Row


class RowsControl(UIControl):
    """The live region's rows. A FormattedTextControl joins them into one fragment list, then splits it into
    lines again, scans it for cursor marks and hashes it for its cache, on each of the several times a frame
    asks for its height or content (issue 19: a third of a frame while a stream scrolls); these rows are lines
    already, and the same rows list gives the same content."""

    def __init__(self, rows: Callable[[], list[Row]]) -> None:
        self._rows = rows
        self._content: tuple[list[Row], UIContent] | None = None
        self._plain: dict[int, list[dict[int, Char]] | None] = {}
        """Per width, for the current rows: each row's cells when every row fits it plainly (else None)."""
        self._cells: dict[Row, dict[int, Char]] = {}
        """The cells of the rows drawn last: a streamed paragraph's rows stay for many frames, moving up."""

    def create_content(self, width: int, height: int | None) -> UIContent:
        rows = self._rows()
        if self._content is None or self._content[0] is not rows:
            lines: list[StyleAndTextTuples] = [list(row) for row in rows]
            self._plain = {}
            content = _RowsContent(self, get_line=lambda i: lines[i], line_count=len(lines), show_cursor=False)
            self._content = (rows, content)
        return self._content[1]

    def plain_cells(self, width: int) -> list[dict[int, Char]] | None:
        """Each row's cells from column 0, when every row is plain ASCII within ``width``; else None."""
        self.create_content(width, None)
        if width in self._plain:
            return self._plain[width]
        assert self._content is not None
        rows = self._content[0]
        cells: list[dict[int, Char]] | None = [] if width >= 1 else None
        known: dict[Row, dict[int, Char]] = {}
        for row in rows:
            if cells is None:
                break
            row_cells = self._cells.get(row)  # plain: one cell a character, from column 0
            if row_cells is None and _fits_plainly(row, width):
                row_cells = {}
                for style, text, *_ in row:
                    for char in text:
                        row_cells[len(row_cells)] = CHAR_CACHE[char, style]
            if row_cells is None or len(row_cells) > width:
                cells = None
            else:
                known[row] = row_cells
                cells.append(row_cells)
        if cells is not None:
            self._cells = known
        self._plain[width] = cells
        return cells

    def preferred_height(
        self, width: int, max_available_height: int, wrap_lines: bool, get_line_prefix: GetLinePrefixCallable | None
    ) -> int | None:
        """As FormattedTextControl counts it: each line's height when wrapped, at most what is available."""
        content = self.create_content(width, None)
        if not wrap_lines:
            return content.line_count
        if get_line_prefix is None and self.plain_cells(width) is not None:
            return min(content.line_count, max_available_height) if content.line_count else 0  # one row each
        height = 0
        for i in range(content.line_count):
            height += content.get_height_for_line(i, width, get_line_prefix)
            if height >= max_available_height:
                return max_available_height
        return height


class _RowsContent(UIContent):
    """The rows' content: a plain row is one line high, known without measuring it (Window asks for every line's
    height to scroll, each frame, and measures a line of over 64 characters one character at a time)."""

    def __init__(
        self, control: RowsControl, get_line: Callable[[int], StyleAndTextTuples], line_count: int, show_cursor: bool
    ) -> None:
        super().__init__(get_line=get_line, line_count=line_count, show_cursor=show_cursor)
        self._control = control
        self._plain = control._plain  # the control's answers for these rows (a new dict for new rows)

    def get_height_for_line(
        self, lineno: int, width: int, get_line_prefix: GetLinePrefixCallable | None, slice_stop: int | None = None
    ) -> int:
        if (
            get_line_prefix is None
            and self._control.plain_cells(width) is not None
            and self._plain is self._control._plain
        ):
            return 1  # within the width, a cell a character (any slice of it too)
        return super().get_height_for_line(lineno, width, get_line_prefix, slice_stop)


class RowsWindow(CopyingWindow):
    """The live region's window. Rows that fit the width in plain ASCII (what a streamed paragraph is) are copied
    into the screen in one pass; Window copies cell by cell while it checks wrapping, widths, combining marks and
    records every cell's position for a cursor this window never shows (issue 19: a third of a streaming frame).
    Anything else is copied by Window itself."""

    def copy_body(
        self,
        ui_content: UIContent,
        new_screen: Screen,
        write_position: WritePosition,
        move_x: int,
        width: int,
        vertical_scroll: int = 0,
        horizontal_scroll: int = 0,
        wrap_lines: bool = False,
        highlight_lines: bool = False,
        vertical_scroll_2: int = 0,
        always_hide_cursor: bool = False,
        has_focus: bool = False,
        align: WindowAlign = WindowAlign.LEFT,
        get_line_prefix: Callable[[int, int], AnyFormattedText] | None = None,
    ) -> CopiedBody:
        control = self.content
        plain = not (vertical_scroll or vertical_scroll_2 or horizontal_scroll or has_focus or get_line_prefix)
        rows = control.plain_cells(width) if plain and isinstance(control, RowsControl) else None
        if rows is None or align != WindowAlign.LEFT:
            return super().copy_body(
                ui_content, new_screen, write_position, move_x, width, vertical_scroll, horizontal_scroll,
                wrap_lines, highlight_lines, vertical_scroll_2, always_hide_cursor, has_focus, align, get_line_prefix,
            )  # fmt: skip
        xpos, ypos = write_position.xpos + move_x, write_position.ypos
        visible_line_to_row_col: dict[int, tuple[int, int]] = {}
        for y, cells in enumerate(rows[: write_position.height]):
            if xpos:
                new_screen.data_buffer[ypos + y].update({xpos + x: char for x, char in cells.items()})
            else:
                new_screen.data_buffer[ypos + y].update(cells)
            visible_line_to_row_col[y] = (y, 0)
        new_screen.height = max(new_screen.height, ypos + write_position.height)
        return visible_line_to_row_col, {}


def _fits_plainly(line: Row, width: int) -> bool:
    """One cell per character (printable, one column each: ASCII, or the status bar's ● · ⠹), no escape to inject,
    within the width."""
    used = 0
    for style, text, *_ in line:
        if not text.isprintable() or "[ZeroWidthEscape]" in style:
            return False
        if not text.isascii() and not all(get_cwidth(char) == 1 for char in text):
            return False
        used += len(text)
    return used <= width
