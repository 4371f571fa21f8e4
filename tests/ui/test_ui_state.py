"""The pure state function: every agent message kind and every UI-internal event."""

from __future__ import annotations

import msgspec.structs
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dashfloat.protocol import (
    AgentReady,
    ChangeRecorded,
    ConfirmRequested,
    PhaseChanged,
    ReadFileArgs,
    ReasoningReceived,
    SessionCleared,
    SessionInfo,
    SessionsListed,
    SessionStarted,
    SystemEntry,
    TokenReceived,
    ToolCallShown,
    ToolResultShown,
    TurnEnded,
    Usage,
    UsageShown,
    UserPromptShown,
    WriteFileArgs,
)
from dashfloat.ui._blocks import split_finished
from dashfloat.ui._confirm import confirm_key, ctrl_c, decide
from dashfloat.ui.state import (
    CONFIRM_GUARD_S,
    DOUBLE_CTRL_C_S,
    HISTORY_MAX_ENTRIES,
    ChangeRecord,
    DecisionRecord,
    Hint,
    InputChanged,
    LocalNotice,
    Notice,
    Prose,
    ProseRows,
    Reasoning,
    SessionTable,
    Submitted,
    Tick,
    ToolCall,
    ToolResult,
    UiState,
    UserPrompt,
    close_open,
    initial,
    reduce,
    take_outbox,
)

CONFIRM = ConfirmRequested(ref=7, id="c1", subject=WriteFileArgs(path="a.txt", content="x"), lines=["+x"])


def run(*events: object, state: UiState | None = None) -> UiState:
    state = state or initial(0.0)
    for event in events:
        state = reduce(state, event)  # type: ignore[arg-type]
    return state


def test_agent_ready_sets_the_status_fields_and_history() -> None:
    state = run(AgentReady(model="m", provider="p", cwd="/w", approval="edits", context_window=1000, history=["a"]))
    assert (state.model, state.provider, state.cwd, state.approval, state.context_window) == (
        "m",
        "p",
        "/w",
        "edits",
        1000,
    )
    assert state.history == ("a",) and state.ready


def test_history_from_the_agent_is_bounded() -> None:
    many = [str(i) for i in range(HISTORY_MAX_ENTRIES + 5)]
    state = run(AgentReady(model="m", provider="p", cwd="/", approval="ask", history=many))
    assert len(state.history) == HISTORY_MAX_ENTRIES and state.history[-1] == many[-1]


def test_a_prompt_typed_before_the_agent_is_ready_stays_in_the_history() -> None:
    # The status bar says Idle before AgentReady; a prompt sent then is not in the saved history it carries.
    ready = AgentReady(model="m", provider="p", cwd="/", approval="ask", history=["saved"])
    state = run(Submitted("typed early"), ready)
    assert state.history == ("saved", "typed early")
    state = run(Submitted("later"), AgentReady(model="m", provider="p", cwd="/", approval="ask"), state=state)
    assert state.history == ("saved", "typed early", "later")  # a restarted agent does not reset it


def test_session_started_first_is_silent_then_announced() -> None:
    state = run(SessionStarted(session_id="s1"))
    assert state.session_id == "s1" and state.outbox == ()
    state = run(UsageShown(usage=Usage(total_tokens=9)), SessionStarted(session_id="s2"), state=state)
    assert state.outbox == (Notice("new session s2"),) and state.context_tokens is None
    state = run(SessionStarted(session_id="s3", resumed=True), state=take_outbox(state)[0])
    assert state.outbox == (Notice("resumed session s3"),)


def test_a_cleared_session_is_no_session_and_forgets_the_context_size() -> None:
    state = run(SessionStarted(session_id="s1"), UsageShown(usage=Usage(total_tokens=9)))
    state = run(SessionCleared(), state=state)
    assert state.session_id == "" and state.context_tokens is None and state.outbox == ()
    state = run(SessionStarted(session_id="s2"), state=state)
    assert state.outbox == (Notice("new session s2"),)


def test_tokens_stay_live_until_a_block_finishes() -> None:
    state = run(PhaseChanged(phase="streaming"), TokenReceived(text="Hello **wor"), TokenReceived(text="ld**"))
    assert state.outbox == () and state.open_prose == "Hello **world**"
    state = run(TokenReceived(text="\n\nNext"), state=state)
    assert state.outbox == (Prose("Hello **world**"),) and state.open_prose == "Next"
    state = run(PhaseChanged(phase="idle"), state=state)
    assert state.outbox[-1] == Prose("Next") and state.open_prose == "" and state.phase == "idle"


