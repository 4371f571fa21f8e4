"""Headless runs as scripts and people use them: on a shared terminal, into `head`, interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import psutil

from dashfloat.runtime.printer import EXIT_BROKEN_PIPE
from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv, isolated_environment, wait_for
from tests.pty_harness import Terminal


def processes_with(marker: str) -> list[psutil.Process]:
    """Every live process whose environment carries ``marker`` (our tree and every command it ran)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("DASHFLOAT_TEST_MARKER") == marker and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            continue
    return found


def test_prose_and_tool_rows_never_share_a_line_on_one_terminal(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c1", "list_directory", {"path": "."})], content="Let me look at what to fix."),
            text_reply("Found a.txt."),
        )
        term = Terminal(dashfloat_argv(server, tree, "-p", "look"), isolated_environment(tmp_path), cols=100, rows=20)
        try:
            assert term.wait_for("Found a.txt."), term.text()
            assert term.wait_exit(10) == 0
            lines = term.lines()
            assert "Let me look at what to fix." in lines, lines
            assert "⚙ list_directory ." in lines, lines
            assert not any("fix.⚙" in line or "fix.→" in line for line in lines), lines
            assert "Found a.txt." in lines, lines
        finally:
            term.close()


def test_prose_piped_away_from_the_terminal_gets_no_extra_newline(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c1", "list_directory", {"path": "."})], content="Looking."),
            text_reply("Done."),
        )
        result = subprocess.run(
            dashfloat_argv(server, tree, "-p", "look"),
            env=isolated_environment(tmp_path),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout == "Looking.\n\nDone.\n"
        assert "⚙ list_directory ." in result.stderr.splitlines()


def test_prose_and_rows_into_one_pipe_never_share_a_line(tree: Path, tmp_path: Path) -> None:
    """`dashfloat -p … 2>&1 | tee log`, as CI jobs run it: one pipe for both streams."""
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c1", "list_directory", {"path": "."})], content="Let me look at what to fix."),
            text_reply("Found a.txt."),
        )
        result = subprocess.run(
            dashfloat_argv(server, tree, "-p", "look"),
            env=isolated_environment(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=30,
            check=False,
        )
        assert result.returncode == 0, result.stdout
        lines = result.stdout.splitlines()
        at = lines.index("Let me look at what to fix.")
        assert lines[at + 1] == "⚙ list_directory .", lines
        assert lines[-2:] == ["", "Found a.txt."], lines


def test_piping_into_head_exits_quietly_and_leaves_no_process(tree: Path, tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    env = {**isolated_environment(tmp_path), "DASHFLOAT_TEST_MARKER": marker}
    many_lines = "".join(f"line {n}\n" for n in range(20_000))  # far more than a pipe holds
    with ScriptedServer() as server:
        server.enqueue(text_reply(many_lines, chunk_size=4096))
        main = subprocess.Popen(
            dashfloat_argv(server, tree, "-p", "talk"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert main.stdout is not None and main.stderr is not None
        first = main.stdout.readline()  # what `head -1` does: one line, then close the pipe
        main.stdout.close()
        try:
            err = main.stderr.read().decode()
            code = main.wait(20)
        finally:
            main.kill()
            main.stderr.close()
        assert first == b"line 0\n"
        assert code == EXIT_BROKEN_PIPE, err
        assert "Traceback" not in err and "BrokenPipe" not in err, err
        assert wait_for(lambda: not processes_with(marker), timeout_s=10), processes_with(marker)


def test_piping_into_head_while_a_command_runs_kills_the_command(tree: Path, tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    env = {**isolated_environment(tmp_path), "DASHFLOAT_TEST_MARKER": marker}
    many_lines = "".join(f"line {n}\n" for n in range(20_000))
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c1", "execute_command", {"command": "echo started; sleep 301"})], content="go\n"),
            text_reply(many_lines, chunk_size=4096),
        )
        main = subprocess.Popen(
            dashfloat_argv(server, tree, "--yes", "-p", "run"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert main.stdout is not None and main.stderr is not None
        assert main.stdout.readline() == b"go\n"
        assert wait_for(lambda: any("301" in " ".join(p.cmdline()) for p in processes_with(marker)), timeout_s=10)
        main.stdout.close()  # the reader goes while the command runs; the next prose write breaks the pipe
        try:
            main.send_signal(signal.SIGINT)  # Ctrl-C once: the command is cancelled, prose follows into the pipe
            err = main.stderr.read().decode()
            code = main.wait(20)
        finally:
            main.kill()
            main.stderr.close()
        assert code in (EXIT_BROKEN_PIPE, 130), err
        assert "Traceback" not in err, err
        assert wait_for(lambda: not processes_with(marker), timeout_s=10), processes_with(marker)


def test_ctrl_c_in_the_standalone_executor_kills_the_command_and_prints_no_traceback(tree: Path) -> None:
    marker = uuid.uuid4().hex
    env = {**os.environ, "DASHFLOAT_TEST_MARKER": marker}
    term = Terminal([sys.executable, "-m", "dashfloat.executor", "--cwd", str(tree)], env, cols=100, rows=20)
    try:
        request = {"id": "1", "name": "execute_command", "args": {"command": "sleep 302"}}
        term.send(json.dumps(request) + "\n")
        assert wait_for(lambda: any("302" in " ".join(p.cmdline()) for p in processes_with(marker)), timeout_s=10)
        term.send(b"\x03")
        assert term.wait_exit(10) == 130, term.text()
        assert "Traceback" not in term.text() and "interrupted" in term.text(), term.text()
        assert wait_for(lambda: not processes_with(marker), timeout_s=10), processes_with(marker)
    finally:
        term.close()


def test_json_starts_with_agent_ready_on_a_provider_and_on_the_demo(tree: Path, tmp_path: Path) -> None:
    """Scripts read the first event as the session's description: it is agent_ready whether the first request
    streamed before the context window was known (a server that reports none: five probes) or not (the demo)."""
    env = isolated_environment(tmp_path)
    with ScriptedServer() as server:
        server.enqueue(text_reply("hello"))
        demo = [sys.executable, "-m", "dashfloat", "--cwd", str(tree)]
        runs = [
            subprocess.run([*argv, "--json", "-p", "hello"], env=env, capture_output=True, text=True, timeout=60)
            for argv in (dashfloat_argv(server, tree), demo)
        ]
    for done in runs:
        events = [json.loads(line) for line in done.stdout.splitlines()]
        assert done.returncode == 0, done.stderr
        assert events[0]["type"] == "agent_ready", events[:3]
        assert [e["type"] for e in events][-3:] == ["turn_ended", "phase_changed", "result"]
