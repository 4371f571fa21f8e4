"""Issue 39, ADR 0092: the wait says what it waits for. A real LLM process against a real server that answers as
llama.cpp does: ``prompt_progress`` chunks when asked with ``return_progress``, the ``Server: llama.cpp`` header,
``/props``; a cancel while the server reads a prompt; ``max_tokens`` from the window the server reported."""

from __future__ import annotations

from typing import Any

import pytest

from dashfloat.llm._limits import ANSWER_MAX_TOKENS_DEFAULT, ANSWER_MAX_TOKENS_DISCOVERED_CAP, ANSWER_WINDOW_FRACTION
from dashfloat.llm._provider import is_llamacpp
from dashfloat.llm._request import answer_max_tokens
from dashfloat.llm.episode import Episode
from dashfloat.protocol import (
    CancelStream,
    ContentDelta,
    DiscoverWindow,
    PromptProgress,
    ProviderConfig,
    StreamFailed,
    WindowFound,
)
from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, sse_event, text_reply
from tests.llm.conftest import Llm

LLAMACPP_PROPS = {"default_generation_settings": {"n_ctx": 8192}, "build_info": "b7000-test", "model_path": "m.gguf"}
"""What llama.cpp's ``GET /props`` says (the fields that name it, and its window)."""


def progress_event(processed: int, total: int, cached: int = 0) -> bytes:
    """One chunk as llama.cpp streams it while it reads the prompt (asked with ``return_progress``)."""
    return sse_event(
        {
            "choices": [{"finish_reason": None, "index": 0, "delta": {"role": "assistant", "content": None}}],
            "object": "chat.completion.chunk",
            "prompt_progress": {"total": total, "cache": cached, "processed": processed, "time_ms": 12},
        }
    )


def llamacpp_reply(text: str, steps: list[tuple[int, int]], pause_s: float = 0.0) -> Reply:
    """Progress chunks (``(processed, total)``), each followed by ``pause_s`` of silence, then ``text``."""
    answer = text_reply(text)
    body: list[Any] = []
    for processed, total in steps:
        body += [progress_event(processed, total), *([Pause(pause_s)] if pause_s else [])]
    return Reply(headers={"Content-Type": "text/event-stream", "Server": "llama.cpp"}, body=[*body, *answer.body])


def test_a_llamacpp_server_is_asked_for_progress_and_each_step_reaches_the_agent(llm: Llm) -> None:
    with ScriptedServer() as server:
        server.routes[("GET", "/props")] = (200, LLAMACPP_PROPS)
        server.enqueue(llamacpp_reply("done", [(0, 5500), (2048, 5500), (5500, 5500)]))
        result = llm.run(server.base_url)
    assert server.requests[0]["return_progress"] is True
    assert [(m.processed, m.total) for m in result.of(PromptProgress)] == [(0, 5500), (2048, 5500), (5500, 5500)]
    assert result.messages.index(result.of(PromptProgress)[-1]) < result.messages.index(result.of(ContentDelta)[0])
    assert result.done.content == "done"


def test_a_server_known_only_by_its_header_is_asked_from_its_next_request_on(llm: Llm) -> None:
    with ScriptedServer() as server:  # no /props: a 404, as behind a proxy that passes /v1 only
        server.enqueue(llamacpp_reply("one", []), llamacpp_reply("two", [(100, 100)]))
        assert llm.run(server.base_url).done.content == "one"
        second = llm.run(server.base_url)
    assert "return_progress" not in server.requests[0]
    assert server.requests[1]["return_progress"] is True
    assert [(m.processed, m.total) for m in second.of(PromptProgress)] == [(100, 100)]


def test_another_server_is_not_asked_for_progress(llm: Llm) -> None:
    with ScriptedServer() as server:
        server.enqueue(text_reply("a"), text_reply("b"))
        llm.run(server.base_url)
        llm.run(server.base_url)
    assert all("return_progress" not in body for body in server.requests)


def test_the_silence_between_progress_chunks_is_no_idle_timeout(llm: Llm) -> None:
    # A CPU reads a long prompt batch by batch: 25 s a batch at 6k tokens here, against a 60 s idle timeout that
    # would apply once the answer began. Progress is no answer: the first-byte deadline applies between its steps.
    with ScriptedServer() as server:
        server.routes[("GET", "/props")] = (200, LLAMACPP_PROPS)
        server.enqueue(llamacpp_reply("read", [(0, 4096), (4096, 4096)], pause_s=0.5))
        result = llm.run(server.base_url, idle_timeout_s=0.25, first_byte_timeout_s=10.0)
    assert result.done.content == "read"


