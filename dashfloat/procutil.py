"""Process-lifetime helpers shared by the process packages (Linux semantics)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: signal.Signals = signal.SIGKILL) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent dies (no orphans).

    Racy only if the parent is already gone, which is checked right after.
    """
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):
        return  # not Linux: the supervisor's shutdown path still stops us
    if os.getppid() != parent:
        os.kill(os.getpid(), sig)


def kill_group(pgid: int) -> None:
    """SIGKILL a whole process group; a group that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
