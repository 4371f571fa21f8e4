"""One stream: the HTTP request and its attempts, run on a kept thread (``StreamThreads``); the chunks go to an
Episode.

The worker never touches the pipe: it appends items to ``outbox`` and wakes the serve loop, which
coalesces and sends them. That keeps the pipe single-writer and the terminal message unique. Which failed attempts
are tried again is ``_errors``' policy (``retry_delay``); the checks that a server passes the tools on to its model
are ``_provider``'s.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from urllib.parse import urljoin, urlsplit

try:  # queue.SimpleQueue itself, without queue's module (heapq and more: memory in the worker, ADR 0053)
    from _queue import SimpleQueue
except ImportError:  # an interpreter without CPython's C module
    from queue import SimpleQueue

from dashfloat.llm._errors import (
    DROPPED_NOTICE,
    Cancelled,
    OptionsRejected,
    StreamError,
    as_utf8,
    classify_request_error,
    first_byte_timeout,
    not_sse_error,
    one_line,
    retry_delay,
    retry_notice,
    status_error,
)
from dashfloat.llm._framing import decoded, event_datas, framed_batches, looks_like_sse, one_line_datas
from dashfloat.llm._limits import (
    BODY_END_MAX_BYTES,
    BODY_END_WAIT_S,
    CONNECT_TIMEOUT_S,
    DEADLINE_GRACE_S,
    DELTA_BATCH_S,
    ERROR_BODY_MAX_BYTES,
    MAX_REDIRECTS,
    PACED_READ_MAX_BYTES,
    PROBE_TIMEOUT_S,
    SSE_EVENT_MAX_LINES,
    SSE_FRAME_MAX_BYTES,
)
from dashfloat.llm._provider import ProviderMemory, fetch_props, is_llamacpp, prompt_tokens_warning, props_warning
from dashfloat.llm._request import Optional, echoes, request_body
from dashfloat.llm._route import transport_for
from dashfloat.llm._transport import Response, Transport, finish_body, read_bounded, shutdown
from dashfloat.llm.episode import Delta, DeltaKind, Episode
from dashfloat.protocol import PromptProgress, StartStream, StreamDone, StreamFailed, StreamFailureKind

__all__ = ["DeltaKind", "Item", "Stream", "StreamThreads", "holds_next_read"]

Item = Delta | PromptProgress | StreamDone | StreamFailed
"""What the worker queues: deltas (coalesced by the serve loop), progress (sent as it comes), the terminal message."""
_REDIRECTS = (301, 302, 303, 307, 308)


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.scheme, f"{(parts.hostname or '').lower()}:{port}"


def holds_next_read(size: int, text_arrived: bool, calls_begun: bool, finished: bool) -> bool:
    """Whether the next socket read waits until DELTA_BATCH_S after this one, so the events sent meanwhile are
    read, parsed and sent together (one wake-up per window instead of one per event).

    Only a read that brought answer text (something to batch) and less than PACED_READ_MAX_BYTES: a stream slower
    than that per window, which the wait cannot slow down (the kernel buffers what arrives meanwhile); a bulk
    writer's big reads go on at once. Never once the model has begun a tool call or finished: a call's arguments
    and the episode's end are not shown piece by piece, and waiting for them would only delay the turn."""
    return text_arrived and size < PACED_READ_MAX_BYTES and not calls_begun and not finished


class StreamThreads:
    """The threads streams run on, each kept once its stream ends and woken for the next one. A thread started per
    stream cost every episode a thread's start (its stack mapped, then a wait until the scheduler first ran it),
    measured 0.6–1.7 ms from StartStream to the stream's first line on the loaded machine, against a kept
    thread's wake-up. As many threads as streams ever ran at once (the main stream, a summary); idle ones wait."""

    def __init__(self) -> None:
        self._jobs: SimpleQueue[Callable[[], None]] = SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def run(self, job: Callable[[], None]) -> None:
        """Run ``job`` on an idle thread, or a new one when none is idle."""
        with self._lock:
            start = self._idle == 0
            if not start:
                self._idle -= 1
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._serve, name="llm-stream", daemon=True).start()

    @property
    def idle(self) -> int:
        """Threads waiting for a stream."""
        with self._lock:
            return self._idle

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job()
            except Exception:  # a stream answers its own failures; whatever escapes must not cost the thread
                import traceback  # only then (issue 19: each module the worker imports costs memory, ADR 0053)

                traceback.print_exc(file=sys.stderr)
            with self._lock:
                self._idle += 1


