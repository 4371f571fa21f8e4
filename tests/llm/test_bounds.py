"""Every bound of the stream crossed: frame cap (with flat RSS), episode bytes, distinct tool calls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from dashfloat.llm import EPISODE_MAX_BYTES, EPISODE_MAX_TOOL_CALLS, SSE_FRAME_MAX_BYTES
from dashfloat.llm._errors import StreamError
from dashfloat.llm._framing import framed_events
from dashfloat.protocol import ContentDelta, ReadFileArgs, StreamFailed
from dashfloat.testing.sse_server import Reply, ScriptedServer, sse_event, text_reply
from tests.llm.conftest import Llm, varied

MIB = 1024 * 1024


def content(text: str) -> bytes:
    return sse_event({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})


def calls_chunk(items: list[dict[str, Any]]) -> bytes:
    return sse_event({"choices": [{"index": 0, "delta": {"tool_calls": items}, "finish_reason": None}]})


FINISH = sse_event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
DONE = sse_event("[DONE]")


def frame_capped(chunks: list[bytes], max_bytes: int) -> list[bytes]:
    return list(framed_events(iter(chunks), max_bytes, 1_000_000))


def test_frame_cap_counts_across_chunk_splits() -> None:
    ok = [b"data: " + b"x" * 60, b"\r\n", b"\r\n", b"data: " + b"y" * 60 + b"\n", b"\n"]
    assert frame_capped(ok, 70) == [ok[0] + ok[1] + ok[2], ok[3] + ok[4]]
    with pytest.raises(StreamError) as caught:
        frame_capped([b"data: ", b"x" * 40, b"x" * 40, b"\n\n"], 70)
    assert caught.value.kind == "frame_too_large"


def test_frame_cap_cannot_be_dodged_with_line_endings_sseclient_does_not_end_events_on() -> None:
    # b"x\r\r\n" holds b"\r\r" but sseclient splits it into b"x\r", b"\r\n": the event goes on growing.
    tricky = [b"data: " + b"x" * 30 + b"\r\r\n" for _ in range(5)]
    with pytest.raises(StreamError) as caught:
        frame_capped(tricky, 100)
    assert caught.value.kind == "frame_too_large"
    real_ends = [b"data: a\r\r", b"data: b\n\n", b"data: c\r\n\r\n"] * 20
    assert frame_capped(real_ends, 20) == real_ends


def test_frame_just_under_the_cap_passes(llm: Llm, server: ScriptedServer) -> None:
    text = varied(SSE_FRAME_MAX_BYTES - 200)
    server.enqueue(Reply(body=[content(text), FINISH, DONE]))
    assert llm.run(server.base_url, timeout_s=20).done.content == text


def test_100_mb_without_a_newline_stops_at_the_frame_cap_with_flat_rss(server: ScriptedServer) -> None:
    sent = 0

    def endless() -> Iterator[bytes]:
        nonlocal sent
        yield b"data: "
        block = b"x" * (64 * 1024)
        for _ in range(100 * MIB // len(block)):
            sent += len(block)
            yield block

    process = Llm()
    try:
        rss = psutil.Process(process.process.pid)
        server.enqueue(text_reply("warm up"))
        assert process.run(server.base_url).done.content == "warm up"
        before = rss.memory_info().rss
        server.enqueue(Reply(body=endless()))
        failed = process.run(server.base_url, timeout_s=30).failed
        after = rss.memory_info().rss
    finally:
        process.close()
    assert failed.kind == "frame_too_large"
    assert sent < 20 * MIB  # aborted early: the server could not push the 100 MB
    assert after - before < 16 * MIB


def test_episode_bytes_cap(llm: Llm, server: ScriptedServer) -> None:
    text = varied(EPISODE_MAX_BYTES)
    blocks = [text[start : start + 64 * 1024] for start in range(0, len(text), 64 * 1024)]
    server.enqueue(Reply(body=[*(content(block) for block in blocks), FINISH, DONE]))
    assert len(llm.run(server.base_url, timeout_s=30).done.content) == EPISODE_MAX_BYTES
    server.enqueue(Reply(body=[*(content(block) for block in blocks), content("!"), FINISH, DONE]))
    result = llm.run(server.base_url, timeout_s=30)
    assert result.failed.kind == "episode_too_large"
    assert result.failed.content == "".join(m.text for m in result.of(ContentDelta))


def test_episode_bytes_count_tool_call_fragments(llm: Llm, server: ScriptedServer) -> None:
    piece = "a" * (256 * 1024)
    head = {"index": 0, "id": "c1", "function": {"name": "write_file", "arguments": '{"content": "'}}
    body = [calls_chunk([head])]
    body += [
        calls_chunk([{"index": 0, "function": {"arguments": piece}}]) for _ in range(EPISODE_MAX_BYTES // len(piece))
    ]
    server.enqueue(Reply(body=[*body, FINISH, DONE]))
    failed = llm.run(server.base_url, timeout_s=30).failed
    assert failed.kind == "episode_too_large"


def _calls(count: int) -> list[bytes]:
    return [
        calls_chunk([{"index": i, "id": f"c{i}", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}])
        for i in range(count)
    ]


def test_tool_call_cap(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(Reply(body=[*_calls(EPISODE_MAX_TOOL_CALLS), FINISH, DONE]))
    assert len(llm.run(server.base_url).done.tool_calls) == EPISODE_MAX_TOOL_CALLS
    server.enqueue(Reply(body=[*_calls(EPISODE_MAX_TOOL_CALLS + 1), FINISH, DONE]))
    failed = llm.run(server.base_url).failed
    assert isinstance(failed, StreamFailed) and failed.kind == "too_many_calls"
    assert str(EPISODE_MAX_TOOL_CALLS) in failed.message


def test_one_call_in_a_thousand_fragments_is_one_call(llm: Llm, server: ScriptedServer) -> None:
    text = json.dumps({"path": "p" * 999})
    head = {"index": 0, "id": "c1", "function": {"name": "read_file", "arguments": ""}}
    pieces = [calls_chunk([{"index": 0, "function": {"arguments": ch}}]) for ch in text]
    server.enqueue(Reply(body=[calls_chunk([head]), *pieces, FINISH, DONE]))
    (call,) = llm.run(server.base_url).done.tool_calls
    assert call.args == ReadFileArgs(path="p" * 999)
