"""Which kept reasoning a request carries (agent/_echo.py, ADR 0077), that the estimate counts exactly that, and that
sessions keep it: written by this version, and older ones without it."""

from __future__ import annotations

import json
from pathlib import Path

from dashfloat.agent._context import raw_request_tokens
from dashfloat.agent._echo import echoed
from dashfloat.protocol import ChatMessage, FunctionCall, ReasoningEcho, ToolCallRecord
from dashfloat.sessions import log as session_log

CALL = ToolCallRecord(id="c1", function=FunctionCall(name="list_directory", arguments="{}"))


def answer(reasoning: str, calls: bool = True, field: str = "reasoning_content") -> ChatMessage:
    return ChatMessage(
        role="assistant",
        content=None if calls else "done",
        tool_calls=[CALL] if calls else None,
        reasoning=reasoning,
        reasoning_field=field,  # type: ignore[arg-type]
    )


def tool() -> ChatMessage:
    return ChatMessage(role="tool", tool_call_id="c1", content="{}")


CONVERSATION = [
    ChatMessage(role="user", content="first"),
    answer("old call"),
    tool(),
    answer("old answer", calls=False),
    ChatMessage(role="user", content="second"),
    answer("new call"),
    tool(),
    answer("think call", field="think"),
    tool(),
]


def kept(mode: ReasoningEcho) -> list[str | None]:
    return [m.reasoning for m in echoed(CONVERSATION, mode) if m.role == "assistant"]


def test_auto_sends_it_back_on_tool_call_messages_of_the_current_turn_only() -> None:
    assert kept("auto") == [None, None, "new call", None]


def test_always_sends_every_kept_reasoning_but_never_think_text_and_never_sends_none() -> None:
    assert kept("always") == ["old call", "old answer", "new call", None]
    assert kept("never") == [None, None, None, None]


def test_what_is_not_sent_is_not_counted() -> None:
    sent = echoed(CONVERSATION, "auto")
    bare = [
        ChatMessage(role=m.role, content=m.content, tool_calls=m.tool_calls, tool_call_id=m.tool_call_id)
        for m in CONVERSATION
    ]
    assert raw_request_tokens(bare) < raw_request_tokens(sent) < raw_request_tokens(CONVERSATION)


def test_a_session_keeps_reasoning_and_an_older_one_without_it_still_loads(tmp_path: Path) -> None:
    header = session_log.new_header(cwd=tmp_path, provider="p", model="m", dashfloat_version="0")
    with session_log.SessionWriter.create(tmp_path, header) as writer:
        for message in CONVERSATION[:4]:
            writer.append(message)
        path = writer.path
    loaded = session_log.load(path)
    assert loaded.header.format == session_log.FORMAT_VERSION == 3  # the format did not change: fields were added
    assistants = [m for m in loaded.messages if isinstance(m, ChatMessage) and m.role == "assistant"]
    assert [(m.reasoning, m.reasoning_field) for m in assistants] == [
        ("old call", "reasoning_content"),
        ("old answer", "reasoning_content"),
    ]
    # The same session as an older DashFloat wrote it: no reasoning fields at all.
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        for name in ("reasoning", "reasoning_field"):
            line.get("message", {}).pop(name, None)
    old = tmp_path / "old" / path.name
    old.parent.mkdir()
    old.write_text("".join(json.dumps(line) + "\n" for line in lines))
    again = session_log.load(old)
    olds = [m for m in again.messages if isinstance(m, ChatMessage) and m.role == "assistant"]
    assert [(m.reasoning, m.content) for m in olds] == [(None, None), (None, "done")]
