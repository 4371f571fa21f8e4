"""The failure taxonomy: every way a stream can fail becomes one StreamError(kind, sentence).

The kinds themselves are ``protocol.StreamFailureKind``; this module maps exceptions, HTTP statuses and
non-SSE bodies onto them, each with a sentence that says what to do, and says which are tried again, after how
long (``retry_delay``: the stream's retry policy).
"""

from __future__ import annotations

import codecs
import email.utils
import http.client
import re
import socket
import ssl
import sys
import time
from collections.abc import Collection
from typing import Any, Final, Literal

import msgspec

from dashfloat.jsonvalue import JsonValue
from dashfloat.llm._limits import BACKOFF_BASE_S, MAX_ATTEMPTS, RETRY_AFTER_MAX_S
from dashfloat.protocol import ProviderConfig, StreamFailureKind

Kind = StreamFailureKind

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


class ConnectTimedOut(TimeoutError):
    """Connecting timed out (the plain route's; urllib3 raises its ConnectTimeoutError): told apart from a read's
    timeout, which is the idle or first-byte deadline."""


class Cancelled(Exception):
    """The agent cancelled the stream (the serve loop already answered it)."""


def one_line(text: str, limit: int = _EXCERPT_CHARS) -> str:
    """Collapse whitespace and cap the length, so provider text fits one line."""
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# Failure-path patterns are strings, compiled by re on first use (and cached there): compiling them at import cost the
# LLM worker ~0.4 ms of CPU before its loop served, for failures most runs never meet.
_CHARSET: Final = r"""charset\s*=\s*["']?([\w.:-]+)"""
_BOMS: Final = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
"""Longest first: UTF-32 LE's mark begins with UTF-16 LE's."""


def as_utf8(body: bytes, content_type: str | None) -> bytes:
    """An error body re-encoded as UTF-8 (what the parsers read): from the charset its Content-Type declares, else
    the one its byte-order mark says; else as it came (read as UTF-8, a byte that is not replaced)."""
    match = re.search(_CHARSET, content_type or "", re.IGNORECASE)
    charset = match.group(1) if match else next((name for bom, name in _BOMS if body.startswith(bom)), None)
    if charset is None:
        return body
    try:
        codec = codecs.lookup(charset).name
    except LookupError:
        return body  # a charset Python does not know: read as UTF-8
    if codec == "utf-8":
        return body
    return body.decode(codec, "replace").encode()


def provider_message(body: bytes) -> str:
    """The provider's own error text from an error body (OpenAI shape and common variants)."""
    try:
        value: JsonValue = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return one_line(body.decode("utf-8", "replace"))
    return error_text(value) or one_line(body.decode("utf-8", "replace"))


def error_text(value: JsonValue) -> str:
    """The most informative text of an error body: ``{"error": {"message": ...}}``, ``{"detail": ...}``, and
    ``{"error": "SyntaxError", "message": "Expected ',' ..."}`` as both (the name alone says little)."""
    if isinstance(value, list):
        return error_text(value[0]) if value else ""
    if not isinstance(value, dict):
        return ""
    said: list[str] = []
    for key in ("error", "message", "detail", "msg"):
        inner = value.get(key)
        text = (
            one_line(inner) if isinstance(inner, str) else error_text(inner) if isinstance(inner, dict | list) else ""
        )
        if text and text not in said:
            said.append(text)
    if len(said) > 1 and " " not in said[0]:
        return f"{said[0]}: {said[1]}"  # a bare error name, then the sentence that explains it
    return max(said, key=lambda text: (" " in text, len(text)), default="")


def clause(text: str) -> str:
    """Provider text set inside our sentence: its own final period dropped (no "Unauthorized..")."""
    return text.rstrip().rstrip(".").rstrip()


def _http_stack(name: str) -> Any:
    """A requests or urllib3 exceptions module when this process imported it, else None: an exception of a module
    that was never imported was never raised (the plain route's process imports neither, ADR 0048)."""
    return sys.modules.get(name)


def _types(*names: tuple[Any, str]) -> tuple[type[BaseException], ...]:
    return tuple(getattr(module, attribute) for module, attribute in names if module is not None)


def _causes(exc: BaseException) -> list[BaseException]:
    urllib3_exceptions = _http_stack("urllib3.exceptions")
    max_retry = _types((urllib3_exceptions, "MaxRetryError"))
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
        if max_retry and isinstance(current, max_retry) and getattr(current, "reason", None) is not None:
            seen.append(current)
            reason: BaseException | None = getattr(current, "reason", None)
            current = reason
    return seen


def _not_http(exc: BaseException) -> bool:
    """Whether http.client refused the answer's status line or headers (another protocol on the port, a line past its
    bound, more headers than it takes); a connection closed before any answer (``RemoteDisconnected``, also a
    ``BadStatusLine``) is not one."""
    if isinstance(exc, http.client.RemoteDisconnected):
        return False
    if isinstance(exc, http.client.BadStatusLine | http.client.LineTooLong):
        return True
    return type(exc) is http.client.HTTPException and str(exc).startswith("got more than")


