"""The core's window, estimates and compactions, driven in-process message by message."""

from __future__ import annotations

import itertools
import json

import msgspec

from dashfloat.agent import AgentCore, AgentOptions, MemoryJournal
from dashfloat.agent import _compaction as compaction
from dashfloat.agent import _context as ctx
from dashfloat.agent._core import provider_message
from dashfloat.protocol import (
    AgentReady,
    Cancel,
    CancelStream,
    ChatMessage,
    CompactConversation,
    ContentDelta,
    ContextChanged,
    DiscoverWindow,
    Message,
    PhaseChanged,
    ProviderConfig,
    ReadFileResult,
    RunTool,
    SetModel,
    ShowUsage,
    StartStream,
    StreamDone,
    StreamFailed,
    SubmitPrompt,
    SystemEntry,
    TokenReceived,
    ToolFinished,
    TurnEnded,
    Usage,
    WindowFound,
)
from dashfloat.tool_args import assemble
from tests.agent.test_core import assert_no_dangling

WINDOW = 6000


def chat(core: AgentCore) -> list[ChatMessage]:
    """The core's conversation as the provider sees it."""
    return [provider_message(e) for e in core.conversation]


def make_core(window: int | None = WINDOW, percent: int = 80) -> tuple[AgentCore, MemoryJournal]:
    provider = ProviderConfig(name="t", base_url="http://127.0.0.1:9/v1", model="m", context_window=window)
    journal = MemoryJournal()
    core = AgentCore(AgentOptions(provider=provider, cwd="/w", approval="all", compact_at_percent=percent), journal)
    return core, journal


def take(core: AgentCore) -> list[Message]:
    out = [m for _, m in core.outbox]
    core.outbox.clear()
    return out


def entries(out: list[Message]) -> list[str]:
    return [m.text for m in out if isinstance(m, SystemEntry)]


def big_output(i: int, lines: int = 120) -> ReadFileResult:
    content = "\n".join(f"{i} line {n} " + "x" * 40 for n in range(lines))
    return ReadFileResult(
        path=f"f{i}.txt",
        content=content,
        offset=1,
        lines=lines,
        total_lines=lines,
        total_bytes=len(content),
        truncated=False,
    )


def round_trip(core: AgentCore, i: int) -> list[Message]:
    """The model reads a big file; its result comes back; returns what the core sent next."""
    call = assemble(f"c{i}", "read_file", {"path": f"f{i}.txt"})
    core.on_llm(StreamDone(request_id=core.request_id, content="", tool_calls=[call], finish_reason="tool_calls"))
    out = take(core)
    assert any(isinstance(m, RunTool) for m in out)
    core.on_executor(ToolFinished(call_id=f"c{i}", result=big_output(i)))
    return take(core)


def answer_summary(core: AgentCore, text: str = "- read many files\n- nothing changed") -> list[Message]:
    core.on_llm(ContentDelta(request_id=core.request_id, text=text))
    core.on_llm(StreamDone(request_id=core.request_id, content=text, tool_calls=[], finish_reason="stop"))
    return take(core)


def discovery(core: AgentCore) -> DiscoverWindow:
    [ask] = take(core)
    assert isinstance(ask, DiscoverWindow)
    return ask


def starts(out: list[Message]) -> list[StartStream]:
    return [m for m in out if isinstance(m, StartStream)]


def early_request(prompt: str = "hi") -> tuple[AgentCore, DiscoverWindow]:
    """A core with no window yet, asking for it, whose first prompt went out before the answer (its output taken)."""
    core, _ = make_core(window=None)
    core.discover_window()
    ask = discovery(core)
    core.on_ui(SubmitPrompt(text=prompt))
    take(core)
    return core, ask


