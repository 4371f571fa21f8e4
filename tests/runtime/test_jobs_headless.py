"""Background jobs in a headless `--json` run (issue 36): job_started, job_output and job_exited are events valid
against the published schema, and the run's end ends the job (checked by pid)."""

from __future__ import annotations

import secrets
from pathlib import Path

import psutil

from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import wait_for
from tests.runtime.test_headless_contract import run_json


def test_a_headless_run_reports_its_job_and_ends_it(tree: Path, tmp_path: Path) -> None:
    token = secrets.token_hex(6)
    command = f"echo up {token}; sh -c 'sleep 300; : {token}' & wait"
    with ScriptedServer() as server:
        server.enqueue(
            tool_calls_reply([("c1", "execute_command", {"command": command, "background": True})]),
            tool_calls_reply([("c2", "job_output", {"id": 1})]),
            text_reply("it runs."),
        )
        code, events, _ = run_json(server, tree, tmp_path, "-p", "start it", "--yes")
    assert code == 0
    types = [e["type"] for e in events]
    assert "job_started" in types and "job_output" in types
    started = next(e for e in events if e["type"] == "job_started")
    assert started["job_id"] == 1 and started["call_id"] == "c1" and started["command"] == command
    read = [e for e in events if e["type"] == "tool_result_shown" and e["id"] == "c2"]
    assert read and f"up {token}" in read[0]["output"]
    assert wait_for(lambda: not marked(token), 10)


def marked(token: str) -> list[int]:
    """Live pids whose command line holds ``token``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and token in " ".join(proc.info["cmdline"] or []):
            found.append(proc.pid)
    return found
