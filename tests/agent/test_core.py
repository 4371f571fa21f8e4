"""The agent's state machine, driven in-process message by message."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashfloat.agent import MAX_EPISODES_PER_TURN, AgentCore, AgentOptions, MemoryJournal, provider_message
from dashfloat.agent._calls import NOT_RUN_ROWS_MAX
from dashfloat.agent._context import raw_request_tokens, tokens_text
from dashfloat.agent._mentions import with_attachments
from dashfloat.agent._prompt import system_message
from dashfloat.agent._reports import core_usage
from dashfloat.catalogue import summarize_call
from dashfloat.jsonvalue import JsonValue
from dashfloat.llm.toolcalls import _ERROR_EXCERPT_CHARS as CUT_EXCERPT_CHARS
from dashfloat.llm.toolcalls import ToolCalls
from dashfloat.protocol import (
    AssembledCall,
    Cancel,
    CancelStream,
    CancelTool,
    ChangeRecorded,
    ChatMessage,
    ClearSession,
    ConfirmRequested,
    ContentDelta,
    ContextChanged,
    DecideConfirmation,
    EditFileResult,
    FrameRejected,
    ListDirectoryArgs,
    ListDirectoryResult,
    MalformedCall,
    Message,
    PhaseChanged,
    PreviewReady,
    PreviewTool,
    ProviderConfig,
    ReadFileArgs,
    ReadFileResult,
    ReasoningDelta,
    RunTool,
    SandboxPolicy,
    SandboxState,
    SessionCleared,
    SessionStarted,
    SetApproval,
    ShowUsage,
    StartStream,
    StreamDone,
    StreamFailed,
    SubmitPrompt,
    SystemEntry,
    TokenReceived,
    ToolArgs,
    ToolCallShown,
    ToolCancelled,
    ToolFailed,
    ToolFinished,
    ToolReply,
    ToolResultShown,
    TurnEnded,
    Usage,
    UsageShown,
    UserPromptShown,
    WriteFileArgs,
    WriteFileResult,
    result_json,
)
from dashfloat.tool_args import assemble

PROVIDER = ProviderConfig(name="test", base_url="http://127.0.0.1:9/v1", model="m", context_window=100_000)


def make_core(approval: str = "ask") -> AgentCore:
    options = AgentOptions(provider=PROVIDER, cwd="/work", approval=approval)  # type: ignore[arg-type]
    return AgentCore(options, MemoryJournal())


def take(core: AgentCore, dest: str | None = None) -> list[Message]:
    out = [m for d, m in core.outbox if dest is None or d == dest]
    core.outbox.clear()
    return out


def call(call_id: str, name: str, **args: Any) -> AssembledCall:
    return assemble(call_id, name, args)


def done(core: AgentCore, content: str = "", calls: list[AssembledCall] | None = None, **kw: Any) -> None:
    kw.setdefault("finish_reason", "tool_calls" if calls else "stop")
    core.on_llm(StreamDone(request_id=core.request_id, content=content, tool_calls=calls or [], **kw))


def read(content: str) -> ReadFileResult:
    return ReadFileResult(path="x", content=content, offset=1, lines=1, total_lines=1, total_bytes=1, truncated=False)


def sent(core: AgentCore) -> list[ChatMessage]:
    """The conversation as the provider gets it (tool results as the model reads them)."""
    return [provider_message(entry) for entry in core.conversation]


def assert_no_dangling(conversation: list[ChatMessage]) -> None:
    """Every assistant tool call is followed by its tool message, in call order."""
    for i, message in enumerate(conversation):
        if message.role == "assistant" and message.tool_calls:
            ids = [c.id for c in message.tool_calls]
            following = [m.tool_call_id for m in conversation[i + 1 : i + 1 + len(ids)]]
            assert following == ids, (ids, following)


def test_plain_answer_turn() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="hi"))
    out = take(core)
    start = next(m for m in out if isinstance(m, StartStream))
    assert start.messages[0].role == "system" and "/work" in (start.messages[0].content or "")
    assert start.messages[1] == ChatMessage(role="user", content="hi")
    assert PhaseChanged(phase="streaming") in out
    core.on_llm(ContentDelta(request_id=core.request_id, text="hel"))
    assert take(core) == [TokenReceived(text="hel")]
    done(core, "hello", usage=Usage(10, 2, 12))
    out = take(core)
    assert out[-3:] == [
        UsageShown(usage=Usage(10, 2, 12)),
        TurnEnded(outcome="completed"),
        PhaseChanged(phase="idle"),
    ]
    assert core.conversation[-1] == ChatMessage(role="assistant", content="hello")


def test_read_only_calls_run_without_asking_and_results_follow_in_order() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="look"))
    take(core)
    done(core, "", [call("a", "read_file", path="x"), call("b", "list_directory")])
    out = take(core)
    assert ToolCallShown(id="a", args=ReadFileArgs(path="x")) in out
    assert RunTool(call_id="a", args=ReadFileArgs(path="x")) in out
    core.on_executor(ToolFinished(call_id="a", result=read("1\n2")))
    out = take(core)
    assert ToolResultShown(id="a", name="read_file", status="ok", output="1\n2") in out
    assert RunTool(call_id="b", args=ListDirectoryArgs()) in out
    core.on_executor(
        ToolFinished(call_id="b", result=ListDirectoryResult(path=".", entries=[], total=0, truncated=False))
    )
    out = take(core)
    start = next(m for m in out if isinstance(m, StartStream))
    roles = [m.role for m in start.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool"]
    assistant = start.messages[2]
    assert assistant.tool_calls is not None
    assert assistant.tool_calls[0].function.arguments == '{"path":"x"}'  # canonical re-encoding
    assert [m.tool_call_id for m in start.messages[3:]] == ["a", "b"]
    assert start.messages[3].content == result_json(read("1\n2"))


def test_each_requests_usage_is_forwarded_as_it_ends_and_the_final_episodes_at_the_turns_end() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    done(core, "", [call("a", "read_file", path="x")], usage=Usage(100, 1, 101))
    assert [m for m in take(core) if isinstance(m, UsageShown)] == [UsageShown(Usage(100, 1, 101), request=True)]
    core.on_executor(ToolFinished(call_id="a", result=read("")))
    take(core)
    done(core, "fin", usage=Usage(200, 2, 202))
    usages = [m for m in take(core) if isinstance(m, UsageShown)]
    assert usages == [UsageShown(Usage(200, 2, 202), request=True), UsageShown(usage=Usage(200, 2, 202))]


def test_a_turn_without_usage_shows_the_estimated_context_instead() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    done(core, "fin")
    out = take(core)
    *_, changed = [m for m in out if isinstance(m, ContextChanged)]  # the first: the request as it went (ADR 0092)
    assert changed.tokens > 0
    assert out.index(changed) < out.index(TurnEnded(outcome="completed"))
    assert not any(isinstance(m, UsageShown) for m in out)


def test_after_clear_and_resume_the_context_shown_is_what_the_next_request_carries() -> None:
    # After /clear the status bar read 0, though the system prompt and the tools go with every request.
    core = make_core()
    core.on_ui(SubmitPrompt(text="x" * 3000))
    done(core, "y" * 3000, usage=Usage(prompt_tokens=1500, completion_tokens=1000, total_tokens=2500))
    conversation = list(core.conversation)
    take(core)
    core.on_ui(ClearSession())
    out = take(core)
    [cleared] = [m for m in out if isinstance(m, ContextChanged)]
    assert out.index(SessionCleared()) < out.index(cleared)  # the UI forgets the old figure first
    empty = raw_request_tokens([system_message("/work", "")])
    assert cleared.tokens == empty and empty > raw_request_tokens([])  # the system prompt and the tools count
    assert f"fill: ~{tokens_text(cleared.tokens)} " in core_usage(core)  # what /usage says (1.3k past 1000)
    core.load(conversation, [])  # /resume: the conversation it brings back goes with the next request
    out = take(core)
    [resumed] = [m for m in out if isinstance(m, ContextChanged)]
    assert out.index(SessionStarted(session_id="", resumed=True)) < out.index(resumed)
    assert resumed.tokens > empty + 1500


def test_a_resumed_prompt_shows_as_typed_not_with_the_files_its_mentions_attached() -> None:
    # Found resuming in tmux: the replay printed every attached file (up to 128 KiB) under the prompt.
    core = make_core()
    attached = with_attachments("explain @notes.md", ["The file notes.md:\n```\n" + "a line\n" * 500 + "```"])
    core.load([ChatMessage(role="user", content=attached), ChatMessage(role="assistant", content="ok")], [])
    assert [m for m in take(core) if isinstance(m, UserPromptShown)] == [UserPromptShown(text="explain @notes.md")]
    assert sent(core)[0].content == attached  # the model still reads them


def confirm_flow(core: AgentCore) -> ConfirmRequested:
    core.on_ui(SubmitPrompt(text="edit"))
    done(core, "", [call("w1", "write_file", path="f", content="x"), call("w2", "read_file", path="f")])
    out = take(core)
    assert PreviewTool(call_id="w1", args=WriteFileArgs(path="f", content="x")) in out
    core.on_executor(PreviewReady(call_id="w1", lines=["+x"], digest="d1"))
    out = take(core)
    assert PhaseChanged(phase="confirming") in out
    return next(m for m in out if isinstance(m, ConfirmRequested))


def test_approve_runs_with_the_preview_digest() -> None:
    core = make_core()
    ask = confirm_flow(core)
    assert ask.lines == ["+x"]
    core.on_ui(DecideConfirmation(ref=ask.ref, decision="approve"))
    expected = RunTool(
        call_id="w1",
        args=WriteFileArgs(path="f", content="x"),
        expect_digest="d1",
        sandbox=SandboxPolicy(network=True),
    )
    assert expected in take(core)
    core.on_executor(ToolFinished(call_id="w1", result=WriteFileResult(path="f", bytes=1, created=True)))
    [change] = [m for m in take(core) if isinstance(m, ChangeRecorded)]
    assert (change.path, change.approved_by, change.diff) == ("f", "keypress", ["+x"])


def test_a_failed_mutation_leaves_no_change_record() -> None:
    core = make_core()
    ask = confirm_flow(core)
    core.on_ui(DecideConfirmation(ref=ask.ref, decision="approve"))
    take(core)
    core.on_executor(ToolFinished(call_id="w1", result=ToolFailed(error="file changed since the preview")))
    assert not any(isinstance(m, ChangeRecorded) for m in take(core))


def run_policy(core: AgentCore, decision: str | None) -> SandboxPolicy:
    """The sandbox policy of a command call, approved with ``decision`` (None: it runs without asking)."""
    core.on_ui(SubmitPrompt(text="c"))
    done(core, "", [call("c", "execute_command", command="curl example.org")])
    if decision is not None:
        core.on_executor(PreviewReady(call_id="c", lines=["$ curl example.org"], digest=None))
        ask = next(m for m in take(core) if isinstance(m, ConfirmRequested))
        core.on_ui(DecideConfirmation(ref=ask.ref, decision=decision))  # type: ignore[arg-type]
    return next(m for m in take(core) if isinstance(m, RunTool)).sandbox


@pytest.mark.parametrize("decision", ["approve", "approve_always"])
def test_a_command_approved_with_a_keypress_may_use_the_network(decision: str) -> None:
    assert run_policy(make_core(), decision) == SandboxPolicy(mode="workspace-write", network=True)


def test_a_command_run_without_a_keypress_gets_no_network() -> None:
    assert run_policy(make_core("all"), None) == SandboxPolicy(network=False)


def test_network_flag_gives_unasked_commands_the_network() -> None:
    options = AgentOptions(
        provider=PROVIDER, cwd="/work", approval="all", sandbox=SandboxState("workspace-write", True)
    )
    core = AgentCore(options, MemoryJournal())
    assert run_policy(core, None) == SandboxPolicy(network=True)
    assert core.ready_message().sandbox == SandboxState("workspace-write", network=True)


def test_reject_goes_on_with_the_next_call() -> None:
    core = make_core()
    ask = confirm_flow(core)
    core.on_ui(DecideConfirmation(ref=ask.ref, decision="reject"))
    out = take(core)
    assert ToolResultShown(id="w1", name="write_file", status="rejected", output="") in out
    assert any(isinstance(m, RunTool) and m.call_id == "w2" for m in out)
    assert sent(core)[-1].content == '{"ok":false,"rejected":true}'


def test_reject_and_stop_rejects_every_unresolved_call_and_ends_the_turn() -> None:
    core = make_core()
    ask = confirm_flow(core)
    core.on_ui(DecideConfirmation(ref=ask.ref, decision="reject_stop"))
    out = take(core)
    assert not any(isinstance(m, RunTool | StartStream) for m in out)
    assert out[-2:] == [TurnEnded(outcome="stopped"), PhaseChanged(phase="idle")]
    assert [m.content for m in sent(core)[-2:]] == ['{"ok":false,"rejected":true}'] * 2
    assert_no_dangling(sent(core))


def test_stale_decision_is_ignored() -> None:
    core = make_core()
    ask = confirm_flow(core)
    core.on_ui(DecideConfirmation(ref=ask.ref + 7, decision="approve"))
    assert take(core) == []


def test_approve_always_stops_asking_for_that_tool() -> None:
    core = make_core()
    ask = confirm_flow(core)
    core.on_ui(DecideConfirmation(ref=ask.ref, decision="approve_always"))
    take(core)
    core.on_executor(ToolFinished(call_id="w1", result=WriteFileResult(path="a", bytes=1, created=True)))
    core.on_executor(ToolFinished(call_id="w2", result=read("")))
    take(core)
    done(core, "", [call("w3", "write_file", path="g", content="y")])
    assert any(isinstance(m, PreviewTool) for m in take(core))  # previewed for the record, not asked
    core.on_executor(PreviewReady(call_id="w3", lines=["+y"], digest="d3", summary="new file · +1 · 1 bytes"))
    out = take(core)
    assert any(isinstance(m, RunTool) and m.call_id == "w3" and m.expect_digest == "d3" for m in out)
    assert not any(isinstance(m, ConfirmRequested) for m in out)
    core.on_executor(ToolFinished(call_id="w3", result=WriteFileResult(path="g", bytes=1, created=True)))
    [change] = [m for m in take(core) if isinstance(m, ChangeRecorded)]
    assert change == ChangeRecorded(
        id="w3",
        name="write_file",
        path="g",
        summary="new file · +1 · 1 bytes",
        approved_by="rule",
        rule="write_file",
        diff=["+y"],
    )


@pytest.mark.parametrize(("mode", "asks"), [("ask", True), ("edits", False), ("all", False)])
def test_approval_modes_for_edits(mode: str, asks: bool) -> None:
    core = make_core(mode)
    core.on_ui(SubmitPrompt(text="e"))
    done(core, "", [call("e", "edit_file", path="f", search_block="a", replace_block="b")])
    assert any(isinstance(m, PreviewTool) for m in take(core))  # always previewed: asked, or for the record
    core.on_executor(PreviewReady(call_id="e", lines=["-a", "+b"], digest="d", summary="+1 −1 · 1 bytes"))
    out = take(core)
    assert any(isinstance(m, ConfirmRequested) for m in out) is asks
    assert any(isinstance(m, RunTool) and m.expect_digest == "d" for m in out) is not asks
    if not asks:
        core.on_executor(ToolFinished(call_id="e", result=EditFileResult(path="f", line=1, bytes=1)))
        [change] = [m for m in take(core) if isinstance(m, ChangeRecorded)]
        assert (change.approved_by, change.rule, change.diff) == ("flag", f"--approve {mode}", ["-a", "+b"])


@pytest.mark.parametrize(("mode", "asks"), [("ask", True), ("edits", True), ("all", False)])
def test_approval_modes_for_commands(mode: str, asks: bool) -> None:
    core = make_core()
    core.on_ui(SetApproval(mode=mode))  # type: ignore[arg-type]
    core.on_ui(SubmitPrompt(text="e"))
    done(core, "", [call("c", "execute_command", command="make build")])
    assert any(isinstance(m, PreviewTool) for m in take(core)) is asks


def test_preview_error_becomes_the_result_without_asking() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="e"))
    done(core, "", [call("e", "edit_file", path="f", search_block="a", replace_block="b")])
    core.on_executor(PreviewReady(call_id="e", lines=[], error="search block not found"))
    out = take(core)
    assert not any(isinstance(m, ConfirmRequested) for m in out)
    assert any(isinstance(m, StartStream) for m in out)
    assert sent(core)[-1].content == '{"ok":false,"error":"search block not found"}'


def test_assembly_error_is_an_error_result_without_execution() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="e"))
    bad = assemble("z", "read_file", None, "arguments are not valid JSON")
    done(core, "", [bad])
    out = take(core)
    assert not any(isinstance(m, RunTool | PreviewTool) for m in out)
    calls = sent(core)[-2].tool_calls
    assert calls is not None and calls[0].function.arguments == "{}"
    assert "not valid JSON" in (sent(core)[-1].content or "")


def test_cancel_while_streaming_keeps_partial_content() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    core.on_llm(ContentDelta(request_id=core.request_id, text="part"))
    take(core)
    core.on_ui(Cancel())
    assert take(core) == [CancelStream(request_id=core.request_id)]
    core.on_llm(StreamFailed(request_id=core.request_id, kind="cancelled", message="cancelled", content="part"))
    out = take(core)
    assert out[-2:] == [TurnEnded(outcome="cancelled"), PhaseChanged(phase="idle")]
    assert core.conversation[-1] == ChatMessage(role="assistant", content="part")


def test_cancel_while_confirming_is_reject_and_stop() -> None:
    core = make_core()
    confirm_flow(core)
    core.on_ui(Cancel())
    out = take(core)
    assert TurnEnded(outcome="stopped") in out
    assert_no_dangling(sent(core))


def test_cancel_while_running_kills_and_cancels_the_rest() -> None:
    core = make_core("all")
    core.on_ui(SubmitPrompt(text="x"))
    done(core, "", [call("c1", "execute_command", command="sleep 9"), call("c2", "read_file", path="a")])
    take(core)
    core.on_ui(Cancel())
    assert take(core) == [CancelTool(call_id="c1")]
    core.on_executor(ToolFinished(call_id="c1", result=ToolCancelled()))
    out = take(core)
    assert not any(isinstance(m, RunTool) for m in out)
    assert out[-2:] == [TurnEnded(outcome="cancelled"), PhaseChanged(phase="idle")]
    assert [m.content for m in sent(core)[-2:]] == ['{"ok":false,"cancelled":true}'] * 2


def test_stream_failure_after_calls_answers_every_call() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    partial = [assemble("p", "write_file", None, "arguments are not valid JSON")]
    core.on_llm(StreamFailed(request_id=core.request_id, kind="truncated", message="cut", tool_calls=partial))
    out = take(core)
    assert SystemEntry(text="cut", level="error") in out
    assert TurnEnded(outcome="failed") in out
    assert not any(isinstance(m, RunTool | PreviewTool) for m in out)
    assert_no_dangling(sent(core))


def test_a_call_cut_off_by_a_stream_failure_shows_what_came_and_the_model_reads_it() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    came = '{"path": "notes.md", "content": "# No'
    whole = assemble("w", "read_file", {"path": "a"})
    cut = assemble("c", "write_file", None, f"its arguments were cut off after {len(came)} characters", came, True)
    core.on_llm(StreamFailed(request_id=core.request_id, kind="truncated", message="cut", tool_calls=[whole, cut]))
    out = take(core)
    shown = [m.args for m in out if isinstance(m, ToolCallShown)]
    assert shown == [ReadFileArgs(path="a"), MalformedCall(name="write_file", arguments=came, cut=True)]
    results = {m.call_id: result_json(m.result) for m in core.conversation if isinstance(m, ToolReply)}
    assert results["w"] == '{"ok":false,"error":"not run: the stream failed (truncated)"}'
    told = json.loads(results["c"])["error"]
    assert told.startswith("not run: the stream failed (truncated) while this call was arriving: its arguments were")
    assert f"cut off after {len(came)} characters" in told and "recorded with the arguments {}" in told
    record = next(m for m in core.conversation if isinstance(m, ChatMessage) and m.tool_calls)
    assert [c.function.arguments for c in record.tool_calls or []] == ['{"path":"a"}', "{}"]  # JSON a provider takes
    assert_no_dangling(sent(core))


def test_calls_a_stopped_turn_leaves_unrun_are_one_row_past_not_run_rows_max() -> None:
    # An answer stopped at its 65th call printed 65 identical "not run" rows.
    for count in (NOT_RUN_ROWS_MAX, NOT_RUN_ROWS_MAX + 1):
        core = make_core()
        core.on_ui(SubmitPrompt(text="x"))
        calls = [call(f"r{i}", "read_file", path=f"f{i}") for i in range(count - 1)]
        calls.append(assemble("c", "write_file", None, "its arguments were cut off after 9 characters", "{", True))
        core.on_llm(StreamFailed(request_id=core.request_id, kind="truncated", message="cut", tool_calls=calls))
        out = take(core)
        rows = [m for m in out if isinstance(m, ToolCallShown | ToolResultShown)]
        notes = [m.text for m in out if isinstance(m, SystemEntry) and "not run" in m.text]
        if count == NOT_RUN_ROWS_MAX:
            assert len(rows) == 2 * count and notes == []
        else:
            assert rows == []
            assert notes == [
                f"{count} tool calls not run, the stream failed (truncated): "
                f"{count - 1} read_file, 1 write_file (the last one cut off)"
            ]
        # the model still gets a result for each call, the cut one saying so
        results = [json.loads(m.content or "")["error"] for m in sent(core) if m.role == "tool"]
        assert results[:-1] == ["not run: the stream failed (truncated)"] * (count - 1) and "cut off" in results[-1]
        assert_no_dangling(sent(core))


def test_a_resumed_session_replays_the_calls_a_failure_left_unrun_as_the_live_turn_showed_them() -> None:
    for count in (NOT_RUN_ROWS_MAX, NOT_RUN_ROWS_MAX + 1):
        core = make_core()
        core.on_ui(SubmitPrompt(text="x"))
        calls = [call(f"r{i}", "read_file", path=f"f{i}") for i in range(count - 1)]
        calls.append(assemble("c", "write_file", None, "its arguments were cut off after 9 characters", "{", True))
        core.on_llm(StreamFailed(request_id=core.request_id, kind="truncated", message="cut", tool_calls=calls))
        live = [m for m in take(core) if isinstance(m, ToolCallShown | ToolResultShown | SystemEntry)]
        resumed = make_core()
        resumed.load(list(core.conversation), [])
        replayed = [m for m in take(resumed) if isinstance(m, ToolCallShown | ToolResultShown | SystemEntry)]
        if count == NOT_RUN_ROWS_MAX:
            assert len([m for m in replayed if isinstance(m, ToolResultShown)]) == count
        else:
            assert [m for m in replayed if not isinstance(m, SystemEntry)] == []
            assert replayed == [m for m in live if isinstance(m, SystemEntry) and "not run" in m.text]


def _cut_off(name: str, arguments: str) -> AssembledCall:
    """A call cut off mid-arguments, assembled by the LLM worker's own accumulator."""
    item: JsonValue = {"index": 0, "id": "c", "type": "function", "function": {"name": name, "arguments": arguments}}
    [cut] = ToolCalls().feed([item]).finish(stream_ended=True)
    assert cut.cut
    return cut


