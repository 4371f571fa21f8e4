"""Screen rows of styled fragments: width measurement, sanitising and word wrapping (pure)."""

from __future__ import annotations

import re

from prompt_toolkit.utils import get_cwidth

from dashfloat.textsafe import defuse

Fragment = tuple[str, str]
Row = tuple[Fragment, ...]
"""One screen row: (style, text) fragments, no newline inside."""


def sanitize(text: str) -> str:
    """Tabs to spaces, other control characters to caret notation, so widths stay exact (newlines kept)."""
    # Zero-width joiners and the like may stay when they take columns; other invisible characters vanish.
    return defuse(text, keep_newlines=True, keep_invisible=lambda ch: get_cwidth(ch) > 0)


def width_of(text: str) -> int:
    """Terminal columns taken by ``text`` (CJK and most emoji count two)."""
    return get_cwidth(text)


def row_width(row: Row) -> int:
    """Columns taken by one row."""
    return sum(get_cwidth(text) for _, text in row)


def clip(text: str, width: int, ellipsis: str = "…") -> str:
    """``text`` cut to at most ``width`` columns, marking the cut."""
    if get_cwidth(text) <= width:
        return text
    out: list[str] = []
    used = 0
    limit = max(0, width - get_cwidth(ellipsis))
    for ch in text:
        w = get_cwidth(ch)
        if used + w > limit:
            break
        out.append(ch)
        used += w
    return "".join(out) + (ellipsis if width >= get_cwidth(ellipsis) else "")


def hard_break(fragments: list[Fragment], width: int, room: int | None = None) -> list[Row]:
    """Styled text broken by columns, never reflowed: the first row holds ``room`` columns, the others ``width``.

    A character wider than a whole row still gets a row of its own. With ``room`` smaller than the first
    character, the first row is empty (the caller's current line is full).
    """
    width = max(1, width)
    limit = width if room is None else room
    rows: list[list[Fragment]] = [[]]
    used = 0
    for style, text in fragments:
        start = 0
        for i, ch in enumerate(text):
            w = get_cwidth(ch)
            if used + w > limit and (used or (len(rows) == 1 and limit < width)):
                rows[-1].append((style, text[start:i]))
                rows.append([])
                start, used, limit = i, 0, width
            used += w
        rows[-1].append((style, text[start:]))
    return [tuple(f for f in row if f[1]) for row in rows]


def wrap(fragments: list[Fragment], width: int) -> list[Row]:
    """Greedy word wrap of styled text into rows of at most ``width`` columns; ``\\n`` forces a break."""
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
            for word in _words(part):
                w = get_cwidth(word)
                if word == " " * len(word):
                    if line and used + w <= width:
                        line.append((style, word))
                        used += w
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
                for i, piece in enumerate(hard_break([(style, word)], width, room=width - used)):
                    if i:
                        finish()
                    line.extend(piece)
                    used += row_width(piece)
    finish()
    return rows


_COLUMNS = re.compile(r"^(\S.*?\s{2,})(\S.*)$")
"""A line laid out in two columns (``/help  list these commands``): its head and the text after the gap."""


def hanging_wrap(text: str, style: str, width: int, mark: Fragment) -> list[Row]:
    """Each line of ``text`` after ``mark``, wrapped to ``width``; a wrapped line continues indented under its text.

    A two-column line (``/undo   revert the files...``) continues under its second column when that column
    starts in the left half; any other line continues two columns in. Only a line's first row has the mark,
    so no continuation looks like a line of its own.
    """
    pad = (mark[0], " " * get_cwidth(mark[1]))
    room = max(1, width - get_cwidth(mark[1]))
    rows: list[Row] = []
    for line in text.split("\n"):
        columns = _COLUMNS.match(line)
        indent = get_cwidth(columns.group(1)) if columns else 0
        if columns and 0 < indent <= room // 2:
            head, body = (style, columns.group(1)), wrap([(style, columns.group(2))], room - indent)
            rows.append((mark, head, *body[0]))
            rows.extend((pad, (style, " " * indent), *r) for r in body[1:])
            continue
        line = line.lstrip(" ")  # wrap drops a row's leading spaces too
        first = wrap([(style, line)], room)[0]
        rows.append((mark, *first))
        rest = line[_first_row_chars(first) :].lstrip(" ")
        if rest:
            rows.extend((pad, (style, "  "), *r) for r in wrap([(style, rest)], room - 2))
    return rows


def _first_row_chars(row: Row) -> int:
    return sum(len(text) for _, text in row)


def _words(text: str) -> list[str]:
    """Alternating runs of spaces and non-spaces; CJK text breaks between any two characters."""
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


def indent(rows: list[Row], first: Fragment, rest: Fragment) -> list[Row]:
    """Prefix the first row with ``first`` and every other row with ``rest``."""
    return [((first if i == 0 else rest), *row) for i, row in enumerate(rows)]
