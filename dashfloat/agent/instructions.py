"""Project instructions: the ``AGENTS.md`` files from the repository root down to the working directory.

Public API (pure library code):

- ``load_project_instructions(cwd) -> ProjectInstructions(text, files, truncated, problems)``: the files
  outermost first, each under a ``=== <path relative to cwd> ===`` label, INSTRUCTIONS_MAX_BYTES in all
  (the file that crosses the bound is cut at a line and a marker says so; later files are not read).
  Unreadable, non-regular or non-UTF-8 files are named in ``problems``; nothing here raises.
- ``project_root(cwd)``: the nearest enclosing directory holding ``.git`` (file or directory), else cwd.
"""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

import msgspec

INSTRUCTIONS_FILENAME = "AGENTS.md"
INSTRUCTIONS_MAX_BYTES = 64 * 1024
TRUNCATION_MARKER = "[… project instructions truncated: more than 64 KiB of AGENTS.md]\n"


class ProjectInstructions(msgspec.Struct, frozen=True):
    """The text for the system message, the files it came from, and what could not be read."""

    text: str
    files: list[Path] = msgspec.field(default_factory=list)
    truncated: bool = False
    problems: list[str] = msgspec.field(default_factory=list)


def project_root(cwd: Path) -> Path:
    """The nearest enclosing directory (cwd included) that holds ``.git``, else ``cwd`` itself."""
    for directory in (cwd, *cwd.parents):
        try:
            if (directory / ".git").exists():
                return directory
        except OSError:
            continue  # an unreadable ancestor cannot be the repository root we can use
    return cwd


def read_bounded(path: Path, limit: int, beneath: Path | None = None) -> str | None:
    """At most ``limit`` bytes (plus a partial character) of a regular UTF-8 file; None if absent.

    With ``beneath``, a file that is really elsewhere (a link out of that directory) is refused: a cloned
    repository's ``AGENTS.md -> ~/.ssh/id_rsa`` would otherwise go to the provider with every request.
    """
    try:
        # O_NONBLOCK: an AGENTS.md that is a FIFO must not hang the agent's start.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        if beneath is not None:
            real = os.readlink(f"/proc/self/fd/{fd}")  # what was opened, after every link
            if os.path.commonpath([real, str(beneath.resolve())]) != str(beneath.resolve()):
                raise ValueError(f"links out of {beneath} (to {real})")
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
        decoder = codecs.getincrementaldecoder("utf-8")()
        return decoder.decode(data, final=len(data) <= limit)
    finally:
        os.close(fd)


def load_project_instructions(cwd: Path) -> ProjectInstructions:
    """Read the AGENTS.md chain for ``cwd`` within INSTRUCTIONS_MAX_BYTES."""
    cwd = cwd.resolve()
    root = project_root(cwd)
    rel = cwd.relative_to(root).parts
    chain = [root.joinpath(*rel[:i]) for i in range(len(rel) + 1)]
    pieces: list[str] = []
    files: list[Path] = []
    problems: list[str] = []
    used = 0
    for directory in chain:
        path = directory / INSTRUCTIONS_FILENAME
        try:
            content = read_bounded(path, INSTRUCTIONS_MAX_BYTES, beneath=root)
        except UnicodeDecodeError:
            problems.append(f"{path}: not UTF-8 text, skipped")
            continue
        except ValueError as exc:
            problems.append(f"{path}: {exc}, skipped")
            continue
        except OSError as exc:
            problems.append(f"{path}: cannot read: {exc.strerror}")
            continue
        if content is None or not content.strip():
            continue
        section = f"=== {os.path.relpath(path, cwd)} ===\n{content.rstrip()}\n\n".encode()
        if used + len(section) <= INSTRUCTIONS_MAX_BYTES:
            pieces.append(section.decode())
            files.append(path)
            used += len(section)
            continue
        room = INSTRUCTIONS_MAX_BYTES - used - len(TRUNCATION_MARKER.encode())
        label_end = section.index(b"\n") + 1
        cut = section[: max(room, 0)]
        if cut.rfind(b"\n") >= label_end:
            cut = cut[: cut.rindex(b"\n") + 1]  # end on a whole line when one fits
        elif len(cut) > label_end:
            # One giant line: keep what fits, minus any split character, on a line of its own.
            cut = cut[: room - 1].decode("utf-8", errors="ignore").encode() + b"\n"
        if len(cut) > label_end:
            pieces.append(cut.decode())
            files.append(path)
        pieces.append(TRUNCATION_MARKER)
        return ProjectInstructions("".join(pieces), files, True, problems)
    return ProjectInstructions("".join(pieces).rstrip("\n") + ("\n" if pieces else ""), files, False, problems)
