"""A command's process-count and memory bounds (ADR 0057 §1): set on its held gate process, before it runs anything.

What bounds what, where this machine offers it:
- **Processes**: a cgroup of the ``pids`` controller (v1 hierarchy, or v2 where our cgroup may have children with it)
  whose ``pids.max`` is ``COMMAND_MAX_PROCESSES``: every process and thread the command starts, sandboxed or not, root
  or not; ``pids.events`` counts the forks refused, so the result can say so exactly. RLIMIT_NPROC is no substitute:
  it counts the user's processes (every one, on the whole machine) and is not enforced for root at all.
- **Memory, all of the command's processes together**: a ``memory`` cgroup (v1 ``memory.limit_in_bytes``, v2
  ``memory.max``) of ``COMMAND_MAX_MEMORY_BYTES``; over it the kernel reclaims, then OOM-kills inside that cgroup only.
- **Memory, each process**: RLIMIT_DATA of ``COMMAND_MAX_DATA_BYTES`` (private writable mappings: the heap, anonymous
  memory), everywhere. Not RLIMIT_AS: V8, Go, the JVM and sanitizers reserve far more address space than they use.
- **The largest file**: RLIMIT_FSIZE of ``COMMAND_MAX_FILE_BYTES``, everywhere: a write past it fails (EFBIG) and the
  writer gets SIGXFSZ, which kills it unless it ignores that signal (Python does, and raises "File too large").
The gate is the command's first process (ADR 0050): a prlimit and a write to ``cgroup.procs`` on it, before it is
released, bind everything that follows (bwrap, the shell, what they start), with no code between fork and exec.

A command's cgroups are named for the process that made them (``dashfloat-PIDNS-PID-START-N``: its PID namespace,
pid and start time, which together name one process for good), so that whichever DashFloat starts next can tell the
cgroups of a DashFloat that is gone (SIGKILLed with its agent, its commands still running) and kill what is left in
them (``sweep``, ADR 0062), and never touches those of one that still runs.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import resource
import signal
import time
from typing import Final

from dashfloat.executor._limits import (
    COMMAND_MAX_DATA_BYTES,
    COMMAND_MAX_FILE_BYTES,
    COMMAND_MAX_MEMORY_BYTES,
    COMMAND_MAX_MEMORY_SHARE,
    COMMAND_MAX_PROCESSES,
)
from dashfloat.protocol import CommandLimits

CGROUP_ROOT: Final = "/sys/fs/cgroup"
# Words in a command's output that say a process's allocation failed (RLIMIT_DATA has no counter of its own).
_OUT_OF_MEMORY_WORDS: Final = ("Cannot allocate memory", "MemoryError", "std::bad_alloc", "out of memory")
_TOO_LARGE_WORDS: Final = ("File too large", "File size limit exceeded")
"""What a writer stopped by RLIMIT_FSIZE says (EFBIG's strerror; bash's words for a child killed by SIGXFSZ)."""
_SHELL_EXIT_SIGXFSZ: Final = 128 + signal.SIGXFSZ
"""The shell's exit status when its last command was killed by SIGXFSZ (``yes > f``)."""
_OUT_OF_MEMORY_TAIL_CHARS: Final = 2048
"""Only the output's end is searched for those words: where a program's last error goes."""
_counter = itertools.count()
_swept: set[str] = set()
CGROUP_REMOVE_WAIT_S: Final = 1.0
"""At exit, how long the killed processes of a command's cgroup get to leave it before it is left to a later sweep."""
_left_behind: list[str] = []
"""Cgroups whose processes were still exiting when their command ended: removed at a later command's end."""
CGROUP_KILL_MAX_PASSES: Final = 100
"""Where a cgroup has no ``cgroup.kill`` (v1): reads of its ``cgroup.procs`` and SIGKILLs of the pids not yet killed,
until a read finds none new (a fork in flight as the first read was made shows up in the next; a killed process cannot
fork, nor can any once ``pids.max`` is 0)."""
CONTROLLERS: Final = ("pids", "memory")
_owner: dict[int, str] = {}
"""This process's ``PIDNS-PID-START`` (by pid: the executor is forked after this module is imported)."""


