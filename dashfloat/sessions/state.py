"""Where DashFloat keeps its state: the state directory, the sessions directory under it, both private."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

SESSIONS_DIRNAME = "sessions"
LOG_FILENAME = "dashfloat.log"
"""The log of the agent and its workers (their stderr), in the state directory."""


def state_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/dashfloat``, default ``~/.local/state/dashfloat`` (relative XDG values ignored)."""
    xdg = env.get("XDG_STATE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "dashfloat"
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".local" / "state" / "dashfloat"


def sessions_dir(env: Mapping[str, str]) -> Path:
    """The directory holding the session files."""
    return state_dir(env) / SESSIONS_DIRNAME


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` (and parents) and make the leaf 0700, tightening an existing one."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o777 != 0o700:
        os.chmod(path, 0o700)
