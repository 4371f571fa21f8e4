"""Ctrl-R's search over the input history, as plain functions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dashfloat.ui._history import ReverseSearch, search_older

HISTORY = ("make test", "git status", "make bench", "ls")


def test_each_ctrl_r_goes_one_match_older_and_a_miss_keeps_the_last_match() -> None:
    search = ReverseSearch("draft", len(HISTORY))
    assert search.type(HISTORY, "make") == "make bench"
    assert search.again(HISTORY) == "make test"
    assert search.again(HISTORY) is None and search.found == 0  # no older one: stays on it
    assert "failed" not in search.prompt(HISTORY)
    assert search.type(HISTORY, "zz") is None and "failed reverse-i-search" in search.prompt(HISTORY)
    assert search.erase(HISTORY) is None  # "makez" still matches nothing
    assert search.erase(HISTORY) == "make bench"  # back to "make": the newest match again
    assert search.draft == "draft"


@given(st.lists(st.text(max_size=5), max_size=8), st.text(min_size=1, max_size=2), st.integers(0, 10))
def test_search_older_finds_the_newest_match_before_the_start(history: list[str], query: str, before: int) -> None:
    found = search_older(tuple(history), query, before)
    candidates = [i for i, entry in enumerate(history[:before]) if query in entry]
    assert found == (max(candidates) if candidates else None)
