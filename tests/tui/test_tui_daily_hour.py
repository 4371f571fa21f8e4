"""Issue 37, the daily hour: each item through the real TUI in a pty, against the scripted server.

Every wait is on screen content (or on what the server received), never on time.
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashfloat.agent._compaction import KEEP_RECENT_UNITS
from dashfloat.agent._summary import RESULT_EXCERPT_MAX_LINES
from dashfloat.testing.sse_server import BodyItem, Reply, ScriptedServer, sse_event, text_reply, tool_calls_reply
from dashfloat.ui._commands import INIT_PROMPT
from dashfloat.ui._modes import ACT_ON_PLAN
from dashfloat.ui._notices import ONBOARDING_KEYS
from dashfloat.ui.render import CONTINUATION_MARK
from tests.e2e import dashfloat_argv
from tests.pty_harness import Terminal

UP, SHIFT_TAB, CTRL_O, CTRL_S = "\x1b[A", "\x1b[Z", "\x0f", "\x13"
TAIL_COMMAND = "seq 1 20001; echo 'FINAL SUMMARY: 3 failed'"
TAIL_LINES = 20_002
"""The command's lines: ``seq``'s and the summary."""


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def launch(server: ScriptedServer, cwd: Path, env: dict[str, str], *extra: str, cols: int = 100) -> Terminal:
    term = Terminal(dashfloat_argv(server, cwd, *extra), env, cols=cols, rows=30)
    assert term.wait_for("Idle", visible_only=True, timeout_s=20), term.text()
    return term


def gated(text: str, gate: threading.Event) -> Reply:
    """An answer that starts with ``text`` and waits for ``gate`` (the test's keys meanwhile) before it ends."""

    def body() -> Iterator[BodyItem]:
        yield sse_event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]})
        gate.wait(120)
        yield sse_event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        yield sse_event("[DONE]")

    return Reply(body=body())


# ---------------------------------------------------------------- 1. output tails on screen, /last and Ctrl-O


