"""Connection reuse: one kept-alive connection carries a process's requests, on HTTP and on TLS, and an abort
still cuts a reused connection mid-stream (real server, real LLM process)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from dashfloat.llm._http import process_session
from dashfloat.llm._limits import BODY_END_MAX_BYTES, BODY_END_WAIT_S, READ_CHUNK_BYTES
from dashfloat.protocol import CancelStream, ContentDelta
from dashfloat.testing.sse_server import (
    BodyItem,
    Pause,
    Reply,
    ScriptedServer,
    sse_event,
    text_reply,
    tool_calls_reply,
)
from tests.llm.conftest import TLS_DIR, Llm


@pytest.fixture
def llm(route_llm: Llm) -> Llm:
    """Every test here runs through both routes to a local plain-HTTP server (http.client and requests)."""
    return route_llm


"""A self-signed certificate for 127.0.0.1 (test only; valid until 2126)."""

DONE = sse_event("[DONE]")
FINISH = sse_event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})


def _content(text: str) -> bytes:
    return sse_event({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})


@pytest.fixture
def tls_llm() -> Iterator[Llm]:
    """An LLM process that trusts the test certificate (the child reads it from its environment at spawn)."""
    previous = os.environ.get("REQUESTS_CA_BUNDLE")
    os.environ["REQUESTS_CA_BUNDLE"] = str(TLS_DIR / "cert.pem")
    try:
        process = Llm()
    finally:
        if previous is None:
            del os.environ["REQUESTS_CA_BUNDLE"]
        else:
            os.environ["REQUESTS_CA_BUNDLE"] = previous
    yield process
    process.close()


def _episodes_over_one_connection(llm: Llm, server: ScriptedServer) -> None:
    server.props = None  # the /props probe (a 404 here) goes first, on the same connection
    for n in range(3):
        server.enqueue(tool_calls_reply([(f"c{n}", "read_file", {"path": "a.txt"})]), text_reply(f"answer {n}"))
        assert llm.run(server.base_url).done.tool_calls[0].id == f"c{n}"
        assert llm.run(server.base_url).done.content == f"answer {n}"
    assert len(server.requests) == 6 and server.gets == ["/props"]
    assert server.connections == 1


def test_requests_of_a_process_share_one_http_connection(first_contact_llm: Llm, server: ScriptedServer) -> None:
    _episodes_over_one_connection(first_contact_llm, server)


def test_requests_of_a_process_share_one_tls_connection(tls_llm: Llm, tls_server: ScriptedServer) -> None:
    assert tls_server.base_url.startswith("https://")
    _episodes_over_one_connection(tls_llm, tls_server)


def _abort_on_a_reused_connection(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(text_reply("first"))
    assert llm.run(server.base_url).done.content == "first"
    server.enqueue(Reply(body=[_content("streaming"), Pause(60)]), text_reply("after"))
    request_id = llm.start(server.base_url, idle_timeout_s=120, first_byte_timeout_s=120)
    first = None
    while first is None or first.request_id != request_id:  # skip late answers to earlier tests
        assert llm.channel.poll(30)
        first = llm.channel.recv()
    assert isinstance(first, ContentDelta) and first.text == "streaming"
    assert server.connections == 1  # the stream runs on the kept-alive connection
    llm.channel.send(CancelStream(request_id))
    assert llm.collect(request_id).failed.kind == "cancelled"
    assert server.disconnected.wait(30)  # the server saw the connection cut, long before its 60 s pause ends
    assert llm.run(server.base_url).done.content == "after"
    assert server.connections == 2  # the cut connection was not put back: the next request made a new one


def test_an_abort_cuts_a_reused_http_connection_mid_stream(llm: Llm, server: ScriptedServer) -> None:
    _abort_on_a_reused_connection(llm, server)


def test_an_abort_cuts_a_reused_tls_connection_mid_stream(tls_llm: Llm, tls_server: ScriptedServer) -> None:
    _abort_on_a_reused_connection(tls_llm, tls_server)


def test_a_body_left_open_after_done_costs_its_connection_not_the_answer(llm: Llm, server: ScriptedServer) -> None:
    """BODY_END_WAIT_S crossed: the server keeps the body open after [DONE]; the answer still ends."""
    server.enqueue(Reply(body=[_content("kept open"), FINISH, DONE, Pause(BODY_END_WAIT_S * 20)]))
    assert llm.run(server.base_url, timeout_s=30).done.content == "kept open"
    server.enqueue(text_reply("next"))
    assert llm.run(server.base_url).done.content == "next"
    assert server.connections == 2


def test_a_long_tail_after_done_is_not_read_to_keep_the_connection(llm: Llm, server: ScriptedServer) -> None:
    """BODY_END_MAX_BYTES crossed: more than that after [DONE] and the connection is closed, not drained. (The
    socket read that brought [DONE] may have brought part of the tail too: the tail is longer than that read.)"""
    tail = b": " + b"x" * (BODY_END_MAX_BYTES + READ_CHUNK_BYTES + 1024) + b"\n\n"
    server.enqueue(Reply(body=[_content("long tail"), FINISH, DONE, tail]), text_reply("next"))
    assert llm.run(server.base_url).done.content == "long tail"
    assert llm.run(server.base_url).done.content == "next"
    assert server.connections == 2


def test_a_short_tail_after_done_is_read_and_the_connection_kept(llm: Llm, server: ScriptedServer) -> None:
    tail = b": " + b"x" * 1024 + b"\n\n"
    server.enqueue(Reply(body=[_content("short tail"), FINISH, DONE, tail]), text_reply("next"))
    assert llm.run(server.base_url).done.content == "short tail"
    assert llm.run(server.base_url).done.content == "next"
    assert server.connections == 1


def test_the_session_never_crosses_a_fork() -> None:
    parent = process_session()
    assert process_session() is parent  # one per process
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child answers whether it got a Session of its own, and leaves without teardown
        os.close(read_end)
        os.write(write_end, b"own" if process_session() is not parent else b"shared")
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as answer:
        assert answer.read() == b"own"
    os.waitpid(pid, 0)


def _dribble_after_done() -> Iterator[BodyItem]:
    yield _content("dribbled")
    yield FINISH + DONE
    for _ in range(100_000):  # a comment, a byte every 50 ms: each read comes well within BODY_END_WAIT_S
        yield Pause(0.05)
        yield b":"


def test_a_body_dribbled_after_done_is_given_up_after_body_end_wait_s_in_all(llm: Llm, server: ScriptedServer) -> None:
    """BODY_END_WAIT_S crossed in all, not per read: a server that keeps sending a byte at a time after [DONE]
    costs its connection, not the answer."""
    server.enqueue(Reply(body=_dribble_after_done()))
    assert llm.run(server.base_url, timeout_s=30).done.content == "dribbled"
    server.enqueue(text_reply("next"))
    assert llm.run(server.base_url).done.content == "next"
    assert server.connections == 2
