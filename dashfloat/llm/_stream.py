"""One stream: the HTTP request, its retries and the SSE parse, run in a worker thread.

The worker never touches the pipe: it appends items to ``outbox`` and wakes the serve loop, which
coalesces and sends them. That keeps the pipe single-writer and the terminal message unique.
"""

from __future__ import annotations

import collections
import contextlib
import email.utils
import itertools
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal

import msgspec
import requests
import sseclient
import urllib3.exceptions

from dashfloat.catalogue import TOOLS
from dashfloat.llm._errors import (
    RETRYABLE_KINDS,
    Cancelled,
    StreamError,
    classify_request_error,
    error_text,
    one_line,
    provider_message,
)
from dashfloat.llm._framing import frame_capped, looks_like_sse
from dashfloat.llm._http import body_chunks, new_session, read_bounded, shutdown
from dashfloat.llm._limits import (
    BACKOFF_BASE_S,
    CONNECT_TIMEOUT_S,
    EPISODE_MAX_BYTES,
    EPISODE_MAX_TOOL_CALLS,
    ERROR_BODY_MAX_BYTES,
    MAX_ATTEMPTS,
    RETRY_AFTER_MAX_S,
    SSE_FRAME_MAX_BYTES,
)
from dashfloat.llm.toolcalls import ToolCalls
from dashfloat.protocol import StartStream, StreamDone, StreamFailed, Usage

DeltaKind = Literal["content", "reasoning", "status"]
Item = tuple[DeltaKind, str] | StreamDone | StreamFailed
_READ_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, OSError)


class _OptionsRejected(Exception):
    """A 400 that names stream_options: retry once without it."""


def _retry_after_s(value: str | None) -> float | None:
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
    return max(0.0, when.timestamp() - time.time())


