"""The failure taxonomy, retries, stream_options fallback and cancel, each against a real server."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dashfloat.protocol import CancelStream, ContentDelta, StreamDone, StreamStatus
from dashfloat.testing.sse_server import (
    WINDOW_ERRORS,
    Drop,
    Pause,
    Reply,
    ScriptedServer,
    error_reply,
    sse_event,
    text_reply,
)
from tests.llm.conftest import TEST_KEY, TEST_KEY_ENV, Llm


@pytest.fixture
def llm(route_llm: Llm) -> Llm:
    """Every test here runs through both routes to a local plain-HTTP server (http.client and requests)."""
    return route_llm


def content(text: str) -> bytes:
    return sse_event({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})


@pytest.fixture
def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture
def full_backlog_port() -> Iterator[int]:
    """A listener whose accept queue is full: further SYNs are dropped, so connecting times out."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(listener.getsockname())
        fillers.append(filler)
    time.sleep(0.05)
    yield listener.getsockname()[1]
    for sock in [*fillers, listener]:
        sock.close()


def test_connection_refused_is_retried_then_reported(llm: Llm, closed_port: int) -> None:
    result = llm.run(f"http://127.0.0.1:{closed_port}/v1")
    assert result.failed.kind == "connection_refused"
    assert "nothing is listening" in result.failed.message
    statuses = result.of(StreamStatus)
    assert [s.text.split("(attempt ")[1] for s in statuses] == ["2 of 3)", "3 of 3)"]


def test_dns_failure_is_not_retried(llm: Llm) -> None:
    result = llm.run("http://dashfloat-no-such-host.invalid/v1")
    assert result.failed.kind == "dns"
    assert "dashfloat-no-such-host.invalid" in result.failed.message
    assert result.of(StreamStatus) == []


def test_tls_to_a_plain_http_server(llm: Llm, server: ScriptedServer) -> None:
    result = llm.run(server.base_url.replace("http://", "https://"))
    assert result.failed.kind == "tls"
    assert result.of(StreamStatus) == []


def test_connect_timeout(llm: Llm, full_backlog_port: int) -> None:
    result = llm.run(f"http://127.0.0.1:{full_backlog_port}/v1", idle_timeout_s=0.2)
    assert result.failed.kind == "connect_timeout"
    assert len(result.of(StreamStatus)) == 2


def test_idle_timeout_after_a_token(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(Reply(body=[content("slow"), Pause(3)]))
    result = llm.run(server.base_url, idle_timeout_s=0.3)
    assert result.failed.kind == "idle_timeout" and result.failed.content == "slow"
    assert "0.3 s" in result.failed.message


def test_first_byte_deadline_before_the_headers_is_crossed_both_ways(llm: Llm, server: ScriptedServer) -> None:
    # llama.cpp sends nothing, not even headers, while it reads the prompt.
    def slow_first_byte(body: dict[str, Any]) -> Reply:
        time.sleep(1.0)
        return text_reply("late")

    server.handler = slow_first_byte
    result = llm.run(server.base_url, idle_timeout_s=0.2, first_byte_timeout_s=0.3)
    assert result.failed.kind == "first_byte_timeout"
    assert "did not start answering within 0.3 s" in result.failed.message
    assert "first_byte_timeout_s" in result.failed.message
    # the same slow first byte, within the deadline: the idle timeout does not apply before it
    result = llm.run(server.base_url, idle_timeout_s=0.2, first_byte_timeout_s=8.0)
    assert result.done.content == "late"


def test_keep_alive_comments_are_no_progress_for_either_deadline(llm: Llm, server: ScriptedServer) -> None:
    comments = [item for _ in range(40) for item in (b": keep-alive\n\n", Pause(0.05))]
    server.enqueue(Reply(body=comments + list(text_reply("never").body)))
    assert llm.run(server.base_url, first_byte_timeout_s=0.5).failed.kind == "first_byte_timeout"
    first = sse_event({"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": None}]})
    server.enqueue(Reply(body=[first, *comments, *text_reply("b").body]))
    failed = llm.run(server.base_url, idle_timeout_s=0.5, first_byte_timeout_s=8.0).failed
    assert failed.kind == "idle_timeout" and failed.content == "a"


