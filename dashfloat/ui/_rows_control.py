"""A prompt_toolkit control that shows rows as they are: one line each, its content built once per rows list."""

from __future__ import annotations

from collections.abc import Callable

from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.layout.controls import GetLinePrefixCallable, UIContent, UIControl

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
