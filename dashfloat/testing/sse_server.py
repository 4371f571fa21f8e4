"""A real, scriptable OpenAI-compatible HTTP server on 127.0.0.1 that can send any bytes at any pace.

Each POST to ``/v1/chat/completions`` is answered by the next queued ``Reply`` (or ``handler(body)`` when
the queue is empty). A reply body is a sequence of raw ``bytes``, ``Pause`` and ``Drop`` items; it may
be a lazy iterator (a 100 MB body is never held in memory).

Other paths (``GET /v1/models``, ``/props``, ``/api/ps``, ``POST /api/show``: what clients ask to learn
the context window) are answered from ``routes`` with a fixed JSON body, else 404; they are recorded in
``other_requests``, never in ``requests``. ``window`` and ``window_error`` make the server reject a chat
request whose prompt is over the window, in a real provider's error shape (``window_errors``).
"""

from __future__ import annotations

import collections
import contextlib
import gzip
import json
import re
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = [
    "WINDOW_ERRORS",
    "Drop",
    "Pause",
    "Reply",
    "ScriptedServer",
    "count_tokens",
    "error_reply",
    "gzip_reply",
    "llama_cpp_python_handler",
    "looping_handler",
    "redirect_reply",
    "sse_event",
    "text_reply",
    "tool_calls_reply",
]


@dataclass(frozen=True)
class Pause:
    """Send nothing for ``seconds`` (a client that hangs up meanwhile is noticed at once)."""

    seconds: float


@dataclass(frozen=True)
class Drop:
    """Close the TCP connection abruptly, mid-reply."""


BodyItem = bytes | Pause | Drop


@dataclass
class Reply:
    """One scripted HTTP response; ``chunked=False`` sends raw bytes and closes (no framing at all)."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/event-stream"})
    body: Iterable[BodyItem] = ()
    chunked: bool = True
    framed: bool = False
    """The body's bytes are already in chunked framing (extensions, trailers, LF line ends, broken framing):
    sent as they are under ``Transfer-Encoding: chunked``, the connection kept as after any chunked body."""


Handler = Callable[[dict[str, Any]], Reply]


def sse_event(payload: Any) -> bytes:
    """One ``data:`` event with a JSON payload (or a raw string such as ``[DONE]``)."""
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    return f"data: {data}\n\n".encode()


def _chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def _usage_events(usage: tuple[int, int] | None) -> list[BodyItem]:
    if usage is None:
        return []
    prompt, completion = usage
    totals = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    return [sse_event({"id": "chatcmpl-scripted", "choices": [], "usage": totals})]


STREAM_BATCH_BYTES = 16 * 1024
"""Unpaced events go out in writes of about this size, as a fast real provider's do (not one per token)."""


def _paced(events: list[bytes], delay_s: float) -> list[BodyItem]:
    if delay_s <= 0:
        batches: list[BodyItem] = []
        batch = bytearray()
        for event in events:
            batch += event
            if len(batch) >= STREAM_BATCH_BYTES:
                batches.append(bytes(batch))
                batch.clear()
        return [*batches, bytes(batch)] if batch else batches
    paced: list[BodyItem] = []
    for event in events:
        paced += [event, Pause(delay_s)]
    return paced


def text_reply(
    text: str,
    chunk_size: int = 4,
    usage: tuple[int, int] | None = None,
    reasoning: str | None = None,
    finish_reason: str = "stop",
    delay_s: float = 0.0,
    reasoning_field: str = "reasoning_content",
) -> Reply:
    """A standard OpenAI stream of ``text`` in ``chunk_size``-character deltas, ``[DONE]`` at the end; ``reasoning``
    first, in ``reasoning_field`` (DeepSeek's ``reasoning_content``, vLLM's and Ollama's ``reasoning``)."""
    events = [sse_event(_chunk({"role": "assistant", "content": ""}))]
    for start in range(0, len(reasoning or ""), chunk_size):
        events.append(sse_event(_chunk({reasoning_field: (reasoning or "")[start : start + chunk_size]})))
    for start in range(0, len(text), chunk_size):
        events.append(sse_event(_chunk({"content": text[start : start + chunk_size]})))
    events.append(sse_event(_chunk({}, finish_reason)))
    body = _paced(events, delay_s) + _usage_events(usage) + [sse_event("[DONE]")]
    return Reply(body=body)


