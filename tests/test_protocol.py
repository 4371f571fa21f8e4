"""Every message type survives both wire forms, and a real pipe; bad frames are reported, not dropped."""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing.connection import wait
from typing import Any

import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashfloat import protocol
from dashfloat.channel import Channel, PeerDied, ProtocolError, Readiness

UNIONS = {
    "UiToAgent": protocol.UiToAgent,
    "AgentToUi": protocol.AgentToUi,
    "AgentToLlm": protocol.AgentToLlm,
    "LlmToAgent": protocol.LlmToAgent,
    "AgentToExecutor": protocol.AgentToExecutor,
    "ExecutorToAgent": protocol.ExecutorToAgent,
    "PatchToKeeper": protocol.PatchToKeeper,
    "KeeperToMain": protocol.KeeperToMain,
    "ExecutorToMcp": protocol.ExecutorToMcp,  # MCP client (ADR 0086)
    "McpToExecutor": protocol.McpToExecutor,
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def strategy(t: mi.Type) -> st.SearchStrategy[Any]:
    """A hypothesis strategy for any type msgspec can describe (the protocol's own vocabulary)."""
    match t:
        case mi.IntType(ge=ge, le=le):  # the constraints a decoder checks (the tool arguments' bounds)
            return st.integers(-(2**63) if ge is None else ge, 2**63 - 1 if le is None else le)
        case mi.FloatType(ge=ge, le=le, gt=gt, lt=lt):  # gt/lt: an exclusive bound (a job's ready_timeout > 0)
            return st.floats(
                ge if gt is None else gt,
                le if lt is None else lt,
                exclude_min=gt is not None,
                exclude_max=lt is not None,
                allow_nan=False,
                allow_infinity=False,
            )
        case mi.StrType(min_length=min_length):
            return st.text(min_size=min_length or 0, max_size=30)
        case mi.BoolType():
            return st.booleans()
        case mi.NoneType():
            return st.none()
        case mi.AnyType():
            return json_values
        case mi.LiteralType(values=values):
            return st.sampled_from(values)
        case mi.ListType(item_type=item):
            return st.lists(strategy(item), max_size=3)
        case mi.DictType(key_type=key, value_type=value):
            return st.dictionaries(strategy(key), strategy(value), max_size=3)
        case mi.UnionType(types=types):
            return st.one_of([strategy(member) for member in types])
        case mi.StructType(cls=cls, fields=fields):
            return st.builds(cls, **{f.name: strategy(f.type) for f in fields})
    raise AssertionError(f"no strategy for {t}")


def union_strategy(union: Any) -> st.SearchStrategy[Any]:
    return strategy(mi.type_info(union))


def test_a_unions_pipe_decoder_is_built_once_per_process() -> None:
    for union in (protocol.UiToAgent, protocol.AgentToUi, protocol.AgentToExecutor, protocol.ExecutorToAgent):
        assert protocol.msgpack_decoder(union) is protocol.msgpack_decoder(union)
    assert protocol.msgpack_decoder(protocol.UiToAgent) is not protocol.msgpack_decoder(protocol.AgentToUi)


def test_every_message_belongs_to_exactly_the_unions_that_list_it() -> None:
    listed = set()
    for union in UNIONS.values():
        for member in mi.type_info(union).types:  # type: ignore[attr-defined]
            listed.add(member.cls)
    assert listed == set(protocol.ALL_MESSAGE_TYPES)


def test_every_message_has_a_one_line_docstring_and_a_snake_case_tag() -> None:
    for cls in protocol.ALL_MESSAGE_TYPES:
        assert cls.__doc__ and "\n" not in cls.__doc__.strip().split("\n\n")[0], cls
        tag = cls.__struct_config__.tag
        assert isinstance(tag, str) and tag == tag.lower() and " " not in tag


@pytest.mark.parametrize("name", sorted(UNIONS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_round_trip_in_both_wire_forms(name: str, data: st.DataObject) -> None:
    union = UNIONS[name]
    message = data.draw(union_strategy(union))
    packed = protocol.MSGPACK_ENCODER.encode(message)
    assert protocol.msgpack_decoder(union).decode(packed) == message
    text = protocol.JSON_ENCODER.encode(message)
    assert protocol.json_decoder(union).decode(text) == message


@settings(max_examples=40, deadline=None)
@given(messages=st.lists(union_strategy(protocol.AgentToUi), min_size=1, max_size=8))
def test_round_trip_over_a_real_pipe(messages: list[Any]) -> None:
    ours, theirs = multiprocessing.Pipe()
    sender = Channel[Any](ours, protocol.UiToAgent, "agent->ui")
    receiver = Channel[Any](theirs, protocol.AgentToUi, "agent->ui")
    for message in messages:
        sender.send(message)
    assert [receiver.recv() for _ in messages] == messages
    sender.close()
    receiver.close()


def test_a_frame_that_is_not_a_message_is_a_protocol_error_naming_the_channel() -> None:
    ours, theirs = multiprocessing.Pipe()
    receiver = Channel[Any](theirs, protocol.LlmToAgent, "llm->agent")
    ours.send_bytes(b"\xc1garbage")
    with pytest.raises(ProtocolError, match="llm->agent"):
        receiver.recv()
    ours.send_bytes(msgspec.msgpack.encode({"type": "no_such_message"}))
    with pytest.raises(ProtocolError, match="llm->agent"):
        receiver.recv()
    ours.send_bytes(msgspec.msgpack.encode(protocol.SubmitPrompt(text="wrong direction")))
    with pytest.raises(ProtocolError):
        receiver.recv()
    ours.close()
    with pytest.raises(PeerDied):
        receiver.recv()


def test_nothing_pickled_crosses_a_channel() -> None:
    ours, theirs = multiprocessing.Pipe()
    Channel[Any](ours, protocol.UiToAgent, "x").send(protocol.Cancel())
    assert theirs.recv_bytes() == msgspec.msgpack.encode(protocol.Cancel())


def test_poll_says_what_connection_poll_says() -> None:
    """Channel.poll (one poll object per channel) against multiprocessing's own poll, at every step."""
    ours, theirs = multiprocessing.Pipe()
    sender = Channel[Any](ours, protocol.AgentToUi, "a")
    receiver = Channel[Any](theirs, protocol.UiToAgent, "a")
    assert receiver.poll() is theirs.poll() is False
    assert receiver.poll(0.01) is False and receiver.poll(-1) is False  # a negative timeout does not block
    sender.send(protocol.Cancel())
    sender.send(protocol.Cancel())
    for _ in range(2):
        assert receiver.poll() is theirs.poll() is True
        assert receiver.poll(None) is True
        receiver.recv()
    assert receiver.poll() is theirs.poll() is False
    sender.close()
    assert receiver.poll() is True  # the peer's end: the next recv says PeerDied
    with pytest.raises(PeerDied):
        receiver.recv()
    receiver.close()
    assert receiver.poll() is True  # a closed channel: recv says why


def test_readiness_reports_the_ready_sources_as_wait_does() -> None:
    first_ours, first_theirs = multiprocessing.Pipe()
    second_ours, second_theirs = multiprocessing.Pipe()
    read_end, write_end = os.pipe()
    readiness = Readiness()
    sources: list[Any] = [first_theirs, second_theirs, read_end]
    assert readiness.wait(sources, 0) == [] == wait(sources, 0)
    second_ours.send_bytes(b"x")
    os.write(write_end, b"!")
    ready = {id(second_theirs), id(read_end)}
    assert set(map(id, readiness.wait(sources, 0))) == set(map(id, wait(sources, 0))) == ready
    assert readiness.wait([first_theirs], 0) == []  # other sources: a new poll object
    first_ours.close()
    assert readiness.wait([first_theirs], None) == [first_theirs]  # a closed peer wakes the wait
    for end in (first_theirs, second_ours, second_theirs):
        end.close()
    os.close(read_end)
    os.close(write_end)
