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
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Self, assert_never

import msgspec

from dashfloat.mentions import typed_prompt
from dashfloat.protocol import (
    CapturedOutput,
    ChatMessage,
    Checkpoint,
    CommandChanges,
    CommandExited,
    CommandTimedOut,
    ConversationEntry,
    EditFileResult,
    ListDirectoryResult,
    ReadFileResult,
    SessionInfo,
    ToolCancelled,
    ToolFailed,
    ToolRejected,
    ToolReply,
    ToolResult,
    Usage,
    WriteFileResult,
    result_json,
)
from dashfloat.sessions import _lock
from dashfloat.sessions._files import fsync_dir, replace_atomically, write_all
from dashfloat.sessions.state import ensure_private_dir

# 2: checkpoint, command, undone and rewind lines; 3: tool results are typed ``tool_result`` lines
# (before 3 they were JSON text in ``tool`` messages, read back by _text_result), and compaction lines
FORMAT_VERSION = 3
SESSION_SUFFIX = ".jsonl"
HEADER_MAX_BYTES = 16 * 1024  # a first line longer than this is not a header: junk is rejected unread
TITLE_MAX_CHARS = 60
NOTICE_MAX_ITEMS = 5  # ids / line numbers named in one notice before "and N more"

SESSION_ID_MAX_CHARS = 128
"""The longest session id: ``<id>.jsonl``, ``<id>.lock`` and the ``.<id>.<hex>.tmp`` beside them stay far below a
file name's 255 bytes, and an id still reads as a name in a listing."""

_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class SessionError(Exception):
    """A session file that cannot be used as asked; the message is one line naming the file."""


class SessionLocked(SessionError):
    """Another process is writing this session; the message names it (PID, host, since when)."""


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


def _encode(line: _Line) -> bytes:
    return _ENCODER.encode(line) + b"\n"


def _entry_line(entry: ConversationEntry) -> bytes:
    return _encode(_ReplyLine(entry) if isinstance(entry, ToolReply) else _MessageLine(entry))


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


# ---------------------------------------------------------------- reading and repair


def read_header(path: Path) -> SessionHeader:
    """The session's header, without reading the rest: SessionError if it is not one this version can resume."""
    return _read_header(path, _read_first_line(path))


def load(path: Path) -> LoadedSession:
    """Read a session and repair it in memory (the file is not touched)."""
    return _parse(path).loaded


class _Parsed(msgspec.Struct):
    loaded: LoadedSession
    tail_start: int | None  # offset of a dropped last line
    needs_rewrite: bool  # repairs not expressible as "truncate the tail, append results", or an older format
    appended_repairs: list[ConversationEntry]


def _read_header(path: Path, first: bytes) -> SessionHeader:
    """Validate the first line; refuses junk and newer formats with a message naming ``path``."""
    try:
        raw = msgspec.json.decode(first)
    except msgspec.DecodeError:
        raw = None
    if not isinstance(raw, dict) or raw.get("kind") != "header":
        raise SessionError(f"{path}: not a DashFloat session (the first line is not a session header)")
    version = raw.get("format")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise SessionError(f"{path}: not a DashFloat session (the header has no valid format version)")
    if version > FORMAT_VERSION:
        raise SessionError(f"{path}: written by a newer DashFloat (format {version}); upgrade to resume it")
    try:
        return _header_decoder().decode(first)
    except msgspec.DecodeError as exc:
        raise SessionError(f"{path}: not a DashFloat session (malformed header: {exc})") from None


def _read_first_line(path: Path) -> bytes:
    """The first line without its newline; longer than HEADER_MAX_BYTES means junk."""
    try:
        with open(path, "rb") as f:
            first = f.readline(HEADER_MAX_BYTES + 1)
    except OSError as exc:
        raise SessionError(f"{path}: cannot read the session: {exc.strerror}") from exc
    first = first.removesuffix(b"\n")
    if len(first) > HEADER_MAX_BYTES:
        raise SessionError(f"{path}: not a DashFloat session (the first line is not a session header)")
    return first