def tool_calls_reply(
    calls: list[tuple[str, str, dict[str, Any]]],
    content: str = "",
    usage: tuple[int, int] | None = None,
    reasoning: str = "",
    reasoning_field: str = "reasoning_content",
) -> Reply:
    """A standard OpenAI stream announcing ``(id, name, args)`` calls, arguments split in fragments; ``reasoning``
    first, in ``reasoning_field``, in two deltas."""
    events = [sse_event(_chunk({"role": "assistant", "content": content or None}))]
    half = len(reasoning) // 2
    for piece in (reasoning[:half], reasoning[half:]) if reasoning else ():
        events.append(sse_event(_chunk({reasoning_field: piece})))
    for index, (call_id, name, args) in enumerate(calls):
        encoded = json.dumps(args)
        half = len(encoded) // 2
        function = {"name": name, "arguments": ""}
        first = {"index": index, "id": call_id, "type": "function", "function": function}
        events.append(sse_event(_chunk({"tool_calls": [first]})))
        for piece in (encoded[:half], encoded[half:]):
            fragment = {"index": index, "function": {"arguments": piece}}
            events.append(sse_event(_chunk({"tool_calls": [fragment]})))
    events.append(sse_event(_chunk({}, "tool_calls")))
    return Reply(body=[*events, *_usage_events(usage), sse_event("[DONE]")])


