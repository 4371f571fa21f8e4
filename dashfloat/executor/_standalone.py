"""``python -m dashfloat.executor``: run tool calls from JSON lines on stdin, no confirmation (debugging).

It confines as the served executor does (``_serve.serve``), or it could not reproduce what users see (ADR 0069): the
root is anchored once at start (``Root(real, launch_real=True)``, every call gets that object), and commands run in
the sandbox ``launch.prepare`` would build from the same flags and config (``session_sandbox``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Iterator, Mapping
from types import FrameType
from typing import Any, BinaryIO, Final

import msgspec

from dashfloat import procutil
from dashfloat.config import (
    DEFAULT_SANDBOX_MODE,
    ConfigError,
    command_limits,
    config_path,
    provider_key_envs,
    sandbox_settings,
)
from dashfloat.executor._confine import remove_left_behind, sweep
from dashfloat.executor._errors import error_result
from dashfloat.executor._limits import EXEC_TIMEOUT_S, STANDALONE_LINE_MAX_BYTES
from dashfloat.executor._sandbox import Sandbox, describe
from dashfloat.executor._sandbox_probe import detect
from dashfloat.executor._tools import run_tool
from dashfloat.executor.path_policy import Root
from dashfloat.protocol import (
    NetworkMode,
    ProviderConfig,
    SandboxMode,
    SandboxPolicy,
    SandboxState,
    ToolResult,
    result_json,
)
from dashfloat.sandbox_access import with_access

_DESCRIPTION = """\
Run DashFloat tool calls directly, without confirmation: the executor's debugging entry point.

Reads one JSON object per line on stdin:   {"id": "1", "name": "read_file", "args": {"path": "a.py"}}
Writes one JSON object per call on stdout: {"id": "1", "result": {"ok": true, ...}}

Tools: read_file, write_file, edit_file, execute_command, list_directory (see docs/tools.md).
A line that is not valid JSON or not of that shape gets {"id": null, "result": {"ok": false, "error": ...}}
and serving goes on. Stops at EOF.

It confines as `dashfloat` does. The directory is fixed at start: a --cwd given through a symlink is
resolved once, and if the directory is later moved or replaced every tool refuses. Commands run in the
sandbox of --sandbox (default: config [sandbox] mode, else workspace-write), with config [sandbox]
deny_read, pass_env and [limits]; stderr's first line says what confines them. A command runs as one
approved under --yes: {"mode": "workspace-write", "network": <--network>}. A line may carry the policy
of one execute_command call, as the agent sends it; it narrows the session's sandbox, never widens it:
  {"id": "2", "name": "execute_command", "args": {"command": "git status"},
   "sandbox": {"mode": "read-only", "private_home": true}}
is a read-only command the agent runs unasked (read-only, an empty home, no network, a lean environment);
{"network": true} is a command a person approved with a key.
"""


EXIT_INTERRUPTED: Final = 130

_NO_PROVIDER: Final = ProviderConfig(name="", base_url="", model="")
"""There is no model here: ``provider_key_envs`` then names ``KEY_ENV`` and every configured provider's variable,
which covers whichever one a ``dashfloat`` session in this environment would use."""


class CallPolicy(SandboxPolicy, frozen=True, forbid_unknown_fields=True):
    """A line's ``sandbox`` field: a ``SandboxPolicy`` whose misspelt field is an error, not silently the default."""


class Request(msgspec.Struct, forbid_unknown_fields=True):
    """One stdin line."""

    id: str
    name: str
    args: dict[str, Any] = {}
    sandbox: CallPolicy | None = None
    """The policy of this execute_command call (``RunTool.sandbox``); None: ``Session.policy``."""


