"""The session log as the agent's Journal: created on the first message, fsynced on every append."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from dashfloat import __version__
from dashfloat.protocol import ChatMessage, ProviderConfig, SessionInfo, Usage
from dashfloat.sessions import log as session_log
from dashfloat.sessions.history import append_history
from dashfloat.sessions.state import SESSIONS_DIRNAME, ensure_private_dir


class SessionJournal:
    """Writes the current session under ``state_dir``; ``resume`` switches to a saved one."""

    def __init__(self, state_dir: Path, cwd: str, provider: ProviderConfig) -> None:
        self.sessions_dir = state_dir / SESSIONS_DIRNAME
        self.history_path = state_dir / "history"
        self.cwd = cwd
        self.provider = provider
        self.writer: session_log.SessionWriter | None = None
        self.session_id = ""
        self._warning: str | None = None
        self._warned = False

    def take_warning(self) -> str | None:
        """Why the last write failed, once: the turn goes on, the user is told the log is incomplete."""
        warning, self._warning = self._warning, None
        return warning

    def _failed(self, exc: Exception) -> None:
        if not self._warned:  # one entry, not one per message, while the disk stays full
            self._warned = True
            self._warning = f"the session is not being saved: {exc}"

    def _writer(self) -> session_log.SessionWriter:
        if self.writer is None:
            ensure_private_dir(self.sessions_dir)
            header = session_log.new_header(
                cwd=self.cwd,
                provider=self.provider.name,
                model=self.provider.model,
                dashfloat_version=__version__,
            )
            self.writer = session_log.SessionWriter.create(self.sessions_dir, header)
            self.session_id = header.id
        return self.writer

    def record(self, message: ChatMessage) -> None:
        try:
            self._writer().append(message)
        except (session_log.SessionError, OSError) as exc:
            self._failed(exc)

    def record_usage(self, turn: int, usage: Usage) -> None:
        try:
            self._writer().append_usage(turn, usage)
        except (session_log.SessionError, OSError) as exc:
            self._failed(exc)

    def record_prompt(self, text: str) -> None:
        with contextlib.suppress(OSError):  # the prompt is in the session log anyway; history is a convenience
            append_history(self.history_path, text)

    def new_session(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.writer = None
        self.session_id = ""
        self._warned = False

    def list_sessions(self) -> list[SessionInfo]:
        return session_log.list_sessions(self.sessions_dir)

    def open(self, path: Path) -> session_log.LoadedSession:
        """Continue the session at ``path``: repaired, then appended to."""
        writer, loaded = session_log.SessionWriter.open_existing(path)
        self.new_session()
        self.writer = writer
        self.session_id = loaded.header.id
        if os.path.normpath(loaded.header.cwd) != os.path.normpath(self.cwd):
            # Its paths and commands meant another tree; the tools now act on this one.
            loaded.notices.append(f"this session was started in {loaded.header.cwd}; its tools now work in {self.cwd}")
        return loaded

    def resume(self, session_id: str) -> tuple[list[ChatMessage], list[Usage], list[str]]:
        try:
            loaded = self.open(session_log.find_session(self.sessions_dir, session_id))
        except session_log.SessionError as exc:
            raise LookupError(str(exc)) from exc
        return loaded.messages, [record.usage for record in loaded.usage], loaded.notices
