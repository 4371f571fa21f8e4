"""Input history beside the sessions: ``<state_dir>/history``, one JSON string per line.

Public API (pure library code):

- ``load_history(path) -> list[str]``: oldest first, deduplicated (a repeated prompt counts at its last
  use), at most HISTORY_MAX_ENTRIES; a missing or damaged file gives what can be read, never an error.
- ``append_history(path, text)``: record a submitted prompt (multi-line prompts survive); the file is
  0600 in a 0700 directory and is compacted when it holds more than HISTORY_MAX_ENTRIES lines.
  Raises OSError when the file cannot be written; callers decide whether that matters.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from dashfloat.sessions._files import replace_atomically, write_all
from dashfloat.sessions.state import ensure_private_dir

HISTORY_MAX_ENTRIES = 1000
HISTORY_ENTRY_MAX_BYTES = 64 * 1024  # a bigger prompt (a pasted file) is not worth recalling, nor storing
HISTORY_FILENAME = "history"

_DECODER = msgspec.json.Decoder(str)


def _read(path: Path) -> tuple[list[str], int, bool]:
    """Every readable entry in file order, the number of lines, whether the file ends in a newline."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return [], 0, True
    entries: list[str] = []
    lines = data.split(b"\n")
    if not lines[-1]:
        lines.pop()
    for line in lines:
        try:
            entries.append(_DECODER.decode(line))
        except msgspec.DecodeError:
            continue  # a torn or foreign line: history is a convenience, skip it
    return entries, len(lines), not data or data.endswith(b"\n")


def _compact(entries: list[str]) -> list[str]:
    """Keep each text once, at its last position; then the newest HISTORY_MAX_ENTRIES."""
    seen: set[str] = set()
    newest_first: list[str] = []
    for text in reversed(entries):
        if text not in seen:
            seen.add(text)
            newest_first.append(text)
            if len(newest_first) == HISTORY_MAX_ENTRIES:
                break
    return newest_first[::-1]


def load_history(path: Path) -> list[str]:
    """The recallable prompts, oldest first."""
    try:
        entries, _, _ = _read(path)
    except OSError:
        return []
    return _compact(entries)


def append_history(path: Path, text: str) -> None:
    """Record ``text`` as the newest entry (blank and oversized prompts are not recorded)."""
    line = msgspec.json.encode(text) + b"\n"
    if not text.strip() or len(line) > HISTORY_ENTRY_MAX_BYTES:
        return
    ensure_private_dir(path.parent)
    entries, lines, terminated = _read(path)
    if lines + 1 > HISTORY_MAX_ENTRIES or (entries and text in entries and entries[-1] != text):
        _rewrite(path, _compact([*entries, text]))
        return
    if entries and entries[-1] == text:
        return  # already the newest entry
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        # A torn last line must not swallow this entry.
        write_all(fd, line if terminated else b"\n" + line)
    finally:
        os.close(fd)


def _rewrite(path: Path, entries: list[str]) -> None:
    # fsynced: never replace the old history with an empty file after a power loss
    replace_atomically(path, b"".join(msgspec.json.encode(e) + b"\n" for e in entries))