def _replayed_cut(cut: AssembledCall) -> tuple[ToolArgs | MalformedCall, ToolArgs | MalformedCall]:
    """The cut call's row in the live turn, and in a session resumed from it."""
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    core.on_llm(StreamFailed(request_id=core.request_id, kind="truncated", message="cut", tool_calls=[cut]))
    [live] = [m.args for m in take(core) if isinstance(m, ToolCallShown)]
    resumed = make_core()
    resumed.load(list(core.conversation), [])
    [replayed] = [m.args for m in take(resumed) if isinstance(m, ToolCallShown)]
    return live, replayed


def test_a_resumed_session_replays_a_cut_off_call_as_the_live_turn_showed_it() -> None:
    """Found resuming in tmux: the live row said `⚙ write_file (cut off) {"path": …`, the replay `⚙ write_file {}`
    (the record holds {}); its result says what had come, up to the excerpt the model reads."""
    for came in ("", '{"path": "notes.md", "con', '{"path": "' + "x" * 300):
        live, replayed = _replayed_cut(_cut_off("write_file", came))
        assert isinstance(live, MalformedCall) and isinstance(replayed, MalformedCall)
        assert (replayed.name, replayed.cut) == ("write_file", True)
        if len(came) <= CUT_EXCERPT_CHARS:
            assert replayed == live
        else:
            assert replayed.arguments == came[:CUT_EXCERPT_CHARS] + "…"
            assert summarize_call(replayed, 60) == summarize_call(live, 60)  # a row's width shows the same


