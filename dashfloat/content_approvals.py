"""What a person approved of a project's own files, per project and per content (a project's hooks, its MCP
servers): a small JSON table ``{file path: sha256}`` in DashFloat's state directory, newest last, bounded."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec


def _table(state_dir: str, filename: str) -> dict[str, str]:
    try:
        return msgspec.json.decode((Path(state_dir) / filename).read_bytes(), type=dict[str, str])
    except (OSError, msgspec.DecodeError):
        return {}  # no file, or a damaged one: nothing is approved (the next approval rewrites it)


def is_approved(state_dir: str, filename: str, path: str, digest: str) -> bool:
    """Whether the person approved exactly this content (``digest``) of the project file ``path``."""
    return bool(state_dir) and _table(state_dir, filename).get(path) == digest


def remember(state_dir: str, filename: str, path: str, digest: str, max_projects: int) -> None:
    """Remember the person's approval of this content of ``path`` (atomically); past ``max_projects`` the oldest
    approvals are forgotten first."""
    table = _table(state_dir, filename)
    table.pop(path, None)
    table[path] = digest  # newest last
    kept = dict(list(table.items())[-max_projects:])
    file = Path(state_dir) / filename
    file.parent.mkdir(parents=True, exist_ok=True)
    temp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
    temp.write_bytes(msgspec.json.encode(kept))
    os.replace(temp, file)
