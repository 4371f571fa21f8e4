"""What the LLM process learns about each provider (``ProviderMemory``), and the checks that warn when a server does
not pass the tools to its model: llama.cpp's ``/props`` says the chat template takes none, or the server counted a
prompt far smaller than the request."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

import msgspec

from dashfloat.jsonvalue import JsonValue
from dashfloat.llm._limits import DROPPED_TOOLS_RATIO, ERROR_BODY_MAX_BYTES
from dashfloat.llm._request import Optional, estimated_tokens
from dashfloat.llm._transport import OnSocket, Transport, finish_body, read_bounded
from dashfloat.protocol import Usage

NO_TOOLS_ADVICE: Final = (
    "the model cannot call tools and may invent what a tool would have shown: "
    "run the server with a chat template that supports tools (llama.cpp: --jinja, or --chat-template-file)"
)


class ProviderMemory(msgspec.Struct):
    """What the LLM process learned about each base URL, kept for its lifetime."""

    dropped: dict[str, set[Optional]] = msgspec.field(default_factory=dict)
    """Request fields a provider refused with a 400."""
    native_calls: set[str] = msgspec.field(default_factory=set)
    """Providers that sent a native tool call (``auto`` then stops reading calls written as text)."""
    probed: set[str] = msgspec.field(default_factory=set)
    """Servers asked once whether their chat template takes tools (llama.cpp ``/props``)."""
    props: dict[str, JsonValue] = msgspec.field(default_factory=dict)
    """The ``/props`` body the window discovery got (None: none), so that the stream does not ask again."""
    discovering: set[str] = msgspec.field(default_factory=set)
    """Servers whose window discovery, which asks ``/props``, is under way: a stream meanwhile (the first request
    goes before the window is known) does not ask it as well, and looks at the discovery's answer when it is done."""
    warned_tools: set[str] = msgspec.field(default_factory=set)
    """Servers already warned about dropping the tools (the warning is given once)."""
    think_inside: set[str] = msgspec.field(default_factory=set)
    """Servers whose last answer closed a ``<think>`` block its template opened: the next answer's text is reasoning
    until the close tag (``ThinkSplit.inside_first``)."""
    llamacpp: set[str] = msgspec.field(default_factory=set)
    """Servers known to be llama.cpp's (``/props``, or its ``Server`` header): asked for ``prompt_progress``."""
    reported_windows: dict[tuple[str, str], int] = msgspec.field(default_factory=dict)
    """Windows the servers reported by (base URL, model), which ``max_tokens`` follows (the serve loop fills it)."""
    maybe_busy: set[str] = msgspec.field(default_factory=set)
    """Local servers whose last request was cancelled before its first event: one that reads a prompt to its end
    (llama.cpp) may still be reading it when the next request comes (ADR 0092)."""


LLAMACPP_SERVER_HEADER: Final = "llama.cpp"
"""The ``Server`` header llama.cpp's server sends with every answer."""


def is_llamacpp(props: JsonValue, server_header: str | None = None) -> bool:
    """Whether a server is llama.cpp's: its ``Server`` header, or a ``/props`` body with llama.cpp's fields."""
    if server_header is not None and any(p.strip().lower() == LLAMACPP_SERVER_HEADER for p in server_header.split(",")):
        return True  # (one header of several joined: a proxy in front adds its own)
    return isinstance(props, dict) and "default_generation_settings" in props and "build_info" in props


def props_warning(base: str, props: JsonValue) -> str | None:
    """The warning when a llama.cpp ``/props`` body says the chat template takes no tools; None otherwise."""
    caps = props.get("chat_template_caps") if isinstance(props, dict) else None
    if isinstance(caps, dict) and (caps.get("supports_tools") is False or caps.get("supports_tool_calls") is False):
        return f"the server at {base} says its chat template has no tool support: {NO_TOOLS_ADVICE}."
    return None


def prompt_tokens_warning(base: str, usage: Usage | None, body: bytes) -> str | None:
    """The warning when the server counted far fewer prompt tokens than ``body`` holds (below DROPPED_TOOLS_RATIO of
    the estimate): it dropped the tools (and maybe more). None otherwise, or when it counted none."""
    estimate = estimated_tokens(body)
    if usage is None or not usage.prompt_tokens or usage.prompt_tokens >= DROPPED_TOOLS_RATIO * estimate:
        return None
    return (
        f"the server at {base} counted {usage.prompt_tokens} prompt tokens for a request of about {estimate}: "
        f"it does not seem to pass the tools to the model; {NO_TOOLS_ADVICE}."
    )


def fetch_props(
    transport: Transport,
    base: str,
    headers: Mapping[str, str],
    timeout_s: float,
    on_socket: OnSocket,
    log: Callable[[str], None],
) -> JsonValue:
    """A llama.cpp server's ``/props`` answer, asked once per server; None when it has none (other servers: a quiet
    404, whose short body is read so the connection stays) or the question failed (logged)."""
    props_url = base.rstrip("/").removesuffix("/v1") + "/props"
    failures: tuple[type[BaseException], ...] = (*transport.errors, msgspec.DecodeError, OSError)
    try:
        probe_headers = {k: v for k, v in headers.items() if k != "Content-Type"}
        probe_headers["Accept"] = "application/json"
        response = transport.request("GET", props_url, probe_headers, None, timeout_s, timeout_s, on_socket)
        try:
            if response.status != 200:
                finish_body(response.reads(), ERROR_BODY_MAX_BYTES, timeout_s, transport.errors)
                return None
            props: JsonValue = msgspec.json.decode(read_bounded(response, ERROR_BODY_MAX_BYTES, transport.errors))
            return props
        finally:
            response.close()
    except failures as exc:
        log(f"no /props at {props_url}: {type(exc).__name__}")
        return None
