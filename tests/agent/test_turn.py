"""The turn's table (agent/_turn.py): every row names real places, and a move it does not list is refused."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
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


ARCHITECTURE = Path(__file__).parents[2] / "docs" / "architecture.md"
AGENT_MODULES = (
    "_process",
    "_core",
    "_steps",
    "_turn",
    "_calls",
    "_decide",
    "_mentions",
    "_context",
    "_compactor",
    "_rules",
    "_restore",
)
PLACE = re.compile(r"`(?:(?P<file>_?\w+)\.py:)?(?P<name>[A-Za-z_]\w*(?:\.\w+)?)`")


def test_the_path_of_one_prompt_names_places_that_exist() -> None:
    """docs/architecture.md walks one prompt with file:function names (and Class.method once the file was named):
    each must still be there, so the walk cannot drift from the code."""
    text = ARCHITECTURE.read_text()
    section = text[text.index("## The path of one prompt") :]
    section = section[: section.index("\n## ", 1)]
    modules = {name: importlib.import_module(f"dashfloat.agent.{name}") for name in AGENT_MODULES}
    classes = {name: cls for module in modules.values() for name, cls in vars(module).items() if inspect.isclass(cls)}
    checked = 0
    for found in PLACE.finditer(section):
        file, name = found["file"], found["name"]
        head, _, attribute = name.partition(".")
        if file is not None:
            owner: object = getattr(modules[file], head)
        elif head in classes and attribute:
            owner = classes[head]
        else:
            continue  # a message, a wait or a value, not a place in the code
        assert not attribute or hasattr(owner, attribute), found[0]
        checked += 1
    assert checked >= 30  # the walk names its places
