"""A saved conversation shown again as the live turn showed it: one row for many calls a stopped turn left unrun, a cut
call as it came. Pure: it returns the UI's messages. Imported by a replay only (a resume), not with the agent's code.
Decision records: docs/decisions/0047 (empty calls), 0051 (cut calls), 0063 (the folded row).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import msgspec

from dashfloat.agent._calls import CUT_RECORDED, NOT_RUN_CUT, NOT_RUN_ROWS_MAX, not_run_row, result_row
from dashfloat.jsonvalue import JsonValue
from dashfloat.mentions import typed_prompt
from dashfloat.protocol import (
    ChatMessage,
    ConversationEntry,
    MalformedCall,
    Message,
    PhaseChanged,
    ReasoningReceived,
    SystemEntry,
    TokenReceived,
    ToolArgs,
    ToolCallRecord,
    ToolCallShown,
    ToolFailed,
    ToolReply,
    UserPromptShown,
)
from dashfloat.tool_args import parse_args

_CUT_CAME = r"(?s)its arguments were cut off after \d+ characters: (?P<came>'.*'|\".*\")(?P<more>…?)\Z"
"""What ``llm.toolcalls`` says had come of a cut call's arguments (a repr, then "…" when there was more); compiled
by the first replay of a cut call, not at every start."""


def _cut_call(record: ToolCallRecord, reply: ToolReply | None) -> MalformedCall | None:
    """For a replay: the call a stream failure cut off, as its live row showed it (the record holds ``{}``; its
    result says what had come), or None for any other call."""
    result = reply.result if reply is not None else None
    if not isinstance(result, ToolFailed) or not result.error.startswith("not run: "):
        return None
    error = result.error
    if NOT_RUN_CUT not in error or not error.endswith(CUT_RECORDED):
        return None
    came = re.search(_CUT_CAME, error.removesuffix(CUT_RECORDED))
    written = ""
    if came is not None:
        import ast  # only a replay of a cut call needs it

        try:
            written = str(ast.literal_eval(came["came"])) + came["more"]
        except (ValueError, SyntaxError):
            written = ""
    return MalformedCall(name=record.function.name, arguments=written, cut=True)


def _folded_not_run(messages: Sequence[ConversationEntry]) -> dict[str, str]:
    """For a replay: the calls a stream failure left unrun that the live turn showed as one row (more than
    ``NOT_RUN_ROWS_MAX`` at an answer's end), each mapped to "" but the last, mapped to that row."""
    folded: dict[str, str] = {}
    for at, message in enumerate(messages):
        if not isinstance(message, ChatMessage) or not message.tool_calls:
            continue
        replies = [m for m in messages[at + 1 : at + 1 + len(message.tool_calls)] if isinstance(m, ToolReply)]
        tail: list[ToolReply] = []
        for reply in reversed(replies):
            result = reply.result
            if not isinstance(result, ToolFailed) or not result.error.startswith("not run: "):
                break
            tail.insert(0, reply)
        if len(tail) <= NOT_RUN_ROWS_MAX:
            continue
        first = tail[0].result
        assert isinstance(first, ToolFailed)
        why = first.error.removeprefix("not run: ").split(NOT_RUN_CUT, 1)[0]
        last = tail[-1].result
        cut = isinstance(last, ToolFailed) and NOT_RUN_CUT in last.error
        folded.update({reply.call_id: "" for reply in tail})
        folded[tail[-1].call_id] = not_run_row([reply.name for reply in tail], why, cut)
    return folded


def _replayed(record: ToolCallRecord) -> ToolArgs | MalformedCall:
    """A saved call's row: its arguments parsed again (as they were when it ran) or shown as written."""
    try:
        raw: JsonValue = msgspec.json.decode(record.function.arguments)
    except (msgspec.DecodeError, RecursionError):
        raw = None
    parsed = parse_args(record.function.name, raw)
    return MalformedCall(record.function.name, record.function.arguments) if isinstance(parsed, str) else parsed


def replay_rows(messages: Sequence[ConversationEntry], compacted: int = 0) -> list[Message]:
    """The UI's messages that show ``messages`` again with the live vocabulary, ending idle; the first
    ``compacted`` of them (what a compaction summarised) as one row (issue 37: they were replayed in full)."""
    out: list[Message] = []
    if compacted > 0:
        turns = sum(1 for m in messages[:compacted] if isinstance(m, ChatMessage) and m.role == "user")
        noun = "turn" if turns == 1 else "turns"
        out.append(SystemEntry(text=f"{turns} earlier {noun} compacted into a summary (the model reads the summary)"))
        messages = messages[compacted:]
    folded = _folded_not_run(messages)  # as the live turn showed them: one row past NOT_RUN_ROWS_MAX
    replies = {message.call_id: message for message in messages if isinstance(message, ToolReply)}
    for message in messages:
        if isinstance(message, ToolReply):
            if message.call_id not in folded:
                out.append(result_row(message.call_id, message.name, message.result))
            elif folded[message.call_id]:
                out.append(SystemEntry(text=folded[message.call_id], level="warning"))
        elif message.role == "user" and message.content is not None:
            out.append(UserPromptShown(text=typed_prompt(message.content)))  # not the files it attached
        elif message.role == "assistant":
            if message.reasoning:
                out.append(ReasoningReceived(text=message.reasoning))
            if message.content:
                out.append(TokenReceived(text=message.content))
            for record in message.tool_calls or []:
                if record.id not in folded:
                    out.append(
                        ToolCallShown(id=record.id, args=_cut_call(record, replies.get(record.id)) or _replayed(record))
                    )
    out.append(PhaseChanged(phase="idle"))
    return out