def _json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


@given(st.text(max_size=CUT_EXCERPT_CHARS + 2).map(lambda text: "{" + text).filter(lambda t: not _json_object(t)))
def test_any_cut_off_arguments_replay_as_they_came(came: str) -> None:
    """Arguments no JSON object yet (a whole one was no cut: it ran or failed on its own)."""
    live, replayed = _replayed_cut(_cut_off("edit_file", came))
    assert isinstance(live, MalformedCall) and isinstance(replayed, MalformedCall) and live.cut and replayed.cut
    if len(came) <= CUT_EXCERPT_CHARS:
        assert replayed == live
    else:
        assert replayed.arguments == came[:CUT_EXCERPT_CHARS] + "…"


def test_a_saved_result_that_only_looks_cut_replays_the_record() -> None:
    """A call the model broke on its own (not the failure's cut) keeps its `{}` row and JSON error."""
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    broken = assemble("b", "write_file", None, "arguments are not valid JSON", '{"pa', False)
    core.on_llm(StreamFailed(request_id=core.request_id, kind="truncated", message="cut", tool_calls=[broken]))
    take(core)
    resumed = make_core()
    resumed.load(list(core.conversation), [])
    [replayed] = [m.args for m in take(resumed) if isinstance(m, ToolCallShown)]
    assert replayed == MalformedCall(name="write_file", arguments="{}")


