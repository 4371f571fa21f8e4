"""Prompt files: ``.dashfloat/prompts/NAME.md`` of the project and of the user, offered as ``/NAME [args]``.

Read by the agent at start (the UI does no file I/O) and sent in AgentReady. A project file wins over the
user's file of the same name. Every read is bounded; a file that cannot be used is named in a notice.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from dashfloat.agent.instructions import project_root, read_bounded
from dashfloat.protocol import PromptFile

PROMPT_FILES_MAX: Final = 50
"""Prompt files offered at most (project first, then the user's; by name)."""
PROMPT_FILE_MAX_BYTES: Final = 16 * 1024
"""Bytes of one prompt file; a longer one is skipped with a notice."""
PROMPTS_DIR: Final = Path(".dashfloat") / "prompts"
_NAME: Final = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


def user_prompts_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/dashfloat/prompts`` (default ``~/.config/dashfloat/prompts``)."""
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or os.path.expanduser("~")) / ".config")
    return Path(base) / "dashfloat" / "prompts"


def load_prompt_files(cwd: Path, env: Mapping[str, str]) -> tuple[list[PromptFile], list[str]]:
    """The usable prompt files and the problems to tell the user (a built-in command wins over a file)."""
    found: dict[str, PromptFile] = {}
    problems: list[str] = []
    project = project_root(cwd.resolve())
    # A project's files stay beneath the project (a repository is not trusted); the user's own may link anywhere.
    for directory, beneath in ((project / PROMPTS_DIR, project), (user_prompts_dir(env), None)):
        try:
            names = sorted(p for p in os.listdir(directory) if p.endswith(".md"))
        except OSError:
            continue
        for filename in names:
            name = filename.removesuffix(".md").lower()
            path = directory / filename
            if name in found:
                continue  # the project's file of that name came first
            if not _NAME.match(name):
                problems.append(f"{path}: not offered (a name is lower-case letters, digits, - and _)")
                continue
            if len(found) >= PROMPT_FILES_MAX:
                problems.append(f"more than {PROMPT_FILES_MAX} prompt files: {path} and later ones not offered")
                return list(found.values()), problems
            try:
                text = read_bounded(path, PROMPT_FILE_MAX_BYTES + 1, beneath=beneath)
            except (OSError, ValueError) as exc:
                problems.append(f"{path}: cannot be used: {exc}")
                continue
            if text is None or not text.strip():
                continue
            if len(text.encode()) > PROMPT_FILE_MAX_BYTES:
                problems.append(f"{path}: over {PROMPT_FILE_MAX_BYTES} bytes, not offered")
                continue
            found[name] = PromptFile(name=name, text=text, source=str(path))
    return list(found.values()), problems
