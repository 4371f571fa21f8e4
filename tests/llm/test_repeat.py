"""The repetition guard tells a model looping on a passage from a legitimate run of a short unit (a rule, a table
separator, blank lines): ADR 0051. Each bound is crossed: REPEAT_MIN_COUNT copies of a passage,
REPEAT_SPAN_MIN_CHARS (the shortest passage; a shorter unit makes a run), REPEAT_RUN_MIN_CHARS (a run that long is
a loop)."""

from __future__ import annotations

import random

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dashfloat.llm._limits import (
    REPEAT_CHECK_EVERY_CHARS,
    REPEAT_MIN_COUNT,
    REPEAT_RUN_MIN_CHARS,
    REPEAT_SPAN_MAX_CHARS,
    REPEAT_SPAN_MIN_CHARS,
)
from dashfloat.llm._repeat import (
    _TAIL_CHARS,
    LONG_PASSAGE_COPIES,
    REPEAT_LONG_PASSAGE_CHARS,
    Loop,
    RepetitionGuard,
    _needle_unit,
    looping_span,
)

PROSE = "".join(random.Random(7).choices("ABCDEFGHIJKLMNOPQRSTUVWXYZ.,;", k=3000))
"""Text that never loops, in characters no unit below holds (nothing before a run extends it by chance)."""
UNIT_CHARS = "abcdefgh =-|:\n0123"


def _primitive(unit: str) -> bool:
    """Whether ``unit`` is no repetition of a shorter one."""
    return (unit + unit).find(unit, 1) == len(unit)


def _pieces(text: str, sizes: list[int]) -> list[str]:
    pieces, at, n = [], 0, 0
    while at < len(text):
        pieces.append(text[at : at + sizes[n % len(sizes)]])
        at += sizes[n % len(sizes)]
        n += 1
    return pieces


def _fed(text: str, sizes: list[int]) -> tuple[Loop, int] | None:
    """The first loop a guard fed ``text`` in pieces of ``sizes`` reports, and how much text it had taken then."""
    guard, taken = RepetitionGuard(), 0
    for piece in _pieces(text, sizes):
        taken += len(piece)
        loop = guard.feed(piece)
        if loop is not None:
            return loop, taken
    return None


def test_the_tail_holds_the_longest_run_and_every_passage_loop() -> None:
    assert _TAIL_CHARS >= REPEAT_RUN_MIN_CHARS + REPEAT_CHECK_EVERY_CHARS
    assert _TAIL_CHARS >= REPEAT_MIN_COUNT * REPEAT_SPAN_MAX_CHARS


def test_a_run_is_a_loop_from_repeat_run_min_chars_on() -> None:
    for unit in ("=", "-", "\n", " ", "|-----", "| --- ", "0, ", "ha", "abcdefghijklmnopq", "x" * 30 + "y"):
        below = (unit * REPEAT_RUN_MIN_CHARS)[: REPEAT_RUN_MIN_CHARS - 1]
        assert looping_span(PROSE + below) is None, unit
        at = PROSE + below + unit[(REPEAT_RUN_MIN_CHARS - 1) % len(unit)]
        loop = looping_span(at)
        assert loop is not None and loop.run and loop.unit == len(unit), unit
        # the span kept is whole units of the run, at least a passage long
        assert at.endswith(loop.span) and len(loop.span) % loop.unit == 0 and len(loop.span) >= REPEAT_SPAN_MIN_CHARS


def test_a_passage_is_a_loop_from_repeat_min_count_copies_on() -> None:
    passage = "I will now read the file notes.txt to see what it says. "
    assert looping_span(PROSE + passage * (REPEAT_MIN_COUNT - 1)) is None
    assert looping_span(PROSE + passage * REPEAT_MIN_COUNT) == Loop(passage, len(passage))


def test_the_shortest_passage_is_repeat_span_min_chars_and_a_shorter_unit_makes_a_run() -> None:
    passage = "".join(random.Random(1).choices("abcdefgh", k=REPEAT_SPAN_MIN_CHARS))
    assert _primitive(passage) and _primitive(passage[:-1])
    assert looping_span(PROSE + passage * REPEAT_MIN_COUNT) == Loop(passage, REPEAT_SPAN_MIN_CHARS)
    # One character shorter: a run, let through at twice as many copies (and many more, up to the run's bound).
    short = passage[:-1]
    assert looping_span(PROSE + short * REPEAT_MIN_COUNT * 2) is None
    assert REPEAT_MIN_COUNT * 2 * len(short) < REPEAT_RUN_MIN_CHARS


def test_a_passage_that_holds_a_long_rule_is_found_wherever_the_tail_ends() -> None:
    # The needle inside the rule proposes the rule's one-character period; what repeats is the whole block.
    block = "=" * 1000 + "\nSome text under the rule.\n"
    for extra in range(0, len(block), 37):
        loop = looping_span((PROSE + block * REPEAT_MIN_COUNT + block[:extra])[-_TAIL_CHARS:])
        assert loop is not None and not loop.run and loop.unit == len(block), extra


@settings(max_examples=60, deadline=None)
@given(
    unit=st.text(alphabet=UNIT_CHARS, min_size=1, max_size=REPEAT_SPAN_MIN_CHARS - 1),
    length=st.integers(0, REPEAT_RUN_MIN_CHARS - 1),
    sizes=st.lists(st.integers(1, 700), min_size=1, max_size=5),
)
def test_a_run_shorter_than_the_bound_streams_whole(unit: str, length: int, sizes: list[int]) -> None:
    # A rule, a table separator, blank lines, a zeroed array: whatever the unit and however it arrives.
    text = PROSE[:1500] + (unit * REPEAT_RUN_MIN_CHARS)[:length] + PROSE[1500:]
    assert _fed(text, sizes) is None


