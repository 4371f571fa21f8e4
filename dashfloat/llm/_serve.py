"""The LLM stream process loop: the pipe on the main thread, each HTTP stream on a worker thread.

The loop starts before the HTTP stack is imported (on a thread of its own: ``_startup.preload``), so a window
discovery can begin at once; a stream waits for the import (ADR 0045).
"""

from __future__ import annotations

# First, before anything imports http.client: its import without calendar (ADR 0056).
from dashfloat._startup import http_client_import  # noqa: F401

# isort: split

import collections
import contextlib
import os
import sys
import time
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Final, assert_never

import msgspec

from dashfloat import procutil
from dashfloat._startup.preload import Preload
from dashfloat.channel import Channel, PeerDied, ProtocolError, Readiness
from dashfloat.config import is_local_url
from dashfloat.jsonvalue import JsonValue
from dashfloat.llm._discover import Discovery
from dashfloat.llm._limits import DEADLINE_GRACE_S, DELTA_BATCH_S, DELTA_MAX_CHARS, HOLD_MIN_S
from dashfloat.llm._route import expects_plain_route
from dashfloat.protocol import (
    AgentToLlm,
    CancelStream,
    ContentDelta,
    DiscoverWindow,
    PromptProgress,
    ReasoningDelta,
    Shutdown,
    StartStream,
    StreamDone,
    StreamFailed,
    StreamStatus,
    WindowFound,
)

if TYPE_CHECKING:
    from dashfloat.llm._provider import ProviderMemory
    from dashfloat.llm._stream import DeltaKind, Stream, StreamThreads

_ABORT_JOIN_S = 0.5
PLAIN_STACK_MODULES: Final = ("dashfloat.llm._plain", "dashfloat.llm._stream")
"""Imported on a thread as the process starts when its provider takes the plain route (ADR 0048): http.client's
transport and the stream code, no requests."""
HTTP_STACK_MODULES: Final = (
    "dashfloat._startup.requests_import",
    "dashfloat.llm._http",
    "dashfloat.llm._stream",
    "netrc",
)
"""Imported on a thread as the process starts: requests without what we never use (``_imports``), its transport
with urllib3 (``_http``), the stream code; and what requests imports on its first request (``netrc``, for
credentials it looks up), which was the discovery's first request and is now often the chat's."""


def worth_holding(left_s: float) -> bool:
    """Whether a message is held ``left_s`` more for deltas to join it: not for less than HOLD_MIN_S. A paced
    stream's thread already reads once per DELTA_BATCH_S, and its wake-up lands just before the window ends; a
    second wake-up for the last fraction of a millisecond would double the loop's wake-ups and batch nothing."""
    return left_s >= HOLD_MIN_S