def test_long_command_output_shows_its_tail_and_the_true_count_and_ctrl_o_shows_all(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": TAIL_COMMAND})]), text_reply("ran it"))
    term = launch(server, tree, isolated_env, "--yes")
    try:
        term.send("run it\r")
        assert term.wait_for("ran it"), term.text()
        lines = term.lines()
        hidden = TAIL_LINES - (RESULT_EXCERPT_MAX_LINES - 1)
        assert f"    … {hidden} more lines · Ctrl-O or /last shows all" in lines, term.text()  # was `… 5925 more`
        assert "    FINAL SUMMARY: 3 failed" in lines, term.text()  # the tail: what a test run ends with
        assert term.wait_for("Idle", visible_only=True)
        term.send(CTRL_O)
        assert term.wait_for("→ ok · execute_command · all "), term.text()
        assert term.wait_for("output cut:"), term.text()  # all the executor kept, its own marker included
    finally:
        term.close()


def test_ctrl_o_after_the_persons_own_command_shows_that_commands_output(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    """Found in tmux: after `!seq 1 20000` (its excerpt says "Ctrl-O or /last shows all") Ctrl-O showed the model's
    earlier command instead: the person's own command joins the conversation only with the next prompt."""
    server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": "echo model-said-this"})]), text_reply("ok"))
    term = launch(server, tree, isolated_env, "--yes")
    try:
        term.send("run it\r")
        assert term.wait_for("model-said-this") and term.wait_for("Idle", visible_only=True), term.text()
        term.send("!seq 1 300\r")
        assert term.wait_for("goes to the model with your next prompt"), term.text()
        assert term.wait_for("Idle", visible_only=True), term.text()
        term.send(CTRL_O)
        assert term.wait_for("→ ok · execute_command · all 300 lines kept"), term.text()
    finally:
        term.close()


def test_headless_long_output_shows_head_tail_and_the_true_count(tree: Path, isolated_env: dict[str, str]) -> None:
    with ScriptedServer() as server:
        server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": TAIL_COMMAND})]), text_reply("ran it"))
        done = subprocess.run(
            [*dashfloat_argv(server, tree), "-p", "run it", "--yes"],
            env=isolated_env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    err = done.stderr.splitlines()
    assert f"  … {TAIL_LINES - (RESULT_EXCERPT_MAX_LINES - 1)} more lines" in err, done.stderr
    assert err[err.index("  FINAL SUMMARY: 3 failed") - 1] == "  20001", done.stderr


# ---------------------------------------------------------------- 9. onboarding, /status, /init, /quit


def test_first_screen_status_init_and_quit(tree: Path, isolated_env: dict[str, str], server: ScriptedServer) -> None:
    agents = "# AGENTS.md\n\nRun the tests with `make test`.\n"
    server.enqueue(
        tool_calls_reply([("w1", "write_file", {"path": "AGENTS.md", "content": agents})]), text_reply("proposed")
    )
    term = launch(server, tree, isolated_env)
    try:
        # a real provider: one onboarding line with the model, the window, the sandbox and three keys, once
        # said once the window is known (the scripted server reports none: the assumed 32.8k, as the status bar)
        assert term.wait_for(f"· DashFloat · m · window 32.8k · sandbox workspace-write · {ONBOARDING_KEYS}")
        assert term.text().count(ONBOARDING_KEYS) == 1, term.text()
        term.send("/status\r")
        assert term.wait_for("approval mode: ask"), term.text()
        text = term.text()
        assert "· provider: " in text and "model: m" in text and "context window:" in text, text
        assert "sandbox: " in text and "session: " in text, text
        # /init: a prompt; the model's AGENTS.md comes through the normal write preview
        term.send("/init\r")
        assert term.wait_for("⚙ write_file AGENTS.md", visible_only=True), term.text()
        assert term.wait_for("y/Enter approve", visible_only=True), term.text()
        assert not (tree / "AGENTS.md").exists()
        term.send("y")
        assert term.wait_for("proposed"), term.text()
        assert (tree / "AGENTS.md").read_text() == agents
        assert server.requests[0]["messages"][-1]["content"] == INIT_PROMPT
        assert term.wait_for("Idle", visible_only=True)
        term.send("/quit\r")
        assert term.wait_exit() == 0, term.text()
        resume = re.search(r"resume this session: dashfloat --resume (\S+)", term.text())
        assert resume is not None and resume.group(1), term.text()
    finally:
        term.close()


# ---------------------------------------------------------------- 8. modes on Shift-Tab, coloured, plan's hand-off


def _status_row(term: Terminal) -> int:
    """The status bar's row (the last one that starts with the phase's mark)."""
    rows = [y for y, line in enumerate(term.screen.display) if line.startswith(("●", *"⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"))]
    return rows[-1] if rows else -1


def _status_says(term: Terminal, word: str) -> bool:
    """Whether the status bar (not a notice above it) shows ``word``, once a frame has drawn it."""
    return term.wait_until(lambda: _status_row(term) >= 0 and word in term.screen.display[_status_row(term)])


def _status_fg(term: Terminal, word: str) -> str:
    """The colour the status bar draws ``word`` in."""
    assert _status_says(term, word), term.visible()
    y = _status_row(term)
    return str(term.screen.buffer[y][term.screen.display[y].index(word)].fg)


def test_shift_tab_cycles_the_modes_colours_them_and_leaving_plan_offers_to_act(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer, tmp_path: Path
) -> None:
    config = tmp_path / "cfg" / "dashfloat" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[settings]\nshift_tab_all = true\n")
    server.enqueue(text_reply("The plan: 1. read a.txt 2. fix it"))
    term = launch(server, tree, isolated_env)
    try:
        plain = _status_fg(term, "approve: ask")
        term.send(SHIFT_TAB)
        assert _status_fg(term, "approve: edits") != plain  # any mode but ask stands out
        term.send(SHIFT_TAB)
        assert _status_fg(term, "approve: plan") != plain
        term.send(SHIFT_TAB)  # config.toml enables all: it joins the cycle
        assert _status_says(term, "approve: all"), term.text()
        assert "❯ " + ACT_ON_PLAN not in term.text()  # passing plan on the way round: no plan, nothing offered
        term.send(SHIFT_TAB)
        assert _status_says(term, "approve: ask"), term.text()
        term.send(SHIFT_TAB + SHIFT_TAB)
        assert _status_says(term, "approve: plan"), term.text()
        term.send("how would you fix it?\r")
        assert term.wait_for("The plan: 1.") and term.wait_for("Idle", visible_only=True), term.text()
        term.send(SHIFT_TAB)
        assert _status_says(term, "approve: all"), term.text()
        assert term.wait_for(f"❯ {ACT_ON_PLAN}", visible_only=True), term.text()  # plan's hand-off, not sent
        assert len(server.requests) == 1
    finally:
        term.close()


# ---------------------------------------------------------------- 10. queued prompts


def test_a_prompt_entered_while_busy_is_queued_editable_and_sent_now_by_interrupting(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    gate = threading.Event()
    server.enqueue(gated("working on the first", gate), text_reply("second answer"))
    term = launch(server, tree, isolated_env)
    try:
        term.send("first\r")
        assert term.wait_for("working on the first", visible_only=True), term.text()
        term.send("second prompt\r")  # Enter while busy: queued under the input, not a draft left behind
        assert term.wait_for("↳ queued: second prompt", visible_only=True), term.text()
        assert term.wait_for("Ctrl-S sends now", visible_only=True), term.text()
        term.send(UP)  # on the empty input: the queued prompt comes back to edit
        assert term.wait_for("❯ second prompt", visible_only=True), term.text()
        assert term.wait_until(lambda: "↳ queued:" not in term.visible()), term.visible()
        term.send(" edited\r")
        assert term.wait_for("↳ queued: second prompt edited", visible_only=True), term.text()
        term.send(CTRL_S)  # sent now: the turn is cancelled cleanly, then the queue goes
        assert term.wait_for("second answer"), term.text()
        assert server.requests[-1]["messages"][-1]["content"] == "second prompt edited"
        assert term.wait_for("Idle", visible_only=True)
        assert term.wait_until(lambda: "↳ queued:" not in term.visible()), term.visible()
    finally:
        gate.set()
        term.close()


def test_esc_gives_the_queue_back_to_the_input(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    gate = threading.Event()
    server.enqueue(gated("working", gate))
    term = launch(server, tree, isolated_env)
    try:
        term.send("first\r")
        assert term.wait_for("working", visible_only=True), term.text()
        term.send("later\r")
        assert term.wait_for("↳ queued: later", visible_only=True), term.text()
        term.send("\x1b")  # the user stops the turn: the queue is not sent, it comes back to be edited
        assert term.wait_for("❯ later", visible_only=True), term.text()
        assert term.wait_for("Idle", visible_only=True)
        assert len(server.requests) == 1
    finally:
        gate.set()
        term.close()


# ---------------------------------------------------------------- 11. wrapped excerpt lines; --continue compacted


def test_a_wrapped_excerpt_line_hangs_under_its_text(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    (tree / "long.txt").write_text("start " + "word " * 40 + "end\nnext line\n")
    server.enqueue(tool_calls_reply([("r1", "read_file", {"path": "long.txt"})]), text_reply("read it"))
    term = launch(server, tree, isolated_env, cols=80)
    try:
        term.send("read\r")
        assert term.wait_for("read it"), term.text()
        lines = term.lines()
        first = next(n for n, line in enumerate(lines) if line.startswith("    start word"))
        assert lines[first + 1].startswith("    " + CONTINUATION_MARK + "word"), lines[first : first + 4]
        assert "    next line" in lines  # a line of the file itself starts flush, as before
    finally:
        term.close()


def test_continue_shows_compacted_turns_as_one_row(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    turns = KEEP_RECENT_UNITS + 2  # more than compaction keeps: the oldest are summarised
    server.enqueue(*(text_reply(f"answer number {i}") for i in range(turns)), text_reply("the summary of it"))
    term = launch(server, tree, isolated_env)
    try:
        for i in range(turns):
            term.send(f"question number {i}\r")
            assert term.wait_for(f"answer number {i}"), term.text()
            assert term.wait_for("Idle", visible_only=True)
        term.send("/compact\r")
        assert term.wait_for("summarised"), term.text()
        assert term.wait_for("Idle", visible_only=True), term.text()
        term.send("/quit\r")
        assert term.wait_exit() == 0, term.text()
    finally:
        term.close()
    term = launch(server, tree, isolated_env, "--continue")
    try:
        assert term.wait_for("compacted into a summary (the model reads the summary)"), term.text()
        assert term.wait_for(f"answer number {turns - 1}"), term.text()  # the kept turns, replayed as they were
        text = term.text()
        assert re.search(r"· \d+ earlier turns? compacted into a summary", text), text
        assert "question number 0" not in text and "answer number 0" not in text, text  # one row, not in full
    finally:
        term.close()
