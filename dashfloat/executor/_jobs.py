"""Background jobs (issue 36, ADR 0080): commands started with ``background: true`` that outlive their call.

A job is a ``Command`` like any other (the same gate, sandbox, bounds and group kill), with no timeout of its own,
pumped by a thread of its own: its output goes into a bounded ``Ring`` (the head and the newest bytes; the middle
dropped and counted), so a job that floods costs the executor the same memory as one that is silent. The executor's
main thread starts jobs, waits for their readiness, reads and stops them; a job's thread only reads its pipe and
notices its exit. Every spawn happens on the main thread (bwrap's ``--die-with-parent`` follows the spawning thread).

Nothing outlives the session: a job's bwrap dies with the executor (``--die-with-parent``, the PID namespace then
takes the rest); ``Jobs.kill_all`` on every orderly exit; the agent kills a job's group should the executor die
(``JobStarted.pgid``), and the cgroup sweep catches what escaped (ADR 0062).
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import threading
import time
from collections.abc import Callable
from typing import Final

from dashfloat.catalogue import JOB_READY_TIMEOUT_DEFAULT_S, JOBS_MAX_RUNNING
from dashfloat.channel import Channel
from dashfloat.executor._capture import HeadTail, LiveTail
from dashfloat.executor._exec import Command
from dashfloat.executor._sandbox import Sandbox
from dashfloat.executor._session_net import SessionNet
from dashfloat.executor.path_policy import Root
from dashfloat.protocol import (
    AgentToExecutor,
    CancelTool,
    CapturedOutput,
    CommandExited,
    CommandTimedOut,
    ExecuteCommandArgs,
    JobExited,
    JobExposed,
    JobKillArgs,
    JobOutput,
    JobOutputArgs,
    JobReport,
    JobStarted,
    JobState,
    RunTool,
    Shutdown,
    ToolCancelled,
    ToolFailed,
    ToolResult,
)

JOB_RING_BYTES: Final = 1024 * 1024
"""A job's newest output kept (per job): what job_output can still read. Older bytes are dropped and counted."""
JOB_HEAD_BYTES: Final = 8 * 1024
"""A job's first output, kept for good (what it said as it started)."""
JOB_FINISHED_KEPT: Final = 16
"""Ended jobs still readable by id; past this the oldest is forgotten (an error naming the known ids)."""
JOB_START_GRACE_S: Final = 0.25
"""Without a readiness condition, how long a start waits for the job's first output (or its exit) before answering."""
JOB_PORT_POLL_S: Final = 0.05
"""How often a port readiness wait looks at the job's listening sockets (``/proc/PID/net/tcp``)."""
JOB_KILL_WAIT_S: Final = 5.0
"""How long a stop waits for the job's thread to see its group gone (SIGKILL: at once, in practice)."""
JOB_LINE_MAX_BYTES: Final = 4096
"""The unfinished last line kept for the readiness pattern and the last line /jobs shows."""
JOB_NO_TIMEOUT_S: Final = 10 * 365 * 24 * 3600.0
"""A job's timeout when its call gives none: in effect none (it runs until stopped or the session ends)."""
_LISTEN: Final = "0A"
"""TCP_LISTEN in ``/proc/net/tcp``'s ``st`` column."""


