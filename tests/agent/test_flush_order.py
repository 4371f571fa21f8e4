"""The agent sends the workers' messages of a flush before the UI's, each destination's in its own order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dashfloat.agent._core import Dest
from dashfloat.agent._process import workers_first
from dashfloat.protocol import CancelStream, Message, SystemEntry, TokenReceived

DESTS: tuple[Dest, ...] = ("ui", "llm", "executor")


@given(st.lists(st.tuples(st.sampled_from(DESTS), st.integers(0, 50))))
def test_workers_first_keeps_every_message_and_each_destinations_order(items: list[tuple[Dest, int]]) -> None:
    outbox: list[tuple[Dest, Message]] = [(dest, SystemEntry(text=str(n))) for dest, n in items]
    sent = workers_first(outbox)
    assert len(sent) == len(outbox)
    for dest in DESTS:
        assert [m for d, m in sent if d == dest] == [m for d, m in outbox if d == dest]
    first_ui = next((i for i, (d, _) in enumerate(sent) if d == "ui"), len(sent))
    assert all(d == "ui" for d, _ in sent[first_ui:])


def test_a_request_goes_out_before_the_ui_hears_of_it() -> None:
    outbox: list[tuple[Dest, Message]] = [
        ("ui", TokenReceived(text="a")),
        ("llm", CancelStream(request_id=1)),
        ("ui", SystemEntry(text="s")),
    ]
    assert workers_first(outbox) == [outbox[1], outbox[0], outbox[2]]