def memory_bound(cap: int) -> int:
    """``cap``, or ``COMMAND_MAX_MEMORY_SHARE`` of this machine's memory where that is less."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        return cap
    return min(cap, int(total * COMMAND_MAX_MEMORY_SHARE)) if total > 0 else cap


def _own_cgroup(controller: str) -> str | None:
    """The directory of our cgroup in ``controller``'s hierarchy, if this process may create cgroups below it."""
    try:
        with open("/proc/self/cgroup") as lines:
            entries = [line.rstrip("\n").split(":", 2) for line in lines]
    except OSError:
        return None
    for _, controllers, path in entries:
        if controller in controllers.split(","):  # a v1 hierarchy of its own
            base = os.path.join(CGROUP_ROOT, controller) + path
            break
    else:
        unified = [path for _, controllers, path in entries if controllers == ""]
        if not unified:
            return None
        mount = os.path.join(CGROUP_ROOT, "unified")
        base = (mount if os.path.isdir(mount) else CGROUP_ROOT) + unified[0]
        try:
            with open(os.path.join(base, "cgroup.subtree_control")) as enabled:
                if controller not in enabled.read().split():
                    return None
        except OSError:
            return None
    return base if os.access(base, os.W_OK) else None


class Bounds:
    """The bounds one command runs under; ``note`` says which it hit, for the model. (A plain class: a dataclass
    would import dataclasses and inspect on a start's path, ADR 0055.)"""

    def __init__(
        self,
        max_processes: int = COMMAND_MAX_PROCESSES,
        max_memory_bytes: int | None = None,
        max_data_bytes: int = COMMAND_MAX_DATA_BYTES,
        max_file_bytes: int = COMMAND_MAX_FILE_BYTES,
        configured: frozenset[str] = frozenset(),
    ) -> None:
        self.configured = configured
        """The config file's ``[limits]`` fields the bounds come from (the others are the constants)."""
        self.max_processes = max_processes
        self.max_memory_bytes = memory_bound(COMMAND_MAX_MEMORY_BYTES) if max_memory_bytes is None else max_memory_bytes
        # the name the memory notes give the default: a machine with less memory gets a share of its own
        by_share = max_memory_bytes is None and self.max_memory_bytes < COMMAND_MAX_MEMORY_BYTES
        self._memory_default = (
            "COMMAND_MAX_MEMORY_SHARE of this machine's memory" if by_share else "COMMAND_MAX_MEMORY_BYTES"
        )
        self.max_data_bytes = max_data_bytes
        self.max_file_bytes = max_file_bytes
        self.cgroups: dict[str, str] = {}
        """controller → the command's cgroup directory (only those this machine let us make)."""

    def apply(self, pid: int) -> None:
        """Bind the held gate ``pid`` (and so all it will start): rlimit first, then each cgroup we can make."""
        for limit, value in ((resource.RLIMIT_DATA, self.max_data_bytes), (resource.RLIMIT_FSIZE, self.max_file_bytes)):
            with contextlib.suppress(OSError, ValueError, AttributeError):  # a hard limit below ours stays; no prlimit
                resource.prlimit(pid, limit, (value, value))
        name = f"dashfloat-{_own_name()}-{next(_counter)}"
        for controller, files in (
            ("pids", (("pids.max", self.max_processes),)),
            ("memory", (("memory.limit_in_bytes", self.max_memory_bytes), ("memory.max", self.max_memory_bytes))),
        ):
            base = _own_cgroup(controller)
            if base is None:
                continue
            if base not in _swept:
                _sweep(base)  # once per hierarchy, for a process that ran no ``sweep`` at its start (tests, standalone)
            path = os.path.join(base, name)
            try:
                os.mkdir(path, 0o755)
            except OSError:
                continue
            written = False
            for file, value in files:
                with contextlib.suppress(OSError):
                    _write(os.path.join(path, file), str(value))
                    written = True
            try:
                if not written:
                    raise OSError("no limit file")
                _write(os.path.join(path, "cgroup.procs"), str(pid))
            except OSError:
                _remove(path)
                continue
            self.cgroups[controller] = path

    def _set_by(self, field: str, constant: str) -> str:
        """What set a bound, for the model's note: the config field where the user set it, else the constant."""
        return f"[limits] {field} in config.toml" if field in self.configured else constant

    def _memory_set_by(self) -> str:
        """What set the bound on all processes' memory together: the config, else the constant that gave the number."""
        return self._set_by("max_memory_mib", self._memory_default)

    def note(self, output: str, failed: bool, exit_code: int | None = None) -> str:
        """What the model reads after the output when the command met a bound (empty when it met none). ``failed``:
        it exited non-zero or was killed; only then do words in its output's end count as a failed allocation or write
        (a ``grep 'out of memory' log`` that finds some succeeds, and is told nothing). ``exit_code``: the shell's
        (``128 + N`` for a signal), None while it runs."""
        notes = []
        tail = output[-_OUT_OF_MEMORY_TAIL_CHARS:]
        too_large = [w for w in _TOO_LARGE_WORDS if w in tail]
        if failed and (too_large or exit_code == _SHELL_EXIT_SIGXFSZ):
            how = (
                f"with status {exit_code} (killed by SIGXFSZ)"
                if exit_code == _SHELL_EXIT_SIGXFSZ
                else f"saying '{too_large[0]}'"
            )
            notes.append(
                f"[DashFloat's file size limit: the command failed {how}: a process of a command may write no file "
                f"larger than {_mib(self.max_file_bytes)} ({self._set_by('max_file_mib', 'COMMAND_MAX_FILE_BYTES')}, "
                "RLIMIT_FSIZE; EFBIG)]"
            )
        refused = _event(self.cgroups.get("pids"), "pids.events", "max")
        if refused:
            notes.append(
                f"[DashFloat's process limit: {refused} fork(s) of this command were refused (EAGAIN, 'Cannot fork', "
                f"'Resource temporarily unavailable'): a command may run at most {self.max_processes} processes and "
                f"threads at once ({self._set_by('max_processes', 'COMMAND_MAX_PROCESSES')})]"
            )
        killed = self.oom_kills()
        if killed:
            notes.append(
                f"[DashFloat's memory limit: {killed} process(es) of this command were killed (SIGKILL) for using more "
                f"than {_mib(self.max_memory_bytes)} together ({self._memory_set_by()})]"
            )
        elif failed and (said := [w for w in _OUT_OF_MEMORY_WORDS if w in tail]):
            notes.append(
                f"[the command failed saying '{said[0]}': each process of a command may use at most "
                f"{_mib(self.max_data_bytes)} of heap and anonymous memory "
                f"({self._set_by('max_process_memory_mib', 'COMMAND_MAX_DATA_BYTES')}, RLIMIT_DATA), "
                f"and all of them together {_mib(self.max_memory_bytes)} ({self._memory_set_by()})]"
            )
        return "".join(f"\n{n}" for n in notes)

    def oom_kills(self) -> int:
        """How many of the command's processes its memory cgroup's OOM killer killed (0 without one)."""
        memory = self.cgroups.get("memory")
        return _event(memory, "memory.oom_control", "oom_kill") or _event(memory, "memory.events", "oom_kill")

    def close(self) -> None:
        """Remove the command's cgroups (its processes are killed by now); one still emptying is tried again later."""
        pending = [*_left_behind, *self.cgroups.values()]
        _left_behind.clear()
        self.cgroups = {}
        for path in pending:
            if not _remove(path):
                _left_behind.append(path)


