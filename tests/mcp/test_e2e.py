"""MCP calls through the real CLI (ADR 0086): a rule lets one run unasked, another is confirmed (headless: refused,
with the confirmation's words in the event), and every server is gone, by PID, after every exit path: the run's end,
SIGTERM in the middle of a call, the executor SIGKILLed in the middle of one."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from dashfloat.agent import EXECUTOR_PROCESS_NAME
from dashfloat.executor._mcp_link import NO_PREVIEW
from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv, isolated_environment
from tests.executor.conftest import EXIT_WAIT_S, gone, within
from tests.python_in_sandbox import needs_python_in_sandbox

BIN = Path(sys.executable).parent
FAIL_SERVER = str(Path(__file__).with_name("fail_server.py"))


@pytest.fixture
def marker() -> str:
    """Passed to the failure server on its command line (it ignores it): how a test finds that server's process."""
    return f"mcp-test-{uuid.uuid4().hex}"


@pytest.fixture
def env(tmp_path: Path, marker: str) -> dict[str, str]:
    config = tmp_path / "cfg" / "dashfloat"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        f'[mcp.servers.time]\ncommand = "{BIN / "mcp-server-time"}"\n\n'
        f'[mcp.servers.fail]\ncommand = "{sys.executable}"\nargs = ["{FAIL_SERVER}", "{marker}"]\nsandbox = false\n'
    )
    (config / "permissions.toml").write_text('allow = ["mcp__time"]\n')
    return isolated_environment(tmp_path)


def servers_with(marker: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        try:
            if marker in process.cmdline() and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            continue
    return found


def events(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.startswith("{"):
            yield json.loads(line)


@needs_python_in_sandbox
def test_a_rule_lets_a_call_run_unasked_and_another_is_confirmed(tmp_path: Path, env: dict[str, str],
                                                                  marker: str) -> None:  # fmt: skip
    tree = tmp_path / "work"
    tree.mkdir()
    with ScriptedServer() as server:
        calls = [("c1", "mcp__time__get_current_time", {"timezone": "UTC"}), ("c2", "mcp__fail__echo", {"text": "hi"})]
        server.enqueue(tool_calls_reply(calls), text_reply("done"))
        done = subprocess.run(
            dashfloat_argv(server, tree, "--json", "-p", "time?"), env=env, capture_output=True, text=True, timeout=60
        )
        second = server.requests[1]
    seen = list(events(done.stdout.splitlines()))
    results = {e["id"]: e for e in seen if e["type"] == "tool_result_shown"}
    assert results["c1"]["status"] == "ok" and '"timezone": "UTC"' in results["c1"]["output"]
    [change] = [e for e in seen if e["type"] == "change_recorded"]
    assert (change["id"], change["approved_by"], change["rule"]) == ("c1", "rule", "mcp__time")
    [confirm] = [e for e in seen if e["type"] == "confirm_requested"]
    assert confirm["name"] == "mcp__fail__echo" and confirm["lines"] == [
        "MCP server fail · tool echo · NOT sandboxed: it runs with your full permissions",
        "  Say the text back.",
        "arguments:",
        "  {",
        '    "text": "hi"',
        "  }",
        NO_PREVIEW,
    ]
    assert confirm["scope"] == "mcp__fail__echo"  # what "always" would allow: this one tool
    assert results["c2"]["status"] == "rejected"  # headless asks nobody
    tool_messages = {m["tool_call_id"]: m["content"] for m in second["messages"] if m["role"] == "tool"}
    assert json.loads(tool_messages["c1"])["ok"] and "UTC" in json.loads(tool_messages["c1"])["content"]
    assert json.loads(tool_messages["c2"]) == {"ok": False, "rejected": True}
    assert servers_with(marker) == []  # the run is over: nothing of it runs


def start_hanging_call(server: ScriptedServer, tree: Path, env: dict[str, str], marker: str) -> subprocess.Popen[str]:
    """A headless run whose model calls the hanging tool (--approve all lets it run): returned once it hangs."""
    server.enqueue(tool_calls_reply([("c1", "mcp__fail__hang", {})]), text_reply("after"))
    run = subprocess.Popen(
        dashfloat_argv(server, tree, "--json", "--approve", "all", "-p", "hang"),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert run.stdout is not None
    for event in events(run.stdout):
        if event["type"] == "phase_changed" and event["phase"] == "running":
            break
    assert within(lambda: len(servers_with(marker)) == 1, EXIT_WAIT_S)
    return run


def test_sigterm_in_the_middle_of_a_call_leaves_no_server(tmp_path: Path, env: dict[str, str], marker: str) -> None:
    tree = tmp_path / "work"
    tree.mkdir()
    with ScriptedServer() as server, start_hanging_call(server, tree, env, marker) as run:
        [hanging] = servers_with(marker)
        run.send_signal(signal.SIGTERM)
        run.wait(timeout=EXIT_WAIT_S)
    assert gone(hanging.pid)


def test_an_executor_sigkilled_in_the_middle_of_a_call_leaves_no_server(tmp_path: Path, env: dict[str, str],
                                                                        marker: str) -> None:  # fmt: skip
    tree = tmp_path / "work"
    tree.mkdir()
    with ScriptedServer() as server, start_hanging_call(server, tree, env, marker) as run:
        [hanging] = servers_with(marker)
        below = psutil.Process(run.pid).children(recursive=True)
        [executor] = [p for p in below if p.name() == EXECUTOR_PROCESS_NAME]
        executor.kill()
        assert gone(hanging.pid)  # the host died with the executor; the agent killed what they left
        assert run.stdout is not None
        rest = list(events(run.stdout))
        run.wait(timeout=EXIT_WAIT_S)
    [result] = [e for e in rest if e["type"] == "tool_result_shown"]
    assert result["status"] == "error" and "executor crashed" in result["output"]
