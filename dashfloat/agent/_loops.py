"""Loops cut early (issue 39, ADR 0079): a call the model makes again right after its result is not run.

A small model that does not understand a result often asks for it again, answer after answer, until the turn's
episode limit; the repetition guard only sees text within one answer. Here the answer's calls are compared with
the answers just before it (since the last prompt): a call with the same name and arguments as one in the
previous answer is answered with a note instead of run (the model is told first), and once the model has made the
same call ``SAME_CALL_STOP_AFTER`` times in a row, the turn stops and the person is told too. A call repeated
within one answer is answered the same way (its first copy runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from dashfloat.jsonvalue import JsonValue
from dashfloat.protocol import AssembledCall, ChatMessage, ConversationEntry

SAME_CALL_STOP_AFTER: Final = 3
"""Answers in a row making one same call that stop the turn (the first runs, the second is refused with a note)."""


def _key(name: str, arguments: str) -> tuple[str, JsonValue]:
    """A call's identity: its name and its arguments as a value (the order of keys does not matter)."""
    try:
        value: JsonValue = msgspec.json.decode(arguments)
    except msgspec.DecodeError:
        value = arguments
    return name, value


def _previous_answers(conversation: Sequence[ConversationEntry]) -> list[list[tuple[str, JsonValue]]]:
    """The calls of each answer before the last one since the last prompt, the latest first."""
    answers: list[list[tuple[str, JsonValue]]] = []
    for entry in reversed(conversation):
        if not isinstance(entry, ChatMessage):
            continue
        if entry.role == "user":
            break
        if entry.role == "assistant":
            answers.append([_key(r.function.name, r.function.arguments) for r in entry.tool_calls or []])
    return answers[1:]  # the first is the answer whose calls are being checked, already recorded


def _streak(key: tuple[str, JsonValue], answers: list[list[tuple[str, JsonValue]]]) -> int:
    """How many answers in a row, going back, made the call ``key``."""
    count = 0
    for calls in answers:
        if key not in calls:
            break
        count += 1
    return count


def repeated_calls(
    calls: list[AssembledCall], conversation: Sequence[ConversationEntry]
) -> tuple[list[AssembledCall], str | None]:
    """``calls`` with each repeat made a call that does not run (its error is the note the model reads), and why the
    turn stops (``not run: ...``) when one call has been made ``SAME_CALL_STOP_AFTER`` times in a row, else None."""
    answers = _previous_answers(conversation)
    checked: list[AssembledCall] = []
    seen: list[tuple[str, JsonValue]] = []
    stop: str | None = None
    for call in calls:
        key = _key(call.name or "unknown", call.arguments)
        shown = f"{call.name}({call.arguments})"
        streak = _streak(key, answers)
        if streak + 1 >= SAME_CALL_STOP_AFTER and stop is None:
            stop = (
                f"not run: the model made the same call {streak + 1} times in a row ({shown}); the turn was stopped "
                "so it does not loop"
            )
        if streak:
            note = (
                "not run: this is the same call as in your previous answer, and its result is above; the same call "
                "gives the same result. Use that result: answer, or make a different call (a different tool, "
                "path, command or arguments)."
            )
            checked.append(msgspec.structs.replace(call, args=None, error=note))
        elif key in seen:
            note = "not run: the same call is earlier in this answer; its result is above. Do not repeat a call."
            checked.append(msgspec.structs.replace(call, args=None, error=note))
        else:
            checked.append(call)
        seen.append(key)
    return checked, stop
