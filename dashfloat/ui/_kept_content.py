"""The prompt's content kept while nothing it shows changed: prompt_toolkit makes a BufferControl's content (its
input processors run on each line) every time a window asks for its height or draws it, four times a frame,
though the input stays the same for the whole of a streamed answer (issue 19, ADR 0044)."""

from __future__ import annotations

from collections.abc import Hashable

from prompt_toolkit.application.current import get_app
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.enums import EditingMode
from prompt_toolkit.layout.controls import BufferControl, UIContent
from prompt_toolkit.layout.processors import Processor

KEPT_CONTENTS = 4
"""Contents kept at once: the sizes one frame asks for (two), and the last frame's while the size changes."""


class KeptBufferControl(BufferControl):
    """A BufferControl over ``buffer`` with the default processors (and any ``input_processors`` given, which must
    read only the document), lexer and search, whose content is made again
    only when something it is made from changed: the document (text, cursor, selection), the size asked for,
    the focus, the search text, the editing mode, the app being done. While completions are shown (the menu's
    position is read from them) it is made every time, as prompt_toolkit does."""

    def __init__(self, buffer: Buffer, input_processors: list[Processor] | None = None) -> None:
        """``input_processors``: ones whose output depends only on the document (a tab's expansion)."""
        super().__init__(buffer, input_processors=input_processors)
        self._kept: dict[Hashable, UIContent] = {}
        """A few sizes are asked for each frame (a window's height with a height of 1, its drawing with its own)."""

    def content_key(self, width: int, height: int, preview_search: bool) -> Hashable | None:
        """Everything ``create_content`` reads, or None when it may read more (a completion or a selection, which
        are mutable objects, is under way)."""
        app = get_app()
        buffer = self.buffer
        if buffer.complete_state is not None or buffer.selection_state is not None:
            return None
        return (
            buffer.text,
            buffer.cursor_position,
            width,
            height,
            preview_search,
            app.layout.current_control is self,
            app.is_done,
            app.editing_mode is EditingMode.VI,  # vi's multiple cursors are drawn by a processor
            self.search_state.text,
            self.search_state.ignore_case(),
        )

    def create_content(self, width: int, height: int, preview_search: bool = False) -> UIContent:
        self.buffer.load_history_if_not_yet_loaded()  # what prompt_toolkit's does first, on each call
        key = self.content_key(width, height, preview_search)
        if key is None:
            return super().create_content(width, height, preview_search)
        content = self._kept.get(key)
        if content is None:
            if len(self._kept) >= KEPT_CONTENTS:
                self._kept.clear()
            content = self._kept[key] = super().create_content(width, height, preview_search)
        return content
