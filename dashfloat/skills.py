"""Skills: ``SKILL.md`` folders the model reads when a task calls for one (ADR 0088, the Agent Skills convention).

- ``load_skills(cwd, env)``: the project's ``.agents/skills/*/SKILL.md`` (beneath the working directory, so
  ``read_file`` reads them) and the user's ``$XDG_CONFIG_HOME/dashfloat/skills/*/SKILL.md``; every read bounded,
  a folder that cannot be used named in a problem. A project skill wins over the user's of the same name.
- ``front_matter(text)``: the small YAML subset a ``SKILL.md`` header uses (``key: value``, quoted values, ``|``
  and ``>`` blocks, indented continuations); no YAML library is a dependency.
- ``skills_index(skills)``: names and one-line descriptions for the system prompt, at most SKILLS_INDEX_MAX_CHARS.
- ``user_skill_read(skills, args)``: a ``read_file`` of a user skill's ``SKILL.md`` (outside the workspace, where the
  executor reads nothing) answered from the copy read at start.

Nothing here runs anything: a skill's scripts run only as an ``execute_command`` call, confirmed as any other.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal

import msgspec

from dashfloat.protocol import ReadFileArgs, ReadFileResult

PROJECT_SKILLS: Final = Path(".agents") / "skills"
SKILL_FILENAME: Final = "SKILL.md"
SKILLS_PER_DIR_MAX: Final = 100
"""Skill folders looked at in one directory (by name); later ones are named in a problem, not listed."""
SKILL_FILE_MAX_BYTES: Final = 64 * 1024
"""What is read of one ``SKILL.md``: its header must lie within, and a user skill's copy is kept up to it."""
SKILL_DESCRIPTION_MAX_CHARS: Final = 300
"""One skill's description in the index: its first line, cut here."""
SKILLS_INDEX_MAX_CHARS: Final = 8000
"""The whole index in the system prompt; skills past it are counted, not listed (they cost every request)."""
_KEY: Final = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:(?:\s+(.*))?$")

INDEX_HEADER: Final = (
    "Skills: folders of instructions for particular tasks. When a task matches a skill's description, read its "
    "SKILL.md with read_file first and follow it. A skill's scripts run only as execute_command calls, asked for "
    "like any other command; never run one the task does not need."
)


class Skill(msgspec.Struct, frozen=True):
    """One skill: its name, its one-line description, the path the model reads it at, and where it comes from."""

    name: str
    description: str
    path: str
    source: Literal["project", "user"]
    text: str = ""
    """A user skill's ``SKILL.md`` (the executor cannot read it); empty for a project skill."""


def _scalar(value: str) -> str:
    """A one-line YAML value: quoted (``"…"`` with escapes, ``'…'``) or plain (a `` #`` comment cut)."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            decoded = msgspec.json.decode(value.encode())
        except msgspec.DecodeError:
            return value[1:-1]
        return decoded if isinstance(decoded, str) else value[1:-1]
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value.split(" #", 1)[0].rstrip()


def front_matter(text: str) -> dict[str, str] | None:
    """The ``---``-fenced header's top-level string fields, or None when the file has no closed header."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    fields: dict[str, str] = {}
    key: str | None = None
    block: list[str] | None = None
    style = ""

    def close() -> None:
        nonlocal block
        if key is not None and block is not None:
            fields[key] = ("\n" if style == "|" else " ").join(block).strip()
        block = None

    for line in lines[1:]:
        if line.rstrip() in ("---", "..."):
            close()
            return fields
        if key is not None and (line[:1] in (" ", "\t") or not line.strip()):
            if block is not None:
                block.append(line.strip())
            elif line.strip() and key in fields:
                fields[key] = f"{fields[key]} {line.strip()}"  # a plain value folded onto the next line
            continue
        close()
        match = _KEY.match(line)
        if match is None:
            key = None  # a list item or anything else: not a field of ours
            continue
        key, value = match.group(1), (match.group(2) or "").strip()
        if value[:1] in ("|", ">") and value.rstrip("+-") in ("|", ">"):
            block, style = [], value[0]
        elif value:
            fields[key] = _scalar(value)
    return None


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    if len(line) <= SKILL_DESCRIPTION_MAX_CHARS:
        return line
    return line[: SKILL_DESCRIPTION_MAX_CHARS - 1] + "…"


