"""Hooks' pure core (ADR 0088): config tables, matchers, payloads, what a hook's run means, the trust store."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from dashfloat.config import HOOK_TIMEOUT_MAX_S, HOOKS_PER_EVENT_MAX, ConfigError, load_config
from dashfloat.hooks import (
    HOOK_CONTEXT_MAX_CHARS,
    HOOK_TIMEOUT_DEFAULT_S,
    TRUST_MAX_PROJECTS,
    Hook,
    HookSet,
    HookVerdict,
    ProjectHooks,
    combine,
    describe,
    event_payload,
    load_project_hooks,
    matches,
    read_hook,
    trust,
    trusted,
    user_hooks,
)
from dashfloat.protocol import ReadFileResult, ToolFailed, result_json


def config_env(tmp_path: Path, text: str) -> dict[str, str]:
    (tmp_path / "cfg" / "dashfloat").mkdir(parents=True, exist_ok=True)
    (tmp_path / "cfg" / "dashfloat" / "config.toml").write_text(text)
    return {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "HOME": str(tmp_path)}


def test_the_config_tables_become_hooks_in_order(tmp_path: Path) -> None:
    env = config_env(
        tmp_path,
        """
[[hooks.PreToolUse]]
matcher = "execute_command|write_file"
command = "check"
timeout = 5

[[hooks.PostToolUse]]
command = "report"

