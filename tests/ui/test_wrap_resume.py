"""Resumed word wrap (issue 19): a wrap resumed from an earlier wrap of a text's beginning gives exactly the rows a
fresh wrap gives, whatever changed; the reference is the wrap as it was before resuming existed."""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st
from prompt_toolkit.utils import get_cwidth

from dashfloat.ui import _text
from dashfloat.ui._markdown import render_markdown
from dashfloat.ui._text import WRAP_RESUME_ENTRIES, WRAP_RESUME_MIN_CHARS, Fragment, Row, WrapMemo, wrap, wrap_resuming

ALPHABET = ["a", "b", "c", " ", " ", "\n", "界", "é", "😀", "\x07"]
TEXT = st.text(alphabet=st.sampled_from(ALPHABET), max_size=40)
STYLE = st.sampled_from(["", "s1", "s2"])


def reference_wrap(fragments: list[Fragment], width: int) -> list[Row]:
    """The greedy wrap as it was written before it could resume (kept here as the reference), with one fix."""
    width = max(1, width)
    rows: list[Row] = []
    line: list[Fragment] = []
    used = 0

    def finish() -> None:
        nonlocal line, used
        while line and line[-1][1].strip() == "":
            line.pop()
        if line:
            style, text = line[-1]
            line[-1] = (style, text.rstrip(" "))
        rows.append(tuple(line))
        line, used = [], 0

    for style, text in fragments:
        for n, part in enumerate(text.split("\n")):
            if n:
                finish()
            for word in reference_words(part):
                w = get_cwidth(word)
                if word == " " * len(word):
                    if line and used + w <= width:
                        line.append((style, word))
                        used += w
                    elif line:
                        used = width  # (fixed since: "aaa  a" at 4 columns was the one row "aaaa")
                    continue
                if used + w <= width:
                    line.append((style, word))
                    used += w
                    continue
                if line and w <= width:
                    finish()
                    line.append((style, word))
                    used = w
                    continue
                for i, piece in enumerate(_text.hard_break([(style, word)], width, room=width - used)):
                    if i:
                        finish()
                    line.extend(piece)
                    used += _text.row_width(piece)
    finish()
    return rows


def reference_words(text: str) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    space = False
    for ch in text:
        is_space = ch == " "
        wide = get_cwidth(ch) == 2
        if current and (is_space != space or wide):
            out.append("".join(current))
            current = []
        current.append(ch)
        space = is_space
        if wide:
            out.append("".join(current))
            current = []
    if current:
        out.append("".join(current))
    return out


def _edit(fragments: list[Fragment], op: int, at: int, text: str, style: str) -> list[Fragment]:
    """One change a re-parse may bring: text appended (streaming), a fragment added, a tail replaced, a style
    changed (emphasis closed later), a fragment dropped, the beginning dropped (rows committed and cut off)."""
    out = list(fragments) or [("", "")]
    i = at % len(out)
    match op:
        case 0:
            out[-1] = (out[-1][0], out[-1][1] + text)
        case 1:
            out.append((style, text))
        case 2:
            old_style, old = out[i]
            out[i] = (old_style, old[: at % (len(old) + 1)] + text)
        case 3:
            out[i] = (style, out[i][1])
        case 4:
            del out[i]
        case _:
            old_style, old = out[i]
            out = [(old_style, old[at % (len(old) + 1) :]), *out[i + 1 :]]
    return out


@given(
    st.lists(st.tuples(STYLE, TEXT), max_size=4),
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 200), TEXT, STYLE), max_size=12),
    st.lists(st.integers(1, 12), min_size=1, max_size=3),
)
def test_a_resumed_wrap_equals_a_fresh_one_after_any_edit(
    start: list[Fragment], edits: list[tuple[int, int, str, str]], widths: list[int]
) -> None:
    recent: list[WrapMemo] = []
    fragments = start
    for n, (op, at, text, style) in enumerate([(0, 0, "", ""), *edits]):
        fragments = _edit(fragments, op, at, text, style) if n else fragments
        width = widths[n % len(widths)]
        memo = wrap_resuming(tuple(fragments), width, recent)
        assert list(memo.rows) == reference_wrap(fragments, width)
        recent = [memo, *(m for m in recent if m is not memo)][:WRAP_RESUME_ENTRIES]


@given(st.lists(st.tuples(STYLE, TEXT), min_size=1, max_size=6), st.integers(1, 12), st.data())
def test_a_text_cut_where_a_row_starts_wraps_as_the_rest_of_the_whole(
    fragments: list[Fragment], width: int, data: st.DataObject
) -> None:
    memo = wrap_resuming(tuple(fragments), width, [])
    # where rows start: after a line break, and where the word that opened a row starts
    starts = [(m.index, m.offset - sum(len(text) for _, text in m.line)) for m in memo.marks]
    index, offset = data.draw(st.sampled_from(starts))
    style, text = fragments[index]
    rest = [(style, text[offset:]), *fragments[index + 1 :]]
    rebased = wrap_resuming(tuple(rest), width, [memo])
    assert list(rebased.rows) == reference_wrap(rest, width)
    assert rebased.rows[-1] is memo.rows[-1]  # taken from the whole, not wrapped again
    more = [*rest[:-1], (rest[-1][0], rest[-1][1] + data.draw(TEXT))]  # and the stream goes on from there
    assert list(wrap_resuming(tuple(more), width, [rebased]).rows) == reference_wrap(more, width)


