"""The MCP host with real servers (ADR 0086): mcp-server-git on a temporary repository, mcp-server-time, and one
written with the SDK for the failure cases, each started once for the module (an MCP start takes about a second),
sandboxed as the session's commands are. Driven through the executor's McpLink, as the executor drives it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from multiprocessing import Pipe
from pathlib import Path

import msgspec
import pytest

from dashfloat.catalogue import mcp_catalogue
from dashfloat.channel import Channel
from dashfloat.executor import detect_sandbox
from dashfloat.executor._mcp_link import McpLink, describe_server, preview_lines, server_argv
from dashfloat.executor._sandbox import Sandbox
from dashfloat.executor.path_policy import Root
from dashfloat.jsonvalue import JsonObject
from dashfloat.mcp import MCP_RESULT_MAX_BYTES
from dashfloat.mcp._host import MCP_SERVER_MAX_DATA_BYTES, MCP_TOOLS_MAX
from dashfloat.protocol import (
    AgentToExecutor,
    CancelTool,
    McpCallArgs,
    McpSearchArgs,
    McpServerConfig,
    McpServersListed,
    McpToolResult,
    RunTool,
    ToolCancelled,
    ToolResult,
)
from tests.executor.conftest import EXIT_WAIT_S, gone, within
from tests.python_in_sandbox import needs_python_in_sandbox

pytestmark = needs_python_in_sandbox

BIN = Path(sys.executable).parent
FAIL_SERVER = str(Path(__file__).with_name("fail_server.py"))
FLOOD = 200


def sandbox(mode: str = "workspace-write") -> Sandbox:
    state = detect_sandbox(mode, False, [], dict(os.environ))  # type: ignore[arg-type]
    return Sandbox.for_session(state, os.environ)


class Driver:
    """An McpLink and the agent's end of the executor's pipe: calls run as the executor runs them."""

    def __init__(self, link: McpLink) -> None:
        self.link = link
        ours, theirs = Pipe()
        self.agent_side = Channel[AgentToExecutor](ours, AgentToExecutor, "test")
        self.theirs = Channel[AgentToExecutor](theirs, AgentToExecutor, "agent->executor")
        self.handled: list[AgentToExecutor | None] = []
        self.forwarded: list[McpServersListed] = []
        self.ids = 0

    def call(self, args: McpCallArgs | McpSearchArgs) -> ToolResult:
        self.ids += 1
        run = RunTool(call_id=f"c{self.ids}", args=args)
        return self.link.call(run, self.theirs, self.handled.append, self.handled.append, self.forwarded.append)

    def tool(self, name: str, **arguments: object) -> McpToolResult:
        result = self.call(McpCallArgs(name, msgspec.json.encode(arguments).decode()))
        assert isinstance(result, McpToolResult)
        return result

    def pid(self, server: str) -> int:
        """The server's process, started first if it is not running."""
        if self.link.listed[server].state != "ready":
            assert not self.tool(f"mcp__{server}__echo", text="up").is_error
        pid = self.link.listed[server].pid
        assert pid is not None
        return pid


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("repo")
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    (path / "notes.txt").write_text("hello\n")
    return path


@pytest.fixture(scope="module")
def driver(repo: Path) -> Iterator[Driver]:
    os.environ["SECRET_FOR_TEST"] = "leaked"  # a server gets the SDK's few variables, never the whole environment
    servers = [
        McpServerConfig("git", str(BIN / "mcp-server-git"), ["--repository", str(repo)]),
        McpServerConfig("time", str(BIN / "mcp-server-time")),
        McpServerConfig("fail", sys.executable, [FAIL_SERVER], timeout_s=1.0),
        McpServerConfig("flood", sys.executable, [FAIL_SERVER], env={"FLOOD_TOOLS": str(FLOOD)}, start="lazy"),
        McpServerConfig("slow", sys.executable, [FAIL_SERVER], start="lazy"),  # hangs until cancelled
        McpServerConfig("many", sys.executable, [FAIL_SERVER], env={"FLOOD_TOOLS": str(MCP_TOOLS_MAX)}, start="lazy"),
    ]
    link = McpLink(servers, sandbox(), Root(str(repo)))
    link.start()
    try:
        yield Driver(link)
    finally:
        del os.environ["SECRET_FOR_TEST"]
        pids = [info.pid for info in link.listed.values() if info.pid is not None]
        link.stop()
        assert all(gone(pid) for pid in pids)