class Session:
    """What every call of one run gets: the root anchored at start, the session's sandbox, the default policy."""

    def __init__(self, root: Root, sandbox: Sandbox, exec_timeout_s: float) -> None:
        self.root = root
        self.sandbox = sandbox
        self.exec_timeout_s = exec_timeout_s
        # No keypress here: a call runs as one auto-approved under --yes (network only with --network).
        self.policy = SandboxPolicy(mode="workspace-write", network=sandbox.state.network)

    def start_line(self, mode_from: str) -> str:
        """Stderr's first line: the directory and what confines commands (``describe``'s words), and why."""
        return f"dashfloat.executor in {self.root.path}: commands: {describe(self.sandbox.state, self.policy)}; " + (
            f"mode from {mode_from}\n"
        )


def session_sandbox(mode: SandboxMode | None, network: bool, env: Mapping[str, str]) -> SandboxState:
    """The sandbox ``launch.prepare`` builds for these flags and this environment's config (``[sandbox]`` mode,
    network, deny_read, pass_env; ``[limits]``; the providers' key variables hidden): detected now, so ``off``
    with the reason on a machine that cannot sandbox. ConfigError for a bad config file."""
    settings = sandbox_settings(env)
    limits = command_limits(env)
    hidden = provider_key_envs(env, _NO_PROVIDER)
    # issue 35: without --network (or config's network = true), the registries through the proxy, as launch does
    network_mode: NetworkMode = "on" if network or settings.network else "registries"
    state = detect(mode or settings.mode, network_mode == "on", settings.deny_read, env, hide_env=hidden)
    state = msgspec.structs.replace(state, limits=limits, pass_env=sorted(set(settings.pass_env)))
    s = settings
    return with_access(state, network_mode, s.allow_domains, s.deny_domains, s.writable_presets, s.writable, env)


def mode_source(flag: SandboxMode | None, env: Mapping[str, str]) -> str:
    """Where the session's mode came from, as a person would change it."""
    if flag is not None:
        return "--sandbox"
    if sandbox_settings(env).mode != DEFAULT_SANDBOX_MODE:
        return f"[sandbox] mode in {config_path(env)}"
    return f"the default ({DEFAULT_SANDBOX_MODE})"


_ENCODER = msgspec.json.Encoder()


def _reply(request_id: str | None, result: ToolResult) -> bytes:
    # The result is spliced in as the model would read it, so this prints exactly that JSON.
    return b'{"id":' + _ENCODER.encode(request_id) + b',"result":' + result_json(result).encode() + b"}\n"


class Interrupts:
    """Ctrl-C while a call runs is a byte on a pipe, read where the running command's group is killed (a
    KeyboardInterrupt raised between starting a command and watching it left the command running);
    between calls it raises at once."""

    def __init__(self) -> None:
        self.fd, self._write = os.pipe()
        os.set_blocking(self.fd, False)
        os.set_blocking(self._write, False)
        self.running = False

    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if not self.running:
            raise KeyboardInterrupt
        with contextlib.suppress(BlockingIOError):
            os.write(self._write, b"\0")

    def pending(self) -> bool:
        """Whether a Ctrl-C came during the call (and was not yet acted on); clears it."""
        try:
            return bool(os.read(self.fd, 64))
        except BlockingIOError:
            return False

    @contextlib.contextmanager
    def call(self) -> Iterator[int]:
        """Around one call: Ctrl-C wakes it; one that came during a call that was not a command raises after."""
        self.running = True
        try:
            yield self.fd
        finally:
            self.running = False
            came = self.pending()  # read even when the call raised it, so none is left for the next call
        if came:
            raise KeyboardInterrupt


def handle_line(line: bytes, session: Session, interrupts: Interrupts | None = None) -> bytes:
    """The stdout line for one stdin line."""
    try:
        raw = msgspec.json.decode(line)
    except msgspec.DecodeError as exc:
        return _reply(None, error_result(f"not a JSON line: {exc}"))
    except RecursionError:
        return _reply(None, error_result("not a usable JSON line: nested too deeply"))
    request_id = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else None
    try:
        request = msgspec.convert(raw, Request)
    except msgspec.ValidationError as exc:
        shape = '{"id": str, "name": str, "args": {...}, "sandbox": {...} (optional)}'
        return _reply(request_id, error_result(f"expected {shape}: {exc}"))
    policy = request.sandbox or session.policy
    with interrupts.call() if interrupts is not None else contextlib.nullcontext(None) as interrupt_fd:
        result = run_tool(
            request.name,
            request.args,
            session.root,
            session.exec_timeout_s,
            sandbox=session.sandbox,
            policy=policy,
            interrupt_fd=interrupt_fd,
        )
    return _reply(request.id, result)


