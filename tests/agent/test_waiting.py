"""Issue 39, ADR 0092: the wait says what it waits for. The agent turns the LLM process's PromptProgress into the
status bar's words and fill (pure functions, then the core in-process); the status bar draws them."""

from __future__ import annotations

from dashfloat.agent import AgentCore, AgentOptions, MemoryJournal
from dashfloat.agent._context import (
    BUSY_WORDS,
    calibrate,
    estimate,
    progress_shown,
    raw_tokens,
    request_sent,
    unread_tokens,
)
from dashfloat.protocol import (
    ChatMessage,
    ContentDelta,
    ContextChanged,
    Message,
    PhaseChanged,
    PromptProgress,
    ProviderConfig,
    StreamDone,
    SubmitPrompt,
)
from dashfloat.ui.render import WAITING_WORDS, render_status
from dashfloat.ui.state import Tick, initial, reduce

LOCAL = "http://127.0.0.1:8080/v1"
HOSTED = "https://api.example.com/v1"
SYSTEM = ChatMessage(role="system", content="you are a coding agent " * 20)
ASK = ChatMessage(role="user", content="fix the failing test")


def core_for(base_url: str) -> AgentCore:
    provider = ProviderConfig(name="t", base_url=base_url, model="m", context_window=8192)
    return AgentCore(AgentOptions(provider=provider, cwd="/work"), MemoryJournal())


def take(core: AgentCore) -> list[Message]:
    out = [m for d, m in core.outbox if d == "ui"]
    core.outbox.clear()
    return out


def test_progress_reads_as_tokens_read_of_the_total_and_the_fill_is_the_servers_count() -> None:
    shown = progress_shown(PromptProgress(request_id=1, processed=3200, total=5500, cached=1000), 5000)
    assert shown == ContextChanged(tokens=5500, waiting="reading prompt 3,200/5,500 tokens")
    over = progress_shown(PromptProgress(1, processed=9000, total=5500), 5000)
    assert over.waiting == "reading prompt 5,500/5,500 tokens"
    assert progress_shown(PromptProgress(1, busy=True), 5000) == ContextChanged(tokens=5000, waiting=BUSY_WORDS)
    assert progress_shown(PromptProgress(1), 5000) == ContextChanged(tokens=5000)  # nothing reported: nothing said


def test_a_local_server_is_said_to_read_the_new_part_of_the_prompt_a_hosted_one_nothing() -> None:
    first = [SYSTEM, ASK]
    shown = request_sent(LOCAL, first, None)
    assert shown.tokens == estimate(first, None)
    assert shown.waiting == f"the server reads ~{unread_tokens(first, None):,} new prompt tokens"
    assert request_sent(HOSTED, first, None) == ContextChanged(tokens=estimate(first, None))


def test_the_front_the_last_request_shared_is_in_the_servers_cache_and_not_counted_again() -> None:
    first = [SYSTEM, ASK]
    calibration = calibrate(first, 2 * sum(raw_tokens(m) for m in first))  # the server counts twice our guess
    assert calibration is not None
    answer = ChatMessage(role="assistant", content="done")
    assert unread_tokens([*first, answer], calibration) == round(raw_tokens(answer) * calibration.ratio)
    other = [SYSTEM, ChatMessage(role="user", content="something else")]  # a new front (a compaction): all of it
    assert unread_tokens(other, calibration) == estimate(other, calibration)


def test_the_core_shows_each_step_of_the_request_in_flight_and_it_is_no_answer() -> None:
    core = core_for(LOCAL)
    core.on_ui(SubmitPrompt(text="hi"))
    out = take(core)
    sent = [m for m in out if isinstance(m, ContextChanged)][-1]
    assert sent.tokens == core.last_estimate and sent.waiting.startswith("the server reads ~")
    assert out.index(PhaseChanged(phase="streaming")) < out.index(sent)  # the fill with the prompt in flight
    core.on_llm(PromptProgress(core.request_id, processed=512, total=1200))
    assert take(core) == [ContextChanged(tokens=1200, waiting="reading prompt 512/1,200 tokens")]
    assert not core.answered  # the watchdog keeps the first-byte patience while the server reads
    core.on_llm(PromptProgress(core.request_id - 1, processed=1, total=2))  # a cancelled request's: not ours
    assert take(core) == []
    core.on_llm(ContentDelta(core.request_id, "hello"))
    assert core.answered
    core.on_llm(StreamDone(core.request_id, "hello", [], "stop"))


def test_the_status_bar_draws_the_agents_words_and_the_generic_ones_without_them() -> None:
    state = reduce(reduce(initial(0.0, model="m"), Tick(0.0, 120, 24)), PhaseChanged(phase="streaming"))
    assert WAITING_WORDS in "".join(t for _, t in render_status(state, 1.0, 120, None))
    state = reduce(state, ContextChanged(tokens=5500, waiting="reading prompt 3,200/5,500 tokens"))
    bar = "".join(t for _, t in render_status(state, 1.0, 120, None))
    assert "Streaming 1.0s · reading prompt 3,200/5,500 tokens · m · 5.5k" in bar
    narrow = "".join(t for _, t in render_status(state, 1.0, 50, None))
    assert "reading prompt" not in narrow  # a narrow bar gives the words up first, as before
