"""A sandboxed stdio MCP server is confined as a command is (ADR 0086): its bwrap line is the commands' own, so the
workspace is the executor's held root, its git hooks, config and info are read-only, and under --network registries
it reaches the registries through the proxy. Real hosts, real servers, real bwrap, run as root."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from dashfloat.executor import detect_sandbox
from dashfloat.executor._mcp_link import McpLink, describe_server, server_argv
from dashfloat.executor._sandbox import Sandbox
from dashfloat.executor.path_policy import Root
from dashfloat.mcp._host import StderrTail
from dashfloat.mcp_launch import LAUNCH_FAILED_EXIT, launch_fds
from dashfloat.protocol import CommandLimits, McpServerConfig
from dashfloat.sandbox_access import with_access
from tests.mcp.test_servers import FAIL_SERVER, Driver, sandbox
from tests.python_in_sandbox import needs_python_in_sandbox

pytestmark = needs_python_in_sandbox

HOOK = ".git/hooks/pre-commit"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    (tmp_path / "outside").mkdir()
    return path


def plant(link: McpLink, where: str = ".") -> dict[str, str]:
    """The fail server's ``plant`` tool, its report as a dict (path → what happened; "note": what DashFloat added)."""
    result = Driver(link).tool("mcp__fail__plant", where=where)
    assert not result.is_error, result.text
    report, _, note = result.text.partition("\n")
    said = dict(part.split(": ", 1) if ": " in part else part.split("=", 1) for part in report.split("; "))
    return {**said, "note": note}


def test_a_sandboxed_server_cannot_plant_git_hooks_or_config_and_writes_the_workspace(repo: Path) -> None:
    config_before = (repo / ".git" / "config").read_bytes()
    link = McpLink([McpServerConfig("fail", sys.executable, [FAIL_SERVER])], sandbox(), Root(str(repo)))
    link.start()
    try:
        said = plant(link)
    finally:
        link.stop()
    assert os.geteuid() == 0  # the case that matters: root in the sandbox, with every capability dropped
    assert said["cwd"] == str(repo)
    assert said[HOOK] == said[".git/config"] == said[".git/info/attributes"] == "Read-only file system", said
    assert said[".git/hooks"] == "Device or resource busy", said  # a mount point: not moved away and replaced
    assert said["planted.txt"] == said[".git/commondir"] == "written"  # nothing can stop a commondir's creation …
    assert said["note"] == (  # … so it is removed once the call is over, as after a command
        "[DashFloat removed .git/commondir: an MCP server wrote it, and git would have taken the repository's hooks "
        "and config from where it points at your next git command]"
    )
    assert not (repo / ".git" / "commondir").exists()
    assert not (repo / HOOK).exists() and (repo / ".git" / "config").read_bytes() == config_before
    assert (repo / "planted.txt").exists() and (repo / ".git" / "hooks").is_dir()


def test_a_server_unsandboxed_by_config_is_not_confined(repo: Path) -> None:
    """The contrast that shows the test above measures the sandbox: ``sandbox = false`` plants both."""
    config = McpServerConfig("fail", sys.executable, [FAIL_SERVER], sandbox=False)
    link = McpLink([config], sandbox(), Root(str(repo)))
    link.start()
    try:
        said = plant(link, str(repo))  # it runs where the executor runs, not in the workspace
    finally:
        link.stop()
    assert said[HOOK] == said[".git/config"] == "written"


def test_calls_after_the_working_directory_is_swapped_are_refused_as_commands_are(repo: Path) -> None:
    outside = repo.parent / "outside"
    link = McpLink([McpServerConfig("fail", sys.executable, [FAIL_SERVER])], sandbox(), Root(str(repo)))
    link.start()
    try:
        assert Driver(link).tool("mcp__fail__echo", text="up").text == "up"  # started in the held directory
        repo.rename(repo.parent / "repo.old")
        repo.symlink_to(outside)  # the attack: `mv proj proj.old && ln -s ../outside proj`
        refused = Driver(link).tool("mcp__fail__plant")
        assert refused.is_error
        assert f"the working directory {repo} was replaced by a symlink since DashFloat started" in refused.text
        assert "no tool reads or writes anything until DashFloat is restarted" in refused.text
    finally:
        link.stop()
    assert list(outside.iterdir()) == []
    relinked = McpLink([McpServerConfig("fail", sys.executable, [FAIL_SERVER])], sandbox(), Root(str(repo)))
    assert relinked.root.path == str(outside)  # a new session follows the link: its own held root, not the old one


