"""The input's window: no blank rows under a short line that follows a line taller than the window.

prompt_toolkit scrolls a wrapped window by whole lines, and inside a line only when the cursor's own line is
taller than the window. A short line after a long pasted one (a paste ending in a newline, then typing) was shown
alone at the window's top with blank rows under it, the long line out of sight. Here the rows left free under
the last line are filled from the lines above it, the one that does not fit whole shown by its last rows
(``vertical_scroll_2``, which prompt_toolkit applies to the first line shown, whichever it is).
"""

from __future__ import annotations

from prompt_toolkit.layout.controls import UIContent

from dashfloat.ui._ptk_private import WrapScrollingWindow


class InputWindow(WrapScrollingWindow):
    """A ``Window`` whose wrapped content never leaves rows blank under its end while lines above are unseen."""

    def scroll_when_wrapping(self, ui_content: UIContent, width: int, height: int) -> None:
        super().scroll_when_wrapping(ui_content, width, height)
        if width <= 0 or self.vertical_scroll_2 or self.vertical_scroll <= 0:
            return  # nothing above, or already scrolled inside the cursor's own line (it fills the window)
        free = height
        for lineno in range(self.vertical_scroll, ui_content.line_count):
            free -= ui_content.get_height_for_line(lineno, width, self.get_line_prefix)
            if free <= 0:
                return
        lineno = self.vertical_scroll
        while free > 0 and lineno > 0:
            lineno -= 1
            rows = ui_content.get_height_for_line(lineno, width, self.get_line_prefix)
            self.vertical_scroll = lineno
            if rows > free:
                self.vertical_scroll_2 = rows - free  # its first rows stay above the window
            free -= rows
