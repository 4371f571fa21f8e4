"""Notices wrap with a hanging indent: only a line's first row carries the mark (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dashfloat.ui._commands import help_text
from dashfloat.ui._text import Row, hanging_wrap, row_width

MARK = ("class:dim", "· ")


def texts(rows: list[Row]) -> list[str]:
    return ["".join(text for _, text in row) for row in rows]


def test_a_help_line_continues_under_its_description() -> None:
    rows = texts(hanging_wrap(help_text(), "s", 80, MARK))
    at = next(i for i, row in enumerate(rows) if row.startswith("· /permissions"))
    description = rows[at].index("list the rules")
    assert rows[at + 1].startswith(" " * description) and not rows[at + 1].startswith(" " * (description + 1))
    assert sum(row.startswith("· ") for row in rows) == len(help_text().split("\n"))


def test_a_plain_line_continues_two_columns_in() -> None:
    rows = texts(hanging_wrap("one two three four five six", "s", 12, MARK))
    assert rows == ["· one two", "    three", "    four", "    five six"]


words = st.text(alphabet="abcé漢 ", min_size=0, max_size=12)


@given(st.lists(words, min_size=1, max_size=4), st.integers(min_value=6, max_value=50))
def test_rows_fit_and_keep_every_word_in_order(lines: list[str], width: int) -> None:
    text = "\n".join(lines)
    rows = hanging_wrap(text, "s", width, MARK)
    assert all(row_width(row) <= width for row in rows)
    marked = [row for row in texts(rows) if row.startswith("·")]
    assert len(marked) == len(lines)
    # words may be hard-broken across rows, never lost or reordered
    assert "".join(texts(rows)).replace("·", "").replace(" ", "") == text.replace(" ", "").replace("\n", "")
