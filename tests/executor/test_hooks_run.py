"""Hooks run by the executor (ADR 0088): real processes, a real tree, the real read-only sandbox."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from dashfloat.executor import detect_sandbox
from dashfloat.executor._hooks import HOOK_POLICY, run_hook, run_hooks
from dashfloat.executor._sandbox import Sandbox
from dashfloat.executor.path_policy import Root
from dashfloat.hooks import HOOK_OUTPUT_MAX_BYTES, tool_payload
from dashfloat.protocol import HookCommand, SandboxState

PY = sys.executable


def hook(command: str, timeout_s: float = 20.0) -> HookCommand:
    return HookCommand(command=command, timeout_s=timeout_s, source="test")


def sandbox() -> Sandbox:
    state = detect_sandbox("workspace-write", False, [], os.environ)
    if state.mode == "off":
        pytest.skip(f"no sandbox here: {state.unavailable}")
    return Sandbox.for_session(state, os.environ)


def test_the_payload_is_on_stdin_and_both_streams_come_back_apart(root: Path) -> None:
    payload = tool_payload("PreToolUse", "s1", str(root), "execute_command", {"command": "ls"}, "call_1")
    script = "import json,sys; d=json.load(sys.stdin); print(d['tool_input']['command']); print('err', file=sys.stderr)"
    run = run_hook(hook(f'{PY} -c "{script}"'), payload, Root(str(root)), None)
    assert (run.exit_code, run.stdout, run.stderr) == (0, "ls\n", "err\n")
    assert json.loads(payload) == {
        "session_id": "s1",
        "cwd": str(root),
        "hook_event_name": "PreToolUse",
        "tool_name": "execute_command",
        "tool_input": {"command": "ls"},
        "tool_use_id": "call_1",
    }


def test_a_hook_gets_the_filtered_environment_and_the_project_dir(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "sekrit")
    monkeypatch.setenv("PLAIN_SETTING", "seen")
    command = 'echo "$PLAIN_SETTING/${GITHUB_TOKEN:-none}/$CLAUDE_PROJECT_DIR/$DASHFLOAT_PROJECT_DIR"'
    run = run_hook(hook(command), b"{}", Root(str(root)), None)
    assert run.stdout == f"seen/none/{root}/{root}\n"


def test_a_hook_past_its_timeout_is_killed_with_its_group(root: Path) -> None:
    # The hook's child holds the pipes: the group kill ends it too (else the read would never see end of file).
    run = run_hook(hook("sleep 30 & sleep 30", timeout_s=0.5), b"", Root(str(root)), None)
    assert run.timed_out_s == 0.5 and run.exit_code is None


def test_output_past_the_cap_is_dropped_and_counted(root: Path) -> None:
    over = HOOK_OUTPUT_MAX_BYTES + 1000
    command = f"{PY} -c \"import sys; sys.stdout.write('x' * {over}); sys.stderr.write('e' * {over})\""
    run = run_hook(hook(command), b"", Root(str(root)), None)
    assert len(run.stdout) == len(run.stderr) == HOOK_OUTPUT_MAX_BYTES
    assert run.dropped_bytes == 2000 and run.exit_code == 0


def test_a_hook_that_does_not_read_a_large_payload_still_ends(root: Path) -> None:
    run = run_hook(hook("exit 0"), b"x" * (4 * 1024 * 1024), Root(str(root)), None)
    assert run.exit_code == 0


def test_an_interruption_kills_the_hook(root: Path) -> None:
    read, write = os.pipe()
    os.write(write, b"!")
    try:
        run = run_hook(hook("sleep 30"), b"", Root(str(root)), None, read, lambda: True)
    finally:
        os.close(read)
        os.close(write)
    assert run.cancelled
    read, write = os.pipe()
    os.write(write, b"!")
    try:
        assert run_hooks("PreToolUse", [hook("sleep 30")], b"", Root(str(root)), None, read, lambda: True) is None
    finally:
        os.close(read)
        os.close(write)


def test_hooks_run_in_order_until_one_blocks(root: Path) -> None:
    hooks = [hook("echo first >&2; exit 1"), hook("echo stop here >&2; exit 2"), hook("echo never; exit 2")]
    verdict = run_hooks("PreToolUse", hooks, b"{}", Root(str(root)), None)
    assert verdict is not None and verdict.blocked and verdict.reason == "stop here"
    assert "exited 1: first" in verdict.notice


def test_in_the_sandbox_a_hook_reads_the_workspace_and_changes_nothing(root: Path) -> None:
    (root / "a.txt").write_text("hello\n")
    command = "cat a.txt; touch made.txt; echo $?; curl -sS --max-time 2 http://1.1.1.1 >/dev/null 2>&1; echo $?"
    run = run_hook(hook(command), b"", Root(str(root)), sandbox())
    lines = run.stdout.splitlines()
    assert lines[0] == "hello" and lines[1] != "0" and lines[2] != "0"
    assert not (root / "made.txt").exists()
    assert HOOK_POLICY.mode == "read-only" and not HOOK_POLICY.network


def test_a_sandbox_that_cannot_start_is_said(root: Path) -> None:
    broken = Sandbox(SandboxState(mode="workspace-write"), bwrap_error="bwrap is gone")
    run = run_hook(hook("true"), b"", Root(str(root)), broken)
    assert "bwrap is gone" in run.error