def test_reject_and_stop_with_many_calls_left_says_how_many_in_one_row() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="edit"))
    left = NOT_RUN_ROWS_MAX + 2
    done(core, "", [call(f"w{i}", "write_file", path="f", content="x") for i in range(left + 1)])
    take(core)
    core.on_executor(PreviewReady(call_id="w0", lines=["+x"], digest="d", summary="new file"))
    [ask] = [m for m in take(core) if isinstance(m, ConfirmRequested)]
    core.on_ui(DecideConfirmation(ref=ask.ref, decision="reject_stop"))
    out = take(core)
    assert (
        SystemEntry(text=f"{left} tool calls not run, you stopped the turn: {left} write_file", level="warning") in out
    )
    assert [m.id for m in out if isinstance(m, ToolResultShown)] == ["w0"]
    assert [m.content for m in sent(core) if m.role == "tool"] == ['{"ok":false,"rejected":true}'] * (left + 1)
    assert_no_dangling(sent(core))


def test_llm_death_mid_stream_is_a_stream_failure() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    core.on_llm(ContentDelta(request_id=core.request_id, text="so far"))
    take(core)
    core.on_llm_died("killed by SIGKILL")
    out = take(core)
    assert any(isinstance(m, SystemEntry) and "SIGKILL" in m.text for m in out)
    assert core.conversation[-1] == ChatMessage(role="assistant", content="so far")
    assert out[-1] == PhaseChanged(phase="idle")


