"""Fuzzy ranking of workspace paths for ``@`` completion (pure).

A path matches when the query's characters appear in it in order (case-insensitive: both are case-folded).
Better matches come first, in tiers: the file or directory *name* starting with the query, the name containing
it, the whole path containing it, the name holding it as a subsequence, the path holding it as a subsequence;
within a tier, fewer gaps between the matched characters, then the shorter path, then the path itself.
A query with a ``/`` is about the path, so only the path tiers apply (``src/`` still ranks directories named
``src`` by name).

The index is prepared once (``Corpus``): folded paths and names, and all of them joined in one string, so that
one regular expression finds the matching paths at C speed and only those are scored in Python.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Sequence

import msgspec

_NAME_PREFIX, _NAME_SUBSTRING, _PATH_SUBSTRING, _NAME_SUBSEQUENCE, _PATH_SUBSEQUENCE = range(5)

Score = tuple[int, int, int, str]


def name_of(path: str) -> str:
    """The last component of ``path`` (a directory's trailing ``/`` is not part of it)."""
    return path.rstrip("/").rsplit("/", 1)[-1]


def _steps(query: str, line: bool) -> str:
    """The query's characters in order, each gap a possessive "anything but the next character" (and, over the
    joined corpus, but a line end): one pass, no backtracking (a lazy ``.*?`` is exponential on a miss)."""
    stop = "\n" if line else ""
    return "".join(f"[^{stop}{re.escape(ch)}]*+({re.escape(ch)})" for ch in query)


class Corpus(msgspec.Struct, frozen=True):
    """Paths prepared for ranking: case-folded once, and joined (one per line) for the C-speed filter."""

    paths: list[str]
    folded: list[str]
    names: list[str]
    text: str
    line_at: dict[int, int]
    """The index of the path whose line starts at each offset of ``text``."""

    @classmethod
    def of(cls, paths: Sequence[str]) -> Corpus:
        """Prepare ``paths`` (a path holding a line break can never match, and is left out)."""
        kept = [p for p in paths if "\n" not in p]
        folded = [p.casefold() for p in kept]
        line_at, offset = {}, 0
        for index, path in enumerate(folded):
            line_at[offset] = index
            offset += len(path) + 1
        return cls(kept, folded, [name_of(f) for f in folded], "\n".join(folded), line_at)

    def matching(self, folded_query: str) -> list[int]:
        """The indexes of the paths that hold ``folded_query`` in order."""
        if not folded_query:
            return list(range(len(self.paths)))
        # Tried at line starts only, and each match eats the rest of its line: one match per path, in C.
        pattern = re.compile("^" + _steps(folded_query, line=True) + "[^\n]*", re.MULTILINE)
        return [self.line_at[match.start()] for match in pattern.finditer(self.text)]


def _gaps(match: re.Match[str]) -> int:
    """How many characters lie between the matched ones (0: the query appears contiguously)."""
    return sum(match.start(g + 1) - match.end(g) for g in range(1, match.re.groups))


def subsequence(query: str) -> re.Pattern[str]:
    """The leftmost in-order match of the (case-folded) ``query``'s characters in a folded path or name."""
    return re.compile(_steps(query.casefold(), line=False))


def score(
    query: str,
    path: str,
    folded: str | None = None,
    name: str | None = None,
    pattern: re.Pattern[str] | None = None,
) -> Score | None:
    """The sort key of ``path`` for ``query`` (smaller is better), or None when it does not match; ``folded``,
    ``name`` and ``pattern`` are what ``Corpus`` and ``subsequence`` prepared, computed here when not given."""
    if not query:
        return (_PATH_SUBSEQUENCE, 0, len(path), path)
    q = query.casefold()
    folded = path.casefold() if folded is None else folded
    name = name_of(folded) if name is None else name
    stem = q.rstrip("/")
    # "src/" asks for a directory named like src: the name tiers then apply to directories only
    by_name = bool(stem) and "/" not in stem and (stem == q or path.endswith("/"))
    if by_name and name.startswith(stem):
        return (_NAME_PREFIX, 0, len(path), path)
    if by_name and stem in name:
        return (_NAME_SUBSTRING, 0, len(path), path)
    if q in folded:
        return (_PATH_SUBSTRING, 0, len(path), path)
    pattern = subsequence(q) if pattern is None else pattern
    if by_name:
        in_name = pattern.match(name)
        if in_name is not None:
            return (_NAME_SUBSEQUENCE, _gaps(in_name), len(path), path)
    in_path = pattern.match(folded)
    if in_path is not None:
        return (_PATH_SUBSEQUENCE, _gaps(in_path), len(path), path)
    return None


def rank(query: str, corpus: Corpus | Sequence[str], limit: int) -> list[str]:
    """The best ``limit`` paths for ``query``, best first (see the module docstring for the order)."""
    prepared = corpus if isinstance(corpus, Corpus) else Corpus.of(corpus)
    keys: list[Score] = []
    pattern = subsequence(query)
    for i in prepared.matching(query.casefold()):
        key = score(query, prepared.paths[i], prepared.folded[i], prepared.names[i], pattern)
        if key is not None:
            keys.append(key)
    return [key[3] for key in heapq.nsmallest(limit, keys)]
