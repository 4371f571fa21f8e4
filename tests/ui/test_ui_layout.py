"""The real prompt_toolkit shell on a pipe input, drawn through VT100 into a pyte screen."""

from __future__ import annotations

import asyncio
import re

from dashfloat.protocol import (
    AgentReady,
    Cancel,
    ClearSession,
    ConfirmRequested,
    DecideConfirmation,
    ExecuteCommandArgs,
    PhaseChanged,
    ReadFileArgs,
    SetApproval,
    SetModel,
    SubmitPrompt,
    SystemEntry,
    TokenReceived,
    ToolCallShown,
    ToolResultShown,
    TurnEnded,
    Usage,
    UsageShown,
    WriteFileArgs,
)
from dashfloat.ui._markdown import render_markdown
from dashfloat.ui.render import plain
from tests.ui.ui_screen import running_ui

ENTER, ALT_ENTER, ESC, CTRL_C, CTRL_D, UP, DOWN = "\r", "\x1b\r", "\x1b", "\x03", "\x04", "\x1b[A", "\x1b[B"


def test_streamed_markdown_reaches_the_screen_then_the_scrollback() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            ui.link.push(AgentReady(model="gpt-x", provider="p", cwd="/w", approval="edits", context_window=128_000))
            ui.link.push(PhaseChanged(phase="streaming"), TokenReceived(text="# Plan\n\nFirst **step**"))
            await ui.until(lambda: "First step" in ui.text())
            assert any(line.startswith("⠋ Streaming") or "Streaming" in line for line in ui.visible())
            ui.link.push(TokenReceived(text=" done.\n\n```python\nprint('hi')\n```\n"))
            ui.link.push(UsageShown(usage=Usage(total_tokens=12_345)), PhaseChanged(phase="idle"))
            await ui.until(lambda: any("12.3k / 128k" in line for line in ui.visible()))
            lines = ui.lines()
            assert "Plan" in lines and "First step done." in lines and "  print('hi')" in lines
            status = next(line for line in ui.visible() if "12.3k / 128k" in line)
            assert status.startswith("● Idle · gpt-x · 12.3k / 128k · approve: edits")
            # Committed text is printed once: it appears exactly once however many frames pass.
            await ui.frames(5)
            assert ui.lines().count("First step done.") == 1

    asyncio.run(main())


def test_enter_submits_alt_enter_and_paste_add_lines_up_recalls() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            ui.link.push(AgentReady(model="m", provider="p", cwd="/w", approval="ask", history=["older prompt"]))
            await ui.frames()
            ui.keys("first" + ALT_ENTER + "second")
            ui.keys("\x1b[200~pasted\nlines\x1b[201~")
            await ui.frames()
            assert ui.link.sent == []
            ui.keys(ENTER)
            await ui.until(lambda: bool(ui.link.sent))
            assert ui.link.sent == [SubmitPrompt(text="first\nsecondpasted\nlines")]
            await ui.until(lambda: "❯ first" in ui.text())
            ui.keys(UP)
            await ui.until(lambda: ui.shell.buffer.text == "first\nsecondpasted\nlines")
            ui.keys(UP + UP + UP)  # up through the lines of the recalled text, then the older prompt
            await ui.until(lambda: ui.shell.buffer.text == "older prompt")
            ui.keys(DOWN)
            await ui.until(lambda: ui.shell.buffer.text.startswith("first"))

    asyncio.run(main())


def test_ctrl_j_is_a_newline_too() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            ui.keys("a\nb")
            await ui.until(lambda: ui.shell.buffer.text == "a\nb")
            assert ui.link.sent == []

    asyncio.run(main())


def test_confirmation_keys_send_one_decision_and_collapse_the_preview() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            for n, (key, decision) in enumerate(
                [("y", "approve"), (ENTER, "approve"), ("n", "reject"), (ESC, "reject_stop"), ("a", "approve_always")]
            ):
                confirm = ConfirmRequested(
                    ref=n,
                    id=f"c{n}",
                    subject=WriteFileArgs(path=f"f{n}.txt", content=""),
                    lines=["+new line", "-old line"],
                    scope="write_file",
                )
                ui.link.push(confirm, PhaseChanged(phase="confirming"))
                await ui.until(lambda: any("+new line" in x for x in ui.visible()))
                assert any(" Confirm " in line for line in ui.visible())
                armed = "y/Enter approve · n reject · Esc reject & stop · a always allow write_file"
                await ui.until(lambda: armed in ui.visible())  # noqa: B023 - awaited in this iteration
                ui.keys(key)
                await ui.until(lambda: len(ui.link.sent) == n + 1)  # noqa: B023 - awaited in this iteration
                assert ui.link.sent[-1] == DecideConfirmation(ref=n, decision=decision)  # type: ignore[arg-type]
                ui.link.push(PhaseChanged(phase="idle"))
                record = f"write_file f{n}.txt"
                await ui.until(lambda: any(record in x and x.startswith(("✓", "✗")) for x in ui.lines()))  # noqa: B023
                await ui.until(lambda: not any("+new line" in x for x in ui.visible()))
            assert ui.shell.buffer.text == ""  # the keys were answers, not typing

    asyncio.run(main())


