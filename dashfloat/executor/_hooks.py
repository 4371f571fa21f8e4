"""Running hooks (ADR 0088): each one ``/bin/sh -c COMMAND`` with the payload on its stdin, in the command sandbox's
read-only mode without network (it may read and judge, never change a file behind a preview), from the filtered
environment every command gets (``command_env``), killed with its whole group at its timeout, its stdout and stderr
kept to ``HOOK_OUTPUT_MAX_BYTES`` each. What its run means is ``dashfloat.hooks.read_hook``'s to say.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import time
from collections.abc import Callable
from typing import Final

import msgspec

from dashfloat import procutil
from dashfloat.command_env import command_env
from dashfloat.executor._sandbox import Sandbox, Wrap
from dashfloat.executor.path_policy import Root
from dashfloat.hooks import HOOK_OUTPUT_MAX_BYTES, HookEvent, HookVerdict, combine, read_hook
from dashfloat.protocol import HookCommand, SandboxPolicy

HOOK_READ_CHUNK_BYTES: Final = 64 * 1024
HOOK_POLICY: Final = SandboxPolicy(mode="read-only", network=False)
"""Every hook's confinement where the session sandboxes commands: the workspace and home read-only, no network."""
PROJECT_DIR_ENV: Final = ("DASHFLOAT_PROJECT_DIR", "CLAUDE_PROJECT_DIR")
"""Variables naming the workspace for a hook (Claude Code's name too, so its scripts run unchanged)."""


class HookRun(msgspec.Struct):
    """How one hook's process ended, and what it printed (each stream cut at ``HOOK_OUTPUT_MAX_BYTES``)."""

    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    timed_out_s: float | None = None
    dropped_bytes: int = 0
    error: str = ""
    cancelled: bool = False


class _Streams:
    """A hook's stdout and stderr, each kept to the cap; what passes it is counted and dropped."""

    def __init__(self) -> None:
        self.kept: dict[int, bytearray] = {}
        self.dropped = 0

    def take(self, fd: int, chunk: bytes) -> None:
        kept = self.kept.setdefault(fd, bytearray())
        room = max(HOOK_OUTPUT_MAX_BYTES - len(kept), 0)
        kept += chunk[:room]
        self.dropped += max(len(chunk) - room, 0)

    def text(self, fd: int) -> str:
        return bytes(self.kept.get(fd, b"")).decode("utf-8", errors="replace")


def _argv(
    hook: HookCommand, root: Root, sandbox: Sandbox | None
) -> tuple[list[str], tuple[int, ...], int, Wrap | None]:
    """The command line, the descriptors it needs, the read end of bwrap's status pipe (-1: unsandboxed), and the
    confinement it is spawned in."""
    wrap = None if sandbox is None else sandbox.wrap(HOOK_POLICY, root.fd, root.path)
    if wrap is None:
        return ["/bin/sh", "-c", hook.command], (), -1, None
    # Never the registries proxy a command run unasked gets: a hook has no network beyond the session's loopback.
    wrap = msgspec.structs.replace(wrap, proxied=False)
    status_r, status_w = os.pipe()
    try:
        argv = wrap.argv(hook.command, root.path, status_w)
    except BaseException:
        os.close(status_r)
        os.close(status_w)
        raise
    return argv, (wrap.root_fd, status_w, *wrap.fds), status_r, wrap


