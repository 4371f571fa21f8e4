"""The input window's scroll: the cursor always on screen, and no blank row under the text's end while a line
above it is out of sight (prompt_toolkit's Window left them under a short line after a tall one)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from prompt_toolkit.application import DummyApplication
from prompt_toolkit.application.current import set_app
from prompt_toolkit.data_structures import Point
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.layout.controls import UIContent

from dashfloat.ui._input_window import InputWindow
from dashfloat.ui._ptk_private import WrapScrollingWindow


def _prefix(line: int, wrap_count: int) -> StyleAndTextTuples:
    return [("", "❯ " if line == 0 and wrap_count == 0 else "  ")]


def _content(lines: list[str], y: int, x: int) -> UIContent:
    return UIContent(get_line=lambda i: [("", lines[i])], line_count=len(lines), cursor_position=Point(x=x, y=y))


def _shown(window: WrapScrollingWindow, content: UIContent, width: int, height: int) -> tuple[int, int]:
    """(rows the window's text fills from its top, the cursor's row) after one scroll."""
    window.scroll_when_wrapping(content, width, height)
    rows = [content.get_height_for_line(n, width, _prefix) for n in range(content.line_count)]
    top = window.vertical_scroll
    filled = sum(rows[top:]) - window.vertical_scroll_2
    y, x = content.cursor_position.y, content.cursor_position.x
    before = content.get_height_for_line(y, width, _prefix, slice_stop=x)  # rows up to the cursor, its own included
    cursor_row = sum(rows[top:y]) + before - 1 - window.vertical_scroll_2
    return min(filled, height), cursor_row


lines_st = st.lists(st.text(alphabet="ab ", max_size=300), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(
    lines=lines_st,
    width=st.integers(4, 40),
    height=st.integers(1, 12),
    moves=st.lists(st.integers(0, 10**6), min_size=1, max_size=6),
)
def test_the_cursor_is_shown_and_no_row_is_blank_while_text_is_hidden(
    lines: list[str], width: int, height: int, moves: list[int]
) -> None:
    window = InputWindow(get_line_prefix=_prefix, wrap_lines=True)
    with set_app(DummyApplication()):  # one app: without it, each height asked for makes a new one (slow)
        total = sum(_content(lines, 0, 0).get_height_for_line(n, width, _prefix) for n in range(len(lines)))
        for move in moves:  # the same window over several cursor positions: its scroll carries over, as in the app
            y = move % len(lines)
            content = _content(lines, y, (move // len(lines)) % (len(lines[y]) + 1))
            filled, cursor_row = _shown(window, content, width, height)
            assert 0 <= cursor_row < height
            assert filled == min(total, height)  # a blank row under the end only when all the text is shown


def test_a_short_line_under_a_tall_one_shows_the_tall_ones_last_rows() -> None:
    lines = ["x" * 100, "and"]  # 100 characters over 8 columns (2 of them the prefix): 17 rows
    plain = WrapScrollingWindow(get_line_prefix=_prefix, wrap_lines=True)  # Window's own scroll, nothing added
    ours = InputWindow(get_line_prefix=_prefix, wrap_lines=True)
    with set_app(DummyApplication()):
        assert _shown(plain, _content(lines, 1, 3), 8, 5) == (1, 0)  # prompt_toolkit's own: the short line alone
        assert _shown(ours, _content(lines, 1, 3), 8, 5) == (5, 4)  # the tall line's last 4 rows above it
