"""The re-wrap model behind the resize erase (ADR 0033): pure functions, examples and properties."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from dashfloat.ui._reflow import (
    TMUX_RESIZE_SETTLE_S,
    cells_in_rows,
    overlaid_cells,
    resize_settle_s,
    rewrapped_rows,
    rows_above_cursor,
    stranded_lines,
    stranded_rows,
    terminal_reflows,
    terminal_wraps_erased_cells,
)


def test_a_line_takes_as_many_rows_as_its_cells_need() -> None:
    assert rewrapped_rows([], 40) == 1  # an empty line is still a row
    assert rewrapped_rows([1] * 40, 40) == 1
    assert rewrapped_rows([1] * 41, 40) == 2
    assert rewrapped_rows([1] * 80, 40) == 2
    assert rewrapped_rows([1] * 81, 40) == 3


def test_a_wide_cell_that_does_not_fit_moves_whole_to_the_next_row() -> None:
    assert rewrapped_rows([1] * 39 + [2], 40) == 2
    assert rewrapped_rows([1] * 38 + [2], 40) == 1
    assert rewrapped_rows([2] * 3, 1) == 3  # wider than the screen: one per row, never an empty row


def test_the_rows_above_the_cursor_match_what_tmux_did() -> None:
    # Measured in tmux 3.3a: an 80-column region (80, 30, 80, 12 cells), cursor on the last row at column
    # 12, narrowed to 40: the region's top moved from 3 rows above the cursor to 5.
    lines = [[1] * 80, [1] * 30, [1] * 80, [1] * 12]
    assert rows_above_cursor(lines, 3, 12, 80) == 3
    assert rows_above_cursor(lines, 3, 12, 40) == 5


def test_a_cursor_past_the_new_width_moves_down_with_its_cell() -> None:
    assert rows_above_cursor([[1] * 60], 0, 50, 40) == 1
    assert rows_above_cursor([[1] * 60], 0, 39, 40) == 0
    assert rows_above_cursor([[1] * 10], 0, 45, 40) == 1  # after the text: counted as if typed up to it


@given(st.lists(st.sampled_from([1, 1, 1, 2]), max_size=300), st.integers(min_value=2, max_value=200))
def test_rows_hold_the_cells_and_no_more_rows_than_needed(cells: list[int], columns: int) -> None:
    rows = rewrapped_rows(cells, columns)
    total = sum(cells)
    assert rows * columns >= total  # every cell has a place
    assert rows <= max(1, math.ceil(total / (columns - 1)))  # a wide cell wastes at most one column a row
    assert (rows == 1) == (total <= columns)


@given(
    st.lists(st.lists(st.just(1), max_size=120), min_size=1, max_size=12),
    st.integers(min_value=20, max_value=120),
    st.integers(min_value=20, max_value=120),
)
def test_narrowing_never_brings_the_top_closer_and_widening_back_restores_it(
    lines: list[list[int]], drawn: int, columns: int
) -> None:
    lines = [line[:drawn] for line in lines]  # rows were drawn at most ``drawn`` wide
    row = len(lines) - 1
    col = min(len(lines[row]), drawn - 1)
    at_drawn = rows_above_cursor(lines, row, col, drawn)
    assert at_drawn == row  # at the width they were drawn, each row is one row
    assert rows_above_cursor(lines, row, col, columns) >= at_drawn


def test_which_terminals_re_wrap() -> None:
    assert terminal_reflows({"TERM": "xterm-256color"})  # most terminals call themselves xterm and re-wrap
    assert terminal_reflows({"TERM": "xterm-256color", "VTE_VERSION": "7600"})
    assert not terminal_reflows({"TERM": "xterm-256color", "XTERM_VERSION": "XTerm(390)"})
    assert not terminal_reflows({"TERM": "linux"})
    assert not terminal_reflows({"TERM": "st-256color"})
    # inside tmux, tmux is the terminal drawn into, whatever runs tmux
    assert terminal_reflows({"TERM": "tmux-256color", "TMUX": "/tmp/tmux-1/default,1,0", "XTERM_VERSION": "XTerm(390)"})


def test_a_short_row_drawn_over_a_wide_one_keeps_its_width_in_tmux() -> None:
    # Measured in tmux 3.3a: 90 cells written on a row, then "EL short" and an erase to the end of the line;
    # narrowed to 40 columns, that row takes 3 rows (two of them blank).
    kept = overlaid_cells([1] * 90, [1] * len("EL short"))
    assert sum(kept) == 90 and rewrapped_rows(kept, 40) == 3
    assert overlaid_cells([1] * 10, [2, 1, 1]) == [2, 1, 1, *[1] * 6]
    assert overlaid_cells([1] * 3, [1] * 5) == [1] * 5  # a wider row: what was drawn
    assert overlaid_cells([], [1, 2]) == [1, 2]


@given(st.lists(st.sampled_from([1, 2]), max_size=200), st.lists(st.sampled_from([1, 2]), max_size=200))
def test_a_row_keeps_the_widest_of_what_was_drawn_and_starts_with_the_last_drawing(
    kept: list[int], drawn: list[int]
) -> None:
    cells = overlaid_cells(kept, drawn)
    assert cells[: len(drawn)] == drawn
    assert sum(cells) == max(sum(kept), sum(drawn))
    assert overlaid_cells(cells, drawn) == cells  # drawing the same again changes nothing


def test_only_tmux_is_known_to_wrap_erased_cells_and_to_tell_of_a_resize_late() -> None:
    tmux = {"TERM": "tmux-256color", "TMUX": "/tmp/tmux-1/default,1,0"}
    assert terminal_wraps_erased_cells(tmux) and resize_settle_s(tmux) == TMUX_RESIZE_SETTLE_S
    for env in ({"TERM": "xterm-256color"}, {"TERM": "xterm-256color", "VTE_VERSION": "7600"}, {"TERM": "linux"}):
        assert not terminal_wraps_erased_cells(env) and resize_settle_s(env) == 0.0


def test_rows_above_the_screen_top_are_stranded() -> None:
    # Measured in tmux 3.3a (a streamed paragraph, 90x26 -> 30x12): the region's top was 20 rows above the
    # cursor once re-wrapped, the cursor on row 12 of 12: 9 rows went into the history.
    assert stranded_rows(20, 12) == 9
    assert stranded_rows(8, 24) == 0  # room above: nothing stranded
    assert stranded_rows(5, 6) == 0 and stranded_rows(5, 5) == 1
    assert stranded_rows(3, 0) == 3  # a report of row 0 (never sent) counts as the top row


def test_which_cells_of_the_drawn_lines_are_in_the_history() -> None:
    lines = [[1] * 90, [1] * 90, [1] * 30]
    assert stranded_lines(lines, 4, 45) == (2, 0)  # two 90-cell lines are 4 rows at 45 columns
    assert stranded_lines(lines, 5, 45) == (3, 0)  # and the third line, its only row
    assert stranded_lines(lines, 3, 45) == (1, 45)  # half of the second line
    assert stranded_lines(lines, 9, 45) == (3, 0)
    assert cells_in_rows([1] * 39 + [2], 1, 40) == 39  # the wide cell moved whole to the next row


@given(
    st.lists(st.lists(st.sampled_from([1, 1, 2]), max_size=150), min_size=1, max_size=10),
    st.integers(min_value=0, max_value=60),
    st.integers(min_value=2, max_value=120),
)
def test_stranded_cells_are_a_prefix_that_fills_exactly_the_stranded_rows(
    lines: list[list[int]], stranded: int, columns: int
) -> None:
    whole, cells = stranded_lines(lines, stranded, columns)
    rows = sum(rewrapped_rows(line, columns) for line in lines[:whole])
    if whole == len(lines):
        assert cells == 0 and rows <= stranded
    else:
        assert rows <= stranded < rows + rewrapped_rows(lines[whole], columns)
        assert 0 <= cells <= len(lines[whole])
        held = lines[whole][:cells]
        assert stranded == rows or rewrapped_rows(held, columns) == stranded - rows or not held


def test_entries_waiting_to_be_printed_lose_the_rows_already_in_the_history() -> None:
    from dashfloat.ui._scrollback import strand_pending
    from dashfloat.ui.render import plain, render_entry
    from dashfloat.ui.state import Notice, Prose, ProseRows, UserPrompt

    pending = (UserPrompt("hello"), Prose("one two three four five six seven"), Notice("done"))
    # At 12 columns: "❯ hello" + blank, then "one two", "three four", "five six", "seven" + blank, then the notice.
    assert strand_pending(pending, 0, 12) == pending
    assert strand_pending(pending, 2, 12) == pending[1:]  # the prompt and its blank row are printed already
    cut = strand_pending(pending, 4, 12)
    assert isinstance(cut[0], ProseRows) and cut[1:] == pending[2:]
    assert plain(render_entry(cut[0], 12)) == ["five six", "seven", ""]  # the rest, and still its blank row
    everything = sum(len(render_entry(entry, 12)) for entry in pending)
    assert strand_pending(pending, everything, 12) == () == strand_pending(pending, everything + 5, 12)
