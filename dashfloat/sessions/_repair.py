"""The repair rules a session passes through when read: every tool call answered, no orphan result, a rewind
applied; and results saved as JSON text (formats 1 and 2) typed again."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import msgspec

from dashfloat.protocol import (
    CapturedOutput,
    ChatMessage,
    CommandExited,
    CommandTimedOut,
    ConversationEntry,
    EditFileResult,
    ListDirectoryResult,
    ReadFileResult,
    ToolCancelled,
    ToolFailed,
    ToolRejected,
    ToolReply,
    ToolResult,
    WriteFileResult,
    result_json,
)
from dashfloat.sessions._format import CompactionRecord, UsageRecord, _Entry

NOTICE_MAX_ITEMS = 5  # ids / line numbers named in one notice before "and N more"


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
