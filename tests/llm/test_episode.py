"""The episode accumulator without a server: every chunk-level quirk, the bounds, and properties."""

from __future__ import annotations

import itertools
import json
import re
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashfloat.llm import EPISODE_MAX_BYTES, EPISODE_MAX_TOOL_CALLS, Episode
from dashfloat.llm._errors import StreamError
from dashfloat.llm.toolcalls import EMPTY_CALL_ERROR
from dashfloat.protocol import ReadFileArgs, StreamFailureKind, Usage
from tests.llm.conftest import varied

USAGE = {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> str:
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
    if delta is not None:
        choice["delta"] = delta
    return json.dumps({"id": "x", "choices": [choice], **extra})


def feed_all(*events: str) -> tuple[Episode, list[tuple[str, str]]]:
    episode = Episode()
    deltas: list[tuple[str, str]] = []
    for data in events:
        deltas += episode.feed(data)
    deltas += episode.flush()  # as the stream does once the body ended (what a <think> split held)
    return episode, deltas


def failure(*events: str) -> StreamError:
    with pytest.raises(StreamError) as caught:
        feed_all(*events)
    return caught.value


def test_content_reasoning_finish_and_usage() -> None:
    episode, deltas = feed_all(
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning_content": "think "}),
        chunk({"reasoning": "more"}),
        chunk({"content": "ans"}),
        chunk({"content": "wer"}, "stop"),
        json.dumps({"choices": [], "usage": USAGE}),
        "[DONE]",
    )
    assert deltas == [("reasoning", "think "), ("reasoning", "more"), ("content", "ans"), ("content", "wer")]
    done = episode.finished(7)
    assert (done.request_id, done.content, done.finish_reason, done.usage) == (7, "answer", "stop", Usage(5, 7, 12))
    assert episode.done and episode.emitted


def test_done_is_the_episode_end_and_no_finish_reason_is_stop() -> None:
    episode, _ = feed_all(chunk({"content": "a"}), "  [DONE]\n")
    assert episode.done and episode.finished(1).finish_reason == "stop"


def test_finish_reason_without_done_is_complete() -> None:
    episode, _ = feed_all(chunk({"content": "fin"}), chunk({}, "length"))
    assert not episode.done and episode.finished(1).finish_reason == "length"


def test_neither_done_nor_finish_reason_is_truncated() -> None:
    episode, _ = feed_all(chunk({"content": "half"}))
    with pytest.raises(StreamError) as caught:
        episode.finished(1)
    assert caught.value.kind == "truncated"
    failed = episode.failed(1, "truncated", "cut")
    assert (failed.kind, failed.content) == ("truncated", "half")


@pytest.mark.parametrize(
    "usage_event",
    [
        json.dumps({"choices": None, "usage": USAGE}),  # vLLM
        json.dumps({"usage": USAGE}),  # vLLM, choices omitted
        chunk({}, "stop", x_groq={"id": "q", "usage": USAGE}),  # Groq
        chunk({"content": ""}, "stop", usage=USAGE),  # Gemini: with content
    ],
)
def test_usage_in_odd_places(usage_event: str) -> None:
    episode, _ = feed_all(chunk({"content": "a"}), usage_event, json.dumps({}), "[DONE]")
    assert episode.finished(1).usage == Usage(5, 7, 12)


def test_usage_on_every_chunk_keeps_the_last_and_unreadable_usage_is_ignored() -> None:
    first = {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
    episode, _ = feed_all(chunk({"content": "a"}, usage=first), chunk({}, "stop", usage=USAGE))
    assert episode.usage == Usage(5, 7, 12)
    episode, _ = feed_all(chunk({"content": "a"}, "stop", usage={"prompt_tokens": "many"}))
    assert episode.usage is None


def test_azure_filter_chunk_and_choices_without_delta() -> None:
    episode, deltas = feed_all(
        json.dumps({"choices": [], "prompt_filter_results": [{"prompt_index": 0}]}),
        chunk(None),
        chunk({"content": "az"}),
        chunk(None, "stop"),
    )
    assert deltas == [("content", "az")] and episode.finished(1).content == "az"


def test_groq_empty_tool_call_lists_are_not_calls() -> None:
    episode, _ = feed_all(chunk({"content": "hi", "tool_calls": []}), chunk({"tool_calls": []}, "stop"))
    done = episode.finished(1)
    assert (done.content, done.tool_calls, done.finish_reason) == ("hi", [], "stop")


EMPTY_ITEMS = [
    {"index": 0, "id": None, "type": "function", "function": {"name": None, "arguments": None}},
    {"index": 0, "id": "", "function": {}},
    {"id": None},
]


@pytest.mark.parametrize("item", EMPTY_ITEMS)
def test_an_answer_of_nothing_but_an_empty_call_is_an_error_call_not_nothing(item: dict[str, Any]) -> None:
    for events in (
        [chunk({"role": "assistant", "content": None}), chunk({"tool_calls": [item]}), chunk({}, "tool_calls")],
        [chunk({"tool_calls": [item]}, "stop")],
        [chunk({"content": "  \n", "tool_calls": [item, item]}), "[DONE]"],
    ):
        done = feed_all(*events)[0].finished(1)
        [call] = done.tool_calls
        assert (call.name, call.args, call.error) == ("", None, EMPTY_CALL_ERROR)
        assert call.id and done.finish_reason == "tool_calls"


@pytest.mark.parametrize("item", EMPTY_ITEMS)
def test_an_empty_item_beside_prose_or_a_real_call_is_still_dropped(item: dict[str, Any]) -> None:
    prose = feed_all(chunk({"content": "hi", "tool_calls": [item]}), chunk({}, "stop"))[0].finished(1)
    assert (prose.content, prose.tool_calls, prose.finish_reason) == ("hi", [], "stop")
    call = {"index": 0, "id": "c1", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}
    for order in ([item, call], [call, item]):
        done = feed_all(chunk({"tool_calls": order}, "tool_calls"))[0].finished(1)
        assert [(c.id, c.error) for c in done.tool_calls] == [("c1", None)]


def test_tool_calls_finished_with_stop_later_or_never_are_tool_calls() -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}
    for events in (
        [chunk({"tool_calls": [call]}, "stop")],
        [chunk({"tool_calls": [call]}), chunk({"content": ""}), chunk({}, "tool_calls")],
        [chunk({"tool_calls": [call]}), "[DONE]"],
    ):
        episode, deltas = feed_all(*events)
        done = episode.finished(1)
        assert deltas == [] and episode.emitted  # a call counts as said: never retried
        assert done.finish_reason == "tool_calls"
        assert [(c.id, c.name, c.args) for c in done.tool_calls] == [("c1", "read_file", ReadFileArgs(path="a"))]


@pytest.mark.parametrize(
    ("event", "said"),
    [
        (json.dumps({"error": {"message": "upstream overloaded"}}), "upstream overloaded"),
        (json.dumps({"error": "plain text"}), "plain text"),
        (
            json.dumps({"choices": [{"delta": {}, "finish_reason": "error", "error": {"message": "model crashed"}}]}),
            "model crashed",
        ),
    ],
)
def test_errors_inside_the_stream_keep_what_arrived(event: str, said: str) -> None:
    episode = Episode()
    episode.feed(chunk({"content": "so far"}))
    with pytest.raises(StreamError) as caught:
        episode.feed(event)
    assert caught.value.kind == "provider_error" and said in caught.value.message
    assert episode.failed(1, caught.value.kind, caught.value.message).content == "so far"


@pytest.mark.parametrize("data", ["not json", "[1, 2]", '"text"', "null", "[" * 100_000])
def test_an_event_that_is_not_a_json_object_is_malformed(data: str) -> None:
    error = failure(data)
    assert error.kind == "malformed_frame" and "not a JSON object" in error.message


def test_nothing_but_empty_deltas_is_not_emitted() -> None:
    episode, deltas = feed_all(chunk({"role": "assistant", "content": ""}), chunk({"content": None}))
    assert deltas == [] and not episode.emitted


# ---------------------------------------------------------------- the episode bounds, crossed


def test_episode_bytes_cap_is_crossed_by_content_reasoning_and_fragments() -> None:
    half = varied(EPISODE_MAX_BYTES // 4, "éàüöñç")  # two bytes a letter: exactly half the cap
    episode, _ = feed_all(chunk({"content": half}), chunk({"reasoning": half}))  # at the cap: fine
    with pytest.raises(StreamError) as caught:
        episode.feed(chunk({"content": "x"}))
    assert caught.value.kind == "episode_too_large"
    assert episode.content == half  # the crossing text was neither shown nor kept
    call = {"index": 0, "id": "c", "function": {"name": "read_file", "arguments": "a" * EPISODE_MAX_BYTES}}
    assert failure(chunk({"tool_calls": [call]})).kind == "episode_too_large"


def test_distinct_call_cap_is_crossed() -> None:
    def call(i: int) -> dict[str, Any]:
        return {"index": i, "id": f"c{i}", "function": {"name": "list_directory", "arguments": "{}"}}

    episode, _ = feed_all(chunk({"tool_calls": [call(i) for i in range(EPISODE_MAX_TOOL_CALLS)]}))
    assert len(episode.calls()) == EPISODE_MAX_TOOL_CALLS
    with pytest.raises(StreamError) as caught:
        episode.feed(chunk({"tool_calls": [call(EPISODE_MAX_TOOL_CALLS)]}))
    assert caught.value.kind == "too_many_calls"


# ---------------------------------------------------------------- properties

texts = st.text(st.characters(codec="utf-8"), max_size=200)


@settings(max_examples=200, deadline=None)
@given(text=texts, cuts=st.lists(st.integers(0, 200), max_size=20), noise=st.lists(st.integers(0, 3), max_size=20))
def test_content_survives_any_split_and_interleaved_noise(text: str, cuts: list[int], noise: list[int]) -> None:
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    noise_events = [
        json.dumps({"choices": [], "usage": USAGE}),
        chunk(None),
        json.dumps({}),
        chunk({"tool_calls": []}),
    ]
    events = []
    for i, piece in enumerate(pieces):
        events.append(chunk({"content": piece}))
        if i < len(noise):
            events.append(noise_events[noise[i]])
    episode, deltas = feed_all(*events, chunk({}, "stop"), "[DONE]")
    assert "".join(t for k, t in deltas if k == "content") == text == episode.finished(1).content
    assert all(t for _, t in deltas)  # no empty delta is ever emitted
    assert episode.emitted == bool(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
chunk_like = st.fixed_dictionaries(
    {},
    optional={
        "choices": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "delta": st.dictionaries(
                        st.sampled_from(["content", "reasoning", "reasoning_content", "tool_calls", "role"]),
                        json_values,
                    ),
                    "finish_reason": st.none() | st.sampled_from(["stop", "length", "tool_calls", ""]),
                },
            ),
            max_size=2,
        )
        | json_values,
        "usage": json_values,
        "x_groq": json_values,
    },
)


@settings(max_examples=300, deadline=None)
@given(events=st.lists(chunk_like | json_values, max_size=8))
def test_any_json_fails_only_as_a_stream_error_and_always_answers(events: list[Any]) -> None:
    episode = Episode()
    try:
        for event in events:
            episode.feed(json.dumps(event))
        done = episode.finished(1)
    except StreamError as exc:
        failed = episode.failed(1, exc.kind, exc.message)
        assert failed.kind in typing.get_args(StreamFailureKind)
    else:
        assert done.finish_reason  # always a reason, even when the provider gave none
        assert done.finish_reason != "stop" or not done.tool_calls


# ---------------------------------------------------------------- one list of kinds


def test_failure_kinds_table_in_the_docs_is_the_protocol_literal() -> None:
    text = (Path(__file__).parents[2] / "docs" / "providers.md").read_text()
    section = text.split("## Failure kinds", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE)
    assert documented == list(typing.get_args(StreamFailureKind))