def test_reasoning_is_its_own_entry_before_the_answer() -> None:
    state = run(ReasoningReceived(text="think"), ReasoningReceived(text="ing"))
    assert state.open_reasoning == "thinking" and state.outbox == ()
    state = run(TokenReceived(text="answer"), state=state)
    assert state.outbox == (Reasoning("thinking"),) and state.open_reasoning == ""


def test_user_prompt_shown_closes_the_open_answer() -> None:
    state = run(TokenReceived(text="partial"), UserPromptShown(text="next question"))
    assert state.outbox == (Prose("partial"), UserPrompt("next question"))


def test_tool_rows_and_results() -> None:
    state = run(
        TokenReceived(text="let me look"),
        ToolCallShown(id="1", args=ReadFileArgs(path="a")),
        ToolResultShown(id="1", name="read_file", status="ok", output="x"),
    )
    assert state.outbox == (
        Prose("let me look"),
        ToolCall(ReadFileArgs(path="a")),
        ToolResult("read_file", "ok", "x"),
    )


def test_a_confirmed_call_is_named_by_its_confirmation_not_by_a_tool_row_too() -> None:
    write = WriteFileArgs(path="a.txt", content="x")
    state = run(ToolCallShown(id="c1", args=write))
    assert state.outbox == () and state.held_call == ToolCall(write)  # drawn live, not printed yet
    state = run(ConfirmRequested(ref=7, id="c1", subject=write, lines=["+x"]), state=state)
    assert state.outbox == () and state.held_call is None
    state, _ = decide(state, "approve")
    assert state.outbox == () and state.held_decision == DecisionRecord(write, "approve")  # drawn live
    change = ChangeRecorded(id="c1", name="write_file", path="a.txt", summary="+1", approved_by="keypress", diff=["+x"])
    state = run(ToolResultShown(id="c1", name="write_file", status="ok", output=""), change, state=state)
    # issue 37: one record row, not "approved", "→ ok" and the change's line
    assert state.outbox == (ChangeRecord(change, approved_here=True),) and state.held_decision is None


def test_an_approved_change_that_fails_keeps_its_approval_and_the_error() -> None:
    write = WriteFileArgs(path="a.txt", content="x")
    state = run(ConfirmRequested(ref=7, id="c1", subject=write, lines=["+x"]))
    state, _ = decide(state, "approve")
    state = run(ToolResultShown(id="c1", name="write_file", status="error", output="disk full"), state=state)
    assert state.outbox == (DecisionRecord(write, "approve"), ToolResult("write_file", "error", "disk full"))


def test_a_held_call_row_is_printed_before_whatever_follows_it() -> None:
    write = WriteFileArgs(path="a.txt", content="x")
    ran = run(ToolCallShown(id="c1", args=write), ToolResultShown(id="c1", name="write_file", status="ok", output="ok"))
    assert ran.outbox == (ToolCall(write), ToolResult("write_file", "ok", "ok"))
    # a confirmation of another call (a rewind's) does not take the row's place
    other = run(ToolCallShown(id="c1", args=write), ConfirmRequested(ref=1, id="u", subject=write, lines=[]))
    assert other.outbox == (ToolCall(write),) and other.held_call is None
    # at exit it is printed like the open answer
    assert take_outbox(close_open(run(ToolCallShown(id="c1", args=write))))[1] == (ToolCall(write),)


def test_confirmation_then_a_decision_record_and_the_reply() -> None:
    state = run(ConfirmRequested(**{f: getattr(CONFIRM, f) for f in CONFIRM.__struct_fields__}))
    assert state.confirm == CONFIRM and state.busy
    state, reply = decide(state, "approve_always")
    assert reply is not None and (reply.ref, reply.decision) == (7, "approve_always")
    # a file change's approval waits, drawn live, to become one row with the change (issue 37)
    assert state.confirm is None and state.held_decision == DecisionRecord(CONFIRM.subject, "approve_always")
    assert decide(state, "approve") == (state, None)
    assert take_outbox(close_open(state))[1] == (DecisionRecord(CONFIRM.subject, "approve_always"),)
    state, _ = decide(run(CONFIRM), "reject")
    assert state.outbox == (DecisionRecord(CONFIRM.subject, "reject"),)


