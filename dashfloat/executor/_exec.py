"""execute_command: /bin/sh -c in its own session, combined output kept head and tail, the group always killed.

A command is started *held* (ADR 0050): its process waits at a gate, a shell reading its stdin, until whoever
started it has told the agent its process group (``release``); only then does it exec the command. If the
executor dies before that, the gate reads end-of-file and exits without running anything, so no command runs in
a group the agent does not know.
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from typing import Final

import msgspec

from dashfloat import procutil
from dashfloat.executor._capture import HeadTail, LiveTail
from dashfloat.executor._confine import Bounds
from dashfloat.executor._git_meta import sweep_commondirs
from dashfloat.executor._limits import EXEC_DRAIN_AFTER_EXIT_S, EXEC_READ_CHUNK_BYTES, REAP_TIMEOUT_S
from dashfloat.executor._sandbox import Wrap, sandbox_started
from dashfloat.protocol import (
    CapturedOutput,
    CommandExited,
    CommandTimedOut,
    SandboxGrant,
    ToolCancelled,
    ToolFailed,
)

CommandResult = CommandExited | CommandTimedOut | ToolCancelled | ToolFailed

# Without a pidfd (non-Linux) the shell's exit is noticed by polling this often.
_EXIT_POLL_S = 0.05

GATE_CLOSED_EXIT: Final = 125
"""The exit status of a command whose gate closed before it was released (it never ran)."""
_GATE = f'read _ || exit {GATE_CLOSED_EXIT}; exec "$@" </dev/null'
"""The gate: one line on stdin lets the command (``$@``) run, with stdin from /dev/null as before; end-of-file
(the executor closed the gate, or died) ends it unrun. The same process execs the command, so its pid stays the
group's."""


