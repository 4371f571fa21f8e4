"""The live region's control: the same lines and heights a FormattedTextControl gives for the same rows, built once
per rows list."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from prompt_toolkit.layout.controls import FormattedTextControl

from dashfloat.ui._rows_control import RowsControl
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
