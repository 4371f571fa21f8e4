"""The executor serving MCP (ADR 0086), a real executor process forked as the agent forks it: it starts the host
when told the servers, passes on their listing, previews and runs MCP calls, and stops the host and its servers with
itself."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashfloat.agent import ForkWorkers
from dashfloat.channel import Channel
from dashfloat.executor._mcp_link import NO_PREVIEW
from dashfloat.protocol import (
    ConfigureMcp,
    ExecutorToAgent,
    McpCallArgs,
    McpSearchArgs,
    McpServerConfig,
    McpServersListed,
    McpToolResult,
    PreviewReady,
    PreviewTool,
    RunTool,
    Shutdown,
    ToolFailed,
    ToolFinished,
)
from tests.executor.conftest import gone

FAIL_SERVER = str(Path(__file__).with_name("fail_server.py"))
REPLY_TIMEOUT_S = 30.0


@pytest.fixture
def executor(tmp_path: Path) -> Iterator[Channel[ExecutorToAgent]]:
    worker = ForkWorkers(str(tmp_path), 5.0, log_path="", held_fds=[]).start_executor()
    yield worker.channel
    worker.stop()


def reply(channel: Channel[ExecutorToAgent], listed: list[McpServersListed]) -> ExecutorToAgent:
    """The next reply that is not a listing (listings go to ``listed``)."""
    while True:
        assert channel.poll(REPLY_TIMEOUT_S), "no reply from the executor"
        message = channel.recv()
        if not isinstance(message, McpServersListed):
            return message
        listed.append(message)


def test_without_servers_an_mcp_call_says_none_is_configured(executor: Channel[ExecutorToAgent]) -> None:
    call = McpCallArgs("mcp__x__y", "{}")
    executor.send(PreviewTool(call_id="p", args=call))
    preview = reply(executor, [])
    assert isinstance(preview, PreviewReady) and preview.error is not None and "no MCP server" in preview.error
    executor.send(RunTool(call_id="r", args=call))
    done = reply(executor, [])
    assert isinstance(done, ToolFinished) and isinstance(done.result, ToolFailed)


def test_the_executor_runs_the_host_previews_and_calls_and_stops_it_all(executor: Channel[ExecutorToAgent]) -> None:
    listed: list[McpServersListed] = []
    executor.send(ConfigureMcp([McpServerConfig("fail", sys.executable, [FAIL_SERVER])]))
    executor.send(PreviewTool(call_id="p1", args=McpCallArgs("mcp__fail__echo", '{"text": "hi"}')))
    preview = reply(executor, listed)
    assert isinstance(preview, PreviewReady) and preview.lines[0].startswith("MCP server fail · tool echo")
    assert preview.lines[-1] == NO_PREVIEW and preview.summary == "MCP fail"
    executor.send(PreviewTool(call_id="p2", args=McpCallArgs("mcp__other__x", "{}")))
    unknown = reply(executor, listed)
    assert isinstance(unknown, PreviewReady) and unknown.error == "no MCP server is named 'other' (servers: fail)"
    executor.send(RunTool(call_id="r1", args=McpCallArgs("mcp__fail__echo", '{"text": "hi"}')))
    done = reply(executor, listed)
    assert isinstance(done, ToolFinished) and done.result == McpToolResult(text="hi", total_bytes=2)
    executor.send(RunTool(call_id="r2", args=McpSearchArgs("picture")))
    found = reply(executor, listed)
    assert isinstance(found, ToolFinished) and "mcp__fail__picture" in str(found.result)
    [server] = {s.pid for message in listed for s in message.servers if s.state == "ready"}
    assert server is not None
    executor.send(Shutdown())
    assert gone(server)
