"""The protocol's mcp: see dashfloat/protocol/__init__.py for the whole contract."""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from dashfloat.protocol._base import Message
from dashfloat.protocol._jobs import ExposeJob, KillJobs
from dashfloat.protocol._to_executor import ApplyRestore, CancelTool, PreviewRestore, PreviewTool, RunTool
from dashfloat.protocol._tool_results import McpToolResult
from dashfloat.protocol._ui_to_agent import FindPaths, Shutdown
from dashfloat.protocol._values import HookCommand

# ---- MCP client (ADR 0086): the servers the executor's MCP host runs, and what they offer.

McpServerState = Literal["stopped", "starting", "ready", "failed", "awaiting_approval"]
MCP_CALL_TIMEOUT_S: Final = 120.0
"""How long one MCP call may take before it is abandoned and its server stopped (``timeout_s`` changes it)."""


class McpServerConfig(msgspec.Struct, frozen=True, omit_defaults=True):
    """One ``[mcp.servers.NAME]``: a stdio server (``command``, ``args``, ``env``) or an HTTP one (``url``)."""

    name: str
    command: str = ""
    args: list[str] = []
    env: dict[str, str] = {}
    url: str = ""
    headers_env: dict[str, str] = {}
    """HTTP headers by name, each read from the environment variable named (the value never travels)."""
    start: Literal["lazy", "startup"] = "startup"
    sandbox: bool = True
    """Run a stdio server in the command sandbox (the session's; ``off`` sessions run it unconfined)."""
    network: bool = False
    """A sandboxed server may use the network (so may every one when the session has ``--network``)."""
    timeout_s: float = MCP_CALL_TIMEOUT_S
    """How long one call may take before it is abandoned (the server is then stopped, restarted at its next use)."""
    source: str = ""
    """Where it was configured (the user's config file, or a project file the person approved)."""


class McpTool(msgspec.Struct, frozen=True, omit_defaults=True):
    """One tool a server lists: its name, description and input schema (JSON text)."""

    name: str
    description: str = ""
    schema: str = "{}"


class McpServerInfo(msgspec.Struct, frozen=True, omit_defaults=True):
    """What /mcp shows of one server: its state, its tools, and why it failed."""

    name: str
    state: McpServerState = "stopped"
    tools: list[McpTool] = []
    error: str = ""
    pid: int | None = None
    """The server's process (a stdio server's bwrap, when sandboxed): tests and /mcp name it."""
    start: Literal["lazy", "startup"] = "startup"


class ConfigureMcp(Message, frozen=True):
    """Run these MCP servers (the executor starts its MCP host; replies McpServersListed as they change)."""

    servers: list[McpServerConfig]


class McpCall(Message, frozen=True):
    """Executor -> MCP host: call ``tool`` of ``server``; replies McpCallDone with the same ``call_id``."""

    call_id: str
    server: str
    tool: str
    arguments: str
    """A JSON object's text."""


class McpSearch(Message, frozen=True):
    """Executor -> MCP host: the tools matching ``query`` (lazy servers are started first); replies McpCallDone."""

    call_id: str
    query: str


class McpCancel(Message, frozen=True):
    """Executor -> MCP host: stop call ``call_id``; its McpCallDone then says it was cancelled."""

    call_id: str


class McpCallDone(Message, frozen=True):
    """MCP host -> executor: the result of ``call_id`` (``cancelled``: it was stopped before its answer)."""

    call_id: str
    result: McpToolResult
    cancelled: bool = False


class McpServersListed(Message, frozen=True):
    """Every configured MCP server's state and tools (sent whenever one changes)."""

    servers: list[McpServerInfo]


ExecutorToMcp = ConfigureMcp | McpCall | McpSearch | McpCancel | Shutdown
McpToExecutor = McpCallDone | McpServersListed


class RunHooks(Message, frozen=True):
    """Run an event's hooks that name no tool, ``payload`` on their stdin; replies HooksRan (ADR 0088)."""

    ref: int
    event: str
    hooks: list[HookCommand]
    payload: str


AgentToExecutor = (
    PreviewTool
    | RunTool
    | CancelTool
    | PreviewRestore
    | ApplyRestore
    | FindPaths
    | Shutdown
    | ConfigureMcp
    | KillJobs  # issue 36
    | RunHooks  # hooks (ADR 0088)
    | ExposeJob  # issue 36
)
