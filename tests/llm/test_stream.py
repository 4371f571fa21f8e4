"""The SSE path end to end: real serve process, real pipe, real scripted HTTP server."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import requests

from dashfloat.catalogue import tools_catalogue
from dashfloat.llm._limits import DELTA_BATCH_S, HOLD_MIN_S, PACED_READ_MAX_BYTES
from dashfloat.llm._request import request_body
from dashfloat.llm._serve import worth_holding
from dashfloat.llm._stream import holds_next_read
from dashfloat.protocol import (
    CancelStream,
    ChatMessage,
    ContentDelta,
    ListDirectoryArgs,
    ProviderConfig,
    ReadFileArgs,
    ReasoningDelta,
    StreamStatus,
    Usage,
)
from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, sse_event, text_reply, tool_calls_reply
from tests.llm.conftest import TEST_KEY, TEST_KEY_ENV, Llm


@pytest.fixture
def llm(route_llm: Llm) -> Llm:
    """Every test here runs through both routes to a local plain-HTTP server (http.client and requests)."""
    return route_llm


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
    if delta is not None:
        choice["delta"] = delta
    return {"id": "x", "choices": [choice], **extra}


def ev(payload: Any) -> bytes:
    return sse_event(payload)


DONE = sse_event("[DONE]")
USAGE = {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}


def raw(*parts: bytes, **kwargs: Any) -> Reply:
    return Reply(body=list(parts), **kwargs)


def test_text_stream_request_shape_and_usage(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(text_reply("hello there, world", chunk_size=3, usage=(5, 7)))
    result = llm.run(server.base_url, model="my-model")
    done = result.done
    assert done.content == "hello there, world" == result.text(ContentDelta)
    assert done.finish_reason == "stop"
    assert done.usage == Usage(5, 7, 12)
    body = server.requests[0]
    assert body["model"] == "my-model"
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"] == json.loads(json.dumps(tools_catalogue()))
    assert "tool_choice" not in body and "parallel_tool_calls" not in body


def test_each_request_names_the_execute_command_default_in_force() -> None:
    """The catalogue's JSON is built once per default timeout, not per request: a changed default still shows."""
    provider = ProviderConfig(name="t", base_url="http://127.0.0.1:1/v1", model="m")
    for timeout_s in (30.0, 120.0, 30.0):
        body = json.loads(request_body(provider, [ChatMessage(role="user", content="hi")], set(), timeout_s))
        assert body["tools"] == json.loads(json.dumps(tools_catalogue(timeout_s)))
        assert f"killed after {timeout_s:g} s" in json.dumps(body["tools"])


def test_authorization_only_when_the_key_is_set_and_extra_headers(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(text_reply("a"), text_reply("b"), text_reply("c"))
    assert llm.run(server.base_url, api_key_env=TEST_KEY_ENV, headers={"X-Title": "dashfloat"}).done.content == "a"
    assert llm.run(server.base_url).done.content == "b"
    assert llm.run(server.base_url, api_key_env="DASHFLOAT_TEST_UNSET_VARIABLE").done.content == "c"
    with_key, without, unset = server.headers
    assert with_key["Authorization"] == f"Bearer {TEST_KEY}"
    assert with_key["X-Title"] == "dashfloat"
    assert "Authorization" not in without and "Authorization" not in unset


def test_tool_calls_finish(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(tool_calls_reply([("c1", "read_file", {"path": "a.txt"}), ("c2", "list_directory", {})]))
    done = llm.run(server.base_url).done
    assert done.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.args) for c in done.tool_calls] == [
        ("c1", "read_file", ReadFileArgs(path="a.txt")),
        ("c2", "list_directory", ListDirectoryArgs()),
    ]