def classify_request_error(
    exc: BaseException, url: str, connect_timeout_s: float, idle_s: float, idle_from: str = "", answered: bool = True
) -> StreamError:
    """An exception raised while connecting or reading (either transport's: requests/urllib3, http.client, socket),
    as a StreamError in plain words.

    ``answered``: the response had begun (status and headers) when it was raised; ``idle_from`` names the
    setting the idle timeout came from. The exception text itself goes to the log, never into the message.
    """
    chain = _causes(exc)
    host = url.split("//", 1)[-1].split("/", 1)[0]
    req = _http_stack("requests.exceptions")
    u3 = _http_stack("urllib3.exceptions")
    tls: tuple[type[BaseException], ...] = (ssl.SSLError, *_types((req, "SSLError")))
    dns: tuple[type[BaseException], ...] = (socket.gaierror, *_types((u3, "NameResolutionError")))
    connect_timeout: tuple[type[BaseException], ...] = (
        ConnectTimedOut,
        *_types((req, "ConnectTimeout"), (u3, "ConnectTimeoutError")),
    )
    read_timeout: tuple[type[BaseException], ...] = (
        TimeoutError,
        *_types((req, "ReadTimeout"), (u3, "ReadTimeoutError")),
    )
    if any(isinstance(e, tls) for e in chain):
        return StreamError(
            "tls",
            f"the TLS handshake with {host} failed: use https only for servers that speak TLS "
            "(local servers are usually http), and check the server's certificate.",
        )
    if any(isinstance(e, dns) for e in chain):
        return StreamError("dns", f"cannot resolve the host {host}: check base_url and your network.")
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return StreamError("connection_refused", f"nothing is listening at {host}: start the server or fix base_url.")
    if any(isinstance(e, connect_timeout) for e in chain):
        return StreamError(
            "connect_timeout",
            f"connecting to {host} timed out after {connect_timeout_s:g} s: check base_url and your network.",
        )
    if any(isinstance(e, read_timeout) for e in chain):
        setting = idle_from or "settings.idle_timeout_s in config.toml (or DASHFLOAT_IDLE_TIMEOUT_S)"
        return StreamError(
            "idle_timeout",
            f"the provider sent nothing for {idle_s:g} s: try again, or raise {setting}.",
        )
    if not answered and any(_not_http(e) for e in chain):
        return StreamError(
            "not_sse",
            f"the server at {host} did not answer in HTTP (or sent headers past what DashFloat reads): "
            "check base_url (the port may be another program's).",
        )
    if not answered:
        return StreamError(
            "truncated",
            f"the server at {host} closed the connection before answering: try again; "
            "if it repeats, the server's log says why.",
            "the server closed the connection before answering",
        )
    return StreamError(
        "truncated",
        f"the connection to {host} closed before the answer finished: try again.",
        "the connection closed mid-answer",
    )


CONTEXT_EXCEEDED_PATTERNS: Final = "|".join(
    [
        r"context_length_exceeded",  # OpenAI, Groq, DeepSeek: error.code
        r"maximum context length",  # OpenAI, vLLM, DeepSeek, Together: "This model's maximum context length is"
        r"exceeds? the available context size",  # llama.cpp server
        r"exceed_context_size_error",  # llama.cpp server: error.type
        r"exceeded max context length",  # Ollama (truncate off)
        r"longer than the model's context length",  # vLLM 0.8+
        r"context window exceeded|contextwindowexceedederror",  # LiteLLM
        r"prompt is too long",  # Anthropic-compatible endpoints
        r"too large for model with \d+ maximum context length",  # Mistral
        r"input token count .* exceeds the maximum",  # Gemini
        r"`inputs` tokens \+ `max_new_tokens` must be",  # TGI
        r"reduce the length of the (messages|input)",  # OpenAI-style advice on its own
    ]
)
"""How servers say a prompt is larger than the model's window (docs/providers.md "Context exceeded"), case aside."""


