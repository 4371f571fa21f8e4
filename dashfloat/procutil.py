"""Process lifecycle shared by the process packages (Linux semantics): naming a child, tying it to its parent,
reaping, killing and stopping what runs below us. How a child is forked to share the most: ``dashfloat._startup``."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import select
import signal
import time
import types
from collections.abc import Callable, Collection
from multiprocessing.process import BaseProcess
from typing import Final

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int | bytes) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False  # not Linux: callers degrade to the supervisor's explicit shutdown path


def die_with_parent(sig: signal.Signals = signal.SIGKILL) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent dies (no orphans).

    Racy only if the parent is already gone, which is checked right after.
    """
    parent = os.getppid()
    if _prctl(_PR_SET_PDEATHSIG, int(sig)) and os.getppid() != parent:
        os.kill(os.getpid(), sig)


def set_name(name: str) -> None:
    """Name this process as ps, top and /proc show it (15 bytes at most)."""
    _prctl(_PR_SET_NAME, name.encode()[:15])


def become_subreaper() -> None:
    """Orphaned descendants are re-parented to us instead of init, so we can reap them (no zombies)."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def reap_orphans() -> None:
    """Collect every exited child that nobody else will wait for."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


ProcessTable = tuple[dict[int, list[int]], dict[int, bytes]]
"""Each process's children and its state letter, by pid (``_process_table``)."""


def has_children() -> bool:
    """Whether this process has a child, running or exited and not yet reaped (none is reaped here: ``WNOWAIT``).
    Without one it has no descendant at all (each one's line of parents leads up through a child of ours, a
    subreaper's orphans being its children), so a walk of /proc for them would find nothing; one costs a read of
    every process's stat, 1.5 ms with a hundred processes, on a stop's path (ADR 0059)."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WSTOPPED | os.WCONTINUED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def _process_table() -> ProcessTable:
    """Each process's children and its state letter (``R``, ``S``, ``Z``…), read from /proc (empty without it)."""
    children: dict[int, list[int]] = {}
    states: dict[int, bytes] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children, states
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read()
        except OSError:
            continue  # gone meanwhile
        after_name = fields[fields.rfind(b")") + 2 :].split()  # the name may hold spaces and parentheses
        if len(after_name) > 1:
            children.setdefault(int(after_name[1]), []).append(int(name))
            states[int(name)] = after_name[0]
    return children, states


def descendants(pid: int, skip: Collection[int] = ()) -> list[int]:
    """Every process below ``pid`` in the process tree, read from /proc (none where there is no /proc); the
    processes in ``skip`` and everything below them are left out."""
    children, _ = _process_table()
    return _below(children, pid, skip)


def _below(children: dict[int, list[int]], pid: int, skip: Collection[int]) -> list[int]:
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in skip:
                found.append(child)
                todo.append(child)
    return found


STRAYS_MAX_PASSES: Final = 300
"""``kill_strays`` gives up after this many passes over /proc, about 3 s (each kills every stray it finds, and a
process with a SIGKILL pending cannot fork, so a fork bomb ends in a few; only a process that cannot die yet — a
stuck uninterruptible sleep — keeps it going, and is collected at its next call)."""
STRAYS_PASS_WAIT_S: Final = 0.01
"""Between two passes of ``kill_strays``: the killed processes run their exits and are re-parented to us."""


def kill_strays(
    keep: Collection[int], max_passes: int = STRAYS_MAX_PASSES, table: Callable[[], ProcessTable] = _process_table
) -> int:
    """SIGKILL every process below this one except ``keep`` and their descendants, and reap those that are our
    children; the number of processes killed.

    For a subreaper whose child died without killing what it had started: its orphans are re-parented to us (an
    executor SIGKILLed itself leaves its commands' ``setsid`` children, ADR 0057). Pass after pass, until no process
    but ``keep``'s is left below us: a process forked between a pass's reading of /proc and its kill is found by
    the next one, and a killed one's children come up to us. Only our own children are reaped (by pid: never a
    ``keep`` one, whose status its owner waits for); zombies below a stray come up to us when the stray dies.
    """
    me = os.getpid()
    killed: set[int] = set()
    if not has_children():
        return 0  # nothing below us (the agent's exit, its workers reaped): no walk of /proc
    for _ in range(max_passes):
        children, states = table()
        strays = _below(children, me, set(keep))
        for pid in children.get(me, []):
            if pid in strays and states.get(pid) == b"Z":
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
        live = [pid for pid in strays if states.get(pid) != b"Z"]
        if not strays:
            break
        for pid in live:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
        time.sleep(STRAYS_PASS_WAIT_S)
    return len(killed)


