"""Reasoning as each server streams it (ADR 0077): kept with its field and bounded, ``<think>`` text split off the
answer at any chunking, sent back in its own field, the effort sent when set, and the usage details read."""

from __future__ import annotations

import itertools
import json
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from dashfloat.llm._limits import REASONING_CUT_MARKER, REASONING_KEEP_MAX_BYTES
from dashfloat.llm._request import request_body, wire_messages
from dashfloat.llm.episode import THINK_UNCLOSED_NOTE, Episode, KeptReasoning
from dashfloat.protocol import (
    ChatMessage,
    ContentDelta,
    FunctionCall,
    ProviderConfig,
    ReasoningDelta,
    StreamStatus,
    ToolCallRecord,
)
from dashfloat.testing.sse_server import Reply, ScriptedServer, error_reply, sse_event, text_reply, tool_calls_reply
from tests.llm.conftest import Llm, varied

CUT_MARKER = REASONING_CUT_MARKER.format(kib=REASONING_KEEP_MAX_BYTES // 1024)


def chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: dict[str, Any] | None = None) -> str:
    body: dict[str, Any] = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body)


def through(episode: Episode, pieces: list[str]) -> tuple[str, str, list[str]]:
    """Feed ``pieces`` as content chunks: (content shown, reasoning shown, warnings), and finish the episode."""
    deltas: list[tuple[str, str]] = []
    for piece in pieces:
        deltas += episode.feed(chunk({"content": piece}))
    deltas += episode.feed(chunk({}, "stop"))
    deltas += episode.flush()
    shown = {kind: "".join(t for k, t in deltas if k == kind) for kind in ("content", "reasoning")}
    return shown["content"], shown["reasoning"], [t for k, t in deltas if k == "warning"]


# ---------------------------------------------------------------- <think> in the answer text, any chunking

LLAMA_CPP = "<think>\nThe user wants a list.\nI'll use </thin to close.\n</think>\n\nHere: `<think>` is a tag.\n"
THOUGHT = "\nThe user wants a list.\nI'll use </thin to close.\n"
ANSWER = "Here: `<think>` is a tag.\n"


def check_split(pieces: list[str]) -> None:
    episode = Episode()
    content, reasoning, warnings = through(episode, pieces)
    done = episode.finished(1)
    assert (reasoning, warnings) == (THOUGHT, [])
    assert content.lstrip() == ANSWER and done.content == ANSWER  # a literal <think> later in prose is prose
    assert (done.reasoning, done.reasoning_field) == (THOUGHT, "think")


def test_think_split_at_every_single_boundary() -> None:
    for cut in range(len(LLAMA_CPP) + 1):
        check_split([LLAMA_CPP[:cut], LLAMA_CPP[cut:]])


def test_think_split_one_character_per_chunk() -> None:
    check_split(list(LLAMA_CPP))


@settings(max_examples=300, deadline=None)
@given(cuts=st.lists(st.integers(0, len(LLAMA_CPP)), max_size=12))
def test_think_split_at_any_set_of_boundaries(cuts: list[int]) -> None:
    bounds = sorted({0, len(LLAMA_CPP), *cuts})
    check_split([LLAMA_CPP[a:b] for a, b in itertools.pairwise(bounds)])


def test_the_close_tag_only_variant_is_kept_as_reasoning_at_every_boundary() -> None:
    text = "Plan: read it.\n</think>\n\nDone."
    for cut in range(len(text) + 1):
        episode = Episode()
        through(episode, [text[:cut], text[cut:]])
        done = episode.finished(1)
        assert (done.content, done.reasoning, done.reasoning_field) == ("Done.", "Plan: read it.\n", "think")
        assert episode.closed_only


def test_a_server_known_to_open_the_block_in_its_template_is_shown_as_reasoning_from_the_start() -> None:
    text = "Plan.\n</think>\nDone."
    for cut in range(len(text) + 1):
        content, reasoning, _ = through(Episode(think_inside_first=True), [text[:cut], text[cut:]])
        assert (content, reasoning) == ("Done.", "Plan.\n")
    # The same server with thinking off: no close tag came, so all of it was the answer after all.
    episode = Episode(think_inside_first=True)
    through(episode, ["Just the answer."])
    done = episode.finished(1)
    assert (done.content, done.reasoning, done.reasoning_field) == ("Just the answer.", "", None)