def test_a_long_turn_never_sends_above_the_budget_and_compacts_in_both_stages() -> None:
    core, journal = make_core()
    core.on_ui(SubmitPrompt(text="read everything"))
    take(core)
    summaries = 0
    for i in range(30):
        out = round_trip(core, i)
        while core.waiting == "summary":
            [request] = starts(out)
            assert (request.messages[-1].content or "").startswith(compaction.COMPACTION_PROMPT)
            assert PhaseChanged(phase="compacting") in out
            summaries += 1
            out = answer_summary(core)
            assert any(isinstance(m, ContextChanged) for m in out)
        [request] = starts(out)
        assert ctx.estimate(request.messages, core.calibration) <= ctx.hard_limit(WINDOW)
        assert_no_dangling(chat(core))
        assert chat(core)[0].role == "user"
        if i == 29:
            break
    assert summaries >= 1 and core.compactions > summaries  # shrinking ran as well
    assert any(compaction.ELIDED in (getattr(m, "content", "") or "") for m in core.conversation) or summaries
    assert journal.messages[-len(chat(core)) :] == chat(core)  # the journal holds the compacted conversation
    assert any(
        getattr(m, "content", None) == "read everything" for m in core.conversation
    )  # the latest prompt, verbatim


def test_the_system_message_and_the_front_stay_byte_identical_between_requests() -> None:
    core, _ = make_core(window=200_000)
    core.on_ui(SubmitPrompt(text="go"))
    fronts = [starts(take(core))[0].messages]
    for i in range(3):
        fronts.append(starts(round_trip(core, i))[0].messages)
    encoder = msgspec.json.Encoder()
    for before, after in itertools.pairwise(fronts):
        assert encoder.encode(after[: len(before)]) == encoder.encode(before)


def test_compact_command_summarises_and_goes_idle() -> None:
    core, _ = make_core(window=200_000)
    core.on_ui(SubmitPrompt(text="go"))
    take(core)
    for i in range(6):
        round_trip(core, i)
    core.on_llm(StreamDone(request_id=core.request_id, content="done", tool_calls=[], finish_reason="stop"))
    take(core)
    before = list(core.conversation)
    core.on_ui(CompactConversation(focus="the file names"))
    out = take(core)
    [request] = starts(out)
    assert "Focus on: the file names" in (request.messages[-1].content or "")
    out = answer_summary(core, "files f0..f5 read")
    assert PhaseChanged(phase="idle") in out and core.phase == "idle"
    assert any("compacted: summarised" in e for e in entries(out))
    head = core.conversation[0]
    assert isinstance(head, ChatMessage) and "files f0..f5 read" in (head.content or "")
    assert core.conversation[-len(compaction.units(chat(core))) :] != before
    assert_no_dangling(chat(core))


def test_an_empty_or_failed_summary_leaves_the_conversation_as_it_was() -> None:
    core, _ = make_core(window=200_000)
    core.on_ui(SubmitPrompt(text="go"))
    take(core)
    for i in range(6):
        round_trip(core, i)
    core.on_llm(StreamDone(request_id=core.request_id, content="done", tool_calls=[], finish_reason="stop"))
    take(core)
    core.on_ui(CompactConversation())
    shrunk = list(core.conversation)  # stage 1 already ran; the summary is what may fail
    out = answer_summary(core, "   ")
    assert core.conversation == shrunk and any("came back empty" in e for e in entries(out))
    core.on_ui(CompactConversation())
    take(core)
    core.on_llm(StreamFailed(request_id=core.request_id, kind="server_error", message="boom"))
    out = take(core)
    assert core.conversation == shrunk and any("boom" in e for e in entries(out))
    assert core.phase == "idle"
    core.on_ui(CompactConversation())
    take(core)
    core.on_ui(Cancel())
    assert isinstance(take(core)[0], CancelStream)
    core.on_llm(StreamFailed(request_id=core.request_id, kind="cancelled", message="cancelled"))
    out = take(core)
    assert core.conversation == shrunk and core.phase == "idle" and PhaseChanged(phase="idle") in out