def test_a_pause_after_the_first_event_is_held_to_the_idle_timeout(llm: Llm, server: ScriptedServer) -> None:
    first = sse_event({"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": None}]})
    server.enqueue(Reply(body=[first, Pause(1.5), *text_reply("b").body]))
    failed = llm.run(server.base_url, idle_timeout_s=0.3, first_byte_timeout_s=8.0).failed
    assert failed.kind == "idle_timeout" and failed.content == "a"


def test_400_shows_the_providers_message(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(error_reply(400, "messages[0].content must be a string"))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "bad_request"
    assert "messages[0].content must be a string" in failed.message
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [401, 403])
def test_auth_names_the_variable(llm: Llm, server: ScriptedServer, status: int) -> None:
    server.enqueue(error_reply(status, "invalid api key"), error_reply(status, "no key"))
    with_key = llm.run(server.base_url, api_key_env=TEST_KEY_ENV).failed
    assert with_key.kind == "auth" and TEST_KEY_ENV in with_key.message
    assert TEST_KEY not in with_key.message
    unset = llm.run(server.base_url, api_key_env="DASHFLOAT_TEST_UNSET_VARIABLE").failed
    assert unset.kind == "auth" and "DASHFLOAT_TEST_UNSET_VARIABLE is not set" in unset.message


