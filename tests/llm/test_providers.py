"""What broke outside the scripted server (issue 18), reproduced against it and fixed.

Each test drives the real LLM process against the scripted server configured to behave like the real
server that showed the defect (the behaviour recorded in dashfloat/testing/sse_server.py).
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterable, Iterator

import pytest
import requests

from dashfloat.llm._limits import (
    ANSWER_MAX_TOKENS_CAP,
    ANSWER_MAX_TOKENS_DEFAULT,
    MAX_REDIRECTS,
    REPEAT_MIN_COUNT,
    REPEAT_RUN_MIN_CHARS,
    SSE_EVENT_MAX_LINES,
)
from dashfloat.protocol import (
    ChatMessage,
    DiscoverWindow,
    FunctionCall,
    ProviderConfig,
    ReadFileArgs,
    StreamStatus,
    ToolCallRecord,
    WindowFound,
)
from dashfloat.testing.sse_server import (
    BodyItem,
    Drop,
    Pause,
    Reply,
    ScriptedServer,
    gzip_reply,
    llama_cpp_python_handler,
    looping_handler,
    redirect_reply,
    sse_event,
    text_reply,
    tool_calls_reply,
)
from tests.e2e import wait_for
from tests.llm.conftest import Llm, varied


@pytest.fixture
def llm(route_llm: Llm) -> Llm:
    """Every test here runs through both routes to a local plain-HTTP server (http.client and requests)."""
    return route_llm


AFTER_A_CALL = [
    ChatMessage(role="user", content="read notes.txt"),
    ChatMessage(
        role="assistant",
        tool_calls=[ToolCallRecord("call_1", FunctionCall("read_file", '{"path": "notes.txt"}'))],
    ),
    ChatMessage(role="tool", tool_call_id="call_1", content='{"ok": true, "content": "hello"}'),
]


def chat(server: ScriptedServer, body: object) -> requests.Response:
    return requests.post(f"{server.base_url}/chat/completions", json=body, timeout=10)


# ---------------------------------------------------------------- 1. the content key


def test_the_recorded_llama_cpp_python_pairs(server: ScriptedServer) -> None:
    """The scripted server answers as llama-cpp-python was recorded answering each form of the message."""
    server.handler = llama_cpp_python_handler
    call = {"id": "c", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    missing = {"role": "assistant", "tool_calls": [call]}
    broken = requests.post(f"{server.base_url}/chat/completions", json={"messages": [missing]}, stream=True)
    assert broken.status_code == 200
    with pytest.raises(requests.exceptions.ChunkedEncodingError):  # 200 headers, then nothing
        _ = broken.content
    assert chat(server, {"messages": [{**missing, "content": None}]}).status_code == 500
    accepted = chat(server, {"messages": [{**missing, "content": ""}]})
    assert accepted.status_code == 200 and accepted.content.endswith(b"data: [DONE]\n\n")


def test_a_tool_call_only_message_is_sent_with_empty_content(llm: Llm, server: ScriptedServer) -> None:
    server.handler = llama_cpp_python_handler
    done = llm.run(server.base_url, messages=AFTER_A_CALL).done
    assert done.content == "I read the file."
    sent = server.requests[0]["messages"][1]
    assert sent["content"] == "" and sent["tool_calls"][0]["id"] == "call_1"
    assert len(server.requests) == 1


def test_an_answer_closed_before_any_byte_says_so_in_plain_words(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(*[Reply(body=[Drop()]) for _ in range(3)])
    failed = llm.run(server.base_url).failed
    assert failed.kind == "truncated"
    assert "closed the connection before answering" in failed.message
    assert "IncompleteRead" not in failed.message and "Connection broken" not in failed.message
    server.enqueue(*[Reply(body=[]) for _ in range(3)])
    assert "closed the connection before answering" in llm.run(server.base_url).failed.message


def test_the_idle_timeout_message_names_the_setting_it_came_from(llm: Llm, server: ScriptedServer) -> None:
    first = sse_event({"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": None}]})
    server.enqueue(Reply(body=[first, Pause(3)]), Reply(body=[first, Pause(3)]))  # the idle timeout follows an event
    from_env = llm.run(server.base_url, idle_timeout_s=0.3, idle_timeout_from="DASHFLOAT_IDLE_TIMEOUT_S").failed
    assert from_env.kind == "idle_timeout" and from_env.message.endswith("raise DASHFLOAT_IDLE_TIMEOUT_S.")
    assert "config.toml" not in from_env.message
    default = llm.run(server.base_url, idle_timeout_s=0.3).failed
    assert "settings.idle_timeout_s in config.toml (or DASHFLOAT_IDLE_TIMEOUT_S)" in default.message


# ---------------------------------------------------------------- 2. a bound on every answer


def test_max_tokens_is_sent_by_default_and_derived_from_the_window(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(*[text_reply("ok") for _ in range(5)])
    llm.run(server.base_url)
    llm.run(server.base_url, context_window=8192)
    llm.run(server.base_url, context_window=1_000_000)
    llm.run(server.base_url, context_window=8192, max_tokens=300)
    llm.run(server.base_url, max_tokens=0)
    sent = [body.get("max_tokens") for body in server.requests]
    assert sent == [ANSWER_MAX_TOKENS_DEFAULT, 2048, ANSWER_MAX_TOKENS_CAP, 300, None]


def test_a_runaway_answer_is_ended_by_max_tokens(llm: Llm, server: ScriptedServer) -> None:
    server.handler = looping_handler()
    done = llm.run(server.base_url, max_tokens=40).done
    assert done.finish_reason == "length" and len(done.content.split()) == 40


def test_a_runaway_answer_without_max_tokens_is_ended_by_the_repetition_guard(llm: Llm, server: ScriptedServer) -> None:
    sentence = "I will now read the file notes.txt to see what it says. "
    server.handler = looping_handler(sentence)
    failed = llm.run(server.base_url, max_tokens=0, timeout_s=30).failed
    assert failed.kind == "repeating" and f"{REPEAT_MIN_COUNT} times" in failed.message
    assert failed.content.count(sentence.strip()) == 1  # one copy kept for the model, not the loop
    assert "max_tokens" not in server.requests[0]


def test_long_rules_table_separators_and_blank_lines_are_no_loop(llm: Llm, server: ScriptedServer) -> None:
    # Runs of a short unit are what rules and tables are made of: the guard stopped these at 768 characters.
    columns = 120
    answer = (
        "Title\n" + "=" * 3000 + "\n\n"
        + "|" + "|".join(f" c{i} " for i in range(columns)) + "|\n"
        + "|" + "-----|" * columns + "\n"
        + "|" + "|".join(" 0 " for _ in range(columns)) + "|\n"
        + "\n" * 3000 + "zeros: " + "0, " * 1300 + "done."
    )  # fmt: skip
    server.enqueue(text_reply(answer, chunk_size=16))
    assert llm.run(server.base_url, max_tokens=0).done.content == answer
    run = "=" * (REPEAT_RUN_MIN_CHARS + 1024)  # past the bound: a loop after all
    server.enqueue(text_reply("Title\n" + run, chunk_size=16))
    failed = llm.run(server.base_url, max_tokens=0).failed
    assert failed.kind == "repeating" and f"'=' over and over, {REPEAT_RUN_MIN_CHARS} characters" in failed.message
    assert failed.content.startswith("Title\n==") and len(failed.content) < len("Title\n") + 64  # one span kept


def test_a_provider_that_rejects_max_tokens_gets_none_from_then_on(llm: Llm, server: ScriptedServer) -> None:
    refusal = {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model."}}
    rejected = Reply(status=400, headers={"Content-Type": "application/json"}, body=[json.dumps(refusal).encode()])
    server.enqueue(rejected, text_reply("fine"), text_reply("again"))
    result = llm.run(server.base_url)
    assert result.done.content == "fine"
    assert any("max_tokens" in s.text for s in result.of(StreamStatus))
    assert llm.run(server.base_url).done.content == "again"
    assert ["max_tokens" in body for body in server.requests] == [True, False, False]


# ---------------------------------------------------------------- 3. tool calls written as text

FENCED = f"I will read it.\n```json\n{json.dumps({'name': 'read_file', 'arguments': {'path': 'notes.txt'}})}\n```"


def test_a_fenced_call_becomes_a_call_with_the_prose_kept(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(text_reply(FENCED, chunk_size=7))
    done = llm.run(server.base_url).done
    assert done.finish_reason == "tool_calls" and done.content == "I will read it."
    assert [(c.name, c.args, c.error) for c in done.tool_calls] == [("read_file", ReadFileArgs(path="notes.txt"), None)]


def test_auto_stops_reading_text_once_the_provider_sent_a_native_call(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(
        text_reply(FENCED),
        tool_calls_reply([("c1", "list_directory", {})]),
        text_reply(FENCED),
        text_reply(FENCED),
    )
    assert len(llm.run(server.base_url).done.tool_calls) == 1  # auto, nothing native yet: read
    assert llm.run(server.base_url).done.tool_calls[0].id == "c1"
    after_native = llm.run(server.base_url).done
    assert after_native.tool_calls == [] and after_native.content == FENCED
    assert len(llm.run(server.base_url, tool_calls="text").done.tool_calls) == 1  # text: always read


def test_native_mode_never_reads_text(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(text_reply(FENCED))
    done = llm.run(server.base_url, tool_calls="native").done
    assert done.tool_calls == [] and done.content == FENCED and done.finish_reason == "stop"


# ---------------------------------------------------------------- 4. dropped tools


def test_a_llama_server_without_tool_support_is_named_once(first_contact_llm: Llm, server: ScriptedServer) -> None:
    server.props = {"chat_template_caps": {"supports_tools": False, "supports_tool_calls": False}}
    server.enqueue(text_reply("invented"), text_reply("again"))
    warnings = [s for s in first_contact_llm.run(server.base_url).of(StreamStatus) if s.level == "warning"]
    assert len(warnings) == 1 and "--jinja" in warnings[0].text and "no tool support" in warnings[0].text
    assert server.gets == ["/props"]
    assert first_contact_llm.run(server.base_url).of(StreamStatus) == []  # once, and /props asked once
    assert server.gets == ["/props"]


def test_props_fetched_by_the_window_discovery_are_not_asked_again_by_the_stream(
    first_contact_llm: Llm, server: ScriptedServer
) -> None:
    server.props = {"chat_template_caps": {"supports_tools": False}, "n_ctx": 8192}
    server.enqueue(text_reply("invented"))
    provider = ProviderConfig(name="test", base_url=server.base_url, model="m")
    first_contact_llm.channel.send(DiscoverWindow(request_id=7001, provider=provider))
    found = first_contact_llm.channel.recv()
    assert isinstance(found, WindowFound) and (found.window, found.detail) == (8192, "llama.cpp /props n_ctx")
    warnings = [s for s in first_contact_llm.run(server.base_url).of(StreamStatus) if s.level == "warning"]
    assert len(warnings) == 1 and "no tool support" in warnings[0].text  # from the discovery's /props
    assert server.gets.count("/props") == 1


def _after(gate: threading.Event, body: Iterable[BodyItem]) -> Iterator[BodyItem]:
    """A body the server sends only once the test opens ``gate`` (bounded: a broken test fails, never hangs)."""
    assert gate.wait(30)
    yield from body


def test_a_stream_during_the_discovery_does_not_ask_props_itself_and_reads_the_discoverys(
    first_contact_llm: Llm, server: ScriptedServer
) -> None:
    # The first request goes before the window is known (ADR 0052): it must not queue its own /props question
    # before the chat, and the discovery's answer still says the template has no tools.
    server.props = {"chat_template_caps": {"supports_tools": False}, "n_ctx": 8192}
    models_gate, chat_gate = threading.Event(), threading.Event()
    json_headers = {"Content-Type": "application/json"}
    server.routes[("GET", "/v1/models")] = Reply(headers=json_headers, body=_after(models_gate, [b"{}"]))
    server.enqueue(Reply(body=_after(chat_gate, text_reply("invented").body)))
    provider = ProviderConfig(name="test", base_url=server.base_url, model="m")
    first_contact_llm.channel.send(DiscoverWindow(request_id=7002, provider=provider))
    request_id = first_contact_llm.start(server.base_url)
    assert server.wait_requests(1, 30)
    # The chat went while the discovery's first probe waits (side by side: either may reach the server first).
    assert wait_for(lambda: server.gets == ["/v1/models"])
    models_gate.set()
    found = first_contact_llm.channel.recv()
    assert isinstance(found, WindowFound) and (found.window, found.detail) == (8192, "llama.cpp /props n_ctx")
    chat_gate.set()
    warnings = [s for s in first_contact_llm.collect(request_id).of(StreamStatus) if s.level == "warning"]
    assert len(warnings) == 1 and "no tool support" in warnings[0].text
    assert server.gets == ["/v1/models", "/props"]


def test_a_server_with_tool_support_or_no_props_gets_no_warning(llm: Llm, server: ScriptedServer) -> None:
    server.props = {"chat_template_caps": {"supports_tools": True}}
    server.enqueue(text_reply("ok", usage=(900, 2)))
    assert llm.run(server.base_url).of(StreamStatus) == []


def test_prompt_tokens_far_below_the_request_mean_dropped_tools(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(text_reply("invented", usage=(171, 9)), text_reply("again", usage=(171, 9)))
    warnings = llm.run(server.base_url).of(StreamStatus)
    assert len(warnings) == 1 and warnings[0].level == "warning" and "171 prompt tokens" in warnings[0].text
    assert llm.run(server.base_url).of(StreamStatus) == []


# ---------------------------------------------------------------- 5. transport


def test_identity_encoding_is_asked_and_a_gzip_answer_is_still_read(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(gzip_reply(text_reply("compressed answer", usage=(5, 2))))
    done = llm.run(server.base_url).done
    assert done.content == "compressed answer"
    assert server.headers[0]["Accept-Encoding"] == "identity"


def test_a_gzip_bomb_is_stopped(llm: Llm, server: ScriptedServer) -> None:
    # 64 MiB of blank lines in 64 KiB: empty events, which no frame or episode cap would ever stop.
    bomb = gzip.compress(b"\n" * (64 * 1024 * 1024), 9)
    server.enqueue(Reply(headers={"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}, body=[bomb]))
    failed = llm.run(server.base_url, timeout_s=30).failed
    assert failed.kind == "frame_too_large" and "inflates" in failed.message


def test_a_gzip_bomb_without_newlines_stops_at_the_frame_cap(llm: Llm, server: ScriptedServer) -> None:
    bomb = gzip.compress(b"data: " + b"x" * (32 * 1024 * 1024), 9)
    server.enqueue(Reply(headers={"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}, body=[bomb]))
    assert llm.run(server.base_url, timeout_s=30).failed.kind == "frame_too_large"


@pytest.fixture
def elsewhere() -> Iterator[ScriptedServer]:
    with ScriptedServer() as other:
        yield other


def test_a_redirect_to_another_origin_is_never_followed(
    llm: Llm, server: ScriptedServer, elsewhere: ScriptedServer
) -> None:
    target = f"{elsewhere.base_url}/chat/completions"
    server.enqueue(redirect_reply(target))
    elsewhere.enqueue(text_reply("the conversation leaked"))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "redirected"
    assert f"{server.base_url}/chat/completions" in failed.message and target in failed.message
    assert elsewhere.requests == []


def test_same_origin_redirects_are_followed_and_bounded(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(redirect_reply("/v2/chat/completions", 308), text_reply("moved"))
    assert llm.run(server.base_url).done.content == "moved"
    assert server.paths == ["/v1/chat/completions", "/v2/chat/completions"]
    server.handler = lambda body: redirect_reply("/v1/chat/completions")
    failed = llm.run(server.base_url).failed
    assert failed.kind == "redirected" and f"more than {MAX_REDIRECTS} times" in failed.message
    assert len(server.requests) == 2 + MAX_REDIRECTS + 1  # not 93


def test_an_oversized_event_of_short_lines_is_rejected_early(llm: Llm, server: ScriptedServer) -> None:
    sent = 0

    def short_lines() -> Iterator[bytes]:
        nonlocal sent
        block = b"data: x\n" * 8192
        for _ in range(256):  # 16 MiB of one event, never ended
            sent += len(block)
            yield block

    server.enqueue(Reply(body=short_lines()))
    failed = llm.run(server.base_url, timeout_s=30).failed
    assert failed.kind == "frame_too_large" and f"{SSE_EVENT_MAX_LINES} lines" in failed.message
    assert sent < 8 * 1024 * 1024  # the reader stopped long before the server ran out


def test_many_short_events_are_fine(llm: Llm, server: ScriptedServer) -> None:
    text = varied(4000)
    events = b"".join(
        sse_event({"choices": [{"index": 0, "delta": {"content": text[i : i + 2]}, "finish_reason": None}]})
        for i in range(0, len(text), 2)
    )
    tail = [sse_event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}), sse_event("[DONE]")]
    server.enqueue(Reply(body=[events, *tail]))
    assert llm.run(server.base_url).done.content == text
