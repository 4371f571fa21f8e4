"""The sandbox through the real CLI, headless: an unasked command is confined; the fallback says so."""

from __future__ import annotations

import subprocess
from pathlib import Path

from dashfloat.agent._startup import SANDBOX_OFF_NOTICE
from dashfloat.executor._sandbox import BWRAP_ENV
from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import dashfloat_argv, isolated_environment


def headless_command(tmp_path: Path, command: str, *flags: str, env_extra: dict[str, str] | None = None) -> str:
    """Run one headless turn whose model calls execute_command (approved by --approve all); stderr."""
    tree = tmp_path / "work"
    tree.mkdir()
    env = {**isolated_environment(tmp_path), **(env_extra or {})}
    with ScriptedServer() as server:
        server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": command})]), text_reply("done"))
        done = subprocess.run(
            dashfloat_argv(server, tree, "--approve", "all", *flags, "-p", "go"),
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_an_unasked_command_cannot_write_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    stderr = headless_command(tmp_path, f"echo x > {outside}; echo x > inside.txt")
    assert not outside.exists() and (tmp_path / "work" / "inside.txt").exists()
    assert "NOT sandboxed" not in stderr


def test_sandbox_off_runs_as_before(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    stderr = headless_command(tmp_path, f"echo x > {outside}", "--sandbox", "off")
    assert outside.exists()
    assert stderr.count(SANDBOX_OFF_NOTICE) == 1  # taken without a question, and said once


def test_sandbox_off_is_taken_and_said_once_where_bwrap_cannot_make_namespaces(tmp_path: Path) -> None:
    # A container that is the boundary: no bwrap there, and --sandbox off by name is no error and no warning.
    outside = tmp_path / "outside.txt"
    env = {BWRAP_ENV: "/nonexistent/bwrap"}
    stderr = headless_command(tmp_path, f"echo x > {outside}", "--sandbox", "off", env_extra=env)
    assert outside.exists()
    assert stderr.count(SANDBOX_OFF_NOTICE) == 1 and "NOT sandboxed" not in stderr


def test_the_fallback_is_announced_at_start(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    stderr = headless_command(tmp_path, f"echo x > {outside}", env_extra={BWRAP_ENV: "/nonexistent/bwrap"})
    assert "commands are NOT sandboxed: cannot run bwrap" in stderr
    assert "they run with your full permissions" in stderr
    assert outside.exists()  # it said so, and ran as today


def test_a_sandbox_asked_for_by_flag_that_cannot_start_is_an_error_not_an_unconfined_run(tmp_path: Path) -> None:
    tree = tmp_path / "work"
    tree.mkdir()
    env = {**isolated_environment(tmp_path), BWRAP_ENV: "/nonexistent/bwrap"}
    for mode in ("read-only", "workspace-write"):
        with ScriptedServer() as server:
            server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": "touch made"})]), text_reply("done"))
            argv = dashfloat_argv(server, tree, "--approve", "all", "--sandbox", mode, "-p", "go")
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 2, done.stderr
        assert f"--sandbox {mode}" in done.stderr and "cannot run bwrap" in done.stderr
        assert "--sandbox off" in done.stderr  # says how to run unconfined on purpose
        assert not (tree / "made").exists()
