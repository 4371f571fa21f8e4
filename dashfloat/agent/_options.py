"""What the agent process is started with (encoded with msgspec, never pickled)."""

from __future__ import annotations

import msgspec

from dashfloat.catalogue import EXEC_TIMEOUT_DEFAULT_S
from dashfloat.config import DEFAULT_COMPACT_AT_PERCENT, DEFAULT_IDLE_TIMEOUT_S, FIRST_BYTE_TIMEOUT_LOCAL_S
from dashfloat.hooks import HookSet, ProjectHooks
from dashfloat.mcp_project import ProjectMcp
from dashfloat.permissions import SourcedRule
from dashfloat.protocol import ApprovalMode, McpServerConfig, ProviderConfig, SandboxState


class AgentOptions(msgspec.Struct, frozen=True):
    """Start-up options of one agent process."""

    provider: ProviderConfig
    cwd: str
    approval: ApprovalMode = "ask"
    exec_timeout_s: float = EXEC_TIMEOUT_DEFAULT_S
    sandbox: SandboxState = msgspec.field(default_factory=SandboxState)
    """The command sandbox detected at launch (``--sandbox``, ``--network``); shown on the status bar."""
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    idle_timeout_from: str = ""
    """The setting the idle timeout came from (named when a stream times out); empty: the default."""
    first_byte_timeout_s: float = FIRST_BYTE_TIMEOUT_LOCAL_S
    """How long the first event of a stream may take (prompt processing); launch picks it by host."""
    compact_at_percent: int = DEFAULT_COMPACT_AT_PERCENT
    state_dir: str = ""
    """Where sessions and history live; empty disables persistence (tests, --no-session)."""
    resume_id: str = ""
    """A session id (or unambiguous prefix) to load at start: ``--resume``, or a restart after a crash."""
    replay: bool = True
    """Replay a resumed transcript to the UI (not after a crash restart: the UI still shows it)."""
    continue_latest: bool = False
    """``--continue``: load the newest session of this working directory."""
    restoring: bool = False
    """``--undo`` / ``--rewind``: the session is loaded only to restore it, never started anew."""
    rules: list[SourcedRule] = []
    """Saved permission rules: the user's file, then the project's deny rules (permission_files.py)."""
    rules_path: str = ""
    """The user's rule file, rewritten when /permissions removes or saves a rule (empty: never written)."""
    read_only_commands: bool = True
    """Run the read-only allowlist without asking (``[settings] read_only_commands``)."""
    notice: str = ""
    """A system entry to show once the agent is up (e.g. the demo provider's hint)."""
    mcp_servers: list[McpServerConfig] = []
    """The MCP servers to run (``[mcp.servers.NAME]``, and a project's the person approved: ADR 0086)."""
    mcp_project: ProjectMcp | None = None
    """The project's MCP file while it is not approved: ``/mcp approve`` approves and starts its servers."""
    hooks: HookSet = msgspec.field(default_factory=HookSet)
    """The hooks that run (ADR 0088): the user's config.toml's, then the project's once trusted."""
    project_hooks: ProjectHooks | None = None
    """The project's hooks file as read at launch, trusted or not (``/hooks trust`` trusts it)."""
