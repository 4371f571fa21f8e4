"""The executor's side of the MCP host (ADR 0086): forked when servers are configured, each stdio server's command
line wrapped in the command sandbox here (by the commands' own builder: ``Sandbox.wrap``), calls relayed, and the host
and its servers stopped on every exit path."""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Final

import msgspec

from dashfloat import procutil
from dashfloat.channel import Channel, PeerDied, ProtocolError
from dashfloat.executor._confine import bounds_for
from dashfloat.executor._sandbox import Sandbox, Wrap
from dashfloat.executor.path_policy import Root, RootGone
from dashfloat.mcp_launch import launcher_argv
from dashfloat.protocol import (
    AgentToExecutor,
    CancelTool,
    ConfigureMcp,
    McpCall,
    McpCallArgs,
    McpCallDone,
    McpCancel,
    McpSearch,
    McpSearchArgs,
    McpServerConfig,
    McpServerInfo,
    McpServersListed,
    McpToExecutor,
    McpToolResult,
    RunTool,
    SandboxPolicy,
    Shutdown,
    ToolCancelled,
)

MCP_HOST_STOP_GRACE_S: Final = 0.5
"""How long the host has to exit after Shutdown before it is killed (its servers are killed either way)."""
NO_PREVIEW: Final = "No preview of its effects is possible: the MCP server alone decides what this call does."
PREVIEW_ARGUMENT_LINES: Final = 40
"""The arguments' lines a confirmation shows (the whole JSON is in its full view)."""


def server_argv(config: McpServerConfig, sandbox: Sandbox, root: Root) -> tuple[str, list[str], Wrap | None]:
    """The command line a stdio server starts with, and the Wrap whose descriptors it names (None: unconfined).

    Sandboxed (unless ``sandbox = false`` or the session is off) exactly as a command run with that network is: the
    line is ``Sandbox.wrap``'s, so the workspace is bound from the held root descriptor, the git metadata read-only
    from descriptors opened beneath it (``GitBinds``), every capability dropped, the deny list covered, the registries
    through the proxy under ``--network registries``. Only the session's network namespace is left out (the host
    starts the server, not the executor). It runs behind ``mcp_launch``'s launcher, which gets those descriptors from
    the host and sets the file-size bound. RootGone when the working directory was swapped; OSError without bwrap."""
    state = sandbox.state
    if not config.sandbox or state.mode == "off":
        return config.command, list(config.args), None
    root.check()
    wrap = sandbox.wrap(SandboxPolicy(network=config.network or state.network), root.fd, root.path, session=False)
    assert wrap is not None  # the session's mode is not off, and a call's policy never widens it to off
    line = wrap.argv("exec " + shlex.join([config.command, *config.args]), root.path, -1)
    command, args = launcher_argv(line, [wrap.root_fd, *wrap.fds], bounds_for(state.limits).max_file_bytes)
    return command, args, wrap


def describe_server(config: McpServerConfig | None, sandbox: Sandbox) -> str:
    """How a server runs, for its confirmation."""
    if config is None or config.url:
        return "over HTTP" if config is not None else "not configured"
    state = sandbox.state
    if not config.sandbox or state.mode == "off":
        return "NOT sandboxed: it runs with your full permissions"
    network = "with network" if config.network or state.network else "no network"
    if network == "no network" and state.network_mode == "registries" and sandbox.proxy is not None:
        network = "registries only (proxy)"
    return f"sandboxed ({sandbox.state.mode}, {network})"


def preview_lines(args: McpCallArgs, info: McpServerInfo | None, how: str) -> tuple[list[str], str]:
    """What the confirmation of an MCP call shows: the server, the tool, its description, the JSON arguments, and
    that no preview of its effects exists; and the whole of it."""
    from dashfloat.catalogue import mcp_name

    tool = next((t for t in info.tools if mcp_name(info.name, t.name) == args.name), None) if info else None
    described = tool.description.strip().splitlines() if tool is not None else []
    if tool is None:
        described = ["(its description is not known: the server has not listed it yet)"]
    try:
        pretty = msgspec.json.format(args.arguments, indent=2).splitlines()
    except msgspec.DecodeError:
        pretty = [args.arguments]
    head = [f"MCP server {args.server} · tool {tool.name if tool else args.tool} · {how}"]
    body = [*(f"  {line}" for line in described[:6]), "arguments:", *(f"  {line}" for line in pretty)]
    full = "\n".join([*head, *body, NO_PREVIEW])
    if len(pretty) > PREVIEW_ARGUMENT_LINES:
        body = body[: len(body) - len(pretty) + PREVIEW_ARGUMENT_LINES]
        body.append(f"  [… {len(pretty) - PREVIEW_ARGUMENT_LINES} more lines: see the full view]")
    return [*head, *body, NO_PREVIEW], full