def test_idle_while_confirming_records_a_cancelled_confirmation() -> None:
    state = run(CONFIRM, PhaseChanged(phase="confirming"), PhaseChanged(phase="idle"))
    assert state.confirm is None and state.outbox == (DecisionRecord(CONFIRM.subject, "cancelled"),)


def test_a_result_for_the_pending_confirmation_records_it_cancelled_first() -> None:
    result = ToolResultShown(id="c1", name="write_file", status="cancelled", output="")
    state = run(CONFIRM, result)
    assert state.confirm is None
    assert state.outbox == (
        DecisionRecord(CONFIRM.subject, "cancelled"),
        ToolResult("write_file", "cancelled", ""),
    )


def test_idle_clears_a_busy_hint_but_not_the_ctrl_c_one() -> None:
    assert run(Hint("busy"), PhaseChanged(phase="idle")).hint is None
    armed, _ = ctrl_c(initial(0.0), 0.5, input_empty=True)
    assert run(PhaseChanged(phase="idle"), state=armed).hint == armed.hint


def test_usage_sets_the_context_figure() -> None:
    assert run(UsageShown(usage=Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12))).context_tokens == 12


def test_system_entries_sessions_and_turn_end() -> None:
    info = SessionInfo(id="abc", last_activity="t", cwd="/w", messages=3, title="hi")
    state = run(
        TokenReceived(text="x"),
        SystemEntry(text="retrying", level="warning"),
        SessionsListed(sessions=[info]),
        TurnEnded(outcome="completed"),
    )
    assert state.outbox == (Prose("x"), Notice("retrying", "warning"), SessionTable((info,)))


def test_phase_changes_restart_the_elapsed_clock_at_the_last_tick() -> None:
    state = run(Tick(5.0, 80, 24), PhaseChanged(phase="running"))
    assert (state.phase, state.phase_since) == ("running", 5.0)
    assert run(Tick(9.0, 80, 24), PhaseChanged(phase="running"), state=state).phase_since == 5.0


def test_submitted_records_the_prompt_and_history_without_repeats() -> None:
    state = run(Hint("x"), Submitted("one"), Submitted("one"), Submitted("two"))
    assert state.history == ("one", "two") and state.hint is None
    assert state.outbox == (UserPrompt("one"), UserPrompt("one"), UserPrompt("two"))


def test_local_notice_and_hint() -> None:
    state = run(LocalNotice("bad", "error"), Hint("careful"))
    assert state.outbox == (Notice("bad", "error"),) and state.hint == "careful"


def test_an_open_block_taller_than_the_screen_commits_its_top_rows() -> None:
    code = "```\n" + "".join(f"line {i}\n" for i in range(40))
    state = run(Tick(0.0, 40, 12), TokenReceived(text=code), Tick(0.1, 40, 12))
    budget = state.live_budget()
    assert isinstance(state.outbox[0], ProseRows)
    committed = len(state.outbox[0].rows)
    assert committed == 40 - budget and state.open_skip == committed
    assert "line 0" in "".join(t for _, t in state.outbox[0].rows[0])
    # Closing the block commits only what was not committed yet.
    state = run(TokenReceived(text="```\n\nafter"), state=take_outbox(state)[0])
    rest = state.outbox[0]
    assert isinstance(rest, ProseRows) and len(rest.rows) == budget and state.open_prose == "after"


def test_ctrl_c_cancels_when_busy_clears_then_exits_on_a_quick_double_press() -> None:
    busy = run(PhaseChanged(phase="streaming"))
    assert ctrl_c(busy, 1.0, input_empty=True)[1] == "cancel"
    idle = initial(0.0)
    assert ctrl_c(idle, 1.0, input_empty=False)[1] == "clear"
    armed, action = ctrl_c(idle, 1.0, input_empty=True)
    assert action == "arm" and armed.hint
    assert ctrl_c(armed, 1.0 + DOUBLE_CTRL_C_S, input_empty=True)[1] == "exit"
    assert ctrl_c(armed, 1.0 + DOUBLE_CTRL_C_S + 0.01, input_empty=True)[1] == "arm"
    # The hint goes away on the first tick past the window.
    assert reduce(armed, Tick(1.0 + DOUBLE_CTRL_C_S + 0.01, 80, 24)).hint is None


