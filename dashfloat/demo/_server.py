"""The demo provider: the scripted SSE server, answering with the demo model, in its own process."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Final

import msgspec

from dashfloat._startup.fork import start_sharing
from dashfloat.catalogue import call_name
from dashfloat.demo._model import Reply as DemoReply
from dashfloat.demo._model import respond
from dashfloat.procutil import become_child, die_with_parent, stop_process
from dashfloat.protocol import ChatMessage, ProviderConfig, ToolArgs
from dashfloat.testing.sse_server import BodyItem, Pause, Reply, ScriptedServer, sse_event

DEMO_DELAY_ENV: Final = "DASHFLOAT_DEMO_DELAY_MS"
DEMO_DEFAULT_DELAY_MS: Final = 12.0
DEMO_MODEL: Final = "dashfloat-demo"
DEMO_CONTEXT_WINDOW: Final = 32_768
DEMO_STOP_WAIT_S: Final = 0.5


def _chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return sse_event(
        {"id": "chatcmpl-demo", "object": "chat.completion.chunk", "model": DEMO_MODEL, "choices": [choice]}
    )


def stream(reply: DemoReply, delay_s: float, prompt_tokens: int) -> Iterator[BodyItem]:
    """The reply as a real OpenAI stream: prose word by word at a human pace, then the tool calls."""
    yield _chunk({"role": "assistant", "content": ""})
    words = re.findall(r"\S+\s*|\s+", reply.text)
    for word in words:
        yield _chunk({"content": word})
        if delay_s > 0:
            yield Pause(delay_s)
    for index, args in enumerate(reply.calls):
        call = {"index": index, "id": f"call_demo_{index}", "type": "function"}
        function = {"name": call_name(args), "arguments": _arguments(args)}
        yield _chunk({"tool_calls": [{**call, "function": function}]})
    yield _chunk({}, "tool_calls" if reply.calls else "stop")
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": len(words),
        "total_tokens": prompt_tokens + len(words),
    }
    yield sse_event({"id": "chatcmpl-demo", "choices": [], "usage": usage})
    yield sse_event("[DONE]")


def _arguments(args: ToolArgs) -> str:
    """The arguments as a model writes them: the fields it set, without the union's tag."""
    written = msgspec.to_builtins(args)
    del written["tool"]
    return json.dumps(written)


def _messages(body: dict[str, Any]) -> list[ChatMessage]:
    """The request's messages (DashFloat sends ChatMessages); none when the body is not such a request."""
    try:
        return msgspec.convert(body.get("messages", []), list[ChatMessage])
    except msgspec.ValidationError:
        return []


def handler(delay_s: float) -> Callable[[dict[str, Any]], Reply]:
    """The ScriptedServer handler that plays the demo model."""

    def answer(body: dict[str, Any]) -> Reply:
        # The usual ~4 characters a token, over the whole request: a real server's prompt holds the tools too.
        prompt_tokens = len(json.dumps(body)) // 4
        return Reply(body=stream(respond(_messages(body)), delay_s, prompt_tokens))

    return answer


def _serve(conn: Connection, delay_s: float, close_fds: list[int]) -> None:
    become_child("", close_fds)
    die_with_parent()
    with ScriptedServer() as server:
        server.handler = handler(delay_s)
        conn.send_bytes(str(server.port).encode())
        with contextlib.suppress(EOFError, OSError):
            conn.recv_bytes()  # parked until the launcher closes its end (or dies)


@dataclass
class Demo:
    """A running demo provider and how to stop it."""

    provider: ProviderConfig
    stop: Callable[[], None]
    notice: str


def start_demo(env: Mapping[str, str], close_fds: Sequence[int] = ()) -> Demo:
    """Start the offline demo provider on an ephemeral loopback port; it closes ``close_fds`` (our other pipes)."""
    try:
        delay_s = float(env.get(DEMO_DELAY_ENV, DEMO_DEFAULT_DELAY_MS)) / 1000
    except ValueError:
        delay_s = DEMO_DEFAULT_DELAY_MS / 1000
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe()
    process = context.Process(
        target=_serve, args=(theirs, delay_s, [ours.fileno(), *close_fds]), name="dashfloat-demo", daemon=True
    )
    start_sharing(process)  # frozen for its collector, our freed heap trimmed: it shares what it can (issue 19)
    theirs.close()
    port = int(ours.recv_bytes())

    def stop() -> None:
        stop_process(process, DEMO_STOP_WAIT_S, ask=lambda _: ours.close())  # EOF on its pipe ends it

    provider = ProviderConfig(
        name="demo",
        base_url=f"http://127.0.0.1:{port}/v1",
        model=DEMO_MODEL,
        context_window=DEMO_CONTEXT_WINDOW,
        context_window_from="the demo model's own, not configured",
    )
    notice = (
        "No provider is configured, so this is the offline demo model (no network, no key). "
        "Try: hello · explain this project · fix · run the tests · tour. To use a real model: "
        "export OPENAI_API_KEY=sk-... and run "
        "dashfloat --base-url https://api.openai.com/v1 --model gpt-4o-mini "
        "(or --base-url http://localhost:11434/v1 for Ollama; see docs/providers.md)."
    )
    return Demo(provider=provider, stop=stop, notice=notice)
