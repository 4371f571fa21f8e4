"""Stream throughput: local scripted server -> a real LLM `serve` process -> the agent's pipe end."""

from __future__ import annotations

import json
import multiprocessing
import time
from typing import Any

import psutil
import requests

from bench.common import TOKEN_CHARS, Figure, distinct_token
from dashfloat.channel import Channel
from dashfloat.config import DEFAULT_IDLE_TIMEOUT_S
from dashfloat.llm import serve
from dashfloat.protocol import (
    ChatMessage,
    ContentDelta,
    LlmToAgent,
    ProviderConfig,
    Shutdown,
    StartStream,
    StreamDone,
    StreamFailed,
)
from dashfloat.testing.sse_server import Reply, ScriptedServer, sse_event

EVENTS_PER_WRITE = 64
TARGET_TOKENS_PER_S = 50_000


def _body(tokens: int) -> list[bytes | Any]:
    """The same bytes every run: one OpenAI chunk per token (never repeating: the repetition guard would stop one
    repeated word), written in groups like a busy server."""
    events = [
        sse_event(
            {"id": "b", "choices": [{"index": 0, "delta": {"content": distinct_token(i)}, "finish_reason": None}]}
        )
        for i in range(tokens)
    ]
    writes: list[bytes | Any] = []
    for start in range(0, tokens, EVENTS_PER_WRITE):
        writes.append(b"".join(events[start : start + EVENTS_PER_WRITE]))
    writes.append(sse_event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    writes.append(sse_event("[DONE]"))
    return writes


def _raw_read_s(base_url: str) -> float:
    """Baseline: requests alone reading the same stream in this process, no parsing."""
    started = time.perf_counter()
    with requests.post(f"{base_url}/chat/completions", data=json.dumps({"stream": True}), stream=True) as response:
        for _ in response.iter_content(64 * 1024):
            pass
    return time.perf_counter() - started


def _through_serve_s(channel: Channel[Any], base_url: str, request_id: int, tokens: int) -> float:
    provider = ProviderConfig(name="bench", base_url=base_url, model="bench")
    started = time.perf_counter()
    channel.send(
        StartStream(
            request_id, provider, [ChatMessage(role="user", content="go")], idle_timeout_s=DEFAULT_IDLE_TIMEOUT_S
        )
    )
    received = 0
    while True:
        message = channel.recv()
        match message:
            case ContentDelta():
                received += len(message.text)
            case StreamDone():
                break
            case StreamFailed():
                raise RuntimeError(f"stream failed: {message.kind}: {message.message}")
            case _:
                pass
    elapsed = time.perf_counter() - started
    if received != tokens * TOKEN_CHARS:
        raise RuntimeError(f"received {received} characters, expected {tokens * TOKEN_CHARS}")
    return elapsed


def run(quick: bool) -> list[Figure]:
    """Tokens/s and CPU seconds per 100k tokens through the LLM process."""
    tokens = 20_000 if quick else 100_000
    samples = 3 if quick else 5
    body = _body(tokens)
    ctx = multiprocessing.get_context("spawn")
    conn, child = ctx.Pipe()
    process = ctx.Process(target=serve, args=(child,), daemon=True)
    process.start()
    child.close()
    channel: Channel[Any] = Channel(conn, LlmToAgent, "llm->agent")
    rates: list[float] = []
    baseline: list[float] = []
    cpu_per_100k: list[float] = []
    try:
        with ScriptedServer() as server:
            server.handler = lambda _body: Reply(body=body)
            _through_serve_s(channel, server.base_url, 0, tokens)  # warm-up: imports, first connection
            measured = psutil.Process(process.pid)
            for sample in range(samples):
                baseline.append(tokens / _raw_read_s(server.base_url))
                cpu_before = sum(measured.cpu_times()[:2])
                rates.append(tokens / _through_serve_s(channel, server.base_url, sample + 1, tokens))
                cpu_after = sum(measured.cpu_times()[:2])
                cpu_per_100k.append((cpu_after - cpu_before) * 100_000 / tokens)
    finally:
        channel.send(Shutdown())
        process.join(5)
        if process.is_alive():
            process.kill()
    rate = Figure(
        name="stream tokens/s (server → LLM process → agent pipe)",
        unit="tokens/s",
        samples=rates,
        baseline_name="requests raw read, same stream, one process",
        baseline_samples=baseline,
        target=f"≥ {TARGET_TOKENS_PER_S:,} tokens/s",
        note=f"{tokens:,} one-token SSE events per sample, counted as ContentDelta text on the agent end",
    )
    rate.met = rate.median() >= TARGET_TOKENS_PER_S
    cpu = Figure(
        name="LLM process CPU per 100k tokens",
        unit="CPU s",
        samples=cpu_per_100k,
        note="user + system time of the serve process (HTTP read, SSE parse, JSON decode, coalesce, send)",
    )
    return [rate, cpu]


if __name__ == "__main__":
    for figure in run(quick=True):
        print(figure.name, f"{figure.median():,.3f}", figure.unit, "baseline", figure.baseline_samples)