def main(argv: list[str] | None = None) -> int:
    """Serve stdin until EOF."""
    parser = argparse.ArgumentParser(
        prog="python -m dashfloat.executor",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--cwd", required=True, help="the working directory every path must stay inside")
    parser.add_argument(
        "--exec-timeout",
        type=float,
        default=EXEC_TIMEOUT_S,
        metavar="SECONDS",
        help=f"execute_command timeout (default {EXEC_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--sandbox",
        choices=("workspace-write", "read-only", "off"),
        default=None,
        metavar="MODE",
        help="confine commands: workspace-write, read-only, off (default: config [sandbox] mode, else "
        f"{DEFAULT_SANDBOX_MODE}); named here, a sandbox this machine cannot run is an error",
    )
    parser.add_argument(
        "--network",
        action="store_true",
        help="commands may use the network (default: config [sandbox] network, else no network)",
    )
    ns = parser.parse_args(argv)
    if ns.exec_timeout <= 0:
        parser.error("--exec-timeout must be positive")
    # The real path now, once: a --cwd through a symlink re-pointed later still names this directory.
    real = os.path.realpath(ns.cwd)
    if not os.path.isdir(real):
        parser.error(f"--cwd is not a directory: {ns.cwd}")
    try:
        state = session_sandbox(ns.sandbox, ns.network, os.environ)
        mode_from = mode_source(ns.sandbox, os.environ)
    except ConfigError as exc:
        parser.error(str(exc))
    if ns.sandbox and ns.sandbox != "off" and state.unavailable:
        # as `dashfloat --sandbox MODE` does: asked for by name, running unconfined instead would betray it
        parser.error(
            f"--sandbox {ns.sandbox} cannot start: {state.unavailable}; nothing ran "
            "(--sandbox off runs commands unconfined, with your full permissions)"
        )
    procutil.become_subreaper()  # as served: what a command leaves behind is ours to reap, and to kill at the end
    session = Session(Root(real, launch_real=True), Sandbox.for_session(state, os.environ), ns.exec_timeout)
    sys.stderr.write(session.start_line(mode_from))
    sys.stderr.flush()
    sweep()  # as the served executor does at its start (ADR 0062)
    interrupts = Interrupts()
    signal.signal(signal.SIGINT, interrupts.on_sigint)
    try:
        _serve_lines(session, interrupts)
    except KeyboardInterrupt:  # Ctrl-C: the running command's group is already killed (run_to_end)
        sys.stderr.write("interrupted\n")
        return EXIT_INTERRUPTED
    finally:
        procutil.kill_descendants()  # as served: nothing our commands started outlives us (setsid, --sandbox off)
        remove_left_behind()
        session.root.close()
    return 0


def _serve_lines(session: Session, interrupts: Interrupts) -> None:
    out = sys.stdout.buffer
    for line in _lines(sys.stdin.buffer):
        procutil.reap_orphans()  # as served: what commands left behind waits as a zombie for one call at most
        if line is None:
            out.write(_reply(None, error_result(f"line longer than {STANDALONE_LINE_MAX_BYTES} bytes: skipped")))
        elif line.strip():
            out.write(handle_line(line, session, interrupts))
        out.flush()


def _lines(stream: BinaryIO) -> Iterator[bytes | None]:
    """Lines of at most STANDALONE_LINE_MAX_BYTES; None stands for a longer line, read past, never held."""
    while True:
        line = stream.readline(STANDALONE_LINE_MAX_BYTES + 1)
        if not line:
            return
        if len(line) <= STANDALONE_LINE_MAX_BYTES:
            yield line
            continue
        while line and not line.endswith(b"\n"):
            line = stream.readline(STANDALONE_LINE_MAX_BYTES)
        yield None
