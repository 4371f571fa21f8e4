"""The failure taxonomy: every way a stream can fail becomes one StreamError(kind, sentence)."""

from __future__ import annotations

import re
import socket
import ssl
from typing import Any, Literal

import msgspec
import requests
import urllib3.exceptions

Kind = Literal[
    "connection_refused",
    "dns",
    "tls",
    "connect_timeout",
    "idle_timeout",
    "bad_request",
    "auth",
    "not_found",
    "rate_limited",
    "server_error",
    "not_sse",
    "malformed_frame",
    "provider_error",
    "truncated",
    "frame_too_large",
    "episode_too_large",
    "too_many_calls",
    "cancelled",
    "internal",
]

RETRYABLE_KINDS: frozenset[Kind] = frozenset(
    {"connection_refused", "connect_timeout", "rate_limited", "server_error", "truncated"}
)
_EXCERPT_CHARS = 300


class StreamError(Exception):
    """A classified stream failure; ``message`` is one sentence that says what to do."""

    def __init__(self, kind: Kind, message: str, reason: str = "", retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.kind: Kind = kind
        self.message = message
        self.reason = reason or kind.replace("_", " ")
        """A few words for the retry notice ("rate limited (429)")."""
        self.retry_after_s = retry_after_s


class Cancelled(Exception):
    """The agent cancelled the stream (the serve loop already answered it)."""


def one_line(text: str, limit: int = _EXCERPT_CHARS) -> str:
    """Collapse whitespace and cap the length, so provider text fits one line."""
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def provider_message(body: bytes) -> str:
    """The provider's own error text from an error body (OpenAI shape and common variants)."""
    try:
        value: Any = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return one_line(body.decode("utf-8", "replace"))
    return error_text(value) or one_line(body.decode("utf-8", "replace"))


def error_text(value: Any) -> str:
    """The message inside ``{"error": {"message": ...}}``, ``{"error": "..."}``, ``{"detail": ...}``."""
    if isinstance(value, dict):
        for key in ("error", "message", "detail"):
            inner = value.get(key)
            if isinstance(inner, str) and inner:
                return one_line(inner)
            if isinstance(inner, dict | list) and (text := error_text(inner)):
                return text
    if isinstance(value, list) and value:
        return error_text(value[0])
    return ""


def _causes(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
        if isinstance(current, urllib3.exceptions.MaxRetryError) and current.reason is not None:
            seen.append(current)
            current = current.reason
    return seen


def classify_request_error(exc: BaseException, url: str, connect_timeout_s: float, idle_s: float) -> StreamError:
    """A requests/urllib3/socket exception raised while connecting or reading, as a StreamError."""
    chain = _causes(exc)
    host = url.split("//", 1)[-1].split("/", 1)[0]
    if any(isinstance(e, ssl.SSLError | requests.exceptions.SSLError) for e in chain):
        return StreamError(
            "tls",
            f"TLS handshake with {host} failed ({one_line(str(chain[-1]), 120)}): "
            "use https only for servers that speak TLS (local servers are usually http).",
        )
    if any(isinstance(e, socket.gaierror | urllib3.exceptions.NameResolutionError) for e in chain):
        return StreamError("dns", f"cannot resolve the host {host}: check base_url and your network.")
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return StreamError("connection_refused", f"nothing is listening at {host}: start the server or fix base_url.")
    if any(isinstance(e, requests.exceptions.ConnectTimeout | urllib3.exceptions.ConnectTimeoutError) for e in chain):
        return StreamError(
            "connect_timeout",
            f"connecting to {host} timed out after {connect_timeout_s:g} s: check base_url and your network.",
        )
    if any(
        isinstance(e, requests.exceptions.ReadTimeout | urllib3.exceptions.ReadTimeoutError | TimeoutError)
        for e in chain
    ):
        return StreamError(
            "idle_timeout",
            f"the provider sent nothing for {idle_s:g} s: try again, or raise idle_timeout_s in config.toml.",
        )
    return StreamError(
        "truncated",
        f"the connection to {host} closed before the answer finished ({one_line(str(exc), 120)}): try again.",
    )
