"""The executor process: serve PreviewTool / RunTool / CancelTool / Shutdown over one pipe."""

from __future__ import annotations

import collections
import contextlib
import math
import os
import signal
import time
import types
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import assert_never

from dashfloat import procutil
from dashfloat.catalogue import mutates
from dashfloat.channel import Channel, PeerDied, ProtocolError
from dashfloat.executor import _changes
from dashfloat.executor._capture import LiveTail
from dashfloat.executor._checkpoints import run_checkpointed
from dashfloat.executor._confine import remove_left_behind, sweep
from dashfloat.executor._errors import error_result
from dashfloat.executor._exec import Command
from dashfloat.executor._limits import PATH_CANDIDATES_MAX, PATH_QUERY_MAX_CHARS
from dashfloat.executor._path_index import PathIndex, build_index, find_paths, stale
from dashfloat.executor._restore import apply_restore, preview_restore
from dashfloat.executor._sandbox import Sandbox
from dashfloat.executor._tools import failure_message, preview_call, start_command
from dashfloat.executor.path_policy import PathError, Root
from dashfloat.protocol import (
    AgentToExecutor,
    ApplyRestore,
    CancelTool,
    CommandOutput,
    CommandStarted,
    ExecuteCommandArgs,
    ExecutorToAgent,
    FindPaths,
    FrameRejected,
    PathsFound,
    PreviewReady,
    PreviewRestore,
    PreviewTool,
    RestoreApplied,
    RestorePreviewed,
    RunTool,
    SandboxState,
    Shutdown,
    ToolFinished,
)

_Reply = ExecutorToAgent

_SIGTERM_EXIT = 128 + signal.SIGTERM

_test_hold_report: Callable[[Command], None] | None = None
"""Tests only: called once a command has started and before its CommandStarted goes out, the window in which the
executor's death must not leave the command running (ADR 0050). A test sets it before the executor is forked."""


class _Stop(Exception):
    """Shutdown or a dead peer: stop serving."""