def test_keys_during_the_guard_or_into_a_draft_decide_nothing_and_stay_in_the_input() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            confirm = ConfirmRequested(
                ref=1, id="c1", subject=WriteFileArgs(path="f.txt", content=""), lines=["+x"], scope="write_file"
            )
            ui.link.push(PhaseChanged(phase="streaming"), confirm, PhaseChanged(phase="confirming"))
            await ui.until(lambda: "read the change: the keys answer in a moment" in ui.visible())
            ui.keys(ENTER)  # during the guard: ignored, not queued
            ui.keys("yes")  # during the guard on an empty input: typing
            armed = "y/Enter approve · n reject · Esc reject & stop · a always allow write_file"
            await ui.until(lambda: ui.shell.state.confirm_armed)
            await ui.until(lambda: any("clear it (Ctrl-U) to answer" in x for x in ui.visible()))
            ui.keys(" and then a")
            ui.keys(ESC)  # text in the input: Esc rejects nothing
            await ui.until(lambda: ui.shell.state.hint is not None)
            ui.keys(ENTER)  # text in the input: approves nothing; queued for after the turn (issue 37)
            await ui.until(lambda: ui.shell.state.queued == ("yes and then a",))
            await ui.frames(5)
            assert ui.link.sent == [] and ui.shell.buffer.text == ""
            assert ui.shell.state.hint is None  # "clear it to answer" went with the text (issue 37)
            await ui.until(lambda: armed in ui.visible())  # the guard once more, then a key answers
            ui.keys("n")
            await ui.until(lambda: ui.link.sent == [DecideConfirmation(ref=1, decision="reject")])
            ui.link.push(AgentReady(model="m1", provider="p", cwd="/w", approval="ask"), PhaseChanged(phase="idle"))
            await ui.until(lambda: ui.link.sent[-1:] == [SubmitPrompt(text="yes and then a")])

    asyncio.run(main())


def test_ctrl_u_clears_a_draft_of_several_lines_when_pressed_again() -> None:
    # The key line says "clear it (Ctrl-U) to answer"; on a draft of two lines Ctrl-U emptied the last line and
    # then did nothing more (the line break before it stayed), so the confirmation could not be answered.
    async def main() -> None:
        async with running_ui() as ui:
            confirm = ConfirmRequested(
                ref=1, id="c1", subject=WriteFileArgs(path="f.txt", content=""), lines=["+x"], scope="write_file"
            )
            ui.link.push(PhaseChanged(phase="streaming"), confirm, PhaseChanged(phase="confirming"))
            ui.keys("first line" + ALT_ENTER + "second")
            await ui.until(lambda: any("clear it (Ctrl-U) to answer" in x for x in ui.visible()))
            ui.keys("\x15")
            await ui.until(lambda: ui.shell.buffer.text == "first line\n")
            ui.keys("\x15")
            await ui.until(lambda: ui.shell.buffer.text == "first line")
            ui.keys("\x15")
            await ui.until(lambda: ui.shell.buffer.text == "")
            await ui.until(
                lambda: "y/Enter approve · n reject · Esc reject & stop · a always allow write_file" in ui.visible()
            )
            ui.keys("y")
            await ui.until(lambda: ui.link.sent == [DecideConfirmation(ref=1, decision="approve")])

    asyncio.run(main())


def test_tool_rows_and_results_are_drawn() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            ui.link.push(
                ToolCallShown(id="1", args=ExecuteCommandArgs(command="pytest -q")),
                ToolResultShown(id="1", name="execute_command", status="error", output="exit 1\nFAILED x"),
            )
            await ui.until(lambda: "⚙ execute_command pytest -q" in ui.lines())
            await ui.until(lambda: "  → error: exit 1" in ui.lines() and "    FAILED x" in ui.lines())

    asyncio.run(main())