def test_executor_death_mid_call_is_an_error_result_and_the_loop_goes_on() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    done(core, "", [call("a", "read_file", path="x"), call("b", "read_file", path="y")])
    take(core)
    core.on_executor_died("killed by SIGKILL")
    out = take(core)
    assert '"executor crashed: killed by SIGKILL"' in (sent(core)[-1].content or "")
    assert any(isinstance(m, RunTool) and m.call_id == "b" for m in out)


def test_late_messages_of_a_finished_stream_are_ignored() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    old = core.request_id
    done(core, "a")
    take(core)
    core.on_llm(ContentDelta(request_id=old, text="late"))
    assert take(core) == []


def test_an_answer_of_only_reasoning_says_so_not_nothing() -> None:
    """Found with `-p` against a reasoning-only stream: "[model returned nothing]" though the model had reasoned."""
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    core.on_llm(ReasoningDelta(request_id=core.request_id, text="thinking hard"))
    done(core, "")
    out = take(core)
    assert SystemEntry(text="[model returned nothing]") not in out
    [entry] = [m for m in out if isinstance(m, SystemEntry)]
    assert entry.level == "warning" and entry.text.startswith("the model only reasoned (13 characters)")
    core.on_ui(SubmitPrompt(text="y"))
    done(core, "")  # the next request's count starts again
    assert SystemEntry(text="[model returned nothing]") in take(core)


