"""Saved rules from real files: the user's (allow, deny) and a project's (deny only), and their errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dashfloat.config import TOML_MAX_BYTES, ConfigError
from dashfloat.permission_files import PROJECT_PERMISSIONS, RULES_MAX, load_rules, save_user_rules
from dashfloat.permissions import SourcedRule, parse_rule


def setup(tmp_path: Path, user: str | None, project: str | None) -> tuple[dict[str, str], Path, Path, Path]:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "HOME": str(tmp_path)}
    user_file = tmp_path / "cfg" / "dashfloat" / "permissions.toml"
    work = tmp_path / "work"
    project_file = work / PROJECT_PERMISSIONS
    project_file.parent.mkdir(parents=True)
    if user is not None:
        user_file.parent.mkdir(parents=True)
        user_file.write_text(user)
    if project is not None:
        project_file.write_text(project)
    return env, work, user_file, project_file


def test_user_allow_and_deny_then_project_deny(tmp_path: Path) -> None:
    env, work, user_file, project_file = setup(
        tmp_path,
        'allow = ["execute_command(npm test)", "edit_file"]\ndeny = ["execute_command(git push)"]\n',
        'deny = ["write_file(secrets/*)"]\n',
    )
    rules = load_rules(env, str(work))
    assert [(r.rule.text(), r.effect, r.source) for r in rules] == [
        ("execute_command(npm test)", "allow", str(user_file)),
        ("edit_file", "allow", str(user_file)),
        ("execute_command(git push)", "deny", str(user_file)),
        ("write_file(secrets/*)", "deny", str(project_file)),
    ]


def test_a_project_allow_rule_is_refused_naming_the_file(tmp_path: Path) -> None:
    env, work, _, project_file = setup(tmp_path, None, 'allow = ["execute_command(make)"]\n')
    with pytest.raises(ConfigError) as caught:
        load_rules(env, str(work))
    assert str(caught.value).startswith(f"{project_file}: allow: a project file may only add deny rules")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('allow = ["execute_command(bash -c x)"]', "allow: 'execute_command(bash -c x)': 'bash -c x' cannot be"),
        ('deny = ["nope"]', "deny: 'nope': unknown tool 'nope'"),
        ("allow = 3", "allow: expected a list of rule strings"),
        ('alow = ["edit_file"]', "alow: unknown field"),
        ("allow = [", "(file): not valid TOML"),
    ],
)
def test_a_malformed_user_rule_names_file_rule_and_problem(tmp_path: Path, text: str, message: str) -> None:
    env, work, user_file, _ = setup(tmp_path, text, None)
    with pytest.raises(ConfigError) as caught:
        load_rules(env, str(work))
    assert str(caught.value).startswith(f"{user_file}: {message}"), str(caught.value)


def test_more_rules_than_the_bound_are_refused(tmp_path: Path) -> None:
    many = ", ".join('"edit_file"' for _ in range(RULES_MAX + 1))
    env, work, _, _ = setup(tmp_path, f"allow = [{many}]", None)
    with pytest.raises(ConfigError, match=f"more than {RULES_MAX}"):
        load_rules(env, str(work))
    at_bound = ", ".join('"edit_file"' for _ in range(RULES_MAX))
    env, work, _, _ = setup(tmp_path / "b", f"allow = [{at_bound}]", None)
    assert len(load_rules(env, str(work))) == RULES_MAX


def test_saved_rules_round_trip_through_the_file(tmp_path: Path) -> None:
    env, work, user_file, _ = setup(tmp_path, None, None)
    rules = [
        SourcedRule(parse_rule('execute_command(npm run "my task")', "allow"), "allow", str(user_file)),
        SourcedRule(parse_rule("write_file(é/*)", "deny"), "deny", str(user_file)),
    ]
    save_user_rules(user_file, rules)
    assert load_rules(env, str(work)) == rules


def test_the_cli_exits_2_on_a_project_allow_rule(isolated_env: dict[str, str], tmp_path: Path) -> None:
    work = tmp_path / "clone"
    (work / ".dashfloat").mkdir(parents=True)
    (work / PROJECT_PERMISSIONS).write_text('allow = ["execute_command(curl)"]\n')
    result = subprocess.run(
        [sys.executable, "-m", "dashfloat", "--demo", "--cwd", str(work), "-p", "hi"],
        capture_output=True,
        text=True,
        timeout=30,
        env=isolated_env,
    )
    assert result.returncode == 2, result.stderr
    assert "a project file may only add deny rules" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("hostile", ["nested", "fifo", "endless", "too large"])
def test_a_hostile_project_file_is_a_named_error_not_a_hang_or_a_crash(tmp_path: Path, hostile: str) -> None:
    # Found by review: a cloned repository's .dashfloat/permissions.toml nested 50 000 deep was a RecursionError
    # traceback at start, a FIFO hung the start for good, a link to /dev/zero read until memory ran out.
    env, work, _, project_file = setup(tmp_path, None, None)
    match hostile:
        case "nested":
            project_file.write_text("deny = " + "[" * 50_000 + "]" * 50_000 + "\n")
            why = "(file): not valid TOML: nested too deeply"
        case "fifo":
            os.mkfifo(project_file)
            why = "(file): not a regular file"
        case "endless":
            project_file.symlink_to("/dev/zero")
            why = "(file): not a regular file"
        case _:
            project_file.write_text("# " + "x" * TOML_MAX_BYTES + "\n")
            why = f"(file): larger than {TOML_MAX_BYTES} bytes"
    with pytest.raises(ConfigError) as caught:
        load_rules(env, str(work))
    assert str(caught.value) == f"{project_file}: {why}"