def says_context_exceeded(text: str | bytes) -> bool:
    """Whether an error body or message says the prompt did not fit the model's context window."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return re.search(CONTEXT_EXCEEDED_PATTERNS, text, re.IGNORECASE) is not None


def context_exceeded(said: str) -> StreamError:
    """The failure for a prompt larger than the window; the agent compacts and retries once."""
    says = f": {said}" if said else ""
    return StreamError(
        "context_exceeded",
        f"the conversation is larger than the model's context window{says}. /compact shrinks it; /clear starts "
        "afresh; set context_window in config.toml if the server's window is smaller than DashFloat thinks.",
    )


def first_byte_timeout(first_byte_s: float) -> StreamError:
    """Nothing but keep-alives for the first-byte deadline: the server never started answering."""
    return StreamError(
        "first_byte_timeout",
        f"the model did not start answering within {first_byte_s:g} s (a local server may still be reading a "
        "long prompt): try again, or raise first_byte_timeout_s in config.toml.",
    )


class OptionsRejected(Exception):
    """A 400 that names a field some providers refuse (``stream_options``, ``max_tokens``, ``reasoning_effort``, the
    echoed reasoning): retry without it."""

    def __init__(self, field: Literal["stream_options", "max_tokens", "reasoning_effort", "reasoning"]) -> None:
        super().__init__(field)
        self.field: Literal["stream_options", "max_tokens", "reasoning_effort", "reasoning"] = field


DROPPED_NOTICE: Final[dict[str, str]] = {
    "stream_options": "the provider rejected stream_options; retrying without it (no usage figures)",
    "max_tokens": "the provider rejected max_tokens; retrying without it (only the repetition guard bounds answers)",
    "reasoning_effort": "the provider rejected reasoning_effort; retrying without it (the model's default effort)",
    "reasoning": "the provider rejected the reasoning sent back with earlier answers; retrying without it "
    '(set reasoning_echo = "never" for this provider to skip it)',
}
"""What the user is told when a provider refused a field (OptionsRejected): the request goes again without it (not
counted against MAX_ATTEMPTS; the field stays dropped for that provider)."""


def retry_delay(error: StreamError, attempt: int, emitted: bool) -> float | None:
    """Seconds to wait before trying again after ``error`` ended attempt number ``attempt`` (from 1): the server's
    Retry-After, else BACKOFF_BASE_S doubled per retry. None: reported instead, as the kind is not retryable, the
    answer had begun (what was shown cannot be taken back), MAX_ATTEMPTS were made, or the server asks for a wait
    over RETRY_AFTER_MAX_S."""
    waited = error.retry_after_s
    if (
        error.kind not in RETRYABLE_KINDS
        or emitted
        or attempt >= MAX_ATTEMPTS
        or (waited is not None and waited > RETRY_AFTER_MAX_S)
    ):
        return None
    return waited if waited is not None else BACKOFF_BASE_S * 2 ** (attempt - 1)


def retry_notice(error: StreamError, delay_s: float, next_attempt: int) -> str:
    """The status line shown while the stream waits ``delay_s`` before attempt ``next_attempt``."""
    return f"{error.reason}; retrying in {delay_s:.1f} s (attempt {next_attempt} of {MAX_ATTEMPTS})"


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header (seconds or an HTTP date) as seconds from ``now``; None when absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def status_error(
    status: int,
    body: bytes,
    retry_after: str | None,
    provider: ProviderConfig,
    url: str,
    key_is_set: bool,
    sent: Collection[str],
) -> StreamError | OptionsRejected:
    """A non-200 answer (its status, the first bytes of its body, its Retry-After) as a failure.

    ``sent`` names the optional fields the request carried: a 400 naming one of them is retried without it.
    """
    said = clause(provider_message(body)) if body.strip() else ""
    says = f": {said}" if said else ""
    if status == 400 and "stream_options" in sent and (b"stream_options" in body or b"include_usage" in body):
        return OptionsRejected("stream_options")
    if status == 400 and "max_tokens" in sent and b"max_tokens" in body:
        return OptionsRejected("max_tokens")
    if status == 400 and "reasoning_effort" in sent and b"reasoning_effort" in body:
        return OptionsRejected("reasoning_effort")
    if status == 400 and "reasoning" in sent and b"reasoning" in body:
        return OptionsRejected("reasoning")
    if status in (400, 413, 422) and (status == 413 or says_context_exceeded(body)):
        return context_exceeded(said)
    if status in (401, 403):
        env = provider.api_key_env
        if env and key_is_set:
            hint = f"check that {env} holds a valid key for {provider.base_url}"
        elif env:
            hint = f"{env} is not set: export it with your key"
        else:
            hint = f"name the key's variable in api_key_env for provider '{provider.name}' in config.toml"
        return StreamError("auth", f"the provider refused the request ({status}): {hint}{says}.")
    if status == 404:
        return StreamError(
            "not_found",
            f"no model '{provider.model}' at {url} (404): check the model name and that base_url ends in /v1{says}.",
        )
    if status == 429:
        wait_s = retry_after_s(retry_after)
        when = f"try again in {wait_s:.0f} s" if wait_s is not None else "wait a minute and try again"
        return StreamError(
            "rate_limited",
            f"the provider is rate limiting us (429): {when}{says}.",
            "rate limited (429)",
            wait_s,
        )
    if status >= 500:
        return StreamError(
            "server_error",
            f"the provider had a server error ({status}): try again later{says}.",
            f"server error ({status})",
            retry_after_s(retry_after),
        )
    if 400 <= status < 500:
        return StreamError("bad_request", f"the provider rejected the request ({status}){says or ': no details'}.")
    return StreamError("not_sse", f"{url} answered with HTTP {status}, not an event stream: check base_url{says}.")


def not_sse_error(body: bytes, content_type: str, url: str) -> StreamError:
    """A 200 whose body (its first bytes) is not an event stream: say what it looks like instead."""
    head = body.lstrip()[:1]
    if head == b"<":
        what = "an HTML page"
        tail = ": check base_url (OpenAI-compatible URLs usually end in /v1)"
    elif head in (b"{", b"["):
        said = clause(provider_message(body))
        what = "JSON"
        tail = f": {said}" if said else ": check base_url and the model"
    else:
        what = f"a {content_type or 'typeless'} body"
        tail = ": check base_url"
    return StreamError("not_sse", f"{url} answered with {what}, not an event stream{tail}.")
