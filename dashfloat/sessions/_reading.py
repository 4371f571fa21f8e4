"""Reading a session file: its header checked first, then every line decoded and the repairs applied."""

from __future__ import annotations

from pathlib import Path
from typing import assert_never

import msgspec

from dashfloat.protocol import (
    ConversationEntry,
    ToolFailed,
)
from dashfloat.sessions._format import (
    FORMAT_VERSION,
    HEADER_MAX_BYTES,
    ChangeRecord,
    CheckpointRecord,
    CommandRecord,
    CompactionRecord,
    LoadedSession,
    RewindRecord,
    SessionError,
    SessionHeader,
    UndoneRecord,
    UsageRecord,
    _body_decoder,
    _Entry,
    _header_decoder,
    _MessageLine,
    _ReplyLine,
)
from dashfloat.sessions._repair import (
    _UNREADABLE,
    _conversation,
    _count,
    _names,
    _repair,
    _text_reply,
    _truncate_to_turns,
)


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