class Stream:
    """The worker for one StartStream; ``abort()`` may be called from any thread."""

    def __init__(self, start: StartStream, wake: Callable[[Stream], None], no_options: set[str]) -> None:
        self.start = start
        self.request_id = start.request_id
        self.outbox: collections.deque[Item] = collections.deque()
        self.wake_pending = False
        self.sent_content: list[str] = []
        """Content the serve loop has already sent (the partial answer on cancel)."""
        self.cancelled = threading.Event()
        self._wake = wake
        self._no_options = no_options
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"llm-stream-{start.request_id}", daemon=True)
        self._reset()

    def begin(self) -> None:
        self._thread.start()

    def abort(self) -> None:
        """Stop now: the blocked read returns and the server sees the connection close."""
        self.cancelled.set()
        with self._lock:
            for sock in self._sockets:
                shutdown(sock)

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)

    # ------------------------------------------------------------ worker thread

    def _reset(self) -> None:
        self._content: list[str] = []
        self._episode_bytes = 0
        self._calls = ToolCalls()
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._emitted = False

    def _on_socket(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
        if self.cancelled.is_set():
            shutdown(sock)

    def _emit(self, item: Item) -> None:
        self.outbox.append(item)
        if not self.wake_pending:
            self.wake_pending = True
            self._wake(self)

    def _failed(self, kind: str, message: str) -> StreamFailed:
        return StreamFailed(
            self.request_id, kind, message, content="".join(self._content), tool_calls=self._calls.finish()
        )

    def _run(self) -> None:
        try:
            terminal: StreamDone | StreamFailed = self._attempts()
        except Cancelled:
            return
        except StreamError as exc:
            try:
                terminal = self._failed(exc.kind, exc.message)
            except Exception as inner:
                terminal = self._internal(inner)
        except Exception as exc:  # the process must answer every request, whatever broke
            terminal = self._internal(exc)
        if not self.cancelled.is_set():
            self._emit(terminal)

    def _internal(self, exc: BaseException) -> StreamFailed:
        detail = one_line(f"{type(exc).__name__}: {exc}", 200)
        message = f"the LLM stream hit an internal error ({detail}): please report it."
        try:
            return self._failed("internal", message)
        except Exception:  # even the partial calls cannot be assembled: answer without them
            return StreamFailed(self.request_id, "internal", message, content="".join(self._content))

    def _attempts(self) -> StreamDone:
        provider = self.start.provider
        url = provider.base_url.rstrip("/") + "/chat/completions"
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream", **provider.headers}
        key = os.environ.get(provider.api_key_env) if provider.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        attempt = 1
        while True:
            use_options = provider.base_url not in self._no_options
            self._reset()
            try:
                return self._attempt(url, headers, use_options)
            except _OptionsRejected:
                self._no_options.add(provider.base_url)
                self._emit(("status", "the provider rejected stream_options; retrying without it (no usage figures)"))
                continue
            except StreamError as exc:
                if self.cancelled.is_set():
                    raise Cancelled from exc
                waited = exc.retry_after_s
                if (
                    exc.kind not in RETRYABLE_KINDS
                    or self._emitted
                    or attempt >= MAX_ATTEMPTS
                    or (waited is not None and waited > RETRY_AFTER_MAX_S)
                ):
                    raise
                delay = waited if waited is not None else BACKOFF_BASE_S * 2 ** (attempt - 1)
                attempt += 1
                notice = f"{exc.reason}; retrying in {delay:.1f} s (attempt {attempt} of {MAX_ATTEMPTS})"
                self._emit(("status", notice))
                if self.cancelled.wait(delay):
                    raise Cancelled from exc

    def _attempt(self, url: str, headers: dict[str, str], use_options: bool) -> StreamDone:
        idle_s = self.start.idle_timeout_s
        connect_s = min(CONNECT_TIMEOUT_S, idle_s)
        session = new_session(self._on_socket)
        try:
            try:
                response = session.post(
                    url,
                    data=self._body(use_options),
                    headers=headers,
                    stream=True,
                    timeout=(connect_s, idle_s),
                )
            except requests.RequestException as exc:
                if self.cancelled.is_set():
                    raise Cancelled from exc
                raise classify_request_error(exc, url, connect_s, idle_s) from exc
            with response:
                if self.cancelled.is_set():
                    raise Cancelled
                if response.status_code != 200:
                    raise self._status_error(response, url, use_options)
                try:
                    return self._read_events(response, url)
                except _READ_ERRORS as exc:
                    if self.cancelled.is_set():
                        raise Cancelled from exc
                    raise classify_request_error(exc, url, connect_s, idle_s) from exc
        finally:
            session.close()

    def _body(self, use_options: bool) -> bytes:
        payload: dict[str, Any] = {
            "model": self.start.provider.model,
            "messages": msgspec.to_builtins(self.start.messages),
            "stream": True,
            "tools": TOOLS,
        }
        if use_options:
            payload["stream_options"] = {"include_usage": True}
        return msgspec.json.encode(payload)

    def _status_error(self, response: requests.Response, url: str, use_options: bool) -> Exception:
        status = response.status_code
        body = read_bounded(response, ERROR_BODY_MAX_BYTES)
        said = provider_message(body) if body.strip() else ""
        says = f": {said}" if said else ""
        provider = self.start.provider
        if status == 400 and use_options and (b"stream_options" in body or b"include_usage" in body):
            return _OptionsRejected()
        if status in (401, 403):
            env = provider.api_key_env
            if env and os.environ.get(env):
                hint = f"check that {env} holds a valid key for {provider.base_url}"
            elif env:
                hint = f"{env} is not set: export it with your key"
            else:
                hint = f"name the key's variable in api_key_env for provider '{provider.name}' in config.toml"
            return StreamError("auth", f"the provider refused the request ({status}): {hint}{says}.")
        if status == 404:
            return StreamError(
                "not_found",
                f"no model '{provider.model}' at {url} (404): check the model name and that base_url "
                f"ends in /v1{says}.",
            )
        if status == 429:
            wait_s = _retry_after_s(response.headers.get("Retry-After"))
            when = f"try again in {wait_s:.0f} s" if wait_s is not None else "wait a minute and try again"
            return StreamError(
                "rate_limited",
                f"the provider is rate limiting us (429): {when}{says}.",
                "rate limited (429)",
                wait_s,
            )
        if status >= 500:
            wait_s = _retry_after_s(response.headers.get("Retry-After"))
            return StreamError(
                "server_error",
                f"the provider had a server error ({status}): try again later{says}.",
                f"server error ({status})",
                wait_s,
            )
        if 400 <= status < 500:
            return StreamError("bad_request", f"the provider rejected the request ({status}){says or ': no details'}.")
        return StreamError("not_sse", f"{url} answered with HTTP {status}, not an event stream: check base_url{says}.")

    def _read_events(self, response: requests.Response, url: str) -> StreamDone:
        chunks = body_chunks(response)
        first = next(chunks, b"")
        content_type = response.headers.get("Content-Type", "")
        if "text/event-stream" not in content_type and not looks_like_sse(first):
            raise self._not_sse(first, chunks, content_type, url)
        source: Iterator[bytes] = frame_capped(itertools.chain([first], chunks), SSE_FRAME_MAX_BYTES)
        done = False
        try:
            for event in sseclient.SSEClient(source).events():
                if self.cancelled.is_set():
                    raise Cancelled
                if self._on_event(event.data):
                    done = True
                    break
        except UnicodeDecodeError as exc:
            raise StreamError(
                "malformed_frame",
                "the provider sent bytes that are not UTF-8: the endpoint is not OpenAI-compatible.",
            ) from exc
        if self.cancelled.is_set():
            raise Cancelled
        return self._finish(done)

    def _not_sse(self, first: bytes, chunks: Iterator[bytes], content_type: str, url: str) -> StreamError:
        body = first
        for chunk in chunks:
            body += chunk
            if len(body) >= ERROR_BODY_MAX_BYTES:
                break
        head = body.lstrip()[:1]
        if head == b"<":
            what = "an HTML page"
            tail = ": check base_url (OpenAI-compatible URLs usually end in /v1)"
        elif head in (b"{", b"["):
            said = provider_message(body)
            what = "JSON"
            tail = f": {said}" if said else ": check base_url and the model"
        else:
            what = f"a {content_type or 'typeless'} body"
            tail = ": check base_url"
        return StreamError("not_sse", f"{url} answered with {what}, not an event stream{tail}.")

    def _on_event(self, data: str) -> bool:
        """Handle one event; True at ``[DONE]``."""
        if data.strip() == "[DONE]":
            return True
        try:
            chunk = msgspec.json.decode(data)
        except msgspec.DecodeError:
            chunk = None
        if not isinstance(chunk, dict):
            raise StreamError(
                "malformed_frame",
                f"the provider sent an event that is not a JSON object ({one_line(data, 60)!r}): try again; "
                "if it repeats, the endpoint is not OpenAI-compatible.",
            )
        if chunk.get("error") is not None:
            said = error_text(chunk) or one_line(str(chunk["error"]))
            raise StreamError("provider_error", f"the provider reported an error mid-stream: {said}")
        self._take_usage(chunk)
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return False
        choice = choices[0]
        delta = choice.get("delta")
        if isinstance(delta, dict):
            self._take_delta(delta)
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            if finish == "error":
                said = error_text(choice) or "no details given"
                raise StreamError("provider_error", f"the provider stopped with an error: {said}")
            self._finish_reason = finish
        return False

    def _take_delta(self, delta: dict[str, Any]) -> None:
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._content.append(content)
            self._episode_bytes += len(content.encode())
            self._emitted = True
            self._emit(("content", content))
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self._episode_bytes += len(reasoning.encode())
            self._emitted = True
            self._emit(("reasoning", reasoning))
        tool_calls = delta.get("tool_calls")
        if tool_calls:
            self._calls.feed(tool_calls)
            self._emitted = self._emitted or self._calls.distinct_calls > 0
            if self._calls.distinct_calls > EPISODE_MAX_TOOL_CALLS:
                raise StreamError(
                    "too_many_calls",
                    f"the model asked for more than {EPISODE_MAX_TOOL_CALLS} tool calls in one answer; "
                    "the stream was stopped: ask for smaller steps.",
                )
        if self._episode_bytes + self._calls.fragment_bytes > EPISODE_MAX_BYTES:
            raise StreamError(
                "episode_too_large",
                f"the answer grew past {EPISODE_MAX_BYTES // (1024 * 1024)} MiB; the stream was stopped: "
                "ask for a shorter answer or smaller steps.",
            )

    def _take_usage(self, chunk: dict[str, Any]) -> None:
        raw = chunk.get("usage")
        groq = chunk.get("x_groq")
        if not isinstance(raw, dict) and isinstance(groq, dict):
            raw = groq.get("usage")  # Groq reports usage inside x_groq on the finish chunk
        if isinstance(raw, dict):
            # A usage object we cannot read is not worth failing the answer for.
            with contextlib.suppress(msgspec.ValidationError):
                self._usage = msgspec.convert(raw, Usage)

    def _finish(self, done: bool) -> StreamDone:
        if not done and self._finish_reason is None:
            raise StreamError(
                "truncated",
                "the stream ended before the answer finished (no finish_reason, no [DONE]): try again.",
                "the stream was cut off",
            )
        calls = self._calls.finish()
        reason = self._finish_reason or ("tool_calls" if calls else "stop")
        if reason == "stop" and calls:
            reason = "tool_calls"  # Gemini, Ollama, LocalAI finish tool calls with "stop"
        return StreamDone(self.request_id, "".join(self._content), calls, reason, self._usage)