def test_a_server_started_after_the_swap_works_in_the_held_directory_not_the_new_path(repo: Path) -> None:
    """Built, then swapped before the host starts it (a lazy server): bwrap binds the held descriptor, which the
    host hands the launcher over the server's stderr socket exactly as it does for every sandboxed server."""
    outside = repo.parent / "outside"
    root = Root(str(repo))
    config = McpServerConfig("s", "/bin/sh", ["-c", "touch made-by-server; pwd"])
    command, args, wrap = server_argv(config, sandbox(), root)
    assert wrap is not None and ["--bind-fd", str(root.fd), str(repo)] == args[args.index("--bind-fd") :][:3]
    assert ["--bind", str(repo), str(repo)] != args[args.index("--bind") :][:3] if "--bind" in args else True
    assert "--ro-bind-fd" in args and "--cap-drop" in args and "--json-status-fd" not in args
    repo.rename(repo.parent / "repo.old")
    repo.symlink_to(outside)
    fds = launch_fds(args, {root.fd, *wrap.fds})
    assert fds == [root.fd, *wrap.fds]
    tail = StderrTail(fds)
    with tail.file:  # closed here as the host closes its copy once the server runs
        done = subprocess.run([command, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=tail.file)
    del wrap
    assert done.returncode == 0, tail.text()
    assert done.stdout.decode().strip() == str(repo)  # its path, inside: the held directory is mounted there
    assert (repo.parent / "repo.old" / "made-by-server").exists()
    assert list(outside.iterdir()) == []
    root.close()


def test_a_launcher_that_does_not_get_its_descriptors_runs_nothing(repo: Path) -> None:
    root = Root(str(repo))
    config = McpServerConfig("s", "/bin/sh", ["-c", "touch made-by-server"])
    command, args, wrap = server_argv(config, sandbox(), root)
    assert wrap is not None
    assert launch_fds(args, {root.fd}) == []  # the host holds only some: it hands over none
    assert launch_fds(["-I", "-S", "-c", "print(1)", "--dashfloat-fds=3"], {3}) == []  # not our launcher
    assert launch_fds(["server.py"], {3}) == []
    done = subprocess.run([command, *args], stdin=subprocess.DEVNULL, capture_output=True)
    assert done.returncode == LAUNCH_FAILED_EXIT
    assert b"the sandbox's descriptors did not arrive: the MCP server was not started" in done.stderr
    assert not (repo / "made-by-server").exists()
    del wrap
    root.close()


@pytest.fixture
def registries_sandbox() -> Iterator[Sandbox]:
    environ = dict(os.environ)
    state = with_access(detect_sandbox("workspace-write", False, [], environ), "registries", [], [], [], [], environ)
    boxed = Sandbox.for_session(state, environ)
    assert boxed.proxy is not None
    yield boxed
    boxed.close()


def test_under_network_registries_a_server_gets_the_proxy_as_a_command_does(
    repo: Path, registries_sandbox: Sandbox
) -> None:
    config = McpServerConfig("fail", sys.executable, [FAIL_SERVER])
    assert describe_server(config, registries_sandbox) == "sandboxed (workspace-write, registries only (proxy))"
    link = McpLink([config], registries_sandbox, Root(str(repo)))
    link.start()
    try:
        said = plant(link)
        whoami = Driver(link).tool("mcp__fail__whoami").text
    finally:
        link.stop()
    assert said["proxy"] == "http://127.0.0.1:3128 listening"
    assert "interfaces=lo " in whoami  # its own namespace: the proxy is its only way out
    assert said[HOOK] == "Read-only file system"


def test_network_on_gives_a_server_the_network_and_no_proxy(repo: Path) -> None:
    boxed = sandbox()
    state = msgspec.structs.replace(boxed.state, network=True, network_mode="on")
    link = McpLink(
        [McpServerConfig("fail", sys.executable, [FAIL_SERVER])], Sandbox(state, boxed.bwrap), Root(str(repo))
    )
    link.start()
    try:
        said = plant(link)
        interfaces = Driver(link).tool("mcp__fail__whoami").text.split("interfaces=")[1].split()[0]
    finally:
        link.stop()
    assert said["proxy"].startswith("- ")
    assert interfaces == ",".join(sorted(name for _, name in socket.if_nameindex()))  # the host's


def test_a_server_writes_a_file_up_to_the_commands_file_bound_and_not_past_it(repo: Path) -> None:
    boxed = sandbox()
    state = msgspec.structs.replace(boxed.state, limits=CommandLimits(max_file_mib=1))  # [limits] max_file_mib
    config = McpServerConfig("fail", sys.executable, [FAIL_SERVER])
    link = McpLink([config], Sandbox(state, boxed.bwrap), Root(str(repo)))
    link.start()
    try:
        at_bound = Driver(link).tool("mcp__fail__fill", size=2**20).text
        past_bound = Driver(link).tool("mcp__fail__fill", size=2**20 + 1).text
    finally:
        link.stop()
    assert (at_bound, past_bound) == ("written", "File too large")
