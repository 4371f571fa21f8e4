"""The agent's view of the MCP servers (ADR 0086): what the executor last said of them, the catalogue part the model
gets (every schema, or ``mcp_search`` when they would cost too much of the window), and /mcp's report. Pure."""

from __future__ import annotations

import msgspec

from dashfloat.catalogue import (
    MCP_SCHEMA_WINDOW_ASSUMED,
    MCP_SCHEMA_WINDOW_SHARE,
    mcp_catalogue,
    mcp_name,
    mcp_search_tool,
    mcp_tool_object,
    tokens_of,
)
from dashfloat.mcp_project import ProjectMcp, approve, merged, proposal
from dashfloat.protocol import (
    ConfigureMcp,
    McpServerConfig,
    McpServerInfo,
    McpServersListed,
    McpServerState,
    SystemEntry,
)


def _first_state(config: McpServerConfig) -> McpServerState:
    """What a server is before the executor lists it: a startup one is starting with the session."""
    return "starting" if config.start == "startup" else "stopped"


class McpSession:
    """The configured servers and their last listing; the catalogue's JSON is built once per listing and window."""

    def __init__(self, configs: list[McpServerConfig], project: ProjectMcp | None = None, state_dir: str = "") -> None:
        self.configs = configs
        self.servers = [McpServerInfo(c.name, _first_state(c), start=c.start) for c in configs]
        self.project = project
        """The project's MCP file while it waits for ``/mcp approve``."""
        self.state_dir = state_dir
        self._built: tuple[int | None, str] | None = None

    def proposed(self) -> list[SystemEntry]:
        """Said once at the start: the servers the project proposes and how to approve them."""
        return [SystemEntry(text=proposal(self.project), level="warning")] if self.project is not None else []

    def approve(self) -> SystemEntry:
        """/mcp approve: the project's servers join the session (the approval kept for this content of the file)."""
        project = self.project
        if project is None:
            return SystemEntry(
                text="no MCP servers wait for an approval (a project proposes them in .dashfloat/mcp.toml)"
            )
        if self.state_dir:
            approve(self.state_dir, project)
        self.project = None
        self.configs = merged(self.configs, project)
        known = {s.name for s in self.servers}
        self.servers += [
            McpServerInfo(c.name, _first_state(c), start=c.start) for c in self.configs if c.name not in known
        ]
        self._built = None
        names = ", ".join(s.name for s in project.servers)
        return SystemEntry(text=f"approved the MCP servers of {project.path} ({names}): they start now")

    def configure(self) -> ConfigureMcp | None:
        """What a fresh executor is told (None: no server is configured, no MCP host is started)."""
        return ConfigureMcp(self.configs) if self.configs else None

    def listed(self, message: McpServersListed) -> list[SystemEntry]:
        """The executor's new listing; a server that has just failed is said once, with why."""
        before = {s.name: s.state for s in self.servers}
        self.servers = message.servers
        self._built = None
        return [
            SystemEntry(text=f"MCP server {s.name} failed: {s.error}", level="warning")
            for s in message.servers
            if s.state == "failed" and before.get(s.name) != "failed"
        ]

    def tools_json(self, window: int | None) -> str:
        """``StartStream.extra_tools``: the MCP part of the catalogue as a JSON array ("" when none)."""
        if self._built is None or self._built[0] != window:
            tools, _ = mcp_catalogue(self.servers, window)
            self._built = (window, msgspec.json.encode(tools).decode() if tools else "")
        return self._built[1]

    def report(self, window: int | None) -> str:
        """/mcp: each server's state, its tools and what their schemas cost; whether the model gets them or the
        search."""
        if not self.configs:
            return "no MCP server is configured: add [mcp.servers.NAME] to config.toml (docs/tools.md, MCP servers)"
        tools, searched = mcp_catalogue(self.servers, window)
        sent = tokens_of(tools) if tools else 0
        budget = int((window or MCP_SCHEMA_WINDOW_ASSUMED) * MCP_SCHEMA_WINDOW_SHARE)
        all_schemas = sum(tokens_of(mcp_tool_object(s.name, t)) for s in self.servers for t in s.tools)
        how = (
            f"the model gets mcp_search ({tokens_of(mcp_search_tool(self.servers))} tokens) instead of every schema"
            if searched and all_schemas > budget
            else "the model gets every ready server's tools"
            + (" and mcp_search (a server is not ready)" if searched else "")
        )
        lines = [
            f"MCP servers: schemas {all_schemas} tokens, {int(MCP_SCHEMA_WINDOW_SHARE * 100)} % of the window is "
            f"{budget}; {how}; {sent} tokens go with each request"
        ]
        for server in self.servers:
            cost = sum(tokens_of(mcp_tool_object(server.name, t)) for t in server.tools)
            state = server.state + (f" (pid {server.pid})" if server.pid else "")
            lines.append(f"  {server.name}: {state}, {server.start}, {len(server.tools)} tools, {cost} tokens")
            if server.error:
                lines.append(f"    {server.error}")
            for tool in server.tools[:50]:
                first = tool.description.strip().splitlines()[0][:80] if tool.description.strip() else ""
                tokens = tokens_of(mcp_tool_object(server.name, tool))
                lines.append(f"    {mcp_name(server.name, tool.name)} ({tokens} tokens) {first}".rstrip())
            if len(server.tools) > 50:
                lines.append(f"    … {len(server.tools) - 50} more tools")
        return "\n".join(lines)