class Ring:
    """A job's output: the first ``head_max`` bytes and the newest ``tail_max``; ``total`` counts every byte."""

    def __init__(self, head_max: int = JOB_HEAD_BYTES, tail_max: int = JOB_RING_BYTES) -> None:
        self.head_max = head_max
        self.tail_max = tail_max
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        """Take the next bytes."""
        self.total += len(chunk)
        room = self.head_max - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if len(chunk) >= self.tail_max:
            self.tail = bytearray(chunk[-self.tail_max :])
            return
        self.tail += chunk
        excess = len(self.tail) - self.tail_max
        if excess > 0:
            del self.tail[:excess]  # CPython moves the buffer's start: no copy of what stays

    @property
    def tail_start(self) -> int:
        """The offset of the first byte the tail holds."""
        return self.total - len(self.tail)

    def dropped(self) -> int:
        """Bytes neither the head nor the tail holds (the dropped middle)."""
        return max(0, self.tail_start - len(self.head))

    def dropped_after(self, cursor: int) -> int:
        """Bytes after offset ``cursor`` that neither the head nor the tail holds."""
        return max(0, self.tail_start - max(min(max(0, cursor), self.total), len(self.head)))

    def read(self, cursor: int) -> CapturedOutput:
        """What job_output returns from ``cursor``: bounded head and tail like a command's result, the ring's dropped
        middle said in a marker line."""
        cursor = min(max(0, cursor), self.total)
        shown = HeadTail()
        if cursor < len(self.head):
            shown.feed(bytes(self.head[cursor:]))
        start = max(cursor, len(self.head))
        dropped = max(0, self.tail_start - start)
        if dropped:
            marker = (
                f"\n[… {dropped} bytes of the job's output were dropped here: a job keeps its first {self.head_max} "
                f"and its last {self.tail_max} bytes …]\n"
            )
            shown.feed(marker.encode())
        shown.feed(bytes(self.tail[max(0, start - self.tail_start) :]))
        return CapturedOutput(
            output=shown.text(),
            truncated=shown.truncated or dropped > 0,
            total_bytes=self.total - cursor,
            cut_bytes=shown.cut_bytes + dropped,
            cut_lines=shown.cut_lines,
        )


def listening_ports(table: str) -> set[int]:
    """The ports in LISTEN state in one ``/proc/PID/net/tcp`` or ``tcp6`` table."""
    ports = set()
    for line in table.splitlines()[1:]:
        fields = line.split()
        if len(fields) > 3 and fields[3] == _LISTEN:
            with contextlib.suppress(ValueError, IndexError):
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def job_ports(pid: int) -> tuple[set[int], str]:
    """The ports listening in the network namespace of ``pid``'s sandbox (its first child's, else its own), and that
    namespace (``net:[N]``)."""
    pids = [*_children_of(pid), pid]
    for each in pids:
        found: set[int] = set()
        for table in ("tcp", "tcp6"):
            with contextlib.suppress(OSError), open(f"/proc/{each}/net/{table}") as lines:
                found |= listening_ports(lines.read())
        with contextlib.suppress(OSError):
            return found, os.readlink(f"/proc/{each}/ns/net")
    return set(), ""


def port_listens(pid: int, port: int) -> bool:
    """Whether a socket listens on ``port`` in the network namespace of ``pid`` or of one of its children (bwrap's
    child is the sandbox's first process; a sandbox with a namespace of its own has it there)."""
    pids = [pid]
    with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{pid}/children") as children:
        pids += [int(p) for p in children.read().split()]
    for each in pids:
        for table in ("tcp", "tcp6"):
            with contextlib.suppress(OSError), open(f"/proc/{each}/net/{table}") as lines:
                if port in listening_ports(lines.read()):
                    return True
    return False