class Stream:
    """The worker for one StartStream; ``abort()`` may be called from any thread."""

    _transport: Transport
    """Chosen by the stream's thread as it starts (``_route.transport_for``)."""

    def __init__(self, start: StartStream, wake: Callable[[Stream], None], memory: ProviderMemory) -> None:
        self.start = start
        self.request_id = start.request_id
        self.outbox: collections.deque[Item] = collections.deque()
        self.wake_pending = False
        self.text_deltas = 0
        """Answer deltas the stream produced (a read that brought none has nothing to batch)."""
        self.sent_content: list[str] = []
        """Content the serve loop has already sent (the partial answer on cancel)."""
        self.cancelled = threading.Event()
        self._wake = wake
        self._memory = memory
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._ended = threading.Event()
        self._expired = False
        """The serve loop cut this attempt's sockets: it was blocked past its deadline (``expire``)."""
        self._expire_tried: float | None = None
        """The deadline ``expire`` last looked at (it looks once per deadline)."""
        self._reset()

    def begin(self, threads: StreamThreads) -> None:
        threads.run(self._run)

    @property
    def answered(self) -> bool:
        """Whether an answer's event arrived (prompt-reading progress is none)."""
        return self._answered

    def abort(self) -> None:
        """Stop now: the blocked read returns and the server sees the connection close."""
        self.cancelled.set()
        with self._lock:
            for sock in self._sockets:
                shutdown(sock)

    def join(self, timeout_s: float) -> None:
        """Wait until the stream's work is over (its thread then waits for the next stream)."""
        self._ended.wait(timeout_s)

    def overdue_at(self) -> float | None:
        """When ``expire`` is due (the deadline plus DEADLINE_GRACE_S), None when it has looked at this deadline."""
        deadline = self._deadline
        return None if deadline == self._expire_tried else deadline + DEADLINE_GRACE_S

    def expire(self) -> None:
        """From the serve loop, once ``overdue_at`` has passed: a request still blocked then has had every read within
        its timeout and still no answer (a head that never ends: a header dribbled byte by byte, one 100 Continue
        after another); its sockets are shut down and the stream fails with its deadline's message. Between attempts
        (no socket) it does nothing."""
        with self._lock:
            deadline = self._deadline
            self._expire_tried = deadline
            if time.monotonic() < deadline + DEADLINE_GRACE_S or not self._sockets:
                return
            self._expired = True
            for sock in self._sockets:
                shutdown(sock)

    # ------------------------------------------------------------ worker thread

    def _reset(self) -> None:
        self._episode = Episode(think_inside_first=self.start.provider.base_url in self._memory.think_inside)
        self._body_began = False
        """A byte of the answer's body arrived (a connection closed before that never answered)."""
        self._answered = False
        """An event with data arrived: from then on the idle timeout applies, not the first-byte deadline."""
        with self._lock:  # against ``expire``: a new attempt's sockets are never cut for the last one's deadline
            self._deadline = time.monotonic() + self.start.first_byte_timeout_s
            self._expired = False

    def _progress(self) -> None:
        """An event arrived: the next one is due within the idle timeout (comments never get here)."""
        idle_s = self.start.idle_timeout_s
        self._deadline = time.monotonic() + idle_s
        if not self._answered:
            self._answered = True
            self._memory.maybe_busy.discard(self.start.provider.base_url)  # it reads this request's prompt no more
            with self._lock:
                for sock in self._sockets:
                    with contextlib.suppress(OSError):
                        sock.settimeout(idle_s)

    def _watched(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """The body's data, read by read; bytes that are no event (keep-alive comments, a read of HTTP framing only)
        do not move the deadline, which every read is held to (a server dribbling bytes cannot hang the stream)."""
        for chunk in chunks:
            if time.monotonic() > self._deadline:
                raise self._timeout()
            if chunk:
                yield chunk

    def _timeout(self) -> StreamError:
        if self._answered:
            idle_s = self.start.idle_timeout_s
            setting = (
                self.start.idle_timeout_from or "settings.idle_timeout_s in config.toml (or DASHFLOAT_IDLE_TIMEOUT_S)"
            )
            return StreamError(
                "idle_timeout", f"the provider sent nothing for {idle_s:g} s: try again, or raise {setting}."
            )
        return first_byte_timeout(self.start.first_byte_timeout_s)

    def _on_socket(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
        if self.cancelled.is_set():
            shutdown(sock)

    def _let_go(self) -> None:
        """The request is over: its connection went back to the pool (or closed), so an abort of this stream
        must no longer touch it (the next stream may be using it)."""
        with self._lock:
            self._sockets.clear()

    def _finish_body(self, reads: Iterator[bytes]) -> None:
        """After ``[DONE]``: read the body's end (the server sends it at once) so the connection can be reused;
        a server that keeps the body open costs at most BODY_END_WAIT_S and its connection."""
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.settimeout(BODY_END_WAIT_S)
        finish_body(reads, BODY_END_MAX_BYTES, BODY_END_WAIT_S, self._transport.errors)

    def _emit(self, item: Item, wake: bool = True) -> None:
        """Queue ``item`` for the serve loop; answer deltas wait for ``_wake_loop`` at the next socket read.
        The terminal message (and progress) always wakes the loop, even one already woken and holding deltas to batch
        them: the episode's end is never held."""
        self.outbox.append(item)
        if not isinstance(item, tuple):
            self.wake_pending = True
            self._wake(self)
        elif wake:
            self._wake_loop()

    def _wake_loop(self) -> None:
        if self.outbox and not self.wake_pending:
            self.wake_pending = True
            self._wake(self)

    def _failed(self, kind: StreamFailureKind, message: str) -> StreamFailed:
        return self._episode.failed(self.request_id, kind, message)

    def _run(self) -> None:
        try:
            self._answer()
        finally:
            self._ended.set()

    def _answer(self) -> None:
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
        base = provider.base_url
        # On this thread: a process that guessed the plain route imports requests here, not in its serve loop.
        self._transport = transport_for(base, os.environ)
        url = base.rstrip("/") + "/chat/completions"
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            # Asked for plainly: the stream is read as it arrives (a compressed one is still decoded).
            "Accept-Encoding": "identity",
            **provider.headers,
        }
        key = os.environ.get(provider.api_key_env) if provider.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._look_at_props(base, headers)
        memory = self._memory
        if base in memory.maybe_busy:  # the last request was cancelled while the server read its prompt
            self._emit(PromptProgress(self.request_id, busy=True))
        attempt = 1
        while True:
            dropped = memory.dropped.setdefault(base, set())
            body = request_body(
                provider,
                self.start.messages,
                dropped,
                self.start.exec_timeout_s,
                extra_tools=self.start.extra_tools,
                reported_window=memory.reported_windows.get((base, provider.model)),
                progress=base in memory.llamacpp or is_llamacpp(memory.props.get(base)),
            )
            self._reset()
            try:
                done = self._attempt(url, headers, body, dropped)
            except OptionsRejected as exc:
                dropped.add(exc.field)
                self._emit(("warning" if exc.field == "reasoning" else "status", DROPPED_NOTICE[exc.field]))
                continue
            except StreamError as exc:
                if self.cancelled.is_set():
                    raise Cancelled from exc
                delay = retry_delay(exc, attempt, self._episode.emitted)
                if delay is None:
                    raise
                attempt += 1
                self._emit(("status", retry_notice(exc, delay, attempt)))
                if self.cancelled.wait(delay):
                    raise Cancelled from exc
            else:
                self._warn_tools(base, prompt_tokens_warning(base, done.usage, body))
                if base not in self._memory.probed and base in self._memory.props:
                    self._look_at_props(base, headers)  # the discovery's answer came meanwhile
                return done

    def _look_at_props(self, base: str, headers: dict[str, str]) -> None:
        """Once per server: whether its chat template takes tools, from the window discovery's ``/props`` answer,
        else by asking; not while a discovery is asking it (the request does not wait behind that question)."""
        memory = self._memory
        if base in memory.probed:
            return
        if base in memory.props:
            memory.probed.add(base)
            self._warn_tools(base, props_warning(base, memory.props[base]))
        elif base not in memory.discovering:
            memory.probed.add(base)
            timeout_s = min(PROBE_TIMEOUT_S, self.start.idle_timeout_s)
            try:
                props = fetch_props(self._transport, base, headers, timeout_s, self._on_socket, self._log)
            finally:
                self._let_go()
            if is_llamacpp(props):
                memory.llamacpp.add(base)
            self._warn_tools(base, props_warning(base, props))

    def _attempt(self, url: str, headers: dict[str, str], body: bytes, dropped: set[Optional]) -> StreamDone:
        idle_s = self.start.idle_timeout_s
        first_byte_s = self.start.first_byte_timeout_s
        connect_s = min(CONNECT_TIMEOUT_S, idle_s, first_byte_s)
        transport = self._transport
        target = url
        try:
            for _ in range(MAX_REDIRECTS + 1):
                try:
                    # headers are no answer: llama.cpp sends none first, so the first-byte deadline bounds them
                    response = transport.request(
                        "POST", target, headers, body, connect_s, first_byte_s, self._on_socket
                    )
                except transport.errors as exc:
                    if self.cancelled.is_set():
                        raise Cancelled from exc
                    self._log(f"{type(exc).__name__}: {exc}")
                    raise self._request_error(exc, target, connect_s, answered=False) from exc
                try:
                    if self.cancelled.is_set():
                        raise Cancelled
                    if is_llamacpp(None, response.header("Server")):  # its next requests ask for progress
                        self._memory.llamacpp.add(self.start.provider.base_url)
                    location = response.header("Location")
                    if response.status in _REDIRECTS and location:
                        target = self._redirect(url, target, location)
                        continue
                    if response.status != 200:
                        raise self._status_error(response, target, dropped)
                    try:
                        return self._read_events(response, target)
                    except transport.errors as exc:
                        if self.cancelled.is_set():
                            raise Cancelled from exc
                        self._log(f"{type(exc).__name__}: {exc}")
                        raise self._request_error(exc, target, connect_s, answered=self._body_began) from exc
                finally:
                    response.close()
            raise StreamError(
                "redirected",
                f"{url} was redirected more than {MAX_REDIRECTS} times (last to {target}): "
                "set base_url to the server's real address.",
            )
        except StreamError as exc:
            if self._expired:  # cut by the serve loop: whatever the cut looked like (an empty body, a close)
                raise self._timeout() from exc
            raise
        finally:
            self._let_go()

    def _request_error(self, exc: BaseException, url: str, connect_s: float, answered: bool) -> StreamError:
        error = classify_request_error(
            exc, url, connect_s, self.start.idle_timeout_s, self.start.idle_timeout_from, answered=answered
        )
        return self._timeout() if error.kind == "idle_timeout" else error

    @staticmethod
    def _redirect(url: str, current: str, location: str) -> str:
        """The next URL of a same-origin redirect; another origin is refused (the conversation stays here)."""
        target = urljoin(current, location)
        if _origin(target) != _origin(url):
            raise StreamError(
                "redirected",
                f"{current} redirects to {target}, another origin: DashFloat does not follow it, so the "
                "conversation is not sent there; if the move is real, set base_url to the new address.",
            )
        return target

    def _warn_tools(self, base: str, warning: str | None) -> None:
        """Give a warning about ``base``'s tools, once per server."""
        if warning is not None and base not in self._memory.warned_tools:
            self._memory.warned_tools.add(base)
            self._emit(("warning", warning))

    def _log(self, what: str) -> None:
        """Internals for the log (the child's stderr goes there), never for the person reading the chat."""
        print(f"dashfloat llm: request {self.request_id}: {what}", file=sys.stderr, flush=True)

    def _status_error(self, response: Response, url: str, dropped: set[Optional]) -> Exception:
        env = self.start.provider.api_key_env
        body = read_bounded(response, ERROR_BODY_MAX_BYTES, self._transport.errors)
        return status_error(
            response.status,
            as_utf8(body, response.header("Content-Type")),
            response.header("Retry-After"),
            self.start.provider,
            url,
            key_is_set=bool(env and os.environ.get(env)),
            sent=self._optional_sent(dropped),
        )

    def _optional_sent(self, dropped: set[Optional]) -> set[Optional]:
        """The optional fields the request carried (a 400 naming one is retried without it)."""
        sent: set[Optional] = {"stream_options", "max_tokens"}
        if self.start.provider.reasoning_effort is not None:
            sent.add("reasoning_effort")
        if echoes(self.start.messages):
            sent.add("reasoning")
        return sent - dropped

    def _counted(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """The body's reads; before each one (it may block) the deltas of the last go out as one message,
        so a fast stream is one message per socket read and a lone token is never held back.

        After a read that ``holds_next_read`` (a paced provider's few events) the next read comes DELTA_BATCH_S
        after it: the events sent meanwhile are read, parsed and sent together, and a token waits at most that
        long. An abort ends the wait at once (and shuts the socket)."""
        episode = self._episode
        held_from: float | None = None
        held_size = text_before = 0
        while True:
            self._wake_loop()
            if held_from is not None and holds_next_read(
                held_size, self.text_deltas > text_before, episode.native_calls, episode.finish_reason is not None
            ):
                rest = held_from + DELTA_BATCH_S - time.monotonic()
                if rest > 0:
                    self.cancelled.wait(rest)
            chunk = next(chunks, None)
            if chunk is None:
                return
            held_from, held_size, text_before = time.monotonic(), len(chunk), self.text_deltas
            self._body_began = True
            yield chunk

    def _read_events(self, response: Response, url: str) -> StreamDone:
        self._body_began = False
        reads = response.reads()
        chunks = decoded(self._counted(self._watched(reads)), response.header("Content-Encoding") or "")
        first = next(chunks, b"")
        if not first:
            raise StreamError(
                "truncated",
                f"the server at {url} closed the connection before answering (HTTP 200 with an empty body): "
                "try again; if it repeats, the server's log says why.",
                "the server closed the connection before answering",
            )
        content_type = response.header("Content-Type") or ""
        if "text/event-stream" not in content_type and not looks_like_sse(first):
            raise self._not_sse(first, chunks, content_type, url)
        batches = framed_batches(itertools.chain([first], chunks), SSE_FRAME_MAX_BYTES, SSE_EVENT_MAX_LINES)
        try:
            for events in batches:
                if self.cancelled.is_set():
                    raise Cancelled
                if self._take_plain(events):
                    continue
                for data in event_datas(iter(events)):
                    if self.cancelled.is_set():
                        raise Cancelled
                    self._take(data)
                    if self._episode.done:
                        break
                if self._episode.done:
                    self._wake_loop()  # the last deltas go now, not after the body's end
                    self._finish_body(reads)
                    break
        except UnicodeDecodeError as exc:
            raise StreamError(
                "malformed_frame",
                "the provider sent bytes that are not UTF-8: the endpoint is not OpenAI-compatible.",
            ) from exc
        if self.cancelled.is_set():
            raise Cancelled
        provider = self.start.provider
        read_text = provider.tool_calls == "text" or (
            provider.tool_calls == "auto" and provider.base_url not in self._memory.native_calls
        )
        episode = self._episode
        for delta in episode.flush():  # what the <think> split held until the text ended
            self._emit(delta, wake=False)
        done = episode.finished(self.request_id, text_calls=read_text)
        if episode.native_calls:
            self._memory.native_calls.add(provider.base_url)
        if episode.closed_only:
            self._memory.think_inside.add(provider.base_url)
        elif done.reasoning_field != "think":
            self._memory.think_inside.discard(provider.base_url)
        return done

    def _take_plain(self, events: list[bytes]) -> bool:
        """A read's events at once, when each is a one-line event of content only (a paced provider's tokens):
        one pass and one delta for all of them. False, having taken nothing, for any other read."""
        datas = one_line_datas(events)
        fed = self._episode.feed_plain(datas) if datas else None
        if fed is None:
            return False
        self._progress()
        deltas, error = fed
        for delta in deltas:
            self._emit(delta, wake=False)
            self.text_deltas += 1
        if error is not None:
            raise error
        return True

    def _take(self, data: str) -> None:
        """One event's data; an event of prompt-reading progress alone is no answer: it goes to the agent as
        PromptProgress, and the wait for the first token starts again (a long prompt is read batch by batch)."""
        deltas = self._episode.feed(data)
        read = self._episode.take_progress()
        if read is not None and not deltas and not self._answered:
            self._memory.maybe_busy.discard(self.start.provider.base_url)  # it reads this request's prompt now
            with self._lock:
                self._deadline = time.monotonic() + self.start.first_byte_timeout_s
            processed, total, cached = read
            self._emit(PromptProgress(self.request_id, processed, total, cached))
            return
        self._progress()
        for delta in deltas:
            self._emit(delta, wake=False)
            self.text_deltas += 1

    def _not_sse(self, first: bytes, chunks: Iterator[bytes], content_type: str, url: str) -> StreamError:
        body = first
        for chunk in chunks:
            body += chunk
            if len(body) >= ERROR_BODY_MAX_BYTES:
                break
        return not_sse_error(body, content_type, url)
