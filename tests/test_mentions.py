"""@path mention syntax: finding mentions, the one being typed, and writing a path as one (pure)."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from dashfloat.mentions import Mention, Partial, find_mentions, format_mention, needs_quotes, partial_at


def paths(text: str) -> list[str]:
    return [m.path for m in find_mentions(text)]


def test_bare_mentions_end_at_whitespace_and_drop_sentence_punctuation() -> None:
    assert paths("explain @README.md.") == ["README.md"]
    assert paths("compare @a.py, @b/c.py and @d/") == ["a.py", "b/c.py", "d/"]
    assert paths("(see @x.txt)") == ["x.txt"]
    assert paths("(@x.txt)") == []  # an @ after "(" is not at a word start
    assert paths("@x.txt) and @y!") == ["x.txt", "y"]


def test_an_at_inside_a_word_or_alone_is_no_mention() -> None:
    assert paths("mail me at a@b.com") == []
    assert paths("@ alone, and @ at the end @") == []
    assert paths('@"unclosed quote') == []
    assert paths('@""') == []


def test_quoted_mentions_carry_spaces_and_escapes() -> None:
    assert paths('read @"my notes.md" now') == ["my notes.md"]
    assert paths(r'@"say \"hi\".txt" @"back\\slash"') == ['say "hi".txt', "back\\slash"]
    [m] = find_mentions('x @"a b" y')
    assert m == Mention("a b", 2, 8)


def test_positions_cover_the_mention_text() -> None:
    text = "see @src/app.py, then"
    [m] = find_mentions(text)
    assert text[m.start : m.end] == "@src/app.py"


def test_the_partial_mention_is_the_one_the_cursor_is_typing() -> None:
    assert partial_at("explain @READ") == Partial("READ", 8, quoted=False)
    assert partial_at("@") == Partial("", 0, quoted=False)
    assert partial_at('look at @"my no') == Partial("my no", 8, quoted=True)
    assert partial_at("explain @README.md ") is None  # a space ended it
    assert partial_at('@"my notes.md" ') is None
    assert partial_at('@"my notes.md"') is None  # the quote closed it
    assert partial_at("a@b") is None
    assert partial_at("no mention here") is None
    assert partial_at("@a.txt and @src/") == Partial("src/", 11, quoted=False)


def test_paths_a_bare_mention_would_cut_are_quoted() -> None:
    assert format_mention("README.md") == "@README.md"
    assert format_mention("src/") == "@src/"
    assert format_mention("my notes.md") == '@"my notes.md"'
    assert format_mention("odd.") == '@"odd."'
    assert format_mention('say "hi"') == '@"say \\"hi\\""'
    assert format_mention("my dir/", closed=False) == '@"my dir/'
    assert not needs_quotes("a/b-c_d.py")


path_text = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\0"), min_size=1, max_size=40)


@given(path_text, st.text(max_size=20), st.text(max_size=20))
def test_any_path_written_as_a_mention_reads_back(path: str, before: str, after: str) -> None:
    text = f"{before} {format_mention(path)} {after}"
    start = len(before) + 1
    [m] = [m for m in find_mentions(text) if m.start == start]
    assert m.path == path
    assert m.end == start + len(format_mention(path))


@given(path_text, st.text(max_size=20))
def test_typing_a_mention_is_seen_at_every_prefix(path: str, before: str) -> None:
    """Each prefix of a written mention is the partial being typed, until a quote closes it."""
    mention = format_mention(path)
    base = f"{before} "
    for cut in range(1, len(mention) + 1):
        partial = partial_at(base + mention[:cut])
        if mention.startswith('@"') and cut == len(mention):
            assert partial is None  # the closing quote ended it
            continue
        assert partial is not None and partial.start == len(base)
        if not needs_quotes(path):
            assert partial == Partial(path[: cut - 1], len(base), quoted=False)
        elif cut >= 2:
            assert partial.quoted and path.startswith(partial.query.rstrip("\\"))


@given(st.text(max_size=60))
def test_finding_mentions_never_fails_and_positions_are_in_order(text: str) -> None:
    found = find_mentions(text)
    assert all(0 <= a.start < a.end <= len(text) for a in found)
    assert all(a.end <= b.start for a, b in itertools.pairwise(found))
    assert all(text[m.start] == "@" for m in found)
