"""End to end in a real pty: run_tui, keys typed into the terminal, a fake agent *process* on a real pipe."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e import wait_for
from tests.ui.ui_pty import CTRL_D, ENTER, ESC, Term, fake_app, received


@pytest.fixture
def app(tmp_path: Path) -> Iterator[tuple[Term, Path]]:
    term, log = fake_app(tmp_path)
    try:
        assert term.wait_for("0 / 128k", 15), term.text()
        yield term, log
    finally:
        term.close()


def test_first_paint_streamed_text_and_exit(app: tuple[Term, Path]) -> None:
    term, log = app
    # 80 columns: the sandbox segment leaves too little room for the cwd, which is dropped first
    assert "● Idle · fake-model · 0 / 128k · approve: ask · sandbox: workspace-write\n" in term.text()
    term.send("stream 30" + ENTER)
    assert term.wait_for("tok29"), term.text()
    assert term.wait_for("1.2k / 128k")
    assert received(log) == [{"type": "submit_prompt", "text": "stream 30"}]
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_a_tool_row_and_its_result(app: tuple[Term, Path]) -> None:
    term, _ = app
    term.send("tool" + ENTER)
    assert term.wait_for("⚙ read_file notes.txt"), term.text()
    assert term.wait_for("  → ok") and term.wait_for("    second line")


@pytest.mark.parametrize(
    ("key", "decision", "record"),
    [
        ("y", "approve", "✓ approved write_file out.txt"),
        ("n", "reject", "✗ rejected write_file out.txt"),
        (ESC, "reject_stop", "✗ rejected and stopped write_file out.txt"),
    ],
)
def test_confirmation_keys(app: tuple[Term, Path], tmp_path: Path, key: str, decision: str, record: str) -> None:
    term, log = app
    term.send("confirm out.txt" + ENTER)
    assert term.wait_for("a always allow write_file", visible_only=True), term.text()
    assert term.wait_for("+approved", visible_only=True)
    term.send(key)
    assert term.wait_for(record), term.text()
    assert term.wait_for("→ ok" if decision == "approve" else "→ rejected")
    assert {"type": "decide_confirmation", "ref": 1, "decision": decision} in received(log)
    assert (tmp_path / "out.txt").exists() == (decision == "approve")
    term.settle(0.2)
    assert "+approved" not in term.visible()  # the preview collapsed to the record


def test_esc_cancels_a_stream_and_the_next_prompt_works(app: tuple[Term, Path]) -> None:
    term, log = app
    term.send("slow" + ENTER)
    assert term.wait_for("slow3"), term.text()
    term.send(ESC)
    assert term.wait_for("cancelled by the user"), term.text()
    assert {"type": "cancel"} in received(log)
    term.send("hello" + ENTER)
    assert term.wait_for("You said: hello")


def test_agent_death_is_a_system_entry_and_input_keeps_working(app: tuple[Term, Path]) -> None:
    term, _ = app
    term.send("die" + ENTER)
    assert term.wait_for("the fake agent died; restarted it"), term.text()
    term.send("after" + ENTER)
    assert term.wait_for("You said: after"), term.text()


def test_slash_commands_reach_the_agent(app: tuple[Term, Path]) -> None:
    term, log = app
    term.send("/model other" + ENTER)
    term.send("/approve edits" + ENTER)
    term.send("/nope" + ENTER)
    assert term.wait_for("unknown command /nope"), term.text()
    # the error line is local and can be on screen before the fake agent has logged what it received
    assert wait_for(lambda: len(received(log)) >= 2, timeout_s=10), received(log)
    assert received(log)[:2] == [{"type": "set_model", "model": "other"}, {"type": "set_approval", "mode": "edits"}]


def test_resize_keeps_the_screen_sane(app: tuple[Term, Path]) -> None:
    term, _ = app
    term.send("slow" + ENTER)
    assert term.wait_for("slow5")
    term.resize(40, 16)
    term.settle(0.3)
    term.resize(100, 30)
    term.settle(0.3)
    term.send(ESC)
    assert term.wait_for("cancelled by the user")
    term.settle(0.3)
    visible = [line for line in term.visible().splitlines() if line.strip()]
    assert sum("● Idle" in line for line in visible) == 1, term.visible()
    assert visible[-1].startswith("● Idle") and visible[-2].startswith("❯")


HUMAN_KEY_GAP_S = 0.06
"""Input pacing of a quick typist (about 16 keys a second): the keys arrive one by one, as a person's do."""


def type_like_a_person(term: Term, text: str) -> None:
    for ch in text:
        term.send(ch)
        term.pump(HUMAN_KEY_GAP_S)  # reads the screen meanwhile; paces the keys, asserts nothing about time


