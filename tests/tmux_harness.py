"""Drive a real program in a real tmux pane (a private tmux server) and read its whole scrollback.

tmux re-wraps the lines of its screen and history when a window narrows or widens, as most terminals
do; pyte (tests/pty_harness.py) cuts them like xterm. A resize test needs both.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Sequence
from pathlib import Path

TMUX = shutil.which("tmux")


def _tty_size(path: str) -> tuple[int, int]:
    """(columns, rows) of a pty as the program on it reads them."""
    fd = os.open(path, os.O_RDONLY | os.O_NOCTTY)
    try:
        rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
    finally:
        os.close(fd)
    return cols, rows


class TmuxPane:
    """One program in the only pane of a private tmux server (its socket under ``tmp``)."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], tmp: Path, cols: int = 90, rows: int = 26) -> None:
        assert TMUX is not None, "tmux is not installed"
        self.socket = str(tmp / "tmux.sock")
        env = {k: v for k, v in env.items() if k not in ("TMUX", "TMUX_PANE", "STY")}
        # The server takes the environment of the command that starts it; the pane inherits it.
        self._run("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", str(cols), "-y", str(rows), shlex.join(argv),
                  env=env)  # fmt: skip
        self._run("set-option", "-t", "t", "history-limit", "20000")
        self._run("set-option", "-t", "t", "remain-on-exit", "on")

    def _run(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            [str(TMUX), "-S", self.socket, *args], capture_output=True, text=True, env=env, check=False, timeout=30
        )
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    def send(self, *keys: str) -> None:
        """Keys as tmux names them (``Enter``, ``Escape``, ``C-u``); literal text otherwise."""
        self._run("send-keys", "-t", "t", *keys)

    def type(self, text: str) -> None:
        self._run("send-keys", "-t", "t", "-l", text)

    def resize(self, cols: int, rows: int) -> None:
        """Resize the window and wait until the program can know it.

        tmux re-wraps its screen and history at once but tells the program (the pty's size, SIGWINCH) a
        little later, coalescing quick resizes: a key typed before that is drawn at the old size.
        """
        self._run("resize-window", "-t", "t", "-x", str(cols), "-y", str(rows))
        tty = self._run("display-message", "-p", "-t", "t", "#{pane_tty}").strip()
        assert self.wait_for(lambda: _tty_size(tty) == (cols, rows)), (_tty_size(tty), cols, rows)

    def scrollback(self) -> list[str]:
        """History and screen, wrapped lines joined back (as they were printed), trailing blanks cut."""
        text = self._run("capture-pane", "-p", "-J", "-S", "-", "-t", "t")
        lines = [line.rstrip() for line in text.splitlines()]
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def visible(self) -> list[str]:
        text = self._run("capture-pane", "-p", "-t", "t")
        return [line.rstrip() for line in text.splitlines()]

    def size(self) -> tuple[int, int]:
        cols, rows = self._run("display-message", "-p", "-t", "t", "#{pane_width} #{pane_height}").split()
        return int(cols), int(rows)

    def wait_for(self, check: Callable[[], bool], timeout_s: float = 20.0) -> bool:
        """Poll until ``check`` holds (a loaded machine gets a generous deadline); its last value."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if check():
                return True
            time.sleep(0.02)
        return check()

    def close(self) -> None:
        subprocess.run([str(TMUX), "-S", self.socket, "kill-server"], capture_output=True, check=False, timeout=30)
