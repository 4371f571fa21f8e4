"""MCP servers a project proposes (ADR 0086): ``<cwd>/.dashfloat/mcp.toml`` holds ``[mcp.servers.NAME]`` tables as
config.toml does, and its servers start only once the person approved that content (``/mcp approve``), remembered per
project and per SHA-256 in ``<state dir>/approved-mcp.json``. Pure but for those two small files."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import msgspec

from dashfloat import content_approvals
from dashfloat.config import ConfigError, McpTable, check_mcp, mcp_configs, read_toml
from dashfloat.protocol import McpServerConfig

PROJECT_MCP: Final = Path(".dashfloat") / "mcp.toml"
APPROVAL_FILENAME: Final = "approved-mcp.json"
APPROVALS_MAX_PROJECTS: Final = 1000
"""Projects whose approval is remembered; the oldest is forgotten first."""


class ProjectMcp(msgspec.Struct, frozen=True):
    """A project's MCP file as read: its servers, and the SHA-256 of what was parsed (what approval is given to)."""

    path: str
    servers: list[McpServerConfig]
    digest: str


def load_project_mcp(cwd: str) -> ProjectMcp | None:
    """``<cwd>/.dashfloat/mcp.toml``, or None when there is none; ConfigError names the file and the field."""
    path = Path(cwd) / PROJECT_MCP
    document = read_toml(path)
    if document is None:
        return None
    unknown = sorted(set(document) - {"mcp"})
    if unknown:
        raise ConfigError(f"{path}: {unknown[0]}: unknown field (the file holds [mcp.servers.NAME] tables)")
    try:
        table = msgspec.convert(document.get("mcp", {}), McpTable)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: mcp: {exc}") from exc
    check_mcp(path, table)
    import hashlib  # only for a project with such a file: not on every start's path

    digest = hashlib.sha256(msgspec.json.encode(table)).hexdigest()
    return ProjectMcp(str(path), mcp_configs(table, str(path)), digest)


def approved(state_dir: str, project: ProjectMcp) -> bool:
    """Whether the person approved exactly this content of this project's MCP file."""
    return content_approvals.is_approved(state_dir, APPROVAL_FILENAME, project.path, project.digest)


def approve(state_dir: str, project: ProjectMcp) -> None:
    """Remember that the person approved this content of this project's MCP file (atomically)."""
    content_approvals.remember(state_dir, APPROVAL_FILENAME, project.path, project.digest, APPROVALS_MAX_PROJECTS)


def merged(user: list[McpServerConfig], project: ProjectMcp | None) -> list[McpServerConfig]:
    """The user's servers, then the project's approved ones whose names the user's do not take."""
    names = {s.name for s in user}
    return [*user, *(s for s in (project.servers if project else []) if s.name not in names)]


def proposal(project: ProjectMcp) -> str:
    """What the person is told of an unapproved project file: each server's command line, and how to approve."""
    shown = "; ".join(f"{s.name}: {s.url or ' '.join([s.command, *s.args])}" for s in project.servers)
    return (
        f"{project.path} proposes MCP servers ({shown}): they start only once you approve them with /mcp approve "
        "(asked again when the file changes)"
    )
