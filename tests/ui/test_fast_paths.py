"""The streaming frame's fast paths (issue 19, ADR 0040) give exactly what the general code gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from prompt_toolkit.application import DummyApplication
from prompt_toolkit.application.current import set_app
from prompt_toolkit.layout.containers import Window
from prompt_toolkit.layout.mouse_handlers import MouseHandlers
from prompt_toolkit.layout.screen import Screen, WritePosition
from prompt_toolkit.utils import get_cwidth

from dashfloat.ui._blocks import _source_cut
from dashfloat.ui._markdown import _PLAIN_PARAGRAPH, render_markdown, render_parsed
from dashfloat.ui._rows_control import RowsControl, RowsWindow
from dashfloat.ui._scrollback import scrub
from dashfloat.ui._text import Row, row_width, sanitize, width_of

# whitespace str.split knows beyond the space: tab, line break, the file separators, no-break space, line separator
TEXT = st.text(alphabet="ab. \t\n\x1c\xa0\u2028界é\x1b", max_size=40)


def _source_cut_by_characters(source: str, shown: str) -> int | None:
    """The cut as it was first written: one character at a time."""
    ink = "".join(shown.split())
    if not ink:
        return None
    matched = 0
    for pos, char in enumerate(source):
        if char.isspace():
            continue
        if char != ink[matched]:
            return None
        matched += 1
        if matched == len(ink):
            return pos + 1
    return None


@given(TEXT, st.integers(0, 40), TEXT)
def test_the_cut_by_runs_is_the_cut_by_characters(source: str, shown_chars: int, other: str) -> None:
    for shown in (source[:shown_chars], source[:shown_chars] + other, " ".join(source[:shown_chars].split())):
        assert _source_cut(source, shown) == _source_cut_by_characters(source, shown)


def test_the_cut_ends_inside_a_word_and_refuses_other_text() -> None:
    assert _source_cut("one  two three", "one tw") == 7
    assert _source_cut("one two", "one twx") is None
    assert _source_cut("one two", "one two three") is None
    assert _source_cut("one two", "  ") is None


@given(st.text(max_size=20))
def test_widths_are_get_cwidths(text: str) -> None:
    assert width_of(text) == get_cwidth(text)
    assert row_width((("", text), ("x", text[::-1]))) == 2 * get_cwidth(text)


@given(st.lists(st.tuples(st.sampled_from(["", "class:dim"]), TEXT), max_size=4))
def test_a_printable_row_is_scrubbed_as_any_row(fragments: list[tuple[str, str]]) -> None:
    row: Row = tuple(fragments)
    assert scrub(row) == tuple((style, sanitize(text.replace("\n", " "))) for style, text in row)


ROW = st.lists(st.tuples(st.sampled_from(["", "class:dim"]), st.text(alphabet="ab 界\t", max_size=8)), max_size=3).map(
    tuple
)


@settings(max_examples=150)
@given(st.lists(st.lists(ROW, min_size=1, max_size=6), min_size=1, max_size=4), st.integers(4, 12), st.integers(0, 3))
def test_frame_after_frame_the_window_draws_what_window_draws(frames: list[list[Row]], width: int, xpos: int) -> None:
    """One window over successive rows lists (its cells of a row kept from the frame before) at any column."""
    shown: list[list[Row]] = [frames[0]]
    ours = RowsWindow(RowsControl(lambda: shown[0]), wrap_lines=True, dont_extend_height=True)
    for rows in frames:
        shown[0] = rows
        for columns, height in ((width, len(rows)), (width - 3, 3)):  # narrower: a row kept may no longer fit
            theirs = Window(RowsControl(lambda: rows), wrap_lines=True, dont_extend_height=True)  # noqa: B023
            assert _drawn(ours, columns, height, xpos) == _drawn(theirs, columns, height, xpos)
            with set_app(_APP):
                ours_height = ours.preferred_height(columns, height).preferred
                assert ours_height == theirs.preferred_height(columns, height).preferred


_APP = DummyApplication()


def _drawn(
    window: Window, width: int, height: int, xpos: int
) -> tuple[dict[int, dict[int, tuple[str, str]]], dict[int, dict[int, str]], int]:
    screen = Screen()
    with set_app(_APP):  # one application for every frame: without one, each look-up makes one (~30 ms)
        window.write_to_screen(screen, MouseHandlers(), WritePosition(xpos, 1, width, height), "", False, None)
    cells = {y: {x: (c.char, c.style) for x, c in row.items()} for y, row in screen.data_buffer.items() if row}
    escapes = {y: dict(row) for y, row in screen.zero_width_escapes.items() if row}
    return cells, escapes, screen.height


def test_plain_rows_right_of_the_first_column_are_drawn_there() -> None:
    rows: list[Row] = [(("", "ab"), ("class:dim", " c")), (("", "d"),)]
    ours = RowsWindow(RowsControl(lambda: rows), wrap_lines=True, dont_extend_height=True)
    theirs = Window(RowsControl(lambda: rows), wrap_lines=True, dont_extend_height=True)
    assert _drawn(ours, 6, 2, 3) == _drawn(theirs, 6, 2, 3)
    assert _drawn(ours, 6, 2, 3)[0][1][3] == ("a", "")


def test_plain_rows_are_one_line_each_up_to_the_height_available() -> None:
    rows: list[Row] = [(("", "row"),)] * 5
    control = RowsControl(lambda: rows)
    assert control.plain_cells(4) is not None
    assert [control.preferred_height(4, available, True, None) for available in (3, 5, 9)] == [3, 5, 5]
    assert RowsControl(lambda: []).preferred_height(4, 3, True, None) == 0
    assert control.plain_cells(2) is None  # "row" is wider: Window wraps it
    assert control.preferred_height(2, 20, True, None) == 10


def test_a_content_of_rows_replaced_since_measures_its_own_lines() -> None:
    shown: list[list[Row]] = [[(("", "abcdef"),)]]
    control = RowsControl(lambda: shown[0])
    content = control.create_content(4, None)
    shown[0] = [(("", "ab"),)]  # plain at 4 columns; the content made before holds the wider row
    assert control.create_content(4, None).get_height_for_line(0, 4, None) == 1
    assert content.get_height_for_line(0, 4, None) == 2


# Markup that acts where it stands: a line break, a list, a heading, emphasis, a code span, an entity, a link, an
# autolink, a table, an escape, an indent, a setext underline, strikethrough, a hard break, a fence.
MARKUP = st.sampled_from(
    ["\n", "\n- ", "- ", "**b**", "*e*", "_u_", "`c`", "&amp;", "1. ", "2) ", "# ", "[a](b)", "<a@b.c>", "|", "\\",
     "    ", "\n===", "~~s~~", "  \n", "```", "\t", "-", "=", ">", "!"]
)  # fmt: skip


@settings(max_examples=500)
@given(
    st.text(alphabet="aZ09 ,.;:?!'()", max_size=40),
    st.lists(st.tuples(st.integers(0, 40), MARKUP), max_size=3),
    st.integers(1, 40),
)
def test_plain_prose_renders_as_the_parser_renders_it(plain: str, marks: list[tuple[int, str]], width: int) -> None:
    source = "w" + plain  # a letter first: most of these are one plain paragraph before their markup goes in
    for at, mark in marks:
        source = source[:at] + mark + source[at:]
    assert render_markdown.__wrapped__(source, width) == render_parsed(source, width)
    for _, mark in marks:
        assert render_markdown.__wrapped__(mark + source, width) == render_parsed(mark + source, width)


@given(st.lists(st.sampled_from(["a", "Z9", "it's", "(so)", "yes,", "no.", "why?", "w00001", "x:"]), min_size=1))
def test_a_streamed_paragraph_of_words_takes_the_plain_path(words: list[str]) -> None:
    source = "w" + " ".join(words)
    assert _PLAIN_PARAGRAPH.fullmatch(source)
    assert render_markdown.__wrapped__(source, 30) == render_parsed(source, 30)


def test_text_markdown_acts_on_takes_the_parser() -> None:
    for source in ("1. one", "a *b*", "a\nb", " a", "a ", "# a", "a `b`", "a &amp; b", "a | b", "a - b", "- a"):
        assert not _PLAIN_PARAGRAPH.fullmatch(source), source