def test_ctrl_c_twice_after_a_cancel_exits_as_promised() -> None:
    """Found in tmux: Ctrl-C twice while streaming sent two cancels and stayed (the key help promises that Ctrl-C
    twice within a second exits). The second press exits, whether the turn is still stopping or idle already."""
    busy = run(PhaseChanged(phase="streaming"))
    cancelled, action = ctrl_c(busy, 1.0, input_empty=False)
    assert action == "cancel" and cancelled.hint and "again to exit" in cancelled.hint
    assert ctrl_c(cancelled, 1.0 + DOUBLE_CTRL_C_S, input_empty=False)[1] == "exit"  # still busy
    assert ctrl_c(cancelled, 1.0 + DOUBLE_CTRL_C_S + 0.01, input_empty=False)[1] == "cancel"  # past the window
    idle = reduce(cancelled, PhaseChanged(phase="idle"))
    assert idle.hint == cancelled.hint  # kept while the second press would exit
    assert ctrl_c(idle, 1.0 + DOUBLE_CTRL_C_S, input_empty=True)[1] == "exit"
    # ADR 0058, found in tmux: text typed before the cancelling press (a confirmation rejected by it is idle at
    # once) made the promised second press clear it instead; only text typed since is cleared first.
    assert ctrl_c(idle, 1.0 + DOUBLE_CTRL_C_S, input_empty=False)[1] == "exit"
    assert ctrl_c(idle, 1.0 + DOUBLE_CTRL_C_S + 0.01, input_empty=True)[1] == "arm"
    emptied, _ = ctrl_c(busy, 1.0, input_empty=True)  # nothing in the input at the cancel
    idle = reduce(emptied, PhaseChanged(phase="idle"))
    assert ctrl_c(idle, 1.0 + DOUBLE_CTRL_C_S, input_empty=False)[1] == "clear"  # typed since: clears first


def test_split_finished_blocks() -> None:
    assert split_finished("para one\n\npara") == ("para one\n\n", "para")
    assert split_finished("para one\n\n") == ("", "para one\n\n")
    assert split_finished("- a\n\n  more of a") == ("", "- a\n\n  more of a")
    assert split_finished("```py\nx\n\ny\n") == ("", "```py\nx\n\ny\n")
    assert split_finished("```py\nx\n```\nafter") == ("```py\nx\n```\n", "after")
    assert split_finished("text\n```\ncode") == ("text\n", "```\ncode")
    assert split_finished("~~~~\n```\n~~~~\nz") == ("~~~~\n```\n~~~~\n", "z")


@given(st.lists(st.sampled_from(["a", " ", "\n", "\n\n", "```", "- ", "  ", "# h", "|x|", "中"]), max_size=40))
def test_split_finished_never_loses_text(parts: list[str]) -> None:
    source = "".join(parts)
    finished, rest = split_finished(source)
    assert finished + rest == source


@given(st.lists(st.text(alphabet="ab \n`", max_size=6), max_size=30))
def test_streaming_in_any_chunks_keeps_every_character(chunks: list[str]) -> None:
    state = initial(0.0)
    for chunk in chunks:
        state = reduce(state, TokenReceived(text=chunk))
    state = reduce(state, PhaseChanged(phase="idle"))
    text = " ".join(e.source for e in state.outbox if isinstance(e, Prose))
    assert text.split() == "".join(chunks).split()


_MESSAGES = st.one_of(
    st.builds(TokenReceived, text=st.text(alphabet="ab \n`#-|中😀", max_size=12)),
    st.builds(ReasoningReceived, text=st.text(max_size=5)),
    st.sampled_from(
        [
            PhaseChanged(phase="streaming"),
            PhaseChanged(phase="idle"),
            PhaseChanged(phase="running"),
            CONFIRM,
            ToolCallShown(id="c1", args=WriteFileArgs(path="a.txt", content="")),
            ToolResultShown(id="c1", name="write_file", status="ok", output="x\ny"),
            SystemEntry(text="note"),
            UsageShown(usage=Usage(total_tokens=5)),
            TurnEnded(outcome="completed"),
            SessionStarted(session_id="s"),
            UserPromptShown(text="q"),
        ]
    ),
    st.builds(Tick, now=st.floats(0, 100), width=st.integers(8, 120), height=st.integers(4, 50)),
)


