"""Verbatim lines (diffs in previews, command output) broken at spaces: nothing lost, no row too wide, and a word
that fits a row is never split."""

from __future__ import annotations

import itertools
import re

from hypothesis import given
from hypothesis import strategies as st

from dashfloat.protocol import ConfirmRequested, EditFileArgs
from dashfloat.ui._text import soft_break, width_of
from dashfloat.ui.render import plain, render_entry, render_live
from dashfloat.ui.state import ToolResult, UiState

LINE = st.text(alphabet=st.sampled_from(["a", "b", "c", " ", "界", "é", "-"]), max_size=80)


@given(LINE, st.integers(1, 16))
def test_rows_join_to_the_line_and_fit(line: str, width: int) -> None:
    rows = soft_break(line, width)
    assert "".join(rows) == line
    for row in rows:
        assert width_of(row) <= width or len(row) == 1


@given(LINE, st.integers(1, 16))
def test_a_word_is_split_only_when_its_row_had_no_space_to_end_at(line: str, width: int) -> None:
    rows = soft_break(line, width)
    for row, after in itertools.pairwise(rows):
        if row and after and row[-1] != " " and after[0] != " ":
            # mid-word: allowed only when the row held nothing but that one word (and leading spaces)
            assert not re.search(r"\S ", row), (line, width, rows)


def test_prose_at_thirty_columns_breaks_between_words() -> None:
    line = "It is safe to delete (edited through a confirmation)."
    assert soft_break(line, 26) == ["It is safe to delete ", "(edited through a ", "confirmation)."]
    # a space that does not fit starts the next row: nothing is dropped from a verbatim line
    assert soft_break(line, 28) == ["It is safe to delete (edited", " through a confirmation)."]
    assert soft_break("abcdefghij", 4) == ["abcd", "efgh", "ij"]  # one long word: by columns
    assert soft_break("    indented_identifier_here", 10) == ["    indent", "ed_identif", "ier_here"]
    assert soft_break("", 5) == [""]


def test_a_preview_diff_keeps_its_marker_column_and_whole_words() -> None:
    subject = EditFileArgs(path="demo.md", search_block="a", replace_block="b")
    lines = ["@@ -1 +1 @@", "-It is safe to delete.", "+It is safe to delete (edited through a confirmation)."]
    state = UiState(confirm=ConfirmRequested(ref=1, id="c", subject=subject, lines=lines, summary="+1 −1"))
    shown = plain(render_live(state, (), 32))
    body = [row for row in shown if row.startswith("  ") and not row.startswith("  ⚙")]
    assert "  +It is safe to delete (edited " in body
    assert "   through a confirmation)." in body  # one column in: the + column stays the marker's
    assert all("edite" not in row or "edited" in row for row in shown)


def test_command_output_rows_break_between_words() -> None:
    output = "error: the value of the option named --frobnicate was not understood here"
    rows = plain(render_entry(ToolResult(name="execute_command", status="ok", output=output), 40))
    assert all(width_of(row) <= 40 for row in rows)
    words = {w for row in rows for w in row.split()}
    assert {"--frobnicate", "understood"} <= words