def test_esc_and_ctrl_c_cancel_when_busy() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            keys = ui.shell.app.key_processor
            processed: list[object] = []
            keys.after_key_press += processed.append
            ui.keys(ESC)
            # Wait for the key to be read and its binding decided (a lone Esc waits for a longer sequence),
            # not for frames: on a loaded machine it could otherwise be decided only after the phase below
            # changed, and then rightly cancel.
            await ui.until(lambda: len(processed) >= 1 and not keys.key_buffer)
            assert ui.link.sent == []  # idle: nothing to cancel
            ui.link.push(PhaseChanged(phase="streaming"))
            await ui.until(lambda: any("Streaming" in x for x in ui.visible()))
            ui.keys(ESC)
            await ui.until(lambda: ui.link.sent == [Cancel()])
            ui.keys(CTRL_C)
            await ui.until(lambda: ui.link.sent == [Cancel(), Cancel()])
            ui.keys("typed while busy")
            await ui.until(lambda: ui.shell.buffer.text == "typed while busy")
            ui.keys(ENTER)
            await ui.until(lambda: ui.shell.state.hint is not None)
            assert ui.link.sent == [Cancel(), Cancel()] and ui.shell.buffer.text == "typed while busy"

    asyncio.run(main())


def test_ctrl_c_clears_then_a_quick_double_press_exits() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            ui.keys("draft")
            await ui.until(lambda: ui.shell.buffer.text == "draft")
            ui.keys(CTRL_C)
            await ui.until(lambda: ui.shell.buffer.text == "")
            assert ui.shell.app.is_running
            ui.keys(CTRL_C)
            await ui.until(lambda: any("press Ctrl-C again to exit" in x for x in ui.visible()))
            ui.keys(CTRL_C)
            await ui.until(lambda: not ui.shell.app.is_running)

    asyncio.run(main())


def test_ctrl_d_on_empty_input_exits_and_deletes_otherwise() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            ui.keys("ab\x1b[D")  # a, b, cursor left
            ui.keys(CTRL_D)
            await ui.until(lambda: ui.shell.buffer.text == "a")
            ui.keys("\x7f" + CTRL_D)
            await ui.until(lambda: not ui.shell.app.is_running)

    asyncio.run(main())


def test_slash_commands_send_messages_and_help_is_local() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            for typed in ("/clear", "/model gpt-4o", "/approve all"):
                ui.keys(typed + ENTER)
                await ui.frames(2)
            await ui.until(lambda: len(ui.link.sent) == 3)
            assert ui.link.sent == [ClearSession(), SetModel(model="gpt-4o"), SetApproval(mode="all")]
            ui.keys("/help" + ENTER)
            await ui.until(lambda: any("/resume ID" in line for line in ui.lines()))
            ui.keys("/sesions" + ENTER)
            await ui.until(lambda: any("did you mean /sessions?" in line for line in ui.lines()))
            assert len(ui.link.sent) == 3
            ui.keys("\x15/ap\t")  # Ctrl-U clears; Tab completes the name
            await ui.until(lambda: ui.shell.buffer.text == "/approve")
            ui.keys("\x15/exit" + ENTER)
            await ui.until(lambda: not ui.shell.app.is_running)

    asyncio.run(main())


def test_a_changed_link_fd_is_watched_again() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            ui.link.swap_fd_on_receive = True
            ui.link.push(SystemEntry(text="the agent process stopped; restarted it", level="error"))
            await ui.until(lambda: any("restarted it" in line for line in ui.lines()))
            ui.link.push(SystemEntry(text="after the restart"))
            await ui.until(lambda: any("after the restart" in line for line in ui.lines()))

    asyncio.run(main())


def test_a_new_pipe_under_the_old_fd_number_is_watched_again() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            ui.link.reuse_fd_on_receive = True
            ui.link.push(SystemEntry(text="the agent process stopped; restarted it", level="error"))
            await ui.until(lambda: any("restarted it" in line for line in ui.lines()))
            ui.link.push(SystemEntry(text="after the restart"))
            await ui.until(lambda: any("after the restart" in line for line in ui.lines()))

    asyncio.run(main())