def test_a_cut_inside_a_row_is_wrapped_afresh() -> None:
    memo = wrap_resuming((("", "aaa bbb ccc"),), 7, [])
    assert memo.rows == ((("", "aaa"), ("", " "), ("", "bbb")), (("", "ccc"),))
    rest = wrap_resuming((("", "bbb ccc"),), 7, [memo])
    assert list(rest.rows) == reference_wrap([("", "bbb ccc")], 7) == [(("", "bbb"), ("", " "), ("", "ccc"))]


@given(st.lists(st.tuples(STYLE, TEXT), min_size=1, max_size=6), st.integers(1, 12), st.data())
def test_a_text_streamed_in_any_pieces_wraps_as_the_whole(
    fragments: list[Fragment], width: int, data: st.DataObject
) -> None:
    whole = "".join(text for _, text in fragments)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(whole)), max_size=8)))
    recent: list[WrapMemo] = []
    for cut in [*cuts, len(whole)]:
        prefix = list(_prefix(fragments, cut))
        memo = wrap_resuming(tuple(prefix), width, recent)
        assert list(memo.rows) == reference_wrap(prefix, width)
        recent = [memo]


def _prefix(fragments: list[Fragment], chars: int) -> Iterator[Fragment]:
    for style, text in fragments:
        if chars <= 0:
            return
        yield style, text[:chars]
        chars -= len(text)


MARKDOWN_PIECES = ["word ", "*em* ", "**strong", "** ", "`code` ", "`", "\n", "\n\n", "- item ", "界 ", "[a](b) "]


@given(st.lists(st.sampled_from(MARKDOWN_PIECES), max_size=60), st.integers(8, 30), st.data())
def test_streamed_markdown_renders_as_the_whole(pieces: list[str], width: int, data: st.DataObject) -> None:
    """Rendering every prefix of a streamed source (the live region's frames) never changes what the whole renders
    to, with the resume threshold at 0 so even short paragraphs resume."""
    source = "".join(pieces)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(source)), max_size=10)))
    saved = _text.WRAP_RESUME_MIN_CHARS
    _text._RECENT.clear()
    _text.WRAP_RESUME_MIN_CHARS = 0
    try:
        for cut in cuts:
            render_markdown(source[:cut], width)
        streamed = render_markdown.__wrapped__(source, width)
    finally:
        _text.WRAP_RESUME_MIN_CHARS = saved
        _text._RECENT.clear()
    assert streamed == render_markdown.__wrapped__(source, width)


def test_only_long_text_is_kept_to_resume_from_and_only_a_few() -> None:
    _text._RECENT.clear()
    short = "x " * ((WRAP_RESUME_MIN_CHARS - 1) // 2) + "x"[: (WRAP_RESUME_MIN_CHARS - 1) % 2]
    assert len(short) == WRAP_RESUME_MIN_CHARS - 1
    assert wrap([("", short)], 20) == reference_wrap([("", short)], 20)
    assert _text._RECENT == []
    long = short + "y"
    assert wrap([("", long)], 20) == reference_wrap([("", long)], 20)
    assert len(_text._RECENT) == 1
    for n in range(WRAP_RESUME_ENTRIES + 1):
        wrap([("", f"{n} " + long)], 20)
    assert len(_text._RECENT) == WRAP_RESUME_ENTRIES
    _text._RECENT.clear()


def test_a_growing_paragraph_resumes_instead_of_wrapping_again() -> None:
    """The point of it: the second wrap reuses the first one's rows (the same row objects), not equal new ones."""
    _text._RECENT.clear()
    text = " ".join(f"w{i:05d}" for i in range(WRAP_RESUME_MIN_CHARS // 6))
    first = wrap([("", text)], 40)
    second = wrap([("", text + " more words")], 40)
    assert second == reference_wrap([("", text + " more words")], 40)
    assert second[len(first) // 2] is first[len(first) // 2]
    _text._RECENT.clear()


def test_a_gap_too_wide_for_the_row_still_separates_two_words() -> None:
    assert wrap([("s", "aaa  a")], 4) == [(("s", "aaa"),), (("s", "a"),)]
    assert wrap([("s", "aaa  \nb")], 4) == [(("s", "aaa"),), (("s", "b"),)]
    assert wrap([("s", "aaa  bbbbbb")], 4) == [(("s", "aaa"),), (("s", "bbbb"),), (("s", "bb"),)]