def test_404_names_the_model_and_url(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(error_reply(404, "model not found"))
    failed = llm.run(server.base_url, model="gpt-nonexistent").failed
    assert failed.kind == "not_found"
    assert "gpt-nonexistent" in failed.message and f"{server.base_url}/chat/completions" in failed.message


def test_429_is_retried_with_retry_after_then_succeeds(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(error_reply(429, "slow down", {"Retry-After": "0.05"}), text_reply("finally"))
    result = llm.run(server.base_url)
    assert result.done.content == "finally"
    (status,) = result.of(StreamStatus)
    assert ("rate limited (429)" in status.text and "0.1 s" in status.text) or "0.0 s" in status.text
    assert len(server.requests) == 2


def test_429_three_times_reports_rate_limited(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(*[error_reply(429, "slow down", {"Retry-After": "0"}) for _ in range(3)])
    result = llm.run(server.base_url)
    assert result.failed.kind == "rate_limited" and len(server.requests) == 3
    assert len(result.of(StreamStatus)) == 2


def test_429_with_a_long_retry_after_is_not_waited_out(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(error_reply(429, "quota", {"Retry-After": "120"}))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "rate_limited" and "120 s" in failed.message
    assert len(server.requests) == 1


def test_5xx_retried_then_success_and_then_reported(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(error_reply(503, "warming up", {"Retry-After": "0"}), text_reply("up"))
    assert llm.run(server.base_url).done.content == "up"
    server.enqueue(*[error_reply(500, "boom", {"Retry-After": "0"}) for _ in range(3)])
    failed = llm.run(server.base_url).failed
    assert failed.kind == "server_error" and "500" in failed.message


def test_dropped_before_any_token_is_retried(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(Reply(body=[Drop()]), text_reply("second try"))
    assert llm.run(server.base_url).done.content == "second try"


def test_never_retried_after_a_token(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(Reply(body=[content("partial"), Drop()]), text_reply("must not be used"))
    result = llm.run(server.base_url)
    assert result.failed.kind == "truncated" and result.failed.content == "partial"
    assert len(server.requests) == 1 and result.of(StreamStatus) == []


def _call_fragment(index: int, arguments: str, call_id: str = "", name: str = "") -> bytes:
    item: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        item.update(id=call_id, type="function", function={"name": name, "arguments": arguments})
    return sse_event({"choices": [{"index": 0, "delta": {"tool_calls": [item]}, "finish_reason": None}]})


def test_a_call_cut_off_by_the_failure_says_so_and_keeps_what_came(llm: Llm, server: ScriptedServer) -> None:
    # Its row showed `write_file {}`: what had come of the arguments was dropped for the canonical "{}".
    partial = json.dumps({"path": "notes.md", "content": "# Notes\n" + "a line\n" * 20})[:120]
    broken = '{"path": "a.txt", oops}'  # complete but malformed: the model's mistake, not the failure's
    body: list[bytes | Drop] = [
        content("Writing."),
        _call_fragment(0, '{"path": "README.md"}', "c0", "read_file"),
        _call_fragment(1, broken, "c1", "read_file"),
        _call_fragment(2, "", "c2", "write_file"),
        *[_call_fragment(2, partial[i : i + 30]) for i in range(0, len(partial), 30)],
        Drop(),
    ]
    server.enqueue(Reply(body=body))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "truncated"
    ok, malformed, cut = failed.tool_calls
    assert ok.args is not None and not ok.cut and ok.written == ""
    assert (malformed.cut, malformed.written, malformed.arguments) == (False, broken, "{}")
    assert "not valid JSON" in (malformed.error or "")
    assert (cut.cut, cut.written, cut.arguments, cut.args) == (True, partial, "{}", None)
    assert cut.error == f"its arguments were cut off after {len(partial)} characters: {partial[:80]!r}…"


def test_html_page_is_not_sse(llm: Llm, server: ScriptedServer) -> None:
    html = b"<!doctype html><html><body>Welcome to nginx</body></html>"
    server.enqueue(Reply(headers={"Content-Type": "text/html"}, body=[html]))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "not_sse" and "HTML page" in failed.message and "/v1" in failed.message


def test_json_error_with_status_200_is_not_sse(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(Reply(headers={"Content-Type": "application/json"}, body=[b'{"error": {"message": "no tools"}}']))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "not_sse" and "no tools" in failed.message


def test_malformed_frame(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(Reply(body=[content("ok "), b"data: {not json\n\n"]))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "malformed_frame" and failed.content == "ok "


def test_stream_options_rejected_is_retried_without_and_remembered(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(
        error_reply(400, "Unrecognized request argument supplied: stream_options"), text_reply("a"), text_reply("b")
    )
    result = llm.run(server.base_url)
    assert result.done.content == "a"
    assert "stream_options" in result.of(StreamStatus)[0].text
    assert llm.run(server.base_url).done.content == "b"
    first, retried, later = server.requests
    assert "stream_options" in first and "stream_options" not in retried and "stream_options" not in later


def test_cancel_closes_the_connection_and_keeps_the_partial_content(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(Reply(body=[content("part one, "), content("part two"), Pause(30)]))
    request_id = llm.start(server.base_url)
    seen = ""
    while seen != "part one, part two":
        message = llm.channel.recv()
        assert isinstance(message, ContentDelta)
        seen += message.text
    sent = time.monotonic()
    llm.channel.send(CancelStream(request_id))
    result = llm.collect(request_id, timeout_s=5)
    answered_s = time.monotonic() - sent
    assert result.failed.kind == "cancelled" and result.failed.content == "part one, part two"
    assert server.disconnected.wait(5)
    # Not a speed assertion: proof that cancel did not wait for the 30 s pause.
    assert answered_s < 5


def test_cancel_during_retry_backoff(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(error_reply(429, "wait", {"Retry-After": "20"}))
    request_id = llm.start(server.base_url)
    # Retry-After 20 s is within the cap: the worker waits, announced by a status.
    status = llm.channel.recv()
    assert isinstance(status, StreamStatus)
    llm.channel.send(CancelStream(request_id))
    assert llm.collect(request_id, timeout_s=5).failed.kind == "cancelled"
    assert len(server.requests) == 1


def test_cancel_of_an_unknown_request_is_ignored(llm: Llm, server: ScriptedServer) -> None:
    llm.channel.send(CancelStream(987654))
    server.enqueue(text_reply("still fine"))
    assert llm.run(server.base_url).done.content == "still fine"


@pytest.mark.parametrize("shape", ["openai", "vllm", "llamacpp"])
def test_each_servers_context_exceeded_error_is_its_own_kind(llm: Llm, server: ScriptedServer, shape: str) -> None:
    server.enqueue(WINDOW_ERRORS[shape](9000, 8192))
    failed = llm.run(server.base_url).failed
    assert failed.kind == "context_exceeded"
    assert "larger than the model's context window" in failed.message and "/compact" in failed.message
    assert len(server.requests) == 1  # not retried by the stream: the agent compacts first


def test_other_context_exceeded_shapes(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(
        error_reply(400, "prompt is too long: 210000 tokens > 200000 maximum"),
        error_reply(413, "Request Entity Too Large"),
        Reply(body=[sse_event({"error": {"message": "exceeded max context length by 12 tokens"}})]),
        error_reply(400, "messages[0].content must be a string"),
    )
    kinds = [llm.run(server.base_url).failed.kind for _ in range(4)]
    assert kinds == ["context_exceeded", "context_exceeded", "context_exceeded", "bad_request"]


def test_lm_studios_empty_200_is_an_empty_answer_for_the_agent_to_judge(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(WINDOW_ERRORS["lmstudio"](9000, 8192))
    terminal = llm.run(server.base_url).terminal
    assert isinstance(terminal, StreamDone) and terminal.content == "" and terminal.tool_calls == []


NOT_HTTP_ANSWERS = {
    "another protocol": b"SSH-2.0-OpenSSH_9.6\r\n",
    "a status line too long": b"HTTP/1.1 200 " + b"O" * 70_000 + b"\r\n\r\n",
    "a header line too long": b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n",
    "too many headers": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(200)) + b"\r\n",
}


@contextlib.contextmanager
def raw_listener(answer: Callable[[socket.socket], None]) -> Iterator[int]:
    """A listener on 127.0.0.1 that hands every connection it accepts to ``answer`` (on its own thread); its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            answer(conn)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


@pytest.fixture(params=sorted(NOT_HTTP_ANSWERS))
def not_http_port(request: pytest.FixtureRequest) -> Iterator[int]:
    """A listener that answers every request with bytes that are no HTTP answer, then closes."""
    answer = NOT_HTTP_ANSWERS[request.param]

    def answer_once(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            conn.sendall(answer)

    with raw_listener(answer_once) as port:
        yield port


def test_an_answer_that_is_not_http_says_so_and_is_not_retried(llm: Llm, not_http_port: int) -> None:
    # Found by review: another program on the port (an SSH server), a status or header line over http.client's
    # bound or more headers than it takes read as "closed the connection before answering: try again", three times.
    result = llm.run(f"http://127.0.0.1:{not_http_port}/v1")
    assert result.failed.kind == "not_sse"
    assert result.failed.message == (
        f"the server at 127.0.0.1:{not_http_port} did not answer in HTTP (or sent headers past what DashFloat reads): "
        "check base_url (the port may be another program's)."
    )
    assert result.of(StreamStatus) == []


ENDLESS_HEADS = {
    "headers dribbled": (b"HTTP/1.1 200 OK\r\nX-Slow: ", b"a"),
    "endless 100 Continue": (b"", b"HTTP/1.1 100 Continue\r\n\r\n"),
}


@pytest.fixture(params=sorted(ENDLESS_HEADS))
def endless_head_port(request: pytest.FixtureRequest) -> Iterator[int]:
    """A listener that never finishes the answer's head: a byte of a header at a time, or one 100 Continue after
    another, each well within the read timeout."""
    first, again = ENDLESS_HEADS[request.param]
    stop = threading.Event()

    def dribble(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            try:
                conn.sendall(first)
                while not stop.wait(0.05):
                    conn.sendall(again)
            except OSError:
                return

    def dribble_aside(conn: socket.socket) -> None:
        threading.Thread(target=dribble, args=(conn,), daemon=True).start()

    with raw_listener(dribble_aside) as port:
        yield port
        stop.set()


def test_an_answer_head_that_never_ends_meets_the_first_byte_deadline(llm: Llm, endless_head_port: int) -> None:
    # Found by review: every read came within the timeout, so only the agent's watchdog ended it, 10 s past the
    # deadline, by killing the LLM process ("the model stream process died").
    result = llm.run(
        f"http://127.0.0.1:{endless_head_port}/v1", timeout_s=30.0, idle_timeout_s=0.5, first_byte_timeout_s=0.5
    )
    assert result.failed.kind == "first_byte_timeout"
    assert result.of(StreamStatus) == []