def _parse(path: Path) -> _Parsed:
    header = _read_header(path, _read_first_line(path))
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SessionError(f"{path}: cannot read the session: {exc.strerror}") from exc
    lines = data.split(b"\n")
    terminated = data.endswith(b"\n")
    if terminated:
        lines.pop()  # the empty piece after the final newline
    entries: list[_Entry] = []
    changes: list[ChangeRecord] = []
    names: dict[str, str] = {}  # call id -> tool name, for results saved as text (format < 3)
    unreadable: list[str] = []
    corrupt: list[int] = []
    notices: list[str] = []
    tail_start: int | None = None
    offset = len(lines[0]) + 1
    last = len(lines) - 1
    for number, line in enumerate(lines[1:], start=2):
        start = offset
        offset += len(line) + 1
        if not line.strip():
            continue
        try:
            decoded = _body_decoder().decode(line)
        except msgspec.DecodeError:
            decoded = None
        if number - 1 == last and (decoded is None or not terminated):
            # The writer died mid-line: drop the fragment. Even a complete-looking JSON value without
            # its newline is dropped, since its append never returned to the caller.
            tail_start = start
            notices.append(f"{path.name}: dropped a torn last line ({len(line)} bytes; the writer stopped mid-write)")
            continue
        if decoded is None:
            corrupt.append(number)
            continue
        match decoded:
            case _MessageLine(message=message) if message.role == "tool":
                reply = _text_reply(message, names)
                if isinstance(reply.result, ToolFailed) and reply.result.error.startswith(_UNREADABLE):
                    unreadable.append(reply.call_id)
                entries.append(reply)
            case _MessageLine(message=message):
                names.update((call.id, call.function.name) for call in message.tool_calls or [])
                entries.append(message)
            case _ReplyLine(reply=reply):
                entries.append(reply)
            case UsageRecord() | CompactionRecord():
                entries.append(decoded)
            case CheckpointRecord() | CommandRecord():
                changes.append(decoded)
            case UndoneRecord(turns=turns):
                changes = [c for c in changes if c.turn not in turns]
            case RewindRecord(turns=kept):
                changes = [c for c in changes if c.turn <= kept]
                entries = _truncate_to_turns(entries, kept)
            case _:
                assert_never(decoded)
    if corrupt:
        notices.append(f"{path.name}: skipped {_count(len(corrupt), 'unreadable line')}: {_names(corrupt)}")
    if unreadable:
        notices.append(
            f"{path.name}: {_count(len(unreadable), 'saved tool result')} not understood: {_names(unreadable)}"
        )
    repaired, repair_notices, appended = _repair(entries)
    notices += [f"{path.name}: {n}" for n in repair_notices]
    loaded = LoadedSession(
        path=path,
        header=header,
        messages=_conversation(repaired),
        usage=[e for e in repaired if isinstance(e, UsageRecord)],
        notices=notices,
        changes=changes,
        transcript=[e for e in repaired if not isinstance(e, UsageRecord | CompactionRecord)],
        lines=repaired,
    )
    # A header without its newline (a crash inside create) would glue onto the next append; an older format
    # is rewritten once with the current header, so an older reader refuses it rather than misreading it.
    in_place = appended is not None and not corrupt and (terminated or len(lines) > 1)
    if header.format < FORMAT_VERSION:
        loaded.header = msgspec.structs.replace(header, format=FORMAT_VERSION)
        in_place = False
    return _Parsed(loaded, tail_start, not in_place, appended or [])


def _truncate_to_turns(entries: list[_Entry], kept: int) -> list[_Entry]:
    """Entries before the user prompt number ``kept + 1`` (all of them when there is no such prompt)."""
    prompts = 0
    for index, entry in enumerate(entries):
        if isinstance(entry, ChatMessage) and entry.role == "user":
            prompts += 1
            if prompts > kept:
                return entries[:index]
    return entries


def _conversation(entries: Sequence[_Entry]) -> list[ConversationEntry]:
    """The conversation to continue: the last compaction's messages (results typed again), then every entry
    after it."""
    conversation: list[ConversationEntry] = []
    for entry in entries:
        if isinstance(entry, CompactionRecord):
            names = {c.id: c.function.name for m in entry.messages for c in m.tool_calls or []}
            conversation = [_text_reply(m, names) if m.role == "tool" else m for m in entry.messages]
        elif not isinstance(entry, UsageRecord):
            conversation.append(entry)
    return conversation


def repair_conversation(entries: Sequence[ConversationEntry]) -> tuple[list[ConversationEntry], list[str]]:
    """Make ``entries`` valid for any provider: every tool call answered, no orphan tool results."""
    repaired, notices, _ = _repair(list(entries))
    return [e for e in repaired if not isinstance(e, UsageRecord | CompactionRecord)], notices


def _cancelled(call: tuple[str, str]) -> ToolReply:
    return ToolReply(call_id=call[0], name=call[1], result=ToolCancelled())


