"""The live region's control: the same lines and heights a FormattedTextControl gives for the same rows, built once
per rows list."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from prompt_toolkit.layout.containers import Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.layout.mouse_handlers import MouseHandlers
from prompt_toolkit.layout.screen import Screen, WritePosition

from dashfloat.ui._rows_control import RowsControl, RowsWindow
from dashfloat.ui._text import Row
from dashfloat.ui.render import to_formatted

FRAGMENT = st.tuples(st.sampled_from(["", "class:dim", "class:md.strong"]), st.text(alphabet="ab 界😀é", max_size=12))
ROWS = st.lists(st.lists(FRAGMENT, max_size=4).map(tuple), min_size=1, max_size=8)  # shown only with rows


@settings(max_examples=40)
@given(ROWS, st.integers(1, 20), st.integers(1, 30), st.booleans())
def test_lines_and_heights_are_those_of_the_formatted_text(
    rows: list[Row], width: int, available: int, wrap_lines: bool
) -> None:
    ours = RowsControl(lambda: rows)
    theirs = FormattedTextControl(to_formatted(rows))
    expected = theirs.create_content(width, None)
    content = ours.create_content(width, None)
    assert content.line_count == expected.line_count == len(rows)
    for i in range(len(rows)):
        assert [f for f in content.get_line(i) if f[1]] == [f for f in expected.get_line(i) if f[1]]
    height = ours.preferred_height(width, available, wrap_lines, None)
    assert height == theirs.preferred_height(width, available, wrap_lines, None)


def test_the_same_rows_give_the_same_content_and_new_rows_a_new_one() -> None:
    rows: list[Row] = [(("", "one"),), (("", "two"),)]
    shown = [rows]
    control = RowsControl(lambda: shown[0])
    first = control.create_content(10, None)
    assert control.create_content(10, None) is first
    shown[0] = [*rows, (("", "three"),)]
    again = control.create_content(10, None)
    assert again is not first and again.line_count == 3 and again.get_line(2) == [("", "three")]


PLAIN_OR_NOT = st.tuples(
    st.sampled_from(["", "class:dim", "[ZeroWidthEscape]"]), st.text(alphabet="ab \t界é\u0301", max_size=12)
)


ASCII = st.tuples(st.sampled_from(["", "class:dim"]), st.text(alphabet="ab ", min_size=1, max_size=12))


@settings(max_examples=30)
@given(
    st.lists(st.lists(st.one_of(ASCII, FRAGMENT, PLAIN_OR_NOT), max_size=4).map(tuple), min_size=1, max_size=8),
    st.integers(1, 20),
    st.integers(1, 10),
)
def test_the_window_draws_what_window_draws(rows: list[Row], width: int, height: int) -> None:
    """Its one-pass copy (plain rows that fit) and Window's own (anything else) give the same screen."""
    assert _drawn(RowsWindow, rows, width, height) == _drawn(Window, rows, width, height)


def test_a_row_one_column_too_wide_is_wrapped_as_window_wraps_it() -> None:
    for text in ("abcd", "abcde"):
        rows: list[Row] = [(("", text),), (("class:dim", "xy"),)]
        assert _drawn(RowsWindow, rows, 4, 5) == _drawn(Window, rows, 4, 5)


def _drawn(
    kind: type[Window], rows: list[Row], width: int, height: int
) -> tuple[dict[int, dict[int, tuple[str, str]]], dict[int, dict[int, str]], int]:
    screen = Screen()
    window = kind(RowsControl(lambda: rows), wrap_lines=True, dont_extend_height=True)
    window.write_to_screen(screen, MouseHandlers(), WritePosition(0, 0, width, height), "", False, None)
    cells = {y: {x: (c.char, c.style) for x, c in row.items()} for y, row in screen.data_buffer.items() if row}
    escapes = {y: dict(row) for y, row in screen.zero_width_escapes.items() if row}
    return cells, escapes, screen.height


ONE_COLUMN_OR_NOT = st.tuples(
    st.sampled_from(["", "class:status"]), st.text(alphabet="ab ●·⠹é界\u0301", min_size=1, max_size=12)
)


@settings(max_examples=15, deadline=None)
@example([(("class:status", "● aéb"),)], 10)  # a combining mark: no cell of its own
@example([(("", "·界"),)], 10)  # two columns
@given(st.lists(st.lists(ONE_COLUMN_OR_NOT, max_size=3).map(tuple), min_size=1, max_size=4), st.integers(1, 20))
def test_rows_of_one_column_characters_are_drawn_as_window_draws_them(rows: list[Row], width: int) -> None:
    """Non-ASCII characters of one column (the status bar's ● · ⠹) take the one-pass copy; two columns or a
    combining mark take Window's."""
    assert _drawn(RowsWindow, rows, width, 4) == _drawn(Window, rows, width, 4)
