"""execute_command's own `timeout`, through the real CLI headless against the scripted server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from dashfloat.catalogue import EXEC_TIMEOUT_MAX_S
from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv, isolated_environment


def run_call(tree: Path, tmp_path: Path, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One execute_command call under `--exec-timeout 1`: (the tool result the model got, the first request)."""
    with ScriptedServer() as server:
        server.enqueue(tool_calls_reply([("c1", "execute_command", args)]), text_reply("done"))
        done = subprocess.run(
            dashfloat_argv(server, tree, "--yes", "--exec-timeout", "1", "-p", "run it"),
            env=isolated_environment(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        [tool] = [m for m in server.requests[1]["messages"] if m.get("role") == "tool"]
        return json.loads(tool["content"]), server.requests[0]


SLOW = "sleep 2; echo finished"


def test_a_call_may_ask_for_a_longer_timeout_than_the_default(tree: Path, tmp_path: Path) -> None:
    result, _ = run_call(tree, tmp_path, {"command": SLOW, "timeout": 30})
    assert result["ok"] is True and result["output"] == "finished\n"


def test_without_it_the_default_applies(tree: Path, tmp_path: Path) -> None:
    result, first_request = run_call(tree, tmp_path, {"command": SLOW})
    assert result["ok"] is False and result["error"] == "timed out after 1s"
    # the catalogue the model saw names the default in force and the maximum
    [tool] = [t for t in first_request["tools"] if t["function"]["name"] == "execute_command"]
    assert "killed after 1 s" in tool["function"]["description"]
    timeout = tool["function"]["parameters"]["properties"]["timeout"]
    assert timeout["maximum"] == EXEC_TIMEOUT_MAX_S and "default 1," in timeout["description"]


def test_a_timeout_over_the_maximum_is_an_error_result_and_runs_nothing(tree: Path, tmp_path: Path) -> None:
    result, _ = run_call(tree, tmp_path, {"command": "touch ran", "timeout": EXEC_TIMEOUT_MAX_S + 1})
    assert result == {"ok": False, "error": "execute_command: timeout must be <= 600, got 601"}
    assert not (tree / "ran").exists()
