"""Loops cut early (issue 39, ADR 0079): a call made again right after its result is refused, then the turn stops."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dashfloat.agent._loops import SAME_CALL_STOP_AFTER, repeated_calls
from dashfloat.protocol import (
    AssembledCall,
    ChatMessage,
    ConversationEntry,
    FunctionCall,
    SubmitPrompt,
    SystemEntry,
    ToolCallRecord,
    ToolReply,
    TurnEnded,
    WriteFileResult,
)
from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from dashfloat.tool_args import assemble
from tests.e2e import agent_tree, collect, turn_over

WRITE: Any = {"path": "out.txt", "content": "hi\n"}
DONE = WriteFileResult(path="out.txt", bytes=3, created=True)


def answer(*calls: AssembledCall) -> list[ConversationEntry]:
    records = [ToolCallRecord(id=c.id, function=FunctionCall(name=c.name, arguments=c.arguments)) for c in calls]
    replies: list[ConversationEntry] = [ToolReply(call_id=c.id, name=c.name, result=DONE) for c in calls]
    return [ChatMessage(role="assistant", tool_calls=records), *replies]


def write(call_id: str, **args: Any) -> AssembledCall:
    return assemble(call_id, "write_file", {**WRITE, **args})


def test_a_call_made_again_in_the_next_answer_is_not_run_and_the_model_is_told() -> None:
    first, again = write("a"), write("b")
    conversation = [ChatMessage(role="user", content="go"), *answer(first), *answer(again)]
    [checked], stop = repeated_calls([again], conversation)
    assert stop is None and checked.args is None and checked.error is not None
    assert checked.error.startswith("not run: this is the same call as in your previous answer")


def test_the_same_arguments_in_another_order_are_the_same_call() -> None:
    first = assemble("a", "write_file", {"path": "out.txt", "content": "hi\n"})
    again = assemble("b", "write_file", {"content": "hi\n", "path": "out.txt"})
    conversation = [ChatMessage(role="user", content="go"), *answer(first), *answer(again)]
    assert repeated_calls([again], conversation)[0][0].args is None


def test_a_different_call_or_one_before_the_prompt_runs() -> None:
    first, other = write("a"), write("b", content="bye\n")
    conversation = [ChatMessage(role="user", content="go"), *answer(first), *answer(other)]
    assert repeated_calls([other], conversation) == ([other], None)
    again = write("c")
    conversation = [*answer(first), ChatMessage(role="user", content="again please"), *answer(again)]
    assert repeated_calls([again], conversation) == ([again], None)


def test_a_call_repeated_within_one_answer_runs_once() -> None:
    one, two = write("a"), write("b")
    conversation = [ChatMessage(role="user", content="go"), *answer(one, two)]
    checked, stop = repeated_calls([one, two], conversation)
    assert checked[0] == one and checked[1].args is None and stop is None
    assert checked[1].error is not None and "earlier in this answer" in checked[1].error


def test_the_turn_stops_once_the_same_call_was_made_stop_after_times_in_a_row() -> None:
    calls = [write(f"c{n}") for n in range(SAME_CALL_STOP_AFTER)]
    conversation: list[ConversationEntry] = [ChatMessage(role="user", content="go")]
    for n, call in enumerate(calls):
        conversation += answer(call)
        _, stop = repeated_calls([call], conversation)
        assert (stop is not None) == (n + 1 >= SAME_CALL_STOP_AFTER)  # crossing the bound, not before
    assert stop is not None and stop.startswith(f"not run: the model made the same call {SAME_CALL_STOP_AFTER} times")


def test_a_model_that_re_emits_its_call_after_the_result_is_told_then_stopped(tmp_path: Path) -> None:
    """The scripted model makes one write_file call in every answer, as the 0.5B model did for 39-96 s."""
    tree = tmp_path / "proj"
    tree.mkdir()
    with ScriptedServer() as server, agent_tree(server, tree, approval="all") as link:
        server.handler = lambda body: tool_calls_reply([("c", "write_file", WRITE)])
        link.send(SubmitPrompt(text="write out.txt"))
        messages = collect(link, turn_over)
        requests = list(server.requests)
    assert len(requests) == SAME_CALL_STOP_AFTER  # not the 50 of the episode limit
    second_results = [json.loads(m["content"]) for m in requests[1]["messages"] if m["role"] == "tool"]
    assert second_results == [{"ok": True, "path": "out.txt", "bytes": 3, "created": True}]
    third_results = [json.loads(m["content"]) for m in requests[2]["messages"] if m["role"] == "tool"]
    assert third_results[-1]["error"].startswith("not run: this is the same call as in your previous answer")
    warnings = [m.text for m in messages if isinstance(m, SystemEntry) and m.level == "warning"]
    assert any(text.startswith(f"the model made the same call {SAME_CALL_STOP_AFTER} times") for text in warnings)
    assert [m.outcome for m in messages if isinstance(m, TurnEnded)] == ["limit"]


def test_a_text_written_call_re_emitted_is_cut_the_same_way(tmp_path: Path) -> None:
    tree = tmp_path / "proj"
    tree.mkdir()
    call = json.dumps({"name": "list_directory", "arguments": {"path": "."}})
    with ScriptedServer() as server, agent_tree(server, tree, approval="all") as link:
        server.handler = lambda body: text_reply(f"```json\n{call}\n```")
        link.send(SubmitPrompt(text="list"))
        messages = collect(link, turn_over)
        assert len(server.requests) == SAME_CALL_STOP_AFTER
    assert [m.outcome for m in messages if isinstance(m, TurnEnded)] == ["limit"]
