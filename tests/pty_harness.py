"""Drive a real program in a real pseudo-terminal and read its screen through a terminal emulator (pyte)."""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import termios
import time
from collections.abc import Callable, Sequence

import pyte

# How long a wait may take before the test fails: generous, since a condition that holds ends the wait at once,
# and a loaded two-core machine running eight test processes can take over 10 s to finish a turn.
WAIT_S = 30.0
FRAME_MARK = b"\x1b]7707;"
"""How a frame ends when the UI runs with DASHFLOAT_FRAME_MARKS=1 (dashfloat/ui/_frames.py)."""


class Terminal:
    """A program on the slave side of a pty; the screen (with scrollback) as a person would see it."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], cols: int = 100, rows: int = 30) -> None:
        self.screen = pyte.HistoryScreen(cols, rows, history=5000, ratio=0.5)
        self.stream = pyte.Stream(self.screen)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.raw = bytearray()
        pid, fd = pty.fork()
        if pid == 0:  # the child: become the program
            # pyte cuts lines on a resize, as xterm does (no re-wrap): say so the way xterm does (ADR 0033).
            child = {k: v for k, v in env.items() if k not in ("TMUX", "TMUX_PANE", "STY")}
            child.update(TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1", XTERM_VERSION="pyte")
            os.execvpe(argv[0], list(argv), child)
        self.pid, self.fd = pid, fd
        self._set_size(cols, rows)
        self.exit_status: int | None = None
        self._watched: dict[str, bool] = {}

    def _set_size(self, cols: int, rows: int) -> None:
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def resize(self, cols: int, rows: int) -> None:
        """Resize like a terminal window does (the kernel sends SIGWINCH)."""
        cut = max(0, self.screen.lines - rows)
        cursor_y = self.screen.cursor.y
        self.screen.resize(rows, cols)
        # pyte drops a shorter screen's top rows but puts the cursor back on its old row number, below the new
        # bottom, where what is drawn next is never shown; a terminal keeps the cursor on its line, which moved up.
        self.screen.cursor.y = min(max(0, cursor_y - cut), rows - 1)
        self._set_size(cols, rows)

    def pump(self, timeout_s: float = 0.05) -> bool:
        """Read what the program wrote; False once it has exited and nothing is left."""
        ready, _, _ = select.select([self.fd], [], [], timeout_s)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            data = b""
        if not data:
            return False
        self.raw += data
        # Frame by frame where the program marks its frames (DASHFLOAT_FRAME_MARKS): a state drawn and replaced
        # within one read (a one-second hint, read late by a starved test) is still seen by ``watch``.
        start = 0
        while start < len(data):
            end = data.find(FRAME_MARK, start)
            end = len(data) if end < 0 else end + len(FRAME_MARK)
            self.stream.feed(self._decoder.decode(data[start:end]))
            start = end
            if self._watched:
                shown = self.visible()
                self._watched.update({n: True for n, seen in self._watched.items() if not seen and n in shown})
        return True

    def watch(self, needle: str) -> None:
        """From now on, note whether any frame shows ``needle`` on the visible screen (see ``wait_shown``)."""
        self._watched[needle] = needle in self.visible()

    def wait_shown(self, needle: str, timeout_s: float = WAIT_S) -> bool:
        """Wait until a frame since ``watch(needle)`` showed it, however briefly."""
        return self.wait_until(lambda: self._watched[needle], timeout_s)

    def wait_until(self, holds: Callable[[], bool], timeout_s: float = WAIT_S) -> bool:
        """Read until ``holds()``; whether it does."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if holds():
                return True
            if not self.pump():
                break
        return holds()

    def lines(self) -> list[str]:
        """Scrollback then the visible screen, as text."""
        history = ["".join(ch.data for ch in row.values()).rstrip() for row in self.screen.history.top]
        return [*history, *(line.rstrip() for line in self.screen.display)]

    def text(self) -> str:
        return "\n".join(self.lines())

    def visible(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def wait_for(self, needle: str, timeout_s: float = WAIT_S, visible_only: bool = False) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if needle in (self.visible() if visible_only else self.text()):
                return True
            if not self.pump():
                break
        return needle in (self.visible() if visible_only else self.text())

    def wait_for_change(self, line: str, timeout_s: float = WAIT_S) -> bool:
        """Wait until the visible screen no longer holds ``line`` (a scroll position, a counter...)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if line not in self.visible().splitlines():
                return True
            if not self.pump():
                break
        return line not in self.visible().splitlines()

    def settle(self, quiet_s: float = 0.3, timeout_s: float = 5.0) -> None:
        """Read until the program has been quiet for ``quiet_s``."""
        deadline = time.monotonic() + timeout_s
        last = len(self.raw)
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            if not self.pump(0.05):
                return
            if len(self.raw) != last:
                last, quiet_since = len(self.raw), time.monotonic()
            elif time.monotonic() - quiet_since >= quiet_s:
                return

    def send(self, keys: str | bytes) -> None:
        os.write(self.fd, keys.encode() if isinstance(keys, str) else keys)

    def wait_exit(self, timeout_s: float = WAIT_S) -> int | None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.pump(0.02)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.exit_status = os.waitstatus_to_exitcode(status)
                self.settle(quiet_s=0.2)  # what it wrote just before it exited may still be unread
                return self.exit_status
        return None

    def close(self) -> None:
        if self.exit_status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
        os.close(self.fd)
