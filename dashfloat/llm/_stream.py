"""One stream: the HTTP request and its retries, run in a worker thread; the chunks go to an Episode.

The worker never touches the pipe: it appends items to ``outbox`` and wakes the serve loop, which
coalesces and sends them. That keeps the pipe single-writer and the terminal message unique.
"""

from __future__ import annotations

import collections
import itertools
import os
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import msgspec
import requests
import sseclient
import urllib3.exceptions

from dashfloat.catalogue import TOOLS
from dashfloat.llm._errors import (
    RETRYABLE_KINDS,
    Cancelled,
    OptionsRejected,
    StreamError,
    classify_request_error,
    not_sse_error,
    one_line,
    status_error,
)
from dashfloat.llm._framing import frame_capped, looks_like_sse
from dashfloat.llm._http import body_chunks, new_session, read_bounded, shutdown
from dashfloat.llm._limits import (
    BACKOFF_BASE_S,
    CONNECT_TIMEOUT_S,
    ERROR_BODY_MAX_BYTES,
    MAX_ATTEMPTS,
    RETRY_AFTER_MAX_S,
    SSE_FRAME_MAX_BYTES,
)
from dashfloat.llm.episode import Delta, DeltaKind, Episode
from dashfloat.protocol import StartStream, StreamDone, StreamFailed, StreamFailureKind

__all__ = ["DeltaKind", "Item", "Stream"]

Item = Delta | StreamDone | StreamFailed
_READ_ERRORS = (requests.RequestException, urllib3.exceptions.HTTPError, OSError)


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
        self._episode = Episode()

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

    def _failed(self, kind: StreamFailureKind, message: str) -> StreamFailed:
        return self._episode.failed(self.request_id, kind, message)

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
        return self._failed("internal", message)

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
            except OptionsRejected:
                self._no_options.add(provider.base_url)
                self._emit(("status", "the provider rejected stream_options; retrying without it (no usage figures)"))
                continue
            except StreamError as exc:
                if self.cancelled.is_set():
                    raise Cancelled from exc
                waited = exc.retry_after_s
                if (
                    exc.kind not in RETRYABLE_KINDS
                    or self._episode.emitted
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
        env = self.start.provider.api_key_env
        return status_error(
            response.status_code,
            read_bounded(response, ERROR_BODY_MAX_BYTES),
            response.headers.get("Retry-After"),
            self.start.provider,
            url,
            key_is_set=bool(env and os.environ.get(env)),
            use_options=use_options,
        )

    def _read_events(self, response: requests.Response, url: str) -> StreamDone:
        chunks = body_chunks(response)
        first = next(chunks, b"")
        content_type = response.headers.get("Content-Type", "")
        if "text/event-stream" not in content_type and not looks_like_sse(first):
            raise self._not_sse(first, chunks, content_type, url)
        source: Iterator[bytes] = frame_capped(itertools.chain([first], chunks), SSE_FRAME_MAX_BYTES)
        episode = self._episode
        try:
            for event in sseclient.SSEClient(source).events():
                if self.cancelled.is_set():
                    raise Cancelled
                for delta in episode.feed(event.data):
                    self._emit(delta)
                if episode.done:
                    break
        except UnicodeDecodeError as exc:
            raise StreamError(
                "malformed_frame",
                "the provider sent bytes that are not UTF-8: the endpoint is not OpenAI-compatible.",
            ) from exc
        if self.cancelled.is_set():
            raise Cancelled
        return episode.finished(self.request_id)

    def _not_sse(self, first: bytes, chunks: Iterator[bytes], content_type: str, url: str) -> StreamError:
        body = first
        for chunk in chunks:
            body += chunk
            if len(body) >= ERROR_BODY_MAX_BYTES:
                break
        return not_sse_error(body, content_type, url)
