"""The scripted models `make eval` runs against in CI: a real HTTP SSE server on 127.0.0.1 (ScriptedServer).

The server is stateless per request, so tasks can run in parallel against one server: it recognises the task by
the conversation's first user message (the instruction, as DashFloat sent it) and its step by the number of tool
results the conversation already holds.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any, Literal

from bench.eval._tasks import Task
from dashfloat.testing.sse_server import Reply, ScriptedServer, count_tokens, error_reply, text_reply, tool_calls_reply

ScriptedKind = Literal["oracle", "nothing"]
ORACLE_WINDOW_TOKENS = 32768
"""The window the scripted server reports at ``/props`` (as llama.cpp does), so DashFloat assumes nothing."""
NOTHING_ANSWER = "I looked at the files. Everything seems fine; no change is needed."


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _instruction(body: dict[str, Any]) -> str:
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "user":
            return _text(message.get("content")).strip()
    return ""


def _tool_results(body: dict[str, Any]) -> int:
    return sum(1 for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "tool")


def oracle_reply(tasks: dict[str, Task], body: dict[str, Any]) -> Reply:
    """The oracle's answer to one chat request: the task's next solution call, or its final text."""
    task = tasks.get(_instruction(body))
    if task is None:
        return error_reply(400, "oracle: the first user message is not the instruction of any task it was given")
    step = _tool_results(body)
    prompt = count_tokens(body)
    if step < len(task.calls):
        call = task.calls[step]
        completion = len(json.dumps(call.args)) // 4 + 1
        return tool_calls_reply([(f"call_{step + 1}", call.tool, call.args)], usage=(prompt, completion))
    final = task.final or "Done."
    return text_reply(final, chunk_size=64, usage=(prompt, len(final) // 4 + 1))


def nothing_reply(body: dict[str, Any]) -> Reply:
    """A model that does nothing: every answer is prose, no tool is ever called (every grader must fail it)."""
    return text_reply(NOTHING_ANSWER, chunk_size=64, usage=(count_tokens(body), len(NOTHING_ANSWER) // 4 + 1))


@contextlib.contextmanager
def scripted_model(tasks: list[Task], kind: ScriptedKind) -> Iterator[ScriptedServer]:
    """A running scripted server playing ``kind`` for ``tasks``; its ``base_url`` is what DashFloat is given."""
    by_instruction = {task.instruction: task for task in tasks}
    with ScriptedServer() as server:
        server.props = {"default_generation_settings": {"n_ctx": ORACLE_WINDOW_TOKENS}}
        if kind == "oracle":
            server.handler = lambda body: oracle_reply(by_instruction, body)
        else:
            server.handler = nothing_reply
        yield server