@settings(max_examples=60, deadline=None)
@given(
    unit=st.text(alphabet=UNIT_CHARS, min_size=1, max_size=REPEAT_SPAN_MIN_CHARS - 1),
    sizes=st.lists(st.integers(1, 700), min_size=1, max_size=5),
)
def test_a_run_past_the_bound_is_stopped_soon_after_it(unit: str, sizes: list[int]) -> None:
    text = PROSE[:500] + unit * (3 * REPEAT_RUN_MIN_CHARS // len(unit))
    fed = _fed(text, sizes)
    assert fed is not None
    loop, taken = fed
    assert loop.run and (unit * 64).find(loop.span[: loop.unit]) >= 0
    assert taken - 500 < REPEAT_RUN_MIN_CHARS + REPEAT_CHECK_EVERY_CHARS + max(sizes)


@settings(max_examples=60, deadline=None)
@given(
    passage=st.text(alphabet=UNIT_CHARS, min_size=REPEAT_SPAN_MIN_CHARS, max_size=REPEAT_LONG_PASSAGE_CHARS - 1),
    copies=st.integers(1, REPEAT_MIN_COUNT - 1),
    sizes=st.lists(st.integers(1, 700), min_size=1, max_size=5),
)
def test_a_passage_repeated_fewer_times_than_the_count_streams_whole(
    passage: str, copies: int, sizes: list[int]
) -> None:
    assume(_primitive(passage))
    assert _fed(PROSE[:1500] + passage * copies + PROSE[1500:], sizes) is None


@settings(max_examples=60, deadline=None)
@given(
    passage=st.text(alphabet=UNIT_CHARS, min_size=REPEAT_SPAN_MIN_CHARS, max_size=300),
    sizes=st.lists(st.integers(1, 700), min_size=1, max_size=5),
)
def test_a_looping_passage_is_stopped_once_it_repeated_the_count(passage: str, sizes: list[int]) -> None:
    assume(_primitive(passage))
    fed = _fed(PROSE[:500] + passage * (REPEAT_MIN_COUNT * 4 + 4096 // len(passage)), sizes)
    assert fed is not None
    loop, taken = fed
    assert not loop.run and len(loop.span) == len(passage) and loop.span in passage * 2  # one turn of it
    assert taken - 500 < len(passage) * REPEAT_MIN_COUNT + REPEAT_CHECK_EVERY_CHARS + max(sizes) + len(passage) * 8


@settings(max_examples=300, deadline=None)
@given(unit=st.text(alphabet="ab=", min_size=1, max_size=20), skip=st.integers(0, 20), noise=st.booleans())
def test_the_needles_run_unit_is_the_shortest_period_a_brute_force_finds(unit: str, skip: int, noise: bool) -> None:
    needle = (unit * 64)[skip : skip + REPEAT_SPAN_MIN_CHARS]
    if noise:
        needle = needle[:-1] + ("b" if needle[-1] != "b" else "a")
    periods = [u for u in range(1, len(needle) // 2 + 1) if needle[u:] == needle[:-u]]
    assert _needle_unit(needle) == (periods[0] if periods else 0)


def test_a_long_passage_is_a_loop_the_second_time_it_is_written() -> None:
    """ADR 0079: the 0.5B model wrote one 250-character line of a tool schema again and again for 120 s."""
    long = "".join(random.Random(3).choices("abcdefgh =-|:\n0123", k=REPEAT_LONG_PASSAGE_CHARS))
    assert _primitive(long)
    assert looping_span(PROSE + long) is None
    assert looping_span(PROSE + long * LONG_PASSAGE_COPIES) == Loop(long, len(long), LONG_PASSAGE_COPIES)
    shorter = long[:-1]  # one character below the bound: the count decides, as for any passage
    assert looping_span(PROSE + shorter * LONG_PASSAGE_COPIES) is None
    assert looping_span(PROSE + shorter * REPEAT_MIN_COUNT) == Loop(shorter, len(shorter))


def test_copies_of_a_short_passage_adding_up_to_a_long_one_are_left_to_the_count() -> None:
    passage = "I will now read the file notes.txt to see what it says. "
    copies = REPEAT_LONG_PASSAGE_CHARS // len(passage) + 1
    assert looping_span(PROSE + passage * copies * LONG_PASSAGE_COPIES) is None


@settings(max_examples=40, deadline=None)
@given(
    passage=st.text(alphabet=UNIT_CHARS, min_size=REPEAT_LONG_PASSAGE_CHARS, max_size=REPEAT_SPAN_MAX_CHARS),
    sizes=st.lists(st.integers(1, 700), min_size=1, max_size=5),
)
def test_a_long_looping_passage_is_stopped_within_its_third_copy(passage: str, sizes: list[int]) -> None:
    assume(_primitive(passage))
    fed = _fed(PROSE[:500] + passage * 8, sizes)
    assert fed is not None
    loop, taken = fed
    assert loop.copies == LONG_PASSAGE_COPIES and len(loop.span) == len(passage)
    assert taken - 500 < len(passage) * LONG_PASSAGE_COPIES + REPEAT_CHECK_EVERY_CHARS + max(sizes)