@given(st.lists(_MESSAGES, max_size=40))
def test_any_message_sequence_renders_inside_the_screen(events: list[object]) -> None:
    from dashfloat.ui._text import row_width
    from dashfloat.ui.render import render_entry, render_live, render_status

    state = initial(0.0)
    for event in events:
        state = reduce(state, event)  # type: ignore[arg-type]
        width = state.width
        for row in render_live(state, state.outbox, width):
            assert row_width(row) <= width
        assert row_width(render_status(state, state.now, width, None)) <= width
        state, entries = take_outbox(state)
        for entry in entries:
            assert all(row_width(row) <= width for row in render_entry(entry, width))


@given(st.lists(st.text(alphabet="ab \n`-", max_size=6), max_size=30))
@example(["-", "\n\n-\n\n`"])  # found in a loop of the UI tests: two list items a blank line apart came in one token
def test_chunking_never_changes_what_is_drawn(chunks: list[str]) -> None:
    from dashfloat.ui.render import plain, render_entry

    def committed(parts: list[str]) -> list[str]:
        state = initial(0.0)
        for part in parts:
            state = reduce(state, TokenReceived(text=part))
        state = reduce(state, PhaseChanged(phase="idle"))
        return [line for e in state.outbox for line in plain(render_entry(e, 80))]

    whole = "".join(chunks)
    assert committed(chunks) == committed(list(whole))