class Job:
    """One background job: its command, its output ring, the thread pumping it."""

    def __init__(
        self,
        job_id: int,
        call_id: str,
        command_line: str,
        command: Command,
        send: Callable[[JobOutput | JobExited], None],
        notify: Callable[[], None],
        pattern: str | None = None,
    ) -> None:
        self.id = job_id
        self.call_id = call_id
        self.command_line = command_line
        self.command = command
        self.started = time.time()
        self.ring = Ring()
        self.lock = threading.Lock()
        self.state: JobState = "running"
        self.exit_code: int | None = None
        self.note = ""
        self.matched = False
        self._pattern = re.compile(pattern) if pattern else None
        self._line = b""
        self.last_line = ""
        self._send = send
        self._notify = notify
        self._stop_asked = False
        self._wake_r, self._wake_w = os.pipe()
        self.done = threading.Event()
        self._live = LiveTail()
        self.relays: list[Relay] = []
        """Its ports relayed to this machine's loopback (/jobs expose); closed when it ends."""
        command.sink = self._feed
        self._thread = threading.Thread(target=self._pump, name=f"job-{job_id}", daemon=True)

    @property
    def pgid(self) -> int:
        """The job's process group (its gate, then bwrap or the shell)."""
        return self.command.pgid

    def start(self) -> None:
        """Release the command (its group is known to the agent by now) and start pumping it."""
        self.command.release()
        self._thread.start()

    def _feed(self, chunk: bytes) -> None:
        """The job's thread: output read from its pipe."""
        with self.lock:
            self.ring.feed(chunk)
            text = self._line + chunk
            lines = text.split(b"\n")
            complete, self._line = lines[:-1], lines[-1][-JOB_LINE_MAX_BYTES:]
            if self._pattern is not None and not self.matched:
                for line in [*complete[-1000:], self._line]:  # a flood's middle lines are not looked at
                    if self._pattern.search(line.decode(errors="replace")):
                        self.matched = True
                        self._pattern = None
                        break
            last = self._line or (complete[-1] if complete else b"")
            if last.strip():
                self.last_line = last[-JOB_LINE_MAX_BYTES:].decode(errors="replace").strip()
        self._live.feed(chunk)
        self._notify()

    def _pump(self) -> None:
        command = self.command
        while command.result is None:
            if command.pump(self._wake_r):
                with contextlib.suppress(OSError):
                    os.read(self._wake_r, 64)
                if self._stop_asked:
                    command.cancel()
            chunk = self._live.take(time.monotonic())
            if chunk is not None:
                self._send(JobOutput(job_id=self.id, text=chunk[0], skipped_bytes=chunk[1]))
        self._ended(command.result)

    def _ended(self, result: ToolResult) -> None:
        rest = self._live.take(float("inf"))
        if rest is not None:
            self._send(JobOutput(job_id=self.id, text=rest[0], skipped_bytes=rest[1]))
        with self.lock:
            match result:
                case _ if self._stop_asked:
                    self.state = "killed"  # whatever its status says (a sandbox killed young reads as unstarted)
                case CommandExited(exit_code=code):
                    self.state, self.exit_code = "exited", code
                case CommandTimedOut(timeout_s=timeout):
                    self.state, self.note = "killed", f"stopped at its timeout ({timeout:g} s)"
                case ToolFailed(error=error):
                    self.state, self.note = "exited", error
                case _:
                    self.state = "killed"
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.done.set()
        for relay in self.relays:
            relay.close()
        ended = JobExited(self.id, self.state, self.exit_code, last_line=self.last_line, command=self.command_line)
        self._send(ended)
        self._notify()

    def stop(self, wait_s: float = JOB_KILL_WAIT_S) -> None:
        """Kill the job's whole tree (its group, and every process below its first one: a sandbox's, one that made a
        session of its own) and wait (bounded) until each is gone and its thread has seen it end."""
        if self.done.is_set():
            return
        tree = _tree(self.pgid)
        self._stop_asked = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        for pid in tree:
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
        deadline = time.monotonic() + wait_s
        self.done.wait(wait_s)
        while any(_live(pid) for pid in tree) and time.monotonic() < deadline:
            time.sleep(0.005)  # SIGKILLed: they are gone within milliseconds; a bound, not a synchronisation

    def report(self, cursor: int | None, ready: bool | None = None, note: str = "") -> JobReport:
        """The job as a tool result: its state and its output after ``cursor`` (None: from the start)."""
        with self.lock:
            output = self.ring.read(cursor or 0)
            dropped = self.ring.dropped_after(cursor or 0)
            said = (
                f"{dropped} bytes of its output were dropped (a job keeps its first {self.ring.head_max} and its last "
                f"{self.ring.tail_max} bytes)"
                if dropped
                else ""
            )
            notes = [n for n in (self.note, note, said) if n]
            return JobReport(
                job_id=self.id,
                state=self.state,
                output=output,
                cursor=self.ring.total,
                exit_code=self.exit_code,
                ready=ready,
                note="; ".join(notes),
            )


