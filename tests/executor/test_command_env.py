"""Every command starts from a filtered environment (ADR 0068): the pure policy as a table and properties, then real
commands, sandboxed (bwrap's own PID 1 included) and not, and a program planted in the workspace's PATH."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashfloat.command_env import (
    SAFE_PATH,
    SECRET_NAME_PARTS,
    UNASKED_ENV_KEEP,
    command_env,
    describe_env,
    is_secret_name,
    outside_path,
)
from dashfloat.executor import detect_sandbox
from dashfloat.executor._sandbox import Sandbox
from dashfloat.executor.path_policy import Root
from dashfloat.permissions import read_only_command
from dashfloat.protocol import SandboxPolicy
from tests.executor.conftest import run_json

TIMEOUT_S = 60.0
SECRETS = {
    "OPENAI_API_KEY": "sk-provider-key",
    "GITHUB_TOKEN": "ghp-token",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "DB_PASSWORD": "hunter2",
    "GOOGLE_APPLICATION_CREDENTIALS": "/creds.json",
    "my_api_key": "lower-case-key",
}


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("PGPASSWORD", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("npm_config__authToken", True),
        ("PATH", False),
        ("HOME", False),
        ("LANG", False),
        ("VIRTUAL_ENV", False),
    ],
)
def test_secret_names_are_told_by_their_parts(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_a_named_variable_passes_through_but_never_the_providers_key() -> None:
    environ = {**SECRETS, "PATH": "/usr/bin", "EDITOR": "vi"}
    env = command_env(
        environ, ["OPENAI_API_KEY"], ["GITHUB_TOKEN", "OPENAI_API_KEY"], unasked=False, workspace="/work/p"
    )
    assert env == {"PATH": "/usr/bin", "EDITOR": "vi", "GITHUB_TOKEN": "ghp-token"}


def test_an_unasked_command_gets_only_where_programs_are_and_how_to_print() -> None:
    environ = {**SECRETS, "PATH": "/usr/bin", "EDITOR": "vi", "LC_ALL": "C", "HOME": "/home/u", "GIT_DIR": "/x"}
    env = command_env(environ, [], ["GITHUB_TOKEN"], unasked=True, workspace="/work/p")
    assert env == {"PATH": "/usr/bin", "LC_ALL": "C", "HOME": "/home/u"}


@pytest.mark.parametrize(
    ("path", "kept"),
    [
        ("/usr/bin:/bin", "/usr/bin:/bin"),
        (".:/usr/bin", "/usr/bin"),
        ("bin:node_modules/.bin:/usr/bin", "/usr/bin"),
        ("/usr/bin::/bin:", "/usr/bin:/bin"),
        ("/work/p/bin:/usr/bin", "/usr/bin"),
        ("/work/p:/usr/bin", "/usr/bin"),
        ("/work/project-other/bin:/usr/bin", "/work/project-other/bin:/usr/bin"),
        ("/usr/bin:/usr/bin", "/usr/bin:/usr/bin"),
        (".", SAFE_PATH),
        ("", SAFE_PATH),
    ],
)
def test_path_entries_the_workspace_could_choose_are_dropped(path: str, kept: str) -> None:
    assert outside_path(path, "/work/p") == kept


def test_a_path_entry_linking_into_the_workspace_is_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "ws" / "bin").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "ws" / "bin")
    assert outside_path(f"{tmp_path}/link:/usr/bin", str(tmp_path / "ws")) == "/usr/bin"


names = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=24)


@given(st.dictionaries(names, st.text(max_size=8), max_size=20), st.lists(names, max_size=4), st.booleans())
def test_no_secret_named_variable_leaves_unless_passed_and_never_a_hidden_one(
    environ: dict[str, str], passed: list[str], unasked: bool
) -> None:
    hidden = [name for name in environ if name.endswith("KEY")][:2]
    env = command_env(environ, hidden, passed, unasked=unasked, workspace="/w")
    for name, value in env.items():
        assert name not in hidden
        assert not is_secret_name(name) or name in passed
        if unasked:
            assert name in UNASKED_ENV_KEEP or name.startswith("LC_")
        if name != "PATH":
            assert environ[name] == value
    for name in environ:  # nothing harmless is lost to an approved command
        if not unasked and not is_secret_name(name) and name not in hidden:
            assert name in env


def test_status_says_what_is_left_out_and_passed() -> None:
    line = describe_env(["OPENAI_API_KEY"], ["GITHUB_TOKEN", "OPENAI_API_KEY"])
    assert all(part in line for part in SECRET_NAME_PARTS)
    assert "passed through ([sandbox] pass_env): GITHUB_TOKEN;" in line
    assert line.endswith("never passed (the provider's key): OPENAI_API_KEY")
    assert "pass_env: none" in describe_env([], [])


# ---------------------------------------------------------------- real commands


@pytest.fixture
def fixed(root: Path) -> Iterator[Root]:
    r = Root(str(root))
    yield r
    r.close()


@pytest.fixture
def secrets_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def session(mode: Any, pass_env: list[str] | None = None) -> Sandbox:
    state = detect_sandbox(mode, False, [], os.environ, hide_env=["OPENAI_API_KEY"])
    if mode != "off":
        assert not state.unavailable, state.unavailable
    return Sandbox.for_session(msgspec.structs.replace(state, pass_env=pass_env or []), os.environ)


def run(r: Root, command: str, sandbox: Sandbox, **policy: Any) -> str:
    result = run_json("execute_command", {"command": command}, r, TIMEOUT_S, None, sandbox, SandboxPolicy(**policy))
    assert result["ok"], result
    output: str = result["output"]
    return output


@pytest.mark.usefixtures("secrets_set")
@pytest.mark.parametrize("mode", ["workspace-write", "off"])
def test_an_approved_command_and_the_sandboxs_pid_1_hold_no_secret(fixed: Root, mode: str) -> None:
    # PID 1 in the sandbox is bwrap itself: --unsetenv cleaned only its child, so the key was in /proc/1/environ.
    output = run(fixed, "env; tr '\\0' '\\n' </proc/1/environ; echo done", session(mode))
    assert output.rstrip().endswith("done")
    for value in SECRETS.values():
        assert value not in output
    assert "PATH=" in output


@pytest.mark.usefixtures("secrets_set")
def test_a_passed_variable_reaches_the_command_but_the_providers_key_never(fixed: Root) -> None:
    output = run(fixed, "env", session("workspace-write", ["GITHUB_TOKEN", "OPENAI_API_KEY"]))
    assert "GITHUB_TOKEN=ghp-token" in output
    assert "sk-provider-key" not in output


def _plant(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for program in ("cat", "git", "ls"):
        fake = path / program
        fake.write_text("#!/bin/sh\necho PLANTED-PROGRAM-RAN\n")
        fake.chmod(fake.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.mark.parametrize("entry", ["bin", ".", "", "ABSOLUTE"])
def test_an_unasked_command_never_runs_a_program_planted_in_the_workspace(
    fixed: Root, root: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    _plant(root / "bin")
    _plant(root)
    (root / "notes.txt").write_text("plain notes\n")
    first = str(root / "bin") if entry == "ABSOLUTE" else entry
    monkeypatch.setenv("PATH", f"{first}:{os.environ['PATH']}")
    line = read_only_command("cat notes.txt")
    assert line is not None
    output = run(fixed, line, session("workspace-write"), mode="read-only", private_home=True)
    assert output == "plain notes\n"
    # The same PATH for a command a person approved is theirs to keep (ADR 0068): the plant runs there.
    assert "PLANTED-PROGRAM-RAN" in run(fixed, "cat notes.txt", session("workspace-write"))