def test_after_a_cancel_while_the_prompt_was_read_the_next_wait_says_the_server_may_be_busy(llm: Llm) -> None:
    with ScriptedServer() as server:
        server.routes[("GET", "/props")] = (200, LLAMACPP_PROPS)
        server.enqueue(Reply(headers={"Content-Type": "text/event-stream", "Server": "llama.cpp"}, body=[Pause(30)]))
        first = llm.start(server.base_url)
        assert server.wait_requests(1)
        llm.channel.send(CancelStream(first))
        assert llm.collect(first).failed.kind == "cancelled"
        server.enqueue(llamacpp_reply("after", [(10, 10)]), text_reply("later"))
        after = llm.run(server.base_url)
        later = llm.run(server.base_url)
    assert after.messages[0] == PromptProgress(after.messages[0].request_id, busy=True)  # before anything else
    assert [m.busy for m in after.of(PromptProgress)] == [True, False]
    assert after.done.content == "after"
    assert later.of(PromptProgress) == []  # the server read the next prompt: it is busy no more


def test_a_cancel_after_the_answer_began_leaves_no_busy_note(llm: Llm) -> None:
    with ScriptedServer() as server:
        answer = [sse_event({"choices": [{"index": 0, "delta": {"content": "par"}, "finish_reason": None}]})]
        server.enqueue(Reply(body=[*answer, Pause(30)]))
        first = llm.start(server.base_url)
        assert server.wait_requests(1)
        while not isinstance(message := llm.channel.recv(), ContentDelta):
            assert not isinstance(message, StreamFailed), message
        llm.channel.send(CancelStream(first))
        assert llm.collect(first).failed.kind == "cancelled"
        server.enqueue(text_reply("next"))
        assert llm.run(server.base_url).of(PromptProgress) == []


def test_max_tokens_follows_the_window_the_server_reported(llm: Llm) -> None:
    with ScriptedServer() as server:
        server.routes[("GET", "/props")] = (200, LLAMACPP_PROPS)
        provider = ProviderConfig(name="test", base_url=server.base_url, model="m")
        llm.channel.send(DiscoverWindow(request_id=1, provider=provider))
        while not isinstance(found := llm.channel.recv(), WindowFound):
            pass
        assert (found.window, found.source) == (8192, "server")
        server.enqueue(text_reply("ok"))
        llm.run(server.base_url)
    assert server.requests[0]["max_tokens"] == int(8192 * ANSWER_WINDOW_FRACTION) == 2048  # was 4096: half of it


@pytest.mark.parametrize(
    ("window", "expected"),
    [
        (8192, 2048),
        (int(ANSWER_MAX_TOKENS_DISCOVERED_CAP / ANSWER_WINDOW_FRACTION), ANSWER_MAX_TOKENS_DISCOVERED_CAP),
        (int(ANSWER_MAX_TOKENS_DISCOVERED_CAP / ANSWER_WINDOW_FRACTION) + 4, ANSWER_MAX_TOKENS_DISCOVERED_CAP),
        (None, ANSWER_MAX_TOKENS_DEFAULT),
    ],
)
def test_a_reported_window_lowers_max_tokens_never_past_its_cap(window: int | None, expected: int) -> None:
    provider = ProviderConfig(name="t", base_url="http://127.0.0.1:1/v1", model="m")
    assert answer_max_tokens(provider, window) == expected
    configured = ProviderConfig(name="t", base_url="http://127.0.0.1:1/v1", model="m", context_window=65536)
    assert answer_max_tokens(configured, window) == 8192  # a configured window keeps its own rule
    assert answer_max_tokens(ProviderConfig(name="t", base_url="x", model="m", max_tokens=0), window) is None


def test_the_episode_keeps_progress_apart_from_the_answer() -> None:
    episode = Episode()
    assert episode.feed(progress_event(512, 2048, cached=100).decode()[len("data: ") :].strip()) == []
    assert episode.take_progress() == (512, 2048, 100)
    assert episode.take_progress() is None  # taken once
    episode.feed('{"choices":[{"index":0,"delta":{"content":"hi"}}],"prompt_progress":{"total":"x"}}')
    assert episode.take_progress() is None and episode.content == "hi"  # a malformed progress is no progress


@pytest.mark.parametrize(
    ("props", "header", "known"),
    [
        (LLAMACPP_PROPS, None, True),
        ({"n_ctx": 8192}, None, False),
        (None, "llama.cpp", True),
        (None, "nginx, llama.cpp", True),
        (None, "BaseHTTP/0.6 Python/3.11", False),
        (None, None, False),
    ],
)
def test_llamacpp_is_known_by_its_props_or_its_server_header(props: Any, header: str | None, known: bool) -> None:
    assert is_llamacpp(props, header) is known