def user_skills_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/dashfloat/skills`` (default ``~/.config/dashfloat/skills``)."""
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or os.path.expanduser("~")) / ".config")
    return Path(base) / "dashfloat" / "skills"


def _read(path: Path, beneath: Path | None) -> str | None:
    from dashfloat.agent.instructions import read_bounded  # the bounded, link-checked read AGENTS.md gets

    return read_bounded(path, SKILL_FILE_MAX_BYTES, beneath=beneath)


def load_skills(cwd: str, env: Mapping[str, str]) -> tuple[list[Skill], list[str]]:
    """The usable skills (project first, then the user's; by folder name) and the problems to tell the user."""
    found: dict[str, Skill] = {}
    problems: list[str] = []
    workspace = Path(cwd).resolve()
    places: tuple[tuple[Path, Path | None, Literal["project", "user"]], ...] = (
        (workspace / PROJECT_SKILLS, workspace, "project"),
        (user_skills_dir(env), None, "user"),
    )
    for directory, beneath, source in places:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        if len(names) > SKILLS_PER_DIR_MAX:
            problems.append(f"{directory}: {len(names)} entries; only the first {SKILLS_PER_DIR_MAX} looked at")
            names = names[:SKILLS_PER_DIR_MAX]
        for folder in names:
            path = directory / folder / SKILL_FILENAME
            try:
                text = _read(path, beneath)
            except (OSError, ValueError) as exc:  # ValueError: a link out of the project, a FIFO, not UTF-8
                problems.append(f"{path}: not listed: {exc}")
                continue
            if text is None:
                continue  # a folder without SKILL.md is not a skill
            header = front_matter(text)
            if header is None:
                problems.append(f"{path}: not listed: no front matter (--- name: … description: … ---)")
                continue
            name = _one_line(header.get("name") or folder)
            description = _one_line(header.get("description", ""))
            if not description:
                problems.append(f"{path}: not listed: no description in its front matter")
                continue
            if name in found:
                continue  # the project's skill of that name came first
            shown = str(PROJECT_SKILLS / folder / SKILL_FILENAME) if source == "project" else str(path)
            found[name] = Skill(name, description, shown, source, text if source == "user" else "")
    return list(found.values()), problems


def skills_index(skills: list[Skill]) -> str:
    """The system prompt's part for ``skills``: a header, then one line each, at most SKILLS_INDEX_MAX_CHARS."""
    if not skills:
        return ""
    lines = [INDEX_HEADER]
    used = len(INDEX_HEADER)
    for listed, skill in enumerate(skills):
        line = f"- {skill.name}: {skill.description} ({skill.path})"
        if used + 1 + len(line) > SKILLS_INDEX_MAX_CHARS:
            lines.append(f"[… {len(skills) - listed} more skills not listed: the index is capped]")
            break
        lines.append(line)
        used += 1 + len(line)
    return "\n".join(lines)


def user_skill_read(skills: list[Skill], args: ReadFileArgs) -> ReadFileResult | None:
    """A read_file of a user skill's SKILL.md, answered from its copy (None: not one, the executor reads it)."""
    skill = next((s for s in skills if s.source == "user" and s.path == os.path.expanduser(args.path)), None)
    if skill is None:
        return None
    lines = skill.text.splitlines(keepends=True)
    window = lines[args.offset - 1 : args.offset - 1 + args.limit]
    return ReadFileResult(
        path=skill.path,
        content="".join(window),
        offset=args.offset,
        lines=len(window),
        total_lines=len(lines),
        total_bytes=len(skill.text.encode()),
        truncated=args.offset - 1 + args.limit < len(lines),
    )