def test_forty_columns_cjk_emoji_and_a_long_line_stay_inside_the_screen() -> None:
    async def main() -> None:
        async with running_ui(cols=40, rows=12) as ui:
            long_line = "x" * 150
            ui.link.push(TokenReceived(text=f"中文字符测试 😀 emoji {long_line}\n\nnext"), PhaseChanged(phase="idle"))
            await ui.until(lambda: "next" in ui.lines())
            text = "".join(ui.lines())
            assert "中文字符测试" in text.replace(" ", "") and text.count("x") >= 150
            ui.keys("输入" * 30)
            await ui.until(lambda: ui.shell.buffer.text == "输入" * 30)
            # a loaded machine may draw the next frame a tick later: wait for it rather than race it
            await ui.until(lambda: any(x.startswith("● Idle") for x in ui.visible()))

    asyncio.run(main())


def test_resize_reflows_the_live_region() -> None:
    async def main() -> None:
        async with running_ui(cols=80, rows=20) as ui:
            words = " ".join(f"w{i}" for i in range(40))
            ui.link.push(PhaseChanged(phase="streaming"), TokenReceived(text=words))
            await ui.until(lambda: any("w39" in line for line in ui.visible()))
            ui.resize(40, 20)
            await ui.frames(4)
            await ui.until(lambda: any(line.endswith("w39") for line in ui.visible()))
            visible = ui.visible()
            assert all(len(line) <= 40 for line in visible)
            assert sum("Streaming" in line for line in visible) == 1

    asyncio.run(main())


def test_a_burst_of_tokens_is_coalesced_into_few_frames() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            renders = []
            ui.shell.app.after_render += lambda _: renders.append(1)
            ui.link.push(PhaseChanged(phase="streaming"), *[TokenReceived(text=f"t{i} ") for i in range(2000)])
            await ui.until(lambda: any("t1999" in line for line in ui.visible()))
            assert len(renders) <= 5

    asyncio.run(main())


def test_no_color_draws_attributes_but_no_colours() -> None:
    async def main() -> None:
        written: list[str] = []
        async with running_ui(no_color_override=True) as ui:
            original = ui.writer.write

            def spy(data: str) -> int:
                written.append(data)
                return original(data)

            ui.writer.write = spy  # type: ignore[method-assign]
            ui.link.push(TokenReceived(text="**bold** `code`\n\n"), ToolCallShown(id="1", args=ReadFileArgs(path="a")))
            await ui.until(lambda: "⚙ read_file a" in ui.lines())
        out = "".join(written)
        params = {p for sgr in re.findall(r"\x1b\[([0-9;]*)m", out) for p in sgr.split(";") if p}
        assert "bold" in out and "1" in params  # bold stays
        assert not params & {*map(str, range(30, 39)), *map(str, range(40, 49)), *map(str, range(90, 98))}

    asyncio.run(main())


def test_colour_is_used_when_allowed() -> None:
    async def main() -> None:
        written: list[str] = []
        async with running_ui() as ui:
            original = ui.writer.write
            ui.writer.write = lambda data: written.append(data) or original(data)  # type: ignore[method-assign,func-returns-value]
            ui.link.push(ToolCallShown(id="1", args=ReadFileArgs(path="a")))
            await ui.until(lambda: "⚙ read_file a" in ui.lines())
        assert re.search(r"\x1b\[[0-9;]*38;5;[0-9]+", "".join(written))

    asyncio.run(main())


def test_a_tall_input_is_capped_to_its_rows() -> None:
    from dashfloat.ui._app import INPUT_MAX_ROWS

    async def main() -> None:
        async with running_ui(cols=60, rows=30) as ui:
            ui.keys("\x1b[200~" + "\n".join(f"line{i}" for i in range(INPUT_MAX_ROWS + 8)) + "\x1b[201~")
            await ui.until(lambda: ui.shell.buffer.text.endswith(f"line{INPUT_MAX_ROWS + 7}"))
            await ui.frames(3)
            shown = [x for x in ui.visible() if x.lstrip("❯ ").startswith("line")]
            assert len(shown) == INPUT_MAX_ROWS and shown[-1].endswith(f"line{INPUT_MAX_ROWS + 7}")

    asyncio.run(main())


def test_at_exit_the_live_region_goes_to_the_scrollback() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            ui.link.push(PhaseChanged(phase="streaming"), TokenReceived(text="last words"))
            await ui.until(lambda: "last words" in ui.lines())
            ui.keys(CTRL_D)
            await ui.until(lambda: not ui.shell.app.is_running)
        assert ui.lines().count("last words") == 1 and ui.exit_code == 0
        assert not any("Streaming" in line for line in ui.lines())

    asyncio.run(main())