def _repair(entries: list[_Entry]) -> tuple[list[_Entry], list[str], list[ConversationEntry] | None]:
    """The repaired entries, notices, and the synthesized suffix when the repair only appends (else None)."""
    out: list[_Entry] = []
    pending: list[tuple[str, str]] = []  # (id, name) of the latest assistant's calls still without a result
    synthesized: list[str] = []
    orphans: list[str] = []
    in_place = True
    for entry in entries:
        if isinstance(entry, UsageRecord):
            out.append(entry)
            continue
        if isinstance(entry, CompactionRecord):
            # Written at an episode boundary: nothing is pending. A damaged file may disagree; then the
            # compacted conversation carries its own answered calls and nothing before it is pending.
            if pending:
                out += [_cancelled(c) for c in pending]
                synthesized += [c[0] for c in pending]
                in_place = False
            pending = []
            out.append(entry)
            continue
        if isinstance(entry, ToolReply):
            answered = next((call for call in pending if call[0] == entry.call_id), None)
            if answered is not None:
                pending.remove(answered)
                out.append(entry)
            else:
                orphans.append(entry.call_id or "(no id)")
                in_place = False
            continue
        if pending:
            # Results missing before a later message: insert them where the provider expects them.
            out += [_cancelled(c) for c in pending]
            synthesized += [c[0] for c in pending]
            in_place = False
        pending = [(c.id, c.function.name) for c in entry.tool_calls or []]
        out.append(entry)
    tail: list[ConversationEntry] = [_cancelled(c) for c in pending]
    synthesized += [c[0] for c in pending]
    out += tail
    notices = []
    if synthesized:
        notices.append(f"marked {_count(len(synthesized), 'unanswered tool call')} as cancelled: {_names(synthesized)}")
    if orphans:
        notices.append(f"dropped {_count(len(orphans), 'tool result')} matching no call: {_names(orphans)}")
    return out, notices, tail if in_place else None


# ---------------------------------------------------------------- formats 1 and 2: results as JSON text

_UNREADABLE = "unreadable saved result: "
_TIMED_OUT = re.compile(r"timed out after (\S+)s")


def _text_reply(message: ChatMessage, names: Mapping[str, str]) -> ToolReply:
    """An older file's ``role: "tool"`` message as the typed result that produced its JSON."""
    call_id = message.tool_call_id or ""
    content = message.content or ""
    result = _text_result(content)
    if result is None or result_json(result) != content:  # anything not rebuilt byte for byte is kept as text
        result = ToolFailed(error=_UNREADABLE + content)
    return ToolReply(call_id=call_id, name=names.get(call_id, "?"), result=result)


def _text_result(content: str) -> ToolResult | None:
    """Which result member wrote ``content`` (formats < 3 named none): the one place keys are read back."""
    try:
        raw = msgspec.json.decode(content)
        if not isinstance(raw, dict):
            return None
        fields = {k: v for k, v in raw.items() if k != "ok"}
        output = msgspec.convert(fields, CapturedOutput) if "output" in fields else None
        if raw.get("rejected") is True:
            return ToolRejected()
        if raw.get("cancelled") is True:
            return ToolCancelled(output=output)
        if output is not None and "error" in raw:
            timed_out = _TIMED_OUT.fullmatch(raw["error"])
            if timed_out is None:
                return None
            exit_code = msgspec.convert(raw.get("exit_code"), int | None)
            return CommandTimedOut(timeout_s=float(timed_out[1]), output=output, exit_code=exit_code)
        if output is not None:
            signal = msgspec.convert(raw.get("signal"), str | None)
            return CommandExited(exit_code=msgspec.convert(raw["exit_code"], int), output=output, signal=signal)
        if "error" in raw:
            return ToolFailed(error=msgspec.convert(raw["error"], str))
        shape = next(
            (s for key, s in _TEXT_SHAPES if key in fields),
            None,
        )
        return None if shape is None else msgspec.convert(fields, shape)
    except (msgspec.DecodeError, msgspec.ValidationError, KeyError, TypeError, ValueError):
        return None


# The key that only that tool's success result has.
_TEXT_SHAPES: tuple[tuple[str, type[ToolResult]], ...] = (
    ("content", ReadFileResult),
    ("entries", ListDirectoryResult),
    ("created", WriteFileResult),
    ("line", EditFileResult),
)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _names(items: Sequence[object]) -> str:
    shown = ", ".join(str(i) for i in items[:NOTICE_MAX_ITEMS])
    more = len(items) - NOTICE_MAX_ITEMS
    return f"{shown} and {more} more" if more > 0 else shown


# ---------------------------------------------------------------- finding sessions


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
