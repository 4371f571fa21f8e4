"""Issue 37's keys in the real shell drawn into a pyte screen: Esc then Enter, hints from the state, the queue's and the
modes' pure cores, the approval's one record row."""

from __future__ import annotations

import asyncio

import msgspec
from prompt_toolkit.keys import Keys

from dashfloat.protocol import (
    AgentReady,
    Cancel,
    ChangeRecorded,
    ConfirmRequested,
    PhaseChanged,
    SessionStarted,
    SetApproval,
    SubmitPrompt,
    ToolResultShown,
    WriteFileArgs,
)
from dashfloat.ui import _queue as queue
from dashfloat.ui._commands import INIT_PROMPT
from dashfloat.ui._keys import bindings
from dashfloat.ui._modes import ACT_ON_PLAN, next_mode
from dashfloat.ui._notices import ONBOARDING_KEYS
from dashfloat.ui.render import CHANGE_DIFF_SHOWN_LINES
from dashfloat.ui.state import CONFIRM_TEXT_HINT, DEMO_PROVIDER, Notice, Submitted, UiState, UserPrompt, initial, reduce
from tests.ui.ui_screen import running_ui

ENTER, ALT_ENTER, ESC, CTRL_U, SHIFT_TAB = "\r", "\x1b\r", "\x1b", "\x15", "\x1b[Z"
READY = AgentReady(model="m1", provider="p", cwd="/w", approval="ask", context_window=128_000)


# ---------------------------------------------------------------- 5. Esc never leaves a newline behind


def test_no_key_sequence_starts_with_esc_so_esc_then_enter_is_two_keys() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            kb = ui.shell.app.key_bindings
            assert kb is not None
            # Esc Enter was bound as a line break: an Esc then waited for a quick Enter and made one of them both.
            assert [b.keys for b in kb.get_bindings_starting_with_keys((Keys.Escape,))] == []
            assert bindings(ui.shell).get_bindings_for_keys((Keys.ControlJ,))  # Alt-Enter's key (ui/_ptk_private)

    asyncio.run(main())


def test_esc_then_enter_cancels_then_queues_and_alt_enter_still_breaks_the_line() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            ui.link.push(READY, PhaseChanged(phase="streaming"))
            await ui.until(lambda: ui.shell.state.ready and ui.shell.state.busy)
            ui.keys("abc")
            await ui.until(lambda: ui.shell.buffer.text == "abc")
            ui.keys(ESC)
            await ui.until(lambda: Cancel() in ui.link.sent)  # the Esc was taken alone, at once
            ui.keys(ENTER)
            await ui.until(lambda: ui.shell.state.queued == ("abc",))
            assert "\n" not in ui.shell.buffer.text and ui.shell.buffer.text == ""
            ui.keys("x" + ALT_ENTER + "y")  # Alt-Enter: its two bytes together
            await ui.until(lambda: ui.shell.buffer.text == "x\ny")

    asyncio.run(main())


# ---------------------------------------------------------------- 3. hints from the current state only


def test_the_clear_it_hint_goes_with_the_text_and_with_the_confirmation() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            confirm = ConfirmRequested(ref=1, id="c1", subject=WriteFileArgs(path="f", content=""), lines=["+x"])
            ui.link.push(PhaseChanged(phase="streaming"), confirm, PhaseChanged(phase="confirming"))
            await ui.until(lambda: ui.shell.state.confirm_armed)
            ui.keys("abc")
            ui.keys(ESC)  # text in the input: Esc answers nothing, the hint says why
            await ui.until(lambda: any(CONFIRM_TEXT_HINT in line for line in ui.visible()))
            ui.keys(CTRL_U)  # the input is empty: the hint is no longer true
            # On the state first: a screen read mid-redraw may lack the hint row while the state still holds it.
            await ui.until(lambda: ui.shell.buffer.text == "" and ui.shell.state.hint is None)
            await ui.until(lambda: not any(CONFIRM_TEXT_HINT in line for line in ui.visible()))
            ui.keys("more")
            await ui.until(lambda: ui.shell.buffer.text == "more")
            ui.keys(ESC)  # a lone Esc is taken after the input's flush delay: wait for its own effect
            await ui.until(lambda: ui.shell.state.hint == CONFIRM_TEXT_HINT)
            ui.link.push(PhaseChanged(phase="idle"))  # the confirmation went (cancelled): its hint with it
            await ui.until(lambda: not any(CONFIRM_TEXT_HINT in line for line in ui.visible()))
            await ui.until(lambda: ui.shell.state.hint is None)
            second = ConfirmRequested(ref=2, id="c2", subject=WriteFileArgs(path="g", content=""), lines=["+y"])
            ui.link.push(PhaseChanged(phase="streaming"), second, PhaseChanged(phase="confirming"))
            await ui.until(lambda: ui.shell.state.confirm_armed)
            assert ui.shell.state.hint is None  # a later confirmation does not inherit it

    asyncio.run(main())


