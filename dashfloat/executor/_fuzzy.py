"""Fuzzy ranking of workspace paths for ``@`` completion (pure).

A path matches when the query's characters appear in it in order (case-insensitive). Better matches come
first, in tiers: the file or directory *name* starting with the query, the name containing it, the whole
path containing it, the name holding it as a subsequence, the path holding it as a subsequence; within a
tier, fewer gaps between the matched characters, then the shorter path, then the path itself (stable).
A query with a ``/`` is about the path, so only the path tiers apply (``src/`` still ranks directories named
``src`` by name).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_NAME_PREFIX, _NAME_SUBSTRING, _PATH_SUBSTRING, _NAME_SUBSEQUENCE, _PATH_SUBSEQUENCE = range(5)


def name_of(path: str) -> str:
    """The last component of ``path`` (a directory's trailing ``/`` is not part of it)."""
    return path.rstrip("/").rsplit("/", 1)[-1]


def _subsequence(query: str) -> re.Pattern[str]:
    """The leftmost in-order match of the query's characters. Each gap is a possessive "anything but the next
    character", so the match is one pass with no backtracking (a lazy ``.*?`` is exponential on a miss)."""
    steps = (f"[^{re.escape(ch)}]*+({re.escape(ch)})" for ch in query)
    return re.compile("".join(steps), re.IGNORECASE)


def _gaps(match: re.Match[str]) -> int:
    """How many characters lie between the matched ones (0: the query appears contiguously)."""
    return sum(match.start(g + 1) - match.end(g) for g in range(1, match.re.groups))


def score(query: str, path: str, pattern: re.Pattern[str] | None = None) -> tuple[int, int, int, str] | None:
    """The sort key of ``path`` for ``query`` (smaller is better), or None when it does not match."""
    if not query:
        return (_PATH_SUBSEQUENCE, 0, len(path), path)
    pattern = pattern or _subsequence(query)
    folded, lowered = query.casefold(), path.casefold()
    name = name_of(lowered)
    stem = folded.rstrip("/")
    # "src/" asks for a directory named like src: the name tiers then apply to directories only
    by_name = bool(stem) and "/" not in stem and (stem == folded or path.endswith("/"))
    if by_name and name.startswith(stem):
        return (_NAME_PREFIX, 0, len(path), path)
    if by_name and stem in name:
        return (_NAME_SUBSTRING, 0, len(path), path)
    if folded in lowered:
        return (_PATH_SUBSTRING, 0, len(path), path)
    if by_name:
        in_name = pattern.match(name)
        if in_name is not None:
            return (_NAME_SUBSEQUENCE, _gaps(in_name), len(path), path)
    in_path = pattern.match(path)
    if in_path is not None:
        return (_PATH_SUBSEQUENCE, _gaps(in_path), len(path), path)
    return None


def rank(query: str, paths: Iterable[str], limit: int) -> list[str]:
    """The best ``limit`` of ``paths`` for ``query``, best first (see the module docstring for the order)."""
    pattern = _subsequence(query) if query else None
    scored = []
    for path in paths:
        key = score(query, path, pattern)
        if key is not None:
            scored.append(key)
    scored.sort()
    return [key[3] for key in scored[:limit]]
