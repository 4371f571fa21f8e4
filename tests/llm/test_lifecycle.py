"""The process loop: Shutdown answers open streams, a dead agent ends the process, concurrent ids."""

from __future__ import annotations

from dashfloat.protocol import ContentDelta, Shutdown, StreamDone, StreamFailed
from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, sse_event, text_reply
from tests.llm.conftest import Llm


def test_shutdown_answers_the_open_stream_and_exits(server: ScriptedServer) -> None:
    delta = {"choices": [{"index": 0, "delta": {"content": "open"}, "finish_reason": None}]}
    server.enqueue(Reply(body=[sse_event(delta), Pause(30)]))
    process = Llm()
    request_id = process.start(server.base_url)
    assert isinstance(process.channel.recv(), ContentDelta)
    process.channel.send(Shutdown())
    answer = process.channel.recv()
    assert isinstance(answer, StreamFailed) and answer.request_id == request_id
    assert (answer.kind, answer.content) == ("cancelled", "open")
    process.process.join(5)
    assert process.process.exitcode == 0
    assert server.disconnected.wait(5)
    process.conn.close()


def test_the_agent_going_away_ends_the_process(server: ScriptedServer) -> None:
    server.enqueue(Reply(body=[Pause(30)]))
    process = Llm()
    process.start(server.base_url)
    assert server.wait_requests(1)
    process.conn.close()
    process.process.join(5)
    assert process.process.exitcode == 0
    assert server.disconnected.wait(5)


def test_two_streams_at_once_each_end_once(llm: Llm, server: ScriptedServer) -> None:
    server.enqueue(text_reply("slow one", chunk_size=2, delay_s=0.01), text_reply("fast"))
    first = llm.start(server.base_url)
    assert server.wait_requests(1)
    second = llm.start(server.base_url)
    terminals: dict[int, StreamDone] = {}
    content: dict[int, str] = {first: "", second: ""}
    while len(terminals) < 2:
        assert llm.channel.poll(10)
        message = llm.channel.recv()
        if isinstance(message, ContentDelta):
            content[message.request_id] += message.text
        elif isinstance(message, StreamDone):
            assert message.request_id not in terminals
            terminals[message.request_id] = message
    assert {terminals[first].content, terminals[second].content} == {"slow one", "fast"}
    assert content[first] == terminals[first].content and content[second] == terminals[second].content
