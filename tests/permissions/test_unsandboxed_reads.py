"""Without the sandbox, nothing confines what a read-only command reads: such commands must ask, not run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv, isolated_environment

SECRET = "PRIVATE-KEY-MATERIAL"


def test_a_symlink_to_a_credential_is_not_read_unasked_without_the_sandbox(tmp_path: Path) -> None:
    home, workspace = tmp_path / "home", tmp_path / "ws"
    (home / ".ssh").mkdir(parents=True)
    workspace.mkdir()
    (home / ".ssh" / "id_rsa").write_text(SECRET + "\n")
    (workspace / "notes.txt").symlink_to(home / ".ssh" / "id_rsa")  # a hostile repository's "notes"
    with ScriptedServer() as server:
        server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": "cat notes.txt"})]))
        server.enqueue(text_reply("done"))
        env = {**isolated_environment(tmp_path), "HOME": str(home)}
        argv = dashfloat_argv(server, workspace, "-p", "read the notes", "--json", "--sandbox", "off")
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        sent = json.dumps(server.requests)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert any(e.get("type") == "tool_call_shown" for e in events), done.stdout + done.stderr
    assert SECRET not in done.stdout and SECRET not in done.stderr and SECRET not in sent
