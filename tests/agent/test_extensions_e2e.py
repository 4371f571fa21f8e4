"""A project's hooks and skills end to end (ADR 0088): real processes, the scripted server, a real tree.

A project's hooks run only once trusted (per content); a project skill is listed, read on demand, never run unasked.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dashfloat.cli import parse_args
from dashfloat.launch import prepare
from dashfloat.protocol import (
    ConfirmRequested,
    DecideConfirmation,
    ShowHooks,
    SubmitPrompt,
    SystemEntry,
)
from dashfloat.runtime import AgentProcess
from dashfloat.testing.sse_server import ScriptedServer, text_reply, tool_calls_reply
from tests.e2e import collect, dashfloat_argv, isolated_environment, outcome, turn_over

HOOKS_TOML = """
[[hooks.PreToolUse]]
matcher = "execute_command"
command = "echo 'the project says no' >&2; exit 2"
"""


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def project_with_hooks(tree: Path, text: str = HOOKS_TOML) -> None:
    (tree / ".dashfloat").mkdir(exist_ok=True)
    (tree / ".dashfloat" / "hooks.toml").write_text(text)


def headless(server: ScriptedServer, tree: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    server.enqueue(tool_calls_reply([("c1", "execute_command", {"command": "touch made.txt"})]), text_reply("done"))
    argv = dashfloat_argv(server, tree, "--sandbox", "off", "--yes", "-p", "make it")
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_a_project_hook_does_not_run_until_trusted_and_again_once_its_file_changes(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project_with_hooks(tree)
    env = isolated_environment(tmp_path)
    with ScriptedServer() as server:
        # Headless never trusts on its own: the hook is reported, not run, and the command runs.
        run = headless(server, tree, env)
        assert run.returncode == 0, run.stderr
        assert "project hooks NOT run" in run.stderr + run.stdout
        assert (tree / "made.txt").exists()
        (tree / "made.txt").unlink()

        # The person trusts it (/hooks trust): from the next call on it runs, and blocks.
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        flags = ["--base-url", server.base_url, "--model", "m", "--sandbox", "off", "--yes"]
        launch = prepare(parse_args(flags), str(tree), env)
        assert launch.options.project_hooks is not None and launch.options.hooks.hooks == []
        link = AgentProcess(launch.options, log_path=str(tmp_path / "agent.log"))
        try:
            link.send(ShowHooks())
            listed = collect(link, lambda m: isinstance(m, SystemEntry) and "not trusted, not run" in m.text)
            assert "PreToolUse [execute_command]: echo 'the project says no'" in listed[-1].text  # type: ignore[union-attr]
            link.send(ShowHooks(trust=True))
            collect(link, lambda m: isinstance(m, SystemEntry) and m.text.startswith("trusted "))
            server.enqueue(
                tool_calls_reply([("c2", "execute_command", {"command": "touch made.txt"})]), text_reply("ok")
            )
            link.send(SubmitPrompt(text="make it"))
            assert outcome(collect(link, turn_over)) == "completed"
        finally:
            link.shutdown()
        assert not (tree / "made.txt").exists()
        assert tool_results(server.requests[-1]) == [
            {"ok": False, "error": "not run: a PreToolUse hook blocked it: the project says no"}
        ]

        # Remembered for this content: a new run runs it without asking again.
        again = prepare(parse_args(flags), str(tree), env).options
        assert again.project_hooks is not None and again.hooks.hooks == again.project_hooks.hooks.hooks
        run = headless(server, tree, env)
        assert "project hooks NOT run" not in run.stderr + run.stdout
        assert not (tree / "made.txt").exists()

        # The file changes: not trusted any more, reported again, not run.
        project_with_hooks(tree, HOOKS_TOML.replace("the project says no", "something else"))
        run = headless(server, tree, env)
        assert "project hooks NOT run" in run.stderr + run.stdout
        assert (tree / "made.txt").exists()


SKILL_MD = """---
name: changelog
description: Write the CHANGELOG entry for a change.
---
Run scripts/gen.sh, then edit CHANGELOG.md.
"""


def test_a_project_skill_is_listed_read_on_demand_and_never_run_unasked(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    skill = tree / ".agents" / "skills" / "changelog"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD)
    (skill / "scripts" / "gen.sh").write_text("touch ran.txt\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))  # none of the developer's own skills
    env = isolated_environment(tmp_path)
    with ScriptedServer() as server:
        launch = prepare(
            parse_args(["--base-url", server.base_url, "--model", "m", "--sandbox", "off"]), str(tree), env
        )
        server.enqueue(
            tool_calls_reply([("r1", "read_file", {"path": ".agents/skills/changelog/SKILL.md"})]),
            tool_calls_reply([("x1", "execute_command", {"command": "sh .agents/skills/changelog/scripts/gen.sh"})]),
            text_reply("waiting for you"),
        )
        link = AgentProcess(launch.options, log_path=str(tmp_path / "agent.log"))
        try:
            started = collect(link, lambda m: isinstance(m, SystemEntry) and m.text.startswith("skills listed"))
            assert started[-1].text == "skills listed for the model: changelog"  # type: ignore[union-attr]
            link.send(SubmitPrompt(text="add a changelog entry"))
            got: list[Any] = []
            ask = collect(link, lambda m: isinstance(m, ConfirmRequested), into=got)[-1]
            assert isinstance(ask, ConfirmRequested)  # the skill's script is asked for like any command
            link.send(DecideConfirmation(ref=ask.ref, decision="reject"))
            assert outcome(collect(link, turn_over, into=got)) == "completed"
        finally:
            link.shutdown()
    system = server.requests[0]["messages"][0]["content"]
    assert "- changelog: Write the CHANGELOG entry for a change. (.agents/skills/changelog/SKILL.md)" in system
    assert "Run scripts/gen.sh" not in system  # only the index: the file is read when the model decides to
    assert tool_results(server.requests[1])[0]["content"] == SKILL_MD
    assert tool_results(server.requests[2])[-1] == {"ok": False, "rejected": True}
    assert not (tree / "ran.txt").exists()
