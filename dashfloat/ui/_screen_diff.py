"""prompt_toolkit's screen diff with the changed cells of a row written as runs: the same cells, the same bytes
on screen, one write per run instead of one Python call chain per cell (issue 19, ADR 0040).

``output_screen_diff`` is ``prompt_toolkit.renderer._output_screen_diff`` (3.0.x, BSD licence) with two changes:
a row whose cells equal the last frame's is skipped at once (a dict comparison in C), and consecutive changed
cells of one style and one column each are written as one string. Everything else (the cursor moves, the
attributes, the trimming, the end of the frame) is the original's, line for line. ``install`` puts it in place
of the original for every renderer in this process (only the UI's), through ``_ptk_private``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from prompt_toolkit.data_structures import Point, Size
from prompt_toolkit.layout.mouse_handlers import MouseHandler, MouseHandlers
from prompt_toolkit.layout.screen import Char, Screen
from prompt_toolkit.output import ColorDepth, Output

from dashfloat.ui import _ptk_private as ptk

if TYPE_CHECKING:
    from prompt_toolkit.application import Application
    from prompt_toolkit.styles import Attrs

ORIGINAL_SCREEN_DIFF = ptk.screen_diff()
"""prompt_toolkit's own diff: the reference the tests compare ours with."""


def output_screen_diff(
    app: Application[Any],
    output: Output,
    screen: Screen,
    current_pos: Point,
    color_depth: ColorDepth,
    previous_screen: Screen | None,
    last_style: str | None,
    is_done: bool,
    full_screen: bool,
    attrs_for_style_string: Mapping[str, Attrs],
    style_string_has_style: Mapping[str, bool],
    size: Size,
    previous_width: int,
) -> tuple[Point, str | None]:
    """Write what changed from ``previous_screen`` to ``screen``; the cursor position and the last style."""
    width, height = size.columns, size.rows
    write = output.write
    write_raw = output.write_raw
    _output_set_attributes = output.set_attributes
    _output_reset_attributes = output.reset_attributes
    _output_cursor_forward = output.cursor_forward
    _output_cursor_up = output.cursor_up
    _output_cursor_backward = output.cursor_backward

    output.hide_cursor()

    def reset_attributes() -> None:
        nonlocal last_style
        _output_reset_attributes()
        last_style = None

    def move_cursor(new: Point) -> Point:
        current_x, current_y = current_pos.x, current_pos.y
        if new.y > current_y:
            # Newlines, not CURSOR_DOWN: they add lines at the bottom (attributes reset: no background drawn).
            reset_attributes()
            write("\r\n" * (new.y - current_y))
            current_x = 0
            _output_cursor_forward(new.x)
            return new
        elif new.y < current_y:
            _output_cursor_up(current_y - new.y)
        if current_x >= width - 1:
            write("\r")
            _output_cursor_forward(new.x)
        elif new.x < current_x or current_x >= width - 1:
            _output_cursor_backward(current_x - new.x)
        elif new.x > current_x:
            _output_cursor_forward(new.x - current_x)
        return new

    def get_max_column_index(row: dict[int, Char]) -> int:
        # The last cell that is not an unstyled blank (copy and paste from the terminal keeps no trailing spaces),
        # found from the row's end: the original scans every cell of the row.
        x = max(row, default=0)
        while x > 0:
            cell = row.get(x)
            if cell is not None and (cell.char != " " or style_string_has_style[cell.style]):
                return x
            x -= 1
        return 0

    if not previous_screen:
        reset_attributes()
    if not previous_screen or not full_screen:
        output.disable_autowrap()
    if is_done or not previous_screen or previous_width != width:
        current_pos = move_cursor(Point(x=0, y=0))
        reset_attributes()
        output.erase_down()
        previous_screen = Screen()

    # A cell never written is its screen's default character (the original's defaultdicts make one per look-up).
    new_blank, old_blank = _default_char(screen), _default_char(previous_screen)
    same_blank = new_blank == old_blank
    current_height = min(screen.height, height)
    row_count = min(max(screen.height, previous_screen.height), height)

    for y in range(row_count):
        new_row = screen.data_buffer[y]
        previous_row = previous_screen.data_buffer[y]
        if same_blank and new_row == previous_row:
            continue  # no cell differs and both end at the same column: the original writes nothing either
        zero_width_escapes_row = screen.zero_width_escapes[y]

        new_max_line_len = min(width - 1, get_max_column_index(new_row))
        previous_max_line_len = min(width - 1, get_max_column_index(previous_row))

        c = 0
        while c <= new_max_line_len:
            new_char = new_row.get(c, new_blank)
            old_char = previous_row.get(c, old_blank)
            char_width = new_char.width or 1
            if new_char.char != old_char.char or new_char.style != old_char.style:
                current_pos = move_cursor(Point(x=c, y=y))
                if c in zero_width_escapes_row:
                    write_raw(zero_width_escapes_row[c])
                # The run: this cell and the changed one-column cells of its style right after it, up to an
                # unchanged cell or an escape to inject (the original writes exactly these cells, one by one).
                style = new_char.style
                text = [new_char.char]
                c += char_width
                if char_width == 1:
                    while c <= new_max_line_len:
                        next_char = new_row.get(c, new_blank)
                        if next_char.width != 1 or next_char.style != style or c in zero_width_escapes_row:
                            break
                        old_char = previous_row.get(c, old_blank)
                        if next_char.char == old_char.char and style == old_char.style:
                            break
                        text.append(next_char.char)
                        c += 1
                if last_style != style:
                    new_attrs = attrs_for_style_string[style]
                    if not last_style or new_attrs != attrs_for_style_string[last_style]:
                        _output_set_attributes(new_attrs, color_depth)
                    last_style = style
                write("".join(text))
                current_pos = Point(x=c, y=y)
                continue
            c += char_width

        if previous_screen and new_max_line_len < previous_max_line_len:
            current_pos = move_cursor(Point(x=new_max_line_len + 1, y=y))
            reset_attributes()
            output.erase_end_of_line()

    # A screen taller than the last one: move to its bottom once, so that the terminal scrolls up even when its
    # lower lines are blank.
    if current_height > previous_screen.height:
        current_pos = move_cursor(Point(x=0, y=current_height - 1))

    if is_done:
        current_pos = move_cursor(Point(x=0, y=current_height))
        output.erase_down()
    else:
        current_pos = move_cursor(screen.get_cursor_position(app.layout.current_window))

    if is_done or not full_screen:
        output.enable_autowrap()

    # Always reset the attributes: a background thread may print, and some terminals smear a background colour
    # on resize.
    reset_attributes()
    if screen.show_cursor:
        output.show_cursor()
    return current_pos, last_style


def _default_char(screen: Screen) -> Char:
    """The character ``screen`` holds where nothing was written."""
    new_row = screen.data_buffer.default_factory
    assert new_row is not None
    blank = new_row().default_factory
    assert blank is not None
    return blank()


ORIGINAL_SET_MOUSE_HANDLER_FOR_RANGE = MouseHandlers.set_mouse_handler_for_range
"""prompt_toolkit's own, which sets every cell of a window's area one by one, every frame."""


def set_mouse_handler_for_range(
    self: MouseHandlers, x_min: int, x_max: int, y_min: int, y_max: int, handler: MouseHandler
) -> None:
    """The same cells set, a row at a time (``dict.update``)."""
    cells = dict.fromkeys(range(x_min, x_max), handler)
    for y in range(y_min, y_max):
        self.mouse_handlers[y].update(cells)


def install() -> None:
    """Make every prompt_toolkit renderer in this process draw its frames with ``output_screen_diff`` (and set a
    window's mouse handlers a row at a time)."""
    ptk.replace_screen_diff(output_screen_diff)
    ptk.replace_mouse_handler_range(set_mouse_handler_for_range)
