"""Background jobs in the real TUI, in a pty (issue 36): /jobs lists them, the status bar counts them, /jobs stop
stops one, and nothing a job started outlives the session, whichever way it ends (checked by pid)."""

from __future__ import annotations

import os
import secrets
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv, wait_for
from tests.pty_harness import Terminal


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


def marked(token: str) -> list[int]:
    """Live pids whose command line holds ``token``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and token in " ".join(proc.info["cmdline"] or []):
            found.append(proc.pid)
    return found


def start_job(server: ScriptedServer, token: str, call_id: str) -> None:
    command = f"echo serving {token}; sh -c 'sleep 300; : {token}' & wait"
    server.enqueue(
        tool_calls_reply([(call_id, "execute_command", {"command": command, "background": True})]),
        text_reply(f"started {call_id}"),
    )


def gone(pids: list[int]) -> bool:
    """Whether every one of ``pids`` has exited (zombies count as exited) within a generous bound."""
    return wait_for(lambda: not live(pids), 15)


def live(pids: list[int]) -> set[int]:
    found = set()
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                found.add(pid)
        except psutil.NoSuchProcess:
            continue
    return found


def test_jobs_lists_counts_and_stops_a_job_and_quit_ends_the_rest(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer
) -> None:
    first, second = secrets.token_hex(6), secrets.token_hex(6)
    start_job(server, first, "j1")
    start_job(server, second, "j2")
    term = Terminal(dashfloat_argv(server, tree, "--yes"), isolated_env, cols=110, rows=30)
    try:
        assert term.wait_for("Idle", visible_only=True, timeout_s=20), term.text()
        term.send("start the server\r")
        assert term.wait_for("started j1"), term.text()
        assert term.wait_for("1 job", visible_only=True), term.text()  # the status bar's count
        assert wait_for(lambda: len(marked(first)) >= 2, 10)
        term.send("/jobs\r")
        assert term.wait_for("background jobs (/jobs stop N stops one"), term.text()
        row = [line for line in term.lines() if " 1  running " in line]
        assert row and f"serving {first}" in row[0], term.text()
        pids = marked(first)
        term.send("/jobs stop 1\r")
        assert term.wait_for("was stopped"), term.text()
        assert gone(pids), marked(first)
        term.send("another\r")
        assert term.wait_for("started j2"), term.text()
        assert wait_for(lambda: len(marked(second)) >= 2, 10)
        pids = marked(second)
        term.send("/quit\r")
        assert term.wait_exit() is not None
        assert gone(pids), marked(second)
    finally:
        term.close()


@pytest.mark.parametrize("how", ["ctrl_c_twice", "sigkill", "clear"])
def test_a_job_dies_when_the_tui_is_interrupted_or_killed_or_the_session_cleared(
    tree: Path, isolated_env: dict[str, str], server: ScriptedServer, how: str
) -> None:
    token = secrets.token_hex(6)
    start_job(server, token, "j1")
    term = Terminal(dashfloat_argv(server, tree, "--yes"), isolated_env, cols=110, rows=30)
    try:
        assert term.wait_for("Idle", visible_only=True, timeout_s=20), term.text()
        term.send("start it\r")
        assert term.wait_for("started j1"), term.text()
        assert wait_for(lambda: len(marked(token)) >= 2, 10)
        pids = marked(token)
        if how == "clear":
            term.send("/clear\r")
            assert term.wait_for("was stopped"), term.text()
            assert gone(pids), marked(token)
            assert term.wait_for("Idle", visible_only=True), term.text()
            assert "1 job" not in term.visible(), term.text()
        elif how == "ctrl_c_twice":
            term.send("\x03")
            term.send("\x03")
            assert term.wait_exit() is not None
        else:
            os.kill(term.pid, signal.SIGKILL)
        assert gone(pids), marked(token)
    finally:
        term.close()
