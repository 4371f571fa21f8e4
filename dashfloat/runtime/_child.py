"""What every forked child does first: own signals, quiet stdio, die with its parent."""

from __future__ import annotations

import contextlib
import os
import signal


def become_child(log_path: str, close_fds: list[int]) -> None:
    """Detach a freshly forked child from the terminal and from fds it must not hold.

    Holding another process's pipe end would hide that process's death (no EOF), so they are closed.
    Ctrl-C and hang-ups are the main process's to handle; it tells us to stop.
    """
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
