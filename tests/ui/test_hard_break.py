"""The one column hard-break (code blocks, command output, long words): nothing lost, no row too wide."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st
from prompt_toolkit.utils import get_cwidth

from dashfloat.textsafe import defuse
from dashfloat.ui._text import hard_break, row_width

TEXT = st.text(alphabet=st.sampled_from(["a", "b", " ", "界", "é", "😀"]), max_size=60)


@given(st.lists(TEXT, max_size=4), st.integers(1, 12), st.one_of(st.none(), st.integers(0, 12)))
def test_hard_break_keeps_every_character_and_fits_each_row(texts: list[str], width: int, room: int | None) -> None:
    if room is not None:
        room = min(room, width)
    fragments = [(f"s{i}", t) for i, t in enumerate(texts)]
    rows = hard_break(fragments, width, room)
    assert "".join(text for row in rows for _, text in row) == "".join(texts)
    for n, row in enumerate(rows):
        limit = room if n == 0 and room is not None else width
        one_char = len("".join(text for _, text in row)) == 1
        assert row_width(row) <= limit or one_char
    # styles travel with their text
    assert {style for row in rows for style, _ in row} <= {f"s{i}" for i in range(len(texts))}


def test_a_first_row_without_room_is_empty() -> None:
    assert hard_break([("", "abc")], 3, room=0) == [(), (("", "abc"),)]
    assert hard_break([("", "界界")], 1) == [(("", "界"),), (("", "界"),)]
    assert get_cwidth("界") == 2


def test_defuse_one_rule_for_both_terminals() -> None:
    hostile = "\tx ok\x1b[2J\ny\u200b"
    assert defuse(hostile, keep_newlines=False) == "    x ok^[[2J^Jy"
    assert defuse(hostile, keep_newlines=True) == "    x ok^[[2J\ny"
    assert defuse(hostile, keep_newlines=True, keep_invisible=lambda ch: True) == "    x ok^[[2J\ny\u200b"
    assert defuse("plain", keep_newlines=False) == "plain"


@given(
    st.text(alphabet=st.sampled_from(["a", " ", "\n", "\t", "\x1b", "\u200b", "界", "\x85"]), max_size=30),
    st.booleans(),
)
def test_defuse_of_printable_lines_keeps_them_as_they_are(text: str, keep_newlines: bool) -> None:
    """The C fast path (printable apart from line breaks) agrees with the rule applied one character at a time."""
    expected = "".join(
        ch
        if ch.isprintable() or (keep_newlines and ch == "\n")
        else "^" + chr((ord(ch) + 64) % 128)
        if unicodedata.category(ch) == "Cc"
        else ""
        for ch in text.expandtabs(4)
    )
    assert defuse(text, keep_newlines=keep_newlines) == expected