def kill_descendants(table: Callable[[], ProcessTable] = _process_table) -> None:
    """SIGKILL every process below this one: a subreaper's commands, what left their groups (``setsid``), and the
    orphans re-parented to it. Twice: a process forked while the first pass read /proc is found by the second.
    None when we have no child (an executor that ran no command, or reaped them all): /proc is not read."""
    if not has_children():
        return
    for _ in range(2):
        for pid in _below(table()[0], os.getpid(), ()):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


STOP_PASSES_MAX = 8
"""How many times ``stop_descendants`` reads /proc for processes forked while it stopped the others: a stopped
process forks no more, so each pass can only find what the one before missed; a tree forking faster than that is
left to the next Ctrl-Z."""


STOPPED_STATES: Final = (b"T", b"t")
"""/proc's state letters of a stopped process (by a signal, or by a tracer)."""


def stopped_descendants() -> set[int]:
    """The processes below this one that are stopped already: a command that stopped itself (``kill -STOP $$``),
    or one its own job control stopped. Read before Ctrl-Z stops anything, so that ``fg`` leaves them to whoever
    stopped them (ADR 0063)."""
    children, states = _process_table()
    return {pid for pid in _below(children, os.getpid(), ()) if states.get(pid) in STOPPED_STATES}


def stop_descendants(below: Callable[[], list[int]] | None = None, leave: Collection[int] = ()) -> list[int]:
    """SIGSTOP every process below this one (a subreaper's commands and what left their groups with ``setsid``)
    but ``leave`` (stopped already); the ones stopped, for ``continue_processes``. Pass after pass until one finds
    nothing new. ``below`` lists the processes (tests: a tree that keeps growing)."""
    stopped: list[int] = []
    for _ in range(STOP_PASSES_MAX):
        listed = below() if below else descendants(os.getpid())
        new = [pid for pid in listed if pid not in stopped and pid not in leave]
        if not new:
            break
        for pid in new:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
    return stopped


def continue_processes(pids: list[int]) -> None:
    """SIGCONT what ``stop_descendants`` stopped (a stopped process cannot exit, so its pid is still its own)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGCONT)


STOP_GUARD_PROCESS_NAME: Final = "dashfloat-guard"
"""The stop guard's name, as ps shows it while DashFloat is suspended."""


class StopGuard:
    """A process that SIGKILLs what we stopped should we die before continuing it (ADR 0063).

    A suspended DashFloat killed whole (``kill -9 %1``) dies stopped: the processes it stopped — in a session of
    their own, so neither the job's signal nor the kernel's SIGHUP and SIGCONT to an orphaned group reach them —
    would stay stopped for ever, re-parented to init. The guard is forked with them stopped, in a session of its
    own (out of the job), holds a pidfd of each (no pid reuse can misdirect its kill) and waits on a pipe: a byte
    (``release``, on ``fg``) lets it exit; end of file without one (we died) makes it kill them, as our own exit
    would have (``kill_descendants``).
    """

    def __init__(self, pids: list[int]) -> None:
        read_end, self._write_end = os.pipe()
        self._pid = os.fork()
        if self._pid == 0:  # pragma: no cover - the guard's own process (its work is tested from outside)
            try:
                os.setsid()
                set_name(STOP_GUARD_PROCESS_NAME)
                os.closerange(3, read_end)  # another process's pipe must not be held open (become_child)
                os.closerange(read_end + 1, os.sysconf("SC_OPEN_MAX"))
                pidfds = []
                for pid in pids:
                    with contextlib.suppress(OSError):
                        pidfds.append(os.pidfd_open(pid))
                if not os.read(read_end, 1):
                    for pidfd in pidfds:
                        with contextlib.suppress(OSError):
                            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            finally:
                os._exit(0)
        os.close(read_end)

    def release(self) -> None:
        """We were continued: the guard exits without a kill, and is reaped."""
        with contextlib.suppress(OSError):
            os.write(self._write_end, b"c")
        os.close(self._write_end)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self._pid, 0)