class McpLink:
    """The MCP host process and what it last said of its servers."""

    def __init__(self, servers: list[McpServerConfig], sandbox: Sandbox, root: Root) -> None:
        self.configs = {s.name: s for s in servers}
        self.sandbox = sandbox
        self.root = root
        self.git_dirs: list[str] = []
        """The main git directories the servers' binds protect (``GitBinds.main_dirs``): swept after every call."""
        self.listed: dict[str, McpServerInfo] = {
            s.name: McpServerInfo(s.name, "starting" if s.start == "startup" else "stopped", start=s.start)
            for s in servers
        }  # a startup server is starting as soon as the host is
        self.process: subprocess.Popen[bytes] | None = None
        self.pidfd = -1
        """Readable once the host has exited (its exit code may be collected by the executor's ``reap_orphans``)."""
        self.channel: Channel[McpToExecutor] | None = None

    def start(self) -> None:
        """Start the host (a fresh interpreter: it inherits none of the executor's descriptors or handlers but its
        socket and those the servers' bwrap lines name) and give it the servers, each stdio one's line wrapped."""
        wrapped = []
        wraps: list[Wrap] = []  # held until the host has its copies: a Wrap's descriptors close when it goes
        for config in self.configs.values():
            if config.url:
                wrapped.append(config)
                continue
            try:
                command, args, wrap = server_argv(config, self.sandbox, self.root)
            except (OSError, RootGone) as exc:
                error = str(exc) if isinstance(exc, RootGone) else f"its sandbox cannot be built: {exc}"
                self.listed[config.name] = McpServerInfo(config.name, "failed", error=error, start=config.start)
                continue
            wraps += [wrap] if wrap is not None else []
            self.git_dirs = sorted({*self.git_dirs, *(wrap.main_git_dirs if wrap is not None else [])})
            wrapped.append(msgspec.structs.replace(config, command=command, args=args))
        held = sorted({fd for wrap in wraps for fd in (wrap.root_fd, *wrap.fds)})
        ours, theirs = socket.socketpair()
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "dashfloat.mcp", str(theirs.fileno()), ",".join(map(str, held))],
                pass_fds=[theirs.fileno(), *held],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # stderr: the executor's, the session's log
            )
        del wraps
        self.pidfd = os.pidfd_open(self.process.pid)
        self.channel = Channel(Connection(ours.detach()), McpToExecutor, "mcp->executor")
        self.send(ConfigureMcp(wrapped))

    def alive(self) -> bool:
        """Told by its pidfd, not its exit code: the executor's loop reaps every exited child (``reap_orphans``),
        this one too."""
        return self.process is not None and self.channel is not None and not wait([self.pidfd], 0)

    def sources(self) -> list[Connection | int]:
        """What to wait on beside the agent's pipe: the host's pipe and its exit."""
        if not self.alive():
            return []
        assert self.channel is not None
        return [self.channel.conn, self.pidfd]

    def send(self, message: ConfigureMcp | McpCall | McpSearch | McpCancel | Shutdown) -> McpServersListed | None:
        """Send to the host; a host found dead is reaped, and the listing that says so comes back."""
        if self.channel is None:
            return None
        try:
            self.channel.send(message)
        except PeerDied:
            return self.died()
        return None

    def read(self) -> list[McpServersListed | McpCallDone]:
        """Every message the host has sent (its death, when that is what woke us, becomes the listing that says so)."""
        messages: list[McpServersListed | McpCallDone] = []
        while self.channel is not None:
            try:
                if not self.channel.poll():
                    break
                message = self.channel.recv()
            except ProtocolError:
                continue
            except PeerDied:
                messages.append(self.died())
                break
            if isinstance(message, McpServersListed):
                self.listed.update({s.name: s for s in message.servers})
                message = self.listing()
            messages.append(message)
        if self.channel is not None and not self.alive():
            messages.append(self.died())
        return messages

    def settle(self, server: str, forward: Callable[[McpServersListed], None]) -> McpServerInfo | None:
        """``server`` as the host lists it once it is no longer starting (a confirmation names its tool's description):
        the host's messages are read meanwhile, at most until it has started or failed (MCP_START_TIMEOUT_S there)."""
        while (
            (info := self.listed.get(server)) is not None and info.state == "starting" and (sources := self.sources())
        ):
            wait(sources)
            for message in self.read():
                if isinstance(message, McpServersListed):
                    forward(message)
        return self.listed.get(server)

    def listing(self) -> McpServersListed:
        return McpServersListed(list(self.listed.values()))

    def died(self) -> McpServersListed:
        """The host is gone: its servers are killed by their groups, and every one is said to have failed."""
        reason = self._reap(0.0)
        self._kill_servers()
        for name, info in self.listed.items():
            if info.state in ("ready", "starting"):
                error = f"the MCP host process died ({reason}); it starts again at the next call"
                self.listed[name] = McpServerInfo(name, "failed", info.tools, error, start=info.start)
        return self.listing()

    def _kill_servers(self) -> None:
        for info in self.listed.values():
            if info.pid is not None:
                procutil.kill_group(info.pid)  # each stdio server leads a group of its own (the SDK's setsid)

    def stop(self) -> None:
        """Shutdown: ask, wait MCP_HOST_STOP_GRACE_S, kill; then whatever server is left, by its group."""
        if self.channel is not None:
            with contextlib.suppress(PeerDied):
                self.channel.send(Shutdown())
        self._reap(MCP_HOST_STOP_GRACE_S)
        self._kill_servers()
        self.sweep()

    def sweep(self) -> str:
        """Remove a ``commondir`` a server planted, as after a command (ADR 0067): git would take hooks and config from
        where it points. The note for the call's result; a server may plant one between calls: the stop sweeps too."""
        if not self.git_dirs or self.root.fd < 0:
            return ""
        from dashfloat.executor._git_meta import sweep_commondirs

        return sweep_commondirs(self.root.fd, self.git_dirs).replace("the command wrote it", "an MCP server wrote it")

    def _reap(self, grace_s: float) -> str:
        """The host gone for sure (killed after ``grace_s``), its pipe and pidfd closed: how it ended."""
        process, self.process = self.process, None
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        how = "gone"
        if process is not None:
            try:
                code = process.wait(grace_s)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
            how = f"exit code {code}" if code >= 0 else f"killed by signal {-code}"
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1
        return how

    def call(
        self,
        run: RunTool,
        agent: Channel[AgentToExecutor],
        handle: Callable[[AgentToExecutor | None], None],
        queue: Callable[[RunTool], None],
        forward: Callable[[McpServersListed], None],
    ) -> McpToolResult | ToolCancelled:
        """Run one MCP call (or search) to its result, serving the agent meanwhile: its CancelTool for this call
        cancels it, another RunTool waits its turn, anything else is ``handle``d as usual (a Shutdown ends us)."""
        args = run.args
        assert isinstance(args, McpCallArgs | McpSearchArgs)
        try:
            self.root.check()  # a swapped working directory: refused, as every tool is
        except RootGone as exc:
            return McpToolResult(text=str(exc), is_error=True, total_bytes=len(str(exc).encode()))
        request = (
            McpCall(run.call_id, args.server, args.tool, args.arguments)
            if isinstance(args, McpCallArgs)
            else McpSearch(run.call_id, args.query)
        )
        for _ in range(2):  # a host that died since the last call (its pidfd may lag its death) gets one successor
            if not self.alive():
                if self.process is not None:
                    forward(self.died())  # reaped, its servers killed, said so
                self.start()
            death = self.send(request)
            if death is None:
                break
            forward(death)  # it never got the call: nothing ran
        while True:
            sources = self.sources()
            if not sources:
                return _host_gone(self.listed)
            ready = wait([agent.conn, *sources])
            for message in self.read() if any(s in ready for s in sources) else []:
                if isinstance(message, McpCallDone):
                    if message.call_id == run.call_id:
                        return ToolCancelled() if message.cancelled else _noted(message.result, self.sweep())
                else:
                    forward(message)
            if agent.conn in ready:
                try:
                    incoming: AgentToExecutor | None = agent.recv()
                except ProtocolError:
                    incoming = None
                match incoming:
                    case CancelTool(call_id=call_id) if call_id == run.call_id:
                        self.send(McpCancel(call_id))
                    case RunTool():
                        queue(incoming)
                    case _:
                        handle(incoming)


def _noted(result: McpToolResult, note: str) -> McpToolResult:
    if not note:
        return result
    return msgspec.structs.replace(result, text=result.text + note, total_bytes=result.total_bytes + len(note.encode()))


def _host_gone(listed: dict[str, McpServerInfo]) -> McpToolResult:
    errors = "; ".join(sorted({i.error for i in listed.values() if i.error}))
    text = f"the MCP host process died during the call ({errors}); nothing is known of what it did"
    return McpToolResult(text=text, is_error=True, total_bytes=len(text.encode()))