def run_hook(
    hook: HookCommand,
    payload: bytes,
    root: Root,
    sandbox: Sandbox | None,
    interrupt_fd: int | None = None,
    interrupted: Callable[[], bool] = lambda: False,
) -> HookRun:
    """Run one hook to its end, its timeout, or an interruption: ``interrupt_fd`` readable, ``interrupted()`` is
    called (the executor reads its pipe) and says whether to kill the hook. No ``sandbox``: unconfined."""
    state = sandbox.state if sandbox is not None else None
    env = command_env(
        os.environ,
        state.hide_env if state else (),
        state.pass_env if state else (),
        unasked=False,
        workspace=root.path,
    )
    env |= dict.fromkeys(PROJECT_DIR_ENV, root.path)
    try:
        argv, fds, status_r, wrap = _argv(hook, root, sandbox)
    except OSError as exc:
        return HookRun(error=f"the sandbox cannot start ({exc})")
    try:
        with wrap.spawning() if wrap is not None else contextlib.nullcontext():  # the session's loopback (ADR 0080)
            process = subprocess.Popen(
                argv,
                cwd=root.path,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # one killpg reaches whatever the hook started
                close_fds=True,
                pass_fds=fds,
            )
    except OSError as exc:
        if status_r >= 0:
            os.close(status_r)
        return HookRun(error=str(exc))
    finally:
        if status_r >= 0:
            os.close(fds[1])  # bwrap's copy of the status pipe's write end is its own
    try:
        return _follow(process, hook, payload, interrupt_fd, interrupted)
    finally:
        procutil.kill_group(process.pid)  # what the hook left running in its group ends with it
        process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if status_r >= 0:
            os.close(status_r)


def _follow(
    process: subprocess.Popen[bytes],
    hook: HookCommand,
    payload: bytes,
    interrupt_fd: int | None,
    interrupted: Callable[[], bool],
) -> HookRun:
    """Feed the payload, read both streams, until the hook's streams close and it exits, or the deadline."""
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    deadline = time.monotonic() + hook.timeout_s
    streams = _Streams()
    poller = select.poll()
    stdin, readers = process.stdin.fileno(), {process.stdout.fileno(), process.stderr.fileno()}
    for fd in (stdin, *readers):
        os.set_blocking(fd, False)
    pending = memoryview(payload)
    if pending:
        poller.register(stdin, select.POLLOUT)
    else:
        process.stdin.close()
    for fd in readers:
        poller.register(fd, select.POLLIN)
    if interrupt_fd is not None:
        poller.register(interrupt_fd, select.POLLIN)
    while readers or process.poll() is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return HookRun(timed_out_s=hook.timeout_s, dropped_bytes=streams.dropped)
        # With both streams closed only the exit is awaited: looked at every 50 ms (no pidfd needed for that).
        events = poller.poll(min(left, 0.05 if not readers else left) * 1000)
        for fd, _ in events:
            if fd == interrupt_fd:
                if interrupted():
                    return HookRun(cancelled=True)
            elif fd == stdin:
                try:
                    written = os.write(stdin, pending[:HOOK_READ_CHUNK_BYTES])
                except BlockingIOError:
                    continue
                except BrokenPipeError:
                    written = len(pending)  # the hook does not read its input: it need not
                pending = pending[written:]
                if not pending:
                    poller.unregister(stdin)
                    process.stdin.close()
            else:
                chunk = os.read(fd, HOOK_READ_CHUNK_BYTES)
                if chunk:
                    streams.take(fd, chunk)
                else:
                    poller.unregister(fd)
                    readers.discard(fd)
    return HookRun(
        exit_code=process.returncode,
        stdout=streams.text(process.stdout.fileno()),
        stderr=streams.text(process.stderr.fileno()),
        dropped_bytes=streams.dropped,
    )


def name_of(hook: HookCommand) -> str:
    """How the user is told which hook: its command, short."""
    command = " ".join(hook.command.split())
    return f"`{command[:60]}{'…' if len(command) > 60 else ''}`"


def run_hooks(
    event: HookEvent,
    hooks: list[HookCommand],
    payload: bytes,
    root: Root,
    sandbox: Sandbox | None,
    interrupt_fd: int | None = None,
    interrupted: Callable[[], bool] = lambda: False,
) -> HookVerdict | None:
    """Run ``event``'s hooks in order until one blocks; their combined verdict, or None when one was cancelled."""
    verdicts: list[HookVerdict] = []
    for hook in hooks:
        run = run_hook(hook, payload, root, sandbox, interrupt_fd, interrupted)
        if run.cancelled:
            return None
        verdict = read_hook(
            event,
            name_of(hook),
            run.exit_code,
            run.stdout,
            run.stderr,
            timed_out_s=run.timed_out_s,
            dropped_bytes=run.dropped_bytes,
            error=run.error,
        )
        verdicts.append(verdict)
        if verdict.blocked:
            break
    return combine(verdicts)