def test_typing_ahead_across_a_confirmation_decides_nothing_and_loses_no_character(
    app: tuple[Term, Path], tmp_path: Path
) -> None:
    term, log = app
    term.send("confirm-later out.txt" + ENTER)
    draft = "yes and now add the tests, then run all of it"
    type_like_a_person(term, draft)  # y, n and a of the draft arrive before, during and after the preview
    assert term.wait_for("+approved", visible_only=True, timeout_s=30), term.text()
    assert term.wait_for("clear it (Ctrl-U) to answer", visible_only=True, timeout_s=30), term.text()
    term.send(ENTER)  # Enter with text in the input: queued (issue 37), never an answer, nothing approved
    assert term.wait_for("↳ queued: " + draft, visible_only=True), term.visible()
    assert [m for m in received(log) if m["type"] != "submit_prompt"] == [], received(log)
    assert [m["text"] for m in received(log) if m["type"] == "submit_prompt"] == ["confirm-later out.txt"]
    assert not (tmp_path / "out.txt").exists()
    # the input is empty now; the keys wait out their guard once more, then answer on purpose
    assert term.wait_for("a always allow write_file", visible_only=True, timeout_s=30), term.text()
    term.send("y")
    assert term.wait_for("✓ approved write_file out.txt", 30), term.text()  # drawn at the key, before the reply
    approved = {"type": "decide_confirmation", "ref": 1, "decision": "approve"}
    assert term.wait_until(lambda: approved in received(log)), received(log)
    # once the turn is over the queued prompt goes, every character of it
    assert term.wait_for("You said: " + draft), term.text()
    assert [m["text"] for m in received(log) if m["type"] == "submit_prompt"][-1] == draft
    assert (tmp_path / "out.txt").exists()


PGDN, END, HOME = "\x1b[6~", "\x1b[F", "\x1b[H"


def test_a_200_line_preview_opens_in_full_and_scrolls_to_its_last_line(app: tuple[Term, Path]) -> None:
    term, log = app
    term.send("confirm-long big.txt" + ENTER)
    assert term.wait_for("⚙ write_file big.txt · new file · +200 · v view all", visible_only=True), term.text()
    assert term.wait_for("a always allow write_file", visible_only=True), term.text()
    assert "+line 200" not in term.visible()
    term.send("v")
    assert term.wait_for("lines 1–", visible_only=True), term.text()
    seen: set[str] = set()
    for _ in range(40):  # page by page, as a person reads it
        screen = term.visible()
        seen.update(line.strip() for line in screen.splitlines() if line.strip().startswith("+line "))
        if "+line 200" in seen:
            break
        [position] = [line for line in screen.splitlines() if line.startswith("lines ")]
        term.send(PGDN)
        assert term.wait_for_change(position), term.visible()
    assert seen == {f"+line {i}" for i in range(1, 201)}, sorted(seen)
    assert term.wait_for("of 200", visible_only=True)
    term.send(HOME)
    assert term.wait_for("lines 1–", visible_only=True)
    term.send("q")
    assert term.wait_for("a always allow write_file", visible_only=True), term.text()
    assert [m for m in received(log) if m["type"] == "decide_confirmation"] == []  # viewing decided nothing
    term.send("n")
    assert term.wait_for("✗ rejected write_file big.txt"), term.text()


def test_an_idle_ui_sleeps_until_something_changes_and_every_change_wakes_it(tmp_path: Path) -> None:
    """An idle tick of an hour: whatever is drawn below was drawn because a change woke the tick."""
    term, log = fake_app(tmp_path, 80, 24, "--idle-tick", "3600", frame_marks=True)
    try:
        assert term.wait_for("0 / 128k"), term.text()  # the agent's ready message, after the first frame
        term.send("/help" + ENTER)  # a local command: a key, then a notice to print
        assert term.wait_for("list these commands"), term.text()
        term.send("hello" + ENTER)  # the agent's answer arrives while the UI idles
        assert term.wait_for("You said: hello"), term.text()
        assert term.wait_for("● Idle", visible_only=True), term.visible()
        wide = next(line for line in term.visible().splitlines() if line.startswith("● Idle"))
        term.resize(50, 20)  # a resize draws the status bar again, for the new width
        assert term.wait_for_change(wide), term.visible()
        assert any(line.startswith("● Idle") for line in term.visible().splitlines()), term.visible()
        hint = "press Ctrl-C again to exit"
        term.watch(hint)  # frame by frame: a test process starved for the hint's second reads both frames at once
        term.send("\x03")  # Ctrl-C on an empty input arms exit; the hint goes away by itself a second later
        assert term.wait_shown(hint), term.visible()
        assert term.wait_until(lambda: hint not in term.visible()), term.visible()
        assert received(log)[-1] == {"type": "submit_prompt", "text": "hello"}
    finally:
        term.close()
