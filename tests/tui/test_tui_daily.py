"""A day's habits through the real TUI in a pty, against the scripted server (issue 17)."""

from __future__ import annotations

import contextlib
import json
import shlex
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from dashfloat.testing.sse_server import Drop, Reply, ScriptedServer, sse_event, text_reply, tool_calls_reply
from dashfloat.ui.state import LIVE_OUTPUT_MAX_LINES
from tests.e2e import dashfloat_argv, wait_for
from tests.pty_harness import Terminal


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def launch(server: ScriptedServer, cwd: Path, env: dict[str, str], *extra: str, cols: int = 100) -> Terminal:
    term = Terminal(dashfloat_argv(server, cwd, *extra), env, cols=cols, rows=30)
    assert term.wait_for("Idle", visible_only=True, timeout_s=20), term.text()
    return term


def test_a_long_result_excerpt_names_how_many_lines_were_cut(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": "seq 1 100"})]), text_reply("counted"))
    term = launch(server, tree, isolated_env, "--yes")
    try:
        term.send("count\r")
        assert term.wait_for("counted"), term.text()
        lines = term.lines()
        # issue 37: the head and the tail (the end of a test run is its summary), the marker between them
        assert "    … 71 more lines · Ctrl-O or /last shows all" in lines, term.text()
        assert "    10" in lines and "    11" not in lines and "    81" not in lines and "    100" in lines
        assert not any(line.strip() == "… 1 more lines" for line in lines)
    finally:
        term.close()


def test_a_running_command_shows_its_newest_lines_live(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    ticker = "i=0; while [ ! -e stop ]; do i=$((i+1)); echo tick $i; sleep 0.1; done; echo stopped"
    server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": ticker})]), text_reply("ticked"))
    term = launch(server, tree, isolated_env, "--yes")
    try:
        term.send("tick\r")
        assert term.wait_for("tick 12", visible_only=True), term.text()
        assert term.wait_for("⋯ running", visible_only=True), term.text()
        visible = term.visible().splitlines()
        ticks = [line for line in visible if line.strip().startswith("tick ")]
        assert 1 <= len(ticks) <= LIVE_OUTPUT_MAX_LINES, visible  # the newest lines only, bounded
        assert "  → ok" not in term.text()  # all of this while the command still runs
        (tree / "stop").touch()
        assert term.wait_for("ticked"), term.text()
        assert term.wait_for("Idle", visible_only=True)
        assert "⋯ running" not in term.visible() and "    stopped" in term.lines()
    finally:
        term.close()


def test_ctrl_z_suspends_to_the_shell_and_fg_comes_back(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    server.enqueue(text_reply("first answer"), text_reply("answer after fg"))
    env = {**isolated_env, "PS1": "sh$ "}
    term = Terminal(["bash", "--norc", "--noprofile", "-i"], env, cols=100, rows=30)
    try:
        assert term.wait_for("sh$"), term.text()
        term.send(shlex.join(dashfloat_argv(server, tree)) + "\r")
        assert term.wait_for("Idle", visible_only=True, timeout_s=20), term.text()
        term.send("hello\r")
        assert term.wait_for("first answer"), term.text()
        term.send("\x1a")
        assert term.wait_for("Stopped"), term.text()  # the shell took the terminal back
        term.send("fg\r")
        assert term.wait_for("Idle", visible_only=True), term.text()
        term.send("again\r")
        assert term.wait_for("answer after fg"), term.text()
        assert [m.get("content") for m in server.requests[1]["messages"][1:]] == [
            "hello",
            "first answer",
            "again",  # no ^Z character reached the model
        ]
        term.send("\x04")
        assert wait_for(lambda: term.pump() and term.text().rstrip().endswith("sh$"), timeout_s=20), term.text()
    finally:
        term.close()


def _marked(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            cmdline = proc.cmdline()
            # Not the gate (ADR 0050): it names the command too while it waits to be released, and before the
            # command's own shell exists; counted, it let "it runs" pass before the sandbox had started the shell.
            if any(marker in arg for arg in cmdline) and proc.name() == "sh" and cmdline[3:4] != ["gate"]:
                found.append(proc)
    return found


def _all_stopped(marker: str, stopped: bool) -> bool:
    procs = _marked(marker)
    with contextlib.suppress(psutil.Error):
        # A shell waiting in vfork for a child stopped before its exec shows disk-sleep: stopped too, in effect.
        states = [p.status() in (psutil.STATUS_STOPPED, psutil.STATUS_DISK_SLEEP) for p in procs]
        return bool(procs) and all(state is stopped for state in states)
    return False


def test_ctrl_z_while_a_command_runs_stops_it_and_fg_continues_it(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    """Found in tmux: the TUI suspended, the command went on (its own process group). The whole job stops now."""
    # Unique to this run: every test's tree is named "work", and a second copy of this test (another checkout's suite,
    # or a killed run's stopped command) must not be counted as this one's command.
    marker = f"dfz-{uuid.uuid4().hex}"
    ticker = f"while [ ! -e stop ]; do sleep 0.1; done; echo stopped # {marker}"
    server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": ticker})]), text_reply("ticked"))
    env = {**isolated_env, "PS1": "sh$ "}
    term = Terminal(["bash", "--norc", "--noprofile", "-i"], env, cols=100, rows=30)
    try:
        assert term.wait_for("sh$"), term.text()
        term.send(shlex.join(dashfloat_argv(server, tree, "--yes")) + "\r")
        assert term.wait_for("Idle", visible_only=True, timeout_s=20), term.text()
        term.send("tick\r")
        assert wait_for(lambda: _all_stopped(marker, False)), term.text()  # it runs
        term.send("\x1a")
        assert term.wait_for("Stopped"), term.text()
        assert wait_for(lambda: _all_stopped(marker, True)), [p.status() for p in _marked(marker)]
        term.send("fg\r")
        assert wait_for(lambda: _all_stopped(marker, False)), [p.status() for p in _marked(marker)]
        (tree / "stop").touch()
        assert term.wait_for("ticked"), term.text()
        term.send("\x04")
        assert wait_for(lambda: term.pump() and term.text().rstrip().endswith("sh$"), timeout_s=20), term.text()
    finally:
        term.close()


@pytest.mark.parametrize("flags", [(), ("--no-notify",)])
def test_a_waiting_confirmation_rings_and_notifies_unless_turned_off(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer, flags: tuple[str, ...]
) -> None:
    server.enqueue(
        tool_calls_reply([("w1", "write_file", {"path": "new.txt", "content": "x\n"})]), text_reply("written")
    )
    env = {k: v for k, v in isolated_env.items() if k not in ("TMUX", "VTE_VERSION", "WT_SESSION")}
    term = launch(server, tree, {**env, "TERM_PROGRAM": "iTerm.app"}, *flags)
    try:
        before = len(term.raw)
        term.send("write it\r")
        assert term.wait_for("approve", visible_only=True), term.text()
        term.settle()
        after = bytes(term.raw[before:])
        expected = b"\x07\x1b]9;DashFloat: write_file waits for your key\x07"
        if flags:
            assert b"\x07" not in after and b"\x1b]9;" not in after
        else:
            assert after.count(expected) == 1, after[-400:]
    finally:
        term.close()


def test_bang_runs_the_users_command_and_its_output_joins_the_next_prompt(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    server.enqueue(text_reply("I see a.txt"))
    term = launch(server, tree, isolated_env)  # approval "ask": the user's own command needs no key
    try:
        term.send("!ls\r")
        assert term.wait_for("⚙ execute_command ls"), term.text()
        assert term.wait_for("    a.txt"), term.text()
        assert term.wait_for("goes to the model with your next prompt"), term.text()
        assert not server.requests  # nothing went to the model yet
        term.send("what files are here?\r")
        assert term.wait_for("I see a.txt"), term.text()
        [user] = [m for m in server.requests[0]["messages"] if m["role"] == "user"]
        assert user["content"].startswith("I ran `ls` myself (exit code 0)")
        assert "a.txt" in user["content"] and user["content"].endswith("what files are here?")
    finally:
        term.close()


def test_prompt_files_of_the_project_and_the_user_are_slash_commands(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    (tree / ".dashfloat" / "prompts").mkdir(parents=True)
    (tree / ".dashfloat" / "prompts" / "review.md").write_text("Review $ARGUMENTS for bugs, briefly.\n")
    user_prompts = Path(isolated_env["XDG_CONFIG_HOME"]) / "dashfloat" / "prompts"
    user_prompts.mkdir(parents=True)
    (user_prompts / "standup.md").write_text("Summarise what changed today.\n")
    server.enqueue(text_reply("reviewed"))
    term = launch(server, tree, isolated_env)
    try:
        # The prompt files come with the agent's ready message (the status bar's sandbox segment shows it).
        assert term.wait_for("sandbox: ", visible_only=True), term.text()
        term.send("/help\r")
        assert term.wait_for("/review [args]"), term.text()
        assert term.wait_for("/standup [args]"), term.text()
        term.send("/rev\t")  # completed like a built-in command
        term.send(" a.txt\r")
        assert term.wait_for("reviewed"), term.text()
        [user] = [m for m in server.requests[0]["messages"] if m["role"] == "user"]
        assert user["content"] == "Review a.txt for bugs, briefly.\n"
    finally:
        term.close()


def input_row(term: Terminal) -> str:
    """The input: the last visible row with the prompt mark."""
    return [line for line in term.visible().splitlines() if line.startswith("❯")][-1]


def test_ctrl_r_finds_an_older_prompt(tree: Path, isolated_env: dict[str, str], server: ScriptedServer) -> None:
    server.enqueue(text_reply("one"), text_reply("two"), text_reply("three"), text_reply("again"))
    term = launch(server, tree, isolated_env)
    try:
        for prompt, answer in (("deploy the staging site", "one"), ("run the tests", "two"), ("deploy prod", "three")):
            term.send(prompt + "\r")
            assert term.wait_for(answer), term.text()
            assert term.wait_for("Idle", visible_only=True)
        term.send("\x12")  # Ctrl-R
        assert term.wait_for("reverse-i-search", visible_only=True), term.text()
        term.send("deploy")
        # The input row (the last prompt mark), not the transcript's rows of the same prompts above it.
        assert wait_for(lambda: term.pump() and input_row(term) == "❯ deploy prod"), term.text()
        term.send("\x12")  # again: the next older match
        assert wait_for(lambda: term.pump() and input_row(term) == "❯ deploy the staging site"), term.text()
        term.send("\r")  # keeps the match in the input; the next Enter sends it
        assert wait_for(lambda: term.pump() and "reverse-i-search" not in term.visible(), timeout_s=10)
        assert input_row(term) == "❯ deploy the staging site"  # kept, not sent yet
        assert len(server.requests) == 3
        term.send("\r")
        assert term.wait_for("again"), term.text()
        assert [m["content"] for m in server.requests[3]["messages"] if m["role"] == "user"][-1] == (
            "deploy the staging site"
        )
    finally:
        term.close()


@pytest.mark.parametrize("keys", ["\x18\x05", "\x07"])  # Ctrl-X Ctrl-E, Ctrl-G
def test_the_editor_round_trip(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer, tmp_path: Path, keys: str
) -> None:
    editor = tmp_path / "fake-editor"
    # a fake $EDITOR: records what it was given and writes a two-line prompt back
    editor.write_text(f'#!/bin/sh\ncp "$1" {tmp_path}/seen\nprintf "edited first line\\nand a second\\n" > "$1"\n')
    editor.chmod(0o755)
    server.enqueue(text_reply("got both lines"))
    term = launch(server, tree, {**isolated_env, "VISUAL": str(editor), "EDITOR": "false"})
    try:
        term.send("draft text")
        assert term.wait_for("❯ draft text", visible_only=True), term.text()
        term.send(keys)
        assert term.wait_for("and a second", visible_only=True), term.text()
        assert (tmp_path / "seen").read_text().startswith("draft text")
        assert not server.requests  # back in the input, not sent
        term.send("\r")
        assert term.wait_for("got both lines"), term.text()
        [user] = [m for m in server.requests[0]["messages"] if m["role"] == "user"]
        assert user["content"] == "edited first line\nand a second"
    finally:
        term.close()


def test_the_status_bar_shows_the_estimated_context_when_the_provider_reports_no_usage(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    """Found in tmux: against a provider without usage the status bar read `0 / 32.8k` after every turn,
    while /usage said ~1.3k."""
    server.enqueue(text_reply("answered"))  # no usage chunk, as many local servers stream
    term = launch(server, tree, isolated_env)
    try:
        term.send("hi\r")
        assert term.wait_for("answered"), term.text()
        assert term.wait_for("● Idle", visible_only=True), term.text()
        [status] = [line for line in term.visible().splitlines() if line.startswith("● Idle")]
        used = status.split(" · ")[2].split(" / ")[0]
        assert used.removesuffix("k").replace(".", "").isdigit() and float(used.removesuffix("k")) > 0, status
    finally:
        term.close()


def test_a_prompt_on_the_command_line_starts_the_tui_with_it_sent(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    """`dashfloat explain @a.txt --yes`, as `claude "…"` and `codex "…"` start: it was `invalid choice: 'explain'
    (choose from 'sessions')`. The prompt goes as if typed, so its @mention attaches the file."""
    server.enqueue(text_reply("it says hello"))
    term = Terminal(dashfloat_argv(server, tree, "explain", "@a.txt", "--yes"), isolated_env, cols=100, rows=30)
    try:
        assert term.wait_for("it says hello", timeout_s=20), term.text()
        assert "❯ explain @a.txt" in term.lines(), term.text()
        assert term.wait_for("● Idle", visible_only=True), term.text()
        assert "approve: all" in term.visible()
        [request] = server.requests
        assert request["messages"][-1]["content"].startswith("explain @a.txt")
        assert "hello" in request["messages"][-1]["content"].removeprefix("explain @a.txt")  # a.txt attached
        term.send("\x04")  # the TUI stays for the next prompt; Ctrl-D quits it
        assert term.wait_exit(10) == 0
    finally:
        term.close()


def test_a_pasted_tab_shows_as_spaces_in_the_input_and_its_echo(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    """Found pasting a Makefile snippet in tmux: the input showed `^I`, the echo dropped the line's indentation."""
    server.enqueue(text_reply("read it"))
    term = launch(server, tree, isolated_env)
    try:
        term.send("\x1b[200~all:\n\tmake x\x1b[201~")  # a bracketed paste, as terminals send one
        assert term.wait_for("❯ all:", visible_only=True), term.text()
        assert term.wait_for("      make x", visible_only=True), term.visible()
        assert "^I" not in term.visible()
        term.send("\r")
        assert term.wait_for("read it"), term.text()
        assert server.requests[0]["messages"][-1]["content"] == "all:\n\tmake x"
        lines = term.lines()
        assert lines[lines.index("❯ all:") + 1] == "      make x", term.text()  # the echo, indented as typed
    finally:
        term.close()


def test_at_start_and_after_clear_the_status_bar_counts_the_system_prompt_and_tools(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    """Found in tmux: after /clear the status bar read `0 / …` while /usage said ~835 (the system prompt and the
    tools go with every request)."""
    server.enqueue(text_reply("answered", usage=(5000, 10)))
    term = launch(server, tree, isolated_env)

    def used() -> str:
        [status] = [line for line in term.visible().splitlines() if line.startswith("● Idle")]
        return status.split(" · ")[2].split(" / ")[0]

    try:
        assert term.wait_for("/ 32.8k (assumed) · approve", visible_only=True), term.text()  # the window is known
        shown = used()  # "835" or "1.2k": the count at start too, before any prompt
        count = float(shown.removesuffix("k")) * (1000 if shown.endswith("k") else 1)
        assert 300 < count < 5000, term.visible()
        at_start = used()
        term.send("hi\r")
        assert term.wait_for("5k / ", visible_only=True), term.text()
        term.send("/clear\r")
        assert term.wait_for("conversation starts empty"), term.text()
        assert term.wait_for("● Idle", visible_only=True), term.text()
        assert used() == at_start, term.visible()
    finally:
        term.close()


def test_a_call_cut_off_by_a_dropped_stream_shows_what_came(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    """Found in tmux: a write_file whose stream dropped mid-arguments showed as `⚙ write_file {}`."""
    arguments = json.dumps({"path": "notes.md", "content": "# Notes\n" + "a line\n" * 40})[:150]
    events = [sse_event({"choices": [{"index": 0, "delta": {"content": "Writing the notes."}}]})]
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "write_file", "arguments": ""}}
    events.append(sse_event({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
    for start in range(0, len(arguments), 25):
        fragment = {"index": 0, "function": {"arguments": arguments[start : start + 25]}}
        events.append(sse_event({"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}}]}))
    server.enqueue(Reply(body=[*events, Drop()]))
    term = launch(server, tree, isolated_env)
    try:
        term.send("write notes\r")
        assert term.wait_for("→ error"), term.text()
        assert '⚙ write_file (cut off) {"path": "notes.md", "content": "# Notes' in term.text(), term.text()
        assert "⚙ write_file {}" not in term.text()
        assert "→ error: not run: the stream failed (truncated) while this call was arriving" in term.text()
    finally:
        term.close()
    # Resumed (found in tmux: the replay showed `⚙ write_file {}`, the arguments the record holds).
    term = launch(server, tree, isolated_env, "--continue")
    try:
        assert term.wait_for("→ error: not run"), term.text()
        assert '⚙ write_file (cut off) {"path": "notes.md", "content": "# Notes' in term.text(), term.text()
        assert "⚙ write_file {}" not in term.text()
    finally:
        term.close()


def test_an_answer_stopped_at_its_call_bound_is_one_row_for_the_calls_not_run(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    """Found in tmux: 300 calls in one answer printed 65 identical `→ error: not run: …` rows."""
    server.enqueue(tool_calls_reply([(f"c{i}", "read_file", {"path": f"f{i}.txt"}) for i in range(300)]))
    term = launch(server, tree, isolated_env)
    try:
        term.send("read them all\r")
        assert term.wait_for("tool calls not run"), term.text()
        assert term.wait_for("● Idle", visible_only=True), term.text()
        assert "· 65 tool calls not run, the stream failed (too_many_calls): 65 read_file (the last one cut off)" in (
            term.text()
        )
        assert "→ error: not run" not in term.text() and "⚙ read_file" not in term.text()
    finally:
        term.close()


def test_a_refused_command_is_cleared_and_the_next_one_is_its_own(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    """Issue 37 (after ADR 0063): a refused command stayed in the input, the next one was glued on (``/foo/quit``)
    and sent to the model as a path. It is said and cleared now, and comes back with Up."""
    server.enqueue(text_reply("should not be asked"))
    term = launch(server, tree, isolated_env)
    try:
        term.send("/resume\r")
        assert term.wait_for("usage: /resume ID", visible_only=True), term.text()
        term.send("/approve bogus\r")  # typed on: its own command, not "/resume/approve bogus"
        assert term.wait_for("usage: /approve ask|edits|all|plan", visible_only=True), term.text()

        def input_row() -> str:
            return next((line for line in reversed(term.visible().splitlines()) if line.startswith("❯")), "")

        assert term.wait_until(lambda: input_row() == "❯"), term.visible()  # the input is empty
        term.send("\x1b[A")  # Up: the refused text comes back, to fix it
        assert term.wait_for("❯ /approve bogus", visible_only=True), term.text()
        assert server.requests == []
    finally:
        term.close()