def test_context_exceeded_compacts_and_retries_once_then_says_what_to_do() -> None:
    core, _ = make_core(window=200_000)
    core.on_ui(SubmitPrompt(text="go"))
    take(core)
    for i in range(6):
        round_trip(core, i)
    core.on_llm(StreamFailed(request_id=core.request_id, kind="context_exceeded", message="too big"))
    out = take(core)
    assert any("compacting and retrying once" in e for e in entries(out))
    assert core.waiting == "summary"
    out = answer_summary(core)
    [retry] = starts(out)
    assert retry.messages[1].content is not None and retry.messages[1].content.startswith(compaction.SUMMARY_HEADER)
    core.on_llm(StreamFailed(request_id=core.request_id, kind="context_exceeded", message="still too big"))
    out = take(core)
    assert TurnEnded(outcome="failed") in out
    assert any("/clear starts a fresh session" in e for e in entries(out))
    assert_no_dangling(chat(core))


def test_lm_studios_empty_answer_to_a_large_request_counts_as_context_exceeded() -> None:
    core, _ = make_core(window=20_000)
    core.on_ui(SubmitPrompt(text="go"))
    take(core)
    for i in range(5):
        round_trip(core, i)
    assert ctx.fill_percent(core.last_estimate, core.window.size or 1) >= 50
    core.on_llm(StreamDone(request_id=core.request_id, content="", tool_calls=[], finish_reason="stop"))
    assert any("exceeds the model's context window" in e for e in entries(take(core)))


def test_a_first_request_goes_before_the_window_and_its_answer_waits_for_it() -> None:
    core, _ = make_core(window=None)
    core.discover_window()
    ask = discovery(core)
    core.on_ui(SubmitPrompt(text="hi"))
    out = take(core)
    assert len(starts(out)) == 1 and core.waiting == "stream" and core.window.size is None
    # What the stream sends meanwhile is neither shown nor acted on: the window may still refuse the request.
    core.on_llm(ContentDelta(request_id=core.request_id, text="hello"))
    core.on_llm(
        StreamDone(
            request_id=core.request_id, content="hello", tool_calls=[], finish_reason="stop", usage=Usage(900, 5, 905)
        )
    )
    assert take(core) == [] and core.phase == "streaming"
    core.on_llm(WindowFound(request_id=ask.request_id, window=8192, source="assumed", notice="ignored 0"))
    out = take(core)
    assert not starts(out)
    ready = next(m for m in out if isinstance(m, AgentReady))
    assert (ready.context_window, ready.window_source) == (8192, "assumed")
    assert any("assuming 8.2k tokens" in e for e in entries(out)) and "ignored 0" in entries(out)
    assert TokenReceived(text="hello") in out and TurnEnded(outcome="completed") in out
    assert out.index(ready) < out.index(TokenReceived(text="hello"))
    core.on_ui(ShowUsage())
    [report] = entries(take(core))
    assert "context window: 8.2k tokens (ASSUMED" in report and "fill: ~" in report


def test_a_window_that_comes_after_the_stream_ended_still_lets_its_tool_calls_run() -> None:
    core, ask = early_request("read x")
    call = assemble("a", "read_file", {"path": "x"})
    core.on_llm(StreamDone(request_id=core.request_id, content="", tool_calls=[call], finish_reason="tool_calls"))
    assert not any(isinstance(m, RunTool) for m in take(core))
    core.on_llm(WindowFound(request_id=ask.request_id, window=32_768, source="server"))
    assert any(isinstance(m, RunTool) for m in take(core))


def test_a_first_request_the_window_turns_out_too_small_for_is_cancelled_and_refused() -> None:
    core, ask = early_request()
    sent = core.request_id
    core.on_llm(ContentDelta(request_id=sent, text="garbage from a cut prompt"))
    core.on_llm(WindowFound(request_id=ask.request_id, window=600, source="server"))  # below the tools alone
    out = take(core)
    assert CancelStream(request_id=sent) in out and TurnEnded(outcome="failed") in out
    assert any("does not fit the model's context window" in e for e in entries(out))
    assert not any(isinstance(m, TokenReceived) for m in out)
    core.on_llm(StreamFailed(request_id=sent, kind="cancelled", message="cancelled", content="garbage"))
    assert take(core) == [] and core.phase == "idle"
    assert [m.role for m in chat(core)] == ["user"]  # as when it was refused before sending


