"""Where the agent's conversation becomes durable: the Journal interface, the session log (created on the first
message, fsynced on every append) and a journal that keeps nothing (tests, --no-session)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from dashfloat import __version__
from dashfloat.agent._resumed import Resumed
from dashfloat.permission_files import save_user_rules
from dashfloat.permissions import SourcedRule
from dashfloat.protocol import ChatMessage, ConversationEntry, ProviderConfig, SessionInfo, Usage
from dashfloat.sessions import log as session_log
from dashfloat.sessions.history import append_history
from dashfloat.sessions.state import SESSIONS_DIRNAME, ensure_private_dir

if TYPE_CHECKING:
    from dashfloat.agent import undo  # imported with the first change loaded or recorded (ADR 0053)

CHECKPOINTS_DIRNAME = "checkpoints"


class Journal(Protocol):
    """Where the conversation becomes durable (the session log), before anything depends on it."""

    @property
    def session_id(self) -> str: ...

    def record(self, entry: ConversationEntry) -> None: ...

    def record_usage(self, turn: int, usage: Usage) -> None: ...

    def record_compaction(self, conversation: list[ChatMessage]) -> None: ...

    def record_prompt(self, text: str) -> None: ...

    def new_session(self) -> None: ...

    def take_warning(self) -> str | None: ...

    def list_sessions(self, skipped: list[str] | None = None) -> list[SessionInfo]: ...

    def resume(self, session_id: str) -> Resumed: ...

    @property
    def checkpoint_store(self) -> str: ...

    def loaded_changes(self) -> list[undo.CheckpointEntry | undo.CommandEntry]: ...

    def record_change(self, entry: undo.CheckpointEntry | undo.CommandEntry) -> None: ...

    def record_undone(self, turns: list[int]) -> None: ...

    def record_rewind(self, turns: int) -> None: ...

    def save_rules(self, path: str, rules: list[SourcedRule]) -> None: ...


class MemoryJournal:
    """A journal that keeps nothing on disk (tests; persistence disabled)."""

    def __init__(self) -> None:
        self.session_id = ""
        self.messages: list[ConversationEntry] = []
        self.saved_rules: list[SourcedRule] = []

    def record(self, entry: ConversationEntry) -> None:
        self.messages.append(entry)

    def record_usage(self, turn: int, usage: Usage) -> None:
        pass

    def record_compaction(self, conversation: list[ChatMessage]) -> None:
        self.messages = list(conversation)

    def record_prompt(self, text: str) -> None:
        pass

    def new_session(self) -> None:
        self.messages = []

    def take_warning(self) -> str | None:
        return None

    def list_sessions(self, skipped: list[str] | None = None) -> list[SessionInfo]:
        return []

    def resume(self, session_id: str) -> Resumed:
        raise LookupError("sessions are not saved in this run")

    @property
    def checkpoint_store(self) -> str:
        return ""  # nothing on disk: no checkpoints, nothing to undo

    def loaded_changes(self) -> list[undo.CheckpointEntry | undo.CommandEntry]:
        return []

    def record_change(self, entry: undo.CheckpointEntry | undo.CommandEntry) -> None:
        pass

    def record_undone(self, turns: list[int]) -> None:
        pass

    def record_rewind(self, turns: int) -> None:
        pass

    def save_rules(self, path: str, rules: list[SourcedRule]) -> None:
        self.saved_rules = list(rules)


class SessionJournal:
    """Writes the current session under ``state_dir``; ``resume`` switches to a saved one."""

    def __init__(self, state_dir: Path, cwd: str, provider: ProviderConfig) -> None:
        self.sessions_dir = state_dir / SESSIONS_DIRNAME
        self.history_path = state_dir / "history"
        self.cwd = cwd
        self.provider = provider
        self.checkpoints_dir = state_dir / CHECKPOINTS_DIRNAME
        self.writer: session_log.SessionWriter | None = None
        self.session_id = ""
        self._loaded_changes: list[session_log.ChangeRecord] = []
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

    def _create(self, first: list[ConversationEntry]) -> session_log.SessionWriter:
        """A new session's file, holding ``first`` (its first entry) as well as its header."""
        ensure_private_dir(self.sessions_dir)
        header = session_log.new_header(
            cwd=self.cwd,
            provider=self.provider.name,
            model=self.provider.model,
            dashfloat_version=__version__,
        )
        self.writer = session_log.SessionWriter.create(self.sessions_dir, header, first)
        self.session_id = header.id
        return self.writer

    def _writer(self) -> session_log.SessionWriter:
        return self.writer if self.writer is not None else self._create([])

    def record(self, entry: ConversationEntry) -> None:
        try:
            if self.writer is None:
                # The header and the entry in one write and one fsync: the first prompt's request waits for this.
                self._create([entry])
            else:
                self.writer.append(entry)
        except (session_log.SessionError, OSError) as exc:
            self._failed(exc)

    def record_usage(self, turn: int, usage: Usage) -> None:
        try:
            self._writer().append_usage(turn, usage)
        except (session_log.SessionError, OSError) as exc:
            self._failed(exc)

    def record_compaction(self, conversation: list[ChatMessage]) -> None:
        try:
            self._writer().append_compaction(conversation)
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
        self._loaded_changes = []

    @property
    def checkpoint_store(self) -> str:
        """``<state>/checkpoints/<session id>``: where the executor keeps this session's pre-images."""
        return str(self.checkpoints_dir / self.session_id) if self.session_id else ""

    def loaded_changes(self) -> list[undo.CheckpointEntry | undo.CommandEntry]:
        from dashfloat.agent import undo

        entries: list[undo.CheckpointEntry | undo.CommandEntry] = []
        for record in self._loaded_changes:
            match record:
                case session_log.CheckpointRecord(turn=turn, call_id=call_id, checkpoint=checkpoint, cwd=cwd):
                    entries.append(undo.CheckpointEntry(turn, call_id, checkpoint, cwd))
                case session_log.CommandRecord(turn=turn, call_id=call_id, changes=changes, cwd=cwd):
                    entries.append(undo.CommandEntry(turn, call_id, changes, cwd))
        return entries

    def _append(self, record: session_log.UndoRecord) -> None:
        try:
            self._writer().append_record(record)
        except (session_log.SessionError, OSError) as exc:
            self._failed(exc)

    def record_change(self, entry: undo.CheckpointEntry | undo.CommandEntry) -> None:
        from dashfloat.agent import undo

        if isinstance(entry, undo.CheckpointEntry):
            self._append(session_log.CheckpointRecord(entry.turn, entry.call_id, entry.checkpoint, entry.cwd))
        else:
            self._append(session_log.CommandRecord(entry.turn, entry.call_id, entry.changes, entry.cwd))

    def record_undone(self, turns: list[int]) -> None:
        self._append(session_log.UndoneRecord(turns))

    def record_rewind(self, turns: int) -> None:
        self._append(session_log.RewindRecord(turns))

    def list_sessions(self, skipped: list[str] | None = None) -> list[SessionInfo]:
        return session_log.list_sessions(self.sessions_dir, skipped)

    def open(self, path: Path) -> session_log.LoadedSession:
        """Continue the session at ``path``: repaired, then appended to."""
        writer, loaded = session_log.SessionWriter.open_existing(path)
        self.new_session()
        self.writer = writer
        self.session_id = loaded.header.id
        self._loaded_changes = list(loaded.changes)
        if os.path.normpath(loaded.header.cwd) != os.path.normpath(self.cwd):
            # Its paths and commands meant another tree; the tools now act on this one.
            loaded.notices.append(f"this session was started in {loaded.header.cwd}; its tools now work in {self.cwd}")
        return loaded

    def save_rules(self, path: str, rules: list[SourcedRule]) -> None:
        """Rewrite the user's rule file (/permissions remove and save)."""
        save_user_rules(Path(path), rules)

    def resume(self, session_id: str) -> Resumed:
        try:
            loaded = self.open(session_log.find_session(self.sessions_dir, session_id))
        except session_log.SessionError as exc:
            raise LookupError(str(exc)) from exc
        return Resumed(loaded.messages, [record.usage for record in loaded.usage], loaded.notices, loaded.transcript)