def bounds_for(limits: CommandLimits) -> Bounds:
    """The bounds a command runs under: the user's ``[limits]`` where set (MiB), else the constants."""
    mib = 2**20
    return Bounds(
        max_processes=limits.max_processes or COMMAND_MAX_PROCESSES,
        max_memory_bytes=limits.max_memory_mib * mib if limits.max_memory_mib else None,
        max_data_bytes=limits.max_process_memory_mib * mib if limits.max_process_memory_mib else COMMAND_MAX_DATA_BYTES,
        max_file_bytes=limits.max_file_mib * mib if limits.max_file_mib else COMMAND_MAX_FILE_BYTES,
        configured=frozenset(name for name in limits.__struct_fields__ if getattr(limits, name) is not None),
    )


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _remove(path: str) -> bool:
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _event(path: str | None, file: str, key: str) -> int:
    """A counter from a cgroup's events file (``max 3``, ``oom_kill 1``); 0 when absent."""
    if path is None:
        return 0
    try:
        with open(os.path.join(path, file)) as events:
            for line in events:
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _mib(n: int) -> str:
    return f"{n / 2**30:g} GiB" if n >= 2**30 else f"{n / 2**20:g} MiB"


def remove_left_behind() -> None:
    """At the executor's exit, after it killed everything below it: the cgroups still waiting to be removed (their
    killed processes get up to ``CGROUP_REMOVE_WAIT_S`` to exit; what is left then, the next executor sweeps)."""
    deadline = time.monotonic() + CGROUP_REMOVE_WAIT_S
    Bounds().close()
    while _left_behind and time.monotonic() < deadline:
        time.sleep(0.01)
        Bounds().close()


