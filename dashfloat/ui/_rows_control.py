"""The live region in prompt_toolkit: a control that shows rows as they are (one line each, its content built once
per rows list) and a window that copies plain rows into the screen in one pass."""

from __future__ import annotations

from collections.abc import Callable

from prompt_toolkit.formatted_text import AnyFormattedText, StyleAndTextTuples
from prompt_toolkit.layout.containers import Window, WindowAlign
from prompt_toolkit.layout.controls import GetLinePrefixCallable, UIContent, UIControl
from prompt_toolkit.layout.screen import _CHAR_CACHE, Screen, WritePosition

from dashfloat.ui._text import Row


class RowsControl(UIControl):
    """The live region's rows. A FormattedTextControl joins them into one fragment list, then splits it into
    lines again, scans it for cursor marks and hashes it for its cache, on each of the several times a frame
    asks for its height or content (issue 19: a third of a frame while a stream scrolls); these rows are lines
    already, and the same rows list gives the same content."""

    def __init__(self, rows: Callable[[], list[Row]]) -> None:
        self._rows = rows
        self._content: tuple[list[Row], UIContent] | None = None

    def create_content(self, width: int, height: int | None) -> UIContent:
        rows = self._rows()
        if self._content is None or self._content[0] is not rows:
            lines: list[StyleAndTextTuples] = [list(row) for row in rows]
            self._content = (rows, UIContent(get_line=lambda i: lines[i], line_count=len(lines), show_cursor=False))
        return self._content[1]

    def preferred_height(
        self, width: int, max_available_height: int, wrap_lines: bool, get_line_prefix: GetLinePrefixCallable | None
    ) -> int | None:
        """As FormattedTextControl counts it: each line's height when wrapped, at most what is available."""
        content = self.create_content(width, None)
        if not wrap_lines:
            return content.line_count
        height = 0
        for i in range(content.line_count):
            height += content.get_height_for_line(i, width, get_line_prefix)
            if height >= max_available_height:
                return max_available_height
        return height


class RowsWindow(Window):
    """The live region's window. Rows that fit the width in plain ASCII (what a streamed paragraph is) are copied
    into the screen in one pass; Window copies cell by cell while it checks wrapping, widths, combining marks and
    records every cell's position for a cursor this window never shows (issue 19: a third of a streaming frame).
    Anything else is copied by Window itself."""

    def _copy_body(
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
    ) -> tuple[dict[int, tuple[int, int]], dict[tuple[int, int], tuple[int, int]]]:
        lines = [ui_content.get_line(i) for i in range(min(ui_content.line_count, write_position.height))]
        plain = not (vertical_scroll or vertical_scroll_2 or horizontal_scroll or has_focus or get_line_prefix)
        if not (plain and align == WindowAlign.LEFT and all(_fits_plainly(line, width) for line in lines)):
            return super()._copy_body(
                ui_content, new_screen, write_position, move_x, width, vertical_scroll, horizontal_scroll,
                wrap_lines, highlight_lines, vertical_scroll_2, always_hide_cursor, has_focus, align, get_line_prefix,
            )  # fmt: skip
        xpos, ypos = write_position.xpos + move_x, write_position.ypos
        visible_line_to_row_col: dict[int, tuple[int, int]] = {}
        for y, line in enumerate(lines):
            cells = new_screen.data_buffer[ypos + y]
            x = xpos
            for style, text, *_ in line:
                for char in text:
                    cells[x] = _CHAR_CACHE[char, style]
                    x += 1
            visible_line_to_row_col[y] = (y, 0)
        new_screen.height = max(new_screen.height, ypos + write_position.height)
        return visible_line_to_row_col, {}


def _fits_plainly(line: StyleAndTextTuples, width: int) -> bool:
    """One cell per character, no escape to inject, within the width."""
    used = 0
    for style, text, *_ in line:
        if not (text.isascii() and text.isprintable()) or "[ZeroWidthEscape]" in style:
            return False
        used += len(text)
    return used <= width
