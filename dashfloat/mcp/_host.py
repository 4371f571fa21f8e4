"""The MCP host process: the SDK's asyncio client for every configured server, served over one pipe (ADR 0086).

The executor starts it (``python -m dashfloat.mcp FD``) when servers are configured and speaks ``ExecutorToMcp`` /
``McpToExecutor`` to it. Each server runs in a task of its own that holds the SDK's transport and session open until it
is stopped; a call is a task too, so a cancel, a timeout or a server's crash ends that call with a result, never a
hang. The executor has already wrapped a sandboxed stdio server's command line in bwrap, as a command's: this process
only starts what it is given, and hands the server's launcher the descriptors its line binds (``mcp_launch``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import signal
import threading
from collections import deque
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any, Final, assert_never

import msgspec

from dashfloat import procutil
from dashfloat.catalogue import mcp_name
from dashfloat.channel import Channel, PeerDied, ProtocolError
from dashfloat.mcp._results import failed, result_of, search_result
from dashfloat.mcp_launch import launch_fds
from dashfloat.protocol import (
    ConfigureMcp,
    ExecutorToMcp,
    McpCall,
    McpCallDone,
    McpCancel,
    McpSearch,
    McpServerConfig,
    McpServerInfo,
    McpServersListed,
    McpServerState,
    McpTool,
    McpToolResult,
    Shutdown,
)

if TYPE_CHECKING:
    from mcp import ClientSession

MCP_START_TIMEOUT_S: Final = 30.0
"""How long a server may take to start and list its tools; past it, it has failed."""
MCP_SERVER_MAX_DATA_BYTES: Final = 4 * 1024**3
"""``RLIMIT_DATA`` of this process and so of every server it starts (a command's is 8 GiB: ADR 0057)."""
MCP_STDERR_TAIL_BYTES: Final = 2048
"""The end of a server's stderr kept to say why it failed."""
MCP_TOOLS_MAX: Final = 1000
"""Tools listed per server at most (the listing's pages stop there)."""
MCP_PROCESS_NAME: Final = "dashfloat-mcp"


class ServerDown(Exception):
    """A server could not be started, or died: ``str()`` says why, for the model and /mcp."""


class StderrTail:
    """A server's stderr: a pipe read on a thread into its last MCP_STDERR_TAIL_BYTES (the rest is dropped). With
    ``fds``, a socket instead, over which they go first: the sandboxed server's launcher takes them (``mcp_launch``)."""

    def __init__(self, fds: list[int] | None = None) -> None:
        if fds:
            import socket

            ours, theirs = socket.socketpair()
            socket.send_fds(ours, [b"\0"], fds)  # queued before the server starts: its launcher's first read
            read, write = ours.detach(), theirs.detach()
        else:
            read, write = os.pipe()
        self.file = os.fdopen(write, "w")
        self._tail: deque[bytes] = deque()
        self._size = 0
        threading.Thread(target=self._read, args=(read,), daemon=True).start()

    def _read(self, fd: int) -> None:
        with open(fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(4096):
                self._tail.append(chunk)
                self._size += len(chunk)
                while self._size - len(self._tail[0]) >= MCP_STDERR_TAIL_BYTES:
                    self._size -= len(self._tail.popleft())

    def text(self) -> str:
        """The last lines it wrote, on one line."""
        data = b"".join(self._tail)[-MCP_STDERR_TAIL_BYTES:]
        return " ".join(data.decode(errors="replace").split())[-500:]


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (a walk of /proc: only at a server's start)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat[stat.rindex(b")") + 2 :].split()[1]) == pid:
                found.add(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2 :][:1] not in (b"Z", b"X")


def _why(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_why(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class Server:
    """One configured server: started on demand, in a task that keeps its session open until it stops."""

    def __init__(self, host: Host, config: McpServerConfig) -> None:
        self.host = host
        self.config = config
        self.state: McpServerState = "stopped"
        self.tools: list[McpTool] = []
        self.error = ""
        self.pid: int | None = None
        self.session: ClientSession | None = None
        self.task: asyncio.Task[None] | None = None
        self.up = asyncio.Event()
        self.stop = asyncio.Event()
        self.stderr: StderrTail | None = None

    def info(self) -> McpServerInfo:
        return McpServerInfo(
            self.config.name, self.state, self.tools, self.error, self.pid if self.state != "stopped" else None,
            start=self.config.start,
        )  # fmt: skip

    def start(self, say: bool = True) -> None:
        self.state, self.error = "starting", ""
        self.up, self.stop = asyncio.Event(), asyncio.Event()
        self.task = asyncio.create_task(self._run())
        if say:
            self.host.notify()

    async def ensure(self) -> ClientSession:
        """The session, the server started first if it is not running (a crashed one is started afresh)."""
        if self.session is not None and self.pid is not None and not _alive(self.pid):
            await self.halt(f"it exited{self._stderr()}", "failed")
        if self.task is None:
            self.start()
        await self.up.wait()
        if self.session is None:
            raise ServerDown(self.error)
        return self.session

    async def halt(self, error: str, state: McpServerState) -> None:
        """Stop it (its process group killed at once) and say why; the next use starts it again."""
        task = self.task
        self.kill()
        if task is not None:
            self.stop.set()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(task), MCP_START_TIMEOUT_S)
        self.state, self.error = state, error
        self.host.notify()

    def kill(self) -> None:
        if self.pid is not None:
            procutil.kill_group(self.pid)  # the SDK started it as a session leader: its whole group goes

    def _stderr(self) -> str:
        tail = self.stderr.text() if self.stderr is not None else ""
        return f" (its stderr ends: {tail})" if tail else ""

    async def _run(self) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        config = self.config
        try:
            async with contextlib.AsyncExitStack() as stack:
                if config.url:
                    from mcp.client.streamable_http import streamablehttp_client

                    headers = {name: os.environ.get(var, "") for name, var in config.headers_env.items()}
                    read, write, _ = await stack.enter_async_context(streamablehttp_client(config.url, headers))
                else:
                    self.stderr = StderrTail(launch_fds(config.args, self.host.held))
                    params = StdioServerParameters(command=config.command, args=config.args, env=config.env or None)
                    async with self.host.spawning:  # one start at a time: its process is the child that is new
                        before = _children(os.getpid())
                        read, write = await stack.enter_async_context(stdio_client(params, errlog=self.stderr.file))
                        self.pid = min(_children(os.getpid()) - before, default=None)
                    self.stderr.file.close()  # the server holds its copy: our reader sees EOF when it exits
                session = await stack.enter_async_context(ClientSession(read, write))
                await asyncio.wait_for(self._list(session), MCP_START_TIMEOUT_S)
                self.session, self.state = session, "ready"
                self.host.notify()
                self.up.set()
                await self.stop.wait()
        except TimeoutError:
            self.state, self.error = "failed", f"it did not list its tools within {MCP_START_TIMEOUT_S:g} s"
        except Exception as exc:
            self.state, self.error = "failed", f"it could not start: {_why(exc)}{self._stderr()}"
        finally:
            self.kill()
            self.session, self.task = None, None
            self.up.set()
            self.host.notify()

    async def _list(self, session: ClientSession) -> None:
        await session.initialize()
        tools: list[McpTool] = []
        cursor: str | None = None
        while len(tools) < MCP_TOOLS_MAX:
            page = await session.list_tools(cursor) if cursor else await session.list_tools()
            for tool in page.tools:
                schema = msgspec.json.encode(tool.inputSchema).decode()
                tools.append(McpTool(tool.name, tool.description or "", schema))
            cursor = page.nextCursor
            if not cursor:
                break
        self.tools = tools[:MCP_TOOLS_MAX]


class Host:
    """Every configured server, the calls running, and the pipe to the executor."""

    def __init__(self, channel: Channel[ExecutorToMcp], held: frozenset[int] = frozenset()) -> None:
        self.channel = channel
        self.held = held
        """The executor's descriptors passed to us for the sandboxed servers' bwrap lines (``mcp_launch``)."""
        self.servers: dict[str, Server] = {}
        self.calls: dict[str, asyncio.Future[McpToolResult]] = {}
        self.answering: set[asyncio.Future[None]] = set()
        self.spawning = asyncio.Lock()

    def notify(self) -> None:
        self.send(McpServersListed([s.info() for s in self.servers.values()]))

    def send(self, message: McpServersListed | McpCallDone) -> None:
        with contextlib.suppress(PeerDied):  # the executor is gone: the reader thread ends us
            self.channel.send(message)

    def configure(self, configs: list[McpServerConfig]) -> None:
        for config in configs:
            if config.name not in self.servers:
                self.servers[config.name] = Server(self, config)
        for server in self.servers.values():
            if server.config.start == "startup" and server.task is None and server.state == "stopped":
                server.start(say=False)
        self.notify()  # once, every startup server starting already: never "stopped" before it

    def begin(self, message: McpCall | McpSearch) -> None:
        work = self.call(message) if isinstance(message, McpCall) else self.search(message.query)
        call = self.calls[message.call_id] = asyncio.ensure_future(work)
        answer = asyncio.ensure_future(self._answer(message.call_id, call))
        self.answering.add(answer)  # held: the loop keeps only a weak reference to a task
        answer.add_done_callback(self.answering.discard)

    async def _answer(self, call_id: str, call: asyncio.Future[McpToolResult]) -> None:
        """The call's one McpCallDone, whatever happened to it (a cancel before it even began included)."""
        cancelled = False
        try:
            result = await call
        except asyncio.CancelledError:
            result, cancelled = failed("cancelled"), True
        except Exception as exc:  # a bug of ours or the SDK's: the model reads it, the executor goes on
            result = failed(f"the MCP call failed: {_why(exc)}")
        finally:
            self.calls.pop(call_id, None)
        self.send(McpCallDone(call_id, result, cancelled=cancelled))

    async def search(self, query: str) -> McpToolResult:
        for server in self.servers.values():
            if server.task is None and server.state != "ready":
                server.start()  # a lazy one, or one that failed: a search is a use, so it is started (again)
        await asyncio.gather(*(s.up.wait() for s in self.servers.values()))
        return search_result([s.info() for s in self.servers.values()], query)

    async def call(self, message: McpCall) -> McpToolResult:
        server = self.servers.get(message.server)
        if server is None:
            return failed(f"no MCP server is named {message.server!r} (servers: {', '.join(self.servers) or 'none'})")
        name = mcp_name(message.server, message.tool)
        try:
            session = await server.ensure()
        except ServerDown as exc:
            return failed(f"MCP server {message.server} is not running: {exc}; it is started again at the next call")
        tool = next((t for t in server.tools if mcp_name(server.config.name, t.name) == name), None)
        if tool is None:
            listed = ", ".join(mcp_name(server.config.name, t.name) for t in server.tools[:30])
            return failed(f"MCP server {message.server} has no tool {message.tool!r}; its tools: {listed}")
        arguments: Any = msgspec.json.decode(message.arguments)
        from mcp.shared.exceptions import McpError
        from mcp.types import CONNECTION_CLOSED

        timeout = server.config.timeout_s
        try:
            result = await asyncio.wait_for(session.call_tool(tool.name, arguments), timeout)
        except TimeoutError:
            await server.halt(f"a call did not answer within {timeout:g} s (stopped)", "stopped")
            return failed(
                f"MCP server {message.server} did not answer within {timeout:g} s: the call was abandoned and the "
                "server stopped; it is started afresh at the next call"
            )
        except McpError as exc:
            if exc.error.code != CONNECTION_CLOSED:
                return failed(f"MCP server {message.server}: {exc.error.message}")
            await server.halt(f"it crashed during a call{server._stderr()}", "failed")
            return failed(
                f"MCP server {message.server} crashed during the call{server._stderr()}; nothing is known of what it "
                "did. It is started again at the next call"
            )
        return result_of(result.model_dump(mode="json", by_alias=True))

    def cancel(self, call_id: str) -> None:
        task = self.calls.get(call_id)
        if task is not None:
            task.cancel()

    def kill_all(self) -> None:
        for server in self.servers.values():
            server.kill()


def _read_pipe(channel: Channel[ExecutorToMcp], loop: asyncio.AbstractEventLoop, inbox: asyncio.Queue[Any]) -> None:
    """The pipe, read on a thread (the SDK owns the loop): each message handed to the loop; None when it closed."""
    while True:
        try:
            message: ExecutorToMcp | None = channel.recv()
        except PeerDied:
            message = None
        except ProtocolError:
            continue
        loop.call_soon_threadsafe(inbox.put_nowait, message)
        if message is None or isinstance(message, Shutdown):
            return


async def _main(channel: Channel[ExecutorToMcp], held: frozenset[int]) -> None:
    host = Host(channel, held)
    inbox: asyncio.Queue[ExecutorToMcp | None] = asyncio.Queue()
    threading.Thread(target=_read_pipe, args=(channel, asyncio.get_running_loop(), inbox), daemon=True).start()
    try:
        while True:
            message = await inbox.get()
            match message:
                case None | Shutdown():
                    return
                case ConfigureMcp(servers=servers):
                    host.configure(servers)
                case McpCall() | McpSearch():
                    host.begin(message)
                case McpCancel(call_id=call_id):
                    host.cancel(call_id)
                case _:
                    assert_never(message)
    finally:
        host.kill_all()


def serve(conn: Connection, held: frozenset[int] = frozenset()) -> None:
    """The MCP host's main: serve the executor until it says Shutdown or its pipe closes; every server dies with it.
    ``held``: the descriptors the executor passed for the sandboxed servers' lines (handed to them at each start)."""
    procutil.die_with_parent()  # the executor gone (SIGKILL too): we go, and bwrap's --die-with-parent takes servers
    procutil.set_name(MCP_PROCESS_NAME)
    for sig in (signal.SIGTERM, signal.SIGTSTP):
        signal.signal(sig, signal.SIG_DFL)  # the executor's handlers are for its commands, not for us
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the agent's to handle
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    limit = MCP_SERVER_MAX_DATA_BYTES if hard == resource.RLIM_INFINITY else min(hard, MCP_SERVER_MAX_DATA_BYTES)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    logging.getLogger("mcp").setLevel(logging.CRITICAL)  # a server's bad line would log a traceback per line
    logging.getLogger("asyncio").setLevel(logging.ERROR)  # a server killed by its group is "unknown" to its watcher
    channel: Channel[ExecutorToMcp] = Channel(conn, ExecutorToMcp, "executor->mcp")
    try:
        asyncio.run(_main(channel, held))
    finally:
        os._exit(0)  # the SDK's tasks may still wait on killed servers: nothing is left to tidy
