"""The run-writing screen diff draws exactly what prompt_toolkit's own diff draws: for any last frame and any new
one, a terminal fed either output shows the same cells, attributes and cursor, and the renderer keeps the same
cursor position and style."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import pyte
from hypothesis import given, settings
from hypothesis import strategies as st
from prompt_toolkit.data_structures import Point, Size
from prompt_toolkit.layout.mouse_handlers import MouseHandlers
from prompt_toolkit.layout.screen import Char, Screen
from prompt_toolkit.output import ColorDepth
from prompt_toolkit.output.vt100 import Vt100_Output
from prompt_toolkit.styles import Style

from dashfloat.ui import _ptk_private as ptk
from dashfloat.ui._screen_diff import (
    ORIGINAL_SCREEN_DIFF,
    ORIGINAL_SET_MOUSE_HANDLER_FOR_RANGE,
    install,
    output_screen_diff,
    set_mouse_handler_for_range,
)

COLUMNS, LINES = 12, 6
STYLE = Style.from_dict({"a": "bold", "b": "#ff0000", "c": "reverse"})
# "class:a" and "bold" look the same: the diff may skip setting attributes between them, as the original does.
STYLES = st.sampled_from(["", "class:a", "class:b", "class:c", "bold"])
# One column, two (CJK), a letter with its combining mark, a blank. No cell of zero columns: Window adds a
# combining mark to the cell before it, and the original's cursor count goes wrong after such a cell.
CHARS = st.sampled_from(["a", "b", " ", "界", "e\u0301"])
ESCAPES = st.sampled_from(["\x1b[1m", "\x1b[0m", "\x1b]8;;x\x1b\\"])


@dataclass
class Cells:
    rows: dict[int, dict[int, tuple[str, str]]]
    escapes: dict[int, dict[int, str]]
    height: int


CELLS = st.builds(
    Cells,
    st.dictionaries(
        st.integers(0, LINES + 1), st.dictionaries(st.integers(0, COLUMNS + 1), st.tuples(CHARS, STYLES), max_size=14)
    ),
    st.dictionaries(st.integers(0, LINES), st.dictionaries(st.integers(0, COLUMNS), ESCAPES, max_size=6), max_size=4),
    st.integers(0, LINES + 2),
)


def _screen(cells: Cells, dotted: bool = False) -> Screen:
    screen = Screen(default_char=Char("·", "class:b")) if dotted else Screen()  # what is there where nothing is
    for y, row in cells.rows.items():
        for x, (char, style) in row.items():
            screen.data_buffer[y][x] = Char(char, style)
    for y, escapes in cells.escapes.items():
        screen.zero_width_escapes[y].update(escapes)
    screen.height = cells.height
    return screen


class _App:
    """What the diff asks of the application: the focused window, for the cursor position."""

    class layout:  # the attribute of that name
        current_window = None


class _CountingOutput(Vt100_Output):
    writes = 0

    def write(self, data: str) -> None:
        self.writes += 1
        super().write(data)


def _diff(
    diff: Any, screen: Screen, previous: Screen | None, pos: Point, last_style: str | None, width: int, done: bool
) -> tuple[str, Point, str | None]:
    return _diff_counted(diff, screen, previous, pos, last_style, width, done)[:3]


def _diff_counted(
    diff: Any, screen: Screen, previous: Screen | None, pos: Point, last_style: str | None, width: int, done: bool
) -> tuple[str, Point, str | None, int]:
    out = io.StringIO()
    output = _CountingOutput(out, lambda: Size(rows=LINES, columns=COLUMNS), term="xterm-256color")
    attrs, has_style = ptk.style_caches(STYLE)
    new_pos, new_style = diff(
        _App(),
        output,
        screen,
        pos,
        ColorDepth.DEPTH_8_BIT,
        previous,
        last_style,
        done,
        full_screen=False,
        attrs_for_style_string=attrs,
        style_string_has_style=has_style,
        size=Size(rows=LINES, columns=COLUMNS),
        previous_width=width,
    )
    output.flush()
    return out.getvalue(), new_pos, new_style, output.writes


def _terminal(data: str) -> tuple[list[list[tuple[str, str, str, bool, bool]]], tuple[int, int]]:
    screen = pyte.Screen(COLUMNS, LINES)
    pyte.Stream(screen).feed(data)
    cells = [
        [(c.data, c.fg, c.bg, c.bold, c.reverse) for c in (screen.buffer[y][x] for x in range(COLUMNS))]
        for y in range(LINES)
    ]
    return cells, (screen.cursor.x, screen.cursor.y)


@settings(max_examples=300, deadline=None)
@given(CELLS, CELLS, st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_the_runs_draw_what_the_original_draws(
    last: Cells, new: Cells, first_frame: bool, done: bool, width_changed: bool, dotted: bool
) -> None:
    # The last frame drawn from an empty terminal by the original: where the cursor and the style are now.
    drawn, pos, style = _diff(ORIGINAL_SCREEN_DIFF, _screen(last), None, Point(0, 0), None, 0, False)
    previous = None if first_frame else _screen(last)
    width = COLUMNS + 1 if width_changed else COLUMNS
    # Each diff gets its own copies: a diff reads through defaultdicts, which add the rows and cells it looks at.
    theirs = _diff(ORIGINAL_SCREEN_DIFF, _screen(new, dotted), previous, pos, style, width, done)
    previous = None if first_frame else _screen(last)
    ours = _diff(output_screen_diff, _screen(new, dotted), previous, pos, style, width, done)
    assert ours[1:] == theirs[1:]
    assert _terminal(drawn + ours[0]) == _terminal(drawn + theirs[0])


def test_a_changed_row_is_one_write_and_an_unchanged_row_none() -> None:
    last = Cells({0: {x: ("a", "") for x in range(10)}, 1: {0: ("b", "")}}, {}, 2)
    new = Cells({0: {x: ("a", "") for x in range(10)}, 1: {x: ("b", "class:a") for x in range(10)}}, {}, 2)
    drawn, pos, style = _diff(ORIGINAL_SCREEN_DIFF, _screen(last), None, Point(0, 0), None, 0, False)
    theirs, *_, their_writes = _diff_counted(ORIGINAL_SCREEN_DIFF, _screen(new), _screen(last), pos, style, 12, False)
    ours, *_, our_writes = _diff_counted(output_screen_diff, _screen(new), _screen(last), pos, style, 12, False)
    assert their_writes - our_writes == 9  # the original writes the ten cells one by one
    assert "b" * 10 in ours and "a" not in ours  # the unchanged first row is not written again
    assert _terminal(drawn + ours) == _terminal(drawn + theirs)


def test_install_replaces_the_renderers_diff() -> None:
    install()
    assert ptk.screen_diff() is output_screen_diff
    assert MouseHandlers.set_mouse_handler_for_range is set_mouse_handler_for_range


@given(st.integers(0, 5), st.integers(0, 8), st.integers(0, 5), st.integers(0, 8))
def test_mouse_handlers_are_set_on_the_same_cells(x_min: int, x_max: int, y_min: int, y_max: int) -> None:
    def handler(event: object) -> None:
        return None

    theirs, ours = MouseHandlers(), MouseHandlers()
    for handlers in (theirs, ours):  # a cell set before, inside the area and outside it
        ORIGINAL_SET_MOUSE_HANDLER_FOR_RANGE(handlers, 1, 3, 1, 3, print)
    ORIGINAL_SET_MOUSE_HANDLER_FOR_RANGE(theirs, x_min, x_max, y_min, y_max, handler)
    set_mouse_handler_for_range(ours, x_min, x_max, y_min, y_max, handler)
    assert {y: dict(row) for y, row in ours.mouse_handlers.items()} == {
        y: dict(row) for y, row in theirs.mouse_handlers.items()
    }