def error_reply(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    """A JSON error response in the OpenAI shape."""
    body = json.dumps({"error": {"message": message, "type": "scripted", "code": status}}).encode()
    return Reply(status=status, headers={"Content-Type": "application/json", **(headers or {})}, body=[body])


def gzip_reply(reply: Reply, level: int = 6) -> Reply:
    """``reply`` with its body gzip-compressed in one piece and ``Content-Encoding: gzip`` (a proxy's habit)."""
    raw = b"".join(item for item in reply.body if isinstance(item, bytes))
    headers = {**reply.headers, "Content-Encoding": "gzip"}
    return Reply(status=reply.status, headers=headers, body=[gzip.compress(raw, level)], chunked=reply.chunked)


def redirect_reply(location: str, status: int = 307) -> Reply:
    """A redirect to ``location`` (absolute, or relative to the request)."""
    return Reply(status=status, headers={"Location": location, "Content-Length": "0"}, chunked=False)


def _has_call_only_message_without_content(body: dict[str, Any]) -> tuple[bool, bool]:
    """(an assistant tool-call message lacks the content key, one has ``content: null``)."""
    missing = null = False
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "assistant" and message.get("tool_calls"):
            missing = missing or "content" not in message
            null = null or ("content" in message and message["content"] is None)
    return missing, null


def llama_cpp_python_handler(body: dict[str, Any]) -> Reply:
    """What llama-cpp-python 0.3.x (``--chat_format chatml-function-calling``) was recorded doing.

    An assistant message with tool calls and no ``content`` key breaks its template after the 200 headers
    went out: an empty body. ``"content": null`` gets a 500. ``"content": ""`` is answered normally.
    """
    missing, null = _has_call_only_message_without_content(body)
    if missing:
        return Reply(body=[Drop()])  # headers sent, then the template raised: the connection just closes
    if null:
        return error_reply(500, 'can only concatenate str (not "NoneType") to str')
    return text_reply("I read the file.", usage=(812, 5))


def looping_handler(sentence: str = "I will now read the file notes.txt to see what it says. ") -> Handler:
    """A small local model stuck in a loop: the sentence over and over, ``max_tokens`` honoured if sent.

    A chunk counts as one token. Without ``max_tokens`` it goes on for a very long time (a million
    chunks, produced lazily), which is what the repetition guard must end.
    """

    def handle(body: dict[str, Any]) -> Reply:
        limit = body.get("max_tokens")
        tokens = limit if isinstance(limit, int) and limit > 0 else 1_000_000
        words = sentence.split()

        def events() -> Iterable[BodyItem]:
            batch = bytearray()
            for n in range(tokens):
                batch += sse_event(_chunk({"content": words[n % len(words)] + " "}))
                if len(batch) >= STREAM_BATCH_BYTES:
                    yield bytes(batch)
                    batch.clear()
            batch += sse_event(_chunk({}, "length"))
            yield bytes(batch) + sse_event("[DONE]")

        return Reply(body=events())

    return handle


_WORD = re.compile(r"\w+|[^\w\s]")


def count_tokens(body: dict[str, Any]) -> int:
    """The scripted server's own prompt-token count: words and punctuation of the messages and tools, as a
    word-piece tokenizer would roughly see them (the client never uses this rule: it has to estimate)."""
    text = json.dumps(body.get("messages", []), ensure_ascii=False) + json.dumps(body.get("tools", []))
    return len(_WORD.findall(text)) + 4 * len(body.get("messages", []))


def _openai_exceeded(tokens: int, window: int) -> Reply:
    message = (
        f"This model's maximum context length is {window} tokens. However, your messages resulted in "
        f"{tokens} tokens. Please reduce the length of the messages."
    )
    body = {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    return Reply(400, {"Content-Type": "application/json"}, [json.dumps(body).encode()])


def _vllm_exceeded(tokens: int, window: int) -> Reply:
    message = (
        f"This model's maximum context length is {window} tokens. However, you requested {tokens} tokens "
        f"({tokens} in the messages, 0 in the completion). Please reduce the length of the messages or completion."
    )
    body = {"object": "error", "message": message, "type": "BadRequestError", "param": None, "code": 400}
    return Reply(400, {"Content-Type": "application/json"}, [json.dumps(body).encode()])


def _llamacpp_exceeded(tokens: int, window: int) -> Reply:
    message = "the request exceeds the available context size, try increasing it"
    body = {
        "error": {
            "code": 400,
            "message": message,
            "type": "exceed_context_size_error",
            "n_prompt_tokens": tokens,
            "n_ctx": window,
        }
    }
    return Reply(400, {"Content-Type": "application/json"}, [json.dumps(body).encode()])


def _lmstudio_exceeded(tokens: int, window: int) -> Reply:
    # LM Studio answers 200 and ends the stream without a word (its log says the context overflowed).
    return Reply(body=[sse_event(_chunk({}, "stop")), sse_event("[DONE]")])


WINDOW_ERRORS: dict[str, Callable[[int, int], Reply]] = {
    "openai": _openai_exceeded,
    "vllm": _vllm_exceeded,
    "llamacpp": _llamacpp_exceeded,
    "lmstudio": _lmstudio_exceeded,
}
"""How each kind of server refuses a prompt larger than its window."""

_POLL_S = 0.02  # how fast close() returns


class _ClientGone(Exception):
    """The client closed its end mid-reply."""


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as real servers do: a kept-alive connection must not wait out delayed ACKs
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: test output stays readable

    def setup(self) -> None:
        super().setup()
        self.server.owner._note_connection()
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()  # here, in the connection's thread, not in the accept loop

    def handle(self) -> None:
        with contextlib.suppress(ConnectionResetError, BrokenPipeError, ssl.SSLError):
            super().handle()  # a client that resets between requests is not an error

    def do_GET(self) -> None:
        owner = self.server.owner
        props = owner.props
        owner._record_get(self.path)
        if self.path.rstrip("/").endswith("/props") and props is not None:
            reply = Reply(headers={"Content-Type": "application/json"}, body=[json.dumps(props).encode()])
        else:
            reply = owner._route("GET", self.path, None)
        with contextlib.suppress(_ClientGone, BrokenPipeError, ConnectionResetError):
            self._send(reply)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_undecodable": raw.decode("utf-8", "replace")}
        owner = self.server.owner
        if not self.path.rstrip("/").endswith("/chat/completions"):
            reply = owner._route("POST", self.path, body)
        else:
            reply = owner._record_and_pick(body, dict(self.headers.items()), self.path)
        try:
            self._send(reply)
        except (_ClientGone, BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            owner._note_disconnect()

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for key, value in reply.headers.items():
            self.send_header(key, value)
        if reply.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.flush()
        for item in reply.body:
            match item:
                case bytes():
                    if item:
                        framed = reply.chunked and not reply.framed
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(item), item) if framed else item)
                        self.wfile.flush()
                case Pause(seconds):
                    self._pause(seconds)
                case Drop():
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
        if reply.chunked and not reply.framed:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def _pause(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0 and not self.server.owner._stopping.is_set():
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
            if readable:
                try:  # a TLS socket refuses MSG_PEEK: peek its raw bytes (a cut connection reads as b"")
                    peeked = socket.socket.recv(self.connection, 1, socket.MSG_PEEK)
                except OSError:
                    raise _ClientGone from None
                if not peeked:
                    raise _ClientGone
                time.sleep(min(left, 0.01))  # a pipelined request is waiting: not a hang-up


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: ScriptedServer


class ScriptedServer:
    """The scripted endpoint; use as a context manager, ``base_url`` ends in ``/v1``."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        """``tls``: serve HTTPS with this server context (a test or bench makes a throwaway certificate)."""
        self._queue: collections.deque[Reply] = collections.deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.handler: Handler | None = None
        self.requests: list[dict[str, Any]] = []
        self.arrived: list[float] = []
        """``time.perf_counter()`` when each chat request had arrived whole (a bench times to it, not to a poll)."""
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.gets: list[str] = []
        """Paths asked for with GET (llama.cpp's ``/props``)."""
        self.props: dict[str, Any] | None = None
        """The JSON served at ``/props`` (None: 404, as servers other than llama.cpp answer)."""
        self.disconnects = 0
        self.connections = 0
        """TCP connections accepted: a client that reuses its connection makes one for many requests."""
        self.disconnected = threading.Event()
        self.routes: dict[tuple[str, str], tuple[int, Any] | Reply] = {}
        """(method, path) -> (status, JSON body), or a whole Reply, for the paths other than chat/completions."""
        self.other_requests: list[tuple[str, str, Any]] = []
        self.other_arrived: list[float] = []
        """``time.perf_counter()`` when each of ``other_requests`` arrived (a bench times the first window probe)."""
        self.window: int | None = None
        """Reject chat requests whose prompt (count_tokens) is above this, the way ``window_error`` does."""
        self.window_error = "openai"
        self.rejected = 0
        self.prompt_tokens: list[int] = []
        """count_tokens of every chat request received."""
        self._httpd = _Server(("127.0.0.1", 0), _RequestHandler)
        self._httpd.owner = self
        if tls is not None:
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True, do_handshake_on_connect=False)
        self.port: int = self._httpd.server_address[1]
        self.base_url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._serve, name="scripted-sse", daemon=True)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _serve(self) -> None:
        self._httpd.serve_forever(poll_interval=_POLL_S)

    def close(self) -> None:
        """Stop serving and release the port."""
        self._stopping.set()
        if self._thread.is_alive():
            self._httpd.shutdown()
        self._httpd.server_close()

    def enqueue(self, *replies: Reply) -> None:
        """Answer the next POSTs with these replies, in order."""
        with self._lock:
            self._queue.extend(replies)

    def arrival(self, index: int, timeout_s: float = 20.0) -> float:
        """When chat request ``index`` (0 = the first this server got) arrived whole, once it has."""
        if not self.wait_requests(index + 1, timeout_s):
            raise TimeoutError(f"chat request {index} did not arrive within {timeout_s} s")
        return self.arrived[index]

    def wait_requests(self, count: int, timeout_s: float = 5.0) -> bool:
        """Wait until ``count`` requests have arrived."""
        deadline = time.monotonic() + timeout_s
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def _route(self, method: str, path: str, body: Any) -> Reply:
        arrived = time.perf_counter()
        with self._lock:
            self.other_requests.append((method, path, body))
            self.other_arrived.append(arrived)
            found = self.routes.get((method, path.split("?", 1)[0]))
        if found is None:
            return error_reply(404, f"no route {method} {path}")
        if isinstance(found, Reply):
            return found
        status, payload = found
        return Reply(status, {"Content-Type": "application/json"}, [json.dumps(payload).encode()])

    def _record_and_pick(self, body: dict[str, Any], headers: dict[str, str], path: str) -> Reply:
        arrived = time.perf_counter()
        tokens = count_tokens(body)
        with self._lock:
            self.arrived.append(arrived)
            self.requests.append(body)
            self.headers.append(headers)
            self.paths.append(path)
            self.prompt_tokens.append(tokens)
            if self.window is not None and tokens > self.window:
                self.rejected += 1
                return WINDOW_ERRORS[self.window_error](tokens, self.window)
            if self._queue:
                return self._queue.popleft()
        if self.handler is not None:
            return self.handler(body)
        return error_reply(500, "ScriptedServer: no reply queued for this request")

    def _record_get(self, path: str) -> None:
        with self._lock:
            self.gets.append(path)

    def _note_connection(self) -> None:
        with self._lock:
            self.connections += 1

    def _note_disconnect(self) -> None:
        with self._lock:
            self.disconnects += 1
        self.disconnected.set()