def test_esc_while_an_early_request_waits_for_the_window_ends_the_turn_with_nothing_shown() -> None:
    core, ask = early_request()
    sent = core.request_id
    core.on_llm(ContentDelta(request_id=sent, text="partial"))
    core.on_ui(Cancel())
    out = take(core)
    assert CancelStream(request_id=sent) in out and TurnEnded(outcome="cancelled") in out
    assert core.phase == "idle" and core.window.held is None
    core.on_llm(StreamFailed(request_id=sent, kind="cancelled", message="cancelled", content="partial"))
    core.on_llm(WindowFound(request_id=ask.request_id, window=32_768, source="server"))
    out = take(core)
    assert not any(isinstance(m, TokenReceived | TurnEnded) for m in out) and core.window.size == 32_768
    assert [m.role for m in chat(core)] == ["user"]


def test_the_llm_process_dying_under_an_early_request_fails_it_and_asks_the_window_again() -> None:
    core, _ = make_core(window=None)
    core.discover_window()
    take(core)
    core.on_ui(SubmitPrompt(text="hi"))
    take(core)
    core.on_llm(ContentDelta(request_id=core.request_id, text="partial"))
    core.on_llm_died("killed by SIGKILL")
    out = take(core)
    assert TurnEnded(outcome="failed") in out and not any(isinstance(m, TokenReceived) for m in out)
    assert any(isinstance(m, DiscoverWindow) for m in out) and core.window.held is None


def test_a_model_switch_during_an_early_request_checks_it_against_the_new_models_window() -> None:
    core, _ = make_core(window=None)
    core.discover_window()
    first_ask = discovery(core)
    core.on_ui(SubmitPrompt(text="hi"))
    take(core)
    core.on_llm(ContentDelta(request_id=core.request_id, text="hello"))
    core.on_ui(SetModel(model="other"))
    [second_ask] = [m for m in take(core) if isinstance(m, DiscoverWindow)]
    core.on_llm(WindowFound(request_id=first_ask.request_id, window=32_768, source="server"))  # the old model's
    assert take(core) == []
    core.on_llm(WindowFound(request_id=second_ask.request_id, window=16_384, source="server"))
    out = take(core)
    assert TokenReceived(text="hello") in out and core.window.size == 16_384


def test_a_model_switch_back_to_a_known_window_releases_a_held_answer_and_drops_the_stale_discovery() -> None:
    core, _ = make_core(window=None)
    core.discover_window()
    first = discovery(core)
    core.on_llm(WindowFound(request_id=first.request_id, window=32_768, source="server"))  # model m: known now
    core.on_ui(SetModel(model="other"))
    [pending] = [m for m in take(core) if isinstance(m, DiscoverWindow)]
    core.on_ui(SubmitPrompt(text="hi"))
    assert len(starts(take(core))) == 1 and core.window.held == []  # sent while "other"'s window is asked
    core.on_llm(ContentDelta(request_id=core.request_id, text="hello"))
    core.on_ui(SetModel(model="m"))
    out = take(core)
    assert TokenReceived(text="hello") in out and core.window.size == 32_768 and core.window.held is None
    core.on_llm(WindowFound(request_id=pending.request_id, window=1_000, source="server"))  # "other"'s, stale
    assert core.window.size == 32_768 and not core.window.discovering