def test_the_real_git_server_reads_a_local_repository(driver: Driver, repo: Path) -> None:
    status = driver.tool("mcp__git__git_status", repo_path=str(repo))
    assert not status.is_error and "notes.txt" in status.text, status.text
    assert driver.link.listed["git"].state == "ready"
    assert {"git_status", "git_log", "git_diff"} <= {t.name for t in driver.link.listed["git"].tools}


def test_the_real_time_server_answers(driver: Driver) -> None:
    now = driver.tool("mcp__time__get_current_time", timezone="UTC")
    assert not now.is_error and msgspec.json.decode(now.text)["timezone"] == "UTC"
    wrong = driver.tool("mcp__time__get_current_time", timezone="Nowhere/City")
    assert wrong.is_error and "Nowhere/City" in wrong.text


def test_a_sandboxed_server_has_no_network_and_none_of_our_secrets(driver: Driver) -> None:
    said = driver.tool("mcp__fail__whoami").text
    assert "interfaces=lo " in said and "secret=-" in said, said


def test_a_server_maps_memory_up_to_its_bound_and_not_past_it(driver: Driver) -> None:
    below = MCP_SERVER_MAX_DATA_BYTES // 2**20 - 512  # the interpreter itself has some already
    assert driver.tool("mcp__fail__hog", mib=below).text == "mapped"
    assert driver.tool("mcp__fail__hog", mib=MCP_SERVER_MAX_DATA_BYTES // 2**20 + 1).text.startswith("refused")


def test_a_huge_result_is_capped_head_and_tail(driver: Driver) -> None:
    huge = driver.tool("mcp__fail__huge", size=1_000_000)
    assert huge.truncated and huge.total_bytes == 1_000_000
    assert len(huge.text.encode()) < MCP_RESULT_MAX_BYTES + 100 and "bytes cut from the middle" in huge.text


def test_an_image_is_named_with_its_size(driver: Driver) -> None:
    assert driver.tool("mcp__fail__picture").text == "[image: image/png, 70 bytes, not shown]"


def test_a_tool_error_and_an_unknown_tool_are_error_results(driver: Driver) -> None:
    assert driver.tool("mcp__fail__fail").is_error
    unknown = driver.tool("mcp__fail__nope")
    assert unknown.is_error and "has no tool 'nope'" in unknown.text and "mcp__fail__echo" in unknown.text
    assert "no MCP server is named 'nobody'" in driver.tool("mcp__nobody__x").text


def test_a_crash_mid_call_is_a_message_and_the_next_call_restarts_the_server(driver: Driver) -> None:
    before = driver.pid("fail")
    crashed = driver.tool("mcp__fail__crash")
    assert crashed.is_error and "crashed during the call" in crashed.text
    assert gone(before)
    again = driver.tool("mcp__fail__echo", text="again")
    assert again.text == "again" and driver.pid("fail") != before


def test_a_hang_is_abandoned_at_the_timeout_and_the_server_replaced(driver: Driver) -> None:
    before = driver.pid("fail")
    hung = driver.tool("mcp__fail__hang")
    assert hung.is_error and "did not answer within 1 s" in hung.text
    assert gone(before)
    assert driver.tool("mcp__fail__echo", text="after").text == "after" and driver.pid("fail") != before


def test_a_cancel_from_the_agent_ends_the_call_at_once(driver: Driver) -> None:
    driver.agent_side.send(CancelTool(call_id=f"c{driver.ids + 1}"))  # read while the call waits
    assert isinstance(driver.call(McpCallArgs("mcp__slow__hang", "{}")), ToolCancelled)


def test_two_hundred_tools_bring_the_search_and_the_search_finds_and_starts_a_lazy_server(driver: Driver) -> None:
    assert driver.link.listed["flood"].state == "stopped"  # lazy: not started until it is used
    found = driver.call(McpSearchArgs("flood tool number 123"))
    assert isinstance(found, McpToolResult)
    tools: list[JsonObject] = msgspec.json.decode(found.text)["tools"]
    assert tools[0]["name"] == "mcp__flood__flood_123" and "parameters" in tools[0]
    assert sum(t.name.startswith("flood_") for t in driver.link.listed["flood"].tools) == FLOOD
    catalogue, searched = mcp_catalogue(list(driver.link.listed.values()), 32_768)
    assert searched and [msgspec.convert(t, dict)["function"]["name"] for t in catalogue] == ["mcp_search"]
    assert driver.tool("mcp__flood__flood_123", value="v").text == "flood 123: v"


def test_a_server_listing_more_than_its_bound_is_listed_to_the_bound(driver: Driver) -> None:
    driver.call(McpSearchArgs("anything"))  # starts every lazy server
    many = driver.link.listed["many"]
    assert many.state == "ready" and len(many.tools) == MCP_TOOLS_MAX  # it lists its own tools and MCP_TOOLS_MAX more


@pytest.mark.parametrize("mode", ["workspace-write", "off"])
def test_servers_die_with_a_killed_host(mode: str, repo: Path) -> None:
    """SIGKILLed, the host cannot stop its servers: sandboxed, bwrap's --die-with-parent ends them; unsandboxed, the
    executor kills their groups once it sees the host gone."""
    link = McpLink([McpServerConfig("fail", sys.executable, [FAIL_SERVER])], sandbox(mode), Root(str(repo)))
    link.start()
    driver = Driver(link)
    assert driver.tool("mcp__fail__echo", text="up").text == "up"
    server = driver.pid("fail")
    assert link.process is not None
    os.kill(link.process.pid, signal.SIGKILL)
    # Wholly gone (its pidfd readable): a host killed while a call is on its way makes that call fail instead.
    assert within(lambda: not link.alive(), EXIT_WAIT_S)
    if mode == "workspace-write":
        assert gone(server)  # nobody killed it but bwrap, whose parent died
    # The next call finds the host dead: its servers' groups are killed, the failure said, a fresh host started.
    assert driver.tool("mcp__fail__echo", text="back").text == "back"
    assert gone(server) and driver.pid("fail") != server
    assert any(listed.servers[0].state == "failed" for listed in driver.forwarded)
    link.stop()


def test_calls_and_messages_that_come_during_a_call_wait_or_are_served(driver: Driver) -> None:
    """Another RunTool waits its turn, anything else is handled at once, a frame that does not decode is passed on
    as nothing (the executor says so), and a cancel for another call is not this call's."""
    queued = RunTool(call_id="later", args=McpCallArgs("mcp__fail__echo", '{"text": "later"}'))
    driver.agent_side.send(queued)
    driver.agent_side.send(CancelTool(call_id="another"))
    driver.agent_side.conn.send_bytes(b"\xc1")  # no msgpack
    assert driver.tool("mcp__fail__huge", size=10).text == "0123456789"
    assert any(r == queued for r in driver.handled)
    assert CancelTool(call_id="another") in driver.handled and None in driver.handled


def test_a_confirmation_waits_for_a_starting_server_to_name_its_tool(repo: Path) -> None:
    link = McpLink([McpServerConfig("fail", sys.executable, [FAIL_SERVER])], sandbox("off"), Root(str(repo)))
    link.start()
    forwarded: list[McpServersListed] = []
    info = link.settle("fail", forwarded.append)
    assert info is not None and info.state == "ready" and "echo" in {t.name for t in info.tools}
    lines, _ = preview_lines(McpCallArgs("mcp__fail__echo", "not json"), info, describe_server(None, sandbox()))
    assert lines[:4] == [
        "MCP server fail · tool echo · not configured",
        "  Say the text back.",
        "arguments:",
        "  not json",
    ]
    assert forwarded and link.settle("nobody", forwarded.append) is None
    link.stop()


def test_the_host_dying_during_a_call_is_the_calls_error(repo: Path) -> None:
    link = McpLink([McpServerConfig("fail", sys.executable, [FAIL_SERVER])], sandbox("off"), Root(str(repo)))
    link.start()
    driver = Driver(link)
    server = driver.pid("fail")
    assert link.process is not None
    host = link.process.pid
    driver.agent_side.send(CancelTool(call_id="not-this-one"))  # wakes the call's wait: then the host is killed
    os.kill(host, signal.SIGSTOP)  # holds the call unanswered until the kill

    def kill_host(message: AgentToExecutor | None) -> None:
        os.kill(host, signal.SIGKILL)

    dead = link.call(RunTool(call_id="x", args=McpCallArgs("mcp__fail__echo", "{}")), driver.theirs, kill_host,
                     driver.handled.append, driver.forwarded.append)  # fmt: skip
    assert isinstance(dead, McpToolResult) and dead.is_error and "died during the call" in dead.text
    assert gone(server)  # its group killed, though the host could not
    link.stop()
    link.stop()  # a second stop finds nothing to stop


def test_how_a_server_runs_is_said_and_its_command_line_wrapped(repo: Path) -> None:
    plain = McpServerConfig("s", "srv", ["--a"])
    boxed = sandbox()
    assert describe_server(McpServerConfig("h", url="http://h/mcp"), boxed) == "over HTTP"
    assert describe_server(plain, sandbox("off")) == describe_server(
        McpServerConfig("s", "srv", sandbox=False), boxed
    ) == "NOT sandboxed: it runs with your full permissions"  # fmt: skip
    assert describe_server(plain, boxed) == "sandboxed (workspace-write, no network)"
    assert (
        describe_server(McpServerConfig("s", "srv", network=True), boxed) == "sandboxed (workspace-write, with network)"
    )
    root = Root(str(repo))
    assert server_argv(plain, sandbox("off"), root) == ("srv", ["--a"], None)
    command, argv, wrap = server_argv(plain, boxed, root)
    assert wrap is not None and command == os.path.realpath(sys.executable)  # the launcher, then the commands' line
    line = argv[argv.index("--") + 1 :]
    assert line[0] == boxed.bwrap and line[-3:] == ["/bin/sh", "-c", "exec srv --a"] and "--share-net" not in line
    assert ["--bind-fd", str(root.fd), str(repo)] == line[line.index("--bind-fd") : line.index("--bind-fd") + 3]
    assert line[line.index("--cap-drop") : line.index("--cap-drop") + 2] == ["--cap-drop", "ALL"]
    assert "--die-with-parent" in line and "--share-net" in server_argv(McpServerConfig("s", "x", network=True), boxed,
                                                                        root)[1]  # fmt: skip
    no_bwrap = Sandbox(boxed.state, bwrap_error="bwrap is gone")
    link = McpLink([plain, McpServerConfig("h", url="http://127.0.0.1:9/mcp", start="lazy")], no_bwrap, Root(str(repo)))
    link.start()
    assert link.listed["s"].state == "failed"
    assert "its sandbox cannot be built: no bwrap to run: bwrap is gone" in link.listed["s"].error
    unreachable = Driver(link).tool("mcp__h__anything")
    assert unreachable.is_error and "MCP server h is not running" in unreachable.text
    link.stop()


def test_an_http_server_gets_its_headers_from_the_variables_named(repo: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    served = subprocess.Popen(
        [sys.executable, FAIL_SERVER], env={**os.environ, "HTTP_PORT": str(port)}, stderr=subprocess.DEVNULL
    )
    os.environ["MCP_TEST_TOKEN"] = "Bearer secret-from-env"
    try:
        config = McpServerConfig(
            "web", url=f"http://127.0.0.1:{port}/mcp", headers_env={"Authorization": "MCP_TEST_TOKEN"}, start="lazy"
        )
        link = McpLink([config], sandbox(), Root(str(repo)))
        link.start()
        driver = Driver(link)
        assert within(lambda: not driver.tool("mcp__web__echo", text="up").is_error, EXIT_WAIT_S)  # it listens
        assert driver.tool("mcp__web__header", key="authorization").text == "Bearer secret-from-env"
        link.stop()
    finally:
        del os.environ["MCP_TEST_TOKEN"]
        served.kill()
        served.wait()