def test_empty_episode_says_model_returned_nothing() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    done(core, "")
    assert SystemEntry(text="[model returned nothing]") in take(core)


def test_length_finish_is_shown() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    done(core, "abc", finish_reason="length")
    assert any(isinstance(m, SystemEntry) and "cut off" in m.text for m in take(core))


def test_episode_limit_stops_the_turn() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="loop"))
    for n in range(MAX_EPISODES_PER_TURN):
        assert core.turn.episodes == n + 1
        done(core, "", [call(f"c{n}", "read_file", path=f"x{n}")])  # a new call each time
        core.on_executor(ToolFinished(call_id=f"c{n}", result=read("")))
    out = take(core)
    starts = [m for m in out if isinstance(m, StartStream)]
    assert len(starts) == MAX_EPISODES_PER_TURN
    assert out[-2:] == [TurnEnded(outcome="limit"), PhaseChanged(phase="idle")]
    assert_no_dangling(sent(core))


def test_prompt_while_busy_is_refused_without_losing_the_turn() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    take(core)
    core.on_ui(SubmitPrompt(text="y"))
    out = take(core)
    assert len(out) == 1 and isinstance(out[0], SystemEntry)
    assert [m.content for m in sent(core)] == ["x"]


def test_usage_report_by_turn() -> None:
    core = make_core()
    for total in (10, 20):
        core.on_ui(SubmitPrompt(text="x"))
        done(core, "ok", usage=Usage(total, 1, total + 1))
    take(core)
    core.on_ui(ShowUsage())
    [entry] = take(core)
    assert isinstance(entry, SystemEntry) and "2 turns" in entry.text and "0 compactions this session" in entry.text