@given(st.lists(st.sampled_from([20, 33, 50, 80]), min_size=1, max_size=6))
def test_a_resize_while_committing_a_tall_block_loses_nothing(widths: list[int]) -> None:
    from dashfloat.ui.render import plain

    lines = [f"codeline{i}-" + "x" * (i % 7 * 9) for i in range(60)]  # some wrap at the narrow widths
    state = reduce(initial(0.0), Tick(0.0, 40, 12))
    state = reduce(state, TokenReceived(text="```\n"))
    for n, line in enumerate(lines):
        state = reduce(state, TokenReceived(text=line + "\n"))
        if n % 10 == 0:
            state = reduce(state, Tick(0.0, widths[(n // 10) % len(widths)], 12))
    state = reduce(state, TokenReceived(text="```\n\nend"))
    state = reduce(state, PhaseChanged(phase="idle"))
    drawn = "".join(
        "".join(plain(e.rows)) if isinstance(e, ProseRows) else e.source
        for e in state.outbox
        if isinstance(e, ProseRows | Prose)
    ).replace(" ", "")
    for line in lines:
        assert line in drawn


# ---------------------------------------------------------------- a confirmation is answered only on purpose


def test_decision_keys_wait_for_the_guard_measured_from_the_first_tick_that_drew_the_preview() -> None:
    state = run(Tick(100.0, 80, 24), CONFIRM)
    assert confirm_key(state, printable=True) == "type" and confirm_key(state, printable=False) == "ignore"
    drawn = 200.0
    state = run(Tick(drawn, 80, 24), state=state)  # first drawn now: the guard starts
    assert state.confirm_since == drawn and not state.confirm_armed
    state = run(Tick(drawn + CONFIRM_GUARD_S * 0.99, 80, 24), state=state)
    assert not state.confirm_armed and confirm_key(state, printable=False) == "ignore"
    state = run(Tick(drawn + CONFIRM_GUARD_S * 1.01, 80, 24), state=state)
    assert state.confirm_armed
    assert confirm_key(state, printable=True) == "decide" and confirm_key(state, printable=False) == "decide"


def test_a_non_empty_input_keeps_every_key_as_typing_and_enter_decides_nothing() -> None:
    state = run(CONFIRM, Tick(1.0, 80, 24), Tick(1.0 + CONFIRM_GUARD_S, 80, 24), InputChanged(empty=False))
    assert state.confirm_armed
    assert confirm_key(state, printable=True) == "type" and confirm_key(state, printable=False) == "ignore"
    state = run(InputChanged(empty=True), state=state)
    assert confirm_key(state, printable=True) == "decide"


def test_a_new_confirmation_starts_its_own_guard() -> None:
    state = run(CONFIRM, Tick(1.0, 80, 24), Tick(1.0 + CONFIRM_GUARD_S, 80, 24))
    assert state.confirm_armed
    state, _ = decide(state, "approve")
    assert state.confirm_since is None and not state.confirm_armed
    state = run(CONFIRM, state=state)
    assert not state.confirm_armed and confirm_key(state, printable=True) == "type"


@given(
    st.lists(st.tuples(st.floats(min_value=0, max_value=5, allow_nan=False), st.booleans(), st.booleans()), max_size=30)
)
def test_no_key_decides_before_the_guard_or_on_a_non_empty_input(steps: list[tuple[float, bool, bool]]) -> None:
    state = run(Tick(0.0, 80, 24), CONFIRM)
    now = 0.0
    drawn_at: float | None = None
    for gap, empty, printable in steps:
        now += gap
        state = run(Tick(now, 80, 24), InputChanged(empty=empty), state=state)
        drawn_at = now if drawn_at is None else drawn_at
        action = confirm_key(state, printable)
        if action == "decide":
            assert empty and now - drawn_at >= CONFIRM_GUARD_S
        else:
            assert action == ("type" if printable else "ignore")


# ---------------------------------------------------------------- rows already in the scrollback are not drawn again


def _words(state: UiState) -> list[str]:
    from dashfloat.ui.render import plain

    text = " ".join(
        " ".join(plain(e.rows)) if isinstance(e, ProseRows) else e.source
        for e in state.outbox
        if isinstance(e, ProseRows | Prose)
    )
    return text.split()


@settings(max_examples=30)
@given(
    st.lists(st.sampled_from([20, 33, 50, 80, 120]), min_size=1, max_size=8),
    st.integers(min_value=4, max_value=17),
)
def test_a_tall_paragraph_committed_at_changing_widths_shows_each_word_once(widths: list[int], chunk: int) -> None:
    # Plain prose: the source is cut after committed rows, so no row is matched again (and repeated) at a new width.
    words = [f"w{i}" + "x" * (i % 5) for i in range(150)]
    text = " ".join(words)
    state = reduce(initial(0.0), Tick(0.0, 40, 12))
    for n, start in enumerate(range(0, len(text), chunk)):
        state = reduce(state, TokenReceived(text=text[start : start + chunk]))
        if n % 7 == 0:
            state = reduce(state, Tick(0.0, widths[(n // 7) % len(widths)], 12))
    state = reduce(state, PhaseChanged(phase="idle"))
    assert _words(state) == words


def test_rows_a_resize_pushed_into_the_history_are_cut_from_the_open_paragraph() -> None:
    from dashfloat.ui.state import strand_open

    state = msgspec.structs.replace(initial(0.0, 20, 24), open_prose="alpha beta gamma delta epsilon zeta eta theta")
    # At 20 columns: "alpha beta gamma", "delta epsilon zeta", "eta theta". The first row and "delt" are gone.
    cut = strand_open(state, 1, 4)
    assert cut.open_prose == "a epsilon zeta eta theta" and cut.open_skip == 0
    assert strand_open(state, 0, 0) == state
    everything = strand_open(state, 3, 0)
    assert everything.open_prose == "" and everything.open_skip == 0


def test_rows_in_the_history_with_markup_are_skipped_whole_and_the_last_row_stays_live() -> None:
    from dashfloat.ui.state import strand_open

    state = msgspec.structs.replace(initial(0.0, 20, 24), open_prose="alpha **beta** gamma delta epsilon zeta eta")
    skipped = strand_open(state, 1, 3)  # the source has ** the rows do not show: whole rows only
    assert skipped.open_prose == state.open_prose and skipped.open_skip == 1
    assert strand_open(state, 9, 0).open_skip == 2  # never the last row: it may still grow
    code = msgspec.structs.replace(initial(0.0, 20, 24), open_prose="```\nline 1\nline 2\nline 3\n")
    assert strand_open(code, 2, 0).open_skip == 2 and strand_open(code, 2, 0).open_prose == code.open_prose


def test_finished_blocks_cut_where_a_stream_a_character_at_a_time_would() -> None:
    from dashfloat.ui._blocks import finished_blocks

    assert finished_blocks("-\n\n-\n\n`") == (["-\n\n", "-\n\n"], "`")
    assert finished_blocks("para one\n\npara") == (["para one\n\n"], "para")
    assert finished_blocks("text\n```\ncode\n```\nafter") == (["text\n", "```\ncode\n```\n"], "after")
    assert finished_blocks("- a\n\n  more of a") == ([], "- a\n\n  more of a")
