"""The planning core of compaction: estimates, what is shrunk, what is summarised, what stays (pure)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from dashfloat.agent import _compaction as c
from dashfloat.agent import _context as ctx
from dashfloat.protocol import ChatMessage, FunctionCall, ToolCallRecord

# ---------------------------------------------------------------- conversations


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def assistant(text: str | None, *calls: tuple[str, str]) -> ChatMessage:
    records = [ToolCallRecord(id=i, function=FunctionCall(name=n, arguments="{}")) for i, n in calls]
    return ChatMessage(role="assistant", content=text, tool_calls=records or None)


def result(call_id: str, output: str, ok: bool = True) -> ChatMessage:
    return ChatMessage(role="tool", tool_call_id=call_id, content=json.dumps({"ok": ok, "output": output}))


TOOLS = ["read_file", "execute_command", "list_directory", "write_file"]


@st.composite
def conversations(draw: st.DrawFn) -> list[ChatMessage]:
    messages: list[ChatMessage] = [user("start")]
    n = 0
    for kind in draw(st.lists(st.sampled_from(["user", "text", "calls"]), max_size=25)):
        if kind == "user":
            messages.append(user(f"prompt {len(messages)}"))
        elif kind == "text":
            messages.append(assistant(f"answer {len(messages)}"))
        else:
            count = draw(st.integers(1, 3))
            calls = [(f"c{n + i}", draw(st.sampled_from(TOOLS))) for i in range(count)]
            n += count
            messages.append(assistant(draw(st.sampled_from([None, "let me look"])), *calls))
            for call_id, _ in calls:
                lines = draw(st.integers(0, 400))
                width = draw(st.integers(1, 300))
                messages.append(result(call_id, "\n".join("x" * width for _ in range(lines))))
    return messages


def calls_and_results(conversation: list[ChatMessage]) -> tuple[list[str], list[str]]:
    calls = [r.id for m in conversation for r in m.tool_calls or []]
    results = [m.tool_call_id or "" for m in conversation if m.role == "tool"]
    return calls, results


# ---------------------------------------------------------------- stage 1


@settings(max_examples=150, deadline=None)
@given(conversations(), st.integers(0, 6))
def test_shrinking_keeps_every_call_its_result_and_the_recent_units(conv: list[ChatMessage], keep: int) -> None:
    shrunk = c.shrink_old_results(conv, keep)
    out = shrunk.conversation
    assert len(out) == len(conv)
    assert [m.role for m in out] == [m.role for m in conv]
    assert [m.tool_calls for m in out] == [m.tool_calls for m in conv]
    assert [m.tool_call_id for m in out] == [m.tool_call_id for m in conv]
    assert c.dangling_calls(out) == [] == c.dangling_calls(conv)
    units = c.units(conv)
    recent_start = units[max(0, len(units) - keep)].start if keep and units else len(conv)
    assert out[recent_start:] == conv[recent_start:]
    for before, after in zip(conv, out, strict=True):
        assert len((after.content or "").encode()) <= len((before.content or "").encode())
        if after.role == "tool" and after.content != before.content:
            value = json.loads(after.content or "")
            assert value["ok"] is True and "elided at a compaction" in value["output"]
    assert c.shrink_old_results(out, keep).conversation == out  # idempotent
    assert shrunk.results == sum(a != b for a, b in zip(conv, out, strict=True))


def test_a_shrunk_result_keeps_head_tail_and_says_how_to_get_it_again() -> None:
    output = "\n".join(f"line {i}" for i in range(1000))
    conv = [user("go"), assistant(None, ("a", "read_file")), result("a", output), user("next"), assistant("ok")]
    out = c.shrink_old_results(conv, keep_recent=2).conversation
    text = json.loads(out[2].content or "")["output"]
    lines = text.splitlines()
    assert lines[: c.SHRINK_HEAD_LINES] == [f"line {i}" for i in range(c.SHRINK_HEAD_LINES)]
    assert lines[-c.SHRINK_TAIL_LINES :] == [f"line {i}" for i in range(1000 - c.SHRINK_TAIL_LINES, 1000)]
    assert "980 lines elided at a compaction; call read_file again (offset/limit)" in text


def test_a_shrink_that_would_cost_more_than_it_cuts_keeps_the_result() -> None:
    # Ten lines one character over the line cap: the marker would outweigh the ten characters cut.
    text = "\n".join(["x" * (c.SHRINK_LINE_MAX_CHARS + 1)] * 10)
    assert c.shrink_text(text, "read_file") == text
    content = json.dumps({"ok": True, "output": text})
    assert len(c.shrink_result(content, "read_file").encode()) <= len(content.encode())


def test_the_shrink_threshold_is_crossed() -> None:
    small = json.dumps({"ok": True, "output": "y" * (c.SHRINK_MIN_BYTES - 40)})
    assert c.shrink_result(small, "read_file") == small
    big = json.dumps({"ok": True, "output": "\n".join(["y" * 100] * 30)})
    assert len(big) >= c.SHRINK_MIN_BYTES and c.shrink_result(big, "execute_command") != big
    assert "run the command again" in c.shrink_result(big, "execute_command")


def test_a_result_that_is_not_json_is_cut_as_text_and_a_long_list_keeps_its_ends() -> None:
    text = "\n".join(f"row {i}" for i in range(500))
    assert "elided" in c.shrink_result(text, "x")
    entries = [{"name": f"f{i}", "type": "file"} for i in range(300)]
    value = json.loads(c.shrink_result(json.dumps({"ok": True, "entries": entries}), "list_directory"))
    assert value["entries"][0] == entries[0] and value["entries"][-1] == entries[-1]
    assert "280 items elided" in value["entries"][c.SHRINK_LIST_KEEP]


# ---------------------------------------------------------------- stage 2


@settings(max_examples=150, deadline=None)
@given(conversations(), st.integers(1, 6), st.text(min_size=1, max_size=50).filter(str.strip))
def test_a_summary_keeps_the_latest_prompt_and_recent_units_and_leaves_no_dangling_call(
    conv: list[ChatMessage], keep: int, summary: str
) -> None:
    plan = c.plan_summary(conv, keep)
    if plan is None:
        assert len(c.units(conv)) <= keep or all(m.role == "user" for m in conv[:1])
        return
    out = c.apply_summary(plan, summary)
    assert c.dangling_calls(out) == []
    assert out[0].role == "user" and (out[0].content or "").startswith(c.SUMMARY_HEADER)
    assert summary.strip() in (out[0].content or "")
    assert out[len(out) - len(plan.recent) :] == plan.recent == conv[len(conv) - len(plan.recent) :]
    latest = max(i for i, m in enumerate(conv) if m.role == "user")
    assert conv[latest] in out
    calls, results = calls_and_results(out)
    assert sorted(calls) == sorted(results)
    assert plan.older + plan.recent == conv
    request = c.summary_request(plan, "tests")
    assert request[:-1] == plan.older and "Focus on: tests" in (request[-1].content or "")
    assert c.dangling_calls(request) == []


def test_nothing_to_summarise_in_a_short_conversation() -> None:
    conv = [user("a"), assistant("b")]
    assert c.plan_summary(conv, keep_recent=4) is None
    assert c.plan_summary([user("only")] + [assistant("x")] * 4, keep_recent=4) is None


def test_dropping_front_units_never_splits_a_call_from_its_results() -> None:
    conv = [
        user("a"),
        assistant(None, ("1", "read_file"), ("2", "read_file")),
        result("1", "x"),
        result("2", "y"),
        user("b"),
    ]
    assert c.drop_front_units(conv, 1) == conv[1:]
    assert c.drop_front_units(conv, 2) == conv[4:]
    assert c.drop_front_units(conv, 9) == []


def test_dangling_calls_are_found() -> None:
    assert c.dangling_calls([assistant(None, ("1", "x")), user("later")]) == ["unanswered 1"]
    assert c.dangling_calls([user("a"), result("9", "x")]) == ["orphan 9"]


# ---------------------------------------------------------------- estimates


def test_the_estimate_of_a_longer_request_is_the_reported_front_plus_the_new_tail() -> None:
    front = [ChatMessage(role="system", content="sys"), user("hello")]
    calibration = ctx.calibrate(front, prompt_tokens=900)
    assert calibration is not None
    assert ctx.estimate(front, calibration) == 900
    tail = [assistant("x" * 300)]
    raw_tail = ctx.raw_tokens(tail[0])
    assert ctx.estimate(front + tail, calibration) == 900 + round(raw_tail * calibration.ratio)
    # a changed front (a compaction): the whole raw estimate, scaled by what the provider taught us
    changed = [front[0], user("summary"), *tail]
    assert ctx.estimate(changed, calibration) == round(ctx.raw_request_tokens(changed) * calibration.ratio)
    assert ctx.calibrate(front, 0) is None
    assert ctx.estimate(front, None) == ctx.raw_request_tokens(front)


@given(st.integers(1, 10_000_000), st.integers(1, 10_000_000))
def test_the_calibration_ratio_is_clamped(reported: int, raw: int) -> None:
    ratio = ctx.Calibration((), reported, raw).ratio
    assert ctx.CALIBRATION_MIN <= ratio <= ctx.CALIBRATION_MAX


@given(st.integers(512, 10_000_000), st.integers(10, 95))
def test_budget_never_exceeds_the_window_minus_the_reserve(window: int, percent: int) -> None:
    reserve = ctx.answer_reserve(window)
    assert 1 <= reserve <= ctx.ANSWER_RESERVE_MAX_TOKENS
    assert ctx.hard_limit(window) == window - reserve
    assert ctx.compact_threshold(window, percent) <= ctx.hard_limit(window)


def test_the_answer_reserve_bound_is_crossed() -> None:
    at_cap = int(ctx.ANSWER_RESERVE_MAX_TOKENS / ctx.ANSWER_RESERVE_FRACTION)
    assert ctx.answer_reserve(at_cap) == ctx.ANSWER_RESERVE_MAX_TOKENS
    assert ctx.answer_reserve(at_cap - 8) < ctx.ANSWER_RESERVE_MAX_TOKENS
    assert ctx.answer_reserve(at_cap * 10) == ctx.ANSWER_RESERVE_MAX_TOKENS


# ---------------------------------------------------------------- a request before the window is known


@settings(max_examples=150, deadline=None)
@given(conversations(), st.integers(0, 3 * ctx.EARLY_REQUEST_MAX_TOKENS))
def test_a_request_goes_before_the_window_only_when_no_compaction_could_change_it(
    conv: list[ChatMessage], tokens: int
) -> None:
    early = ctx.sends_before_window(conv, tokens)
    droppable = any(c.shrink_old_results(conv, keep).results for keep in range(c.KEEP_RECENT_UNITS + 1)) or any(
        c.plan_summary(conv, keep) is not None for keep in range(1, c.KEEP_RECENT_UNITS + 1)
    )
    assert c.nothing_to_drop(conv) == (not droppable)
    assert early == (not droppable and tokens <= ctx.EARLY_REQUEST_MAX_TOKENS)
    if early:  # the window can only say whether it fits at all, and every common one takes it
        assert tokens <= ctx.hard_limit(ctx.EARLY_REQUEST_WINDOW_TOKENS)


def test_a_first_prompt_goes_before_the_window_up_to_the_bound() -> None:
    first = [user("hi")]
    assert ctx.sends_before_window(first, ctx.EARLY_REQUEST_MAX_TOKENS)
    assert not ctx.sends_before_window(first, ctx.EARLY_REQUEST_MAX_TOKENS + 1)
    small = [user("hi"), assistant(None, ("a", "read_file")), result("a", "tiny")]
    assert ctx.sends_before_window(small, 1000)  # nothing older than the prompt, no result worth shrinking
    big = [user("hi"), assistant(None, ("a", "read_file")), result("a", "\n".join(["y" * 100] * 30))]
    assert not ctx.sends_before_window(big, 1000)
    assert not ctx.sends_before_window([user("before"), assistant("answer"), user("hi")], 1000)