def test_reasoning_content_and_reasoning_are_their_own_kind(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(
        raw(
            ev(chunk({"reasoning_content": "think "})),
            ev(chunk({"reasoning": "more"})),
            ev(chunk({"content": "answer"}, "stop")),
            DONE,
        )
    )
    result = llm.run(server.base_url)
    assert result.text(ReasoningDelta) == "think more"
    assert result.done.content == "answer"


# ---------------------------------------------------------------- framing deviations


def test_comment_lines_as_keep_alives(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(
        raw(b": OPENROUTER PROCESSING\n\n", b": keep-alive\n\n", b":\n\n", ev(chunk({"content": "ok"}, "stop")), DONE)
    )
    assert llm.run(server.base_url).done.content == "ok"


def test_data_without_a_space_after_the_colon(llm: Llm, server: ScriptedServer) -> None:
    payload = json.dumps(chunk({"content": "tight"}, "stop")).encode()
    server.enqueue(raw(b"data:" + payload + b"\n\n", b"data:[DONE]\n\n"))
    assert llm.run(server.base_url).done.content == "tight"


def test_crlf_line_endings_and_bare_cr(llm: Llm, server: ScriptedServer) -> None:
    a = json.dumps(chunk({"content": "a"})).encode()
    b = json.dumps(chunk({"content": "b"})).encode()
    c = json.dumps(chunk({"content": "c"}, "stop")).encode()
    # The CRLF of the second event is split across two writes.
    server.enqueue(raw(b"data: " + a + b"\r\n\r", b"\ndata: " + b + b"\r\r", b"data: " + c + b"\n\n", DONE))
    assert llm.run(server.base_url).done.content == "abc"


def test_event_lines_multiline_data_and_u2028(llm: Llm, server: ScriptedServer) -> None:
    text = "line\u2028sep\u2029para"
    encoded = json.dumps(chunk({"content": text}), ensure_ascii=False)
    split = encoded.index('"choices"')
    multi = f"event: message\ndata: {encoded[:split]}\ndata: {encoded[split:]}\n\n".encode()
    server.enqueue(raw(multi, ev(chunk({}, "stop")), DONE))
    assert llm.run(server.base_url).done.content == text


def test_done_missing_after_the_finish_chunk(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(raw(ev(chunk({"content": "fin"})), ev(chunk({}, "stop"))))
    done = llm.run(server.base_url).done
    assert (done.content, done.finish_reason) == ("fin", "stop")


def test_closed_before_any_finish_chunk_is_truncated(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(raw(ev(chunk({"content": "half"}))))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "truncated" and failed.content == "half"
    assert len(server.requests) == 1  # a token had arrived: never retried


def test_unframed_body_without_chunked_encoding(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(raw(ev(chunk({"content": "plain"}, "stop")), DONE, chunked=False))
    assert llm.run(server.base_url).done.content == "plain"


def test_wrong_content_type_but_sse_body_is_accepted(llm: Llm, server: ScriptedServer) -> None:
    body = [ev(chunk({"content": "ok"}, "stop")), DONE]
    server.enqueue(Reply(headers={"Content-Type": "application/json"}, body=body))
    assert llm.run(server.base_url).done.content == "ok"


# ---------------------------------------------------------------- usage and extras


def test_usage_with_choices_null_or_omitted(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(
        raw(ev(chunk({"content": "a"}, "stop")), ev({"choices": None, "usage": USAGE}), DONE),
        raw(ev(chunk({"content": "a"}, "stop")), ev({"usage": USAGE}), DONE),
    )
    assert llm.run(server.base_url).done.usage == Usage(5, 7, 12)
    assert llm.run(server.base_url).done.usage == Usage(5, 7, 12)


def test_usage_on_every_chunk_keeps_the_last(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(
        raw(
            ev(chunk({"content": "a"}, usage={"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6})),
            ev(chunk({"content": "b"}, "stop", usage=USAGE)),
            DONE,
        )
    )
    assert llm.run(server.base_url).done.usage == Usage(5, 7, 12)


def test_usage_inside_x_groq(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(raw(ev(chunk({"content": "g"}, "stop", x_groq={"id": "q", "usage": USAGE})), DONE))
    assert llm.run(server.base_url).done.usage == Usage(5, 7, 12)


def test_usage_second_to_last_then_an_empty_chunk(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(raw(ev(chunk({"content": "x"}, "stop")), ev({"choices": [], "usage": USAGE}), ev({}), DONE))
    assert llm.run(server.base_url).done.usage == Usage(5, 7, 12)


def test_usage_combined_with_content(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(raw(ev(chunk({"content": "both"}, "stop", usage=USAGE)), DONE))
    done = llm.run(server.base_url).done
    assert (done.content, done.usage) == ("both", Usage(5, 7, 12))


def test_azure_filter_chunk_and_choices_without_delta(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(
        raw(
            ev({"choices": [], "prompt_filter_results": [{"prompt_index": 0}]}),
            ev(chunk(None)),
            ev(chunk({"content": "az"})),
            ev(chunk(None, "stop")),
            DONE,
        )
    )
    assert llm.run(server.base_url).done.content == "az"


def test_error_event_mid_stream(llm: Llm, server: ScriptedServer) -> None:
    error = {"error": {"message": "upstream overloaded"}}
    server.enqueue(raw(ev(chunk({"content": "so far"})), ev(error), DONE), raw(ev(error)))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "provider_error" and "upstream overloaded" in failed.message
    assert failed.content == "so far"
    assert llm.run(server.base_url).failed.kind == "provider_error"


def test_finish_reason_error(llm: Llm, server: ScriptedServer) -> None:
    choice = {"index": 0, "delta": {}, "finish_reason": "error", "error": {"message": "model crashed"}}
    server.enqueue(raw(ev(chunk({"content": "p"})), ev({"choices": [choice]}), DONE))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "provider_error" and "model crashed" in failed.message


def test_finish_reason_length_passes_through(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(text_reply("cut", finish_reason="length"))
    assert llm.run(server.base_url).done.finish_reason == "length"


def test_tool_calls_with_finish_reason_stop_later_or_never(llm: Llm, server: ScriptedServer) -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}
    server.enqueue(
        raw(ev(chunk({"tool_calls": [call]}, "stop")), DONE),
        raw(ev(chunk({"tool_calls": [call]})), ev(chunk({"content": ""})), ev(chunk({}, "tool_calls")), DONE),
        raw(ev(chunk({"tool_calls": [call]})), DONE),
    )
    for _ in range(3):
        done = llm.run(server.base_url).done
        assert done.finish_reason == "tool_calls"
        assert [(c.id, c.args) for c in done.tool_calls] == [("c1", ReadFileArgs(path="a"))]


def test_groq_empty_tool_call_lists_on_content_chunks(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(raw(ev(chunk({"content": "hi", "tool_calls": []})), ev(chunk({"tool_calls": []}, "stop")), DONE))
    done = llm.run(server.base_url).done
    assert (done.content, done.tool_calls, done.finish_reason) == ("hi", [], "stop")


def test_only_statuses_and_deltas_precede_exactly_one_terminal(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(text_reply("x" * 200, chunk_size=1, reasoning="r" * 50))
    result = llm.run(server.base_url)
    assert all(isinstance(m, ContentDelta | ReasoningDelta | StreamStatus) for m in result.messages[:-1])
    assert result.done.content == "x" * 200


def test_a_fast_stream_is_one_message_per_socket_read(llm: Llm, server: ScriptedServer) -> None:
    text = "".join(f"w{i} " for i in range(400))
    events = b"".join(ev(chunk({"content": text[i : i + 4]})) for i in range(0, len(text), 4))
    server.enqueue(raw(events + ev(chunk({}, "stop")) + DONE))  # one write of 400 token events
    result = llm.run(server.base_url)
    assert result.done.content == text == result.text(ContentDelta)
    assert len(result.of(ContentDelta)) <= 8  # one per socket read, not one per token (400)


def test_a_lone_token_is_sent_before_the_next_read(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(Reply(body=[ev(chunk({"content": "first"})), Pause(30)]))
    request_id = llm.start(server.base_url, idle_timeout_s=60)
    first = None
    while first is None or first.request_id != request_id:  # skip late answers to earlier tests
        assert llm.channel.poll(20)  # long before the 30 s pause ends
        first = llm.channel.recv()
    assert isinstance(first, ContentDelta) and first.text == "first"
    llm.channel.send(CancelStream(request_id))
    llm.collect(request_id)


def test_a_paced_stream_is_batched_not_one_message_per_event(llm: Llm, server: ScriptedServer) -> None:
    """DELTA_BATCH_S crossed: 60 events, each its own write 0.5 ms apart (a paced provider), come as a few
    messages; each message holds what arrived within the batch window, in order."""
    assert DELTA_BATCH_S > 0.0005 * 4
    tokens = [f"t{i:02d} " for i in range(60)]
    body: list[bytes | Pause] = []
    for token in tokens:
        body += [ev(chunk({"content": token})), Pause(0.0005)]
    server.enqueue(Reply(body=[*body, ev(chunk({}, "stop")), DONE]))
    result = llm.run(server.base_url)
    assert result.done.content == "".join(tokens) == result.text(ContentDelta)
    assert len(result.of(ContentDelta)) <= len(tokens) // 2


def test_only_a_small_read_of_answer_text_holds_the_next_read() -> None:
    """PACED_READ_MAX_BYTES crossed: the next read waits only after a paced read of text, never for a call."""
    assert holds_next_read(PACED_READ_MAX_BYTES - 1, text_arrived=True, calls_begun=False, finished=False)
    assert not holds_next_read(PACED_READ_MAX_BYTES, True, False, False)  # a bulk write: read on at once
    assert not holds_next_read(100, text_arrived=False, calls_begun=False, finished=False)  # nothing to batch
    assert not holds_next_read(100, text_arrived=True, calls_begun=True, finished=False)  # a call's arguments
    assert not holds_next_read(100, text_arrived=True, calls_begun=False, finished=True)  # the episode's end


def test_the_serve_loop_holds_a_message_only_for_a_worthwhile_while() -> None:
    """HOLD_MIN_S crossed."""
    assert worth_holding(HOLD_MIN_S)
    assert not worth_holding(HOLD_MIN_S * 0.99)
    assert not worth_holding(0.0)
    assert HOLD_MIN_S < DELTA_BATCH_S


def test_the_scripted_server_notes_when_each_chat_request_arrived(server: ScriptedServer) -> None:
    server.enqueue(text_reply("a"), text_reply("b"))
    before = time.perf_counter()
    for _ in range(2):
        requests.post(f"{server.base_url}/chat/completions", json={"messages": []}, timeout=10).close()
    assert before <= server.arrival(0) <= server.arrival(1) <= time.perf_counter()
    assert len(server.arrived) == len(server.requests) == 2
    with pytest.raises(TimeoutError):
        server.arrival(2, timeout_s=0.05)
