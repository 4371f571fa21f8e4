"""The request body, built in one place: the wire form of the messages, the answer bound, the options."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final, Literal

import msgspec

from dashfloat.catalogue import EXEC_TIMEOUT_DEFAULT_S, tools_catalogue
from dashfloat.config import REQUEST_OWN_FIELDS
from dashfloat.llm._limits import (
    ANSWER_MAX_TOKENS_CAP,
    ANSWER_MAX_TOKENS_DEFAULT,
    ANSWER_MAX_TOKENS_DISCOVERED_CAP,
    ANSWER_WINDOW_FRACTION,
)
from dashfloat.protocol import ChatMessage, ProviderConfig

Optional = Literal["stream_options", "max_tokens", "reasoning_effort", "reasoning"]
"""A request field some providers reject with a 400: dropped for that base URL once it was refused (``reasoning``:
the reasoning echoed on assistant messages)."""

_KEPT_ONLY: Final = ("reasoning", "reasoning_field", "reasoning_details")
"""ChatMessage fields that are DashFloat's record, not the wire's: the echo puts the reasoning in its own field."""


def echoes(messages: list[ChatMessage]) -> bool:
    """Whether a request of ``messages`` sends reasoning back (the agent left it only where it is to be echoed)."""
    return any(m.reasoning and m.reasoning_field in ("reasoning_content", "reasoning") for m in messages)


def wire_messages(messages: list[ChatMessage], echo: bool = True) -> list[dict[str, Any]]:
    """The messages as sent: an assistant message that carries only tool calls gets ``"content": ""``.

    Without the key llama-cpp-python's function-calling template fails after its 200 headers (an empty
    body), and ``null`` makes it answer 500; ``""`` is accepted by every server we have recorded
    (docs/decisions/0013-request-shape.md). The stored conversation keeps its own form.

    Reasoning the agent left on a message goes back in the field it came in (``reasoning_content`` for DeepSeek,
    ``reasoning`` for vLLM and OpenRouter, with OpenRouter's ``reasoning_details``), unless ``echo`` is off (the
    server refused it); reasoning split from ``<think>`` text never goes back (ADR 0077).
    """
    wire: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = msgspec.to_builtins(message)
        for name in _KEPT_ONLY:
            item.pop(name, None)
        if message.role == "assistant" and message.content is None:
            item["content"] = ""
        field = message.reasoning_field
        if echo and message.reasoning and field in ("reasoning_content", "reasoning"):
            item[field] = message.reasoning
            if message.reasoning_details:
                item["reasoning_details"] = msgspec.Raw(message.reasoning_details.encode())
        wire.append(item)
    return wire


def answer_max_tokens(provider: ProviderConfig, reported_window: int | None = None) -> int | None:
    """The ``max_tokens`` to send: the provider's own setting (0: never send), else derived from its configured
    window, else from the window the server reported (``reported_window``, ADR 0092), else the default."""
    if provider.max_tokens is not None:
        return provider.max_tokens or None
    if provider.context_window:
        return max(1, min(ANSWER_MAX_TOKENS_CAP, int(provider.context_window * ANSWER_WINDOW_FRACTION)))
    if reported_window:
        return max(1, min(ANSWER_MAX_TOKENS_DISCOVERED_CAP, int(reported_window * ANSWER_WINDOW_FRACTION)))
    return ANSWER_MAX_TOKENS_DEFAULT


_encoded_tools: tuple[float, msgspec.Raw] | None = None
"""The catalogue as JSON, for the execute_command default it names: built once, not copied and encoded for every
request (~0.1 ms each)."""


def _tools(exec_timeout_s: float, extra: str = "") -> msgspec.Raw:
    """The catalogue, with ``extra`` (a JSON array: the MCP tools, ADR 0086) after the built-in tools."""
    global _encoded_tools
    if _encoded_tools is None or _encoded_tools[0] != exec_timeout_s:
        _encoded_tools = (exec_timeout_s, msgspec.Raw(msgspec.json.encode(tools_catalogue(exec_timeout_s))))
    if extra.strip("[] \n"):
        return msgspec.Raw(bytes(_encoded_tools[1])[:-1] + b"," + extra.encode().lstrip()[1:])
    return _encoded_tools[1]


def request_body(
    provider: ProviderConfig,
    messages: list[ChatMessage],
    dropped: Collection[Optional],
    exec_timeout_s: float | None = None,
    reported_window: int | None = None,
    progress: bool = False,
    extra_tools: str = "",
) -> bytes:
    """The JSON body of one chat/completions request; ``dropped`` names fields this provider refused.

    ``exec_timeout_s`` is execute_command's default in force, which the catalogue's text names; ``reported_window``
    the window the server said (``answer_max_tokens``); ``progress``: ask llama.cpp for ``prompt_progress`` chunks.
    The provider's sampling settings go as configured, its ``extra_body`` merged in last (ADR 0092).
    """
    payload: dict[str, Any] = {
        "model": provider.model,
        "messages": wire_messages(messages, echo="reasoning" not in dropped),
        "stream": True,
        "tools": _tools(exec_timeout_s or EXEC_TIMEOUT_DEFAULT_S, extra_tools),
    }
    max_tokens = answer_max_tokens(provider, reported_window)
    if max_tokens is not None and "max_tokens" not in dropped:
        payload["max_tokens"] = max_tokens
    if "stream_options" not in dropped:
        payload["stream_options"] = {"include_usage": True}
    if provider.reasoning_effort is not None and "reasoning_effort" not in dropped:
        payload["reasoning_effort"] = provider.reasoning_effort  # Ollama: only "none" turns thinking off
    if provider.temperature is not None:
        payload["temperature"] = provider.temperature
    if provider.top_p is not None:
        payload["top_p"] = provider.top_p
    if progress:
        payload["return_progress"] = True  # llama.cpp: prompt_progress chunks while it reads the prompt
    # The config refuses the fields the request writes itself; a ProviderConfig built elsewhere cannot override them.
    payload.update((k, v) for k, v in provider.extra_body.items() if k not in REQUEST_OWN_FIELDS)
    return msgspec.json.encode(payload)


def estimated_tokens(body: bytes) -> int:
    """A rough token count of a request (4 bytes a token), to notice a server that dropped part of it."""
    return len(body) // 4