class Jobs:
    """The executor's jobs: started, read and stopped from the main thread, each pumped by its own."""

    def __init__(self, send: Callable[[JobOutput | JobExited], None]) -> None:
        self._send = send
        self.jobs: dict[int, Job] = {}
        self._next_id = 1
        self.notify_r, self._notify_w = os.pipe()
        os.set_blocking(self.notify_r, False)
        os.set_blocking(self._notify_w, False)

    def running(self) -> list[Job]:
        """The jobs still running, oldest first."""
        return [job for job in self.jobs.values() if not job.done.is_set()]

    def refusal(self) -> ToolFailed | None:
        """Why a new job cannot start now (the cap, naming the running ones), or None."""
        running = self.running()
        if len(running) < JOBS_MAX_RUNNING:
            return None
        listed = ", ".join(f"{job.id} `{_short(job.command_line)}`" for job in running)
        return ToolFailed(
            error=f"not started: {JOBS_MAX_RUNNING} background jobs already run, the most at once ({listed}); stop "
            "one with job_kill, or run this command without background"
        )

    def adopt(self, call_id: str, command_line: str, command: Command, pattern: str | None) -> Job:
        """A started (held) command becomes the next job; ``Job.start`` releases it."""
        job = Job(self._next_id, call_id, command_line, command, self._send, self._wake_main, pattern)
        self._next_id += 1
        self.jobs[job.id] = job
        self._forget()
        return job

    def _wake_main(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._notify_w, b"x")

    def drain_notify(self) -> None:
        """Empty the wake-up pipe (the main thread, after it woke)."""
        with contextlib.suppress(BlockingIOError, OSError):
            while os.read(self.notify_r, 4096):
                pass

    def _forget(self) -> None:
        ended = [job_id for job_id, job in self.jobs.items() if job.done.is_set()]
        for job_id in ended[: max(0, len(ended) - JOB_FINISHED_KEPT)]:
            del self.jobs[job_id]

    def find(self, job_id: int) -> Job | ToolFailed:
        """Job ``job_id``, or the error naming the jobs there are."""
        job = self.jobs.get(job_id)
        if job is not None:
            return job
        if not self.jobs:
            return ToolFailed(error=f"no job {job_id}: no background job was started in this session")
        known = ", ".join(f"{j.id} ({j.state}, `{_short(j.command_line)}`)" for j in self.jobs.values())
        return ToolFailed(error=f"no job {job_id}: the known jobs are {known}")

    def output(self, job_id: int, cursor: int | None) -> ToolResult:
        """job_output."""
        job = self.find(job_id)
        return job if isinstance(job, ToolFailed) else job.report(cursor)

    def kill(self, job_id: int) -> ToolResult:
        """job_kill: the job's tree is gone when this returns (its output so far in the result)."""
        job = self.find(job_id)
        if isinstance(job, ToolFailed):
            return job
        if job.done.is_set():
            return job.report(None, note=f"it had already ended ({job.state}); nothing was stopped")
        job.stop()
        return job.report(None)

    def kill_all(self, job_ids: list[int] | None = None) -> None:
        """Stop these jobs (None or empty: every one), each waited for (bounded)."""
        for job in self.running():
            if not job_ids or job.id in job_ids:
                job.stop()

    def reap_others(self) -> None:
        """What ``procutil.reap_orphans`` does between calls, but never to a running job's first process: its thread
        waits for that exit (``waitpid(-1)`` would take it, and the job would never be seen to end)."""
        keep = {job.pgid for job in self.running()}
        for pid in _zombie_children():
            if pid not in keep:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)

    def expose(self, job_id: int) -> JobExposed:
        """/jobs expose: each port job ``job_id`` listens on in the session's namespace, relayed from the same port on
        this machine's loopback (another where that one is taken), until the job or the session ends."""
        job = self.find(job_id)
        if isinstance(job, ToolFailed):
            return JobExposed(job_id, job.error, ok=False)
        if job.done.is_set():
            return JobExposed(job_id, f"job {job_id} is not running ({job.state}): nothing to expose", ok=False)
        ports, namespace = job_ports(job.pgid)
        if not ports:
            return JobExposed(job_id, f"job {job_id} listens on no TCP port yet", ok=False)
        if namespace == os.readlink("/proc/self/ns/net"):
            listed = ", ".join(f"http://127.0.0.1:{port}/" for port in sorted(ports))
            return JobExposed(job_id, f"job {job_id} listens on this machine's loopback already: {listed}")
        from dashfloat.executor._session_net import current

        net = current()
        if net is None or not net.root or namespace != os.readlink(f"/proc/{net.pid}/ns/net"):
            return JobExposed(job_id, f"job {job_id}'s ports cannot be relayed here (only a root executor relays the "
                              "session's namespace)", ok=False)  # fmt: skip
        said = []
        for port in sorted(ports):
            relay = Relay(net, port, job.done)
            job.relays.append(relay)
            said.append(f"{port} at http://127.0.0.1:{relay.host_port}/")
        return JobExposed(job_id, f"job {job_id}'s port {', '.join(said)} on this machine, until the job ends")

    def kill_groups(self) -> None:
        """SIGKILL every running job's group at once (a signal handler: no waiting, no locks)."""
        from dashfloat import procutil

        for job in list(self.jobs.values()):
            if not job.done.is_set():
                procutil.kill_group(job.pgid)

    def close(self) -> None:
        """Stop every job and close the wake-up pipe (the executor's end)."""
        self.kill_all()
        for fd in (self.notify_r, self._notify_w):
            with contextlib.suppress(OSError):
                os.close(fd)


