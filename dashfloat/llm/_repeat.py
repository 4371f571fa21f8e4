"""The repetition guard: notices a model looping on one span (seen from small local models for minutes).

Every ``REPEAT_CHECK_EVERY_CHARS`` of new text it looks at the tail: the last ``REPEAT_SPAN_MIN_CHARS``
characters are searched for backwards (``str.rfind``, C speed); each earlier occurrence proposes a period,
and the tail is a loop when its last ``REPEAT_MIN_COUNT`` periods are identical (one slice comparison).
A period shorter than the minimum span is judged by its smallest multiple that is long enough, so "ha"
repeated is a loop only once it covers ``REPEAT_MIN_COUNT`` long spans.
"""

from __future__ import annotations

import bisect
import collections
import itertools

from dashfloat.llm._limits import (
    REPEAT_CHECK_EVERY_CHARS,
    REPEAT_MIN_COUNT,
    REPEAT_SPAN_MAX_CHARS,
    REPEAT_SPAN_MIN_CHARS,
)

_CANDIDATES = 8  # earlier occurrences of the needle tried per check (a later check shifts the needle)
_TAIL_CHARS = REPEAT_MIN_COUNT * REPEAT_SPAN_MAX_CHARS


def looping_span(tail: str) -> str | None:
    """The span ``tail`` ends by repeating ``REPEAT_MIN_COUNT`` times back to back, or None."""
    needle_at = len(tail) - REPEAT_SPAN_MIN_CHARS
    if needle_at < 0:
        return None
    needle = tail[needle_at:]
    end = len(tail) - 1
    for _ in range(_CANDIDATES):
        found = tail.rfind(needle, max(0, needle_at - REPEAT_SPAN_MAX_CHARS), end)
        if found < 0:
            return None
        period = needle_at - found
        span = period * -(-REPEAT_SPAN_MIN_CHARS // period)  # the smallest multiple that is a long span
        region = span * REPEAT_MIN_COUNT
        if span <= REPEAT_SPAN_MAX_CHARS and region <= len(tail):
            looped = tail[-region:]
            if looped[period:] == looped[:-period]:
                return tail[-span:]
        end = found + REPEAT_SPAN_MIN_CHARS - 1
    return None


class RepetitionGuard:
    """Fed the text of one kind (content or reasoning) as it streams; ``feed`` returns the looping span."""

    def __init__(self) -> None:
        self._pieces: collections.deque[str] = collections.deque()
        self._held = 0
        self._since_check = 0

    def feed(self, text: str) -> str | None:
        self._pieces.append(text)
        self._held += len(text)
        while self._held - len(self._pieces[0]) >= _TAIL_CHARS:
            self._held -= len(self._pieces.popleft())
        self._since_check += len(text)
        if self._since_check < REPEAT_CHECK_EVERY_CHARS:
            return None
        self._since_check = 0
        return looping_span("".join(self._pieces)[-_TAIL_CHARS:])

    def feed_many(self, texts: list[str]) -> tuple[int, str] | None:
        """``feed`` each of ``texts`` in turn, looking only where ``feed`` would look: the index of the first text
        that shows a loop and its span, or None. After a loop the remaining texts are not fed."""
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
            span = self.feed(texts[looks_at])
            if span is not None:
                return looks_at, span
            start = looks_at + 1
        return None

    def _add(self, text: str) -> None:
        """``feed`` without the look (the count since the last one stays below REPEAT_CHECK_EVERY_CHARS)."""
        self._pieces.append(text)
        self._held += len(text)
        while self._held - len(self._pieces[0]) >= _TAIL_CHARS:
            self._held -= len(self._pieces.popleft())
        self._since_check += len(text)
