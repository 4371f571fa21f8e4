"""Every private prompt_toolkit name the UI uses, and every prompt_toolkit method it replaces at run time.

prompt_toolkit promises nothing about these; each use below says in one line why its public API does not do.
``RELIED_ON`` lists each name with what is used of it (a method and its parameters, an attribute and its type);
``tests/ui/test_ptk_private.py`` checks every entry against the installed prompt_toolkit and that no other module
names a private one, and ``pyproject.toml`` pins the minor range they were read from: a release that moves one fails
that test by name, not the TUI silently (ADR 0072).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

import prompt_toolkit.renderer
from prompt_toolkit.data_structures import Point, Size
from prompt_toolkit.layout.containers import Window, WindowAlign
from prompt_toolkit.layout.mouse_handlers import MouseHandlers
from prompt_toolkit.layout.screen import _CHAR_CACHE, Screen
from prompt_toolkit.styles import BaseStyle, DummyStyleTransformation

if TYPE_CHECKING:
    from prompt_toolkit.application import Application
    from prompt_toolkit.cache import FastDictCache
    from prompt_toolkit.formatted_text import AnyFormattedText
    from prompt_toolkit.layout.containers import WindowRenderInfo
    from prompt_toolkit.layout.controls import UIContent
    from prompt_toolkit.layout.screen import Char, WritePosition
    from prompt_toolkit.output import Output
    from prompt_toolkit.renderer import Renderer
    from prompt_toolkit.styles import Attrs

    class Redraw(Protocol):
        """``Application._redraw``'s signature."""

        def __call__(self, render_as_done: bool = False) -> None:
            """Draw a frame now (``render_as_done``: the last one, at exit)."""


_APPLICATION = "prompt_toolkit.application.Application"
_RENDERER = "prompt_toolkit.renderer.Renderer"
_WINDOW = "prompt_toolkit.layout.containers.Window"
_RENDERING = "prompt_toolkit.renderer"
_COPY_BODY_PARAMETERS: Final = (
    "self", "ui_content", "new_screen", "write_position", "move_x", "width", "vertical_scroll", "horizontal_scroll",
    "wrap_lines", "highlight_lines", "vertical_scroll_2", "always_hide_cursor", "has_focus", "align", "get_line_prefix",
)  # fmt: skip
SCREEN_DIFF_PARAMETERS: Final = (
    "app", "output", "screen", "current_pos", "color_depth", "previous_screen", "last_style", "is_done",
    "full_screen", "attrs_for_style_string", "style_string_has_style", "size", "previous_width",
)  # fmt: skip
"""``prompt_toolkit.renderer._output_screen_diff``'s: the renderer calls ours (ui/_screen_diff.py) with these."""

RELIED_ON: Final[tuple[tuple[str, str, str, tuple[str, ...] | str], ...]] = (
    # (the module or class that has it, the name, its kind, then: a function's, method's or class's parameters in
    # order, a class's without self; an attribute's type, on the module or on an instance once a frame is drawn)
    # private
    (_APPLICATION, "_redraw", "method", ("self", "render_as_done")),
    (_APPLICATION, "_on_resize", "method", ("self",)),
    (_RENDERER, "_last_size", "attribute", "prompt_toolkit.data_structures.Size"),
    (_RENDERER, "_cursor_pos", "attribute", "prompt_toolkit.data_structures.Point"),
    (_RENDERER, "_last_screen", "attribute", "prompt_toolkit.layout.screen.Screen"),
    (_RENDERER, "_min_available_height", "attribute", "builtins.int"),
    (_RENDERER, "_style_string_has_style", "attribute", "builtins.dict"),
    ("prompt_toolkit.layout.containers.WindowRenderInfo", "_y_offset", "attribute", "builtins.int"),
    (_WINDOW, "_copy_body", "method", _COPY_BODY_PARAMETERS),
    (_WINDOW, "_scroll_when_linewrapping", "method", ("self", "ui_content", "width", "height")),
    (_RENDERING, "_output_screen_diff", "function", SCREEN_DIFF_PARAMETERS),
    (_RENDERING, "_StyleStringToAttrsCache", "class", ("get_attrs_for_style_str", "style_transformation")),
    (_RENDERING, "_StyleStringHasStyleCache", "class", ("style_string_to_attrs",)),
    ("prompt_toolkit.layout.screen", "_CHAR_CACHE", "attribute", "prompt_toolkit.cache.FastDictCache"),
    # public, but replaced at run time: prompt_toolkit must go on calling them through the attribute
    ("prompt_toolkit.output.Output", "get_size", "method", ("self",)),
    (_RENDERER, "report_absolute_cursor_row", "method", ("self", "row")),
    (
        "prompt_toolkit.layout.mouse_handlers.MouseHandlers",
        "set_mouse_handler_for_range",
        "method",
        ("self", "x_min", "x_max", "y_min", "y_max", "handler"),
    ),
    ("prompt_toolkit.input.ansi_escape_sequences", "ANSI_SEQUENCES", "attribute", "builtins.dict"),
)  # fmt: skip
"""What this module relies on, one entry per name: tests/ui/test_ptk_private.py reads it."""


