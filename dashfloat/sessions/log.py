"""The durable session log: one append-only JSON Lines file per session (format: docs/sessions.md).

Public API (pure library code: no processes, no protocol sending, no printing):

- ``new_header(cwd=, provider=, model=, dashfloat_version=)``: a fresh ``SessionHeader`` with a new id.
- ``SessionWriter.create(dir, header)`` / ``SessionWriter.open_existing(path) -> (writer, loaded)``;
  ``writer.append(msg)``, ``append_many(msgs)``, ``append_usage(turn, usage)``,
  ``append_compaction(msgs)`` return only once the line is fsynced; ``writer.path``, ``writer.close()``
  (also a context manager).
- ``read_header(path) -> SessionHeader``: the first line only, validated (junk and newer formats refused).
- ``load(path) -> LoadedSession``: header, the conversation entries (after the last compaction), the whole
  transcript, usage records, repair notices.
  An older file (tool results as JSON text, format < 3) is read into typed results; appending rewrites it.
- ``repair_conversation(entries) -> (entries, notices)``: the tool-call repair rules on their own.
- ``list_sessions(dir)``, ``find_session(dir, id_or_prefix)``, ``newest_for_cwd(dir, cwd)``.
- ``writer.append_record(record)``: a checkpoint, a command's changes, an undo or a rewind (fsynced).
- ``SessionError``: every refusal, one line naming the file; ``SessionLocked`` (one of them): another process is
  writing that session (a writer holds the session's lock from create/open_existing to close: ``_lock``).
- ``check_unlocked(path)``: raise ``SessionLocked`` if another process holds the session now.
- ``SESSION_ID_MAX_CHARS``, ``valid_session_id(text) -> str | None``: a caller-chosen id (``--session-id``) checked.

This module writes; the rest lives beside it by idea and is exported from here: ``_format`` (the lines and their
codecs), ``_reading`` (``load``, ``read_header``), ``_repair`` (the repair rules, results saved as text by formats 1
and 2), ``_listing`` (finding sessions), ``_lock`` (who writes a session).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Self

from dashfloat.protocol import (
    ChatMessage,
    ConversationEntry,
    Usage,
)
from dashfloat.sessions import _lock
from dashfloat.sessions._files import fsync_dir, replace_atomically, write_all
from dashfloat.sessions._format import (
    FORMAT_VERSION,
    HEADER_MAX_BYTES,
    SESSION_SUFFIX,
    ChangeRecord,
    CheckpointRecord,
    CommandRecord,
    CompactionRecord,
    LoadedSession,
    RewindRecord,
    SessionError,
    SessionHeader,
    SessionLocked,
    UndoneRecord,
    UndoRecord,
    UsageRecord,
    _encode,
    _entry_line,
)
from dashfloat.sessions._listing import TITLE_MAX_CHARS, find_session, list_sessions, newest_for_cwd
from dashfloat.sessions._reading import _parse, load, read_header
from dashfloat.sessions._repair import NOTICE_MAX_ITEMS, repair_conversation
from dashfloat.sessions.state import ensure_private_dir

__all__ = [
    "FORMAT_VERSION",
    "HEADER_MAX_BYTES",
    "NOTICE_MAX_ITEMS",
    "SESSION_ID_MAX_CHARS",
    "SESSION_SUFFIX",
    "TITLE_MAX_CHARS",
    "ChangeRecord",
    "CheckpointRecord",
    "CommandRecord",
    "CompactionRecord",
    "LoadedSession",
    "RewindRecord",
    "SessionError",
    "SessionHeader",
    "SessionLocked",
    "SessionWriter",
    "UndoRecord",
    "UndoneRecord",
    "UsageRecord",
    "check_unlocked",
    "find_session",
    "list_sessions",
    "load",
    "new_header",
    "new_session_id",
    "newest_for_cwd",
    "read_header",
    "repair_conversation",
    "valid_session_id",
]

SESSION_ID_MAX_CHARS = 128
"""The longest session id: ``<id>.jsonl``, ``<id>.lock`` and the ``.<id>.<hex>.tmp`` beside them stay far below a
file name's 255 bytes, and an id still reads as a name in a listing."""

_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def valid_session_id(text: str) -> str | None:
    """Why ``text`` cannot be a session id (None when it can): a safe file name of bounded length."""
    if not text:
        return "it is empty"
    if len(text) > SESSION_ID_MAX_CHARS:
        return f"it is {len(text)} characters long; at most {SESSION_ID_MAX_CHARS}"
    if not _ID_RE.fullmatch(text):
        return "use letters, digits, '.', '_' and '-' only, starting with a letter or digit"
    return None


def _take_lock(path: Path) -> None:
    """Hold the session's lock (this process, until the writer closes), or refuse naming who has it."""
    try:
        _lock.acquire(path)
    except _lock.Busy as exc:
        raise SessionLocked(
            f"session {path.name.removesuffix(SESSION_SUFFIX)} is in use by {exc} ({path}); "
            "wait for that run to finish, or stop it"
        ) from None
    except OSError as exc:
        raise SessionError(f"{path}: cannot lock the session: {exc.strerror}") from exc


def check_unlocked(path: Path) -> None:
    """Raise SessionLocked if another process holds the session at ``path`` now."""
    _take_lock(path)
    _lock.release(path)


# ---------------------------------------------------------------- locations and ids