def test_a_request_with_history_or_too_large_still_waits_for_the_window() -> None:
    core, _ = make_core(window=None)
    core.discover_window()
    ask = discovery(core)
    core.on_ui(SubmitPrompt(text="x" * 3 * ctx.EARLY_REQUEST_MAX_TOKENS))  # a long piped input
    out = take(core)
    assert not starts(out) and core.waiting == "window"
    core.on_llm(WindowFound(request_id=ask.request_id, window=4096, source="server"))
    out = take(core)
    assert not starts(out) and TurnEnded(outcome="failed") in out  # refused before it was sent
    assert any("does not fit the model's context window" in e for e in entries(out))

    resumed, _ = make_core(window=None)
    resumed.load([ChatMessage(role="user", content="before"), ChatMessage(role="assistant", content="answer")], [])
    resumed.discover_window()
    take(resumed)
    resumed.on_ui(SubmitPrompt(text="hi"))
    assert not starts(take(resumed)) and resumed.waiting == "window"


def test_a_configured_window_is_never_asked_for() -> None:
    core, _ = make_core(window=32_000)
    core.discover_window()
    assert take(core) == []
    assert core.ready_message().window_source == "config"


def test_a_conversation_that_cannot_fit_even_compacted_fails_the_turn_clearly() -> None:
    core, _ = make_core(window=600)  # below the system message and tools alone
    core.on_ui(SubmitPrompt(text="hi"))
    out = take(core)
    assert not starts(out) and TurnEnded(outcome="failed") in out
    assert any("does not fit the model's context window" in e for e in entries(out))


def test_calibration_comes_from_the_reported_prompt_tokens() -> None:
    core, _ = make_core(window=200_000)
    core.on_ui(SubmitPrompt(text="go"))
    [first] = starts(take(core))
    core.on_llm(
        StreamDone(
            request_id=core.request_id,
            content="",
            finish_reason="tool_calls",
            tool_calls=[assemble("a", "read_file", {"path": "x"})],
            usage=Usage(1234, 5, 1239),
        )
    )
    take(core)
    core.on_executor(
        ToolFinished(
            call_id="a",
            result=ReadFileResult(
                path="x", content="tiny", offset=1, lines=1, total_lines=1, total_bytes=4, truncated=False
            ),
        )
    )
    [second] = starts(take(core))
    assert core.calibration is not None and core.calibration.reported == 1234
    assert core.last_estimate == ctx.estimate(second.messages, core.calibration) > 1234
    assert core.estimates == [(ctx.raw_request_tokens(first.messages), 1234)]
    assert json.loads(second.messages[-1].content or "")["content"] == "tiny"


def test_a_shrunk_result_is_valid_json_that_keeps_its_status() -> None:
    core, _ = make_core()
    core.on_ui(SubmitPrompt(text="go"))
    take(core)
    for i in range(8):
        out = round_trip(core, i)
        if core.waiting == "summary":
            break
    shrunk = [m for m in core.conversation if isinstance(m, ChatMessage) and compaction.ELIDED in (m.content or "")]
    assert shrunk
    for message in shrunk:
        value = json.loads(message.content or "")
        assert value["ok"] is True and value["path"].startswith("f")
    assert isinstance(out, list)


def test_prompts_are_numbered_from_the_transcript_and_a_rewind_undoes_later_compactions() -> None:
    core, _ = make_core(window=200_000)
    for prompt in ("one", "two"):
        core.on_ui(SubmitPrompt(text=prompt))
        take(core)
        for i in range(4):
            round_trip(core, i + 10 * len(core.prompts()))
        core.on_llm(StreamDone(request_id=core.request_id, content="ok", tool_calls=[], finish_reason="stop"))
        take(core)
    core.on_ui(CompactConversation())
    take(core)
    answer_summary(core)
    assert core.prompts() == ["one", "two"]  # the summary is no prompt
    assert (getattr(core.conversation[0], "content", "") or "").startswith(compaction.SUMMARY_HEADER)
    core.truncate(1)  # what /rewind 2 does once the files are restored
    assert core.prompts() == ["one"] and core.conversation == core.transcript
    assert getattr(core.conversation[-1], "content", None) == "ok" and core.compaction_points == []
    assert_no_dangling(chat(core))
