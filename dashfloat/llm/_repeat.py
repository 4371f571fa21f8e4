"""The repetition guard: notices a model looping on one span (seen from small local models for minutes).

Every ``REPEAT_CHECK_EVERY_CHARS`` of new text it looks at the tail: the last ``REPEAT_SPAN_MIN_CHARS``
characters are searched for backwards (``str.rfind``, C speed); each earlier occurrence proposes a period,
and the tail repeats when its last ``REPEAT_MIN_COUNT`` periods are identical (one slice comparison).

What repeats is then told apart by its shortest unit (ADR 0051):
- a **passage** (a unit of ``REPEAT_SPAN_MIN_CHARS`` or more: a sentence, a paragraph, a line) repeated
  ``REPEAT_MIN_COUNT`` times back to back is a loop, and so is a **long passage** (``REPEAT_LONG_PASSAGE_CHARS`` or
  more) seen twice back to back at a look (ADR 0079: a small model re-writing a 236-character schema line or a
  paragraph loops for minutes before 24 copies come);
- a **run** (a shorter unit: ``=====``, ``|-----``, blank lines, ``0, 0, 0``) is what rules, table separators,
  padding and zeroed data are made of, and is a loop only once it is ``REPEAT_RUN_MIN_CHARS`` long. A run shorter
  than that is looked past: an earlier occurrence of the needle before the run may still show a passage looping
  (a long rule inside a repeated block).
"""

from __future__ import annotations

import bisect
import collections
import itertools
from typing import Final, NamedTuple

from dashfloat.llm._limits import (
    REPEAT_CHECK_EVERY_CHARS,
    REPEAT_MIN_COUNT,
    REPEAT_RUN_MIN_CHARS,
    REPEAT_SPAN_MAX_CHARS,
    REPEAT_SPAN_MIN_CHARS,
)

REPEAT_LONG_PASSAGE_CHARS: Final = 160
"""A passage this long is a loop once it is written twice back to back (the count is for shorter ones)."""
LONG_PASSAGE_COPIES: Final = 2

_CANDIDATES = 8  # earlier occurrences of the needle tried per check (a later check shifts the needle)
_TAIL_CHARS = max(REPEAT_MIN_COUNT * REPEAT_SPAN_MAX_CHARS, REPEAT_RUN_MIN_CHARS)


class Loop(NamedTuple):
    """What the tail ends by repeating."""

    span: str
    """A whole number of units, ``REPEAT_SPAN_MIN_CHARS`` or more (for a passage, the passage): one copy is kept."""
    unit: int
    """The length of the shortest unit that repeats (below ``REPEAT_SPAN_MIN_CHARS``: a run)."""
    copies: int = REPEAT_MIN_COUNT
    """How many copies of a passage made it a loop (``LONG_PASSAGE_COPIES`` for a long one)."""

    @property
    def run(self) -> bool:
        return self.unit < REPEAT_SPAN_MIN_CHARS


def _repeats(text: str, period: int) -> bool:
    return text[period:] == text[:-period]