def test_an_answer_taller_than_the_screen_commits_as_it_goes_without_repeats() -> None:
    async def main() -> None:
        async with running_ui(cols=50, rows=12) as ui:
            ui.link.push(PhaseChanged(phase="streaming"), TokenReceived(text="```\n"))
            for i in range(40):
                ui.link.push(TokenReceived(text=f"code line {i}\n"))
                await asyncio.sleep(0.005)
            await ui.until(lambda: "  code line 39" in ui.visible())
            assert "  code line 0" in ui.lines() and "  code line 0" not in ui.visible()  # already scrolled away
            ui.link.push(TokenReceived(text="```\n\ndone"), PhaseChanged(phase="idle"))
            await ui.until(lambda: "done" in ui.lines())
            lines = ui.lines()
            assert [lines.count(f"  code line {i}") for i in range(40)] == [1] * 40

    asyncio.run(main())


def test_the_end_of_an_answer_is_drawn_when_it_arrives_not_at_the_next_tick() -> None:
    async def main() -> None:
        async with running_ui() as ui:
            ui.link.push(PhaseChanged(phase="streaming"), TokenReceived(text="the whole answer, first part"))
            await ui.until(lambda: "first part" in ui.text())
            ui.link.push(TokenReceived(text=" and LAST PART"), TurnEnded(outcome="completed"))
            # the reader runs here, synchronously: no tick (nor any other task) can run in between
            ui.shell._on_readable()
            assert ui.shell.scrollback.pending == () and ui.shell.state.outbox == ()
            assert "the whole answer, first part and LAST PART" in ui.text()

    asyncio.run(main())


def test_rows_a_stream_pushes_off_the_screen_are_drawn_once_and_kept_in_order() -> None:
    """A paragraph taller than the screen: its top rows go to the scrollback every tick. They are the rows the last
    frame drew at the top of the region, so they stay where they are (never printed a second time, ADR 0036),
    and the scrollback reads exactly as the whole paragraph renders."""
    words = [f"w{i:04d}" for i in range(400)]

    async def main() -> None:
        async with running_ui(cols=60, rows=12) as ui:
            ui.link.push(PhaseChanged(phase="streaming"))
            for start in range(0, len(words), 8):
                ui.link.push(TokenReceived(text=" ".join(words[start : start + 8]) + " "))
                await ui.frames(1)
            ui.link.push(TurnEnded(outcome="completed"), PhaseChanged(phase="idle"))
            await ui.until(lambda: "● Idle" in ui.text())
            expected = plain(render_markdown(" ".join(words), 60))
            lines = ui.lines()
            at = lines.index(expected[0])
            assert lines[at : at + len(expected)] == expected
            written = "".join(ui.writer.written)
            assert written.count(expected[0]) == 1  # drawn in the live region, then left there
            assert written.count(expected[len(expected) // 2]) == 1

    asyncio.run(main())


def test_a_pasted_line_taller_than_the_input_then_a_short_line_fills_the_input_without_blank_rows() -> None:
    # prompt_toolkit scrolls whole lines unless the cursor's own line is too tall: the short line under a
    # long pasted one showed alone at the input's top, with blank rows under it and the long line unseen.
    from dashfloat.ui._app import INPUT_MAX_ROWS

    cols = 60
    words = " ".join(f"w{i:03d}" for i in range(INPUT_MAX_ROWS * cols // 5 + 20))  # wraps past INPUT_MAX_ROWS rows

    async def main() -> None:
        async with running_ui(cols=cols, rows=30) as ui:
            ui.keys("\x1b[200~" + words + "\n\x1b[201~")
            ui.keys("and this")
            await ui.until(lambda: ui.shell.buffer.text.endswith("and this"))
            await ui.frames(3)
            screen = ui.visible()
            status = next(i for i, line in enumerate(screen) if "Idle" in line or "approve:" in line)
            box = screen[status - INPUT_MAX_ROWS : status]
            assert box[-1] == "  and this", screen
            assert all(row.strip() for row in box), box  # every row of the input shows text
            # the rows above the short line are the long line's last ones (spaces aside: rows are right-stripped)
            shown = "".join(row[2:] for row in box[:-1]).replace(" ", "")
            assert words.replace(" ", "").endswith(shown) and len(shown) > (INPUT_MAX_ROWS - 2) * cols * 3 // 4
            ui.keys(UP)  # into the long line: it scrolls within it, still no blank row
            await ui.frames(3)
            box = ui.visible()[status - INPUT_MAX_ROWS : status]
            assert all(row.strip() for row in box), box

    asyncio.run(main())
