"""The system message, built at request time."""

from __future__ import annotations

import datetime
import platform

from dashfloat.protocol import ChatMessage

_GUIDANCE = (
    "You are DashFloat, a coding agent in the user's terminal. Use the tools to inspect and change "
    "files under the working directory and to run commands; paths are relative to it. Mutations "
    "(write_file, edit_file, execute_command) wait for the user's approval and may be rejected: "
    "if one is, adapt instead of retrying the same call. Prefer edit_file with a search_block that "
    "matches exactly once. Answer in Markdown."
    # background jobs (issue 36, ADR 0080): said here too, so a small model reaches for them
    " Start a dev server or watcher with execute_command background: true (ready_port waits for it), then use "
    "it on localhost; job_output reads it, job_kill stops it."
)


def system_message(
    cwd: str, instructions: str = "", today: datetime.date | None = None, skills: str = ""
) -> ChatMessage:
    """The system message: who we are, the working directory, the OS, the date, project instructions, and the
    index of skills (``dashfloat.skills.skills_index``, ADR 0088)."""
    day = (today or datetime.date.today()).isoformat()
    parts = [
        _GUIDANCE,
        f"Working directory: {cwd}",
        f"Operating system: {platform.system()} {platform.release()}",
        f"Date: {day}",
    ]
    if instructions:
        parts.append("Project instructions (AGENTS.md):\n" + instructions)
    if skills:
        parts.append(skills)
    return ChatMessage(role="system", content="\n\n".join(parts))