def test_usage_report_of_one_turn_says_turn() -> None:
    """Found in tmux (ADR 0063): ``all 2.0k tokens in 1 turns``."""
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    done(core, "ok", usage=Usage(10, 1, 11))
    core.compactions = 1
    take(core)
    core.on_ui(ShowUsage())
    [entry] = take(core)
    assert isinstance(entry, SystemEntry)
    assert entry.text.endswith("tokens in 1 turn") and "1 compaction this session" in entry.text


def test_internal_error_leaves_a_valid_conversation() -> None:
    core = make_core("all")
    core.on_ui(SubmitPrompt(text="x"))
    done(core, "", [call("a", "read_file", path="x"), call("b", "read_file", path="y")])
    take(core)
    core.on_internal_error("boom")
    out = take(core)
    assert out[-1] == PhaseChanged(phase="idle")
    assert_no_dangling(sent(core))


def test_repeated_call_ids_across_episodes_are_made_unique() -> None:
    core = make_core()
    core.on_ui(SubmitPrompt(text="x"))
    done(core, "", [call("call_0_0", "read_file", path="a")])
    core.on_executor(ToolFinished(call_id="call_0_0", result=read("")))
    done(core, "", [call("call_0_0", "read_file", path="b"), call("call_0_0", "read_file", path="c")])
    ids = [r.id for m in sent(core) for r in m.tool_calls or []]
    assert len(set(ids)) == 3 and ids[0] == "call_0_0"
    out = take(core)
    second = ids[1]
    assert RunTool(call_id=second, args=ReadFileArgs(path="b")) in out


def test_adjacent_ui_text_is_coalesced_without_reordering() -> None:
    from dashfloat.agent._process import coalesce_text

    outbox: list[tuple[Any, Message]] = [
        ("ui", TokenReceived(text="a")),
        ("ui", TokenReceived(text="b")),
        ("llm", CancelStream(request_id=1)),
        ("ui", TokenReceived(text="c")),
        ("ui", SystemEntry(text="s")),
        ("ui", TokenReceived(text="d")),
    ]
    assert coalesce_text(outbox) == [
        ("ui", TokenReceived(text="ab")),
        ("llm", CancelStream(request_id=1)),
        ("ui", TokenReceived(text="c")),
        ("ui", SystemEntry(text="s")),
        ("ui", TokenReceived(text="d")),
    ]


def test_clear_says_cleared_and_an_undecodable_executor_frame_is_an_error_entry() -> None:
    core = make_core()
    core.on_ui(ClearSession())
    out = take(core)
    assert SessionCleared() in out and not any(isinstance(m, SessionStarted) for m in out)
    core.on_executor(FrameRejected(error="undecodable message on the agent->executor channel: junk"))
    assert take(core) == [SystemEntry(text="undecodable message on the agent->executor channel: junk", level="error")]
