"""The terminal's modes: held still while DashFloat starts, put back on every way out."""

from __future__ import annotations

import contextlib
import os
import sys
import termios
from collections.abc import Callable
from typing import Any


def hold_terminal(hold_keys: bool) -> Callable[[], None]:
    """Snapshot the terminal's modes now, to put them back when we stop (also on a signal mid-UI).

    With ``hold_keys`` the terminal stops echoing and keeps Enter as Enter until the UI takes over: keys typed
    while we start are neither printed into the scrollback nor turned into newlines (the UI reads them later).
    """
    try:
        saved: list[Any] | None = termios.tcgetattr(sys.stdin.fileno())
    except (termios.error, OSError, ValueError):
        saved = None
    if hold_keys and saved is not None:
        iflag, oflag, cflag, lflag, ispeed, ospeed, cc = saved
        held = [iflag & ~termios.ICRNL, oflag, cflag, lflag & ~(termios.ECHO | termios.ICANON), ispeed, ospeed, cc]
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, held)

    def restore() -> None:
        if saved is not None:
            with contextlib.suppress(termios.error, OSError, ValueError):
                termios.tcsetattr(sys.stdin.fileno(), termios.TCSANOW, saved)
                if hold_keys:  # the UI may have hidden the cursor; headless output stays clean
                    os.write(sys.stdout.fileno(), b"\x1b[?25h")

    return restore
