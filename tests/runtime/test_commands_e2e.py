"""Commands people actually run, through the real CLI headless against the scripted server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
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
        assert "[… output cut:" in result["output"]