# ---------------------------------------------------------------- 8. Shift-Tab, in the shell and its pure core


def test_shift_tab_sends_the_next_mode_and_leaving_plan_offers_to_act() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            ui.link.push(READY)
            await ui.until(lambda: ui.shell.state.ready)
            ui.keys(SHIFT_TAB)
            await ui.until(lambda: ui.link.sent == [SetApproval(mode="edits")])
            ui.link.push(AgentReady(model="m1", provider="p", cwd="/w", approval="plan"))
            await ui.until(lambda: ui.shell.state.approval == "plan")
            ui.keys(SHIFT_TAB)
            await ui.until(lambda: ui.link.sent[-1] == SetApproval(mode="ask"))  # "all" is not enabled here
            assert ui.shell.buffer.text == ""  # no turn ran in plan mode: no plan to act on
            ui.link.push(AgentReady(model="m1", provider="p", cwd="/w", approval="plan"))
            await ui.until(lambda: ui.shell.state.approval == "plan")
            ui.link.push(PhaseChanged(phase="streaming"))
            ui.link.push(PhaseChanged(phase="idle"))  # a turn ran in plan mode: its answer is the plan
            await ui.until(lambda: ui.shell.state.planned)
            ui.keys(SHIFT_TAB)
            await ui.until(lambda: ui.link.sent[-1] == SetApproval(mode="ask") and len(ui.link.sent) == 3)
            assert ui.shell.buffer.text == ACT_ON_PLAN
            ui.link.push(AgentReady(model="m1", provider="p", cwd="/w", approval="ask"))
            await ui.until(lambda: not ui.shell.state.planned)  # left: the next visit to plan starts without one

    asyncio.run(main())


def test_two_quick_shift_tabs_go_two_modes_on_before_the_agent_answers() -> None:
    """Found with a pty test: the second of two quick presses cycled from the mode the agent had not confirmed yet,
    so ask → edits → edits."""

    async def main() -> None:
        async with running_ui() as ui:
            ui.link.push(READY)
            await ui.until(lambda: ui.shell.state.ready)
            ui.keys(SHIFT_TAB + SHIFT_TAB)
            await ui.until(lambda: len(ui.link.sent) == 2)
            assert ui.link.sent == [SetApproval(mode="edits"), SetApproval(mode="plan")]
            assert ui.shell.state.approval == "plan"  # on the status bar at once

    asyncio.run(main())


def test_the_mode_cycle_reaches_all_only_when_enabled() -> None:
    assert [next_mode(m, False) for m in ("ask", "edits", "plan", "all")] == ["edits", "plan", "ask", "ask"]
    assert [next_mode(m, True) for m in ("ask", "edits", "plan", "all")] == ["edits", "plan", "all", "ask"]


# ---------------------------------------------------------------- 10. the queue's pure core


def test_the_queue_holds_at_most_its_bound_and_goes_in_order_once_idle() -> None:
    state = reduce(initial(0.0), READY)
    for n in range(queue.QUEUE_MAX_PROMPTS):
        queued = queue.enqueue(state, f"p{n}")
        assert queued is not None
        state = queued
    assert queue.enqueue(state, "one more") is None  # the bound crossed: refused, the text stays in the input
    state, text = queue.next_prompt(state)
    assert text == "p0" and len(state.queued) == queue.QUEUE_MAX_PROMPTS - 1
    busy = reduce(state, PhaseChanged(phase="streaming"))
    assert queue.next_prompt(busy) == (busy, None)  # never while a turn runs
    back, text = queue.given_back(reduce(queue.stopped_by_user(busy), PhaseChanged(phase="idle")), "draft")
    assert back.queued == () and text is not None and text.startswith("p1\n\np2") and text.endswith("\n\ndraft")
    lines = queue.queue_lines(state, len(queue.QUEUE_KEYS))
    assert len(lines) == queue.QUEUE_SHOWN_MAX + 2 and lines[-1] == queue.QUEUE_KEYS
    assert queue.queue_lines(state, len(queue.QUEUE_KEYS) - 1)[-1] == queue.QUEUE_KEYS_SHORT  # the bound crossed


# ---------------------------------------------------------------- 6. one record row per approved change