def _start_time(pid: int | str) -> str | None:
    """A process's start time in clock ticks since boot (``/proc/PID/stat`` field 22); None when it does not run: no
    such process, or one that has exited and waits to be reaped (a zombie: where PID 1 reaps nothing, for good)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()  # after the name, which may hold spaces and ")"
    except OSError:
        return None
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None
    return fields[19].decode()


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def _own_name() -> str:
    """``PIDNS-PID-START`` of this process: what its cgroups are named for."""
    pid = os.getpid()
    if pid not in _owner:
        _owner[pid] = f"{_pid_namespace()}-{pid}-{_start_time(pid) or 0}"
    return _owner[pid]


def owner_gone(name: str) -> bool:
    """Whether ``name`` is a command's cgroup (``dashfloat-PIDNS-PID-START-N``) whose DashFloat process is gone: it
    was in our PID namespace, and its pid runs no more or runs another process (a later start time). A cgroup of a
    DashFloat in another PID namespace (another container sharing the hierarchy) is never judged gone: its pids are not
    ours to look up."""
    parts = name.split("-")
    if len(parts) != 5 or parts[0] != "dashfloat" or not all(p.isdigit() for p in parts[1:]):
        return False
    pid_namespace, pid, start = parts[1:4]
    return pid_namespace == _pid_namespace() and _start_time(pid) != start


def sweep() -> None:
    """Kill what is left in the cgroups of gone DashFloat processes and remove them, once per hierarchy: at an
    executor's start, so that commands left running by a DashFloat SIGKILLed whole end when the next one starts."""
    for controller in CONTROLLERS:
        base = _own_cgroup(controller)
        if base is not None and base not in _swept:
            _sweep(base)


def _sweep(base: str) -> None:
    _swept.add(base)
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        if owner_gone(name):
            path = os.path.join(base, name)
            kill_cgroup(path)
            if not _remove(path):
                _left_behind.append(path)  # its killed processes are still exiting: removed later


def kill_cgroup(path: str) -> int:
    """SIGKILL every process in the cgroup at ``path``; how many were signalled (-1: all, by ``cgroup.kill``).

    cgroup v2 (Linux 5.14) does it whole: ``cgroup.kill``. v1 has none, so, as systemd does there: no fork from now on
    where the cgroup is a ``pids`` one (``pids.max`` 0), then read ``cgroup.procs`` and kill, until a read finds no
    pid not yet killed (``CGROUP_KILL_MAX_PASSES``)."""
    try:
        _write(os.path.join(path, "cgroup.kill"), "1")
    except OSError:
        pass
    else:
        return -1
    with contextlib.suppress(OSError):
        _write(os.path.join(path, "pids.max"), "0")
    killed: set[int] = set()
    for _ in range(CGROUP_KILL_MAX_PASSES):
        try:
            with open(os.path.join(path, "cgroup.procs")) as procs:
                fresh = {int(line) for line in procs if line.strip()} - killed
        except (OSError, ValueError):
            break
        if not fresh:
            break
        for pid in fresh:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed |= fresh
    return len(killed)


atexit.register(remove_left_behind)  # a process that ran commands in-process (tests, the standalone executor)
