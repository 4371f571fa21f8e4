"""Process-lifetime helpers shared by the process packages (Linux semantics)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal

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


def kill_group(pgid: int) -> None:
    """SIGKILL a whole process group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
