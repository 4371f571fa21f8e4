"""Screen rows of styled fragments: width measurement, sanitising and word wrapping (pure)."""

from __future__ import annotations

import re

import msgspec
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
    # Printable ASCII is one column a character; get_cwidth sums a long string character by character in Python.
    return len(text) if text.isascii() and text.isprintable() else get_cwidth(text)


def row_width(row: Row) -> int:
    """Columns taken by one row."""
    return sum(width_of(text) for _, text in row)


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


def soft_break(line: str, width: int) -> list[str]:
    """One line of verbatim text (a diff line, command output) in rows of at most ``width`` columns, nothing lost
    or added: a row ends after a space where one follows a word on it, so a word that fits a row is never split;
    only a word wider than the row (or a character wider than it) is cut by columns. Spaces stay where they were
    (the end of a row, or a row's start when the space itself did not fit), so the rows joined are the line."""
    width = max(1, width)
    ascii_only = line.isascii() and line.isprintable()
    rows: list[str] = []
    start = used = 0
    cut = -1  # just after the row's last space that follows a non-space: where a row may end
    word_seen = False
    for i, ch in enumerate(line):
        w = 1 if ascii_only else get_cwidth(ch)
        if used + w > width and i > start:
            if ch != " " and cut > start:
                rows.append(line[start:cut])
                start = cut
                used = width_of(line[cut:i])
                word_seen = i > cut
            else:
                rows.append(line[start:i])
                start, used, word_seen = i, 0, False
            cut = -1
        used += w
        if ch != " ":
            word_seen = True
        elif word_seen:
            cut = i + 1
    rows.append(line[start:])
    return rows


WRAP_RESUME_MIN_CHARS = 2048
"""Text at least this long is wrapped resumably: a streamed paragraph grows by a few words per frame, and
wrapping it whole every frame cost O(n) per frame, O(n²) per paragraph (issue 19: most of the TUI's CPU)."""
WRAP_RESUME_ENTRIES = 4
"""Recent long wraps kept to resume from (the open paragraph, plus slack for a second width or block)."""


class _Mark(msgspec.Struct, frozen=True):
    """The wrap's whole state once everything before fragment ``index``, character ``offset`` is placed: ``rows``
    rows done, ``line`` (used columns ``used``) started. Noted where a row starts: after a line break (nothing on
    it yet) and after the word that opened it."""

    index: int
    offset: int
    rows: int
    line: Row = ()
    used: int = 0


class WrapMemo(msgspec.Struct, frozen=True, eq=False):
    """One finished wrap and where its rows start, so a longer version of the same text resumes from there."""

    fragments: tuple[Fragment, ...]
    width: int
    rows: tuple[Row, ...]
    marks: tuple[_Mark, ...]


_RECENT: list[WrapMemo] = []
_RUNS = re.compile(r" +|[^ ]+")


def wrap(fragments: list[Fragment], width: int) -> list[Row]:
    """Greedy word wrap of styled text into rows of at most ``width`` columns; ``\\n`` forces a break.

    Long text resumes from a recent wrap of the same text's beginning (what a streamed paragraph is); the rows
    are exactly those of a fresh wrap (tests/ui/test_wrap_resume.py).
    """
    width = max(1, width)
    if sum(len(text) for _, text in fragments) < WRAP_RESUME_MIN_CHARS:
        return _wrap(fragments, width, [], _Mark(0, 0, 0), None)
    memo = wrap_resuming(tuple(fragments), width, _RECENT)
    _RECENT[:] = [memo, *(m for m in _RECENT if m is not memo)][:WRAP_RESUME_ENTRIES]
    return list(memo.rows)


def wrap_resuming(fragments: tuple[Fragment, ...], width: int, recent: list[WrapMemo]) -> WrapMemo:
    """``fragments`` wrapped at ``width`` (≥ 1), resumed from the memo in ``recent`` that saves the most rows."""
    best: tuple[int, WrapMemo, _Mark] | None = None
    for memo in recent:
        if memo.width != width:
            continue
        if memo.fragments == fragments:
            return memo
        k = _resume_at(memo, fragments)
        if k >= 0 and (best is None or memo.marks[k].rows > best[2].rows):
            best = (k, memo, memo.marks[k])
    for memo in recent:
        # A block cut at a row's start (its rows above went to the scrollback): its wrap is the rest of this one,
        # whole (no resumed wrap can save more rows than the result has).
        rebased = _rebased(memo, fragments) if memo.width == width else None
        if rebased is not None:
            return rebased
    if best is None:
        marks: list[_Mark] = [_Mark(0, 0, 0)]
        rows = _wrap(list(fragments), width, [], marks[0], marks)
    else:
        k, memo, mark = best
        marks = list(memo.marks[: k + 1])
        rows = _wrap(list(fragments), width, list(memo.rows[: mark.rows]), mark, marks)
    return WrapMemo(fragments, width, tuple(rows), tuple(marks))