[[hooks.SessionStart]]
command = "hello"
""",
    )
    hooks = user_hooks(env)
    source = str(tmp_path / "cfg" / "dashfloat" / "config.toml")
    assert hooks.hooks == [
        Hook("PreToolUse", "check", "execute_command|write_file", 5.0, source),
        Hook("PostToolUse", "report", "", HOOK_TIMEOUT_DEFAULT_S, source),
        Hook("SessionStart", "hello", "", HOOK_TIMEOUT_DEFAULT_S, source),
    ]
    run = hooks.for_tool("write_file", "s1")
    assert run is not None and [h.command for h in run.pre] == ["check"] and [h.command for h in run.post] == ["report"]
    assert run.tool_name == "write_file" and run.session_id == "s1"
    read = hooks.for_tool("read_file", "s1")
    assert read is not None and read.pre == []
    assert HookSet([hooks.hooks[0]]).for_tool("read_file", "") is None
    assert [h.command for h in hooks.for_event("SessionStart")] == ["hello"]
    assert describe(hooks)[0] == f"PreToolUse [execute_command|write_file]: check (timeout 5s, {source})"
    assert user_hooks({"XDG_CONFIG_HOME": str(tmp_path / "none")}).hooks == []


@pytest.mark.parametrize(
    ("table", "error"),
    [
        ('[[hooks.PreToolUse]]\nmatcher = "edit_file("\ncommand = "x"', "hooks.PreToolUse[0].matcher: 'edit_file(' is"),
        ('[[hooks.Stop]]\ncommand = "  "', "hooks.Stop[0].command: must be a command line"),
        (
            f'[[hooks.PostToolUse]]\ncommand = "x"\ntimeout = {HOOK_TIMEOUT_MAX_S + 1}',
            "hooks.PostToolUse[0].timeout: must be a number of seconds above 0, at most 600",
        ),
        ('[[hooks.PostToolUse]]\ncommand = "x"\ntimeout = 0', "hooks.PostToolUse[0].timeout"),
        ('[[hooks.PreToolUse]]\ncomand = "x"', "hooks.PreToolUse[0].comand: unknown field"),
        ('[[hooks.PreTool]]\ncommand = "x"', "hooks.PreTool: unknown field (did you mean PreToolUse"),
        (
            '[[hooks.Stop]]\ncommand = "x"\n' * (HOOKS_PER_EVENT_MAX + 1),
            f"hooks.Stop: {HOOKS_PER_EVENT_MAX + 1} hooks, more than {HOOKS_PER_EVENT_MAX}",
        ),
    ],
)
def test_a_hook_that_cannot_run_as_written_is_named_with_file_and_field(tmp_path: Path, table: str, error: str) -> None:
    env = config_env(tmp_path, table)
    with pytest.raises(ConfigError) as raised:
        load_config(env)
    assert str(raised.value).startswith(str(tmp_path / "cfg" / "dashfloat" / "config.toml") + ": ")
    assert error in str(raised.value)


def test_a_matcher_is_a_regular_expression_over_the_whole_name() -> None:
    assert matches("", "anything") and matches("*", "mcp__git__status")
    assert matches("execute_command", "execute_command") and not matches("execute", "execute_command")
    assert matches("mcp__git__.*", "mcp__git__status") and matches("write_file|edit_file", "edit_file")


def test_a_project_hooks_file_is_read_and_checked(tmp_path: Path) -> None:
    assert load_project_hooks(str(tmp_path)) is None
    (tmp_path / ".dashfloat").mkdir()
    path = tmp_path / ".dashfloat" / "hooks.toml"
    path.write_text('[[hooks.PreToolUse]]\nmatcher = "execute_command"\ncommand = "./check.sh"\n')
    project = load_project_hooks(str(tmp_path))
    assert project is not None and project.path == str(path)
    assert project.hooks.hooks == [
        Hook("PreToolUse", "./check.sh", "execute_command", HOOK_TIMEOUT_DEFAULT_S, str(path))
    ]
    path.write_text(
        '# the same hooks, written otherwise\n[[hooks.PreToolUse]]\ncommand="./check.sh"\nmatcher="execute_command"'
    )
    again = load_project_hooks(str(tmp_path))
    assert again is not None and again.digest == project.digest
    path.write_text('allow = ["x"]')
    with pytest.raises(ConfigError, match=r"hooks.toml: allow: unknown field"):
        load_project_hooks(str(tmp_path))
    path.write_text('[[hooks.PreToolUse]]\nmatcher = "["\ncommand = "x"')
    with pytest.raises(ConfigError, match=r"hooks.toml: hooks.PreToolUse\[0\].matcher"):
        load_project_hooks(str(tmp_path))
    path.write_text("[[hooks.PreToolUse]]\ncommand = 3")
    with pytest.raises(ConfigError, match=r"hooks.toml: hooks: Expected `str`"):
        load_project_hooks(str(tmp_path))


def test_trust_is_per_project_and_per_content(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    one = ProjectHooks("/p/one/.dashfloat/hooks.toml", HookSet(), "a" * 64)
    changed = ProjectHooks(one.path, HookSet(), "b" * 64)
    other = ProjectHooks("/p/two/.dashfloat/hooks.toml", HookSet(), "a" * 64)
    assert not trusted(state, one)
    trust(state, one)
    assert trusted(state, one) and not trusted(state, changed) and not trusted(state, other)
    assert not trusted("", one)  # no state directory: nothing is remembered, nothing trusted
    trust(state, changed)
    assert trusted(state, changed) and not trusted(state, one)  # re-asked: only the newest content is trusted
    (tmp_path / "state" / "trusted-hooks.json").write_text("{not json")
    assert not trusted(state, changed)


def test_the_trust_file_keeps_the_newest_projects(tmp_path: Path) -> None:
    state = str(tmp_path)
    table = {f"/p/{n}": "d" for n in range(TRUST_MAX_PROJECTS)}
    (tmp_path / "trusted-hooks.json").write_bytes(msgspec.json.encode(table))
    trust(state, ProjectHooks("/p/new", HookSet(), "d"))
    kept = json.loads((tmp_path / "trusted-hooks.json").read_text())
    assert len(kept) == TRUST_MAX_PROJECTS and "/p/0" not in kept and kept["/p/new"] == "d"


def test_event_payloads_use_claude_codes_field_names() -> None:
    assert json.loads(event_payload("UserPromptSubmit", "s", "/w", prompt="hi")) == {
        "session_id": "s",
        "cwd": "/w",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "hi",
    }


def test_exit_2_blocks_before_and_informs_after() -> None:
    assert read_hook("PreToolUse", "h", 2, "", "no rm\n") == HookVerdict(blocked=True, reason="no rm")
    assert (
        read_hook("UserPromptSubmit", "h", 2, "", "").reason
        == "the UserPromptSubmit hook h exited 2 and gave no reason"
    )
    assert read_hook("PostToolUse", "h", 2, "", "lint: 3 errors") == HookVerdict(context="lint: 3 errors")
    assert read_hook("Stop", "h", 2, "", "later") == HookVerdict(notice="Stop hook h exited 2: later")


def test_other_failures_are_told_and_change_nothing() -> None:
    assert read_hook("PreToolUse", "h", 1, "", "oops\nmore") == HookVerdict(notice="PreToolUse hook h exited 1: oops")
    assert read_hook("PreToolUse", "h", None, "", "", timed_out_s=2.0).notice == (
        "PreToolUse hook h timed out after 2s and was killed"
    )
    assert (
        read_hook("PreToolUse", "h", None, "", "", error="no bwrap").notice == "PreToolUse hook h did not run: no bwrap"
    )


def test_json_output_decides_and_adds_context() -> None:
    deny = {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "not on main"}}
    assert read_hook("PreToolUse", "h", 0, json.dumps(deny), "") == HookVerdict(blocked=True, reason="not on main")
    allow = {"hookSpecificOutput": {"permissionDecision": "allow", "additionalContext": "fine"}}
    assert read_hook("PreToolUse", "h", 0, json.dumps(allow), "") == HookVerdict(context="fine")  # never a grant
    block = {"decision": "block", "reason": "tests fail", "systemMessage": "see CI"}
    assert read_hook("PostToolUse", "h", 0, json.dumps(block), "") == HookVerdict(
        context="tests fail", notice="PostToolUse hook h: see CI"
    )
    assert read_hook("UserPromptSubmit", "h", 0, json.dumps({"continue": False, "stopReason": "later"}), "").blocked
    assert read_hook("PreToolUse", "h", 0, json.dumps({"decision": "block"}), "").reason == (
        "blocked by the PreToolUse hook h"
    )
    assert read_hook("PreToolUse", "h", 0, "{broken", "") == HookVerdict()
    assert read_hook("PreToolUse", "h", 0, "[1]", "") == HookVerdict()


def test_plain_output_is_context_only_for_prompt_and_session_hooks() -> None:
    assert read_hook("UserPromptSubmit", "h", 0, "branch: main\n", "") == HookVerdict(context="branch: main")
    assert read_hook("SessionStart", "h", 0, "hello", "").context == "hello"
    assert read_hook("PreToolUse", "h", 0, "chatter", "") == HookVerdict()


def test_context_past_its_cap_is_cut_and_marked() -> None:
    long = "x" * (HOOK_CONTEXT_MAX_CHARS + 5)
    context = read_hook("SessionStart", "h", 0, long, "").context
    assert context.startswith("x" * HOOK_CONTEXT_MAX_CHARS) and context.endswith(
        f"[… cut: the hook gave {HOOK_CONTEXT_MAX_CHARS + 5} characters, {HOOK_CONTEXT_MAX_CHARS} kept]"
    )
    assert "x" * (HOOK_CONTEXT_MAX_CHARS + 1) not in context


def test_dropped_output_is_said_and_never_parsed() -> None:
    verdict = read_hook("PreToolUse", "h", 0, '{"decision": "block"', "", dropped_bytes=10)
    assert verdict == HookVerdict(notice="PreToolUse hook h: 10 bytes of its output past 65536 were dropped")
    assert read_hook("PreToolUse", "h", 2, "", "why", dropped_bytes=1).blocked


def test_combined_verdicts_first_block_wins() -> None:
    verdicts = [HookVerdict(context="a", notice="n1"), HookVerdict(blocked=True, reason="r"), HookVerdict(context="b")]
    assert combine(verdicts) == HookVerdict(blocked=True, reason="r", context="a\n\nb", notice="n1")


def test_the_model_reads_a_hooks_context_beside_the_result() -> None:
    result = ReadFileResult("a", "x\n", 1, 1, 1, 2, False)
    assert json.loads(result_json(result, "lint ok"))["hook_context"] == "lint ok"
    assert "hook_context" not in json.loads(result_json(ToolFailed(error="e")))
