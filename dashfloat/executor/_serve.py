"""The executor process: serve PreviewTool / RunTool / CancelTool / Shutdown over one pipe."""

from __future__ import annotations

import collections
import contextlib
import math
import os
import signal
import threading
import time
import types
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, assert_never

import msgspec

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
    ConfigureMcp,
    ExecuteCommandArgs,
    ExecutorToAgent,
    ExposeJob,
    FindPaths,
    FrameRejected,
    HooksRan,
    JobExposed,
    JobKillArgs,
    JobOutputArgs,
    KillJobs,
    McpCallArgs,
    McpSearchArgs,
    McpServerConfig,
    McpServersListed,
    PathsFound,
    PreviewReady,
    PreviewRestore,
    PreviewTool,
    RestoreApplied,
    RestorePreviewed,
    RunHooks,
    RunTool,
    SandboxState,
    Shutdown,
    ToolCancelled,
    ToolFailed,
    ToolFinished,
    ToolResult,
    result_object,
)

if TYPE_CHECKING:
    from dashfloat.executor._jobs import Jobs  # imported with the first background job (issue 36)
    from dashfloat.executor._mcp_link import McpLink  # imported once MCP servers are configured (ADR 0086)
    from dashfloat.hooks import HookVerdict  # imported with the first hook run: most sessions have none

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
        self.mcp: McpLink | None = None
        """The MCP host (ADR 0086), once servers are configured; forked again at the next call after it died."""
        self.hooked: tuple[RunTool, HookVerdict] | None = None
        """The call whose hooks run (ADR 0088), and what its PreToolUse hooks said: its PostToolUse ones follow."""
        self.hook_cancelled = False
        self.event_hooks: list[RunHooks] = []
        """Event hooks to run (the first runs now): calls and further event hooks wait for them."""
        # background jobs (issue 36, ADR 0080): made at the first job call; job threads send through ``send_quietly``
        self.jobs: Jobs | None = None
        self.send_lock = threading.Lock()
        self.fg_watch = procutil.FgWatch()  # Ctrl-Z's handler waits on it for `fg` (ADR 0095)

    def on_sigterm(self, signum: int, frame: types.FrameType | None) -> None:
        if self.running is not None:
            procutil.kill_group(self.running[1].pgid)
        if self.jobs is not None:
            self.jobs.kill_groups()  # background jobs (issue 36)
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
        # Not a SIGSTOP of our own: an `fg` that came while we stopped the others would find us running, and we
        # would stop for good after it (ADR 0095). We wait, stopping nothing, and read which came last.
        self.fg_watch.wait_for_fg()
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
                if self.jobs is None or not self.jobs.running():
                    procutil.reap_orphans()
                else:
                    self.jobs.reap_others()  # background jobs (issue 36): a job's own exit is its thread's to wait for
                if self.queued:
                    self.run_tool(self.queued.popleft())
                else:
                    self.handle(self.receive())
        except _Stop:
            pass
        finally:
            if self.running is not None:
                procutil.kill_group(self.running[1].pgid)
            if self.mcp is not None:
                self.mcp.stop()  # asked first: the host kills its servers' groups as it goes
            if self.jobs is not None:
                self.jobs.close()  # background jobs (issue 36): each tree killed, its end said if the agent listens
            procutil.kill_descendants()  # as on SIGTERM: nothing our commands started outlives us
            remove_left_behind()  # their cgroups, now empty (or about to be: best effort)
            self.sandbox.close()  # the registry proxy (killed above as a descendant): its socket's directory goes

    def receive(self) -> AgentToExecutor | None:
        if self.mcp is not None:
            self.mcp_wait()
        try:
            return self.channel.recv()
        except PeerDied as exc:
            raise _Stop from exc
        except ProtocolError as exc:
            self.send(FrameRejected(error=str(exc)))
            return None

    def send(self, message: _Reply) -> None:
        try:
            with self.send_lock:  # job threads send too (issue 36)
                self.channel.send(message)
        except PeerDied as exc:
            raise _Stop from exc

    def send_quietly(self, message: _Reply) -> None:
        """A job thread's send: a dead agent is the main thread's to notice (issue 36)."""
        with contextlib.suppress(_Stop, OSError):
            self.send(message)

    def job_call(self, message: RunTool) -> None:
        """A background start, job_output or job_kill (issue 36, ADR 0080); what arrived meanwhile is handled next."""
        from dashfloat.executor._jobs import Jobs, serve_call

        if self.jobs is None:
            self.jobs = Jobs(self.send_quietly)
        result, deferred = serve_call(
            self.jobs, message, self.root, self.sandbox, self.channel, self.receive, self.send
        )  # fmt: skip
        self.finished(ToolFinished(message.call_id, result))
        for received in deferred:
            self.handle(received)

    def handle(self, message: AgentToExecutor | None) -> None:
        match message:
            case None:
                pass
            case PreviewTool(call_id=call_id, args=McpCallArgs() as args):
                self.send(self.mcp_preview(call_id, args))
            case ConfigureMcp(servers=servers):
                self.configure_mcp(servers)
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
                if self.running is None and self.hooked is None and not self.event_hooks:
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
                elif self.hooked is not None and self.hooked[0].call_id == call_id:
                    self.hook_cancelled = True  # its hook is killed, and the call is not run
            case RunHooks():  # hooks (ADR 0088): UserPromptSubmit, Stop, SessionStart
                self.event_hooks.append(message)
                if len(self.event_hooks) == 1:
                    self.run_event_hooks()
            case KillJobs(job_ids=job_ids):  # background jobs (issue 36): /clear, /jobs stop
                if self.jobs is not None:
                    self.jobs.kill_all(job_ids)
            case ExposeJob(job_id=job_id):  # /jobs expose (issue 36)
                if self.jobs is None:
                    self.send(JobExposed(job_id, "no background job was started in this session", ok=False))
                else:
                    self.send(self.jobs.expose(job_id))
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
        if message.hooks is not None and not self.pre_hooks(message):
            return
        args = message.args
        if isinstance(args, McpCallArgs | McpSearchArgs):  # MCP client (ADR 0086)
            self.finished(ToolFinished(message.call_id, self.run_mcp(message)))
            return
        if isinstance(args, JobOutputArgs | JobKillArgs) or (isinstance(args, ExecuteCommandArgs) and args.background):
            self.job_call(message)  # background jobs (issue 36)
            return
        if mutates(args):
            self.index = None  # what it writes or runs may add or remove files: the next mention lists afresh
        if not isinstance(args, ExecuteCommandArgs):
            done = run_checkpointed(
                args, self.root, message.checkpoint_store, self.exec_timeout_s, message.expect_digest
            )
            self.finished(ToolFinished(message.call_id, done.result, checkpoint=done.checkpoint, notice=done.notice))
            return
        # What the command changes is told by comparing the workspace before and after it (bounded).
        self.before_command = _changes.snapshot(self.root) if message.checkpoint_store else None
        try:
            command = start_command(args, self.root, self.exec_timeout_s, self.sandbox, message.sandbox, held=True)
        except Exception as exc:
            self.finished(ToolFinished(message.call_id, error_result(failure_message(exc, args))))
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
        self.finished(ToolFinished(call_id, result, changes=changes, refused=command.refused))  # issue 35: escalation

    # ------------------------------------------------------------ hooks (ADR 0088)

    def run_event_hooks(self) -> None:
        """Run the waiting event hooks in order, each answered with its HooksRan (what comes meanwhile waits)."""
        from dashfloat.executor._hooks import run_hooks
        from dashfloat.hooks import HOOK_EVENTS

        while self.event_hooks:
            message = self.event_hooks[0]
            event = next(name for name in HOOK_EVENTS if name == message.event)

            def interrupted() -> bool:
                self.handle(self.receive())  # a Shutdown lands here; calls and other hooks queue
                return False

            fd = self.channel.fileno()
            verdict = run_hooks(
                event, message.hooks, message.payload.encode(), self.root, self.sandbox, fd, interrupted
            )
            assert verdict is not None  # never interrupted
            notices = [line for line in verdict.notice.split("\n") if line]
            self.event_hooks.pop(0)
            self.send(HooksRan(message.ref, verdict.blocked, verdict.reason, verdict.context, notices))

    def run_call_hooks(self, message: RunTool, post: ToolResult | None = None) -> HookVerdict | None:
        """Run the call's PreToolUse hooks (``post`` None) or its PostToolUse ones; None: cancelled meanwhile."""
        hooks = message.hooks
        assert hooks is not None
        from dashfloat.executor._hooks import run_hooks
        from dashfloat.hooks import HookEvent, tool_payload

        event: HookEvent = "PreToolUse" if post is None else "PostToolUse"
        tool_input = msgspec.to_builtins(message.args)
        tag = tool_input.pop("tool")  # the union's tag is ours: the input is what the model wrote
        payload = tool_payload(
            event,
            hooks.session_id,
            self.root.path,
            hooks.tool_name or tag,
            tool_input,
            message.call_id,
            None if post is None else result_object(post),
        )
        self.hook_cancelled = False

        def interrupted() -> bool:
            self.handle(self.receive())  # a CancelTool or Shutdown lands here, mid-hook
            return self.hook_cancelled

        fd = self.channel.fileno()
        return run_hooks(
            event, hooks.pre if post is None else hooks.post, payload, self.root, self.sandbox, fd, interrupted
        )

    def pre_hooks(self, message: RunTool) -> bool:
        """The call's PreToolUse hooks: False when one blocked it or it was cancelled (its result is sent then)."""
        from dashfloat.hooks import HookVerdict

        assert message.hooks is not None
        self.hooked = (message, HookVerdict())
        verdict = self.run_call_hooks(message) if message.hooks.pre else HookVerdict()
        self.hooked = None
        if verdict is None:
            self.send(ToolFinished(message.call_id, ToolCancelled()))
            return False
        notices = [verdict.notice] if verdict.notice else []
        if verdict.blocked:
            # The model reads why, as the call's error: a refusal it can act on.
            error = f"not run: a PreToolUse hook blocked it: {verdict.reason}"
            self.send(ToolFinished(message.call_id, ToolFailed(error=error), hook_notices=notices))
            return False
        self.hooked = (message, verdict)
        return True

    def finished(self, done: ToolFinished) -> None:
        """Send a call's result, once its PostToolUse hooks ran (a call that did not run has none), with what its
        hooks added for the model and the user."""
        hooked, self.hooked = self.hooked, None
        if hooked is None or hooked[0].call_id != done.call_id:
            self.send(done)
            return
        from dashfloat.hooks import HookVerdict, combine

        message, before = hooked
        verdicts = [before]
        if message.hooks is not None and message.hooks.post and not isinstance(done.result, ToolFailed | ToolCancelled):
            self.hooked = hooked  # an Esc now cancels the hooks; the result stands
            after = self.run_call_hooks(message, done.result)
            self.hooked = None
            verdicts.append(after if after is not None else HookVerdict(notice="PostToolUse hooks cancelled"))
        verdict = combine(verdicts)
        notices = [line for line in verdict.notice.split("\n") if line]
        self.send(msgspec.structs.replace(done, hook_context=verdict.context, hook_notices=notices))

    # ------------------------------------------------------------ MCP client (ADR 0086)

    def configure_mcp(self, servers: list[McpServerConfig]) -> None:
        """The session's MCP servers: the host is started now (its startup servers start at once)."""
        from dashfloat.executor._mcp_link import McpLink

        if self.mcp is not None:
            self.mcp.stop()
        self.mcp = McpLink(servers, self.sandbox, self.root) if servers else None
        if self.mcp is not None:
            self.mcp.start()
            self.send(self.mcp.listing())

    def mcp_wait(self) -> None:
        """Until the agent's pipe is readable: pass on what the host says of its servers (or its death)."""
        assert self.mcp is not None
        while sources := self.mcp.sources():
            ready = wait([self.channel.conn, *sources])
            if any(s in ready for s in sources):
                for message in self.mcp.read():
                    if isinstance(message, McpServersListed):
                        self.send(message)
            if self.channel.conn in ready:
                return

    def run_mcp(self, message: RunTool) -> ToolResult:
        if self.mcp is None:
            return error_result("no MCP server is configured ([mcp.servers.NAME] in config.toml)")
        return self.mcp.call(message, self.channel, self.handle, self.queued.append, self.send)

    def mcp_preview(self, call_id: str, args: McpCallArgs) -> PreviewReady:
        if self.mcp is None:
            return PreviewReady(call_id, [], error="no MCP server is configured ([mcp.servers.NAME] in config.toml)")
        config = self.mcp.configs.get(args.server)
        if config is None:
            names = ", ".join(self.mcp.configs)
            return PreviewReady(call_id, [], error=f"no MCP server is named {args.server!r} (servers: {names})")
        info = self.mcp.settle(args.server, self.send)
        from dashfloat.executor._mcp_link import describe_server, preview_lines

        lines, full = preview_lines(args, info, describe_server(config, self.sandbox))
        return PreviewReady(call_id, lines, summary=f"MCP {args.server}", full=full)


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
    server.fg_watch.install(server.on_sigtstp)
    # What a DashFloat SIGKILLed whole left running in its commands' cgroups ends now (ADR 0062).
    sweep()
    server.run()
