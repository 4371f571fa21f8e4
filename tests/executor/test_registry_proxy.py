"""Issue 35: the registries through the allowlisting proxy, the writable tool caches, what the sandbox refused.

Real processes throughout: local "registries" (HTTP servers on this host's 127.0.0.1, named through the proxy's host
map), the proxy process, real bwrap, real pip. No internet is needed.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import signal
import socket
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from dashfloat.agent import ForkWorkers
from dashfloat.executor import detect_sandbox
from dashfloat.executor._proxy import PROXY_HOSTS_ENV, ProxySupervisor, ProxyUnavailable, host_map
from dashfloat.executor._refused import REFUSAL_PREFIX, REFUSED_PATHS_MAX, Refusal, grant_for, refused_writes
from dashfloat.executor._sandbox import PROXY_PORT, Sandbox
from dashfloat.executor.path_policy import Root
from dashfloat.netproxy._server import HEAD_MAX_BYTES, Proxy, ProxyConfig, Refused, parse_head, split_target
from dashfloat.protocol import (
    CommandStarted,
    ExecuteCommandArgs,
    RunTool,
    SandboxPolicy,
    SandboxState,
    Shutdown,
    ToolFailed,
    ToolFinished,
)
from dashfloat.sandbox_access import (
    DEFAULT_ALLOW_DOMAINS,
    DOMAIN_MAX_CHARS,
    allowed_domains,
    domain_problem,
    host_allowed,
    sandbox_status_lines,
    with_access,
    writable_paths,
    writable_problem,
)
from tests.executor.conftest import gone, run_json
from tests.python_in_sandbox import needs_python_in_sandbox

TIMEOUT_S = 60.0
PYTHON = os.path.realpath(sys.executable)
"""The interpreter itself (the venv may live under /tmp, which the sandbox replaces)."""
REGISTRY = "registry.test"
OTHER = "other.test"


# ---------------------------------------------------------------- pure rules


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("pypi.org", ""),
        ("*.example.org", ""),
        ("10.0.0.1", "is an address"),
        ("::1", "is an address"),
        ("PyPI.org", "upper-case"),
        ("a.*.org", "has a * other"),
        ("localhost", "is not a host name"),
        ("-bad.org", "is not a host name"),
        ("exa mple.org", "characters"),
        ("", "is empty"),
        ("a" * (DOMAIN_MAX_CHARS - 3) + ".org", "longer than"),
    ],
)
def test_allowlist_entries_are_host_names(entry: str, problem: str) -> None:
    found = domain_problem(entry)
    assert (problem in found) if problem else found == ""


def test_a_host_is_let_through_only_by_name_and_deny_wins() -> None:
    allow = allowed_domains(["*.example.org"], ["registry.yarnpkg.com"])
    assert "pypi.org" in allow and "registry.yarnpkg.com" not in allow and "*.example.org" in allow
    assert host_allowed("pypi.org", allow, []) == ""
    assert host_allowed("files.example.org", allow, []) == ""
    assert "not on the sandbox's allowlist" in host_allowed("example.org", allow, [])
    assert "is an address" in host_allowed("151.101.0.223", allow, [])
    assert "is denied" in host_allowed("pypi.org", allow, ["pypi.org"])
    assert set(DEFAULT_ALLOW_DOMAINS) >= {"pypi.org", "registry.npmjs.org", "crates.io", "proxy.golang.org"}


def test_what_can_never_be_writable(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    (tmp_path / "home" / ".cache").mkdir(parents=True)
    (tmp_path / "home" / "bin").mkdir()
    os.symlink(tmp_path / "home" / ".ssh", tmp_path / "home" / ".cache" / "sneaky")
    path_dirs = [f"{home}/bin"]
    assert writable_problem("~/.npm", home, path_dirs) == ""
    assert writable_problem("/opt/cache", home, path_dirs) == ""  # named by the user: outside the home is allowed
    cases = {
        "relative/path": "absolute",
        "~": "whole home",
        "~/.ssh/keys": "credential store",
        "~/.config": "holds ~/.config/gh",
        "~/.bashrc": "start-up file",
        "~/.cache/sneaky": "~/.ssh",
        "~/src/.git/hooks": ".git",
        "~/bin": "PATH directory",
        "/etc": "system directory",
        "/": "holds",  # the home and all in it
        str(tmp_path): "holds",
        "~/.config/dashfloat": "DashFloat's own",
    }
    for path, why in cases.items():
        assert why in writable_problem(path, home, path_dirs), path
    assert "outside the home" in writable_problem("/opt/cache", home, path_dirs, named=False)
    kept, dropped = writable_paths(["npm", "cargo"], ["~/.ssh", "~/.npm"], home, path_dirs)
    assert kept == [f"{home}/.npm", f"{home}/.cargo/registry", f"{home}/.cargo/git"]
    assert dropped == ["~/.ssh is ~/.ssh or inside it: a credential store, a start-up file or DashFloat's own"]


def test_refused_writes_are_read_from_the_error_lines(tmp_path: Path) -> None:
    output = (
        "npm error code EROFS\nnpm error syscall mkdir\nnpm error path /root/.npm/_cacache\n"
        "npm error errno -30\ntouch: cannot touch '/work/ok': Read-only file system\nsee /usr/share/doc for help\n"
        "/bin/sh: 1: cannot create /opt/x: Read-only file system\n"
        "mkdir: cannot create directory ‘/opt/y’: Read-only file system\n"
    )
    assert refused_writes(output, ["/work"]) == ["/root/.npm/_cacache", "/opt/x", "/opt/y"]
    assert refused_writes("all good in /root/.npm\n", []) == []
    many = "".join(f"mkdir: cannot create directory '/opt/d{i}': Permission denied\n" for i in range(5))
    lines = Refusal(paths=refused_writes(many, [])).lines()
    assert lines[0].startswith(REFUSAL_PREFIX) and f"and {5 - REFUSED_PATHS_MAX} more" in lines[0]
    assert grant_for("/root/.npm/_cacache/tmp", "/root") == "/root/.npm"
    assert grant_for("/root/.cache/uv/x", "/root") == "/root/.cache/uv"
    assert grant_for("/opt/cache", "/root") == ""


def test_request_heads_are_parsed_strictly() -> None:
    assert split_target("pypi.org:443", 443) == ("pypi.org", 443)
    assert split_target("[::1]:8080", 80) == ("::1", 8080)
    with pytest.raises(Refused):
        split_target("pypi.org:99999", 443)
    method, host, port, head = parse_head(
        b"GET http://Reg.test:81/a/b HTTP/1.1\r\nHost: reg.test\r\nProxy-Connection: x"
    )
    assert (method, host, port) == ("GET", "reg.test", 81)
    assert head.startswith(b"GET /a/b HTTP/1.1\r\nHost: reg.test\r\nConnection: close") and b"Proxy-" not in head
    with pytest.raises(Refused, match="only CONNECT and http://"):
        parse_head(b"GET /relative HTTP/1.1")
    with pytest.raises(Refused, match="METHOD TARGET VERSION"):
        parse_head(b"garbage")


def test_the_proxy_hosts_map_reads_pairs() -> None:
    assert host_map({PROXY_HOSTS_ENV: "A.test=127.0.0.1, bad ,b.test=::1"}) == {"a.test": "127.0.0.1", "b.test": "::1"}


# ---------------------------------------------------------------- local registries


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def registry(directory: Path) -> Iterator[int]:
    """A static HTTP server over ``directory`` on this host's 127.0.0.1 (what `python -m http.server` serves)."""
    handler = functools.partial(_Quiet, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def registries(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """Two registries: one the allowlist names, one it does not (both on this host's loopback)."""
    (tmp_path / "reg").mkdir()
    (tmp_path / "reg" / "index.html").write_text("listed registry\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "index.html").write_text("unlisted server\n")
    with registry(tmp_path / "reg") as listed, registry(tmp_path / "other") as unlisted:
        yield listed, unlisted


def sandbox_for(env: dict[str, str], network_mode: Any = "registries", presets: list[str] | None = None) -> Sandbox:
    environ = {**os.environ, **env, PROXY_HOSTS_ENV: f"{REGISTRY}=127.0.0.1,{OTHER}=127.0.0.1"}
    state = detect_sandbox("workspace-write", False, [], environ)
    state = with_access(state, network_mode, [REGISTRY], [], presets or [], [], environ)
    return Sandbox.for_session(state, environ)


def fetch(url: str, proxy: bool = True) -> str:
    """A command that fetches ``url`` with Python's urllib (which reads the proxy variables), printing the body."""
    opener = (
        "" if proxy else "urllib.request.install_opener(urllib.request.build_opener(urllib.request.ProxyHandler({})));"
    )
    code = f"import urllib.request;{opener}print(urllib.request.urlopen({url!r}, timeout=20).read().decode())"
    return f'{PYTHON} -c "{code}"'


def test_an_unasked_command_reaches_a_listed_registry_and_not_an_unlisted_one(
    root: Path, registries: tuple[int, int]
) -> None:
    listed, unlisted = registries
    sandbox = sandbox_for({})
    r = Root(str(root))
    try:
        reached = run_json(
            "execute_command",
            {"command": fetch(f"http://{REGISTRY}:{listed}/")},
            r,
            TIMEOUT_S,
            None,
            sandbox,
            SandboxPolicy(),
        )
        assert reached["exit_code"] == 0 and "listed registry" in reached["output"]
        refused = run_json(
            "execute_command",
            {"command": fetch(f"http://{OTHER}:{unlisted}/")},
            r,
            TIMEOUT_S,
            None,
            sandbox,
            SandboxPolicy(),
        )
        assert refused["exit_code"] != 0 and "unlisted server" not in refused["output"]
        assert f"{REFUSAL_PREFIX}{OTHER} is not on the sandbox's allowlist" in refused["output"]
        # CONNECT by host name: a tunnel to the listed one, and an address refused with the reason in the output.
        tunnel = f"curl -sS -p -x http://127.0.0.1:{PROXY_PORT} http://{REGISTRY}:{listed}/"
        through = run_json("execute_command", {"command": tunnel}, r, TIMEOUT_S, None, sandbox, SandboxPolicy())
        assert through["exit_code"] == 0 and "listed registry" in through["output"]
        by_address = f"curl -sS -p --noproxy '' -x http://127.0.0.1:{PROXY_PORT} http://127.0.0.1:{listed}/"
        address = run_json("execute_command", {"command": by_address}, r, TIMEOUT_S, None, sandbox, SandboxPolicy())
        assert address["exit_code"] != 0 and "127.0.0.1 is an address" in address["output"]
        # A program that ignores the proxy variables gets nothing at all: the host's loopback is not its own.
        direct = run_json(
            "execute_command",
            {"command": fetch(f"http://127.0.0.1:{listed}/", proxy=False)},
            r,
            TIMEOUT_S,
            None,
            sandbox,
            SandboxPolicy(),
        )
        assert direct["exit_code"] != 0 and "listed registry" not in direct["output"]
        # The read-only allowlist's commands (an empty home) get no proxy at all.
        env = run_json(
            "execute_command",
            {"command": "env"},
            r,
            TIMEOUT_S,
            None,
            sandbox,
            SandboxPolicy(mode="read-only", private_home=True),
        )
        assert "HTTP_PROXY" not in env["output"]
    finally:
        sandbox.close()
        r.close()


def test_in_the_sessions_namespace_one_forwarder_serves_every_command(root: Path, registries: tuple[int, int]) -> None:
    listed, _ = registries
    sandbox = sandbox_for({})
    r = Root(str(root))
    forwarder = None
    try:
        for _ in range(2):
            done = run_json(
                "execute_command",
                {"command": fetch(f"http://{REGISTRY}:{listed}/")},
                r,
                TIMEOUT_S,
                None,
                sandbox,
                SandboxPolicy(),
            )
            assert done["exit_code"] == 0 and "listed registry" in done["output"]
        assert sandbox.proxy is not None
        if os.geteuid() == 0:  # the session's namespace is made for root here (ADR 0080)
            forwarder = sandbox.proxy.forwarder
            assert forwarder is not None and forwarder.poll() is None
    finally:
        sandbox.close()
        r.close()
    if os.geteuid() == 0:
        assert forwarder is not None and forwarder.poll() is not None


def test_network_off_gets_no_proxy_and_says_so(root: Path, registries: tuple[int, int]) -> None:
    listed, _ = registries
    sandbox = sandbox_for({}, network_mode="off")
    r = Root(str(root))
    try:
        assert sandbox.proxy is None
        done = run_json(
            "execute_command",
            {"command": fetch(f"http://{REGISTRY}:{listed}/")},
            r,
            TIMEOUT_S,
            None,
            sandbox,
            SandboxPolicy(),
        )
        assert (
            done["exit_code"] != 0
            and f"{REFUSAL_PREFIX}the network: this command had none (--network off)" in done["output"]
        )
    finally:
        r.close()


def test_a_proxy_that_cannot_start_means_no_network_and_the_result_says_why(root: Path) -> None:
    sandbox = sandbox_for({})
    assert sandbox.proxy is not None
    sandbox.proxy.failed = "the registry proxy cannot start: (a test's)"
    r = Root(str(root))
    try:
        done = run_json("execute_command", {"command": "env"}, r, TIMEOUT_S, None, sandbox, SandboxPolicy())
        assert done["exit_code"] == 0 and "HTTP_PROXY" not in done["output"]
        assert "the network: this command had none (the registry proxy cannot start: (a test's))" in done["output"]
        with pytest.raises(ProxyUnavailable):
            sandbox.proxy.socket_path()
    finally:
        r.close()


def _wheel(directory: Path) -> Path:
    """The smallest valid wheel: ``demo_pkg`` 0.1, one module."""
    path = directory / "demo_pkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("demo_pkg.py", "VALUE = 1\n")
        wheel.writestr("demo_pkg-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 0.1\n")
        wheel.writestr(
            "demo_pkg-0.1.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr("demo_pkg-0.1.dist-info/RECORD", "")
    return path


@needs_python_in_sandbox
def test_pip_downloads_from_a_local_simple_index_through_the_proxy(root: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    (index / "simple" / "demo-pkg").mkdir(parents=True)
    (index / "files").mkdir()
    wheel = _wheel(index / "files")
    (index / "simple" / "demo-pkg" / "index.html").write_text(
        f'<html><body><a href="../../files/{wheel.name}">{wheel.name}</a></body></html>\n'
    )
    sandbox = sandbox_for({})
    r = Root(str(root))
    try:
        with registry(index) as port:
            pip = (
                f"{sys.executable} -m pip download --isolated --no-cache-dir --disable-pip-version-check --no-deps "
                f"--index-url http://{REGISTRY}:{port}/simple/ --trusted-host {REGISTRY} -d wheels demo-pkg"
            )
            done = run_json("execute_command", {"command": pip}, r, TIMEOUT_S, None, sandbox, SandboxPolicy())
        assert done["exit_code"] == 0, done["output"]
        assert (root / "wheels" / wheel.name).read_bytes() == wheel.read_bytes()
    finally:
        sandbox.close()
        r.close()


# ---------------------------------------------------------------- writable presets


@pytest.fixture
def home() -> Iterator[Path]:
    """A home outside /tmp (which the sandbox replaces with a private one) and outside the workspace."""
    import shutil
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="dashfloat-home-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_preset_makes_its_cache_writable_and_without_it_the_cache_is_read_only(root: Path, home: Path) -> None:
    env = {"HOME": str(home)}
    write = "mkdir -p ~/.npm/_cacache && echo cached > ~/.npm/_cacache/entry && cat ~/.npm/_cacache/entry"
    r = Root(str(root))
    try:
        with_preset = sandbox_for(env, network_mode="off", presets=["npm"])
        assert with_preset.state.writable == [str(home / ".npm")]
        old_home = os.environ["HOME"]
        os.environ["HOME"] = str(home)  # the executor's own environment is the command's home
        try:
            done = run_json("execute_command", {"command": write}, r, TIMEOUT_S, None, with_preset, SandboxPolicy())
            assert done["exit_code"] == 0 and (home / ".npm" / "_cacache" / "entry").read_text() == "cached\n"
            (home / ".npm" / "_cacache" / "entry").unlink()
            without = sandbox_for(env, network_mode="off")
            refused = run_json("execute_command", {"command": write}, r, TIMEOUT_S, None, without, SandboxPolicy())
            assert refused["exit_code"] != 0 and not (home / ".npm" / "_cacache" / "entry").exists()
            assert f"{REFUSAL_PREFIX}writing {home}/.npm/_cacache" in refused["output"]
            # A person's grant for this one call (what an escalation re-runs with) makes it writable once.
            granted = SandboxPolicy(writable=[str(home / ".npm")])
            again = run_json("execute_command", {"command": write}, r, TIMEOUT_S, None, without, granted)
            assert again["exit_code"] == 0
            # A grant that can never be writable is dropped, whoever asks.
            ssh = SandboxPolicy(writable=["~/.ssh"])
            sneaky = run_json(
                "execute_command", {"command": "mkdir -p ~/.ssh && touch ~/.ssh/k"}, r, TIMEOUT_S, None, without, ssh
            )
            assert sneaky["exit_code"] != 0 and not (home / ".ssh" / "k").exists()
        finally:
            os.environ["HOME"] = old_home
    finally:
        r.close()


def test_status_lines_show_mode_paths_network_and_allowlist() -> None:
    state = SandboxState(
        mode="workspace-write", network_mode="registries", allow_domains=["pypi.org"], deny_domains=["x.org"],
        writable=["/h/.npm"],
    )  # fmt: skip
    lines = sandbox_status_lines(state)
    assert lines[0] == "sandbox: workspace-write" and lines[1].endswith("a private /tmp, /h/.npm")
    assert "(--network registries); allowed hosts: pypi.org; denied: x.org" in lines[2]
    assert "--network off" in sandbox_status_lines(msgspec.structs.replace(state, network_mode="off"))[2]
    assert "--network on" in sandbox_status_lines(msgspec.structs.replace(state, network_mode="on"))[2]
    assert sandbox_status_lines(msgspec.structs.replace(state, mode="read-only"))[1] == "writable: a private /tmp only"
    assert sandbox_status_lines(SandboxState(mode="off")) == ["sandbox: off"]
    assert sandbox_status_lines(SandboxState(unavailable="no bwrap")) == ["sandbox: NOT sandboxed (no bwrap)"]


# ---------------------------------------------------------------- the proxy's own bounds


@contextlib.contextmanager
def proxy_in_thread(tmp_path: Path, allow: list[str], max_connections: int = 4) -> Iterator[str]:
    path = str(tmp_path / "p.sock")
    proxy = Proxy(ProxyConfig(path, allow, hosts={REGISTRY: "127.0.0.1"}), max_connections=max_connections)
    threading.Thread(target=proxy.serve, daemon=True).start()
    try:
        yield path
    finally:
        proxy.listener.close()


def _ask(path: str, data: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(TIMEOUT_S)
        sock.connect(path)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a 503 comes before the request is read
            sock.sendall(data)
        return sock.recv(4096)


def test_a_head_past_its_bound_is_refused_and_one_at_it_is_read(tmp_path: Path, registries: tuple[int, int]) -> None:
    listed, _ = registries
    with proxy_in_thread(tmp_path, [REGISTRY]) as path:
        request = f"GET http://{REGISTRY}:{listed}/ HTTP/1.1\r\nHost: {REGISTRY}\r\n".encode()
        pad = HEAD_MAX_BYTES - len(request) - len(b"X: \r\n\r\n")
        at_bound = request + b"X: " + b"a" * pad + b"\r\n\r\n"
        assert len(at_bound) == HEAD_MAX_BYTES
        assert _ask(path, at_bound).startswith(b"HTTP/1.0 200")
        past = request + b"X: " + b"a" * (pad + 1) + b"\r\n\r\n"
        assert _ask(path, past).startswith(b"HTTP/1.1 431")


def test_connections_past_the_bound_get_503(tmp_path: Path, registries: tuple[int, int]) -> None:
    listed, _ = registries
    with proxy_in_thread(tmp_path, [REGISTRY], max_connections=2) as path:
        held = []
        for _ in range(2):  # two tunnels open: every slot taken
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(TIMEOUT_S)
            sock.connect(path)
            sock.sendall(f"CONNECT {REGISTRY}:{listed} HTTP/1.1\r\n\r\n".encode())
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
            held.append(sock)
        assert _ask(path, b"CONNECT x HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 503")
        held.pop().close()
        deadline = time.monotonic() + TIMEOUT_S
        while not (answer := _ask(path, f"CONNECT {REGISTRY}:{listed} HTTP/1.1\r\n\r\n".encode())).startswith(
            b"HTTP/1.1 200"
        ):
            assert (
                answer.startswith(b"HTTP/1.1 503") and time.monotonic() < deadline
            )  # the slot frees as the relay ends
        for sock in held:
            sock.close()


def test_a_name_dns_puts_on_loopback_is_refused(tmp_path: Path) -> None:
    with proxy_in_thread(tmp_path, ["localhost"]) as path:
        answer = _ask(path, b"CONNECT localhost:80 HTTP/1.1\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 403") and b"loopback" in answer


# ---------------------------------------------------------------- the proxy dies with the session


def _served_proxy(root: Path) -> tuple[Any, list[int]]:
    environ = {**os.environ, PROXY_HOSTS_ENV: f"{REGISTRY}=127.0.0.1"}
    state = with_access(detect_sandbox("workspace-write", False, [], environ), "registries", [], [], [], [], environ)
    old = os.environ.get(PROXY_HOSTS_ENV)
    worker = ForkWorkers(str(root), TIMEOUT_S, log_path="", held_fds=[], sandbox=state).start_executor()
    channel = worker.channel
    channel.send(RunTool("c1", ExecuteCommandArgs(command="echo $HTTP_PROXY")))
    assert channel.poll(TIMEOUT_S) and isinstance(channel.recv(), CommandStarted)
    finished = None
    while not isinstance(finished, ToolFinished):
        assert channel.poll(TIMEOUT_S)
        finished = channel.recv()
    assert f"127.0.0.1:{PROXY_PORT}" in finished.result.output.output  # type: ignore[union-attr]
    del old
    children = _children(worker.process.pid)
    proxies = [p for p in children if b"dashfloat.netproxy" in _cmdline(p)]
    # The session's one forwarder, in its network namespace (ADR 0080), where the session has one (as root here).
    forwarders = [p for p in children if b"FORWARD_MAX_CONNECTIONS" in _cmdline(p)]
    assert len(proxies) == 1 and len(forwarders) <= 1
    return worker, [*proxies, *forwarders]


def _children(pid: int | None) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as file:
        return [int(p) for p in file.read().split()]


def _cmdline(pid: int) -> bytes:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as file:
        return file.read()
    return b""


@pytest.mark.parametrize("end", ["shutdown", "pipe closed", "sigterm", "sigkill"])
def test_the_proxy_dies_with_the_executor_on_every_exit_path(root: Path, end: str) -> None:
    worker, helpers = _served_proxy(root)
    process = worker.process
    try:
        if end == "shutdown":
            worker.channel.send(Shutdown())
        elif end == "pipe closed":
            worker.channel.close()
        else:
            os.kill(process.pid, signal.SIGTERM if end == "sigterm" else signal.SIGKILL)
        process.join(TIMEOUT_S)
        assert all(gone(pid, within_s=TIMEOUT_S) for pid in helpers)
    finally:
        with contextlib.suppress(OSError):
            worker.channel.close()
        if process.is_alive():
            process.kill()
            process.join()


def test_without_the_sessions_namespace_each_command_brings_its_own_forwarder(
    root: Path, registries: tuple[int, int]
) -> None:
    from dashfloat.executor._exec import run_command

    listed, unlisted = registries
    sandbox = sandbox_for({})
    r = Root(str(root))
    try:
        for url, body in ((f"http://{REGISTRY}:{listed}/", "listed registry"), (f"http://{OTHER}:{unlisted}/", "")):
            wrap = sandbox.wrap(SandboxPolicy(), r.fd, r.path)
            assert wrap is not None
            alone = msgspec.structs.replace(wrap, session_net=None)  # a machine where the session's cannot be made
            done = run_command(fetch(url), str(root), TIMEOUT_S, alone)
            output = done.output.output if not isinstance(done, ToolFailed) and done.output is not None else ""
            if body:
                assert body in output
            else:
                assert f"{REFUSAL_PREFIX}{OTHER} is not on the sandbox's allowlist" in output
    finally:
        sandbox.close()
        r.close()


@pytest.mark.parametrize(
    ("python", "why"),
    [
        ("/nonexistent/python", "No such file"),
        ("/bin/false", "it exited with status 1"),
        ("/bin/sh", "cannot open dashfloat.netproxy"),  # what it says on stderr is the reason given
    ],
)
def test_a_proxy_that_cannot_start_is_named_and_not_retried(python: str, why: str) -> None:
    supervisor = ProxySupervisor([REGISTRY], [], {}, PROXY_PORT, python=python)
    with pytest.raises(ProxyUnavailable, match=f"the registry proxy cannot start: .*{why}"):
        supervisor.socket_path()
    assert supervisor.failed and supervisor.process is None
    with pytest.raises(ProxyUnavailable):
        supervisor.socket_path()  # remembered: the next command does not wait for it again


def test_what_a_person_may_grant_a_refused_command(root: Path, home: Path, registries: tuple[int, int]) -> None:
    from dashfloat.executor._exec import Command

    _, unlisted = registries
    sandbox = sandbox_for({"HOME": str(home)})
    r = Root(str(root))
    old_home = os.environ["HOME"]
    os.environ["HOME"] = str(home)
    try:

        def refused(command: str, policy: SandboxPolicy) -> Any:
            wrap = sandbox.wrap(policy, r.fd, r.path)
            run = Command(command, str(root), TIMEOUT_S, wrap)
            run.run_to_end()
            return run.refused

        write = refused("mkdir -p ~/.npm/_cacache/x", SandboxPolicy())
        assert write is not None and write.writable == [str(home / ".npm")] and not write.network
        assert write.refused.startswith(f"writing {home}/.npm")
        host = refused(fetch(f"http://{OTHER}:{unlisted}/"), SandboxPolicy())
        assert host is not None and host.network and not host.writable and OTHER in host.refused
        assert refused("mkdir /opt/nowhere-granted", SandboxPolicy()) is None  # outside the home: nothing to grant
        assert refused("true", SandboxPolicy()) is None
        networked = refused("mkdir -p ~/.ssh/x", SandboxPolicy(network=True))
        assert networked is None  # ~/.ssh can never be granted, and the network it had
    finally:
        os.environ["HOME"] = old_home
        sandbox.close()
        r.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="the session's namespace is entered by setns as root (ADR 0080)")
def test_a_forwarder_that_cannot_listen_is_named(tmp_path: Path) -> None:
    import subprocess

    from dashfloat.executor._sandbox import bwrap_binary
    from dashfloat.executor._session_net import SessionNet

    net = SessionNet(bwrap_binary(os.environ))
    supervisor = ProxySupervisor([REGISTRY], [], {}, PROXY_PORT)
    squatter = None
    try:
        # A job of the session listening on the proxy's port first (ADR 0082's consequences: "address in use").
        code = (
            f"import socket,time;s=socket.socket();s.bind(('127.0.0.1',{PROXY_PORT}));s.listen();"
            "print(1,flush=True);time.sleep(600)"
        )
        squatter = net.run_inside([PYTHON, "-c", code], stdout=subprocess.PIPE)
        assert squatter.stdout is not None and squatter.stdout.readline() == b"1\n"
        with pytest.raises(ProxyUnavailable, match=r"forwarder cannot start: cannot listen on 127\.0\.0\.1:3128"):
            supervisor.session_forwarder(net)
        assert supervisor.forwarder is None and not supervisor.failed  # the next command tries again
        squatter.kill()
        squatter.wait()
        supervisor.session_forwarder(net)
        assert supervisor.forwarder is not None and supervisor.forwarder.poll() is None
        supervisor.session_forwarder(net)  # running: left as it is
    finally:
        if squatter is not None and squatter.poll() is None:
            squatter.kill()
            squatter.wait()
        if squatter is not None and squatter.stdout is not None:
            squatter.stdout.close()
        supervisor.stop()
        net.close()
    assert supervisor.refusals() == []  # stopped: nothing to read