# ------------------------------------------------------------ the application's frames, resizes and size


def own_redraw(app: Application[Any]) -> Redraw:
    """The application's own frame drawing, to call from the one that replaces it."""
    # private: the only way to draw a frame now (invalidate() schedules one for later)
    return app._redraw


def replace_redraw(app: Application[Any], redraw: Redraw) -> None:
    """Every frame of ``app`` (a key, ``invalidate``, a resize, the last one at exit) is drawn by ``redraw``."""
    # private: every frame is drawn by it; nothing public (before_render) can hold one back
    app._redraw = redraw  # type: ignore[method-assign]


def replace_resize_handler(app: Application[Any], handler: Callable[[], None]) -> None:
    """SIGWINCH (and the size poll) call ``handler`` instead of prompt_toolkit's erase-and-redraw."""
    # private: no public resize hook; prompt_toolkit's erase counts the rows it drew, not those re-wrapped (ADR 0033)
    app._on_resize = handler  # type: ignore[method-assign]


def replace_output_size(output: Output, get_size: Callable[[], Size]) -> None:
    """Everything that asks ``output`` for the terminal's size (the renderer, mid-frame too) asks ``get_size``."""
    # public, replaced: the renderer reads the size itself while it draws; nothing gives it the size to draw at
    output.get_size = get_size  # type: ignore[method-assign]


def replace_cursor_row_report(renderer: Renderer, report: Callable[[int], None]) -> None:
    """A cursor-position report from the terminal reaches ``report`` instead of the renderer."""
    # public, replaced: the terminal's answers reach only the renderer, even to a request the UI sent itself
    renderer.report_absolute_cursor_row = report  # type: ignore[method-assign, assignment]


ALT_ENTER: Final = "\x1b\r"
"""What a terminal sends for Alt-Enter (Esc Enter) in one write."""


def alt_enter_as_ctrl_j() -> None:
    """Alt-Enter, when its two bytes come together, is read as one key, Ctrl-J (a line break), not as Esc then Enter.

    The key table is public, extended at run time: with no binding of Esc then Enter, an Esc and a quick Enter typed
    after it are two keys (the Esc cancels, the Enter submits), never a line break (issue 37).
    """
    from prompt_toolkit.input.ansi_escape_sequences import ANSI_SEQUENCES
    from prompt_toolkit.keys import Keys

    ANSI_SEQUENCES.setdefault(ALT_ENTER, Keys.ControlJ)


# ------------------------------------------------------------ what the renderer drew last


def frame_size(renderer: Renderer) -> Size | None:
    """The size the last frame was drawn at (None after a reset)."""
    # private: the public API has only the terminal's size now
    return renderer._last_size


def frame_cursor(renderer: Renderer) -> Point:
    """Where the renderer left the cursor, from the live region's top-left cell."""
    # private: nothing public says where the cursor is or moves it to the region's top
    return renderer._cursor_pos


def styles_drawn(renderer: Renderer) -> Mapping[str, bool] | None:
    """Per style string, whether a blank in it is drawn (the diff skips unstyled trailing blanks)."""
    # private: the renderer's own answer, by which its diff decides which cells it writes
    return renderer._style_string_has_style


def window_top(info: WindowRenderInfo) -> int:
    """The screen row a window's last drawing started at."""
    # private: WindowRenderInfo has no public position of the window on the screen
    return info._y_offset