JOB_RELAY_BACKLOG: Final = 64
"""Connections an exposed port's listener holds before they are accepted (a browser opens a handful)."""
JOB_RELAY_CHUNK_BYTES: Final = 64 * 1024


class Relay:
    """One exposed port: a listener on this machine's loopback whose connections are relayed into the session's
    namespace, by a thread that entered it (root: ``setns`` is per thread), until the job ends or ``close``."""

    def __init__(self, net: SessionNet, port: int, done: threading.Event) -> None:
        import socket

        self.port = port
        self._done = done
        self._net = net
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind(("127.0.0.1", port))
        except OSError:
            self.listener.bind(("127.0.0.1", 0))  # the host's port is taken: another one, said in the reply
        self.listener.listen(JOB_RELAY_BACKLOG)
        self.host_port: int = self.listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, name=f"relay-{port}", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        import selectors
        import socket

        self._net.enter_for_good()  # this thread only: what it connects to is the session's loopback
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ)
        peers: dict[socket.socket, socket.socket] = {}
        try:
            while not self._done.is_set():
                for key, _ in selector.select(0.5):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    if sock is self.listener:
                        client, _ = self.listener.accept()
                        upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                        try:
                            upstream.connect(("127.0.0.1", self.port))
                        except OSError:
                            client.close()
                            upstream.close()
                            continue
                        peers[client], peers[upstream] = upstream, client
                        selector.register(client, selectors.EVENT_READ)
                        selector.register(upstream, selectors.EVENT_READ)
                        continue
                    try:
                        data = sock.recv(JOB_RELAY_CHUNK_BYTES)
                        if data:
                            peers[sock].sendall(data)
                    except OSError:
                        data = b""
                    if not data and sock in peers:  # one end closed: the pair goes
                        other = peers.pop(sock)
                        peers.pop(other, None)
                        for end in (sock, other):
                            selector.unregister(end)
                            end.close()
        except (OSError, ValueError):
            pass  # closed under it: the job ended
        finally:
            for sock in list(peers):
                with contextlib.suppress(OSError):
                    sock.close()
            selector.close()
            with contextlib.suppress(OSError):
                self.listener.close()

    def close(self) -> None:
        """Stop relaying (the job ended)."""
        with contextlib.suppress(OSError):
            self.listener.close()


