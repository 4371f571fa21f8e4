"""Fuzzy ranking of paths for @ completion (pure): subsequence matching, name before path, shorter first."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dashfloat.executor._fuzzy import Corpus, name_of, rank, score

TREE = [
    "README.md",
    "docs/",
    "docs/readme-old.txt",
    "docs/architecture.md",
    "dashfloat/",
    "dashfloat/ui/",
    "dashfloat/ui/render.py",
    "dashfloat/executor/_serve.py",
    "tests/ui/test_ui_render.py",
    "src/read_me_first.txt",
]


def test_the_name_starting_with_the_query_comes_first() -> None:
    assert rank("READ", TREE, 3) == ["README.md", "docs/readme-old.txt", "src/read_me_first.txt"]


def test_a_name_match_beats_a_match_spread_over_the_path() -> None:
    # "render" is in both names; the shorter path first, and a path-only match ("dr" over d…/…r) last
    assert rank("render", TREE, 5) == ["dashfloat/ui/render.py", "tests/ui/test_ui_render.py"]
    assert rank("arch", TREE, 1) == ["docs/architecture.md"]


def test_a_subsequence_matches_and_fewer_gaps_rank_higher() -> None:
    assert "dashfloat/executor/_serve.py" in rank("exsrv", TREE, 10)
    ranked = rank("rdm", ["r-d-m.txt", "rdxm.txt", "r____d____m.txt"], 3)
    assert ranked == ["rdxm.txt", "r-d-m.txt", "r____d____m.txt"]


def test_a_query_with_a_slash_is_about_the_path() -> None:
    assert rank("ui/ren", TREE, 5) == ["dashfloat/ui/render.py", "tests/ui/test_ui_render.py"]
    assert rank("docs/", TREE, 1) == ["docs/"]


def test_case_does_not_matter_and_nothing_matching_gives_nothing() -> None:
    assert rank("readme.MD", TREE, 1) == ["README.md"]
    assert rank("zzz", TREE, 5) == []


def test_an_empty_query_offers_the_shortest_paths() -> None:
    assert rank("", TREE, 2) == ["docs/", "README.md"]


def test_the_limit_bounds_the_answer() -> None:
    many = [f"f{i}.txt" for i in range(100)]
    assert len(rank("f", many, 20)) == 20
    assert len(rank("f", many, 200)) == 100


def test_a_long_miss_is_linear_not_exponential() -> None:
    # A lazy-gap pattern would try every placement of the a's before failing on the missing b.
    assert rank("a" * 30 + "b", ["a" * 4000], 5) == []


def test_name_of_ignores_a_directorys_slash() -> None:
    assert name_of("a/b/") == "b"
    assert name_of("c.txt") == "c.txt"


def is_subsequence(query: str, path: str) -> bool:
    rest = iter(path)
    return all(ch in rest for ch in query)


ascii_path = st.text(st.sampled_from("abcAB/._-"), min_size=1, max_size=20)


@given(st.text(st.sampled_from("abcAB/._-"), min_size=1, max_size=5), st.lists(ascii_path, max_size=30))
def test_a_path_is_offered_exactly_when_it_holds_the_query_in_order(query: str, candidates: list[str]) -> None:
    ranked = rank(query, candidates, 1000)
    expected = [p for p in candidates if is_subsequence(query.lower(), p.lower())]
    assert sorted(ranked) == sorted(expected)


@given(st.text(min_size=1, max_size=6), st.lists(st.text(min_size=1, max_size=20), max_size=20))
def test_the_order_is_the_score_order_and_the_limit_holds(query: str, candidates: list[str]) -> None:
    ranked = rank(query, candidates, 5)
    assert len(ranked) <= 5
    keys = [score(query, p) for p in ranked]
    assert all(k is not None for k in keys)
    assert keys == sorted(keys)  # type: ignore[type-var]


no_newline = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\n"), max_size=15)


@given(no_newline, st.lists(no_newline, max_size=25))
def test_the_joined_filter_finds_exactly_the_paths_holding_the_query(query: str, candidates: list[str]) -> None:
    corpus = Corpus.of(candidates)
    folded = query.casefold()
    expected = [i for i, p in enumerate(candidates) if is_subsequence(folded, p.casefold())]
    assert corpus.matching(folded) == expected


def test_a_path_with_a_line_break_is_never_offered() -> None:
    assert rank("a", ["a\nb", "a"], 5) == ["a"]
