"""``python -m dashfloat.executor`` as a real subprocess: JSON lines in and out, bad lines answered."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import msgspec
import psutil
import pytest

from dashfloat.executor import EXEC_TIMEOUT_S
from dashfloat.executor._sandbox import Sandbox
from dashfloat.executor._standalone import Interrupts, Session, handle_line, session_sandbox
from dashfloat.executor.path_policy import Root
from tests.e2e import wait_for
from tests.executor.conftest import REPO


def standalone(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "dashfloat.executor", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=False,
    )


def test_session(root: Path) -> None:
    (root / "a.txt").write_text("hello\n")
    lines = [
        '{"id": "1", "name": "read_file", "args": {"path": "a.txt"}}',
        "not json",
        '{"id": "2", "name": "read_file"}',
        "[1, 2]",
        "",
        '{"id": "3", "args": {}}',
        '{"id": "4", "name": "execute_command", "args": {"command": "sleep 5"}}',
        '{"id": "5", "name": "write_file", "args": {"path": "b.txt", "content": "new"}}',
    ]
    done = standalone("--cwd", str(root), "--exec-timeout", "0.3", stdin="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    out = [msgspec.json.decode(line) for line in done.stdout.splitlines()]
    assert len(out) == 7  # the blank line is skipped
    assert out[0]["id"] == "1" and out[0]["result"]["content"] == "hello\n"
    assert out[1]["id"] is None and out[1]["result"]["error"].startswith("not a JSON line")
    assert out[2] == {
        "id": "2",
        "result": {"ok": False, "error": "read_file: missing required parameter path"},
    }
    assert out[3]["id"] is None and out[3]["result"]["error"].startswith('expected {"id": str')
    assert out[4]["id"] == "3" and "name" in out[4]["result"]["error"]
    assert out[5]["result"]["error"] == "timed out after 0.3s"
    assert out[6]["result"] == {"ok": True, "path": "b.txt", "bytes": 3, "created": True}
    assert (root / "b.txt").read_text() == "new"


def test_help_and_bad_arguments(root: Path) -> None:
    helped = standalone("--help")
    assert helped.returncode == 0
    assert "--cwd" in helped.stdout and '{"id": "1", "name": "read_file"' in helped.stdout
    assert f"default {EXEC_TIMEOUT_S:g}" in helped.stdout
    words = " ".join(helped.stdout.split())
    assert "--sandbox MODE" in words and "config [sandbox] mode, else workspace-write" in words and "--network" in words
    assert '"sandbox": {"mode": "read-only", "private_home": true}' in words  # a call's own policy, documented
    assert standalone().returncode == 2  # --cwd is required
    assert standalone("--cwd", str(root / "missing")).returncode == 2


def test_deeply_nested_and_overlong_lines_are_answered_and_serving_goes_on(root: Path) -> None:
    from dashfloat.executor._limits import STANDALONE_LINE_MAX_BYTES

    (root / "a.txt").write_text("hi\n")
    overlong = "x" * (STANDALONE_LINE_MAX_BYTES + 10)
    lines = ["[" * 100_000, overlong, '{"id": "ok", "name": "read_file", "args": {"path": "a.txt"}}']
    done = standalone("--cwd", str(root), stdin="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    out = [msgspec.json.decode(line) for line in done.stdout.splitlines()]
    assert "nested too deeply" in out[0]["result"]["error"]
    assert "longer than" in out[1]["result"]["error"]
    assert out[2]["id"] == "ok" and out[2]["result"]["content"] == "hi\n"


@pytest.fixture
def session(root: Path) -> Iterator[Session]:
    """An in-process session over ``root``, unsandboxed (the subprocess tests cover the sandbox)."""
    fixed = Root(str(root), launch_real=True)
    yield Session(fixed, Sandbox(), EXEC_TIMEOUT_S)
    fixed.close()


def commands_with(marker: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        if marker in " ".join(process.info["cmdline"] or []) and process.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(process)
    return found


def test_ctrl_c_that_lands_before_the_command_is_watched_still_kills_it(session: Session) -> None:
    # The race the pty test found under load: Ctrl-C after the call began but before its output was watched.
    # Delivered at the earliest moment (already pending when the command starts), it must still kill it.
    marker = uuid.uuid4().hex
    interrupts = Interrupts()
    line = json.dumps({"id": "1", "name": "execute_command", "args": {"command": f"sleep 301 # {marker}"}})
    original = signal.signal(signal.SIGINT, interrupts.on_sigint)
    try:
        with pytest.raises(KeyboardInterrupt), interrupts.call():
            os.kill(os.getpid(), signal.SIGINT)  # a byte on the pipe, not a raise: a call is running
            handle_line(line.encode(), session, interrupts)
    finally:
        signal.signal(signal.SIGINT, original)
    # SIGKILLed at once; gone from the process table when the kernel has done it (a loaded machine takes a while)
    assert wait_for(lambda: not commands_with(marker)), commands_with(marker)
    assert not interrupts.pending()


def test_ctrl_c_during_a_call_that_is_no_command_stops_after_it_answers(root: Path, session: Session) -> None:
    (root / "a.txt").write_text("hello\n")
    interrupts = Interrupts()
    line = json.dumps({"id": "1", "name": "read_file", "args": {"path": "a.txt"}}).encode()
    with pytest.raises(KeyboardInterrupt), interrupts.call():
        interrupts.on_sigint(signal.SIGINT, None)
        assert b"hello" in handle_line(line, session)
    with pytest.raises(KeyboardInterrupt):
        interrupts.on_sigint(signal.SIGINT, None)  # between calls: at once


@pytest.mark.parametrize(
    "flags",
    [
        (),
        ("--network",),
        ("--sandbox", "off"),
        ("--sandbox", "workspace-write"),
        ("--sandbox", "read-only", "--network"),
    ],
)
def test_the_sandbox_is_the_one_dashfloat_builds_from_the_same_flags_and_config(
    tmp_path: Path, flags: tuple[str, ...]
) -> None:
    # The guard against drift: launch.prepare and session_sandbox read the same config; a field one of them
    # starts to set and the other does not fails here (ADR 0069).
    from dashfloat.cli import parse_args
    from dashfloat.launch import prepare

    config = tmp_path / "cfg" / "dashfloat" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f'default_provider = "local"\n\n[sandbox]\nmode = "read-only"\ndeny_read = ["{tmp_path}/secrets"]\n'
        'pass_env = ["MY_TOKEN", "MY_TOKEN"]\n\n[limits]\nmax_processes = 500\nmax_file_mib = 64\n\n'
        '[providers.local]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key_env = "LOCAL_AUTH"\n\n'
        '[providers.other]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key_env = "OTHER_AUTH"\n'
    )
    (tmp_path / "secrets").mkdir()
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "XDG_STATE_HOME": str(tmp_path / "state")}
    served = prepare(parse_args([*flags, "-p", "hi"]), str(tmp_path), env).options.sandbox
    mode = flags[flags.index("--sandbox") + 1] if "--sandbox" in flags else None
    ours = session_sandbox(mode, "--network" in flags, env)  # type: ignore[arg-type]  # one of the choices
    assert ours == served
    assert {"LOCAL_AUTH", "OTHER_AUTH"} <= set(ours.hide_env) and ours.pass_env == ["MY_TOKEN"]
    assert ours.mode == (mode or "read-only") and ours.limits.max_processes == 500