def _rebased(memo: WrapMemo, fragments: tuple[Fragment, ...]) -> WrapMemo | None:
    """``memo``'s wrap from one of its rows on, when ``fragments`` are ``memo``'s text from where that row starts.

    Where a row starts, the wrap is in a fresh wrap's state: after a line break nothing is on the row yet, and
    after the word that opened it only that word is (a word starts the same whatever came before it). So a
    fresh wrap of the text from there gives the same rows, and notes the same marks, counted from that row."""
    old = memo.fragments
    i = len(old) - len(fragments)
    if not fragments or i < 0 or old[i + 1 :] != fragments[1:]:
        return None
    style, text = fragments[0]
    if old[i][0] != style or not old[i][1].endswith(text):
        return None
    start = len(old[i][1]) - len(text)
    for k, mark in enumerate(memo.marks):
        # A mark after a line break is where its row starts; one after the word that opened a row, that word's length
        # after it (its line holds that word alone).
        row_start = mark.offset - sum(len(word) for _, word in mark.line)
        if mark.index != i or row_start < start:
            continue
        if row_start > start:
            return None  # the text starts inside a row
        done = mark.rows
        marks = [_Mark(0, 0, 0)] if mark.line else []
        marks += [
            _Mark(m.index - i, m.offset - start if m.index == i else m.offset, m.rows - done, m.line, m.used)
            for m in memo.marks[k:]
        ]
        return WrapMemo(fragments, memo.width, memo.rows[done:], tuple(marks))
    return None


def _resume_at(memo: WrapMemo, fragments: tuple[Fragment, ...]) -> int:
    """The last of ``memo``'s marks that ``fragments`` share everything before, and the word starting there
    (word boundaries depend on the characters either side); -1 when there is none."""
    old = memo.fragments
    same = 0
    while same < len(old) and same < len(fragments) and old[same] == fragments[same]:
        same += 1
    # Every mark inside the fragments both share is good. In the first that differs, a mark after a word needs
    # the next character shared too (the word must end there in both); one after a line break does not.
    common = 0
    if same < len(old) and same < len(fragments) and old[same][0] == fragments[same][0]:
        common = _common_prefix(old[same][1], fragments[same][1])
    marks = memo.marks
    for k in range(len(marks) - 1, -1, -1):
        mark = marks[k]
        if mark.index < same or (
            mark.index == same and (mark.offset < common or (not mark.line and mark.offset <= common))
        ):
            return k
    return -1


def _common_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share (slices compared in C: a streamed text only grows)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n - 1  # a[:lo] == b[:lo] and a[:hi + 1] != b[:hi + 1]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _wrap(fragments: list[Fragment], width: int, rows: list[Row], start: _Mark, marks: list[_Mark] | None) -> list[Row]:
    """Wrap ``fragments`` from the state ``start`` (``rows`` are its rows); where a later row starts, note the
    state in ``marks``."""
    line: list[Fragment] = list(start.line)
    used = start.used
    index, offset = start.index, start.offset

    def finish() -> None:
        nonlocal line, used
        while line and line[-1][1].strip() == "":
            line.pop()
        if line:
            style, text = line[-1]
            line[-1] = (style, text.rstrip(" "))
        rows.append(tuple(line))
        line, used = [], 0

    for i in range(index, len(fragments)):
        style, text = fragments[i]
        pos = offset if i == index else 0
        for n, part in enumerate(text[pos:].split("\n")):
            if n:
                finish()
                if marks is not None:
                    marks.append(_Mark(i, pos, len(rows)))
            for word in _words(part):
                w = len(word) if word.isascii() and word.isprintable() else get_cwidth(word)
                if word == " " * len(word):
                    if line and used + w <= width:
                        line.append((style, word))
                        used += w
                    elif line:
                        used = width  # a gap that does not fit ends the row: the next word must not join this one
                    pos += len(word)
                    continue
                if used + w <= width:
                    line.append((style, word))
                    used += w
                elif line and w <= width:
                    finish()
                    line.append((style, word))
                    used = w
                    if marks is not None:
                        marks.append(_Mark(i, pos + len(word), len(rows), tuple(line), used))
                else:
                    for k, piece in enumerate(hard_break([(style, word)], width, room=width - used)):
                        if k:
                            finish()
                        line.extend(piece)
                        used += row_width(piece)
                pos += len(word)
            pos += 1  # the line break
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
    if text.isascii():  # no wide character: the runs alone (a regular expression, not a loop per character)
        return _RUNS.findall(text)
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


def diff_line_rows(line: str, width: int) -> list[str]:
    """One diff line in rows: its marker (+, -, space) keeps its column alone, the continuation rows start one in,
    and words are not split where they fit (``soft_break``)."""
    if len(line) < 2 or width < 2:
        return soft_break(line, width)
    first, *more = soft_break(line[1:], width - 1)
    return [line[0] + first, *(" " + piece for piece in more)]


def format_count(n: int) -> str:
    """12345 -> 12.3k, 128000 -> 128k, 999999 -> 1M, 1200000 -> 1.2M."""
    if n < 1000:
        return str(n)
    limit, suffix = (1_000_000, "M") if n >= 999_500 else (1_000, "k")  # 999 999 rounds to 1M, not 1000k
    value = n / limit
    text = f"{value:.1f}" if value < 99.95 else f"{value:.0f}"
    return text.removesuffix(".0") + suffix