def new_session_id(now: datetime | None = None) -> str:
    """``YYYYMMDD-HHMMSS-<6 hex>`` in UTC: names sort by creation time."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{moment:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def new_header(
    *, cwd: str | Path, provider: str, model: str, dashfloat_version: str, now: datetime | None = None
) -> SessionHeader:
    """A header for a new session started now."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return SessionHeader(
        format=FORMAT_VERSION,
        id=new_session_id(moment),
        created=moment.isoformat(timespec="seconds"),
        cwd=str(cwd),
        provider=provider,
        model=model,
        dashfloat_version=dashfloat_version,
    )


# ---------------------------------------------------------------- writing


class SessionWriter:
    """Appends lines to one session file; every append is on disk (fsynced) before it returns."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd
        self._size = os.fstat(fd).st_size

    @classmethod
    def create(
        cls, sessions_dir: Path, header: SessionHeader, first: Sequence[ConversationEntry] = ()
    ) -> SessionWriter:
        """Create ``<id>.jsonl`` (0600, in a 0700 directory) holding the header and the ``first`` entries, durably (one
        fsync of the file, one of the directory)."""
        if (why := valid_session_id(header.id)) is not None:
            raise SessionError(f"invalid session id {header.id!r}: {why}")
        ensure_private_dir(sessions_dir)
        path = sessions_dir / f"{header.id}{SESSION_SUFFIX}"
        _take_lock(path)  # before the file exists: nobody can open it unlocked
        try:
            return cls._create_locked(sessions_dir, path, header, first)
        except BaseException:
            _lock.release(path)
            raise

    @classmethod
    def _create_locked(
        cls, sessions_dir: Path, path: Path, header: SessionHeader, first: Sequence[ConversationEntry]
    ) -> SessionWriter:
        # The file appears with its header or not at all: a kill between creating it and writing the header
        # would leave a file no later start could read. The header goes to a private temp, then is linked
        # into place (link, unlike rename, refuses an existing session).
        tmp = sessions_dir / f".{header.id}.{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            write_all(fd, _encode(header) + b"".join(_entry_line(e) for e in first))
            os.fsync(fd)
            os.link(tmp, path)
        except FileExistsError:
            raise SessionError(f"{path}: a session with this id already exists") from None
        finally:
            os.close(fd)
            tmp.unlink(missing_ok=True)
        fsync_dir(sessions_dir)  # the new directory entry must survive a power loss too
        return cls(path, os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC))

    @classmethod
    def open_existing(cls, path: Path) -> tuple[SessionWriter, LoadedSession]:
        """Lock ``path``, load it, write its repairs back, and open it for appending."""
        _take_lock(path)  # before reading: the repair is written back under the lock too
        try:
            return cls._open_locked(path)
        except BaseException:
            _lock.release(path)
            raise

    @classmethod
    def _open_locked(cls, path: Path) -> tuple[SessionWriter, LoadedSession]:
        parsed = _parse(path)
        loaded = parsed.loaded
        try:
            if parsed.needs_rewrite:
                _rewrite(path, loaded)
            elif parsed.tail_start is not None:
                os.truncate(path, parsed.tail_start)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        except OSError as exc:
            raise SessionError(f"{path}: cannot open the session for writing: {exc.strerror}") from exc
        writer = cls(path, fd)
        if not parsed.needs_rewrite and parsed.appended_repairs:
            writer.append_many(parsed.appended_repairs)
        elif parsed.tail_start is not None:
            os.fsync(fd)  # make the truncation itself durable
        return writer, loaded

    def append(self, entry: ConversationEntry) -> None:
        """Append one message or tool result; it is on disk when this returns."""
        self._write(_entry_line(entry))

    def append_many(self, entries: Iterable[ConversationEntry]) -> None:
        """Append several entries with a single write and a single fsync."""
        data = b"".join(_entry_line(e) for e in entries)
        if data:
            self._write(data)

    def append_usage(self, turn: int, usage: Usage) -> None:
        """Record the usage of ``turn`` (1-based)."""
        self._write(_encode(UsageRecord(turn, usage)))

    def append_record(self, record: UndoRecord) -> None:
        """Record a checkpoint, a command's changes, an undo or a rewind."""
        self._write(_encode(record))

    def append_compaction(self, messages: Sequence[ChatMessage]) -> None:
        """Record a compaction: the conversation continues from ``messages``."""
        self._write(_encode(CompactionRecord(list(messages))))

    def close(self) -> None:
        """Close the file and give its lock back; further appends raise SessionError."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            _lock.release(self.path)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            raise SessionError(f"{self.path}: the session log is closed")
        try:
            write_all(self._fd, data)
            os.fsync(self._fd)
        except OSError as exc:
            # Take a half-written line back off so the next append does not glue onto it;
            # if even that fails, the next load drops the torn line instead.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            raise SessionError(f"{self.path}: cannot write the session log: {exc.strerror}") from exc
        self._size += len(data)


def _rewrite(path: Path, loaded: LoadedSession) -> None:
    """Replace ``path`` atomically with the repaired session (header, messages, usage records)."""
    lines = [_encode(loaded.header)]
    lines += [_encode(e) if isinstance(e, UsageRecord | CompactionRecord) else _entry_line(e) for e in loaded.lines]
    lines += [_encode(r) for r in loaded.changes]  # live ones only: undone and rewound ones are applied
    replace_atomically(path, b"".join(lines))
