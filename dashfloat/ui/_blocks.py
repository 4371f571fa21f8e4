"""Where streamed Markdown's blocks end (finished blocks leave the live region for the scrollback), and where drawn
rows end in their source (rows a resize or an overflow committed). Pure."""

from __future__ import annotations

import re
from itertools import chain
from operator import itemgetter

from dashfloat.ui._text import Row


def _fence_marker(line: str) -> str | None:
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3:
        return None
    for ch in "`~":
        if stripped.startswith(ch * 3):
            return ch * (len(stripped) - len(stripped.lstrip(ch)))
    return None


def split_finished(source: str) -> tuple[str, str]:
    """Split streamed Markdown into (finished blocks, open block).

    A block is finished when a closing fence ends it, a fence starts after it, or a blank line is
    followed by text at column 0 (indented text may still belong to a list item or a code block).
    """
    blocks, rest = finished_blocks(source)
    return "".join(blocks), rest


def finished_blocks(source: str) -> tuple[list[str], str]:
    """``split_finished`` with the finished part cut at every block end, as a stream that came a character at a time
    would have cut it: each block is drawn alone, so how the text was chunked never changes what is drawn (two list
    items a blank line apart are two blocks either way)."""
    lines = source.split("\n")
    cuts: list[int] = []
    cut = 0
    pos = 0
    fence: str | None = None
    blank_seen = False
    for i, line in enumerate(lines):
        complete = i < len(lines) - 1
        marker = _fence_marker(line) if complete else None
        if fence is not None:
            closes = marker is not None and marker[0] == fence[0] and len(marker) >= len(fence)
            if closes and line.strip() == marker:
                fence = None
                cut = pos + len(line) + 1
                cuts.append(cut)
                blank_seen = False
        elif line.strip() == "":
            blank_seen = complete or blank_seen
        else:
            at_column_0 = not line.startswith((" ", "\t"))
            if blank_seen and at_column_0:
                cut = pos
                cuts.append(cut)
            blank_seen = False
            if marker is not None:
                if at_column_0 and cut != pos:
                    cut = pos
                    cuts.append(cut)
                fence = marker
        pos += len(line) + 1
    starts = [0, *cuts]
    return [source[a:b] for a, b in zip(starts, cuts, strict=False) if b > a], source[cut:]


def _plain(rows: tuple[Row, ...]) -> str:
    # in C: every tick of an overflowing stream joins the open block's rows (a fragment a word) three times
    return "".join(map(itemgetter(1), chain.from_iterable(rows)))


def _source_cut(source: str, shown: str) -> int | None:
    """Where in ``source`` the text ``shown`` ends, if its characters are the source's own (spaces aside)."""
    ink = "".join(shown.split())
    if not ink:
        return None
    # Run by run (a word at a time, compared in C): a stream overflowing the screen cuts its open block every tick.
    matched = 0
    for run in _INK_RUNS.finditer(source):
        word = run.group()
        need = len(ink) - matched
        if len(word) >= need:
            return run.start() + need if ink.endswith(word[:need]) else None
        if not ink.startswith(word, matched):
            return None
        matched += len(word)
    return None


_INK_RUNS = re.compile(r"\S+")
"""Runs of characters that are not whitespace (``str.isspace``'s whitespace, as ``str.split`` splits at)."""


def _ink(rows: tuple[Row, ...]) -> int:
    return sum(len(text) - text.count(" ") for row in rows for _, text in row)