def _shortest_unit(looped: str, period: int) -> int:
    """The shortest period of ``looped``, which repeats with ``period`` over at least two periods (so by Fine and
    Wilf the shortest divides ``period``)."""
    for unit in range(1, period // 2 + 1):
        if period % unit == 0 and _repeats(looped, unit):
            return unit
    return period


def _needle_unit(needle: str) -> int:
    """The unit of a run the needle lies in (one that repeats at least twice within it), else 0."""
    # A unit u <= half repeats the needle's first half at u; the first place it recurs is the shortest unit if there
    # is one (an earlier u would, by Fine and Wilf, make gcd(u, unit) a shorter one). One C-speed find; prose: none.
    half = len(needle) // 2
    unit = needle.find(needle[:half], 1)
    return unit if 0 < unit <= half and _repeats(needle, unit) else 0


def _run_chars(tail: str, unit: int, known: int) -> int:
    """How many characters at the end of ``tail`` repeat with ``unit`` (``known`` of them do), counted up to
    ``REPEAT_RUN_MIN_CHARS`` (a run that long is a loop however much longer it is)."""
    low, high = known, min(len(tail), REPEAT_RUN_MIN_CHARS)
    if high <= low or _repeats(tail[-high:], unit):
        return max(low, high)
    while high - low > 1:  # the last ``low`` characters repeat, the last ``high`` do not
        middle = (low + high) // 2
        if _repeats(tail[-middle:], unit):
            low = middle
        else:
            high = middle
    return low


def _repeating(tail: str, needle_at: int) -> tuple[int, int, int] | None:
    """The first period an earlier occurrence of the needle at ``needle_at`` proposes over which the tail's end
    repeats ``REPEAT_MIN_COUNT`` times (a period shorter than the needle counts as its smallest multiple that is
    not), or twice for a long passage, as (period, characters that repeat, copies), or None."""
    needle = tail[needle_at : needle_at + REPEAT_SPAN_MIN_CHARS]
    end = needle_at + REPEAT_SPAN_MIN_CHARS - 1
    for _ in range(_CANDIDATES):
        found = tail.rfind(needle, max(0, needle_at - REPEAT_SPAN_MAX_CHARS), end)
        if found < 0:
            return None
        period = needle_at - found
        span = period * -(-REPEAT_SPAN_MIN_CHARS // period)  # the smallest multiple that is a long span
        region = span * REPEAT_MIN_COUNT
        if span <= REPEAT_SPAN_MAX_CHARS and region <= len(tail) and _repeats(tail[-region:], period):
            return period, region, REPEAT_MIN_COUNT
        twice = period * LONG_PASSAGE_COPIES
        long = REPEAT_LONG_PASSAGE_CHARS <= period <= REPEAT_SPAN_MAX_CHARS and twice <= len(tail)
        # Only a passage long in itself: copies of a shorter one that add up to the length are the count's.
        if long and _repeats(tail[-twice:], period) and _shortest_unit(tail[-twice:], period) == period:
            return period, twice, LONG_PASSAGE_COPIES
        end = found + REPEAT_SPAN_MIN_CHARS - 1
    return None


def _run_loop(tail: str, unit: int) -> Loop:
    return Loop(tail[-(unit * -(-REPEAT_SPAN_MIN_CHARS // unit)) :], unit)


def looping_span(tail: str) -> Loop | None:
    """The loop ``tail`` ends with, or None."""
    needle_at = len(tail) - REPEAT_SPAN_MIN_CHARS
    if needle_at < 0:
        return None
    unit, known = _needle_unit(tail[needle_at:]), REPEAT_SPAN_MIN_CHARS
    for _ in range(2):  # the tail's end; then, if that is a run too short to be a loop, from where the run starts
        if unit:
            run = _run_chars(tail, unit, known)
            if run >= REPEAT_RUN_MIN_CHARS:
                return _run_loop(tail, unit)
            # A run this short is no loop by itself, but a passage that holds it may be repeating: the needle
            # straddles the run's start, so an earlier occurrence lines up with an earlier copy of the passage.
            needle_at = len(tail) - run - REPEAT_SPAN_MIN_CHARS // 2
            if needle_at < 0:
                return None
        repeating = _repeating(tail, needle_at)
        if repeating is None:
            return None
        period, known, copies = repeating
        unit = _shortest_unit(tail[-known:], period)
        if unit >= REPEAT_SPAN_MIN_CHARS:
            return Loop(tail[-unit:], unit, copies)  # a passage
    return None


class RepetitionGuard:
    """Fed the text of one kind (content or reasoning) as it streams; ``feed`` returns the loop it ends with."""

    def __init__(self) -> None:
        self._pieces: collections.deque[str] = collections.deque()
        self._held = 0
        self._since_check = 0

    def feed(self, text: str) -> Loop | None:
        self._add(text)
        if self._since_check < REPEAT_CHECK_EVERY_CHARS:
            return None
        self._since_check = 0
        return looping_span("".join(self._pieces)[-_TAIL_CHARS:])

    def feed_many(self, texts: list[str]) -> tuple[int, Loop] | None:
        """``feed`` each of ``texts`` in turn, looking only where ``feed`` would look: the index of the first text
        that shows a loop and the loop, or None. After a loop the remaining texts are not fed."""
        start = 0
        ends = list(itertools.accumulate(map(len, texts)))  # where each text ends, counted from texts[0]
        while start < len(texts):
            fed = ends[start - 1] if start else 0
            # The first text that brings the count since the last look to REPEAT_CHECK_EVERY_CHARS: feed looks there.
            looks_at = bisect.bisect_left(ends, fed + REPEAT_CHECK_EVERY_CHARS - self._since_check, start)
            if looks_at > start:  # the texts before it: one piece, nothing looked at
                self._add("".join(texts[start:looks_at]))
            if looks_at == len(texts):
                return None
            loop = self.feed(texts[looks_at])
            if loop is not None:
                return looks_at, loop
            start = looks_at + 1
        return None

    def _add(self, text: str) -> None:
        """Keep ``text`` in the tail without looking (``feed`` looks once enough text came)."""
        self._pieces.append(text)
        self._held += len(text)
        while self._held - len(self._pieces[0]) >= _TAIL_CHARS:
            self._held -= len(self._pieces.popleft())
        self._since_check += len(text)
