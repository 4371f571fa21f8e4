"""The turn's table (agent/_turn.py): every row names real places, and a move it does not list is refused."""

from __future__ import annotations

import inspect
from typing import get_args

import pytest

from dashfloat.agent import _turn as turn
from dashfloat.agent._calls import CallsFlow
from dashfloat.agent._steps import Turn
from dashfloat.agent._turn import TURN, At, Event, Step, UnlistedMove, Waiting, check

SCREEN_LINES = 50
"""The table must stay readable on one screen: at most this many source lines."""

WAITS = set(get_args(Waiting))
STEPS = set(get_args(Step))
EVENTS = set(get_args(Event))


OWNERS = {"Turn": Turn, "CallsFlow": CallsFlow}
"""Who acts in a row: the classes the table's note names."""


def test_every_row_names_a_place_an_event_and_places_to_go() -> None:
    for at, events, who, nexts in TURN:
        assert at in WAITS | STEPS, at
        assert set(events) <= EVENTS and events, events
        assert set(nexts) <= WAITS | STEPS and nexts, nexts
        owner, method = who.split(".")
        assert callable(getattr(OWNERS[owner], method)), who


def test_steps_move_on_step_only_and_every_wait_is_left_somehow() -> None:
    for at, events, _, _ in TURN:
        assert (at in STEPS) == (events == ("step",)), (at, events)
    assert {at for at, _, _, _ in TURN} == WAITS | STEPS
    reached = {to for _, _, _, nexts in TURN for to in nexts}
    assert reached == WAITS | STEPS  # every place can be reached


def test_a_row_of_two_events_allows_the_same_moves_for_each() -> None:
    check("restore", "Cancel", "nothing")
    check("restore", "executor died", "restore")
    check("mention", "executor died", "episode")


@pytest.mark.parametrize(
    ("at", "event", "to"),
    [
        ("tool", "step", "stream"),  # a wait is no step
        ("calls", "step", "stream"),  # calls never send a request themselves
        ("confirm", "ToolFinished", "calls"),  # a result while asking: stale, no move
        ("nothing", "StreamDone", "calls"),
    ],
)
def test_a_move_the_table_does_not_list_is_refused(at: At, event: Event, to: At) -> None:
    with pytest.raises(UnlistedMove, match="no row of TURN"):
        check(at, event, to)


def test_the_table_fits_one_screen() -> None:
    source = inspect.getsource(turn)
    block = source[source.index("# fmt: off") : source.index("# fmt: on")]
    assert len(block.splitlines()) <= SCREEN_LINES