class _Server:
    """One agent's executor: a single thread that selects over the pipe and the running command."""

    def __init__(self, channel: Channel[AgentToExecutor], root: Root, exec_timeout_s: float, sandbox: Sandbox) -> None:
        self.channel = channel
        self.root = root  # fixed at start: the fd is held until the process exits
        self.sandbox = sandbox
        self.exec_timeout_s = exec_timeout_s
        self.running: tuple[str, Command] | None = None
        self.before_command: _changes.Snapshot | str | None = None
        self.queued: collections.deque[RunTool] = collections.deque()
        self.index: PathIndex | None = None
        """The file index for @ completion: built at the first FindPaths, dropped when a tool may change files."""

    def on_sigterm(self, signum: int, frame: types.FrameType | None) -> None:
        if self.running is not None:
            procutil.kill_group(self.running[1].pgid)
        # What left the command's group (setsid, a double fork) outside the sandbox: below us (we are its subreaper),
        # and after us nobody would kill it.
        procutil.kill_descendants()
        os._exit(_SIGTERM_EXIT)  # the parent is gone or wants us gone: nobody is left to answer

    def on_sigtstp(self, signum: int, frame: types.FrameType | None) -> None:
        """Ctrl-Z (the TUI's job stops): everything our commands started stops with us, and continues with us on
        ``fg``; the running command's timeout does not count the stopped time. The command leads a group of its own
        (for the group kill), and what it started may have made a session of its own (``setsid``, a daemon): the
        terminal's and the TUI's SIGTSTP reach neither, so we stop every process below us (ADR 0054, ADR 0058)."""
        command = self.running[1] if self.running is not None else None
        # What is stopped already (a command that stopped itself) is left to whoever stopped it: fg does not
        # continue it (ADR 0063). Read first: the group's SIGSTOP below would hide it.
        stopped_before = procutil.stopped_descendants() if procutil.has_children() else set()
        if command is not None:
            with contextlib.suppress(OSError):
                os.killpg(command.pgid, signal.SIGSTOP)  # the group at once, before the walk of /proc
        stopped_pids = procutil.stop_descendants(leave=stopped_before)
        # Killed while stopped (`kill -9 %1`), we could continue nothing: the guard kills it then (ADR 0063).
        guard = procutil.StopGuard(stopped_pids) if stopped_pids else None
        stopped = time.monotonic()
        os.kill(os.getpid(), signal.SIGSTOP)  # returns on SIGCONT (`fg`)
        if command is not None:
            command.postpone(time.monotonic() - stopped)
        # Exactly what we stopped: the command's group is among it (each member is below us).
        procutil.continue_processes(stopped_pids)
        if guard is not None:
            guard.release()

    def run(self) -> None:
        try:
            while True:
                # What our commands left behind (bwrap's reaper outlives bwrap; a daemon that escaped its group)
                # is re-parented to us: collected between calls, so at most one call's strays wait as zombies.
                procutil.reap_orphans()
                if self.queued:
                    self.run_tool(self.queued.popleft())
                else:
                    self.handle(self.receive())
        except _Stop:
            pass
        finally:
            if self.running is not None:
                procutil.kill_group(self.running[1].pgid)
            procutil.kill_descendants()  # as on SIGTERM: nothing our commands started outlives us
            remove_left_behind()  # their cgroups, now empty (or about to be: best effort)

    def receive(self) -> AgentToExecutor | None:
        try:
            return self.channel.recv()
        except PeerDied as exc:
            raise _Stop from exc
        except ProtocolError as exc:
            self.send(FrameRejected(error=str(exc)))
            return None

    def send(self, message: _Reply) -> None:
        try:
            self.channel.send(message)
        except PeerDied as exc:
            raise _Stop from exc

    def handle(self, message: AgentToExecutor | None) -> None:
        match message:
            case None:
                pass
            case PreviewTool(call_id=call_id, args=args):
                p = preview_call(args, self.root, self.sandbox.state)
                self.send(
                    PreviewReady(
                        call_id=call_id,
                        lines=p.lines,
                        digest=p.digest,
                        error=p.error,
                        summary=p.summary,
                        full=p.full,
                        protected=p.protected,
                    )
                )
            case RunTool():
                if self.running is None:
                    self.run_tool(message)
                else:
                    self.queued.append(message)  # calls arrive one at a time; keep reading the pipe anyway
            case PreviewRestore(ref=ref, store=store, files=files):
                self.send(RestorePreviewed(ref=ref, files=preview_restore(self.root, store, files)))
            case ApplyRestore(ref=ref, store=store, files=files, digests=digests):
                self.send(RestoreApplied(ref=ref, outcomes=apply_restore(self.root, store, files, digests)))
            case FindPaths():
                self.send(self.find_paths(message))
            case CancelTool(call_id=call_id):
                if self.running is not None and self.running[0] == call_id:
                    self.running[1].cancel()
            case Shutdown():
                if self.running is not None:
                    self.running[1].cancel()
                    self.finish_running()
                for queued in self.queued:
                    self.send(ToolFinished(queued.call_id, error_result("the executor shut down before running it")))
                raise _Stop
            case _:
                assert_never(message)

    def find_paths(self, message: FindPaths) -> PathsFound:
        if len(message.query) > PATH_QUERY_MAX_CHARS:
            notice = f"a mention longer than {PATH_QUERY_MAX_CHARS} characters is not completed"
            return PathsFound(message.ref, message.query, [], notice=notice)
        index = self.index
        try:
            self.root.check()  # the root is gone: every tool says so, and so does completion
            if index is None or stale(index, message.refresh, time.monotonic()):
                index = self.index = build_index(self.root)
        except PathError as exc:
            return PathsFound(message.ref, message.query, [], notice=str(exc))
        paths = find_paths(index, self.root, message.query, PATH_CANDIDATES_MAX)
        return PathsFound(message.ref, message.query, paths, notice=index.notice)

    def run_tool(self, message: RunTool) -> None:
        args = message.args
        if mutates(args):
            self.index = None  # what it writes or runs may add or remove files: the next mention lists afresh
        if not isinstance(args, ExecuteCommandArgs):
            done = run_checkpointed(
                args, self.root, message.checkpoint_store, self.exec_timeout_s, message.expect_digest
            )
            self.send(ToolFinished(message.call_id, done.result, checkpoint=done.checkpoint, notice=done.notice))
            return
        # What the command changes is told by comparing the workspace before and after it (bounded).
        self.before_command = _changes.snapshot(self.root) if message.checkpoint_store else None
        try:
            command = start_command(args, self.root, self.exec_timeout_s, self.sandbox, message.sandbox, held=True)
        except Exception as exc:
            self.send(ToolFinished(message.call_id, error_result(failure_message(exc, args))))
            return
        self.running = (message.call_id, command)
        command.live = LiveTail()
        if _test_hold_report is not None:
            _test_hold_report(command)
        self.send(CommandStarted(message.call_id, command.pgid))
        command.release()  # only now: should we die from here on, the agent kills the group (ADR 0050)
        while command.result is None:
            if command.pump(self.channel.fileno()):
                self.handle(self.receive())  # a CancelTool or Shutdown lands here, mid-command
            chunk = command.take_live()
            if chunk is not None:
                self.send(CommandOutput(message.call_id, text=chunk[0], skipped_bytes=chunk[1]))
        # What it printed last, still held for the interval when it exited, goes out before the result.
        rest = command.live.take(math.inf)
        if rest is not None:
            self.send(CommandOutput(message.call_id, text=rest[0], skipped_bytes=rest[1]))
        self.finish_running()

    def finish_running(self) -> None:
        assert self.running is not None
        call_id, command = self.running
        self.running = None
        result = command.result
        assert result is not None
        changes = None
        if self.before_command is not None:
            changes = _changes.compare(self.before_command, _changes.snapshot(self.root))
            self.before_command = None
        self.send(ToolFinished(call_id, result, changes=changes))


def serve(conn: Connection, root: str, exec_timeout_s: float, sandbox: SandboxState | None = None) -> None:
    """The executor process main loop; returns on Shutdown or when the agent's end of the pipe closes."""
    procutil.die_with_parent(signal.SIGTERM)
    procutil.become_subreaper()  # our commands' orphans are ours to collect, not the main process's at exit
    state = sandbox if sandbox is not None else SandboxState()
    channel: Channel[AgentToExecutor] = Channel(conn, AgentToExecutor, "agent->executor")
    # root is the launch's real path: an executor restarted after the directory was swapped must not adopt
    # whatever the path names now
    fixed = Root(root, launch_real=True)
    server = _Server(channel, fixed, exec_timeout_s, Sandbox.for_session(state, os.environ))
    signal.signal(signal.SIGTERM, server.on_sigterm)
    signal.signal(signal.SIGTSTP, server.on_sigtstp)
    # What a DashFloat SIGKILLed whole left running in its commands' cgroups ends now (ADR 0062).
    sweep()
    server.run()