def move_region_top_down(renderer: Renderer, rows: int) -> None:
    """The live region now starts ``rows`` rows lower: the rows above stay on screen as the terminal's history, and
    the next frame is diffed against what is left of the last one."""
    # private: nothing public moves the region's top; the renderer would erase and draw the rows again
    screen, cursor = renderer._last_screen, renderer._cursor_pos
    assert screen is not None
    shifted = Screen(initial_width=screen.width, initial_height=screen.height - rows)
    for y, cells in screen.data_buffer.items():
        if y >= rows:
            shifted.data_buffer[y - rows] = cells
    for y, escapes in screen.zero_width_escapes.items():
        if y >= rows:
            shifted.zero_width_escapes[y - rows] = escapes
    renderer._last_screen = shifted
    renderer._cursor_pos = Point(x=cursor.x, y=cursor.y - rows)
    renderer._min_available_height = max(0, renderer._min_available_height - rows)


# ------------------------------------------------------------ the screen diff and the cells


CopiedBody = tuple[dict[int, tuple[int, int]], dict[tuple[int, int], tuple[int, int]]]
"""``Window._copy_body``'s answer: visible line -> (content row, column), and (row, column) -> screen (y, x)."""

ScreenDiff = Callable[..., tuple[Point, str | None]]


def screen_diff() -> ScreenDiff:
    """The function every renderer writes a frame's changes with."""
    # private: the renderer calls this module function by name; it takes no other diff
    return prompt_toolkit.renderer._output_screen_diff


def replace_screen_diff(diff: ScreenDiff) -> None:
    """Every renderer in this process writes its frames' changes with ``diff`` (``SCREEN_DIFF_PARAMETERS``)."""
    # private: the renderer calls this module function by name; it takes no other diff
    prompt_toolkit.renderer._output_screen_diff = diff


def style_caches(style: BaseStyle) -> tuple[Mapping[str, Attrs], Mapping[str, bool]]:
    """What a renderer passes a screen diff for ``style`` (its tests call both diffs as the renderer does)."""
    # private: the renderer's own caches; the diffs read them as mappings only
    attrs = prompt_toolkit.renderer._StyleStringToAttrsCache(style.get_attrs_for_style_str, DummyStyleTransformation())
    return attrs, prompt_toolkit.renderer._StyleStringHasStyleCache(attrs)


def replace_mouse_handler_range(setter: Callable[[MouseHandlers, int, int, int, int, Any], None]) -> None:
    """Every window's mouse handlers are set by ``setter`` (a public method, replaced for the whole process)."""
    # public, replaced: Window calls it on its MouseHandlers each frame; no window takes another
    MouseHandlers.set_mouse_handler_for_range = setter  # type: ignore[method-assign, assignment]


CHAR_CACHE: Final[FastDictCache[tuple[str, str], Char]] = _CHAR_CACHE
"""The cell per (character, style) that Window's own copy uses (private: no public factory shares its cells)."""


# ------------------------------------------------------------ windows that take over a private step


class CopyingWindow(Window):
    """A Window whose copy of its content into the screen a subclass may take over: ``copy_body``."""

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
        """Window's own copy: where each content row and cell landed on the screen."""
        # private: Window copies its content into the screen in no public step
        return Window._copy_body(
            self, ui_content, new_screen, write_position, move_x, width, vertical_scroll, horizontal_scroll,
            wrap_lines, highlight_lines, vertical_scroll_2, always_hide_cursor, has_focus, align, get_line_prefix,
        )  # fmt: skip

    def _copy_body(self, *args: Any, **kwargs: Any) -> CopiedBody:
        return self.copy_body(*args, **kwargs)


class WrapScrollingWindow(Window):
    """A Window whose scrolling of wrapped lines a subclass may adjust: ``scroll_when_wrapping``."""

    def scroll_when_wrapping(self, ui_content: UIContent, width: int, height: int) -> None:
        """Window's own scroll, which sets ``vertical_scroll`` and ``vertical_scroll_2``."""
        # private: Window scrolls wrapped lines in no public step
        Window._scroll_when_linewrapping(self, ui_content, width, height)

    def _scroll_when_linewrapping(self, ui_content: UIContent, width: int, height: int) -> None:
        self.scroll_when_wrapping(ui_content, width, height)
