"""Finding sessions: listing them newest first, by id or a unique prefix, the newest in a directory."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from dashfloat.mentions import typed_prompt
from dashfloat.protocol import (
    ChatMessage,
    ConversationEntry,
    SessionInfo,
)
from dashfloat.sessions._format import SESSION_SUFFIX, SessionError
from dashfloat.sessions._reading import _read_first_line, _read_header, load
from dashfloat.sessions._repair import _names

TITLE_MAX_CHARS = 60


def _session_files(sessions_dir: Path) -> list[Path]:
    try:
        names = os.listdir(sessions_dir)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise SessionError(f"{sessions_dir}: cannot list sessions: {exc.strerror}") from exc
    return [sessions_dir / n for n in names if n.endswith(SESSION_SUFFIX) and not n.startswith(".")]


def _mtime_ns(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _title(messages: Sequence[ConversationEntry]) -> str:
    for m in messages:
        if isinstance(m, ChatMessage) and m.role == "user" and m.content:
            text = " ".join(typed_prompt(m.content).split())  # not the files its @mentions attached
            return text if len(text) <= TITLE_MAX_CHARS else text[: TITLE_MAX_CHARS - 1] + "…"
    return ""


def _skip(skipped: list[str] | None, path: Path, exc: Exception) -> None:
    """Say which file was skipped and why (a SessionError names the path itself)."""
    if skipped is not None:
        strerror = exc.strerror if isinstance(exc, OSError) else None
        why = str(exc) if isinstance(exc, SessionError) else f"{path}: cannot read the session: {strerror or exc}"
        skipped.append(f"skipped {why}")


def _iso_utc(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="seconds")


def list_sessions(sessions_dir: Path, skipped: list[str] | None = None) -> list[SessionInfo]:
    """Every readable session, newest activity first; a file that cannot be read is skipped, and ``skipped`` gets
    its path and why (``skipped PATH: not a DashFloat session (…)``)."""
    rows: list[tuple[int, str, SessionInfo]] = []
    for path in _session_files(sessions_dir):
        mtime = _mtime_ns(path)
        if mtime is None:
            continue
        try:
            loaded = load(path)
        except (SessionError, OSError) as exc:
            _skip(skipped, path, exc)
            continue
        info = SessionInfo(
            id=loaded.header.id,
            last_activity=_iso_utc(mtime),
            cwd=loaded.header.cwd,
            messages=len(loaded.messages),
            title=_title(loaded.transcript),
        )
        rows.append((mtime, info.id, info))
    rows.sort(key=lambda r: (r[0], r[1]), reverse=True)
    return [r[2] for r in rows]


def find_session(sessions_dir: Path, id_or_prefix: str) -> Path:
    """The session file whose id is ``id_or_prefix`` or uniquely starts with it."""
    wanted = id_or_prefix.strip()
    if not wanted:
        raise SessionError("no session id given")
    ids = sorted(p.name.removesuffix(SESSION_SUFFIX) for p in _session_files(sessions_dir))
    if wanted in ids:
        return sessions_dir / f"{wanted}{SESSION_SUFFIX}"
    matches = [i for i in ids if i.startswith(wanted)]
    if not matches:
        raise SessionError(f"no session {wanted!r} in {sessions_dir}")
    if len(matches) > 1:
        raise SessionError(f"ambiguous session prefix {wanted!r}: matches {_names(matches)}")
    return sessions_dir / f"{matches[0]}{SESSION_SUFFIX}"


def newest_for_cwd(sessions_dir: Path, cwd: str | Path, skipped: list[str] | None = None) -> Path | None:
    """The most recently active session started in ``cwd``, if any; ``skipped`` as for ``list_sessions`` (a file
    whose header cannot be read may be this directory's newest)."""
    wanted = os.path.normpath(str(cwd))
    best: tuple[int, str] | None = None
    found: Path | None = None
    for path in _session_files(sessions_dir):
        mtime = _mtime_ns(path)
        if mtime is None:
            continue
        try:
            header = _read_header(path, _read_first_line(path))
        except SessionError as exc:
            _skip(skipped, path, exc)
            continue
        key = (mtime, header.id)
        if os.path.normpath(header.cwd) == wanted and (best is None or key > best):
            best, found = key, path
    return found