def _children_of(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as children:
                found += [int(child) for child in children.read().split()]
    return found


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it, as the process table has them now."""
    tree, todo = [], [pid]
    while todo:
        each = todo.pop()
        tree.append(each)
        todo += _children_of(each)
    return tree


def _live(pid: int) -> bool:
    """Whether ``pid`` runs (not a zombie, not gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rpartition(b")")[2].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def _zombie_children() -> list[int]:
    """This process's exited, unreaped children (each thread's, and the orphans it collects as a subreaper)."""
    return [pid for pid in _children_of(os.getpid()) if not _live(pid) and os.path.exists(f"/proc/{pid}")]


def _short(command: str, width: int = 60) -> str:
    line = " ".join(command.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def serve_call(
    jobs: Jobs,
    message: RunTool,
    root: Root,
    sandbox: Sandbox,
    channel: Channel[AgentToExecutor],
    receive: Callable[[], AgentToExecutor | None],
    send: Callable[[JobStarted], None],
) -> tuple[ToolResult, list[AgentToExecutor]]:
    """Run one job call (a background start, job_output, job_kill): its result, and the messages that arrived
    during a start's readiness wait, for the caller to handle next (a CancelTool of this very call is handled here)."""
    args = message.args
    if isinstance(args, JobOutputArgs):
        return jobs.output(args.id, args.cursor), []
    if isinstance(args, JobKillArgs):
        return jobs.kill(args.id), []
    assert isinstance(args, ExecuteCommandArgs) and args.background
    refused = jobs.refusal()
    if refused is not None:
        return refused, []
    from dashfloat.executor._tools import failure_message, start_command

    try:
        # No timeout unless the call gives one: a job runs until it ends, is stopped, or the session ends.
        command = start_command(args, root, JOB_NO_TIMEOUT_S, sandbox, message.sandbox, held=True)
    except Exception as exc:
        return ToolFailed(error=failure_message(exc, args)), []
    job = jobs.adopt(message.call_id, args.command, command, args.ready_pattern)
    send(JobStarted(job_id=job.id, call_id=message.call_id, command=args.command, pgid=job.pgid))
    job.start()  # released only now: should the executor die from here on, the agent kills the group (ADR 0050)
    return wait_ready(jobs, job, args, channel, receive, message.call_id)


def wait_ready(
    jobs: Jobs,
    job: Job,
    args: ExecuteCommandArgs,
    channel: Channel[AgentToExecutor],
    receive: Callable[[], AgentToExecutor | None],
    call_id: str,
) -> tuple[ToolResult, list[AgentToExecutor]]:
    """A start's answer: once the job is ready (its pattern matched, its port listens), has exited, or the wait is
    over (the readiness timeout, or JOB_START_GRACE_S without a condition); the job runs on whatever happens."""
    asked = args.ready_pattern is not None or args.ready_port is not None
    wait_s = (args.ready_timeout or JOB_READY_TIMEOUT_DEFAULT_S) if asked else JOB_START_GRACE_S
    deadline = time.monotonic() + wait_s
    deferred: list[AgentToExecutor] = []
    while True:
        port_ok = args.ready_port is None or port_listens(job.pgid, args.ready_port)
        with job.lock:
            pattern_ok = args.ready_pattern is None or job.matched
            printed = job.ring.total > 0
        if asked and pattern_ok and port_ok:
            return job.report(None, ready=True), deferred
        if job.done.is_set():
            note = "it ended before it was ready" if asked else ""
            return job.report(None, ready=False if asked else None, note=note), deferred
        remaining = deadline - time.monotonic()
        if (not asked and printed) or remaining <= 0:
            break
        wait = min(remaining, JOB_PORT_POLL_S) if args.ready_port is not None else remaining
        ready, _, _ = select.select([channel.fileno(), jobs.notify_r], [], [], wait)
        if jobs.notify_r in ready:
            jobs.drain_notify()
        if channel.fileno() in ready:
            received = receive()
            if isinstance(received, CancelTool) and received.call_id == call_id:
                job.stop()  # Esc during the wait: the person did not want it after all
                return ToolCancelled(output=job.report(None).output), deferred
            if received is not None:
                deferred.append(received)
            if isinstance(received, Shutdown):
                break
    if not asked:
        return job.report(None), deferred
    waited = [f"no output line matched /{args.ready_pattern}/"] if not pattern_ok else []
    waited += [f"nothing listens on port {args.ready_port} yet"] if not port_ok else []
    note = (
        f"not ready after {wait_s:g} s ({'; '.join(waited)}); the job keeps running: read it with job_output, "
        "stop it with job_kill"
    )
    return job.report(None, ready=False, note=note), deferred
