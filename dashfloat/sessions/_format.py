"""The session file's lines: one msgspec Struct per kind of line, their encoder and decoders, and the session as
read back (docs/sessions.md)."""

from __future__ import annotations

import functools
from pathlib import Path

import msgspec

from dashfloat.protocol import (
    ChatMessage,
    Checkpoint,
    CommandChanges,
    ConversationEntry,
    ToolReply,
    Usage,
)

# 2: checkpoint, command, undone and rewind lines; 3: tool results are typed ``tool_result`` lines
# (before 3 they were JSON text in ``tool`` messages, read back by _text_result), and compaction lines
FORMAT_VERSION = 3
SESSION_SUFFIX = ".jsonl"
HEADER_MAX_BYTES = 16 * 1024  # a first line longer than this is not a header: junk is rejected unread


class SessionError(Exception):
    """A session file that cannot be used as asked; the message is one line naming the file."""


class SessionLocked(SessionError):
    """Another process is writing this session; the message names it (PID, host, since when)."""


class _Line(msgspec.Struct, frozen=True, tag_field="kind"):
    """One line of a session file."""


class SessionHeader(_Line, frozen=True, tag="header", kw_only=True):
    """The first line of every session file."""

    format: int
    id: str
    created: str
    cwd: str
    provider: str
    model: str
    dashfloat_version: str


class _MessageLine(_Line, frozen=True, tag="message"):
    """One conversation message, in the order it came into existence."""

    message: ChatMessage


class _ReplyLine(_Line, frozen=True, tag="tool_result"):
    """One tool call's typed result (format 3)."""

    reply: ToolReply


class UsageRecord(_Line, frozen=True, tag="usage"):
    """Token usage of one turn (the final episode's figures), so /usage survives a resume."""

    turn: int
    usage: Usage


class CheckpointRecord(_Line, frozen=True, tag="checkpoint", omit_defaults=True):
    """A write/edit of turn ``turn`` (1-based prompt number) landed; how to take it back."""

    turn: int
    call_id: str
    checkpoint: Checkpoint
    cwd: str = ""
    """The working directory ``checkpoint.path`` is relative to."""


class CommandRecord(_Line, frozen=True, tag="command", omit_defaults=True):
    """The workspace files an execute_command of turn ``turn`` changed (not restorable, only listed)."""

    turn: int
    call_id: str
    changes: CommandChanges
    cwd: str = ""


class UndoneRecord(_Line, frozen=True, tag="undone"):
    """The changes of ``turns`` were reverted by /undo or a rewind: they are not undone twice."""

    turns: list[int]


class RewindRecord(_Line, frozen=True, tag="rewind"):
    """The conversation was truncated to its first ``turns`` prompts (everything from the next one on)."""

    turns: int


ChangeRecord = CheckpointRecord | CommandRecord
UndoRecord = CheckpointRecord | CommandRecord | UndoneRecord | RewindRecord


class CompactionRecord(_Line, frozen=True, tag="compaction"):
    """The conversation as a compaction left it (provider shape): later requests start from it."""

    messages: list[ChatMessage]


_Entry = ConversationEntry | UsageRecord | CompactionRecord
_ENCODER = msgspec.json.Encoder()
_Body = (
    _MessageLine
    | _ReplyLine
    | UsageRecord
    | CompactionRecord
    | CheckpointRecord
    | CommandRecord
    | UndoneRecord
    | RewindRecord
)


@functools.cache
def _body_decoder() -> msgspec.json.Decoder[_Body]:
    """Built on the first read, not at import: a new session only writes, and building it (its classes' annotations
    evaluated) was ~1 ms of the agent's way to its first request (ADR 0055)."""
    return msgspec.json.Decoder(_Body)


@functools.cache
def _header_decoder() -> msgspec.json.Decoder[SessionHeader]:
    return msgspec.json.Decoder(SessionHeader)


class LoadedSession(msgspec.Struct):
    """A session as read back: valid for any provider after repair; ``notices`` says what was repaired.

    ``messages`` is the conversation to continue (the last compaction's messages and what followed);
    ``transcript`` is every message as it came into existence (what a resumed screen replays).
    """

    path: Path
    header: SessionHeader
    messages: list[ConversationEntry]
    usage: list[UsageRecord]
    notices: list[str] = msgspec.field(default_factory=list)
    changes: list[ChangeRecord] = msgspec.field(default_factory=list)
    """Checkpoints and command changes not yet undone, in the order they were made."""
    transcript: list[ConversationEntry] = msgspec.field(default_factory=list)
    lines: list[_Entry] = msgspec.field(default_factory=list)


def _encode(line: _Line) -> bytes:
    return _ENCODER.encode(line) + b"\n"


def _entry_line(entry: ConversationEntry) -> bytes:
    return _encode(_ReplyLine(entry) if isinstance(entry, ToolReply) else _MessageLine(entry))
