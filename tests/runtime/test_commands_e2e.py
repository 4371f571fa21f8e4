"""Commands people actually run, through the real CLI headless against the scripted server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import psutil

from dashfloat.testing.sse_server import Pause, Reply, ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv, isolated_environment

LONG_TEST_RUN = (
    'i=0; while [ $i -lt 3000 ]; do echo "test_$i ... PASSED with some padding"; i=$((i+1)); done; '
    "echo 'FINAL SUMMARY: 3000 passed'"
)


def tool_message(request: dict[str, object]) -> dict[str, object]:
    messages = request["messages"]
    assert isinstance(messages, list)
    [message] = [m for m in messages if m.get("role") == "tool"]
    assert isinstance(message, dict)
    return message


def test_the_end_of_a_long_output_reaches_the_model(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c1", "execute_command", {"command": LONG_TEST_RUN})]), text_reply("all passed")
        )
        done = subprocess.run(
            dashfloat_argv(server, tree, "--yes", "-p", "run the tests"),
            env=isolated_environment(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        content = tool_message(server.requests[1])["content"]
        assert isinstance(content, str)
        result = json.loads(content)
        assert result["truncated"] is True and result["total_bytes"] > 100_000
        assert result["output"].startswith("test_0 ... PASSED")
        assert result["output"].rstrip().endswith("FINAL SUMMARY: 3000 passed")
        marker = f"[… output cut: {result['cut_bytes']} bytes ({result['cut_lines']} lines) not shown here;"
        assert marker in result["output"] and result["cut_lines"] > 2000


TICKER = "i=0; while [ $i -lt 12 ]; do i=$((i+1)); echo tick $i; sleep 0.1; done"


def headless(server: ScriptedServer, tree: Path, tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": TICKER})]), text_reply("ticked"))
    return subprocess.run(
        dashfloat_argv(server, tree, "--yes", *flags, "-p", "tick"),
        env=isolated_environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_json_shows_live_output_as_events_before_the_result(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        done = headless(server, tree, tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    live = [e for e in events if e["type"] == "tool_output_shown"]
    assert len(live) >= 2, kinds  # streamed in pieces while it ran, not one lump at the end
    assert kinds.index("tool_output_shown") < kinds.index("tool_result_shown")
    assert "".join(e["text"] for e in live) == "".join(f"tick {i}\n" for i in range(1, 13))
    assert all(e["id"] == "c1" for e in live)


def test_verbose_shows_live_output_on_stderr_and_the_model_gets_the_result(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        done = headless(server, tree, tmp_path, "--verbose")
        result = json.loads(str(tool_message(server.requests[1])["content"]))
    assert done.returncode == 0, done.stderr
    err = done.stderr.splitlines()
    assert [line for line in err if line.startswith("  │ ")] == [f"  │ tick {i}" for i in range(1, 13)]
    assert err.index("  │ tick 12") < err.index("→ ok")
    assert result["output"] == "".join(f"tick {i}\n" for i in range(1, 13))
    assert done.stdout == "ticked\n"


def test_without_verbose_stderr_has_no_live_lines(tree: Path, tmp_path: Path) -> None:
    with ScriptedServer() as server:
        done = headless(server, tree, tmp_path)
    assert done.returncode == 0, done.stderr
    assert not any(line.startswith("  │") for line in done.stderr.splitlines())


STRAY_COMMANDS = 4


def test_sandboxed_commands_leave_no_zombies_behind_for_the_session(tree: Path, tmp_path: Path) -> None:
    # bwrap's reaper outlives bwrap by a few ms and is re-parented to the nearest subreaper: the main process used
    # to hold one zombie per command until exit (hundreds in a day's session). The executor collects them now.
    calls = [(f"c{i}", "execute_command", {"command": f"echo {i}"}) for i in range(STRAY_COMMANDS)]
    with ScriptedServer() as server:
        server.enqueue(tool_calls_reply(calls), Reply(body=[Pause(60.0)]))
        main = subprocess.Popen(
            dashfloat_argv(server, tree, "--yes", "-p", "run them"),
            env=isolated_environment(tmp_path),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert server.wait_requests(2, 60)  # every command ran: their results went out
            tree_now = psutil.Process(main.pid).children(recursive=True)
            zombies = [p for p in tree_now if p.status() == psutil.STATUS_ZOMBIE]
            assert len(zombies) <= 1, [(p.pid, p.ppid()) for p in zombies]  # at most the last call's, not yet due
        finally:
            main.terminate()
            main.wait(30)
