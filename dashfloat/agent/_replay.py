"""The rows a turn shows for its calls, live and replayed: a saved conversation is shown again as the live turn
showed it (one row for many calls a stopped turn left unrun, a cut call as it came). Pure: it returns the UI's
messages. Decision records: docs/decisions/0047 (empty calls), 0051 (cut calls), 0063 (the folded row).
"""

from __future__ import annotations

import collections
import re
from collections.abc import Sequence
from typing import Final

import msgspec

from dashfloat.catalogue import UNNAMED_CALL
from dashfloat.jsonvalue import JsonValue
from dashfloat.mentions import typed_prompt
from dashfloat.protocol import (
    AssembledCall,
    ChatMessage,
    ConversationEntry,
    MalformedCall,
    Message,
    PhaseChanged,
    SystemEntry,
    TokenReceived,
    ToolArgs,
    ToolCallRecord,
    ToolCallShown,
    ToolFailed,
    ToolReply,
    ToolResult,
    ToolResultShown,
    UserPromptShown,
)
from dashfloat.tool_args import parse_args

NOT_RUN_ROWS_MAX: Final = 3
"""Calls a stopped turn leaves unrun are shown a row each up to this many; more are one row that counts them (an
answer stopped at its 65th call printed 65 identical rows)."""

_NOT_RUN_CUT = " while this call was arriving"
_CUT_RECORDED = (
    ". It is recorded with the arguments {} and nothing of it ran: call it again, whole, if it is still needed"
)
_CUT_CAME = r"(?s)its arguments were cut off after \d+ characters: (?P<came>'.*'|\".*\")(?P<more>…?)\Z"
"""What ``llm.toolcalls`` says had come of a cut call's arguments (a repr, then "…" when there was more); compiled
by the first replay of a cut call, not at every start."""


def shown(call: AssembledCall) -> ToolArgs | MalformedCall:
    """What a tool row shows of ``call``: its arguments, or what the model wrote when they did not parse."""
    if call.args is not None:
        return call.args
    if call.cut:  # what had come, nothing when nothing had (not the recorded {})
        return MalformedCall(name=call.name, arguments=call.written, cut=True)
    return MalformedCall(name=call.name, arguments=call.written or call.arguments)


def result_row(call_id: str, name: str, result: ToolResult) -> ToolResultShown:
    """The outcome row of call ``call_id``: its status word and excerpt."""
    from dashfloat.agent._summary import result_shown  # imported with the first result shown (ADR 0053)

    return result_shown(call_id, name, result)


def not_run(call: AssembledCall, stopped: ToolResult) -> ToolResult:
    """The result of ``call``, not run because the turn stopped: a call the failure cut off says what had come
    (the conversation keeps it with the arguments ``{}``, the only JSON a provider takes back)."""
    if call.cut and isinstance(stopped, ToolFailed):
        return ToolFailed(error=f"{stopped.error}{_NOT_RUN_CUT}: {call.error}{_CUT_RECORDED}")
    return stopped


def not_run_row(names: list[str], why: str, cut: bool) -> str:
    """The one row for calls a stopped turn left unrun: how many, why, of which tools."""
    counts = collections.Counter(name or UNNAMED_CALL for name in names)
    tools = ", ".join(f"{count} {name}" for name, count in counts.most_common())
    return f"{len(names)} tool calls not run, {why}: {tools}{' (the last one cut off)' if cut else ''}"


def _cut_call(record: ToolCallRecord, reply: ToolReply | None) -> MalformedCall | None:
    """For a replay: the call a stream failure cut off, as its live row showed it (the record holds ``{}``; its
    result says what had come), or None for any other call."""
    result = reply.result if reply is not None else None
    if not isinstance(result, ToolFailed) or not result.error.startswith("not run: "):
        return None
    error = result.error
    if _NOT_RUN_CUT not in error or not error.endswith(_CUT_RECORDED):
        return None
    came = re.search(_CUT_CAME, error.removesuffix(_CUT_RECORDED))
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
        why = first.error.removeprefix("not run: ").split(_NOT_RUN_CUT, 1)[0]
        last = tail[-1].result
        cut = isinstance(last, ToolFailed) and _NOT_RUN_CUT in last.error
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


def replay_rows(messages: Sequence[ConversationEntry]) -> list[Message]:
    """The UI's messages that show ``messages`` again with the live vocabulary, ending idle."""
    out: list[Message] = []
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
            if message.content:
                out.append(TokenReceived(text=message.content))
            for record in message.tool_calls or []:
                if record.id not in folded:
                    out.append(
                        ToolCallShown(id=record.id, args=_cut_call(record, replies.get(record.id)) or _replayed(record))
                    )
    out.append(PhaseChanged(phase="idle"))
    return out