class _Loop:
    def __init__(self, channel: Channel[AgentToLlm], stack: Preload) -> None:
        self.channel = channel
        self.stack = stack
        self.streams: dict[int, Stream] = {}
        self.props: dict[str, JsonValue] = {}
        """``/props`` answers the discovery got, by base URL (the streams' ProviderMemory holds the same dict)."""
        self.discovering: collections.Counter[str] = collections.Counter()
        """Discoveries under way by base URL; the streams' ProviderMemory holds the set of those above 0."""
        self._asking: set[str] = set()
        self._memory: ProviderMemory | None = None
        self._threads: StreamThreads | None = None
        self.windows: dict[tuple[str, str], WindowFound] = {}
        """Discovered windows by (base URL, model): each server is asked once per model."""
        self.reported: dict[tuple[str, str], int] = {}
        """The windows servers reported themselves, by (base URL, model): ``max_tokens`` follows them (ADR 0092)."""
        self.found: collections.deque[tuple[DiscoverWindow, WindowFound]] = collections.deque()
        self._last_sent = 0.0
        self._either = Readiness()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    def _streams(self) -> tuple[ProviderMemory, StreamThreads]:
        """What streams need, once the HTTP stack is imported (waits for it the first time)."""
        if self._memory is None or self._threads is None:
            self.stack.wait()
            # Lazy: imported by the stack's preload (through _stream), never on the loop's start path (ADR 0045).
            from dashfloat.llm._provider import ProviderMemory
            from dashfloat.llm._stream import StreamThreads

            self._memory = ProviderMemory(props=self.props, discovering=self._asking, reported_windows=self.reported)
            self._threads = StreamThreads()
        return self._memory, self._threads

    def _wake(self, _stream: Stream) -> None:
        with contextlib.suppress(BlockingIOError):  # a full pipe already means "wake up"
            os.write(self._wake_w, b"!")

    def run(self) -> None:
        try:
            while True:
                sources: list[Connection | int] = [self.channel.conn, self._wake_r]
                ready = self._either.wait(sources, self._until_overdue())
                if self._wake_r in ready:
                    # Deltas arriving within DELTA_BATCH_S of the last message join the next one; a stream's end
                    # (its thread wakes us for it even now) or a message from the agent ends the hold at once.
                    hold_until = self._last_sent + DELTA_BATCH_S
                    while self.channel.conn not in ready:
                        # Cleared before the outbox is looked at: a stream queues first and wakes after, so an end
                        # queued after the look has its wake-up still to come and ends the wait below.
                        self._clear_wakes()
                        left = hold_until - time.monotonic()
                        if self._ending() or not worth_holding(left):
                            break
                        ready = self._either.wait(sources, left)
                    self._clear_wakes()
                    for stream in list(self.streams.values()):
                        self._drain(stream)
                    while self.found:
                        ask, found = self.found.popleft()
                        self._discovered_for(ask.provider.base_url, -1)
                        self.windows[(ask.provider.base_url, ask.provider.model)] = found
                        if found.source == "server":
                            self.reported[(ask.provider.base_url, ask.provider.model)] = found.window
                        self.channel.send(found)
                    self._last_sent = time.monotonic()
                if self.channel.conn in ready and not self._handle(self.channel.recv()):
                    return
        except PeerDied:
            return
        finally:
            for stream in self.streams.values():
                stream.abort()
            os.close(self._wake_r)
            os.close(self._wake_w)

    def _until_overdue(self) -> float | None:
        """How long until a stream is past its deadline (``Stream.expire``), having cut those already past it; None
        when no stream runs."""
        now = time.monotonic()
        soonest: float | None = None
        for stream in list(self.streams.values()):
            due = stream.overdue_at()
            if due is not None and due <= now:
                stream.expire()
                due = stream.overdue_at()
            if due is None:
                due = now + DEADLINE_GRACE_S  # looked at (between attempts): its next attempt's deadline is read then
            if soonest is None or due < soonest:
                soonest = due
        return None if soonest is None else max(0.0, soonest - now)

    def _clear_wakes(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.read(self._wake_r, 4096)

    def _handle(self, message: AgentToLlm) -> bool:
        """Act on one message; False when the loop must stop."""
        match message:
            case StartStream():
                if message.request_id in self.streams:
                    self._cancel(message.request_id, "replaced by a new request with the same id.")
                memory, threads = self._streams()
                from dashfloat.llm._stream import Stream  # lazy: imported by the stack's preload, waited for above

                stream = Stream(message, self._wake, memory)
                self.streams[message.request_id] = stream
                stream.begin(threads)
            case DiscoverWindow(request_id=request_id, provider=provider):
                cached = self.windows.get((provider.base_url, provider.model))
                if cached is not None:
                    self.channel.send(msgspec.structs.replace(cached, request_id=request_id))
                else:
                    self._discovered_for(provider.base_url, +1)
                    Discovery(message, self._discovered, self.props, self.stack).begin()
            case CancelStream():
                self._cancel(message.request_id, "the request was cancelled.")
            case Shutdown():
                for request_id in list(self.streams):
                    self._cancel(request_id, "the LLM process is shutting down.")
                return False
            case _:
                assert_never(message)
        return True

    def _discovered_for(self, base_url: str, change: int) -> None:
        """Count a discovery of ``base_url`` begun (+1) or answered (-1); the streams see whether any is under way."""
        self.discovering[base_url] += change
        if self.discovering[base_url] > 0:
            self._asking.add(base_url)
        else:
            del self.discovering[base_url]
            self._asking.discard(base_url)

    def _discovered(self, ask: DiscoverWindow, found: WindowFound) -> None:
        """From a discovery thread: queue the reply for the main thread (the pipe has one writer)."""
        self.found.append((ask, found))
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake_w, b"!")

    def _cancel(self, request_id: int, why: str) -> None:
        stream = self.streams.get(request_id)
        if stream is None or self._drain(stream):
            return  # already answered (a cancel racing the stream's own end)
        stream.abort()
        del self.streams[request_id]
        base = stream.start.provider.base_url
        if not stream.answered and self._memory is not None and is_local_url(base):
            self._memory.maybe_busy.add(base)  # llama.cpp reads a cancelled prompt to its end (ADR 0092)
        partial = "".join(stream.sent_content)
        self.channel.send(StreamFailed(request_id, "cancelled", why, content=partial))
        stream.join(_ABORT_JOIN_S)

    def _ending(self) -> bool:
        """A stream's terminal message or a discovered window is queued: it goes at once (holding it to batch would
        only delay the turn; the agent holds an answer that came before the window for it, ADR 0052 and 0059)."""
        if self.found:
            return True
        terminal = StreamDone | StreamFailed
        return any(stream.outbox and isinstance(stream.outbox[-1], terminal) for stream in self.streams.values())

    def _drain(self, stream: Stream) -> bool:
        """Send what the worker produced, coalesced; True when its terminal message went out."""
        stream.wake_pending = False  # before reading the outbox, so a later append wakes us again
        kind: DeltaKind | None = None
        parts: list[str] = []
        size = 0
        outbox = stream.outbox
        while outbox:
            item = outbox.popleft()
            if isinstance(item, tuple):
                item_kind, text = item
                if item_kind == kind and kind in ("content", "reasoning") and size < DELTA_MAX_CHARS:
                    parts.append(text)
                    size += len(text)
                    continue
                self._flush(stream, kind, parts)
                kind, parts, size = item_kind, [text], len(text)
                continue
            self._flush(stream, kind, parts)
            kind, parts, size = None, [], 0
            if isinstance(item, PromptProgress):
                self.channel.send(item)  # not the end: the stream goes on
                continue
            self.streams.pop(stream.request_id, None)
            self.channel.send(item)
            return True
        self._flush(stream, kind, parts)
        return False

    def _flush(self, stream: Stream, kind: DeltaKind | None, parts: list[str]) -> None:
        if kind is None or not parts:
            return
        text = "".join(parts)
        request_id = stream.request_id
        match kind:
            case "content":
                stream.sent_content.append(text)
                self.channel.send(ContentDelta(request_id, text))
            case "reasoning":
                self.channel.send(ReasoningDelta(request_id, text))
            case "status":
                self.channel.send(StreamStatus(request_id, text))
            case "warning":
                self.channel.send(StreamStatus(request_id, text, level="warning"))
            case _:
                assert_never(kind)


def stack_modules(argv: list[str], env: Mapping[str, str]) -> tuple[str, ...]:
    """What the process imports as it starts: the plain route's stack when its provider will take that route
    (``_route.expects_plain_route``), else requests'."""
    return PLAIN_STACK_MODULES if expects_plain_route(argv, env) else HTTP_STACK_MODULES


def serve(conn: Connection) -> None:
    """Run the LLM stream process on ``conn`` until Shutdown or the agent goes away."""
    procutil.die_with_parent()
    # The HTTP stack, while this loop already reads the pipe.
    stack = Preload(stack_modules(sys.argv[1:], os.environ), trim=True)
    channel: Channel[AgentToLlm] = Channel(conn, AgentToLlm, "agent->llm")
    try:
        _Loop(channel, stack).run()
    except ProtocolError as exc:
        # The agent speaks another protocol version: nothing sensible can be answered.
        print(f"dashfloat llm: {exc}", file=sys.stderr)