class FgWatch:
    """Which came last, our job's stop or its ``fg``: read from the signal numbers the interpreter writes, in the
    order they arrive, to its wakeup pipe (ADR 0095).

    Ctrl-Z's SIGTSTP runs a handler that stops our commands before it waits for ``fg``. Stopping ourselves there
    (SIGSTOP, the way we did) lost the job whenever ``fg``'s SIGCONT came while the handler still worked: the
    SIGCONT found us running, our SIGSTOP then stopped us for good, and our commands with us. A SIGCONT is never
    missed here: its number is in the pipe from the moment it arrives, whatever the handler was doing.
    Main thread only (as ``signal.set_wakeup_fd``); its handlers are installed by ``install``.
    """

    def __init__(self) -> None:
        self._read_end, self._write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self.continued = True  # what the last of SIGTSTP and SIGCONT read said (running, before any)
        self._owner = os.getpid()

    def install(self, on_sigtstp: Callable[[int, types.FrameType | None], None]) -> None:
        """Write every handled signal's number to our pipe, and handle SIGTSTP with ``on_sigtstp``."""
        signal.set_wakeup_fd(self._write_end, warn_on_full_buffer=False)
        signal.signal(signal.SIGCONT, _ignore)  # handled (so its number is written); the kernel continues us anyway
        signal.signal(signal.SIGTSTP, on_sigtstp)

    def read(self, numbers: bytes) -> None:
        """Take the signal numbers that arrived, in order: the last SIGTSTP or SIGCONT among them says the state."""
        for number in numbers:
            if number == signal.SIGTSTP:
                self.continued = False
            elif number == signal.SIGCONT:
                self.continued = True

    def _drain(self, timeout_s: float | None) -> None:
        """Read every number in the pipe, once one is there or ``timeout_s`` passed (None: no timeout)."""
        ready, _, _ = select.select([self._read_end], [], [], timeout_s)
        more = bool(ready)
        while more:
            try:
                numbers = os.read(self._read_end, 4096)
            except BlockingIOError:
                return
            self.read(numbers)
            more = len(numbers) == 4096  # a full read: more may wait behind it

    def wait_for_fg(self) -> None:
        """Return once ``fg`` has continued our job: at once if it came already (while the caller stopped things).
        Called from the SIGTSTP handler, whose own signal number is in the pipe (or was read by an earlier call).
        In a process forked from ours that kept the handler (the path index's walker), it stops that process as the
        default action would: the pipe is ours, and a read there could take our ``fg``."""
        if os.getpid() != self._owner:
            signal.set_wakeup_fd(-1)  # its signals are not ours to read
            signal.signal(signal.SIGCONT, signal.SIG_DFL)
            signal.signal(signal.SIGTSTP, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGSTOP)
            return
        self._drain(0)
        while not self.continued:
            self._drain(None)


def _ignore(signum: int, frame: types.FrameType | None) -> None:
    """A handler that does nothing: the signal's number reaches the wakeup pipe, its default action is the kernel's."""


def kill_group(pgid: int) -> None:
    """SIGKILL a whole process group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def become_child(log_path: str, close_fds: list[int]) -> None:
    """Detach a freshly forked child from the terminal and from fds it must not hold.

    Holding another process's pipe end would hide that process's death (no EOF), so they are closed.
    Ctrl-C and hang-ups are the main process's to handle; it tells us to stop.
    """
    gc.enable()  # forked during a start-up that runs without the cyclic collector (``_entry.entry``)
    for fd in close_fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGWINCH, signal.SIG_DFL)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600) if log_path else devnull
    os.dup2(log, 2)  # a crash's traceback goes to the log, never onto the user's screen
    for fd in {devnull, log}:
        if fd > 2:
            os.close(fd)


def describe_exit(process: BaseProcess) -> str:
    """How a process ended, in words: an exit code or the signal that killed it."""
    code = process.exitcode
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _send_sigterm(process: BaseProcess) -> None:
    process.terminate()


def stop_process(
    process: BaseProcess, grace_s: float, ask: Callable[[BaseProcess], None] | None = _send_sigterm
) -> str:
    """Stop a child process for sure and say how it ended.

    ``ask`` asks it to stop (default SIGTERM; a caller may send a Shutdown message or close a pipe instead, or
    pass None when it is already going); it gets ``grace_s`` to exit, then SIGKILL, which it cannot refuse, so
    the reap after it waits as long as the kernel needs. A process that has already ended is only reaped.
    """
    if process.exitcode is None and ask is not None:
        with contextlib.suppress(OSError, ValueError):  # already gone, or its pipe already closed
            ask(process)
    process.join(grace_s)
    if process.exitcode is None:
        with contextlib.suppress(OSError):
            process.kill()
        process.join()
    return describe_exit(process)
