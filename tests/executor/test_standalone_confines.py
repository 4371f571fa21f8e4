"""``python -m dashfloat.executor`` confines as the served executor does: the root anchored once at start, commands
in the session's sandbox (``--sandbox``, ``--network``, config ``[sandbox]`` and ``[limits]``), a start line saying so.
Real processes, real trees, real bwrap (ADR 0069)."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from dashfloat.executor._sandbox import BWRAP_ENV
from tests.e2e import isolated_environment, wait_for
from tests.executor.conftest import REPO

START_WAIT_S = 30.0
"""How long a test waits for the executor's start line or a reply: generous, it is never asserted as a timing."""


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A private config directory (no config file unless a test writes one), this checkout importable."""
    return {**isolated_environment(tmp_path), "PYTHONPATH": str(REPO), **extra}


def write_config(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cfg" / "dashfloat" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


class Standalone:
    """One running ``python -m dashfloat.executor``, answering one call at a time."""

    def __init__(self, cwd: Path, *flags: str, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "dashfloat.executor", "--cwd", str(cwd), *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stderr is not None
        # printed before the first line is read; an executor that prints none must fail the test, not hang it
        said = select.select([self.process.stderr], [], [], START_WAIT_S)[0]
        self.start_line = self.process.stderr.readline() if said else ""

    def call(self, name: str, args: dict[str, Any], sandbox: object = None) -> dict[str, Any]:
        """The result of one call (``sandbox``: the line's optional policy field, left out when None)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        line: dict[str, Any] = {"id": "c", "name": name, "args": args}
        if sandbox is not None:
            line["sandbox"] = sandbox
        self.process.stdin.write(json.dumps(line) + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        assert reply, f"no reply; stderr: {self.close()}"
        result: dict[str, Any] = json.loads(reply)["result"]
        return result

    def run(self, command: str, sandbox: object = None) -> dict[str, Any]:
        return self.call("execute_command", {"command": command}, sandbox)

    def close(self) -> str:
        """Stdin closed (EOF): it exits 0; what else it wrote to stderr."""
        _, stderr = self.process.communicate(timeout=START_WAIT_S)
        assert self.process.returncode == 0, stderr
        return stderr


@pytest.fixture
def session() -> Iterator[list[Standalone]]:
    """The sessions a test starts; any still running at its end are stopped."""
    started: list[Standalone] = []
    yield started
    for one in started:
        if one.process.poll() is None:
            one.process.kill()
        one.process.communicate(timeout=START_WAIT_S)


def start(started: list[Standalone], cwd: Path, *flags: str, env: dict[str, str]) -> Standalone:
    one = Standalone(cwd, *flags, env=env)
    started.append(one)
    return one


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A directory outside the workspace and outside /tmp (the sandbox's /tmp is private, so /tmp cannot show a
    refused write): in /var/tmp, read-only in the sandbox like the rest of the file system."""
    path = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="dashfloat-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def host_tmp_file() -> Iterator[Path]:
    """A file in the host's /tmp itself, which a sandboxed command must not see."""
    path = Path("/tmp") / f"dashfloat-test-{uuid.uuid4().hex}"
    path.write_text("host tmp\n")
    yield path
    path.unlink(missing_ok=True)


# ------------------------------------------------------------------------------------------------ the root


def test_a_root_swapped_for_a_symlink_mid_session_is_never_followed(
    root: Path, tmp_path: Path, session: list[Standalone]
) -> None:
    (root / "a.txt").write_text("original\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("planted\n")
    one = start(session, root, env=environment(tmp_path))
    assert one.call("read_file", {"path": "a.txt"})["content"] == "original\n"
    moved = tmp_path / "moved"
    os.rename(root, moved)
    root.symlink_to(other)  # the path now names another directory
    results = [
        one.call("read_file", {"path": "a.txt"}),
        one.call("write_file", {"path": "b.txt", "content": "x"}),
        one.call("list_directory", {"path": "."}),
        one.run("cat a.txt; echo x > c.txt"),
    ]
    for result in results:
        assert result["ok"] is False and "was replaced by a symlink since DashFloat started" in result["error"], result
        assert "planted" not in json.dumps(result)
    assert sorted(os.listdir(other)) == ["a.txt"] and (other / "a.txt").read_text() == "planted\n"
    assert sorted(os.listdir(moved)) == ["a.txt"]
    one.close()


def test_a_cwd_given_through_a_symlink_is_resolved_once_at_start(
    root: Path, tmp_path: Path, session: list[Standalone]
) -> None:
    (root / "a.txt").write_text("original\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("planted\n")
    link = tmp_path / "link"
    link.symlink_to(root)
    one = start(session, link, env=environment(tmp_path))
    assert str(root) in one.start_line  # the directory it anchored, not the link
    repointed = tmp_path / "link.new"
    repointed.symlink_to(other)
    os.replace(repointed, link)  # the link now names another directory
    assert one.call("read_file", {"path": "a.txt"})["content"] == "original\n"
    assert one.call("write_file", {"path": "b.txt", "content": "x"})["ok"] is True
    assert [e["name"] for e in one.call("list_directory", {"path": "."})["entries"]] == ["a.txt", "b.txt"]
    ran = one.run("cat a.txt; echo y > c.txt; pwd")
    assert ran["ok"] is True and ran["output"] == f"original\n{root}\n", ran
    assert sorted(os.listdir(root)) == ["a.txt", "b.txt", "c.txt"]
    assert sorted(os.listdir(other)) == ["a.txt"]
    one.close()


# ------------------------------------------------------------------------------------------------ the sandbox


def test_by_default_a_command_cannot_write_outside_the_cwd_and_has_a_private_tmp(
    root: Path, tmp_path: Path, outside_tmp: Path, host_tmp_file: Path, session: list[Standalone]
) -> None:
    made_in_tmp = Path("/tmp") / f"dashfloat-test-{uuid.uuid4().hex}"
    one = start(session, root, env=environment(tmp_path))
    ran = one.run(f"echo x > {outside_tmp}/w.txt; echo y > inside.txt; echo z > {made_in_tmp}; cat {host_tmp_file}")
    assert ran["ok"] is False and "Read-only file system" in ran["output"], ran
    assert "host tmp" not in ran["output"] and "No such file" in ran["output"]
    assert not (outside_tmp / "w.txt").exists() and not made_in_tmp.exists()
    assert (root / "inside.txt").read_text() == "y\n"
    one.close()


def test_sandbox_off_writes_outside_and_sees_the_hosts_tmp(
    root: Path, tmp_path: Path, outside_tmp: Path, host_tmp_file: Path, session: list[Standalone]
) -> None:
    one = start(session, root, "--sandbox", "off", env=environment(tmp_path))
    ran = one.run(f"echo x > {outside_tmp}/w.txt; cat {host_tmp_file}")
    assert ran["ok"] is True and ran["output"] == "host tmp\n", ran
    assert (outside_tmp / "w.txt").read_text() == "x\n"
    one.close()


def test_read_only_cannot_write_the_cwd(root: Path, tmp_path: Path, session: list[Standalone]) -> None:
    (root / "a.txt").write_text("kept\n")
    one = start(session, root, "--sandbox", "read-only", env=environment(tmp_path))
    ran = one.run("cat a.txt; echo x > made.txt; echo x > a.txt")
    assert ran["ok"] is False and ran["output"].startswith("kept\n") and "Read-only file system" in ran["output"], ran
    assert sorted(os.listdir(root)) == ["a.txt"] and (root / "a.txt").read_text() == "kept\n"
    one.close()


def test_a_bad_sandbox_value_is_a_usage_error(root: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dashfloat.executor", "--cwd", str(root), "--sandbox", "bogus"],
        capture_output=True,
        text=True,
        timeout=START_WAIT_S,
        env=environment(tmp_path),
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert "argument --sandbox: invalid choice: 'bogus'" in done.stderr, done.stderr
    assert "workspace-write" in done.stderr and "read-only" in done.stderr and "off" in done.stderr


WORKSPACE_WRITES = "working directory (not .git's hooks, config, info) + private /tmp"


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (
            (),
            f"sandbox workspace-write (writes: {WORKSPACE_WRITES}; network: registries only (proxy))",
        ),
        (("--network",), f"sandbox workspace-write (writes: {WORKSPACE_WRITES}; network: allowed)"),
        (
            ("--sandbox", "read-only"),
            "sandbox read-only (writes: private /tmp only; network: registries only (proxy))",
        ),
        (("--sandbox", "off"), "not sandboxed (--sandbox off): runs with your full permissions"),
    ],
)
def test_the_start_line_says_what_confines_commands(
    root: Path, tmp_path: Path, session: list[Standalone], flags: tuple[str, ...], said: str
) -> None:
    one = start(session, root, *flags, env=environment(tmp_path))
    assert said in one.start_line, one.start_line
    assert one.start_line.count("\n") == 1
    assert one.close() == ""  # one line, nothing more


def test_network_is_the_sessions_unless_the_call_asks(root: Path, tmp_path: Path, session: list[Standalone]) -> None:
    host = os.readlink("/proc/self/ns/net")
    plain = start(session, root, env=environment(tmp_path))
    assert plain.run("readlink /proc/self/ns/net")["output"] != f"{host}\n"
    assert plain.run("readlink /proc/self/ns/net", {"network": True})["output"] == f"{host}\n"
    plain.close()
    networked = start(session, root, "--network", env=environment(tmp_path))
    assert networked.run("readlink /proc/self/ns/net")["output"] == f"{host}\n"
    networked.close()


def test_a_machine_that_cannot_sandbox_says_so_and_a_mode_named_by_flag_refuses_to_start(
    root: Path, tmp_path: Path, outside_tmp: Path, session: list[Standalone]
) -> None:
    env = environment(tmp_path, **{BWRAP_ENV: "/nonexistent/bwrap"})
    one = start(session, root, env=env)
    assert "NOT sandboxed (cannot run bwrap:" in one.start_line, one.start_line
    assert "runs with your full permissions" in one.start_line
    assert one.run(f"echo x > {outside_tmp}/w.txt")["ok"] is True  # it said so, and runs as the served one does
    one.close()
    for mode in ("workspace-write", "read-only"):
        done = subprocess.run(
            [sys.executable, "-m", "dashfloat.executor", "--cwd", str(root), "--sandbox", mode],
            input='{"id": "1", "name": "execute_command", "args": {"command": "touch made"}}\n',
            capture_output=True,
            text=True,
            timeout=START_WAIT_S,
            env=env,
            check=False,
        )
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert f"--sandbox {mode} cannot start: cannot run bwrap" in done.stderr and "--sandbox off" in done.stderr
        assert not (root / "made").exists()


# ------------------------------------------------------------------------------------------------ the config


def test_the_config_gives_the_mode_the_hidden_paths_and_the_limits(
    root: Path, tmp_path: Path, outside_tmp: Path, session: list[Standalone]
) -> None:
    secret = outside_tmp / "secret.txt"
    secret.write_text("the secret\n")
    write_config(
        tmp_path, f'[sandbox]\nmode = "read-only"\ndeny_read = ["{outside_tmp}"]\n\n[limits]\nmax_file_mib = 1\n'
    )
    one = start(session, root, env=environment(tmp_path))
    assert "sandbox read-only" in one.start_line and "[sandbox] mode" in one.start_line, one.start_line
    ran = one.run(f"cat {secret}; echo x > made.txt")
    assert "the secret" not in ran["output"] and not (root / "made.txt").exists(), ran
    big = one.run("head -c 2097152 /dev/zero > /tmp/big")  # the private /tmp is writable: the file limit stops it
    assert big["exit_code"] == 153 and "([limits] max_file_mib in config.toml, RLIMIT_FSIZE" in big["output"], big
    one.close()
    flagged = start(session, root, "--sandbox", "workspace-write", env=environment(tmp_path))
    assert "sandbox workspace-write" in flagged.start_line and "--sandbox" in flagged.start_line  # the flag wins
    assert flagged.run("echo x > made.txt")["ok"] is True and (root / "made.txt").exists()
    flagged.close()


def test_a_config_error_is_a_usage_error(root: Path, tmp_path: Path) -> None:
    write_config(tmp_path, '[sandbox]\nmode = "sometimes"\n')
    done = subprocess.run(
        [sys.executable, "-m", "dashfloat.executor", "--cwd", str(root)],
        capture_output=True,
        text=True,
        timeout=START_WAIT_S,
        env=environment(tmp_path),
        check=False,
    )
    assert done.returncode == 2 and "config.toml: sandbox.mode" in done.stderr, done.stderr


def test_the_providers_keys_are_hidden_and_pass_env_passes_what_it_names(
    root: Path, tmp_path: Path, session: list[Standalone]
) -> None:
    write_config(
        tmp_path,
        '[sandbox]\npass_env = ["MY_TOKEN", "PROVIDER_AUTH_VAR"]\n\n'
        '[providers.local]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key_env = "PROVIDER_AUTH_VAR"\n',
    )
    env = environment(
        tmp_path, OPENAI_API_KEY="sk-standalone", PROVIDER_AUTH_VAR="auth", MY_TOKEN="token", PLAIN_VAR="seen"
    )
    one = start(session, root, env=env)
    ran = one.run('echo "${OPENAI_API_KEY-unset} ${PROVIDER_AUTH_VAR-unset} ${MY_TOKEN-unset} ${PLAIN_VAR-unset}"')
    assert ran["output"] == "unset unset token seen\n", ran  # a provider's key never, whatever pass_env says
    one.close()


# ------------------------------------------------------------------------------------------------ a call's policy


def test_a_call_can_ask_for_the_unasked_commands_policy(root: Path, tmp_path: Path, session: list[Standalone]) -> None:
    unasked = {"mode": "read-only", "private_home": True}
    one = start(session, root, env=environment(tmp_path, PLAIN_VAR="seen"))
    ran = one.run('echo "${PLAIN_VAR-unset}"; echo x > made.txt', unasked)
    assert ran["output"].startswith("unset\n") and "Read-only file system" in ran["output"], ran
    assert not (root / "made.txt").exists()
    assert one.run('echo "${PLAIN_VAR-unset}"; echo x > made.txt')["output"] == "seen\n"  # the default policy
    assert (root / "made.txt").exists()
    one.close()


def test_a_calls_policy_never_widens_the_session(root: Path, tmp_path: Path, session: list[Standalone]) -> None:
    one = start(session, root, "--sandbox", "read-only", env=environment(tmp_path))
    ran = one.run("echo x > made.txt", {"mode": "workspace-write", "network": True})
    assert "Read-only file system" in ran["output"] and not (root / "made.txt").exists(), ran
    one.close()


@pytest.mark.parametrize(
    ("policy", "said"),
    [
        ({"privat_home": True}, "unknown field `privat_home`"),
        ({"mode": "off"}, "Invalid enum value 'off'"),
        ("read-only", "Expected `object | null`, got `str` - at `$.sandbox`"),
    ],
)
def test_a_bad_policy_is_an_error_result_and_nothing_runs(
    root: Path, tmp_path: Path, session: list[Standalone], policy: object, said: str
) -> None:
    one = start(session, root, env=environment(tmp_path))
    result = one.run("touch made", policy)
    assert result["ok"] is False and said in result["error"] and "sandbox" in result["error"], result
    assert not (root / "made").exists()
    one.close()


# ------------------------------------------------------------------------------------------------ at the end


def test_nothing_an_unsandboxed_command_started_outlives_the_executor(
    root: Path, tmp_path: Path, session: list[Standalone]
) -> None:
    marker = uuid.uuid4().hex
    one = start(session, root, "--sandbox", "off", env=environment(tmp_path))
    # It tells when it has left the command's group: the group is killed as the command ends.
    ran = one.run(
        f"setsid sh -c 'touch started; sleep 301; : {marker}' >/dev/null 2>&1 </dev/null &"
        " while [ ! -e started ]; do sleep 0.01; done"
    )
    assert ran["ok"] is True, ran

    def left() -> list[psutil.Process]:
        found = []
        for process in psutil.process_iter(["cmdline", "status"]):
            if marker in " ".join(process.info["cmdline"] or []) and process.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(process)
        return found

    assert wait_for(lambda: bool(left()))  # it escaped the command's group and runs on
    one.close()
    try:
        assert wait_for(lambda: not left()), left()
    finally:
        for process in left():
            process.kill()
