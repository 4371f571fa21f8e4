"""One run of DashFloat: the agent process, the UI (or the headless printer), a clean stop on any exit."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import termios
from collections.abc import Callable
from types import FrameType
from typing import Any

from dashfloat.agent import AgentOptions
from dashfloat.procutil import become_subreaper, reap_orphans
from dashfloat.runtime._agent_link import AgentProcess
from dashfloat.runtime.printer import Printer


def _terminal_restorer(hold_keys: bool) -> Callable[[], None]:
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


def run(
    options: AgentOptions,
    *,
    log_path: str,
    prompt: str | None,
    json_mode: bool = False,
    no_color: bool = False,
    on_stop: Callable[[], None] = lambda: None,
) -> int:
    """Start the agent; run one headless turn when ``prompt`` is given, else the TUI; always stop all."""
    restore = _terminal_restorer(hold_keys=prompt is None)
    become_subreaper()
    link = AgentProcess(options, log_path)

    def terminate(signum: int, frame: FrameType | None) -> None:
        # SIGTERM / SIGHUP: every child and every command's process group goes, then we do.
        link.shutdown()
        on_stop()
        reap_orphans()
        restore()
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGHUP, terminate)
    try:
        if prompt is not None:
            return Printer(link, json_mode).run(prompt)
        from dashfloat.ui import UiOptions, run_tui

        ui_options = UiOptions(
            no_color=no_color, approval=options.approval, model=options.provider.model, cwd=options.cwd
        )
        return run_tui(link, ui_options)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        link.shutdown()
        on_stop()
        reap_orphans()
        restore()