def test_an_unbalanced_think_is_reasoning_up_to_the_cap_then_prose_with_a_note() -> None:
    thought = varied(REASONING_KEEP_MAX_BYTES)  # no repetition for the loop guard to stop
    episode = Episode()
    content, reasoning, warnings = through(episode, ["<think>", thought, "y and the answer"])
    assert reasoning == thought and content == "y and the answer"
    assert warnings == [THINK_UNCLOSED_NOTE.format(kib=REASONING_KEEP_MAX_BYTES // 1024)]
    # Just under the cap, a block that never closes is all reasoning (the agent says the model only reasoned).
    episode = Episode()
    content, reasoning, warnings = through(episode, ["<think>", thought[:-1]])
    assert (content, reasoning, warnings) == ("", thought[:-1], [])


def test_blank_text_and_a_lone_angle_bracket_are_the_answer() -> None:
    for text in ("\n", "<", "<thin", "  <thinker>"):
        episode = Episode()
        content, reasoning, _ = through(episode, [text])
        assert (content, reasoning, episode.finished(1).content) == (text, "", text)


# ---------------------------------------------------------------- kept reasoning, bounded


def test_kept_reasoning_is_cut_at_the_cap_with_a_marker() -> None:
    kept = KeptReasoning()
    kept.add("reasoning_content", "a" * (REASONING_KEEP_MAX_BYTES - 1))
    assert kept.text == "a" * (REASONING_KEEP_MAX_BYTES - 1) and not kept.cut
    kept.add("reasoning", "é")  # two bytes: one past the cap, never half a character
    assert kept.cut and kept.field == "reasoning_content"
    assert kept.text == "a" * (REASONING_KEEP_MAX_BYTES - 1) + CUT_MARKER
    kept.add("reasoning_content", "more")
    assert kept.text.endswith(CUT_MARKER) and kept.text.count("more") == 0


def test_openrouter_reasoning_details_are_merged_by_index_and_dropped_past_the_cap() -> None:
    kept = KeptReasoning()
    kept.add_details([{"type": "reasoning.text", "text": "Let me ", "index": 0, "format": "anthropic-claude-v1"}])
    kept.add_details([{"type": "reasoning.text", "text": "think.", "index": 0, "signature": "sig"}])
    kept.add_details([{"type": "reasoning.encrypted", "data": "QUJD", "index": 1}])
    assert json.loads(kept.details) == [
        {
            "type": "reasoning.text",
            "text": "Let me think.",
            "index": 0,
            "format": "anthropic-claude-v1",
            "signature": "sig",
        },
        {"type": "reasoning.encrypted", "data": "QUJD", "index": 1},
    ]
    kept.add_details([{"type": "reasoning.text", "text": "z" * REASONING_KEEP_MAX_BYTES, "index": 0}])
    assert kept.details == ""


# ---------------------------------------------------------------- the wire: what is sent back, and the effort

CALL = ToolCallRecord(id="c1", function=FunctionCall(name="list_directory", arguments="{}"))


def assistant(field: Any, details: str | None = None) -> ChatMessage:
    return ChatMessage(
        role="assistant", tool_calls=[CALL], reasoning="why", reasoning_field=field, reasoning_details=details
    )


def test_reasoning_goes_back_in_the_field_it_came_in_and_never_as_our_own_fields() -> None:
    details = '[{"type":"reasoning.text","text":"why","index":0}]'
    for field in ("reasoning_content", "reasoning"):
        [item] = wire_messages([assistant(field, details)])
        assert item[field] == "why" and "reasoning_field" not in item
        assert msgspec.json.decode(msgspec.json.encode(item))["reasoning_details"] == json.loads(details)
    [think] = wire_messages([assistant("think")])
    assert set(think) == {"role", "content", "tool_calls"}  # <think> reasoning is never sent back
    [off] = wire_messages([assistant("reasoning_content")], echo=False)
    assert "reasoning_content" not in off and "reasoning" not in off


def test_the_effort_is_sent_only_when_set_and_none_as_ollama_takes_it() -> None:
    def body(**provider: Any) -> dict[str, Any]:
        config = ProviderConfig(name="t", base_url="http://x/v1", model="m", **provider)
        decoded: dict[str, Any] = json.loads(request_body(config, [ChatMessage(role="user", content="hi")], ()))
        return decoded

    assert "reasoning_effort" not in body()
    assert body(reasoning_effort="none")["reasoning_effort"] == "none"
    assert body(reasoning_effort="high")["reasoning_effort"] == "high"


# ---------------------------------------------------------------- real HTTP, one server shape each


def bytewise(events: list[bytes]) -> Reply:
    """A reply whose every byte is its own write: TCP and chunk boundaries at every byte."""
    raw = b"".join(events)
    return Reply(body=[raw[i : i + 1] for i in range(len(raw))])


def test_llama_cpp_raw_think_over_http_split_at_every_byte(llm: Llm, server: ScriptedServer) -> None:
    events = [sse_event(json.loads(chunk({"content": c}))) for c in LLAMA_CPP]
    server.enqueue(bytewise([*events, sse_event(json.loads(chunk({}, "stop"))), sse_event("[DONE]")]))
    result = llm.run(server.base_url, timeout_s=30)
    assert result.text(ReasoningDelta) == THOUGHT
    assert result.text(ContentDelta) == ANSWER
    assert (result.done.content, result.done.reasoning, result.done.reasoning_field) == (ANSWER, THOUGHT, "think")


def test_a_close_tag_only_server_is_shown_as_reasoning_from_its_second_answer_on(
    llm: Llm, server: ScriptedServer
) -> None:
    server.enqueue(text_reply("First plan.\n</think>\nOne."), text_reply("Second plan.\n</think>\nTwo."))
    first = llm.run(server.base_url)
    assert (first.done.content, first.done.reasoning) == ("One.", "First plan.\n")
    second = llm.run(server.base_url)
    assert (second.text(ReasoningDelta), second.text(ContentDelta)) == ("Second plan.\n", "Two.")


def test_vllm_reasoning_field_is_kept_as_reasoning(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(text_reply("Four.", reasoning="Two and two.", reasoning_field="reasoning"))
    result = llm.run(server.base_url)
    assert result.text(ReasoningDelta) == "Two and two."
    assert (result.done.reasoning, result.done.reasoning_field, result.done.content) == (
        "Two and two.",
        "reasoning",
        "Four.",
    )


def test_openrouter_reasoning_and_details_are_kept_and_sent_back(llm: Llm, server: ScriptedServer) -> None:
    detail = {"type": "reasoning.text", "index": 0, "format": "anthropic-claude-v1"}
    events = [
        sse_event(json.loads(chunk({"reasoning": "Look ", "reasoning_details": [{**detail, "text": "Look "}]}))),
        sse_event(json.loads(chunk({"reasoning": "first.", "reasoning_details": [{**detail, "text": "first."}]}))),
        *tool_calls_reply([("c1", "list_directory", {})]).body,
    ]
    server.enqueue(Reply(body=events), text_reply("ok"))
    done = llm.run(server.base_url).done
    assert (done.reasoning, done.reasoning_field) == ("Look first.", "reasoning")
    assert json.loads(done.reasoning_details) == [{**detail, "text": "Look first."}]
    sent = ChatMessage(
        role="assistant",
        tool_calls=[CALL],
        reasoning=done.reasoning,
        reasoning_field=done.reasoning_field,
        reasoning_details=done.reasoning_details,
    )
    llm.run(server.base_url, messages=[ChatMessage(role="user", content="hi"), sent])
    echoed = server.requests[1]["messages"][1]
    assert echoed["reasoning"] == "Look first." and echoed["reasoning_details"] == [{**detail, "text": "Look first."}]


def test_interleaved_reasoning_tool_call_reasoning_answer_in_one_stream(llm: Llm, server: ScriptedServer) -> None:
    events = [
        sse_event(json.loads(chunk({"reasoning_content": "First I list. "}))),
        *list(tool_calls_reply([("c1", "list_directory", {})]).body)[1:-2],  # the call's fragments, no finish
        sse_event(json.loads(chunk({"reasoning_content": "Then I answer."}))),
        sse_event(json.loads(chunk({"content": "Listing."}))),
        sse_event(json.loads(chunk({}, "tool_calls"))),
        sse_event("[DONE]"),
    ]
    server.enqueue(Reply(body=events))
    result = llm.run(server.base_url)
    shown = [type(m).__name__ for m in result.messages[:-1] if not isinstance(m, StreamStatus)]
    assert [kind for kind, _ in itertools.groupby(shown)] == ["ReasoningDelta", "ContentDelta"]
    assert result.text(ReasoningDelta) == "First I list. Then I answer."
    done = result.done
    assert (done.reasoning, done.content, [c.name for c in done.tool_calls]) == (
        "First I list. Then I answer.",
        "Listing.",
        ["list_directory"],
    )


def test_ollama_effort_none_is_sent_and_a_refused_effort_is_dropped(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(text_reply("hi"))
    assert llm.run(server.base_url, reasoning_effort="none").done.content == "hi"
    assert server.requests[0]["reasoning_effort"] == "none"
    other = ScriptedServer()
    with other:
        other.enqueue(error_reply(400, "Unrecognized request argument supplied: reasoning_effort"), text_reply("ok"))
        result = llm.run(other.base_url, reasoning_effort="low")
        assert result.done.content == "ok"
        assert ["reasoning_effort" in body for body in other.requests] == [True, False]
        assert "rejected reasoning_effort" in result.text(StreamStatus)


def test_cached_and_reasoning_tokens_are_read_from_the_usage(llm: Llm, server: ScriptedServer) -> None:
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 40,
        "total_tokens": 140,
        "prompt_tokens_details": {"cached_tokens": 64},
        "completion_tokens_details": {"reasoning_tokens": 30},
    }
    events = [
        sse_event(json.loads(chunk({"content": "hi"}))),
        sse_event(json.loads(chunk({}, "stop"))),
        sse_event({"choices": [], "usage": usage}),
        sse_event("[DONE]"),
    ]
    server.enqueue(Reply(body=events), text_reply("plain", usage=(5, 1)))
    got = llm.run(server.base_url).done.usage
    assert got is not None and (got.cached_tokens, got.reasoning_tokens, got.total_tokens) == (64, 30, 140)
    plain = llm.run(server.base_url).done.usage
    assert plain is not None and (plain.cached_tokens, plain.reasoning_tokens) == (None, None)