def test_the_approved_change_is_one_row_with_its_diff_collapsed() -> None:
    async def main() -> None:
        async with running_ui(cols=90, rows=40) as ui:
            write = WriteFileArgs(path="a.txt", content="")
            diff = [f"+line {i}" for i in range(20)]
            confirm = ConfirmRequested(ref=1, id="w1", subject=write, lines=diff, scope="write_file")
            ui.link.push(READY, PhaseChanged(phase="streaming"), confirm, PhaseChanged(phase="confirming"))
            await ui.until(lambda: ui.shell.state.confirm_armed)
            ui.keys("y")
            await ui.until(lambda: ui.shell.state.held_decision is not None)
            change = ChangeRecorded(
                id="w1", name="write_file", path="a.txt", summary="new file · +20", approved_by="keypress", diff=diff
            )
            ui.link.push(ToolResultShown(id="w1", name="write_file", status="ok", output=""), change)
            ui.link.push(PhaseChanged(phase="idle"))
            await ui.until(lambda: "✓ wrote a.txt new file · +20 · approved by you" in ui.text())
            text = ui.text()
            assert "✓ approved write_file" not in text and "→ ok" not in text
            assert f"+line {CHANGE_DIFF_SHOWN_LINES - 1}" in text and f"+line {CHANGE_DIFF_SHOWN_LINES}" not in text
            assert f"… {20 - CHANGE_DIFF_SHOWN_LINES} more diff lines · Ctrl-O or /last shows all" in text
            ui.keys("\x0f")  # Ctrl-O: the whole diff of that change, from the UI's own record
            await ui.until(lambda: "+line 19" in ui.text())

    asyncio.run(main())


def test_a_queued_command_prompt_goes_as_its_prompt_and_shows_as_typed() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            ui.link.push(READY, PhaseChanged(phase="streaming"))
            await ui.until(lambda: ui.shell.state.busy)
            ui.keys("/init" + ENTER)
            await ui.until(lambda: ui.shell.state.queued == ("/init",))
            # on screen with the next frame (the state changes first: asserted at once, it failed 1 run in 20)
            await ui.until(lambda: any("↳ queued: /init" in line for line in ui.visible()))
            ui.link.push(PhaseChanged(phase="idle"))
            await ui.until(lambda: SubmitPrompt(text=INIT_PROMPT) in ui.link.sent)
            await ui.until(lambda: any(line == "❯ /init" for line in ui.lines()))

    asyncio.run(main())


# ---------------------------------------------------------------- 9. the first screen's line


def _onboarding_lines(state: UiState) -> list[str]:
    return [e.text for e in state.outbox if isinstance(e, Notice) and ONBOARDING_KEYS in e.text]


def test_the_first_line_waits_for_the_window_and_is_said_once() -> None:
    """Found in tmux with llama.cpp: "window not known yet" on the first line, 8.2k on the status bar a moment later."""
    ready = AgentReady(model="qwen", provider="local", cwd="/w", approval="ask")
    state = reduce(initial(0.0), ready)
    assert _onboarding_lines(state) == []  # the window is not known yet: not said yet
    state = reduce(state, msgspec.structs.replace(ready, context_window=8192, window_source="server"))
    assert _onboarding_lines(state) == [f"DashFloat · qwen · window 8.2k · sandbox off · {ONBOARDING_KEYS}"]
    state = reduce(state, msgspec.structs.replace(ready, context_window=8192, approval="edits"))
    assert len(_onboarding_lines(state)) == 1  # once


def test_a_prompt_before_the_window_is_known_comes_after_the_first_line() -> None:
    state = reduce(initial(0.0), AgentReady(model="qwen", provider="local", cwd="/w", approval="ask"))
    state = reduce(state, Submitted("hi"))
    [first, prompt] = state.outbox
    assert isinstance(first, Notice) and "window not known yet" in first.text and isinstance(prompt, UserPrompt)
    state = reduce(state, AgentReady(model="qwen", provider="local", cwd="/w", approval="ask", context_window=8192))
    assert len(_onboarding_lines(state)) == 1


def test_the_demo_and_a_resumed_session_say_no_first_line() -> None:
    demo = reduce(
        initial(0.0), AgentReady(model="d", provider=DEMO_PROVIDER, cwd="/w", approval="ask", context_window=1)
    )
    assert _onboarding_lines(reduce(demo, Submitted("hi"))) == []
    resumed = reduce(initial(0.0), SessionStarted(session_id="s1", resumed=True))
    resumed = reduce(resumed, AgentReady(model="q", provider="local", cwd="/w", approval="ask", context_window=8192))
    assert _onboarding_lines(resumed) == []