class Command:
    """One running command line; ``pump`` advances it, ``result`` is set once it is over."""

    def __init__(
        self,
        command: str,
        cwd: str,
        timeout_s: float,
        wrap: Wrap | None = None,
        *,
        held: bool = False,
        bounds: Bounds | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``held``: the command waits at its gate until ``release`` (the caller reports its group first);
        otherwise it runs at once. ``bounds``: its process and memory limits (default ``Bounds()``), set on the gate
        before anything of it runs. ``env``: what the gate, bwrap (the sandbox's PID 1) and the command start from
        (``command_env``); None: the executor's own."""
        self.timeout_s = timeout_s
        self._bounds = bounds if bounds is not None else Bounds()
        argv = ["/bin/sh", "-c", command]
        pass_fds: tuple[int, ...] = ()
        # bwrap writes JSON status documents here; no "exit-code" one means the sandbox never started.
        self._status: int | None = None
        self._git_dirs: tuple[int, list[str]] = (-1, [])
        status_w = -1
        if wrap is not None:
            self._status, status_w = os.pipe()
            try:
                argv = wrap.argv(command, cwd, status_w)
            except BaseException:
                os.close(self._status)
                os.close(status_w)
                raise
            pass_fds = (wrap.root_fd, status_w, *wrap.fds)
            # A commondir the command plants is removed once it is over (held: the root fd, not the Wrap and its fds).
            self._git_dirs = (wrap.root_fd, list(wrap.main_git_dirs))
        # What the sandbox refused it, said at its end (issue 35): not the Wrap, whose fds go once it has started.
        self._refusals = wrap.refusals() if wrap is not None else None
        self._refusal_note = self._refusals.note if self._refusals is not None else None
        # The gate is the sandbox's parent too: bwrap (and its --die-with-parent) starts only once released.
        gate_r, gate_w = os.pipe()
        self._gate: int | None = gate_w
        # start_new_session: the command leads its own group, so one killpg reaches every descendant
        # that did not escape with its own setsid (in the sandbox, its PID namespace reaches those too).
        # No preexec_fn: nothing per-thread is inherited.
        try:
            with wrap.spawning() if wrap is not None else contextlib.nullcontext():  # the session's loopback (0080)
                self._proc = subprocess.Popen(
                    ["/bin/sh", "-c", _GATE, "gate", *argv],
                    cwd=cwd,
                    env=None if env is None else dict(env),
                    stdin=gate_r,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=pass_fds,
                )
        except BaseException:
            if self._status is not None:
                os.close(self._status)
            os.close(gate_w)
            raise
        finally:
            os.close(gate_r)
            if status_w >= 0:
                os.close(status_w)
        self.pgid = self._proc.pid
        # At the gate nothing of the command runs yet: what is set on it now binds all it will start (ADR 0057 §1).
        self._bounds.apply(self._proc.pid)
        self._drain_deadline = math.inf
        self._deadline = time.monotonic() + timeout_s
        assert self._proc.stdout is not None
        self._out: int | None = self._proc.stdout.fileno()
        os.set_blocking(self._out, False)
        with contextlib.suppress(OSError, AttributeError):
            fcntl.fcntl(self._out, fcntl.F_SETPIPE_SZ, EXEC_READ_CHUNK_BYTES)  # fewer wake-ups in a flood
        self._pidfd: int | None = None
        with contextlib.suppress(OSError, AttributeError):
            self._pidfd = os.pidfd_open(self._proc.pid)
        self._captured = HeadTail()
        self.live: LiveTail | None = None
        """Set by whoever shows the output while it runs (the serving executor); None: nobody is watching."""
        self.sink: Callable[[bytes], None] | None = None
        """Set by a background job (ADR 0080): every chunk of output also goes there, as it is read."""
        self._returncode: int | None = None
        self._drained_note = ""
        self.result: CommandResult | None = None
        if not held:
            self.release()

    @property
    def refused(self) -> SandboxGrant | None:
        """Once it is over: what the sandbox refused it that a person may grant a re-run (issue 35)."""
        return self._refusals.grant() if self._refusals is not None else None

    @property
    def held(self) -> bool:
        """Whether the command still waits at its gate (started, not yet released)."""
        return self._gate is not None

    def postpone(self, seconds: float) -> None:
        """Move the timeout by ``seconds``: the time the command was stopped (Ctrl-Z) is not its run time."""
        self._deadline += seconds

    def release(self) -> None:
        """Let the command run (once its group is known to whoever must kill it should we die)."""
        if self._gate is not None:
            with contextlib.suppress(OSError):  # the gate is gone already (killed): nothing is left to run
                os.write(self._gate, b"\n")
            self._close_gate()

    def _close_gate(self) -> None:
        if self._gate is not None:
            os.close(self._gate)
            self._gate = None

    def pump(self, wake_fd: int | None = None) -> bool:
        """Wait for output, the shell's exit or the deadline; True when ``wake_fd`` became readable."""
        if self.result is not None:
            return False
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            self._timed_out()
            return False
        fds = [fd for fd in (self._out, wake_fd) if fd is not None]
        if self._returncode is None and self._pidfd is not None:
            fds.append(self._pidfd)
        wait = remaining if self._pidfd is not None or self._returncode is not None else min(remaining, _EXIT_POLL_S)
        live_wait = self.live.wait_s(time.monotonic()) if self.live is not None else None
        if live_wait is not None:
            wait = min(wait, live_wait)  # held output goes out on time even when the command falls silent
        wait = max(0.0, min(wait, self._drain_deadline - time.monotonic()))
        ready, _, _ = select.select(fds, [], [], wait)
        if self._out is not None and self._out in ready:
            self._read()  # one read per wake-up, so a flood cannot starve the wake fd or the deadline
        if self._returncode is None:
            self._check_exit()
        if self._returncode is not None and self._out is not None and time.monotonic() >= self._drain_deadline:
            self._kill_pipe_holders()
        if self._returncode is not None and self._out is None:
            self._finish(self._sandbox_failure() or self._exit_result())
        elif time.monotonic() >= self._deadline:
            self._timed_out()
        return wake_fd is not None and wake_fd in ready

    def take_live(self) -> tuple[str, int] | None:
        """The live chunk due now (text, bytes skipped before it), if any."""
        return self.live.take(time.monotonic()) if self.live is not None and self.result is None else None

    def run_to_end(self, interrupt_fd: int | None = None) -> CommandResult:
        """Pump until the result is set (tests, standalone mode); on any exception the group is killed first.
        ``interrupt_fd`` readable raises KeyboardInterrupt here, where the group is sure to be killed."""
        try:
            while self.result is None:
                if self.pump(interrupt_fd):
                    raise KeyboardInterrupt
        except BaseException:  # Ctrl-C in the standalone executor: the command's group goes with us
            self.cancel()
            raise
        return self.result

    def cancel(self) -> None:
        """Kill the group now; the result says cancelled (a finished command is left as it is)."""
        if self.result is None:
            self._kill()
            self._finish(ToolCancelled(output=self._output()))

    def _read(self) -> None:
        assert self._out is not None
        try:
            chunk = os.read(self._out, EXEC_READ_CHUNK_BYTES)
        except BlockingIOError:
            return
        if not chunk:
            self._close_out()
            return
        self._captured.feed(chunk)
        if self.live is not None:
            self.live.feed(chunk)
        if self.sink is not None:
            self.sink(chunk)

    def _check_exit(self) -> None:
        # WNOWAIT leaves the shell a zombie, so its pgid cannot be reused before the killpg below.
        info = os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is None:
            return
        procutil.kill_group(self.pgid)  # on exit too: `sleep 300 &` dies with its shell
        self._returncode = self._proc.wait()
        # A descendant that left the group may still hold the pipe: it gets a short drain, then is killed.
        self._drain_deadline = time.monotonic() + EXEC_DRAIN_AFTER_EXIT_S

    def _kill_pipe_holders(self) -> None:
        """Kill every other process holding our output pipe (found by inode in /proc), then stop reading."""
        assert self._out is not None
        pipe = f"pipe:[{os.fstat(self._out).st_ino}]"
        killed = 0
        with contextlib.suppress(OSError):
            for pid in (int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
                with contextlib.suppress(OSError):
                    fd_dir = f"/proc/{pid}/fd"
                    if any(_readlink(os.path.join(fd_dir, fd)) == pipe for fd in os.listdir(fd_dir)):
                        os.kill(pid, signal.SIGKILL)
                        killed += 1
        self._close_out()
        self._drained_note = (
            f"\n[{killed} background process(es) kept the output open after the shell exited; "
            f"killed after {EXEC_DRAIN_AFTER_EXIT_S:g}s]"
        )

    def _sandbox_failure(self) -> ToolFailed | None:
        """The error result of a sandbox that never started (bwrap wrote no exit-code), else None."""
        if self._status is None:
            return None
        status = b""
        with contextlib.suppress(OSError):
            os.set_blocking(self._status, False)
            status = os.read(self._status, EXEC_READ_CHUNK_BYTES)
        os.close(self._status)
        self._status = None
        if self._returncode == 0 or sandbox_started(status) or self._bounds.oom_kills():
            return None  # bwrap killed by the command's memory limit (its tmpfs is charged there too) did start
        why = self._captured.text().strip() or f"bwrap exited with status {self._returncode}"
        return ToolFailed(error=f"the sandbox did not start, so the command did not run: {why}")

    def _kill(self) -> None:
        if self._returncode is None:
            procutil.kill_group(self.pgid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._returncode = self._proc.wait(REAP_TIMEOUT_S)
        self._close_out()

    def _timed_out(self) -> None:
        exited = self._returncode is not None
        self._kill()
        # exited: the shell had exited; a descendant that left the group kept the output pipe open.
        self._finish(CommandTimedOut(self.timeout_s, self._output(), self._exit_code() if exited else None))

    def _shell_status(self) -> int | None:
        return None if self._returncode is None else self._exit_code()

    def _exit_code(self) -> int:
        rc = self._returncode
        assert rc is not None
        return rc if rc >= 0 else 128 - rc  # shell convention for "killed by signal N"

    def _exit_result(self) -> CommandExited:
        rc = self._returncode
        killed_by = signal.Signals(-rc).name if rc is not None and rc < 0 else None
        return CommandExited(self._exit_code(), self._output(), killed_by)

    def _output(self) -> CapturedOutput:
        captured = self._captured
        text = captured.text()
        failed = self._returncode != 0  # still running (a timeout, a cancel) counts: it did not succeed
        return CapturedOutput(
            output=text
            + self._drained_note
            + self._bounds.note(text, failed, self._shell_status())
            + (self._refusal_note(text, failed) if self._refusal_note is not None else ""),
            truncated=captured.truncated,
            total_bytes=captured.total,
            cut_bytes=captured.cut_bytes,
            cut_lines=captured.cut_lines,
        )

    def _close_out(self) -> None:
        if self._out is not None:
            assert self._proc.stdout is not None
            self._proc.stdout.close()
            self._out = None

    def _finish(self, result: CommandResult) -> None:
        self._close_gate()  # a command never released (cancelled first) never runs
        self._bounds.close()
        self._close_out()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None
        if self._status is not None:
            os.close(self._status)
            self._status = None
        note = sweep_commondirs(*self._git_dirs) if self._git_dirs[1] else ""
        if note and not isinstance(result, ToolFailed) and result.output is not None:
            output = msgspec.structs.replace(result.output, output=result.output.output + note)
            result = msgspec.structs.replace(result, output=output)
        self.result = result


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def run_command(command: str, cwd: str, timeout_s: float, wrap: Wrap | None = None) -> CommandResult:
    """Run to completion in-process (tests, standalone mode)."""
    return Command(command, cwd, timeout_s, wrap).run_to_end()
