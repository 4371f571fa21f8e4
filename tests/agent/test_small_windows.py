"""Issue 39, ADR 0092: compaction that suits a small window (8192 tokens, a 0.5B model on llama.cpp) and the warning
for an @mention that takes a large share of it. Pure functions first, then the core in-process."""

from __future__ import annotations

import msgspec
import pytest

from dashfloat.agent import _compaction as c
from dashfloat.agent import _context as ctx
from dashfloat.agent._mentions import MENTION_WINDOW_SHARE_WARN, Attaching, window_share_warning
from dashfloat.mentions import ATTACHMENTS_LINE
from dashfloat.protocol import (
    ChatMessage,
    FunctionCall,
    ReadFileResult,
    StartStream,
    SubmitPrompt,
    SystemEntry,
    ToolCallRecord,
)
from tests.agent.test_core_context import answer_summary, big_output, make_core, round_trip, take

SMALL = 8192


def test_the_summary_budget_is_a_share_of_the_largest_request_between_its_bounds() -> None:
    at_min = int(c.SUMMARY_MIN_TOKENS / c.SUMMARY_WINDOW_SHARE)
    at_max = int(c.SUMMARY_MAX_TOKENS / c.SUMMARY_WINDOW_SHARE) + 1
    assert c.summary_budget(at_min - 100) == c.SUMMARY_MIN_TOKENS
    assert c.summary_budget(ctx.hard_limit(SMALL)) == int(ctx.hard_limit(SMALL) * c.SUMMARY_WINDOW_SHARE) == 573
    assert c.summary_budget(at_max) == c.SUMMARY_MAX_TOKENS == c.summary_budget(1_000_000)


def test_the_summary_request_is_structured_and_bounded_in_words() -> None:
    plan = c.SummaryPlan([ChatMessage(role="user", content="a")], None, [])
    [_, ask] = c.summary_request(plan, "tests", budget=400)
    text = ask.content or ""
    assert text.startswith(c.COMPACTION_PROMPT) and "Do not call tools" in text
    assert [line for line in text.splitlines() if line.startswith("## ")] == [
        "## Goal",
        "## Next",
        "## Files",
        "## Done",
    ]
    assert "At most 300 words in all." in text and text.endswith("Focus on: tests")


def result(call_id: str, content: str) -> ChatMessage:
    return ChatMessage(role="tool", tool_call_id=call_id, content=content)


def test_the_summary_reads_old_results_and_attachments_shortened_with_their_paths_and_outcomes() -> None:
    read = msgspec.json.encode(msgspec.structs.asdict(big_output(1))).decode()
    typed = "look at @big.log please"
    attached = f"{typed}\n\n{ATTACHMENTS_LINE}\n\nThe file big.log:\n```\n" + "log line\n" * 400 + "```"
    call = ToolCallRecord(id="c1", function=FunctionCall(name="read_file", arguments='{"path": "f1.txt"}'))
    older = [
        ChatMessage(role="user", content=attached),
        ChatMessage(role="assistant", tool_calls=[call]),
        result("c1", read),
        ChatMessage(role="user", content="short and plain"),
    ]
    short = c.for_summary(older)
    assert short[1] == older[1] and short[3] == older[3]  # calls and short prompts are left alone
    assert (short[0].content or "").startswith(f"{typed}\n\n{ATTACHMENTS_LINE}") and c.ELIDED in (
        short[0].content or ""
    )
    assert c.ELIDED in (short[2].content or "") and '"path":"f1.txt"' in (short[2].content or "")
    assert sum(len(m.content or "") for m in short) < sum(len(m.content or "") for m in older) // 4
    assert c.for_summary(short) == short  # shortened once, never again


def test_a_summary_past_its_bound_is_cut_at_a_line_end() -> None:
    budget = 100
    most = int(budget * c.SUMMARY_KEEP_RATIO * c.SUMMARY_BYTES_PER_TOKEN)
    fits = ("- item\n" * most)[:most]
    assert c.bounded_summary(fits, budget) == fits
    cut = c.bounded_summary(fits + "x", budget)
    assert cut != fits and cut.endswith("bytes over its bound]") and "- item\n[… the rest" in cut
    assert len(cut.split("\n[…")[0].encode()) <= most


def test_after_a_compaction_in_a_small_window_half_of_it_is_left_to_work_in() -> None:
    # Measured here (issue 39): after compaction every turn re-read ~5.5k of an 8k window; the 0.5B model's summary
    # alone ran to thousands of tokens, and the kept tail was sized without it.
    core, _ = make_core(window=SMALL)
    core.on_ui(SubmitPrompt(text="read everything"))
    take(core)
    summary_requests: list[StartStream] = []
    after: list[int] = []
    for i in range(40):
        out = round_trip(core, i)
        while core.waiting == "summary":
            summary_requests += [m for m in out if isinstance(m, StartStream)]
            out = answer_summary(core, "## Goal\n" + "- read the files one by one, as asked\n" * 400)
            after.append(ctx.estimate(core.request_messages(), core.calibration))
    assert summary_requests and after
    for request in summary_requests:
        words = int(c.summary_budget(ctx.hard_limit(SMALL)) * c.WORDS_PER_TOKEN)
        assert f"At most {words} words" in (request.messages[-1].content or "")
        tools = [m.content or "" for m in request.messages if m.role == "tool"]
        assert tools and all(c.ELIDED in t or len(t) < c.SHRINK_MIN_BYTES for t in tools)
    assert max(after) <= SMALL // 2, after


@pytest.mark.parametrize(
    ("share", "warned"), [(MENTION_WINDOW_SHARE_WARN, False), (MENTION_WINDOW_SHARE_WARN + 0.01, True)]
)
def test_an_attachment_past_its_share_of_the_window_is_said_once(share: float, warned: bool) -> None:
    text = "x" * int(share * SMALL * ctx.BYTES_PER_TOKEN)
    warning = window_share_warning("big.log", text, SMALL)
    assert (warning is not None) is warned
    assert window_share_warning("big.log", text, None) is None  # the window is not known yet: nothing to say
    if warning is not None:
        assert warning.startswith("@big.log takes ~") and "of the model's 8.2k-token window" in warning
        assert "\n" not in warning


def test_the_warning_comes_with_the_read_before_the_prompt_goes() -> None:
    attaching = Attaching("see @big.log", [], "see @big.log", ["big.log"], window=SMALL)
    attaching.call, attaching.next = ("m1", "read_file", "big.log"), 1
    content = "a log line\n" * 3000
    done = ReadFileResult(
        path="big.log", content=content, offset=1, lines=3000, total_lines=3000, total_bytes=1, truncated=False
    )
    out = attaching.read(done)
    notes = [m.text for _, m in out if isinstance(m, SystemEntry)]
    assert len(notes) == 1 and notes[0].startswith("@big.log takes ~") and attaching.done
