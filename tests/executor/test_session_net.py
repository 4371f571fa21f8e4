"""The session's network namespace (issue 36, ADR 0080): real bwrap, real sockets, the holder checked by pid."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from dashfloat.executor._sandbox import Sandbox, bwrap_binary
from dashfloat.executor._sandbox_probe import detect
from dashfloat.executor._session_net import SessionNet, SessionNetError, close_session_net, session_net, why_not
from dashfloat.executor._tools import run
from dashfloat.executor.path_policy import Root
from dashfloat.protocol import CommandExited, ExecuteCommandArgs, SandboxPolicy
from tests.e2e import wait_for


@pytest.fixture
def net() -> Iterator[SessionNet]:
    made = SessionNet(bwrap_binary(os.environ))
    yield made
    made.close()


def _listener_source(port_file: str) -> str:
    return (
        "import socket,sys\n"
        "s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen()\n"
        f"open({port_file!r},'w').write(str(s.getsockname()[1]))\n"
        "c,_=s.accept(); c.sendall(b'hello from the session'); c.close()\n"
    )


def test_a_helper_run_inside_listens_on_the_sessions_loopback_only(net: SessionNet, tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    helper = net.run_inside([sys.executable, "-c", _listener_source(str(port_file))], start_new_session=True)
    try:
        assert wait_for(lambda: port_file.exists() and port_file.read_text() != "", 10)
        port = int(port_file.read_text())
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # the host's loopback is another namespace
        reach = f"import socket; print(socket.create_connection(('127.0.0.1', {port})).recv(100).decode())"
        with net.inside():  # what every sandboxed command of the session gets
            reached = subprocess.run([sys.executable, "-c", reach], capture_output=True, text=True, timeout=10)
        assert reached.stdout == "hello from the session\n", reached.stderr
    finally:
        helper.kill()
        helper.wait()


def test_the_holder_goes_with_close_and_the_executor_thread_is_back_home(net: SessionNet) -> None:
    holder, inner = net.holder_pid, net.pid
    home = os.readlink("/proc/thread-self/ns/net")
    with net.inside():
        assert os.readlink("/proc/thread-self/ns/net") == os.readlink(f"/proc/{inner}/ns/net") != home
    assert os.readlink("/proc/thread-self/ns/net") == home
    assert net.alive()
    net.close()
    assert not psutil.pid_exists(holder) and not net.alive()
    assert wait_for(lambda: not psutil.pid_exists(inner), 10)


def test_a_non_root_executor_enters_through_nsenter(net: SessionNet) -> None:
    """The shape only: the machines that test run as root (ADR 0080 says what is untested)."""
    assert net.argv_prefix() == [] if net.root else net.argv_prefix()[0].endswith("nsenter")
    net.root, net._nsenter = False, "/usr/bin/nsenter"
    ns = f"/proc/{net.pid}/ns"
    assert net.argv_prefix() == [
        "/usr/bin/nsenter",
        "--preserve-credentials",
        f"--user={ns}/user",
        f"--net={ns}/net",
        "--",
    ]
    with net.inside():  # a non-root thread is not moved: nsenter moves the child
        assert os.readlink("/proc/thread-self/ns/net") != os.readlink(f"/proc/{net.pid}/ns/net")


def test_a_holder_that_cannot_start_is_said_and_commands_keep_a_namespace_each(tmp_path: Path) -> None:
    with pytest.raises(SessionNetError):
        SessionNet("/bin/false")
    close_session_net()
    assert session_net("/bin/false") is None and "holder did not start" in why_not()
    close_session_net()
    assert why_not() == ""


def test_two_commands_of_a_session_share_a_loopback(tmp_path: Path) -> None:
    """Sandboxed, without the network: the second command reaches what the first one left listening (a server in the
    background of its own shell would die with it, so the listener here is a job-like helper of the session)."""
    close_session_net()
    sandbox = Sandbox.for_session(detect("workspace-write", False, [], os.environ), os.environ)
    root = Root(str(tmp_path))
    try:
        first = run(ExecuteCommandArgs(command="cat /proc/self/net/tcp >/dev/null; readlink /proc/self/ns/net"), root,
                    sandbox=sandbox, policy=SandboxPolicy())  # fmt: skip
        second = run(ExecuteCommandArgs(command="readlink /proc/self/ns/net"), root, sandbox=sandbox,
                     policy=SandboxPolicy())  # fmt: skip
        networked = run(ExecuteCommandArgs(command="readlink /proc/self/ns/net"), root, sandbox=sandbox,
                        policy=SandboxPolicy(network=True))  # fmt: skip
        assert isinstance(first, CommandExited) and isinstance(second, CommandExited)
        assert isinstance(networked, CommandExited)
        assert first.output.output == second.output.output  # one namespace for the session
        assert networked.output.output == os.readlink("/proc/self/ns/net") + "\n"  # approved: the host's, as before
        assert first.output.output != networked.output.output
    finally:
        root.close()
        close_session_net()
